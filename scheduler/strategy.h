/* Scheduling strategies. Each returns a schedule (checked by the simulator
 * before it is returned) or RM_ERR_INFEASIBLE when it finds none within the
 * problem's budget. Names follow the Checkmate paper.
 *
 * All checkpointing baselines share one construction (rm_schedule_from_
 * checkpoints): the forward pass keeps only the checkpoints (and each other
 * value until its last forward reader); in the backward pass each segment
 * between checkpoints is recomputed once, when its values are first needed,
 * and kept until their last reader. They differ in how they pick the
 * checkpoints. Only forward nodes (those before the first node tagged
 * backward) are ever recomputed. Budget-driven strategies sweep their
 * parameter and return the cheapest schedule that fits; the others return
 * their one schedule if it fits. Every strategy answers RM_ERR_INFEASIBLE at
 * once when the budget is below fixed bytes plus the trivial lower bound. */
#ifndef REMAT_STRATEGY_H
#define REMAT_STRATEGY_H

#include <stdint.h>

#include "milp_engine.h"
#include "report.h"
#include "schedule.h"
#include "simulate.h"
#include "status.h"

/* No recomputation: every value is kept until its last use. */
int rm_strategy_checkpoint_all(rm_schedule **out, const rm_problem *p, rm_err *e);
/* The same schedule, unchecked: for solvers that need it as a starting
 * point without the simulator's round trip. */
int rm_checkpoint_all_build(rm_schedule **out, const rm_problem *p, rm_err *e);
/* "Does checkpoint-all fit?", asked here only: *out is checkpoint-all when
 * its peak fits p's budget (always when the budget is 0), else NULL; *r is
 * its simulation either way. Checkpoint-all costs every node once, the least
 * any schedule pays, so where it fits it is optimal. Errors: the simulator's. */
int rm_checkpoint_all_fit(rm_schedule **out, rm_sim_result *r, const rm_problem *p, rm_err *e);

/* Chen et al. 2016, sqrt(n): every floor(sqrt(k))-th of the k forward nodes
 * in topological order is a checkpoint (the linearized graph: any node may
 * be one; a value an edge carries past a checkpoint is recomputed from
 * earlier checkpoints). Not budget-driven. Checkmate's CHEN_SQRTN_NOAP. */
int rm_strategy_chen_sqrtn(rm_schedule **out, const rm_problem *p, rm_err *e);
/* Chen et al.'s greedy (their Algorithm 3) on the linearized graph: walk the
 * forward nodes adding output bytes and checkpoint a node once the running
 * total exceeds a segment budget b; b is swept and the cheapest schedule
 * that fits the budget wins. Checkmate's CHEN_GREEDY_NOAP. */
int rm_strategy_chen_greedy(rm_schedule **out, const rm_problem *p, rm_err *e);
/* The articulation-point generalizations: as above, but only articulation
 * points of the forward graph (cut points, see scheduler/baseline.h) may be
 * checkpoints, so segments never share values. Checkmate's CHEN_SQRTN and
 * CHEN_GREEDY, "AP sqrt(n)" and "AP greedy" in the paper. */
int rm_strategy_ap_sqrtn(rm_schedule **out, const rm_problem *p, rm_err *e);
int rm_strategy_ap_greedy(rm_schedule **out, const rm_problem *p, rm_err *e);
/* The linearized generalizations: the forward graph is treated as the chain
 * of its topological order, and a checkpoint at position v stores the
 * chain's state there: v and every earlier value an edge carries past v (a
 * U-Net skip, a residual input). Segments then never share values, at the
 * price of larger checkpoints. Identical to chen_* on chains. */
int rm_strategy_linearized_sqrtn(rm_schedule **out, const rm_problem *p, rm_err *e);
int rm_strategy_linearized_greedy(rm_schedule **out, const rm_problem *p, rm_err *e);
/* Griewank & Walther's revolve (binomial checkpointing, log n memory) on the
 * chain of cut points of the forward graph (every forward node on a chain;
 * the paper's "AP log n" otherwise): with s snapshot slots, the treeverse
 * splits that minimize forward recomputations for unit steps decide which
 * positions are stored and for how long; values between stored positions
 * are recomputed on demand. s is swept. */
int rm_strategy_griewank(rm_schedule **out, const rm_problem *p, rm_err *e);
/* Feng & Huang 2021, optimal gradient checkpointing: the checkpoint set that
 * minimizes the simulated activation peak of the shared construction (cost
 * breaks ties), by dynamic programming over consecutive pairs of lower sets:
 * the cut points, and the prefixes of the execution order (a prefix's
 * checkpoints are its last node plus every earlier value a later forward
 * node reads: a residual block's input, U-Net's skips). The better of the
 * two searches wins. See ogc.c for where it is exact. */
int rm_strategy_ogc(rm_schedule **out, const rm_problem *p, rm_err *e);

/* Kirisame et al.'s Dynamic Tensor Rematerialization, ahead of time, in the
 * problem's order: each node computed in turn under the budget; when an
 * output does not fit, the resident value with the lowest (recompute cost)
 * / (bytes x staleness) is evicted, and recomputed where it is read again.
 * Any DAG: it needs no backward pass. See dtr.c. */
int rm_strategy_dtr(rm_schedule **out, const rm_problem *p, rm_err *e);

/* The shared construction for a caller-chosen checkpoint set: checkpoint[v]
 * nonzero for each checkpointed forward node (entries at and after the first
 * backward node are ignored). Validated by the simulator; not budget-checked. */
int rm_schedule_from_checkpoints(rm_schedule **out, const rm_problem *p, const uint8_t *checkpoint, rm_err *e);

typedef int (*rm_strategy_fn)(rm_schedule **out, const rm_problem *p, rm_err *e);

/* ---- One table for every strategy: the baselines, LP rounding and the MILP ---- */

/* A line of progress from a long solve (lp_solve's log); same shape as
 * lp_model.h's rm_milp_log_fn, so one can be passed for the other. */
typedef void (*rm_strategy_log_fn)(void *ctx, const char *line);

/* What the solver strategies take; the baselines need none of it. Zero
 * (or a NULL pointer) means: no limits, no log. */
typedef struct rm_strategy_options {
    double time_limit_s; /* wall clock for the whole call, any strategy; 0 = none. Not deterministic */
    long node_limit;     /* MILP branch-and-bound nodes; 0 = none. Deterministic: what tests use */
    int verbosity;       /* lp_solve's log level (see milp.h, lp_model.h) when log is set; 0 = 4 (NORMAL) */
    rm_strategy_log_fn log;
    void *log_ctx;
    /* A schedule known to fit (n stages), for lp_round and the MILP: its
     * cost is their cutoff, and they never return anything dearer. NULL:
     * each finds its own (the cheapest fitting baseline). */
    const rm_schedule *incumbent;
    /* Its simulation on this problem, when the caller has it (the route
     * passes its incumbent down): trusted, not simulated again. On 100,000
     * nodes one simulation of a recomputation-heavy schedule takes a
     * second. NULL: the incumbent is simulated to check that it fits.
     * Set with incumbent NULL: the caller's baselines found none that fits
     * (they are not run again). Either way the caller asked the route's
     * shortcuts (route.h) already. */
    const rm_sim_result *incumbent_sim;
    /* "best" only: stop at the first schedule that fits (max-batch probes
     * ask whether anything fits, not what is cheapest); others ignore it. */
    int first_fit;
    /* The deadline of the whole call (deadline.h: CLOCK_MONOTONIC seconds),
     * for every strategy, the baselines included: each stops there with
     * the best schedule it has. 0: rm_strategy_run sets it time_limit_s
     * from its start; the routes pass their phases a share of it. */
    double deadline;
    /* The problem's facts (report.h), when the caller has them (the
     * commands and the trainer compute them once, before they solve): the
     * route's shortcuts take the budget's verdict from them instead of
     * simulating checkpoint-all again. NULL: the route computes them. They
     * must be p's (the budget does not matter: the verdict is asked anew). */
    const rm_problem_report *facts;
    /* Who runs the MILP's branch and bound (milp_engine.h: lp_solve, cbc,
     * or auto, the default 0). */
    rm_milp_engine milp_engine;
    /* The anneal's moves (anneal.c; 0: its default for the problem's size;
     * its walk in the order alone, first, has its own: at most five cycles
     * of 2,500 a node, at most 200,000 each) and its seed (0: 1). A given
     * seed and move count give one answer without a deadline; under one
     * the walk cools by whichever of its moves and the clock is further
     * along, so a slower machine can end it elsewhere. */
    long moves;
    unsigned long seed;
    /* The anneal keeps the problem's order (recomputations only): the
     * fixed-order search, to compare with the MILP's. */
    int keep_order;
    /* With a deadline, the anneal walks again from its start until the
     * deadline, cooler first, then alternately at its own temperature, and
     * answers the cheapest of its walks
     * (best's use of its share of the time; a lone anneal walks once). */
    int restarts;
} rm_strategy_options;

/* What a strategy run reports besides its schedule. */
typedef struct rm_strategy_stats {
    rm_status status;   /* OK (a baseline or LP rounding found one), OPTIMAL or FEASIBLE (MILP),
                           INFEASIBLE, NO_SOLUTION (MILP: a limit hit first), ERROR; rm_status_name prints it */
    double seconds;     /* wall clock of the whole call */
    int has_bound;      /* lp_bound and gap are meaningful (LP rounding, MILP) */
    int bound_trivial;  /* the LP was not solved (time limit, or a coarsened solve whose coarse LP
                           bounds nothing here): lp_bound is the trivial bound, every node once,
                           which the LP bound is never below, so the gap is an upper bound of the gap
                           to the LP bound */
    double lp_bound;    /* the LP relaxation (or the trivial bound): no schedule costs less */
    double gap;         /* (cost - proved lower bound) / cost */
    rm_sim_result sim;  /* the simulator's verdict on the returned schedule */
    int first_fit;      /* the answer is the first that fit (options.first_fit), not the cheapest found */
    const char *source; /* the strategy whose schedule the answer is: a baseline's name, "lp_round" or
                           "milp" ("best" and the solvers' routes may answer with a heuristic's or the
                           rounding's); set on every answer, NULL when there is none */
    int stopped;        /* the time limit stopped a search: the answer is the best found by then */
    int whole_lp;       /* the MILP route solved the whole graph's LP (CBC's Clp) and rounded it, above
                           RM_COARSEN_MIN_NODES (route.c): its bound is in lp_bound where it is the best */
} rm_strategy_stats;

/* stats.source when the answer is the incumbent the caller gave (options.incumbent). */
#define RM_SOURCE_CALLER_INCUMBENT "the caller's incumbent"

typedef int (*rm_strategy_opt_fn)(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p,
                                  const rm_strategy_options *o, rm_err *e);

/* A baseline that searches (a sweep, a dynamic program), under a deadline
 * (0 = none): the best schedule found when it passes, with *stopped = 1
 * (stopped may be NULL). Where nothing fitting was found by then:
 * RM_ERR_INFEASIBLE, which is then no proof that nothing fits. */
typedef int (*rm_strategy_until_fn)(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e);

typedef struct rm_strategy_info {
    const char *name;                 /* "chen_sqrtn" */
    const char *title;                /* "Chen et al. sqrt(n)" */
    rm_strategy_fn solve;             /* with defaults: no limits (for the MILP that can mean hours) */
    rm_strategy_opt_fn solve_opt;     /* NULL for the baselines; the solvers' option-taking form */
    rm_strategy_until_fn solve_until; /* the searching baselines' form under a deadline; NULL for the
                                         others (one construction each, linear in the graph) */
    int needs_backward;               /* a training graph's heuristic: it recomputes forward values for the
                                         backward pass, so on a DAG without backward nodes it has nothing
                                         to choose and steps aside (rm_strategy_applies) */
} rm_strategy_info;

/* Whether st can do anything on p: not when it needs a backward pass and p
 * has no backward node (rm_strategy_run then answers RM_ERR_UNSUPPORTED,
 * status RM_STATUS_NOT_APPLICABLE, and rm_best_baseline skips it). */
int rm_strategy_applies(const rm_strategy_info *st, const rm_problem *p);

/* The baselines above, in the order tables show them (checkpoint_all first).
 * Cheap and limit-free, so tests sweep every one of them. */
const rm_strategy_info *rm_strategy_list(int *count);
/* The cheapest baseline schedule that fits p's budget, or NULL: the solvers'
 * incumbent and fallback (route.c). The one-construction baselines run
 * first, then the searching ones, each given an equal share of the time
 * left before deadline (deadline.h; 0 = none) and stopped there with its
 * best; none starts after the deadline. Ties go as if they had run in table
 * order: a later one wins only when cheaper, or (prefer_lower_peak) as
 * cheap with a lower peak. *name and *r (either may be NULL): the winner's
 * strategy and simulation. */
rm_schedule *rm_best_baseline(const rm_problem *p, double deadline, int prefer_lower_peak, const char **name,
                              rm_sim_result *r);

/* The same table followed by the solver strategies: "lp_round" (Checkmate's
 * two-phase LP rounding) and "milp" (the Checkmate MILP with lp_solve; it is
 * given the cheapest fitting baseline as incumbent), both through the one
 * solver route (scheduler/route.h). Where checkpoint-all fits, both return
 * it without solving anything: it costs every node once, the least
 * possible, so it is optimal. Problems above 80 nodes are solved on a
 * coarsened graph of 64 super-nodes and expanded back (scheduler/coarsen.h):
 * valid and within budget, with the relaxed LP bound of the original
 * problem (lp_bound.h) where it is solved in a third of the time (else the
 * trivial one); there, with a time limit, the MILP spends half of it on refined
 * LP rounding and returns the cheaper answer. */
const rm_strategy_info *rm_strategy_list_all(int *count);
/* By name, in the whole table; '-' and '_' are the same ("lp-round"). NULL if
 * no strategy has that name. */
const rm_strategy_info *rm_strategy_find(const char *name);

/* Runs a strategy (o may be NULL), times it and judges the schedule with the
 * simulator: stats->sim. RM_ERR_INFEASIBLE (stats->status says why) when it
 * finds no schedule within the budget. stats may be NULL. With a time limit
 * (o->time_limit_s or o->deadline) the deadline is fixed here, once, and
 * holds for every strategy: a search it stops answers with the best it has
 * (stats->stopped, and a line on the log), NO_SOLUTION where it had none. */
int rm_strategy_run(rm_schedule **out, rm_strategy_stats *stats, const rm_strategy_info *st, const rm_problem *p,
                    const rm_strategy_options *o, rm_err *e);
/* The same, judged by the schedule's report (report.h) instead of a bare
 * simulation: with report not NULL and an answer, *report is its report
 * (what and g as rm_schedule_report_of takes them), from the one replay
 * that judges it, and stats->sim is report->sim; the caller frees it. With
 * no answer *report is empty (rm_schedule_report_free is still safe). */
int rm_strategy_run_report(rm_schedule **out, rm_strategy_stats *stats, rm_schedule_report *report, unsigned what,
                           const rm_graph *g, const rm_strategy_info *st, const rm_problem *p,
                           const rm_strategy_options *o, rm_err *e);

/* Simulated annealing over orders of first computes and recomputations
 * (anneal.c; Imanishi et al.'s FastSA, 2023), on any DAG: starts from
 * o->incumbent (checkpoint-all when NULL) and returns the cheapest schedule
 * within the budget it walked through, which may carry its own order
 * (schedule.h). RM_ERR_INFEASIBLE when it found none: no proof. */
int rm_strategy_anneal(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                       rm_err *e);
/* For the tests: a walk of random moves from checkpoint-all on p, each
 * kept, taken back or saved and rebuilt at random, with the anneal's
 * incremental cost and peak checked against rm_simulate's replay of its
 * schedule after every one. RM_ERR_INVALID names the first move where
 * they differ. */
int rm_anneal_check_walk(const rm_problem *p, long moves, unsigned long seed, rm_err *e);

#endif
