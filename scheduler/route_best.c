/* "best", the default strategy: every cheap strategy first, then the MILP
 * route with the cheapest as incumbent, and the cheapest schedule found,
 * with the best bound known. Never dearer than a heuristic it could have
 * run in milliseconds: the baselines are the MILP's incumbent, the MILP
 * never returns anything dearer than its incumbent, and a solver that fails
 * after an incumbent exists is a logged event, not an error. Never dearer
 * than LP rounding either: the MILP rounds its own relaxation exactly as
 * lp_round does (milp.c), so the one LP is solved once. */
#include <math.h>
#include <string.h>

#include "log.h"
#include "route_internal.h"

/* The solver's answer against the heuristics': *out and *stats become the
 * better of the two (the solver's when it is as cheap, for its bound). */
static int settle(rm_schedule **out, rm_strategy_stats *stats, int mrc, const rm_strategy_stats *ms, const rm_err *me,
                  rm_schedule *inc, const rm_sim_result *ir, const char *iname, const rm_problem *p,
                  const rm_strategy_options *o, rm_err *e)
{
    rm_sim_result mr;
    rm_err ignored = {RM_OK, ""};
    /* The coarsened routes hand their simulation back (ms->sim); the direct
     * MILP's answer is small enough to simulate again. */
    if (mrc == RM_OK && ms->sim.cost > 0)
        mr = ms->sim;
    else if (mrc == RM_OK && rm_simulate(&mr, p, *out, &ignored) != RM_OK)
        mr.cost = INFINITY;
    if (mrc == RM_OK && (!inc || mr.cost <= ir->cost)) {
        rm_schedule_free(inc);
        *stats = *ms;
        /* Whatever produced the MILP route's answer (ms->source: the MILP, the
         * rounding, or a heuristic the route fell back to); the incumbent
         * handed down is named by what found it here. */
        if (stats->source && !strcmp(stats->source, RM_SOURCE_CALLER_INCUMBENT)) stats->source = iname;
        return RM_OK;
    }
    if (!inc) { /* nothing fits any heuristic, and the solvers found nothing */
        if (e) *e = *me;
        stats->status = ms->status;
        return mrc;
    }
    if (mrc == RM_OK)
        rm_route_say(o, 1, "best: the MILP's answer costs more than %s; returning it", iname);
    else if (ms->status == RM_STATUS_INFEASIBLE)
        RM_LOG_ERROR("best: the MILP says no schedule fits, yet %s (cost %.6g) does: %s", iname, ir->cost, me->msg);
    else
        RM_LOG_WARN("best: the MILP found nothing better (%s): returning %s, cost %.6g", me->msg, iname, ir->cost);
    rm_schedule_free(*out);
    *out = inc;
    stats->status = RM_STATUS_FEASIBLE;
    stats->source = iname;
    stats->has_bound = ms->has_bound && ms->status != RM_STATUS_INFEASIBLE;
    stats->bound_trivial = ms->bound_trivial;
    stats->lp_bound = ms->lp_bound;
    stats->gap = stats->has_bound && ir->cost > 0 ? fmax(0, (ir->cost - ms->lp_bound) / ir->cost) : 0;
    stats->stopped = ms->stopped;
    stats->whole_lp = ms->whole_lp;
    return RM_OK;
}

int rm_route_best(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                  rm_err *e)
{
    double deadline = rm_route_deadline(o);
    rm_strategy_stats dummy;
    if (!stats) stats = &dummy;
    int rc;
    *out = NULL;
    if (rm_route_shortcuts(&rc, out, stats, p, o, "best", 1, e) == RM_ROUTE_ANSWERED) return rc;
    const char *iname = NULL;
    rm_sim_result ir;
    /* The heuristics in at most half the time (milliseconds on models; on
     * 100,000 nodes their searches would take it all), the rest to the
     * solvers. */
    double judge_s;
    rm_schedule *inc = rm_route_incumbent(p, o, rm_deadline_share(deadline, 0.5), "best", &iname, &ir, &judge_s);
    if (rm_route_first_fit(out, stats, inc, iname, &ir, o, "best")) return RM_OK;
    if (deadline > 0) deadline -= judge_s;
    rm_strategy_options so = rm_route_phase(o, deadline);
    so.incumbent = inc;
    so.incumbent_sim = &ir; /* with inc NULL: none fits, not searched again */
    rm_strategy_stats ms;
    memset(&ms, 0, sizeof ms);
    ms.status = RM_STATUS_ERROR;
    rm_err me = {RM_OK, ""};
    int mrc = rm_route_milp(out, &ms, p, &so, &me);
    if (mrc == RM_ERR_NOMEM) {
        rm_schedule_free(inc);
        if (e) *e = me;
        return mrc;
    }
    return settle(out, stats, mrc, &ms, &me, inc, &ir, iname, p, o, e);
}
