/* The one table of strategies, so the CLI and benchmarks can list them and
 * pick one by name: the baselines first, then the solver strategies (LP
 * rounding, the MILP) with an option-taking form; plus rm_strategy_run,
 * which times a strategy and has the simulator judge its answer, and the
 * public checkpoint-set construction. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "baseline.h"
#include "coarsen.h"
#include "milp.h"
#include "strategy.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Checkpoint-all when it fits the budget, else NULL. Its cost (every node
 * once) is the least any schedule pays, so where it fits it is optimal and
 * no LP needs solving: maxbatch probes every batch below checkpoint-all's
 * limit, and an LP per probe would be seconds each for nothing. */
static rm_schedule *fitting_checkpoint_all(const rm_problem *p, rm_sim_result *r)
{
    rm_schedule *all = NULL;
    rm_err ignored = {RM_OK, ""}; /* the solver reports any real problem itself */
    if (rm_problem_validate(p, &ignored) || rm_schedule_create(&all, p->n, &ignored)) return NULL;
    rm_checkpoint_all_fill(all, p);
    if (rm_simulate(r, p, all, &ignored) == RM_OK && rm_sim_fits(p, r)) return all;
    rm_schedule_free(all);
    return NULL;
}

static int lp_round_direct(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p,
                           const rm_strategy_options *o, rm_err *e)
{
    rm_sim_result all_r;
    rm_schedule *all = fitting_checkpoint_all(p, &all_r);
    if (all) {
        *out = all;
        if (stats) {
            stats->has_bound = 1;
            stats->lp_bound = all_r.cost;
            stats->gap = 0;
        }
        return RM_OK;
    }
    rm_lp_round_options lo;
    rm_lp_round_options_default(&lo);
    if (o) lo.time_limit_s = o->time_limit_s;
    rm_lp_round_result r;
    memset(&r, 0, sizeof r);
    int rc = rm_strategy_lp_round(out, &r, p, &lo, e);
    if (stats && r.lp_bound > 0) {
        stats->has_bound = 1;
        stats->lp_bound = r.lp_bound;
        stats->gap = rc == RM_OK ? r.gap : 0;
    }
    return rc;
}

/* The cheapest baseline schedule that fits p's budget, or NULL: the MILP's
 * incumbent. LP rounding, the MILP's own incumbent, sometimes overshoots a
 * tight budget where a checkpointing heuristic fits, and without any
 * incumbent lp_solve's branch and bound may find nothing at all (DESIGN.md,
 * section 4). The baselines are fast next to any MILP solve. */
static rm_schedule *best_baseline(const rm_problem *p, const rm_strategy_options *o, double deadline)
{
    int count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    rm_schedule *best = NULL;
    double best_cost = 0;
    const char *best_name = NULL;
    for (int k = 0; k < count; k++) {
        if (deadline > 0 && now_s() >= deadline) break;
        rm_schedule *s = NULL;
        rm_err e = {RM_OK, ""};
        rm_sim_result r;
        if (list[k].solve(&s, p, &e) != RM_OK) continue;
        if (rm_simulate(&r, p, s, &e) != RM_OK || !rm_sim_fits(p, &r) || (best && r.cost >= best_cost)) {
            rm_schedule_free(s);
            continue;
        }
        rm_schedule_free(best);
        best = s;
        best_cost = r.cost;
        best_name = list[k].name;
    }
    if (best && o && o->log) {
        char line[160];
        snprintf(line, sizeof line, "incumbent: %s, cost %.6g\n", best_name, best_cost);
        o->log(o->log_ctx, line);
    }
    return best;
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
    rm_schedule *incumbent = NULL;
    /* Below the trivial bound or where checkpoint-all fits the MILP answers
     * at once; only in between is an incumbent worth computing. */
    size_t act = rm_problem_activation_budget(p);
    if (p->budget > 0 && rm_problem_peak_lower_bound(p) <= act) {
        rm_sim_result r;
        rm_schedule *all = fitting_checkpoint_all(p, &r);
        if (all)
            rm_schedule_free(all);
        else
            incumbent = best_baseline(p, o, mo.time_limit_s > 0 ? t0 + mo.time_limit_s : 0);
    }
    if (mo.time_limit_s > 0) {
        /* The limit is for the whole call: what the baselines took is gone. */
        mo.time_limit_s -= now_s() - t0;
        if (mo.time_limit_s < 0.01) mo.time_limit_s = 0.01;
    }
    mo.incumbent = incumbent;
    rm_milp_result info;
    memset(&info, 0, sizeof info);
    int rc = rm_strategy_milp(out, &info, p, &mo, e);
    rm_schedule_free(incumbent);
    if (stats) {
        stats->status = rm_milp_status_name(info.status);
        if (info.lp_bound > 0 || info.status == RM_MILP_OPTIMAL) {
            stats->has_bound = 1;
            stats->lp_bound = info.lp_bound;
            stats->gap = rc == RM_OK ? info.gap : 0;
        }
    }
    return rc;
}

/* Above RM_COARSEN_MIN_NODES the LP alone takes minutes (milp.h): solve a
 * coarsened problem and expand its schedule (coarsen.h). */
static int lp_round_opt(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                        rm_err *e)
{
    if (p->n > RM_COARSEN_MIN_NODES)
        return rm_coarsen_run(out, stats, p, o, lp_round_direct, "lp_round", 0, RM_COARSEN_REFINE, e);
    return lp_round_direct(out, stats, p, o, e);
}

/* Above RM_COARSEN_MIN_NODES the coarse MILP spends its whole limit in
 * branch and bound at one coarsening, while LP rounding refines to finer
 * ones as time allows (ResNet-50 b32 at 60%, 60 s each: lp_round +5.71%,
 * the coarse MILP +12.10%). So with a time limit the MILP route gives the
 * first half to refined rounding, the rest to the coarse MILP (which falls
 * back to the best baseline), and returns the cheaper schedule. */
static int milp_opt(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                    rm_err *e)
{
    if (p->n <= RM_COARSEN_MIN_NODES) return milp_direct(out, stats, p, o, e);
    if (!o || o->time_limit_s <= 0)
        return rm_coarsen_run(out, stats, p, o, milp_direct, "milp", 0, RM_COARSEN_FALLBACK, e);
    double t0 = now_s();
    rm_strategy_options part = *o;
    part.time_limit_s = o->time_limit_s / 2;
    rm_schedule *rounded = NULL;
    rm_strategy_stats rstats;
    memset(&rstats, 0, sizeof rstats);
    rstats.status = "error";
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
    if (o->log) o->log(o->log_ctx, "milp: the refined LP rounding is cheaper than the coarse MILP; returning it\n");
    rm_schedule_free(*out);
    *out = rounded;
    if (stats) {
        stats->status = "feasible";
        stats->has_bound = 0;
    }
    return RM_OK;
}

static int lp_round_default(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return lp_round_opt(out, NULL, p, NULL, e);
}

static int milp_default(rm_schedule **out, const rm_problem *p, rm_err *e) { return milp_opt(out, NULL, p, NULL, e); }

/* The baselines come first and are what rm_strategy_list returns. */
#define BASELINE_COUNT 9
static const rm_strategy_info strategies[] = {
    {"checkpoint_all", "Checkpoint all", rm_strategy_checkpoint_all, NULL},
    {"chen_sqrtn", "Chen et al. sqrt(n)", rm_strategy_chen_sqrtn, NULL},
    {"chen_greedy", "Chen et al. greedy", rm_strategy_chen_greedy, NULL},
    {"griewank", "Griewank & Walther log(n)", rm_strategy_griewank, NULL},
    {"ap_sqrtn", "AP sqrt(n)", rm_strategy_ap_sqrtn, NULL},
    {"ap_greedy", "AP greedy", rm_strategy_ap_greedy, NULL},
    {"linearized_sqrtn", "Linearized sqrt(n)", rm_strategy_linearized_sqrtn, NULL},
    {"linearized_greedy", "Linearized greedy", rm_strategy_linearized_greedy, NULL},
    {"ogc", "Feng & Huang optimal checkpointing", rm_strategy_ogc, NULL},
    {"lp_round", "Checkmate LP rounding", lp_round_default, lp_round_opt},
    {"milp", "Checkmate MILP (lp_solve)", milp_default, milp_opt},
};
_Static_assert(BASELINE_COUNT < sizeof strategies / sizeof strategies[0], "the solvers follow the baselines");

const rm_strategy_info *rm_strategy_list(int *count)
{
    *count = BASELINE_COUNT;
    return strategies;
}

const rm_strategy_info *rm_strategy_list_all(int *count)
{
    *count = (int)(sizeof strategies / sizeof strategies[0]);
    return strategies;
}

static int same_name(const char *a, const char *b)
{
    for (;; a++, b++) {
        char x = *a == '-' ? '_' : *a, y = *b == '-' ? '_' : *b;
        if (x != y) return 0;
        if (!x) return 1;
    }
}

const rm_strategy_info *rm_strategy_find(const char *name)
{
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++)
        if (same_name(strategies[i].name, name)) return &strategies[i];
    return NULL;
}

int rm_strategy_run(rm_schedule **out, rm_strategy_stats *stats, const rm_strategy_info *st, const rm_problem *p,
                    const rm_strategy_options *o, rm_err *e)
{
    rm_strategy_stats dummy;
    if (!stats) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    stats->status = "error";
    *out = NULL;
    double t0 = now_s();
    int rc = st->solve_opt ? st->solve_opt(out, stats, p, o, e) : st->solve(out, p, e);
    stats->seconds = now_s() - t0;
    if (rc == RM_OK && !*out) rc = rm_errorf(e, RM_ERR_INVALID, "%s: returned no schedule", st->name);
    if (rc == RM_OK) rc = rm_simulate(&stats->sim, p, *out, e);
    if (rc == RM_OK && !rm_sim_fits(p, &stats->sim))
        rc = rm_errorf(e, RM_ERR_INVALID, "%s: its schedule peaks at %zu + %zu fixed bytes, over the budget %zu",
                       st->name, stats->sim.peak_bytes, p->fixed_bytes, p->budget);
    if (rc != RM_OK) {
        rm_schedule_free(*out);
        *out = NULL;
        if (rc == RM_ERR_INFEASIBLE) {
            if (!st->solve_opt || strcmp(stats->status, "no solution")) stats->status = "infeasible";
        } else {
            stats->status = "error";
        }
        return rc;
    }
    if (!st->solve_opt || !strcmp(stats->status, "error")) stats->status = "ok";
    if (st->solve_opt && !stats->has_bound) {
        /* Every answer of a solver reports a bound: where the LP gave none,
         * the trivial one (each node computed once) still bounds the gap. */
        double base = 0;
        for (int i = 0; i < p->n; i++) base += p->nodes[i].cost;
        stats->has_bound = 1;
        stats->bound_trivial = 1;
        stats->lp_bound = base;
        stats->gap = stats->sim.cost > 0 && stats->sim.cost > base ? (stats->sim.cost - base) / stats->sim.cost : 0;
    }
    return RM_OK;
}

int rm_schedule_from_checkpoints(rm_schedule **out, const rm_problem *p, const uint8_t *checkpoint, rm_err *e)
{
    *out = NULL;
    int rc = rm_problem_validate(p, e);
    if (rc) return rc;
    rm_fwd_info fi;
    if ((rc = rm_fwd_info_init(&fi, p, e))) return rc;
    rm_schedule *s;
    if (!(rc = rm_build_from_checkpoints(&s, p, &fi, checkpoint, e))) {
        rm_sim_result r;
        if ((rc = rm_simulate(&r, p, s, e)))
            rm_schedule_free(s);
        else
            *out = s;
    }
    rm_fwd_info_free(&fi);
    return rc;
}
