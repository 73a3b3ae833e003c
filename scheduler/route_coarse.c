/* The coarsened route (route.h: rm_coarsen_run): a problem too large for
 * the LP is coarsened (coarsen.h), solved small, expanded back and judged
 * on the original, at finer and finer levels while the time lasts. */
#include <stdio.h>
#include <string.h>

#include "coarsen.h"
#include "deadline.h"
#include "log.h"
#include "lp_bound.h"
#include "lp_model.h"
#include "milp.h"
#include "route_internal.h"

/* What the levels of one coarsened route found. */
typedef struct coarse_best {
    rm_schedule *s;
    rm_sim_result r;
    const char *from;   /* what found it, for the log ("coarse solve + cheapest R") */
    const char *source; /* the strategy whose schedule it is (stats.source): the incumbent's name, or the
                           coarse solve's own source (its solver, or the heuristic it fell back to) */
    rm_status cstatus;  /* the best status a coarse solve reported */
    char why[200];      /* why nothing fits, when nothing does */
    int m;              /* super-nodes of the last level */
    int stopped;        /* the deadline cut a level short, or left no time for one */
    double reserve;     /* seconds kept back from a coarse solve for its expansion */
} coarse_best;

/* The coarse schedule cs of level c expanded, as it is and with the
 * cheapest R for its S; the better one fitting is kept. */
static void take_expansion(coarse_best *b, const rm_problem *p, const rm_problem *q, const rm_coarsening *c,
                           const rm_schedule *cs, rm_status cst, const char *source, const rm_strategy_options *o,
                           double deadline, const char *name)
{
    rm_schedule *xs = NULL;
    rm_sim_result cr, xr;
    rm_err ce = {RM_OK, ""};
    memset(&cr, 0, sizeof cr);
    rm_simulate(&cr, q, cs, &ce);
    if (rm_coarsen_expand(&xs, p, c, cs, &ce) != RM_OK || rm_simulate(&xr, p, xs, &ce) != RM_OK) {
        rm_schedule_free(xs);
        snprintf(b->why, sizeof b->why, "%.190s", ce.msg);
        return;
    }
    rm_route_say(o, 1, "%s: coarse %s, cost %.6g peak %zu; expanded cost %.6g peak %zu%s", name, rm_status_name(cst),
                 cr.cost, cr.peak_bytes, xr.cost, xr.peak_bytes, rm_sim_fits(p, &xr) ? "" : " (over the budget)");
    if (!rm_sim_fits(p, &xr))
        snprintf(b->why, sizeof b->why, "the expanded schedule peaks at %zu, over the activation budget %zu",
                 xr.peak_bytes, rm_problem_activation_budget(p));
    rm_schedule *xc = NULL;
    rm_rs *d = NULL;
    /* The cheapest R works on dense matrices, O(n^2), seconds at 20,000
     * nodes: it stops at the deadline (the expansion as it is stands), and
     * its result is read back (one more pass over the matrices, a fraction
     * of the cheapest R's) only while time is left. */
    double rt0 = rm_now();
    if (!rm_deadline_passed(deadline) && rm_rs_from_schedule(&d, xs, &ce) == RM_OK &&
        rm_milp_cheapest_R_by(d, p, deadline, &ce) == RM_OK && !rm_deadline_passed(deadline) &&
        rm_schedule_from_rs(&xc, d, &ce) == RM_OK) {
        rm_schedule *before = b->s;
        rm_route_offer(&b->s, &b->r, xc, p);
        if (b->s != before) b->from = "coarse solve + cheapest R", b->source = source;
    } else if (deadline > 0 && rm_deadline_passed(deadline)) {
        b->stopped = 1;
        rm_route_say(o, 1, "%s: the time limit stopped the cheapest R for the expansion after %.2f s", name,
                     rm_now() - rt0);
    }
    rm_rs_free(d);
    rm_schedule *before = b->s;
    rm_route_offer(&b->s, &b->r, xs, p);
    if (b->s != before) b->from = "coarse solve", b->source = source;
    if (b->cstatus != RM_STATUS_OPTIMAL || cst == RM_STATUS_OPTIMAL) b->cstatus = cst;
}

/* One level: p coarsened to about level super-nodes and solved there by
 * deadline (0 = none), less b->reserve for the expansion. *same: the
 * coarsening is no finer than the last level's (stop). */
static int coarse_level(coarse_best *b, int *same, const rm_problem *p, const rm_strategy_options *o, double deadline,
                        rm_strategy_opt_fn solve, const char *name, int level, rm_err *e)
{
    rm_coarsening c;
    rm_problem *q = NULL;
    int rc;
    *same = 0;
    if ((rc = rm_coarsen_auto_until(&c, p, level, deadline, e))) {
        if (rc == RM_ERR_BUDGET && rm_deadline_passed(deadline)) { /* stopped: the best so far stands */
            rm_route_say(o, 1, "%s: the time limit stopped coarsening %d nodes", name, p->n);
            b->stopped = *same = 1;
            return RM_OK;
        }
        return rc;
    }
    if ((rc = rm_coarsen_problem(&q, p, &c, e))) {
        rm_coarsening_free(&c);
        return rc;
    }
    if (c.m == b->m) {
        /* No finer than the last level (the budget refused the merges). */
        *same = 1;
        rm_problem_free(q);
        rm_coarsening_free(&c);
        return RM_OK;
    }
    b->m = c.m;
    rm_route_say(o, 1, "%s: coarsened %d nodes into %d super-nodes (target %d)", name, p->n, c.m, level);
    /* Its model grows with the square of its nodes: 805 super-nodes (a
     * banded 100,000-node DAG whose merges the budget refused) took 3 GB
     * before the time limit stopped it. And with its edges: 179 super-nodes
     * of a forward-only 1075-node layered DAG gave 155,189 columns and
     * 928,245 rows, 900 MB with CBC's copy, whose build ran past the
     * deadline; the training graphs' coarse models stay under 50,000. */
    char why[sizeof b->why] = "";
    long vars = 0;
    if (c.m > RM_WHOLE_MAX_NODES)
        snprintf(why, sizeof why, "the coarse problem has %d super-nodes, more than the %d its model may have", c.m,
                 RM_WHOLE_MAX_NODES);
    else if ((rc = rm_lp_model_variables(&vars, q, RM_MILP_DEFAULT, e))) {
        rm_problem_free(q);
        rm_coarsening_free(&c);
        return rc;
    } else if (vars > RM_WHOLE_MAX_COLUMNS)
        snprintf(why, sizeof why, "the coarse problem's model would have %ld columns, more than the %d it may have",
                 vars, RM_WHOLE_MAX_COLUMNS);
    if (why[0]) {
        rm_route_say(o, 1, "%s: %s", name, why);
        if (!b->s) memcpy(b->why, why, sizeof why);
        *same = 1;
        rm_problem_free(q);
        rm_coarsening_free(&c);
        return RM_OK;
    }
    double solve_by = deadline > 0 ? deadline - b->reserve : 0;
    if (rm_deadline_passed(solve_by)) { /* coarsening took the time: nothing to expand */
        rm_route_say(o, 1, "%s: no time left to solve the coarse problem", name);
        b->stopped = 1;
        rm_problem_free(q);
        rm_coarsening_free(&c);
        return RM_OK;
    }
    rm_strategy_options co = rm_route_phase(o, solve_by);
    co.incumbent = NULL; /* the caller's has the original problem's stages */
    co.incumbent_sim = NULL;
    co.facts = NULL; /* and its facts are the original problem's */
    rm_strategy_stats cst;
    memset(&cst, 0, sizeof cst);
    cst.status = RM_STATUS_ERROR;
    rm_schedule *cs = NULL;
    rm_err ce = {RM_OK, ""};
    int crc = solve(&cs, &cst, q, &co, &ce);
    if (crc == RM_OK && cs) /* A solver that names no source found the schedule itself. */
        take_expansion(b, p, q, &c, cs, cst.status, cst.source ? cst.source : name, o, deadline, name);
    else if (!b->s)
        snprintf(b->why, sizeof b->why, "the coarse problem: %.170s", ce.msg[0] ? ce.msg : rm_status_name(cst.status));
    rm_schedule_free(cs);
    rm_problem_free(q);
    rm_coarsening_free(&c);
    return RM_OK;
}

void rm_route_set_bound(rm_strategy_stats *stats, double bound, double cost)
{
    stats->has_bound = 1;
    stats->bound_trivial = 0;
    stats->lp_bound = bound;
    stats->gap = cost > bound ? (cost - bound) / cost : 0;
}

/* The relaxed LP bound of p itself (lp_bound.h; the coarse LP's bounds
 * nothing here) within limit seconds (0 = none); 0 when none was solved.
 * *proof: RM_ERR_INFEASIBLE with a message in e when the bound proves that
 * nothing fits (the relaxed LP is infeasible, or the bound passes p's
 * compute cap), else RM_OK. */
static double relaxed_bound(int *proof, const rm_problem *p, double limit, const char *name, rm_err *pe)
{
    rm_lp_bound_result r;
    rm_err e = {RM_OK, ""};
    int rc = rm_lp_bound(&r, p, limit, &e);
    *proof = RM_OK;
    if (rc == RM_ERR_INFEASIBLE) {
        *proof = rc;
        if (pe) *pe = e;
        rm_err_context(pe, "%s", name);
    }
    if (rc != RM_OK || !r.solved) {
        rm_route_say(NULL, 0, "route %s: relaxed LP bound: none in %.2f s (%s)", name, r.seconds,
                     e.msg[0] ? e.msg : "time limit");
        return 0;
    }
    if (rm_problem_bound_over_cap(p, r.bound)) {
        *proof = rm_errorf(pe, RM_ERR_INFEASIBLE,
                           "%s: the relaxed LP bound %.6g is above the compute cap %.6g: nothing fits within it", name,
                           r.bound, p->max_cost);
    }
    rm_route_say(NULL, 0, "route %s: relaxed LP bound %.6g (every node once %.6g), %d levels, last %d blocks, %.2f s",
                 name, r.bound, r.trivial, r.levels, r.blocks, r.seconds);
    return r.bound;
}

/* The relaxed bound into *bound. 1 when it answers the call (*rc): it
 * proves that nothing fits and no baseline contradicts it. */
static int take_bound(double *bound, int *rc, const coarse_best *b, const rm_problem *p, double limit, const char *name,
                      rm_strategy_stats *stats, rm_err *e)
{
    int proof = RM_OK;
    *bound = relaxed_bound(&proof, p, limit, name, e);
    if (proof == RM_OK) return 0;
    if (!b->s) {
        if (stats) stats->status = RM_STATUS_INFEASIBLE;
        *rc = proof;
        return 1;
    }
    /* A baseline that fits contradicts it: numerical trouble, reported. */
    RM_LOG_ERROR("route %s: %s, yet %s fits (cost %.6g)", name, e ? e->msg : "the bound proves nothing fits",
                 b->from ? b->from : "a baseline", b->r.cost);
    return 0;
}

int rm_coarsen_run(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                   rm_strategy_opt_fn solve, const char *name, int target, int flags, rm_err *e)
{
    int baseline_fallback = flags & RM_COARSEN_FALLBACK, refine = flags & RM_COARSEN_REFINE;
    double t0 = rm_now(), deadline = rm_route_deadline(o);
    *out = NULL;
    int rc = rm_problem_validate(p, e);
    if (rc) return rc;
    coarse_best b;
    memset(&b, 0, sizeof b);
    b.cstatus = RM_STATUS_ERROR;
    /* What an expansion takes (coarsened problem, expansion, simulations,
     * all linear in p) is a few times what a validation of p takes: kept
     * back from each coarse solve, so that the answer is expanded and
     * judged before the deadline, not after. */
    b.reserve = 8 * (rm_now() - t0) + 0.01;
    if (target <= 0) target = RM_COARSEN_TARGET;
    /* A caller with a simulated incumbent (the MILP route, "best") has asked
     * the shortcuts already: a validation and a simulation less, each a
     * tenth of a second on 100,000 nodes. */
    if (!(o && o->incumbent_sim) &&
        rm_route_shortcuts(&rc, out, stats, p, o, name, baseline_fallback, e) == RM_ROUTE_ANSWERED)
        return rc;
    if (baseline_fallback) {
        /* Half the time at most, unless the caller brought its own. */
        double by = o && o->incumbent ? deadline : rm_deadline_share(deadline, 0.5);
        double judge_s;
        b.s = rm_route_incumbent(p, o, by, name, &b.from, &b.r, &judge_s);
        b.source = b.from;
        if (rm_route_first_fit(out, stats, b.s, b.from, &b.r, o, name)) return RM_OK;
        if (deadline > 0) deadline -= judge_s;
    }
    /* A third of the time: the bound's later levels gain little (lp_bound.c).
     * A first fit asks for the bound only where the first level finds
     * nothing: then it may prove that nothing fits; where something does,
     * it would be time spent on a number nobody reads. */
    int ff = o && o->first_fit, want_bound = flags & RM_COARSEN_BOUND;
    double bound = 0;
    /* One level, or (refine) finer and finer levels while the time lasts. */
    for (int level = target;;) {
        if (want_bound && !ff) {
            want_bound = 0;
            double left = rm_deadline_left(deadline);
            if (deadline <= 0 || left > 0.01)
                if (take_bound(&bound, &rc, &b, p, deadline > 0 ? left / 3 : 0, name, stats, e)) return rc;
        }
        if (rm_deadline_passed(deadline)) {
            rm_route_say(o, 1, "%s: no time left for a coarse solve", name);
            b.stopped = 1;
            break;
        }
        double lt0 = rm_now();
        int same;
        /* A first fit's first level leaves a third of the time to the bound. */
        double level_by = want_bound ? rm_deadline_share(deadline, 2.0 / 3) : deadline;
        if ((rc = coarse_level(&b, &same, p, o, level_by, solve, name, level, e)) || same) break;
        double took = rm_now() - lt0;
        if (want_bound && !b.s) {
            want_bound = 0;
            double rest = rm_deadline_left(deadline);
            if (deadline <= 0 || rest > 0.01)
                if (take_bound(&bound, &rc, &b, p, deadline > 0 ? rest : 0, name, stats, e)) return rc;
        }
        /* The next level's LP is several times this one's (ResNet-50 at 80%:
         * 64 groups 2.3 s, 96 14 s, 128 37 s); try it only when 3x fits. */
        if (!refine || deadline <= 0 || b.m >= p->n || rm_deadline_left(deadline) < 3 * took ||
            (b.s && o && o->first_fit))
            break;
        level += level / 3 > 0 ? level / 3 : 1;
    }
    if (rc) {
        rm_schedule_free(b.s);
        return rc;
    }
    if (stats) {
        stats->has_bound = 0; /* the coarse bound is no bound for p */
        if (baseline_fallback || b.cstatus == RM_STATUS_OPTIMAL)
            stats->status = RM_STATUS_FEASIBLE;
        else if (b.cstatus != RM_STATUS_ERROR)
            stats->status = b.cstatus;
        if (bound > 0) rm_route_set_bound(stats, bound, b.s ? b.r.cost : bound);
        stats->stopped = b.stopped;
    }
    if (!b.s) {
        /* Nothing found is no proof: the coarse problem has fewer schedules
         * than p (only the bound above proves infeasibility). */
        if (stats) stats->status = RM_STATUS_NO_SOLUTION;
        if (b.stopped)
            return rm_errorf(e, RM_ERR_INFEASIBLE,
                             "%s: the time limit stopped the search on %d nodes before any schedule fit: not proof "
                             "that nothing fits",
                             name, p->n);
        return rm_errorf(e, RM_ERR_INFEASIBLE, "%s: nothing fits on the %d-node coarse problem of %d nodes: %s", name,
                         b.m, p->n, b.why[0] ? b.why : "no schedule");
    }
    rm_route_say(o, 1, "%s: returning %s, cost %.6g, peak %zu%s", name, b.from ? b.from : "?", b.r.cost, b.r.peak_bytes,
                 b.stopped ? " (the time limit stopped the search)" : "");
    if (stats && o && o->first_fit) stats->first_fit = 1;
    if (stats) {
        stats->sim = b.r; /* for the route's comparisons; rm_strategy_run judges again */
        stats->source = b.source;
    }
    *out = b.s;
    return RM_OK;
}
