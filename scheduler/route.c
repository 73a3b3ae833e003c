/* The solver route (see route.h): shortcuts, coarsening, incumbent, solver,
 * answer, for LP rounding and the MILP. Every decision is logged: at
 * REMAT_LOG=info here, and on the strategy options' log where a caller
 * asked for one (the lines it got before). */
#include "route.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "coarsen.h"
#include "log.h"
#include "milp.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A route line at REMAT_LOG=info, and on o's log when to_caller (the lines
 * callers of the solver strategies have always been given). */
static void say(const rm_strategy_options *o, int to_caller, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void say(const rm_strategy_options *o, int to_caller, const char *fmt, ...)
{
    char line[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    RM_LOG_INFO("%s", line);
    if (to_caller && o && o->log) {
        size_t l = strlen(line);
        if (l + 1 < sizeof line) line[l] = '\n', line[l + 1] = 0;
        o->log(o->log_ctx, line);
    }
}

/* ---------------------------------------------------------------- 1. shortcuts */

enum { ROUTE_SOLVE, ROUTE_ANSWERED };

/* The shortcuts, asked once per call. ROUTE_ANSWERED with rc: infeasible
 * below the trivial bound, or checkpoint-all in *out (optimal: its bound is
 * its cost; status OPTIMAL where the strategy proves optimality). An
 * invalid problem skips them and goes on to the solver, which reports it. */
static int shortcuts(int *rc, rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const char *who,
                     int proves, rm_err *e)
{
    rm_err ignored = {RM_OK, ""};
    *rc = RM_OK;
    if (rm_problem_validate(p, &ignored) != RM_OK) return ROUTE_SOLVE;
    say(NULL, 0, "route %s: %d nodes, budget %zu (fixed %zu), trivial lower bound %zu", who, p->n, p->budget,
        p->fixed_bytes, rm_problem_peak_lower_bound(p));
    if ((*rc = rm_problem_check_budget(p, who, e)) != RM_OK) {
        if (stats) stats->status = RM_STATUS_INFEASIBLE;
        say(NULL, 0, "route %s: below the trivial bound: infeasible, nothing to solve", who);
        return ROUTE_ANSWERED;
    }
    rm_sim_result r;
    rm_schedule *all = NULL;
    if (rm_checkpoint_all_fit(&all, &r, p, &ignored) != RM_OK) return ROUTE_SOLVE;
    if (!all) {
        say(NULL, 0, "route %s: checkpoint-all (peak %zu) does not fit: solving", who, r.peak_bytes);
        return ROUTE_SOLVE;
    }
    say(NULL, 0, "route %s: checkpoint-all fits (peak %zu, cost %.6g): optimal, nothing to solve", who, r.peak_bytes,
        r.cost);
    *out = all;
    if (stats) {
        if (proves) stats->status = RM_STATUS_OPTIMAL;
        stats->has_bound = 1;
        stats->lp_bound = r.cost;
        stats->gap = 0;
    }
    return ROUTE_ANSWERED;
}

/* ---------------------------------------------------------------- 4. the solvers */

static int lp_round_direct(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p,
                           const rm_strategy_options *o, rm_err *e)
{
    int rc;
    if (shortcuts(&rc, out, stats, p, "lp_round", 0, e) == ROUTE_ANSWERED) return rc;
    rm_lp_round_options lo;
    rm_lp_round_options_default(&lo);
    if (o) lo.time_limit_s = o->time_limit_s;
    rm_lp_round_result r;
    memset(&r, 0, sizeof r);
    rc = rm_strategy_lp_round(out, &r, p, &lo, e);
    if (stats && r.lp_bound > 0) {
        stats->has_bound = 1;
        stats->lp_bound = r.lp_bound;
        stats->gap = rc == RM_OK ? r.gap : 0;
    }
    if (rc == RM_OK)
        say(NULL, 0,
            "route lp_round: rounded cost %.6g, peak %zu, LP bound %.6g, gap %.2f%% (LP %.2f s, relaxation at %.0f%% "
            "of the budget, %d of %d roundings fit)",
            r.objective, r.peak_bytes, r.lp_bound, 100.0 * r.gap, r.lp_seconds, 100.0 * r.budget_factor, r.fitted,
            r.tried);
    else
        say(NULL, 0, "route lp_round: no schedule: %s", e ? e->msg : "");
    return rc;
}

static int milp_direct(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                       rm_err *e)
{
    double t0 = now_s();
    rm_milp_options mo;
    rm_milp_options_default(&mo);
    if (o) {
        mo.time_limit_s = o->time_limit_s;
        mo.node_limit = o->node_limit;
        mo.log = o->log;
        mo.log_ctx = o->log_ctx;
        mo.verbosity = o->verbosity ? o->verbosity : 4;
    }
    int rc;
    if (shortcuts(&rc, out, stats, p, "milp", 1, e) == ROUTE_ANSWERED) return rc;
    /* 3. Between the trivial bound and checkpoint-all: the cheapest
     * baseline is the incumbent (LP rounding, the MILP's own, sometimes
     * overshoots a tight budget where a checkpointing heuristic fits, and
     * without any incumbent lp_solve's branch and bound may find nothing at
     * all). The baselines are fast next to any MILP. */
    rm_schedule *incumbent = NULL;
    if (p->budget > 0) {
        const char *name = NULL;
        rm_sim_result r;
        incumbent = rm_best_baseline(p, mo.time_limit_s > 0 ? t0 + mo.time_limit_s : 0, 0, &name, &r);
        if (incumbent) {
            say(NULL, 0, "route milp: incumbent: %s (the cheapest fitting baseline), cost %.6g", name, r.cost);
            if (o && o->log) {
                char line[160];
                snprintf(line, sizeof line, "incumbent: %s, cost %.6g\n", name, r.cost);
                o->log(o->log_ctx, line);
            }
        } else {
            say(NULL, 0, "route milp: no baseline fits: no incumbent");
        }
    }
    if (mo.time_limit_s > 0) {
        /* The limit is for the whole call: what the baselines took is gone. */
        mo.time_limit_s -= now_s() - t0;
        if (mo.time_limit_s < 0.01) mo.time_limit_s = 0.01;
    }
    mo.incumbent = incumbent;
    rm_milp_result info;
    memset(&info, 0, sizeof info);
    rc = rm_strategy_milp(out, &info, p, &mo, e);
    rm_schedule_free(incumbent);
    if (stats) {
        stats->status = info.status;
        if (info.lp_bound > 0 || info.status == RM_STATUS_OPTIMAL) {
            stats->has_bound = 1;
            stats->lp_bound = info.lp_bound;
            stats->gap = rc == RM_OK ? info.gap : 0;
        }
    }
    char bb[120] = "branch and bound not run";
    if (info.solver_code != -100)
        snprintf(bb, sizeof bb, "branch and bound: %ld nodes, lp_solve code %d (%s)", info.nodes, info.solver_code,
                 rm_lp_code_name(info.solver_code));
    if (rc == RM_OK)
        say(NULL, 0,
            "route milp: %s, cost %.6g, bound %.6g, gap %.2f%%, %.2f s (LP bound %.6g in %.2f s; best incumbent "
            "%.6g%s; %s)",
            rm_status_name(info.status), info.objective, info.lower_bound, 100.0 * info.gap, info.seconds,
            info.lp_bound, info.lp_seconds, info.incumbent_cost, info.from_incumbent ? ", returned" : "", bb);
    else
        say(NULL, 0, "route milp: %s, no schedule, %.2f s (LP bound %.6g; %s): %s", rm_status_name(info.status),
            info.seconds, info.lp_bound, bb, e ? e->msg : "");
    return rc;
}

/* ---------------------------------------------------------------- 2. coarsening */

/* Keeps s in *best if it fits and is cheaper (ties: lower peak); takes s. */
static void offer(rm_schedule **best, rm_sim_result *best_r, rm_schedule *s, const rm_problem *p)
{
    rm_sim_result r;
    rm_err ignored = {RM_OK, ""};
    if (s && rm_simulate(&r, p, s, &ignored) == RM_OK && rm_sim_fits(p, &r) &&
        (!*best || r.cost < best_r->cost || (r.cost == best_r->cost && r.peak_bytes < best_r->peak_bytes))) {
        rm_schedule_free(*best);
        *best = s;
        *best_r = r;
        return;
    }
    rm_schedule_free(s);
}

/* What the levels of one coarsened route found. */
typedef struct coarse_best {
    rm_schedule *s;
    rm_sim_result r;
    const char *from;  /* what found it */
    rm_status cstatus; /* the best status a coarse solve reported */
    char why[200];     /* why nothing fits, when nothing does */
    int m;             /* super-nodes of the last level */
} coarse_best;

/* The coarse schedule cs of level c expanded, as it is and with the
 * cheapest R for its S; the better one fitting is kept. */
static void take_expansion(coarse_best *b, const rm_problem *p, const rm_problem *q, const rm_coarsening *c,
                           const rm_schedule *cs, rm_status cst, const rm_strategy_options *o, const char *name)
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
    say(o, 1, "%s: coarse %s, cost %.6g peak %zu; expanded cost %.6g peak %zu%s", name, rm_status_name(cst), cr.cost,
        cr.peak_bytes, xr.cost, xr.peak_bytes, rm_sim_fits(p, &xr) ? "" : " (over the budget)");
    if (!rm_sim_fits(p, &xr))
        snprintf(b->why, sizeof b->why, "the expanded schedule peaks at %zu, over the activation budget %zu",
                 xr.peak_bytes, rm_problem_activation_budget(p));
    rm_schedule *xc = NULL;
    if (rm_schedule_copy(&xc, xs, &ce) == RM_OK && rm_milp_cheapest_R(xc, p, &ce) == RM_OK) {
        rm_schedule *before = b->s;
        offer(&b->s, &b->r, xc, p);
        if (b->s != before) b->from = "coarse solve + cheapest R";
    } else {
        rm_schedule_free(xc);
    }
    rm_schedule *before = b->s;
    offer(&b->s, &b->r, xs, p);
    if (b->s != before) b->from = "coarse solve";
    if (b->cstatus != RM_STATUS_OPTIMAL || cst == RM_STATUS_OPTIMAL) b->cstatus = cst;
}

/* One level: p coarsened to about level super-nodes and solved there.
 * *same: the coarsening is no finer than the last level's (stop). */
static int coarse_level(coarse_best *b, int *same, const rm_problem *p, const rm_strategy_options *o, double t0,
                        double limit, rm_strategy_opt_fn solve, const char *name, int level, rm_err *e)
{
    rm_coarsening c;
    rm_problem *q = NULL;
    int rc;
    *same = 0;
    if ((rc = rm_coarsen_auto(&c, p, level, e))) return rc;
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
    say(o, 1, "%s: coarsened %d nodes into %d super-nodes (target %d)", name, p->n, c.m, level);
    rm_strategy_options co;
    memset(&co, 0, sizeof co);
    if (o) co = *o;
    if (limit > 0) {
        co.time_limit_s = limit - (now_s() - t0);
        if (co.time_limit_s < 0.01) co.time_limit_s = 0.01;
    }
    rm_strategy_stats cst;
    memset(&cst, 0, sizeof cst);
    cst.status = RM_STATUS_ERROR;
    rm_schedule *cs = NULL;
    rm_err ce = {RM_OK, ""};
    int crc = solve(&cs, &cst, q, &co, &ce);
    if (crc == RM_OK && cs)
        take_expansion(b, p, q, &c, cs, cst.status, o, name);
    else if (!b->s)
        snprintf(b->why, sizeof b->why, "the coarse problem: %.170s", ce.msg[0] ? ce.msg : rm_status_name(cst.status));
    rm_schedule_free(cs);
    rm_problem_free(q);
    rm_coarsening_free(&c);
    return RM_OK;
}

int rm_coarsen_run(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                   rm_strategy_opt_fn solve, const char *name, int target, int flags, rm_err *e)
{
    int baseline_fallback = flags & RM_COARSEN_FALLBACK, refine = flags & RM_COARSEN_REFINE;
    double t0 = now_s();
    *out = NULL;
    int rc = rm_problem_validate(p, e);
    if (rc) return rc;
    if (target <= 0) target = RM_COARSEN_TARGET;
    double limit = o ? o->time_limit_s : 0;
    if (shortcuts(&rc, out, stats, p, name, baseline_fallback, e) == ROUTE_ANSWERED) return rc;
    coarse_best b;
    memset(&b, 0, sizeof b);
    b.cstatus = RM_STATUS_ERROR;
    if (baseline_fallback) {
        b.s = rm_best_baseline(p, limit > 0 ? t0 + limit : 0, 1, &b.from, &b.r);
        if (b.s) say(o, 1, "%s: fallback: %s, cost %.6g", name, b.from, b.r.cost);
    }
    /* One level, or (refine) finer and finer levels while the time lasts. */
    for (int level = target;;) {
        double lt0 = now_s();
        int same;
        if ((rc = coarse_level(&b, &same, p, o, t0, limit, solve, name, level, e)) || same) break;
        /* The next level's LP is several times this one's (ResNet-50 at 80%:
         * 64 groups 2.3 s, 96 14 s, 128 37 s); try it only when 3x fits. */
        double rest = limit - (now_s() - t0), took = now_s() - lt0;
        if (!refine || limit <= 0 || b.m >= p->n || rest < 3 * took) break;
        level += level / 3 > 0 ? level / 3 : 1;
    }
    if (rc) {
        rm_schedule_free(b.s);
        return rc;
    }
    if (stats) {
        stats->has_bound = 0; /* the coarse bound is no bound for p */
        if (baseline_fallback || b.cstatus == RM_STATUS_OPTIMAL) stats->status = RM_STATUS_FEASIBLE;
        else if (b.cstatus != RM_STATUS_ERROR) stats->status = b.cstatus;
    }
    if (!b.s)
        return rm_errorf(e, RM_ERR_INFEASIBLE, "%s: nothing fits on the %d-node coarse problem of %d nodes: %s", name,
                         b.m, p->n, b.why[0] ? b.why : "no schedule");
    say(o, 1, "%s: returning %s, cost %.6g, peak %zu", name, b.from ? b.from : "?", b.r.cost, b.r.peak_bytes);
    *out = b.s;
    return RM_OK;
}

/* ---------------------------------------------------------------- the routes */

int rm_route_lp_round(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                      rm_err *e)
{
    if (p->n > RM_COARSEN_MIN_NODES) {
        say(NULL, 0, "route lp_round: %d nodes > %d: coarsened, refined while the time lasts", p->n,
            RM_COARSEN_MIN_NODES);
        return rm_coarsen_run(out, stats, p, o, lp_round_direct, "lp_round", 0, RM_COARSEN_REFINE, e);
    }
    return lp_round_direct(out, stats, p, o, e);
}

/* Above RM_COARSEN_MIN_NODES the coarse MILP spends its whole limit in
 * branch and bound at one coarsening, while LP rounding refines to finer
 * ones as time allows (ResNet-50 b32 at 60%, 60 s each: lp_round +5.71%,
 * the coarse MILP +12.10%). So with a time limit the MILP route gives the
 * first half to refined rounding, the rest to the coarse MILP (which falls
 * back to the best baseline), and returns the cheaper schedule. */
int rm_route_milp(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                  rm_err *e)
{
    if (p->n <= RM_COARSEN_MIN_NODES) return milp_direct(out, stats, p, o, e);
    if (!o || o->time_limit_s <= 0) {
        say(NULL, 0, "route milp: %d nodes > %d: coarsened MILP, the best baseline as fallback", p->n,
            RM_COARSEN_MIN_NODES);
        return rm_coarsen_run(out, stats, p, o, milp_direct, "milp", 0, RM_COARSEN_FALLBACK, e);
    }
    say(NULL, 0, "route milp: %d nodes > %d: half the time to refined LP rounding, half to the coarsened MILP", p->n,
        RM_COARSEN_MIN_NODES);
    double t0 = now_s();
    rm_strategy_options part = *o;
    part.time_limit_s = o->time_limit_s / 2;
    rm_schedule *rounded = NULL;
    rm_strategy_stats rstats;
    memset(&rstats, 0, sizeof rstats);
    rstats.status = RM_STATUS_ERROR;
    rm_err rerr = {RM_OK, ""};
    int rrc = rm_coarsen_run(&rounded, &rstats, p, &part, lp_round_direct, "lp_round", 0, RM_COARSEN_REFINE, &rerr);
    if (rrc == RM_ERR_NOMEM) {
        *e = rerr;
        return rrc;
    }
    part.time_limit_s = o->time_limit_s - (now_s() - t0);
    if (part.time_limit_s < 0.01) part.time_limit_s = 0.01;
    int rc = rm_coarsen_run(out, stats, p, &part, milp_direct, "milp", 0, RM_COARSEN_FALLBACK, e);
    if (rrc != RM_OK) return rc; /* rounding found nothing: the MILP route's answer stands */
    rm_sim_result a, b;
    rm_err ignored = {RM_OK, ""};
    if (rm_simulate(&a, p, rounded, &ignored) != RM_OK || !rm_sim_fits(p, &a) ||
        (rc == RM_OK && rm_simulate(&b, p, *out, &ignored) == RM_OK && b.cost <= a.cost)) {
        rm_schedule_free(rounded);
        return rc;
    }
    say(o, 1, "milp: the refined LP rounding is cheaper than the coarse MILP; returning it");
    rm_schedule_free(*out);
    *out = rounded;
    if (stats) {
        stats->status = RM_STATUS_FEASIBLE;
        stats->has_bound = 0;
    }
    return RM_OK;
}
