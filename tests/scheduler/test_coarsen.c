/* Tests of graph coarsening (scheduler/coarsen.c): groups of one node
 * reproduce the problem and every schedule exactly; on random training
 * graphs and traced tiny models, with random and greedy groupings, every
 * expansion of a valid coarse schedule (random ones and the baselines') is
 * valid, costs exactly the coarse cost and peaks no higher than the coarse
 * schedule; the greedy grouping reaches its target and keeps the coarse
 * trivial bound within the budget; and the solver route returns only
 * schedules the simulator accepts within budget. Node limits only. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "cli_fixture.h"
#include "coarsen.h"
#include "milp.h"
#include "random_graphs.h"
#include "rng.h"
#include "route.h"
#include "sanitized.h"
#include "simulate.h"
#include "strategy.h"
#include "trainer.h"

#define RESNET_TINY REMAT_SOURCE_DIR "/models/resnet-tiny.cfg"
#define UNET_TINY REMAT_SOURCE_DIR "/models/unet-tiny.cfg"

static int close_rel(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

static size_t all_peak(const rm_problem *p)
{
    rm_schedule *s;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_checkpoint_all_build(&s, p, &e), RM_OK);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    rm_schedule_free(s);
    return r.peak_bytes;
}

/* Random group boundaries: each node starts a new group with chance 1/len. */
static void random_coarsening(rm_coarsening *c, const rm_problem *p, rm_rng *r, int len)
{
    int *first = malloc(((size_t)p->n + 1) * sizeof *first), m = 0;
    cr_assert(first);
    first[m++] = 0;
    for (int i = 1; i < p->n; i++)
        if (rm_rng_next(r) % (uint64_t)len == 0) first[m++] = i;
    first[m] = p->n;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_coarsen_from_groups(c, p, first, m, &e), RM_OK, "%s", e.msg);
    free(first);
}

/* A random valid schedule: random S (density dens), then the cheapest R. */
static rm_schedule *random_schedule(const rm_problem *q, rm_rng *r, double dens)
{
    rm_rs *d;
    rm_schedule *s;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_rs_create(&d, q->n, &e), RM_OK);
    for (int t = 1; t < q->n; t++)
        for (int i = 0; i < t; i++) *rm_S(d, t, i) = rm_rng_uniform(r) < dens;
    cr_assert_eq(rm_milp_cheapest_R(d, q, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_schedule_from_rs(&s, d, &e), RM_OK, "%s", e.msg);
    rm_rs_free(d);
    return s;
}

/* Expands cs (valid for the coarse problem q) and checks the contract:
 * valid, the same cost, no higher peak; fitting coarse => fitting expanded. */
static void check_expansion(const rm_problem *p, const rm_coarsening *c, const rm_problem *q, const rm_schedule *cs,
                            const char *what)
{
    rm_err e = {RM_OK, ""};
    rm_sim_result cr, xr;
    cr_assert_eq(rm_simulate(&cr, q, cs, &e), RM_OK, "%s: coarse: %s", what, e.msg);
    rm_schedule *xs;
    cr_assert_eq(rm_coarsen_expand(&xs, p, c, cs, &e), RM_OK, "%s: %s", what, e.msg);
    cr_assert_eq(rm_simulate(&xr, p, xs, &e), RM_OK, "%s: expanded: %s", what, e.msg);
    cr_assert(close_rel(cr.cost, xr.cost), "%s: coarse cost %g, expanded %g", what, cr.cost, xr.cost);
    cr_assert_leq(xr.peak_bytes, cr.peak_bytes, "%s: expanded peak %zu above the coarse %zu (%d groups of %d)", what,
                  xr.peak_bytes, cr.peak_bytes, c->m, p->n);
    if (rm_sim_fits(q, &cr)) cr_assert(rm_sim_fits(p, &xr), "%s", what);
    /* The cheapest R for the expansion's S never costs more, and stays valid. */
    rm_rs *xd;
    cr_assert_eq(rm_rs_from_schedule(&xd, xs, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_milp_cheapest_R(xd, p, &e), RM_OK, "%s", e.msg);
    rm_sim_result yr;
    cr_assert_eq(rm_simulate_rs(&yr, p, xd, &e), RM_OK, "%s: cheapest R: %s", what, e.msg);
    rm_rs_free(xd);
    cr_assert_leq(yr.cost, xr.cost + 1e-9 * fmax(1.0, xr.cost), "%s", what);
    rm_schedule_free(xs);
}

/* Random coarse schedules and every baseline's, on coarsening c of p. */
static void check_coarsening(rm_problem *p, const rm_coarsening *c, rm_rng *r, int nrandom, const char *what)
{
    rm_err e = {RM_OK, ""};
    rm_problem *q;
    cr_assert_eq(rm_coarsen_problem(&q, p, c, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(q->n, c->m);
    double pc = 0, qc = 0;
    for (int i = 0; i < p->n; i++) pc += p->nodes[i].cost;
    for (int g = 0; g < q->n; g++) {
        qc += q->nodes[g].cost;
        size_t kept = 0;
        for (int i = c->first[g]; i < c->first[g + 1]; i++)
            if (c->keep[i]) kept += p->nodes[i].bytes;
        cr_assert_geq(q->nodes[g].bytes, kept, "%s: super-node %d holds less than its kept members", what, g);
    }
    cr_assert(close_rel(pc, qc));
    for (int k = 0; k < nrandom; k++) {
        rm_schedule *cs = random_schedule(q, r, k % 3 == 0 ? 0.05 : k % 3 == 1 ? 0.3 : 0.7);
        check_expansion(p, c, q, cs, what);
        rm_schedule_free(cs);
    }
    int count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    size_t saved = p->budget;
    p->budget = q->budget = 0; /* a schedule from every baseline */
    for (int k = 0; k < count; k++) {
        rm_schedule *cs = NULL;
        if (list[k].solve(&cs, q, &e) != RM_OK) continue;
        check_expansion(p, c, q, cs, list[k].name);
        rm_schedule_free(cs);
    }
    p->budget = saved;
    rm_problem_free(q);
}

Test(coarsen, singletons_reproduce_problem_and_schedules)
{
    for (uint64_t seed = 1; seed <= 8; seed++) {
        rg_options go = {4 + (int)seed * 2, 0.3, 0.3, 0, 512};
        rm_problem *p = rg_training_problem(seed, &go);
        cr_assert(p);
        p->fixed_bytes = 100;
        p->budget = 100 + all_peak(p);
        int *first = malloc(((size_t)p->n + 1) * sizeof *first);
        for (int i = 0; i <= p->n; i++) first[i] = i;
        rm_coarsening c;
        rm_err e = {RM_OK, ""};
        cr_assert_eq(rm_coarsen_from_groups(&c, p, first, p->n, &e), RM_OK, "%s", e.msg);
        free(first);
        rm_problem *q;
        cr_assert_eq(rm_coarsen_problem(&q, p, &c, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(q->n, p->n);
        cr_assert_eq(q->fixed_bytes, p->fixed_bytes);
        cr_assert_eq(q->budget, p->budget);
        for (int i = 0; i < p->n; i++) {
            cr_assert_str_eq(q->nodes[i].name, p->nodes[i].name);
            cr_assert_eq(q->nodes[i].tag, p->nodes[i].tag);
            cr_assert_eq(q->nodes[i].bytes, p->nodes[i].bytes, "node %d", i);
            cr_assert_eq(q->nodes[i].cost, p->nodes[i].cost);
            cr_assert_eq(q->nodes[i].ndeps, p->nodes[i].ndeps);
            for (int d = 0; d < p->nodes[i].ndeps; d++) cr_assert_eq(q->nodes[i].deps[d], p->nodes[i].deps[d]);
        }
        /* Every baseline's schedule expands to itself. */
        int count;
        const rm_strategy_info *list = rm_strategy_list(&count);
        p->budget = q->budget = 0;
        for (int k = 0; k < count; k++) {
            rm_schedule *s = NULL, *x = NULL;
            if (list[k].solve(&s, p, &e) != RM_OK) continue;
            cr_assert_eq(rm_coarsen_expand(&x, p, &c, s, &e), RM_OK, "%s", e.msg);
            cr_assert(rm_schedule_equal(x, s), "seed %d: %s changed", (int)seed, list[k].name);
            rm_schedule_free(s);
            rm_schedule_free(x);
        }
        rm_problem_free(q);
        rm_coarsening_free(&c);
        rm_problem_free(p);
    }
}

Test(coarsen, random_groupings_expand_validly_at_equal_cost_and_no_higher_peak)
{
    rm_rng r = rm_rng_make(42);
    for (uint64_t seed = 1; seed <= 24; seed++) {
        rg_options go = {4 + (int)(seed % 12), 0.35, 0.3, 0, 512};
        rm_problem *p = rg_training_problem(seed, &go);
        cr_assert(p);
        p->budget = all_peak(p) * 3 / 4;
        rm_coarsening c;
        random_coarsening(&c, p, &r, 1 + (int)(seed % 5));
        check_coarsening(p, &c, &r, 12, "random training graph");
        rm_coarsening_free(&c);
        rm_problem_free(p);
    }
}

Test(coarsen, greedy_grouping_reaches_target_within_the_budget)
{
    rm_rng r = rm_rng_make(7);
    for (uint64_t seed = 1; seed <= 6; seed++) {
        rg_options go = {20 + (int)seed * 4, 0.3, 0.3, 6, 1024};
        rm_problem *p = rg_training_problem(seed, &go);
        cr_assert(p);
        rm_err e = {RM_OK, ""};
        int target = 12 + (int)seed * 3;
        /* Unlimited: the target is always reached (only tags stop merges). */
        rm_coarsening c;
        cr_assert_eq(rm_coarsen_auto(&c, p, target, &e), RM_OK, "%s", e.msg);
        cr_assert_leq(c.m, target);
        for (int g = 0; g < c.m; g++)
            for (int i = c.first[g]; i < c.first[g + 1]; i++) cr_assert_eq(p->nodes[i].tag, p->nodes[c.first[g]].tag);
        check_coarsening(p, &c, &r, 6, "greedy unlimited");
        rm_coarsening_free(&c);
        /* Tight: the coarse problem's trivial bound stays within the budget. */
        p->budget = rm_problem_peak_lower_bound(p) + (all_peak(p) - rm_problem_peak_lower_bound(p)) / 4;
        cr_assert_eq(rm_coarsen_auto(&c, p, target, &e), RM_OK, "%s", e.msg);
        rm_problem *q;
        cr_assert_eq(rm_coarsen_problem(&q, p, &c, &e), RM_OK, "%s", e.msg);
        cr_assert_leq(rm_problem_peak_lower_bound(q), rm_problem_activation_budget(p));
        rm_problem_free(q);
        check_coarsening(p, &c, &r, 6, "greedy tight");
        rm_coarsening_free(&c);
        rm_problem_free(p);
    }
}

Test(coarsen, traced_tiny_models)
{
    rm_rng r = rm_rng_make(99);
    const char *cfgs[] = {RESNET_TINY, UNET_TINY};
    for (int k = 0; k < 2; k++) {
        rm_problem *p = cf_training_problem(cfgs[k], 2);
        rm_err e = {RM_OK, ""};
        rm_coarsening c;
        for (int target = p->n / 4; target <= p->n / 2; target += p->n / 4) {
            cr_assert_eq(rm_coarsen_auto(&c, p, target, &e), RM_OK, "%s", e.msg);
            cr_assert_leq(c.m, target);
            check_coarsening(p, &c, &r, 6, cfgs[k]);
            rm_coarsening_free(&c);
        }
        random_coarsening(&c, p, &r, 3);
        check_coarsening(p, &c, &r, 6, cfgs[k]);
        rm_coarsening_free(&c);
        rm_problem_free(p);
    }
}

/* The solver route: whatever it returns passes the simulator within budget;
 * it never claims a bound; it is never worse than the cheapest baseline. */
static void check_route(rm_problem *p, const char *strategy, int target, int flags)
{
    int fallback = flags & RM_COARSEN_FALLBACK;
    const rm_strategy_info *st = rm_strategy_find(strategy);
    cr_assert(st && st->solve_opt);
    rm_strategy_options o;
    memset(&o, 0, sizeof o);
    o.node_limit = 200;
    /* Refining needs a time limit; only validity is asserted, whatever the
     * number of levels the clock allows. */
    if (flags & RM_COARSEN_REFINE) o.time_limit_s = 2;
    rm_strategy_stats stats;
    memset(&stats, 0, sizeof stats);
    stats.status = RM_STATUS_ERROR;
    rm_schedule *s = NULL;
    rm_err e = {RM_OK, ""};
    int rc = rm_coarsen_run(&s, &stats, p, &o, st->solve_opt, strategy, target, flags, &e);
    cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "%s: %s", strategy, e.msg);
    double best_baseline = -1;
    int count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    for (int k = 0; k < count; k++) {
        rm_schedule *b = NULL;
        rm_sim_result br;
        rm_err ignored = {RM_OK, ""};
        if (list[k].solve(&b, p, &ignored) == RM_OK && rm_simulate(&br, p, b, &ignored) == RM_OK &&
            rm_sim_fits(p, &br) && (best_baseline < 0 || br.cost < best_baseline))
            best_baseline = br.cost;
        rm_schedule_free(b);
    }
    if (rc == RM_ERR_INFEASIBLE) {
        cr_assert(!s);
        cr_assert(!fallback || best_baseline < 0, "%s: infeasible but a baseline fits", strategy);
        return;
    }
    rm_sim_result sr;
    cr_assert_eq(rm_simulate(&sr, p, s, &e), RM_OK, "%s", e.msg);
    cr_assert(rm_sim_fits(p, &sr), "%s: peak %zu over the budget", strategy, sr.peak_bytes);
    cr_assert(!stats.has_bound || sr.recomputations == 0, "%s claims a bound", strategy);
    if (fallback && best_baseline >= 0) cr_assert_leq(sr.cost, best_baseline + 1e-9 * best_baseline);
    rm_schedule_free(s);
}

Test(coarsen, solver_route_on_a_large_random_graph_and_a_traced_model)
{
    rg_options go = {45, 0.3, 0.3, 6, 1024};
    rm_problem *p = rg_training_problem(11, &go);
    cr_assert(p);
    cr_assert_gt(p->n, RM_COARSEN_MIN_NODES);
    size_t full = all_peak(p), lb = rm_problem_peak_lower_bound(p);
    for (int pct = 40; pct <= 80; pct += 40) {
        p->budget = lb + (full - lb) * (size_t)pct / 100;
        check_route(p, "milp", 20, RM_COARSEN_FALLBACK);
        check_route(p, "lp_round", 20, 0);
    }
    rm_problem_free(p);
    p = cf_training_problem(RESNET_TINY, 2);
    full = all_peak(p);
    lb = rm_problem_peak_lower_bound(p);
    p->budget = p->fixed_bytes + lb + (full - lb) / 2;
    check_route(p, "milp", 16, RM_COARSEN_FALLBACK);
    check_route(p, "lp_round", 16, 0);
    check_route(p, "lp_round", 12, RM_COARSEN_REFINE);
    /* Below the trivial bound: infeasible at once. */
    p->budget = p->fixed_bytes + lb - 1;
    check_route(p, "milp", 16, RM_COARSEN_FALLBACK);
    rm_problem_free(p);
}

/* Through rm_strategy_run a coarsened answer still reports a bound: the
 * trivial one (every node once), flagged, with the gap measured against it. */
Test(coarsen, coarsened_answers_report_the_relaxed_bound)
{
    RM_SKIP_WHEN_SANITIZED();
    /* Just above the coarsening threshold: the relaxed bound, solved here
     * without a limit, grows fast with the graph. */
    rg_options go = {40, 0.3, 0.3, 6, 1024};
    rm_problem *p = rg_training_problem(12, &go);
    cr_assert(p);
    cr_assert_gt(p->n, RM_COARSEN_MIN_NODES);
    size_t full = all_peak(p), lb = rm_problem_peak_lower_bound(p);
    p->budget = lb + (full - lb) / 2;
    double base = 0;
    for (int i = 0; i < p->n; i++) base += p->nodes[i].cost;
    /* The third run: the MILP with a time limit, which also tries refined
     * rounding first (strategies.c); only validity can be asserted. */
    const char *names[] = {"milp", "lp_round", "milp"};
    for (int k = 0; k < 3; k++) {
        rm_strategy_options o = {0};
        o.node_limit = 200;
        if (k == 2) o.time_limit_s = 1;
        rm_strategy_stats stats;
        rm_schedule *s = NULL;
        rm_err e = {RM_OK, ""};
        int rc = rm_strategy_run(&s, &stats, rm_strategy_find(names[k]), p, &o, &e);
        cr_assert_eq(rc, RM_OK, "%s: %s", names[k], e.msg);
        /* The relaxed LP bound of p (lp_bound.h), never the coarse LP's;
         * within the 1 s limit (a third of it for the bound) a loaded
         * machine may leave only the trivial bound, which is valid too. */
        cr_assert(stats.has_bound && (k == 2 || !stats.bound_trivial), "%s", names[k]);
        cr_assert_geq(stats.lp_bound, base * (1 - 1e-12), "%s", names[k]);
        cr_assert_geq(stats.sim.cost, stats.lp_bound * (1 - 1e-12), "%s", names[k]);
        cr_assert_float_eq(stats.gap, (stats.sim.cost - stats.lp_bound) / stats.sim.cost, 1e-12);
        rm_schedule_free(s);
    }
    rm_problem_free(p);
}
