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
#include "order.h"
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

/* The MILP route on p renumbered in the order of a (a schedule with its own
 * order, simulated in ar), with a as its incumbent: for small problems the
 * exact model then proves what is optimal in that order. The answer carries
 * the order again. */
static int milp_in_order(rm_schedule **out, rm_strategy_stats *ms, const rm_problem *p, const rm_schedule *a,
                         const rm_sim_result *ar, const rm_strategy_options *o, rm_err *e)
{
    rm_problem *q = NULL;
    rm_schedule *plain = NULL;
    int rc = rm_problem_reorder(&q, p, a->order, e);
    if (!rc && !(rc = rm_schedule_copy(&plain, a, e))) rc = rm_schedule_set_order(plain, NULL, e);
    if (!rc) {
        rm_strategy_options so = *o;
        so.incumbent = plain;
        so.incumbent_sim = ar;
        so.facts = NULL; /* p's no-remat peak is not q's */
        /* Its simulation, which the direct MILP leaves to the caller. */
        if (!(rc = rm_route_milp(out, ms, q, &so, e)) && !(rc = rm_schedule_set_order(*out, a->order, e)))
            rc = rm_simulate(&ms->sim, p, *out, e);
    }
    rm_problem_free(q);
    rm_schedule_free(plain);
    return rc;
}

/* A schedule in its own order (simulated in r) as best's answer: no LP
 * bound of the problem's order bounds it, so it reports none, and
 * rm_strategy_run gives it the trivial one (every node once), as it does
 * every solver's answer without a bound. */
static void answer_in_order(rm_strategy_stats *stats, const rm_sim_result *r, const char *source, int stopped)
{
    stats->status = RM_STATUS_FEASIBLE;
    stats->source = source;
    stats->sim = *r;
    stats->has_bound = 0;
    stats->bound_trivial = 0;
    stats->lp_bound = 0;
    stats->gap = 0;
    stats->stopped = stopped;
    stats->whole_lp = 0;
}

/* Nothing fits any heuristic, the anneal or the MILP: says what that
 * proves. Only the trivial bound, checked before any search, proves that
 * no schedule fits in any order; the MILP's verdict, even a proof, is about
 * the problem's order, and the anneal's about the moves it made. */
static void none_found(rm_strategy_stats *stats, const rm_strategy_options *o, const rm_err *ae, const rm_err *me,
                       rm_err *e)
{
    int proved = stats->status == RM_STATUS_INFEASIBLE;
    if (o && o->keep_order) return; /* the problem's order only: the MILP's verdict is the answer */
    stats->status = RM_STATUS_NO_SOLUTION;
    if (proved)
        rm_errorf(e, RM_ERR_INFEASIBLE,
                  "in the problem's order no schedule fits (the MILP proved it: %.180s); in other orders the anneal "
                  "found none (%.180s), which proves nothing about them",
                  me->msg, ae->msg);
    else
        rm_errorf(e, RM_ERR_INFEASIBLE,
                  "none found, and none proved impossible: no heuristic fits, the anneal found none (%.180s), the "
                  "MILP found none (%.180s)",
                  ae->msg, me->msg);
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
    /* The anneal from the incumbent (its walks under a deadline: anneal.c),
     * in at most a quarter of the time left on a training graph where
     * a heuristic fits, else half: it may also reorder, which no baseline does and the MILP cannot,
     * and it is the one that answers on DAGs without a backward pass.
     * Cheaper in the problem's order, it becomes the MILP's incumbent; in
     * its own order, the MILP also runs in that order from it. Above the
     * size where the exact model proves what is optimal, it walks again
     * until its share ends: walks differ more from seed to seed than the
     * MILP on a coarsened graph gains in that time (ResNet-50 at 80%, 20 s:
     * +0.26% against one walk's +0.65%, where the coarse MILP reaches +1.58%
     * in 40 s). There, with no heuristic fitting or no backward pass (where
     * only DTR may fit), its share is three quarters: on such graphs (Moccasin's, remat's layered ones) the MILP
     * on the coarsened graph found nothing in bench/reorder.sh. Nine tenths
     * above RM_ONE_WALK_NODES: one walk fits first at about four fifths of its
     * length (100,263 nodes at 90%, 30 s), and in three quarters of 40 s
     * best found nothing where the anneal given all of it found +1.85%. And
     * on graphs without a backward pass above RM_WHOLE_MAX_NODES, where the
     * MILP only sees a coarsened graph: in 40 s on Moccasin's 500- and
     * 1000-node graphs and remat's 500- to 1094-node ones (seven runs, 70%
     * to 90%), what followed the anneal never bettered its answer. */
    int restarts = p->n > RM_COARSEN_MIN_NODES && !(o && o->first_fit);
    static const rm_strategy_info split = {.needs_backward = 1};
    int training = rm_strategy_applies(&split, p), checkpointed = inc && training; /* a heuristic fits */
    int coarse_dag = p->n > RM_WHOLE_MAX_NODES && !training;
    double share = checkpointed ? 0.25 : !restarts ? 0.5 : p->n > RM_ONE_WALK_NODES || coarse_dag ? 0.9 : 0.75;
    rm_strategy_options ao = rm_route_phase(o, rm_deadline_share(deadline, share));
    ao.incumbent = inc;
    ao.restarts = restarts;
    rm_schedule *ann = NULL;
    rm_strategy_stats as;
    rm_err ae = {RM_OK, ""};
    int arc = rm_strategy_anneal(&ann, &as, p, &ao, &ae);
    if (arc == RM_ERR_NOMEM) {
        rm_schedule_free(inc);
        if (e) *e = ae;
        return arc;
    }
    if (arc == RM_OK && (!inc || rm_sim_better(&as.sim, &ir))) {
        rm_route_say(o, 0, "best: the anneal found cost %.6g%s", as.sim.cost, ann->order ? " in its own order" : "");
        if (!ann->order) {
            rm_schedule_free(inc);
            inc = ann, ir = as.sim, iname = "anneal", ann = NULL;
        }
    } else {
        rm_schedule_free(ann);
        ann = NULL;
    }
    /* A probe (maxbatch) asks whether anything fits: the anneal's answer
     * does (it stopped at its first). */
    if (ann && o && o->first_fit) {
        rm_route_say(o, 1, "best: the anneal's answer fits; first fit asked: no solver run");
        rm_schedule_free(inc);
        *out = ann;
        answer_in_order(stats, &as.sim, "anneal", 0);
        stats->first_fit = 1;
        return RM_OK;
    }
    if (rm_route_first_fit(out, stats, inc, iname, &ir, o, "best")) return RM_OK;
    /* Every node computed once is the least any schedule costs, in any
     * order (in the problem's order that is checkpoint-all, which the
     * shortcuts answered): an order of the anneal's that fits so is
     * optimal, and no solver can add to it (rm_strategy_run gives it the
     * trivial bound, which it meets). */
    if (ann && as.sim.cost <= rm_problem_base_cost(p)) {
        rm_route_say(o, 1, "best: the anneal's order fits with every node computed once: optimal, no solver run");
        rm_schedule_free(inc);
        *out = ann;
        answer_in_order(stats, &as.sim, "anneal", 0);
        stats->status = RM_STATUS_OPTIMAL;
        return RM_OK;
    }
    /* The anneal in the problem's order too, from the cheapest there, in a
     * quarter of what is left, half while nothing in that order fits (the
     * first anneal's answer may have become that incumbent): its moves all
     * go to recomputations, so it
     * can beat the free walk (U-Net at 70%: +0.08% against +0.52%), and its
     * answer is then the MILP's incumbent in that order. */
    if (!(o && o->keep_order)) {
        rm_strategy_options fo = rm_route_phase(o, rm_deadline_share(deadline, inc ? 0.25 : 0.5));
        fo.incumbent = inc;
        fo.keep_order = 1;
        fo.restarts = restarts;
        rm_schedule *fix = NULL;
        rm_strategy_stats fs;
        rm_err fe = {RM_OK, ""};
        int frc = rm_strategy_anneal(&fix, &fs, p, &fo, &fe);
        if (frc == RM_ERR_NOMEM) {
            rm_schedule_free(inc);
            rm_schedule_free(ann);
            if (e) *e = fe;
            return frc;
        }
        if (frc == RM_OK && (!inc || rm_sim_better(&fs.sim, &ir))) {
            rm_route_say(o, 0, "best: the anneal in the problem's order found cost %.6g", fs.sim.cost);
            rm_schedule_free(inc);
            inc = fix, ir = fs.sim, iname = "anneal";
        } else {
            rm_schedule_free(fix);
        }
        if (ann && inc && !rm_sim_better(&as.sim, &ir)) {
            rm_schedule_free(ann);
            ann = NULL;
        }
    }
    /* With the anneal's own order the cheapest so far, the MILP in the
     * problem's order has half the time left, and in that order the rest. */
    rm_strategy_options so = rm_route_phase(o, ann && inc ? rm_deadline_share(deadline, 0.5) : deadline);
    so.incumbent = inc;
    so.incumbent_sim = &ir; /* with inc NULL: none fits, not searched again */
    rm_strategy_stats ms;
    memset(&ms, 0, sizeof ms);
    ms.status = RM_STATUS_ERROR;
    rm_err me = {RM_OK, ""};
    int mrc = RM_ERR_INFEASIBLE;
    /* In the problem's order, unless only the anneal's answer fits and the
     * problem is too large for the exact model to prove anything there. */
    if (!ann || inc || p->n <= RM_COARSEN_MIN_NODES) mrc = rm_route_milp(out, &ms, p, &so, &me);
    if (mrc == RM_ERR_NOMEM) {
        rm_schedule_free(inc);
        rm_schedule_free(ann);
        if (e) *e = me;
        return mrc;
    }
    if (!ann) {
        rc = settle(out, stats, mrc, &ms, &me, inc, &ir, iname, p, o, e);
        if (rc == RM_ERR_INFEASIBLE) none_found(stats, o, &ae, &me, e);
        return rc;
    }
    /* The anneal's order: the MILP from its answer in the rest of the time. */
    rm_schedule *ord = NULL;
    rm_strategy_stats os;
    memset(&os, 0, sizeof os);
    rm_err oe = {RM_OK, ""};
    rm_strategy_options po = rm_route_phase(o, deadline);
    int orc = milp_in_order(&ord, &os, p, ann, &as.sim, &po, &oe);
    if (orc == RM_ERR_NOMEM) {
        rm_schedule_free(*out);
        *out = NULL;
        rm_schedule_free(inc);
        rm_schedule_free(ann);
        if (e) *e = oe;
        return orc;
    }
    const char *aname = "anneal";
    if (orc == RM_OK && rm_sim_better(&os.sim, &as.sim)) {
        rm_schedule_free(ann);
        ann = ord, as.sim = os.sim, aname = "milp (in the anneal's order)";
    } else {
        rm_schedule_free(ord);
    }
    /* The problem's order's best against the anneal's order's. */
    rc = mrc == RM_OK || inc ? settle(out, stats, mrc, &ms, &me, inc, &ir, iname, p, o, e) : RM_ERR_INFEASIBLE;
    if (rc == RM_ERR_NOMEM) {
        rm_schedule_free(ann);
        return rc;
    }
    rm_sim_result r1;
    rm_err ignored = {RM_OK, ""};
    if (rc == RM_OK && rm_simulate(&r1, p, *out, &ignored) == RM_OK && !rm_sim_better(&as.sim, &r1)) {
        rm_schedule_free(ann);
        return RM_OK;
    }
    rm_schedule_free(*out);
    *out = ann;
    answer_in_order(stats, &as.sim, aname, ms.stopped || os.stopped || as.stopped);
    return RM_OK;
}
