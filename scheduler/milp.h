/* The optimal rematerialization MILP of Checkmate (Jain et al., MLSys 2020)
 * solved with lp_solve 5.5: the model of lp_model.h with S and R binary.
 *
 * The solver solves the LP relaxation first (its optimum is the reported
 * lower bound), rounds it into an incumbent (lp_round.h) whose cost is the
 * branch-and-bound cutoff, branches floor first with priority on S and
 * NODE_GAPSELECT, and reports the bound and the gap of every answer. The
 * returned schedule is always re-judged by rm_simulate before it is handed
 * out. Which problems reach it, with which incumbent, and when a large graph
 * is coarsened first, is the solver route's decision (route.h). What the
 * bound and the gap mean for each strategy: docs/formulation.md. */
#ifndef REMAT_MILP_H
#define REMAT_MILP_H

#include <stddef.h>
#include <stdint.h>

#include "lp_model.h"
#include "lp_round.h"
#include "milp_engine.h"
#include "schedule.h"
#include "status.h"

typedef struct rm_milp_options {
    double time_limit_s;          /* wall clock for the whole call; 0 = none. Not deterministic: never in tests */
    long node_limit;              /* branch-and-bound nodes; 0 = none. Deterministic */
    const rm_schedule *incumbent; /* optional known schedule: its cost is the cutoff, and it is returned
                                     when lp_solve finds nothing better (if it fits the budget) */
    double mip_gap;               /* relative gap at which to stop; 0 = lp_solve's default (1e-9) */
    unsigned levers;              /* RM_MILP_* flags */
    int rounding_seeds;           /* randomized roundings tried for the incumbent */
    int bb_rule;                  /* lp_solve NODE_* rule; default NODE_GAPSELECT (1); -1 = lp_solve's own */
    int depth_limit;              /* set_bb_depthlimit; 0 = lp_solve's default (-50: 50 x #integers) */
    int verbosity;                /* lp_solve's level (0 = NEUTRAL ... 6 = FULL); needs log */
    int first_fit;                /* stop at the first schedule that fits (the budget and p->max_cost),
                                     e.g. the rounded incumbent: max batch asks whether one exists */
    rm_milp_engine engine;        /* who runs the branch and bound (milp_engine.h); default AUTO */
    rm_milp_log_fn log;
    void *log_ctx;
    /* The problem's facts (report.h) when the caller has them (the solver
     * route): the budget's verdict is taken from them and checkpoint-all is
     * not simulated again. NULL: asked here. */
    const struct rm_problem_report *facts;
} rm_milp_options;

void rm_milp_options_default(rm_milp_options *o);

typedef struct rm_milp_result {
    rm_status status;        /* OPTIMAL, FEASIBLE (a limit stopped the proof), INFEASIBLE (proved), NO_SOLUTION */
    double objective;        /* cost of the returned schedule, as the simulator computes it */
    double lower_bound;      /* a proved lower bound: the LP relaxation (root), or the objective when optimal */
    double lp_bound;         /* the LP relaxation's optimum (0 when it was not solved) */
    double gap;              /* (objective - lower_bound) / objective; 0 when optimal */
    size_t peak_bytes;       /* activation peak of the returned schedule (simulator) */
    long nodes;              /* branch-and-bound nodes explored */
    double seconds;          /* whole call */
    double lp_seconds;       /* LP relaxation */
    double first_solution_s; /* when lp_solve found its first improved solution; -1 = never */
    int improvements;        /* improved solutions lp_solve found */
    double incumbent_cost;   /* cost of the best incumbent handed to lp_solve; -1 = none */
    int from_incumbent;      /* 1: the returned schedule is the incumbent (lp_solve found nothing better) */
    int solver_code;         /* lp_solve's solve() return code; -100 when it was not called */
    int ncols, nrows, nint;  /* model size after pruning */
    rm_milp_engine engine;   /* the engine(s) the search ran: lp_solve, cbc or both (lp_solve+cbc) */
    const char *answered_by; /* the engine whose answer decided the result ("lp_solve", "cbc"); NULL when
                                no search ran (the rounding or the incumbent answered) */
    double search_bound;     /* the best lower bound an engine proved in its search (cost units); 0 = none */
    long cbc_nodes;          /* of nodes: CBC's */
} rm_milp_result;

/* Solves the MILP for p->budget (budget 0 = unlimited). Returns RM_OK and a
 * schedule (*out, free with rm_schedule_free) that rm_simulate accepted
 * within budget; RM_ERR_INFEASIBLE when none exists (instantly below the
 * trivial lower bound) or none was found within the limits (info->status
 * tells which); RM_ERR_SOLVER / RM_ERR_NOMEM when lp_solve fails. opt may be
 * NULL (defaults), info may be NULL. Called directly (tests, benchmarks) it
 * guards itself with the route's own questions (rm_problem_check_budget,
 * rm_checkpoint_all_fit; checkpoint-all returned or used as incumbent per
 * the SHORTCUT and INCUMBENT levers); through the route those have been
 * answered before it is called. */
int rm_strategy_milp(rm_schedule **out, rm_milp_result *info, const rm_problem *p, const rm_milp_options *opt,
                     rm_err *e);

#endif
