/* The solver route (see route.h): shortcuts, incumbent, solver, answer, for
 * LP rounding and the MILP (coarsening: route_coarse.c; "best":
 * route_best.c). Every decision is logged: at REMAT_LOG=info here, and on
 * the strategy options' log where a caller asked for one (the lines it got
 * before). */
#include "clock.h"
#include "route_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "coarsen.h"
#include "log.h"
#include "milp.h"

double rm_route_deadline(const rm_strategy_options *o)
{
    if (!o) return 0;
    return o->deadline > 0 ? o->deadline : rm_deadline_in(o->time_limit_s);
}

rm_strategy_options rm_route_phase(const rm_strategy_options *o, double deadline)
{
    rm_strategy_options po;
    memset(&po, 0, sizeof po);
    if (o) po = *o;
    po.deadline = deadline;
    po.time_limit_s = deadline > 0 ? fmax(0.01, rm_deadline_left(deadline)) : 0;
    return po;
}

void rm_route_say(const rm_strategy_options *o, int to_caller, const char *fmt, ...)
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

int rm_route_shortcuts(int *rc, rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p,
                       const rm_strategy_options *o, const char *who, int proves, rm_err *e)
{
    rm_err ignored = {RM_OK, ""};
    *rc = RM_OK;
    if (rm_problem_validate(p, &ignored) != RM_OK) return RM_ROUTE_SOLVE;
    /* The facts the caller brought (one simulation of checkpoint-all for the
     * whole command), else computed here, once for the call. */
    rm_problem_report local;
    const rm_problem_report *r = o ? o->facts : NULL;
    if (!r) {
        if (rm_problem_report_of(&local, p, &ignored) != RM_OK) return RM_ROUTE_SOLVE;
        r = &local;
    }
    rm_budget_verdict v = rm_budget_verdict_of(p, r);
    rm_route_say(NULL, 0, "route %s: %d nodes, budget %zu (fixed %zu), trivial lower bound %zu", who, p->n, p->budget,
                 p->fixed_bytes, r->lower_bound);
    if (!rm_budget_feasible(v)) {
        *rc = rm_problem_check_budget_of(p, r, who, e);
        if (stats) stats->status = RM_STATUS_INFEASIBLE;
        rm_route_say(NULL, 0, "route %s: below the trivial bound: infeasible, nothing to solve", who);
        return RM_ROUTE_ANSWERED;
    }
    if (v != RM_BUDGET_FITS && v != RM_BUDGET_UNLIMITED) {
        rm_route_say(NULL, 0, "route %s: checkpoint-all (peak %zu) does not fit: solving", who, r->noremat.peak_bytes);
        return RM_ROUTE_SOLVE;
    }
    /* Its simulation is the facts' own: built, not simulated again. */
    rm_schedule *all = NULL;
    if (rm_checkpoint_all_build(&all, p, &ignored) != RM_OK) return RM_ROUTE_SOLVE;
    rm_route_say(NULL, 0, "route %s: checkpoint-all fits (peak %zu, cost %.6g): optimal, nothing to solve", who,
                 r->noremat.peak_bytes, r->noremat.cost);
    *out = all;
    if (stats) {
        stats->sim = r->noremat;
        if (proves) stats->status = RM_STATUS_OPTIMAL;
        stats->has_bound = 1;
        stats->lp_bound = r->noremat.cost;
        stats->gap = 0;
        stats->source = "checkpoint_all";
    }
    return RM_ROUTE_ANSWERED;
}

/* ---------------------------------------------------------------- 3. the incumbent */

int rm_route_offer(rm_schedule **best, rm_sim_result *best_r, rm_schedule *s, const rm_problem *p)
{
    rm_sim_result r;
    rm_err ignored = {RM_OK, ""};
    if (s && rm_simulate(&r, p, s, &ignored) == RM_OK && rm_sim_fits(p, &r) && (!*best || rm_sim_better(&r, best_r))) {
        rm_schedule_free(*best);
        *best = s;
        *best_r = r;
        return 1;
    }
    rm_schedule_free(s);
    return 0;
}

/* Between the trivial bound and checkpoint-all the cheapest baseline is the
 * incumbent: LP rounding sometimes overshoots a tight budget where a
 * checkpointing heuristic fits, and without any incumbent lp_solve's branch
 * and bound may find nothing at all. The baselines take milliseconds. */
rm_schedule *rm_route_incumbent(const rm_problem *p, const rm_strategy_options *o, double deadline, const char *who,
                                const char **name, rm_sim_result *r, double *judge_s)
{
    rm_schedule *inc = NULL;
    rm_err ignored = {RM_OK, ""};
    int from_caller = 0;
    double sim_s = 0, t0 = rm_now();
    *name = NULL;
    if (judge_s) *judge_s = 0;
    if (p->budget == 0) return NULL;
    if (o && !o->incumbent && o->incumbent_sim) return NULL; /* the caller's search found none */
    if (o && o->incumbent && o->incumbent->n == p->n && rm_schedule_copy(&inc, o->incumbent, &ignored) == RM_OK) {
        if (o->incumbent_sim)
            *r = *o->incumbent_sim;
        else if (rm_simulate(r, p, inc, &ignored) != RM_OK)
            r->peak_bytes = SIZE_MAX;
        else
            sim_s = rm_now() - t0;
        if (rm_sim_fits(p, r)) {
            *name = RM_SOURCE_CALLER_INCUMBENT;
            from_caller = 1;
        } else {
            rm_schedule_free(inc);
            inc = NULL;
        }
    }
    /* Asked after the shortcuts (route_internal.h), which found that
     * checkpoint-all does not fit: it is not built and simulated again. */
    if (!inc && (inc = rm_best_baseline_timed(p, deadline, 0, name, r, &sim_s, 1)) == NULL) {
        rm_route_say(NULL, 0, "route %s: no baseline fits: no incumbent", who);
        return NULL;
    }
    if (!*name) *name = "a baseline"; /* rm_best_baseline names its winner; never left unnamed */
    if (judge_s) *judge_s = 1.5 * sim_s;
    rm_route_say(NULL, 0, "route %s: incumbent: %s, cost %.6g", who, *name, r->cost);
    if (o && o->log && !from_caller) { /* the caller knows its own incumbent */
        char line[160];
        snprintf(line, sizeof line, "incumbent: %s, cost %.6g\n", *name, r->cost);
        o->log(o->log_ctx, line);
    }
    return inc;
}

int rm_route_first_fit(rm_schedule **out, rm_strategy_stats *stats, rm_schedule *inc, const char *iname,
                       const rm_sim_result *ir, const rm_strategy_options *o, const char *who)
{
    if (!inc || !o || !o->first_fit) return 0;
    rm_route_say(o, 1, "%s: %s fits (cost %.6g); first fit asked: no solver run", who, iname, ir->cost);
    *out = inc;
    if (stats) {
        stats->status = RM_STATUS_FEASIBLE;
        stats->first_fit = 1;
        stats->source = iname;
    }
    return 1;
}

/* ---------------------------------------------------------------- 4. the solvers */

/* Checkmate's two-phase rounding, never dearer than the incumbent: where no
 * rounding fits or the cheapest costs more, the incumbent is the answer. */
static int lp_round_direct(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p,
                           const rm_strategy_options *o, rm_err *e)
{
    double deadline = rm_route_deadline(o);
    int rc;
    /* A caller with a simulated incumbent (the MILP route, "best") has asked
     * the shortcuts already. */
    if (!(o && o->incumbent_sim) && rm_route_shortcuts(&rc, out, stats, p, o, "lp_round", 0, e) == RM_ROUTE_ANSWERED)
        return rc;
    const char *iname;
    rm_sim_result ir;
    rm_schedule *inc = rm_route_incumbent(p, o, deadline, "lp_round", &iname, &ir, NULL);
    if (rm_route_first_fit(out, stats, inc, iname, &ir, o, "lp_round")) return RM_OK;
    rm_lp_round_options lo;
    rm_lp_round_options_default(&lo);
    if (deadline > 0) lo.time_limit_s = fmax(0.01, rm_deadline_left(deadline));
    if (o && o->milp_engine == RM_MILP_ENGINE_LPSOLVE) lo.levers |= RM_MILP_LPSOLVE_ONLY;
    rm_lp_round_result r;
    memset(&r, 0, sizeof r);
    rm_err re = {RM_OK, ""};
    rc = rm_strategy_lp_round(out, &r, p, &lo, &re);
    if (rc == RM_OK && stats) stats->source = "lp_round"; /* unless the incumbent below is cheaper */
    if (rc == RM_OK)
        rm_route_say(NULL, 0,
                     "route lp_round: rounded cost %.6g, peak %zu, LP bound %.6g (LP %.2f s, relaxation at %.0f%% of "
                     "the budget, %d of %d roundings fit)",
                     r.objective, r.peak_bytes, r.lp_bound, r.lp_seconds, 100.0 * r.budget_factor, r.fitted, r.tried);
    else
        rm_route_say(NULL, 0, "route lp_round: no rounding: %s", re.msg);
    if (inc && (rc == RM_OK || rc == RM_ERR_INFEASIBLE) && (rc != RM_OK || ir.cost < r.objective)) {
        rm_route_say(o, 1, "lp_round: returning the incumbent (%s, cost %.6g)%s", iname, ir.cost,
                     rc == RM_OK ? ": cheaper than the rounding" : ": no rounding fits");
        rm_schedule_free(*out);
        *out = inc, inc = NULL;
        r.objective = ir.cost;
        rc = RM_OK;
        if (stats) stats->source = iname;
    } else if (rc != RM_OK && e) {
        *e = re;
    }
    /* No rounding that fits is no proof that nothing does; an LP bound
     * above the compute cap is. */
    if (rc == RM_ERR_INFEASIBLE && stats)
        stats->status = rm_problem_bound_over_cap(p, r.lp_bound) ? RM_STATUS_INFEASIBLE : RM_STATUS_NO_SOLUTION;
    rm_schedule_free(inc);
    if (stats && r.lp_bound > 0) {
        stats->has_bound = 1;
        stats->lp_bound = r.lp_bound;
        stats->gap = rc == RM_OK && r.objective > 0 ? fmax(0, (r.objective - r.lp_bound) / r.objective) : 0;
    }
    return rc;
}

/* The MILP's answer in the route's log. */
static void say_milp(int rc, const rm_milp_result *info, const rm_err *e)
{
    char bb[200] = "branch and bound not run";
    if (info->engine == RM_MILP_ENGINE_CBC)
        snprintf(bb, sizeof bb, "branch and bound: cbc, %ld nodes%s%s", info->nodes,
                 info->answered_by ? ", answered by " : "", info->answered_by ? info->answered_by : "");
    else if (info->solver_code != -100)
        snprintf(bb, sizeof bb, "branch and bound: %s, %ld nodes%s, lp_solve code %d (%s)%s%s",
                 rm_milp_engine_name(info->engine), info->nodes,
                 info->engine == RM_MILP_ENGINE_BOTH ? " (both engines')" : "", info->solver_code,
                 rm_lp_code_name(info->solver_code), info->answered_by ? ", answered by " : "",
                 info->answered_by ? info->answered_by : "");
    if (rc == RM_OK)
        rm_route_say(NULL, 0,
                     "route milp: %s, cost %.6g, bound %.6g, gap %.2f%%, %.2f s (LP bound %.6g in %.2f s; best "
                     "incumbent %.6g%s; %s)",
                     rm_status_name(info->status), info->objective, info->lower_bound, 100.0 * info->gap, info->seconds,
                     info->lp_bound, info->lp_seconds, info->incumbent_cost, info->from_incumbent ? ", returned" : "",
                     bb);
    else
        rm_route_say(NULL, 0, "route milp: %s, no schedule, %.2f s (LP bound %.6g; %s): %s",
                     rm_status_name(info->status), info->seconds, info->lp_bound, bb, e ? e->msg : "");
}

static int milp_direct(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                       rm_err *e)
{
    double deadline = rm_route_deadline(o);
    rm_milp_options mo;
    rm_milp_options_default(&mo);
    if (o) {
        mo.time_limit_s = o->time_limit_s;
        mo.node_limit = o->node_limit;
        mo.log = o->log;
        mo.log_ctx = o->log_ctx;
        mo.verbosity = o->verbosity ? o->verbosity : 4;
        mo.first_fit = o->first_fit;
        mo.facts = o->facts;
        mo.engine = o->milp_engine;
    }
    int rc;
    if (!(o && o->incumbent_sim) && rm_route_shortcuts(&rc, out, stats, p, o, "milp", 1, e) == RM_ROUTE_ANSWERED)
        return rc;
    const char *iname;
    rm_sim_result ir;
    rm_schedule *incumbent = rm_route_incumbent(p, o, deadline, "milp", &iname, &ir, NULL);
    if (rm_route_first_fit(out, stats, incumbent, iname, &ir, o, "milp")) return RM_OK;
    if (deadline > 0) /* the limit is for the whole call: what the baselines took is gone */
        mo.time_limit_s = fmax(0.01, rm_deadline_left(deadline));
    mo.incumbent = incumbent;
    rm_milp_result info;
    memset(&info, 0, sizeof info);
    rc = rm_strategy_milp(out, &info, p, &mo, e);
    /* The label says whose schedule it is, decided by the schedule itself:
     * the MILP's own flag (from_incumbent) stays 0 when a time limit stops
     * it before branch and bound, and its answer is then the heuristic's. */
    int theirs = rc == RM_OK && incumbent && iname && rm_schedule_equal(*out, incumbent);
    rm_schedule_free(incumbent);
    if (stats) {
        stats->status = info.status;
        if (rc == RM_OK) stats->source = theirs ? iname : "milp";
        if (info.lp_bound > 0 || info.status == RM_STATUS_OPTIMAL) {
            stats->has_bound = 1;
            stats->lp_bound = info.lp_bound;
            stats->gap = rc == RM_OK ? info.gap : 0;
        }
    }
    say_milp(rc, &info, e);
    return rc;
}

/* ---------------------------------------------------------------- the routes */

int rm_route_lp_round(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                      rm_err *e)
{
    if (p->n > RM_COARSEN_MIN_NODES) {
        rm_route_say(NULL, 0, "route lp_round: %d nodes > %d: coarsened, refined while the time lasts", p->n,
                     RM_COARSEN_MIN_NODES);
        return rm_coarsen_run(out, stats, p, o, lp_round_direct, "lp_round", 0,
                              RM_COARSEN_REFINE | RM_COARSEN_FALLBACK | RM_COARSEN_BOUND, e);
    }
    return lp_round_direct(out, stats, p, o, e);
}

/* The whole graph's LP relaxation, solved by CBC's Clp in a child process
 * until deadline, and rounded as lp_round rounds (rm_lp_round_from): a
 * schedule of the whole graph (*out, simulated in *r) and a bound of it
 * (*bound). lp_solve's simplex takes minutes here, Clp seconds (U-Net, 141
 * nodes: over 120 s against 7 s; MobileNet, 171: 15 s), and the rounding of
 * the whole graph beats the coarsened routes at tight budgets (U-Net b8 at
 * 60%: +1.61% against +15.1%; MobileNet b32 at 60%: +1.09% against +7.75%, 60 s each),
 * the coarse MILP being better near the no-remat peak (U-Net at 80%: +0.15%
 * against +1.54%). Models past RM_WHOLE_MAX_COLUMNS are not tried: ResNet-50
 * (355,462 columns) took Clp 300 s. RM_OK, or an error saying why not. */
static int whole_round(rm_schedule **out, rm_sim_result *r, double *bound, const rm_problem *p, double deadline,
                       rm_err *e)
{
    *out = NULL;
    rm_lp_model m;
    size_t act = rm_problem_activation_budget(p);
    int rc = rm_lp_model_build(&m, p, act, RM_MILP_DEFAULT & ~RM_MILP_PREFIX_ROWS, NULL, NULL, 0, deadline, e);
    double *x = NULL, *S = NULL;
    if (rc == RM_OK && m.ncols > RM_WHOLE_MAX_COLUMNS)
        rc = rm_errorf(e, RM_ERR_BUDGET, "%d columns, over %d", m.ncols, RM_WHOLE_MAX_COLUMNS);
    if (rc == RM_OK && (!(x = malloc((size_t)m.ncols * sizeof *x)) || !(S = malloc((size_t)p->n * p->n * sizeof *S))))
        rc = rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    if (rc == RM_OK) rc = rm_cbc_relax(bound, x, &m, deadline, e);
    if (rc == RM_OK) {
        rm_lp_fill_fractional(&m, x, S, NULL);
        rm_lp_round_options ro;
        rm_lp_round_options_default(&ro);
        rm_lp_round_result rr;
        rc = rm_lp_round_from(out, &rr, p, S, *bound, &ro, e);
    }
    if (rc == RM_OK && (rc = rm_simulate(r, p, *out, e)) != RM_OK) {
        rm_schedule_free(*out);
        *out = NULL;
    }
    free(x);
    free(S);
    rm_lp_model_free(&m);
    return rc;
}

/* The whole graph's step of the MILP route (whole_round), its outcome kept
 * for the end of the route. */
typedef struct whole_step {
    int solved;           /* the whole graph's LP was solved and rounded */
    double bound;         /* its optimum, a bound of p (0 = none) */
    const rm_schedule *s; /* the rounding, when it became the incumbent (owned by the caller's inc) */
} whole_step;

/* Whether the whole graph's LP is solved and rounded at all: with CBC built
 * in and not refused, up to RM_WHOLE_MAX_NODES nodes, and not for a first fit. */
static int whole_applies(const rm_problem *p, const rm_strategy_options *o)
{
    return o->milp_engine != RM_MILP_ENGINE_LPSOLVE && p->n <= RM_WHOLE_MAX_NODES && rm_milp_engine_have_cbc() &&
           !o->first_fit;
}

/* Rounds the whole graph's LP until deadline (0 = none) where CBC is built
 * in and the caller did not name lp_solve, and makes it the incumbent
 * (*inc, *ir, *iname) where it is the cheaper. */
static whole_step whole_incumbent(rm_schedule **inc, rm_sim_result *ir, const char **iname, const rm_problem *p,
                                  const rm_strategy_options *o, double deadline)
{
    whole_step w = {0, 0, NULL};
    if (!whole_applies(p, o)) return w;
    rm_schedule *s;
    rm_sim_result r;
    rm_err we = {RM_OK, ""};
    double t0 = rm_now();
    int rc = whole_round(&s, &r, &w.bound, p, deadline, &we);
    if (rc != RM_OK || !rm_sim_fits(p, &r)) {
        rm_schedule_free(s);
        w.bound = 0;
        rm_route_say(NULL, 0, "route milp: whole graph: %s; the coarsened graph only",
                     rc == RM_OK ? "no rounding fits" : we.msg);
        return w;
    }
    w.solved = 1;
    rm_route_say(NULL, 0, "route milp: whole graph: LP (cbc) bound %.6g, rounded to cost %.6g, %.2f s", w.bound, r.cost,
                 rm_now() - t0);
    if (*inc && !rm_sim_better(&r, ir)) {
        rm_schedule_free(s);
        return w;
    }
    rm_schedule_free(*inc);
    *inc = s;
    *ir = r;
    *iname = "lp_round";
    w.s = s;
    return w;
}

/* The whole graph's step in the answer: its name where its rounding is the
 * schedule returned, its bound where it is the best. */
static void whole_settle(rm_strategy_stats *stats, const rm_schedule *out, const whole_step *w)
{
    stats->whole_lp = w->solved;
    if (!out) return;
    if (w->s && rm_schedule_equal(out, w->s)) stats->source = "lp_round";
    if (w->bound > 0 && (!stats->has_bound || stats->bound_trivial || w->bound > stats->lp_bound))
        rm_route_set_bound(stats, w->bound, stats->sim.cost);
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
    double deadline = rm_route_deadline(o);
    rm_strategy_stats local;
    if (!stats) {
        memset(&local, 0, sizeof local);
        stats = &local;
    }
    int ff = o->first_fit, rc;
    /* Says what runs: the whole graph's LP is skipped above RM_WHOLE_MAX_NODES or without CBC. */
    const char *plan =
        whole_applies(p, o)
            ? (deadline > 0 ? "the whole graph's LP rounded (with cbc) in up to half the time, then half "
                              "of the rest to refined LP rounding, half to the coarsened MILP"
                            : "the whole graph's LP rounded (with cbc), then the coarsened MILP, the "
                              "best as fallback")
            : (deadline > 0 ? "half the time to refined LP rounding, half to the coarsened MILP"
                            : "the coarsened MILP, the best as fallback");
    rm_route_say(NULL, 0, "route milp: %d nodes > %d: %s", p->n, RM_COARSEN_MIN_NODES, plan);
    if (!o->incumbent_sim && rm_route_shortcuts(&rc, out, stats, p, o, "milp", 1, e) == RM_ROUTE_ANSWERED) return rc;
    /* The incumbent once, for every phase (the MILP falls back to it), in
     * at most half the time: on 100,000 nodes the baselines' searches alone
     * take tens of seconds. */
    const char *iname;
    rm_sim_result ir;
    double judge_s;
    rm_schedule *inc = rm_route_incumbent(p, o, rm_deadline_share(deadline, 0.5), "milp", &iname, &ir, &judge_s);
    if (rm_route_first_fit(out, stats, inc, iname, &ir, o, "milp")) return RM_OK; /* a first fit answers at once */
    if (deadline > 0) deadline -= judge_s;
    /* The whole graph's LP rounded, in at most half the time: the coarse
     * phases' incumbent where it is the cheaper, and its bound the whole
     * graph's. */
    whole_step w = whole_incumbent(&inc, &ir, &iname, p, o, rm_deadline_share(deadline, 0.5));
    if (deadline <= 0) { /* no limit: the coarsened MILP alone */
        rm_strategy_options part = *o;
        part.incumbent = inc;
        part.incumbent_sim = &ir;
        rc = rm_coarsen_run(out, stats, p, &part, milp_direct, "milp", 0, RM_COARSEN_FALLBACK | RM_COARSEN_BOUND, e);
        if (rc == RM_OK) whole_settle(stats, *out, &w);
        rm_schedule_free(inc);
        return rc;
    }
    rm_strategy_options part = rm_route_phase(o, rm_deadline_share(deadline, 0.5));
    part.incumbent = inc; /* unused by the rounding half, but its simulation says the shortcuts were asked */
    part.incumbent_sim = &ir;
    rm_schedule *rounded = NULL;
    rm_strategy_stats rstats;
    memset(&rstats, 0, sizeof rstats);
    rstats.status = RM_STATUS_ERROR;
    rm_err rerr = {RM_OK, ""};
    /* First fit: the bound comes first, since above the largest batch that
     * fits it is what proves nothing does (past the compute cap). */
    int rrc = rm_coarsen_run(&rounded, &rstats, p, &part, lp_round_direct, "lp_round", 0,
                             RM_COARSEN_REFINE | (ff ? RM_COARSEN_BOUND : 0), &rerr);
    if (rrc == RM_ERR_NOMEM || (rrc == RM_ERR_INFEASIBLE && rstats.status == RM_STATUS_INFEASIBLE) ||
        (ff && rrc == RM_OK)) {
        if (rrc != RM_OK) {
            if (e) *e = rerr;
        } else {
            *out = rounded;
        }
        *stats = rstats;
        rm_schedule_free(inc);
        return rrc;
    }
    part = rm_route_phase(o, deadline);
    part.incumbent = inc;
    part.incumbent_sim = &ir;
    /* The bound's time comes from the coarse MILP's half, which rarely wins. */
    rc = rm_coarsen_run(out, stats, p, &part, milp_direct, "milp", 0, RM_COARSEN_FALLBACK | RM_COARSEN_BOUND, e);
    if (rc == RM_OK) whole_settle(stats, *out, &w);
    rm_schedule_free(inc);
    if (rstats.stopped) stats->stopped = 1;
    double bound = stats->has_bound && !stats->bound_trivial ? stats->lp_bound : 0;
    if (rrc != RM_OK) return rc; /* rounding found nothing: the MILP route's answer stands */
    rm_sim_result a;
    /* Both simulations are at hand (rm_coarsen_run's stats->sim). */
    a = rstats.sim;
    if (!rm_sim_fits(p, &a) || (rc == RM_OK && stats->sim.cost <= a.cost)) {
        rm_schedule_free(rounded);
        return rc;
    }
    rm_route_say(o, 1, "milp: the refined LP rounding is cheaper than the coarse MILP; returning it");
    rm_schedule_free(*out);
    *out = rounded;
    stats->status = RM_STATUS_FEASIBLE;
    stats->has_bound = 0;
    stats->sim = a;
    stats->source = rstats.source; /* the rounding's, or the heuristic its coarse solve fell back to */
    if (bound > 0) rm_route_set_bound(stats, bound, a.cost);
    return RM_OK;
}
