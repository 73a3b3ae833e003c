/* The optimal rematerialization MILP of Checkmate (Jain et al., MLSys 2020)
 * solved with lp_solve 5.5, and the paper's two-phase LP rounding.
 *
 * Variables: R[t][i] (node i computed in stage t), S[t][i] (i retained into
 * stage t), FREE[t][i][k] (value i freed right after computing k in stage t).
 * Memory is accounted with prefix-sum budget rows (one row per point of a
 * stage) instead of Checkmate's U variables, and FREE is linearised
 * disaggregated, so it can stay continuous. The model's peak is never below
 * the simulator's for the same R and S, so every MILP-feasible schedule is
 * simulator-feasible; the returned schedule is always re-judged by
 * rm_simulate before it is handed out.
 *
 * Stock lp_solve is hopeless on this model (DESIGN.md section 4; here: no
 * integer solution for the 79-node VGG16 graph at 90% in 120 s, none for
 * five random 22-38-node training graphs in 2000 nodes), so the solver prunes
 * variables fixed by structure, rejects budgets below the trivial lower bound
 * at once, solves the LP relaxation first (its optimum is the reported lower
 * bound), rounds it into an incumbent whose cost is the branch-and-bound
 * cutoff, branches floor first with priority on S and NODE_GAPSELECT, and
 * reports the bound and the gap of every answer. Each lever is a flag so that
 * benchmarks can measure it; the figures behind the defaults are in the
 * comments below. */
#ifndef REMAT_MILP_H
#define REMAT_MILP_H

#include <stddef.h>
#include <stdint.h>

#include "schedule.h"

typedef enum rm_milp_status {
    RM_MILP_OPTIMAL = 0,  /* proved optimal (to lp_solve's gap tolerances) */
    RM_MILP_FEASIBLE,     /* a schedule within budget; a limit stopped the proof (see gap) */
    RM_MILP_INFEASIBLE,   /* proved: no schedule fits the budget */
    RM_MILP_NO_SOLUTION   /* a limit was hit before any schedule was found */
} rm_milp_status;

const char *rm_milp_status_name(rm_milp_status s);

/* Levers, as flags so their effect can be measured one at a time. "Hard
 * set" below: five random training graphs (the tests' generator) of 22-38
 * nodes at 75-90% of the checkpoint-all peak with a 2000-node limit; the
 * defaults without NO_SCALING prove 4 of 5 optimal, lp_solve's own rule
 * (NODE_FIRSTSELECT) with the other defaults 2, and stock lp_solve finds no
 * integer solution for any of them. */
enum {
    RM_MILP_FLOOR_FIRST = 1u << 0,  /* branch to 0 first; ceiling first: 3 of 5, 4x the nodes on two others */
    RM_MILP_S_PRIORITY = 1u << 1,   /* branch on every S before any R; without: 3 of 5 */
    RM_MILP_STAGE_ORDER = 1u << 2,  /* columns stage by stage, S before R before FREE (else grouped by kind);
                                       no measurable effect once S_PRIORITY orders the branching */
    RM_MILP_PRUNE = 1u << 3,        /* drop S/R of values with no descendant at or after the stage (~20% fewer
                                       columns; mixed in nodes: without, 3 of 5 but faster on two) */
    RM_MILP_FREE_CUT = 1u << 4,     /* valid cut: a value is freed at most once per stage; raises the LP bound
                                       (154.34 -> 154.98, 212.08 -> 213.59); without: 3 of 5 */
    RM_MILP_PREFIX_ROWS = 1u << 5,  /* prefix-sum budget rows (else Checkmate's U variables): VGG16's LP 7.8 s
                                       instead of 22.2 s */
    RM_MILP_INCUMBENT = 1u << 6,    /* LP rounding / checkpoint-all as incumbent and cutoff: the only answer
                                       within 60 s on VGG16 at 90% (gap 0.19%); neutral on the hard set */
    RM_MILP_FREE_CONT = 1u << 7,    /* FREE continuous (exact with the disaggregated rows): half the integers,
                                       same node counts */
    RM_MILP_SHORTCUT = 1u << 8,     /* return checkpoint-all without solving when it fits (it is optimal) */
    RM_MILP_PRESOLVE = 1u << 9,     /* lp_solve's presolve on the MILP: ACCURACYERROR on a 7-node problem, a
                                       crash when enabled after a solve (worked around); off */
    RM_MILP_BRANCH_AUTO = 1u << 10, /* BRANCH_AUTOMATIC; overrides FLOOR_FIRST; behaved like ceiling here */
    RM_MILP_NO_SCALING = 1u << 11,  /* lp_solve's scaling off (the model is scaled already): VGG16's LP
                                       1.8-3.0 s instead of 3.6-6.0 s; branch and bound starts from another
                                       root vertex: 3 of 5 of the hard set (the one lost is 1.8% off) */
};
#define RM_MILP_DEFAULT                                                                                  \
    (RM_MILP_FLOOR_FIRST | RM_MILP_S_PRIORITY | RM_MILP_STAGE_ORDER | RM_MILP_PRUNE | RM_MILP_FREE_CUT | \
     RM_MILP_PREFIX_ROWS | RM_MILP_INCUMBENT | RM_MILP_FREE_CONT | RM_MILP_SHORTCUT | RM_MILP_NO_SCALING)

/* Optional sink for lp_solve's own messages (library code never prints). */
typedef void (*rm_milp_log_fn)(void *ctx, const char *line);

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
    rm_milp_log_fn log;
    void *log_ctx;
} rm_milp_options;

void rm_milp_options_default(rm_milp_options *o);

typedef struct rm_milp_result {
    rm_milp_status status;
    double objective;    /* cost of the returned schedule, as the simulator computes it */
    double lower_bound;  /* a proved lower bound: the LP relaxation (root), or the objective when optimal */
    double lp_bound;     /* the LP relaxation's optimum (0 when it was not solved) */
    double gap;          /* (objective - lower_bound) / objective; 0 when optimal */
    size_t peak_bytes;   /* activation peak of the returned schedule (simulator) */
    long nodes;          /* branch-and-bound nodes explored */
    double seconds;      /* whole call */
    double lp_seconds;   /* LP relaxation */
    double first_solution_s; /* when lp_solve found its first improved solution; -1 = never */
    int improvements;    /* improved solutions lp_solve found */
    double incumbent_cost; /* cost of the best incumbent handed to lp_solve; -1 = none */
    int from_incumbent;  /* 1: the returned schedule is the incumbent (lp_solve found nothing better) */
    int solver_code;     /* lp_solve's solve() return code; -100 when it was not called */
    int ncols, nrows, nint; /* model size after pruning */
} rm_milp_result;

/* Solves the MILP for p->budget (budget 0 = unlimited). Returns RM_OK and a
 * schedule (*out, free with rm_schedule_free) that rm_simulate accepted
 * within budget; RM_ERR_INFEASIBLE when none exists (instantly below the
 * trivial lower bound) or none was found within the limits (info->status
 * tells which); RM_ERR_SOLVER / RM_ERR_NOMEM when lp_solve fails. opt may be
 * NULL (defaults), info may be NULL. */
int rm_strategy_milp(rm_schedule **out, rm_milp_result *info, const rm_problem *p, const rm_milp_options *opt,
                     rm_err *e);

/* The LP relaxation of the MILP: fractional S and R (n x n, row-major,
 * malloc'ed) and its optimum, a lower bound on the cost of any schedule. */
typedef struct rm_milp_relaxation {
    int n;
    double *S, *R;
    double bound;
    double seconds;
} rm_milp_relaxation;

int rm_milp_relax(rm_milp_relaxation *out, const rm_problem *p, unsigned levers, double time_limit_s, rm_err *e);
void rm_milp_relaxation_free(rm_milp_relaxation *r);

/* ---- LP rounding (lp_round.c) ---- */

typedef struct rm_lp_round_options {
    int seeds;            /* randomized roundings after the deterministic thresholds */
    uint64_t seed;        /* base seed of the randomized roundings */
    double time_limit_s;  /* for the LP relaxation; 0 = none */
    unsigned levers;      /* model levers for the relaxation (RM_MILP_*) */
    int tighten;          /* when nothing fits: re-solve the relaxation at 95%, 90%, ... of the
                             budget, up to this many times, and round those */
} rm_lp_round_options;

void rm_lp_round_options_default(rm_lp_round_options *o);

typedef struct rm_lp_round_result {
    double objective;    /* cost of the returned schedule (simulator) */
    double lp_bound;     /* LP relaxation optimum: a lower bound on the optimum */
    double gap;          /* (objective - lp_bound) / objective */
    size_t peak_bytes;   /* activation peak of the returned schedule */
    double threshold;    /* winning deterministic threshold; -1 when a randomized rounding won */
    int seed_index;      /* winning randomized rounding; -1 when a threshold won */
    int tried, fitted;   /* roundings tried / within budget (of the last relaxation rounded) */
    double budget_factor; /* fraction of the budget the rounded relaxation was solved at */
    double seconds, lp_seconds;
} rm_lp_round_result;

/* Checkmate's two-phase rounding: solve the LP relaxation, round S
 * (threshold 0.5, then other thresholds and randomized roundings, keeping the
 * cheapest that fits), and compute the cheapest R for each rounded S exactly.
 * When none fits, the relaxation is re-solved at tighter budgets (see
 * tighten). RM_ERR_INFEASIBLE when no rounding fits the budget. */
int rm_strategy_lp_round(rm_schedule **out, rm_lp_round_result *info, const rm_problem *p,
                         const rm_lp_round_options *opt, rm_err *e);

/* Only the tightened retries of rm_strategy_lp_round (lp_bound: the bound at
 * the real budget, for the gap). */
int rm_lp_round_tightened(rm_schedule **out, rm_lp_round_result *info, const rm_problem *p, double lp_bound,
                          const rm_lp_round_options *opt, rm_err *e);

/* The same rounding from a given fractional S (n x n) and LP bound. */
int rm_lp_round_from(rm_schedule **out, rm_lp_round_result *info, const rm_problem *p, const double *S_frac,
                     double lp_bound, const rm_lp_round_options *opt, rm_err *e);

/* Phase two of the rounding: given s->S, overwrite s->R with the cheapest
 * valid R (node t, everything needed transitively for it or for a value
 * retained into S[t+1] but not resident in S[t]) and clear the S entries
 * nothing reads or carries. Every R it keeps is forced, so the cost is
 * minimal for that S, and computing less never raises the peak. */
int rm_milp_cheapest_R(rm_schedule *s, const rm_problem *p, rm_err *e);


#endif
