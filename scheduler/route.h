/* The solver route: the one place that decides how the solver strategies
 * ("lp_round", "milp") answer a problem.
 *
 *   1. shortcuts   a budget below fixed bytes plus the trivial lower bound
 *                  is infeasible at once (rm_problem_check_budget); where
 *                  checkpoint-all fits it is returned, optimal (every node
 *                  once), and nothing is solved (rm_checkpoint_all_fit)
 *   2. coarsening  above RM_COARSEN_MIN_NODES nodes the LP alone takes
 *                  minutes: the problem is coarsened (coarsen.h), solved
 *                  small, expanded back and judged on the original
 *   3. incumbent   the MILP is given the cheapest fitting baseline
 *                  (rm_best_baseline) as incumbent and cutoff; the coarsened
 *                  MILP returns it where it is cheaper than the expansion
 *   4. the solver  LP rounding (lp_round.h) or the MILP (milp.h)
 *   5. the answer  status, bound and gap in rm_strategy_stats
 *
 * With REMAT_LOG=info each step says what it decided ("route milp: ..."),
 * and with REMAT_LOG=debug the baselines, the LP sizes and lp_solve's
 * return codes follow. */
#ifndef REMAT_ROUTE_H
#define REMAT_ROUTE_H

#include "strategy.h"

/* Problems above this many nodes go through coarsening in the lp_round and
 * milp routes; VGG16's 79 nodes still solve directly. */
#define RM_COARSEN_MIN_NODES 80
/* Up to this many nodes and RM_WHOLE_MAX_COLUMNS columns, with CBC built in
 * (and not --milp-engine lp_solve), the MILP route first solves the whole
 * graph's LP with CBC's Clp and rounds it (route.c, whole_round). */
#define RM_WHOLE_MAX_NODES 250
#define RM_WHOLE_MAX_COLUMNS 120000
/* Above this many nodes one anneal walk takes the whole time and fits late
 * if at all: best gives the anneal nine tenths of its time, and the anneal
 * under restarts walks once (anneal.c, route_best.c). */
#define RM_ONE_WALK_NODES 10000

/* The solver strategies' option-taking forms (rm_strategy_info.solve_opt). */
int rm_route_lp_round(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                      rm_err *e);
int rm_route_milp(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                  rm_err *e);
/* "anneal" (anneal.c): the route's shortcuts, then rm_strategy_anneal from
 * the cheapest fitting baseline (checkpoint-all where none fits). */
int rm_route_anneal(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                    rm_err *e);
/* "best" (route_best.c): the cheapest fitting baseline first, then the MILP
 * route with it as incumbent, and the cheaper answer with the best bound.
 * With o->first_fit it stops at the first schedule that fits. */
int rm_route_best(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                  rm_err *e);

/* The coarsened route for large problems: coarsens p to about target nodes
 * (RM_COARSEN_TARGET when target <= 0), runs solve (a strategy's
 * option-taking form, e.g. the MILP's) on the coarse problem with what is
 * left of the time limit, expands its schedule, and also tries
 * rm_milp_cheapest_R on the expansion's S (kept when it is valid, fits and
 * is cheaper). Flags:
 * - RM_COARSEN_FALLBACK: the cheapest fitting baseline on p is computed first
 *   and returned when it is cheaper than the expansion (or the coarse solve
 *   finds nothing), as the MILP returns its incumbent;
 * - RM_COARSEN_REFINE: with a time limit, solve again at 4/3 the target,
 *   then 4/3 that, ..., while the time left is at least 3x what the last
 *   level took; the cheapest expansion wins. ResNet-50 at batch 32, 80%, LP
 *   rounding, one level each: 64 groups +4.61% in 2.3 s, 96 +1.46% in 14 s,
 *   128 +0.57% in 37 s; refining by 1.5x (64, 96, then 144 whose LP ran out
 *   of time) gave +1.46% in 60 s, by 4/3 (64, 85, 113) +0.33% in 26 s.
 * The schedule is always judged by rm_simulate on p; RM_ERR_INFEASIBLE with
 * a message when nothing fits. Never proves optimality: stats->status is
 * FEASIBLE for the MILP route (FALLBACK), has_bound = 0 (the coarse LP
 * bound is no bound for p, and p's own LP is what is out of reach) unless
 * RM_COARSEN_BOUND found one. Where
 * checkpoint-all fits it is returned as optimal, as the solvers do. */
/* - RM_COARSEN_BOUND: first, within a third of the time limit, the relaxed
 *   LP bound of p (lp_bound.h): the answer's has_bound, lp_bound and gap
 *   (bound_trivial = 0) where one is solved. */
enum { RM_COARSEN_FALLBACK = 1, RM_COARSEN_REFINE = 2, RM_COARSEN_BOUND = 4 };
int rm_coarsen_run(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                   rm_strategy_opt_fn solve, const char *name, int target, int flags, rm_err *e);

#endif
