/* "best", the default strategy: every cheap strategy first, then the
 * solvers with the cheapest as their incumbent, and the cheapest schedule
 * found, with the best bound known. Never dearer than a heuristic it could
 * have run in milliseconds: the baselines are the MILP's incumbent, the MILP
 * never returns anything dearer than its incumbent, and a solver that fails
 * after an incumbent exists is a logged event, not an error. */
#include <math.h>
#include <string.h>

#include "log.h"
#include "route_internal.h"

/* The solver's answer against the heuristics': *out and *stats become the
 * better of the two (the solver's when it is as cheap, for its bound). */
static int settle(rm_schedule **out, rm_strategy_stats *stats, int mrc, const rm_strategy_stats *ms,
                  const rm_err *me, rm_schedule *inc, const rm_sim_result *ir, const char *iname,
                  const rm_problem *p, const rm_strategy_options *o, rm_err *e)
{
    rm_sim_result mr;
    rm_err ignored = {RM_OK, ""};
    if (mrc == RM_OK && (!inc || (rm_simulate(&mr, p, *out, &ignored) == RM_OK && mr.cost <= ir->cost))) {
        rm_schedule_free(inc);
        *stats = *ms;
        stats->source = "milp";
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
    return RM_OK;
}

/* LP rounding with the heuristics' incumbent, when the graph is small enough
 * for the LP (above RM_COARSEN_MIN_NODES the MILP route rounds on its own,
 * coarsened): its answer replaces the incumbent when cheaper. A third of
 * the time limit at most; the MILP solves the same LP again, which on
 * VGG16 (79 nodes) costs seconds, for a guarantee: never dearer than
 * lp_round either. */
static int rounded_incumbent(rm_schedule **inc, rm_sim_result *ir, const char **iname, const rm_problem *p,
                             const rm_strategy_options *so, double t0, double limit, rm_err *e)
{
    if (p->n > RM_COARSEN_MIN_NODES) return RM_OK;
    rm_strategy_options lo = *so;
    lo.incumbent = *inc;
    if (limit > 0) lo.time_limit_s = fmax(0.01, limit / 3 - (rm_route_now() - t0));
    rm_schedule *s = NULL;
    rm_strategy_stats ls;
    memset(&ls, 0, sizeof ls);
    rm_err le = {RM_OK, ""};
    int rc = rm_route_lp_round(&s, &ls, p, &lo, &le);
    if (rc == RM_ERR_NOMEM) {
        if (e) *e = le;
        return rc;
    }
    if (rc == RM_OK && rm_route_offer(inc, ir, s, p)) {
        *iname = "lp_round";
        rm_route_say(so, 1, "best: lp_round's schedule is the incumbent, cost %.6g", ir->cost);
    }
    return RM_OK;
}

int rm_route_best(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                  rm_err *e)
{
    double t0 = rm_route_now(), limit = o ? o->time_limit_s : 0;
    rm_strategy_stats dummy;
    if (!stats) stats = &dummy;
    int rc;
    *out = NULL;
    if (rm_route_shortcuts(&rc, out, stats, p, "best", 1, e) == RM_ROUTE_ANSWERED) return rc;
    const char *iname = NULL;
    rm_sim_result ir;
    rm_schedule *inc = rm_route_incumbent(p, o, limit > 0 ? t0 + limit : 0, "best", &iname, &ir);
    if (inc && o && o->first_fit) {
        rm_route_say(o, 1, "best: %s fits (cost %.6g); first fit asked: no solver run", iname, ir.cost);
        *out = inc;
        stats->status = RM_STATUS_FEASIBLE;
        stats->first_fit = 1;
        stats->source = iname;
        return RM_OK;
    }
    rm_strategy_options so;
    memset(&so, 0, sizeof so);
    if (o) so = *o;
    if ((rc = rounded_incumbent(&inc, &ir, &iname, p, &so, t0, limit, e)) != RM_OK) {
        rm_schedule_free(inc);
        return rc;
    }
    so.incumbent = inc;
    if (limit > 0) so.time_limit_s = fmax(0.01, limit - (rm_route_now() - t0));
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
