/* What the solver route's files (route.c, route_coarse.c, route_best.c)
 * share: the route's log lines, its shortcuts, its incumbent and its
 * "keep the cheaper schedule". Not for use outside the route. */
#ifndef REMAT_ROUTE_INTERNAL_H
#define REMAT_ROUTE_INTERNAL_H

#include "deadline.h"
#include "route.h"

/* The call's deadline (deadline.h): o->deadline when set (rm_strategy_run
 * sets it), else o->time_limit_s from now; 0 = none. Every phase of a route
 * works to this one point, or to a share of the time left before it. */
double rm_route_deadline(const rm_strategy_options *o);

/* Options for a phase that must end by deadline: o's, with deadline and
 * time_limit_s (the seconds left, at least 0.01) set to it; none when 0. */
rm_strategy_options rm_route_phase(const rm_strategy_options *o, double deadline);

/* A route line at REMAT_LOG=info, and on o's log when to_caller (the lines
 * callers of the solver strategies have always been given). */
void rm_route_say(const rm_strategy_options *o, int to_caller, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

enum { RM_ROUTE_SOLVE, RM_ROUTE_ANSWERED };

/* The shortcuts, asked once per call, by the budget's verdict (report.h;
 * from o->facts when the caller has them): RM_ROUTE_ANSWERED with *rc:
 * infeasible below the trivial bound, or checkpoint-all in *out (optimal:
 * its bound is its cost; status OPTIMAL where the strategy proves
 * optimality, proves != 0). An invalid problem skips them and goes on to
 * the solver, which reports it. A phase given a simulated incumbent
 * (o->incumbent_sim) was called by a route that asked them already. */
int rm_route_shortcuts(int *rc, rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p,
                       const rm_strategy_options *o, const char *who, int proves, rm_err *e);

/* Keeps s in *best if it fits and is cheaper (ties: lower peak); takes s.
 * Returns 1 when s was kept. */
int rm_route_offer(rm_schedule **best, rm_sim_result *best_r, rm_schedule *s, const rm_problem *p);

/* The incumbent of a solve, owned by the caller: a copy of o->incumbent
 * when the caller gave one that fits, else the cheapest fitting baseline
 * (searched until deadline, deadline.h; 0 = none), else NULL. *name: where it came from;
 * *r: its simulation. Logged as "route WHO: incumbent: ...". */
/* *judge_s (may be NULL): the seconds to keep back from the deadline for
 * the judge, rm_strategy_run's simulation of the answer after the route
 * returns: one and a half of the incumbent's simulations (an answer being
 * no harder to simulate than the heuristic it had to beat, give or take);
 * 0 when the caller gave the incumbent with its simulation (the caller kept
 * it back) or there is none. */
rm_schedule *rm_route_incumbent(const rm_problem *p, const rm_strategy_options *o, double deadline, const char *who,
                                const char **name, rm_sim_result *r, double *judge_s);

/* First fit asked (o->first_fit) and an incumbent at hand: it is the
 * answer (FEASIBLE, stats->first_fit), no solver runs, and 1 is returned
 * (inc taken into *out). Else 0, inc untouched. */
int rm_route_first_fit(rm_schedule **out, rm_strategy_stats *stats, rm_schedule *inc, const char *iname,
                       const rm_sim_result *ir, const rm_strategy_options *o, const char *who);

/* A bound for p itself (the relaxed LP bound, route_coarse.c) into stats,
 * with the gap of an answer costing cost. */
void rm_route_set_bound(rm_strategy_stats *stats, double bound, double cost);

#endif
