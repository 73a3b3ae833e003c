/* "best", the default strategy: on random DAGs and training graphs at
 * budgets from the trivial bound to checkpoint-all, it answers whenever any
 * strategy does and is never dearer than any of them (every baseline, LP
 * rounding, the MILP under the same node limit); a solver stopped by its
 * limit leaves the cheapest heuristic as the answer, not an error; and a
 * first-fit probe stops at the first heuristic that fits. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "random_graphs.h"
#include "route.h"
#include "sanitized.h"
#include "simulate.h"
#include "strategy.h"

static rm_strategy_options limits(long nodes)
{
    rm_strategy_options o;
    memset(&o, 0, sizeof o);
    o.node_limit = nodes; /* deterministic: no wall clock in tests */
    return o;
}

/* Cost of a strategy's answer, or -1 when it finds none (errors fail). */
static double cost_of(const rm_strategy_info *st, const rm_problem *p, const rm_strategy_options *o,
                      rm_strategy_stats *stats)
{
    rm_schedule *s = NULL;
    rm_err e = {0};
    int rc = rm_strategy_run(&s, stats, st, p, o, &e);
    cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "%s failed: %s", st->name, e.msg);
    if (rc != RM_OK) return -1;
    cr_assert(rm_sim_fits(p, &stats->sim), "%s: over the budget", st->name);
    rm_schedule_free(s);
    return stats->sim.cost;
}

static size_t ckpt_all_peak(const rm_problem *p)
{
    rm_schedule *s = NULL;
    rm_sim_result r;
    rm_err e = {0};
    rm_problem q = *p;
    q.budget = 0;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, &q, &e), RM_OK);
    cr_assert_eq(rm_simulate(&r, &q, s, &e), RM_OK);
    rm_schedule_free(s);
    return r.peak_bytes;
}

/* best against every other strategy at budgets across the feasible range. */
static void best_is_never_dearer(rm_problem *p, const char *what, int *answered)
{
    int count;
    const rm_strategy_info *all = rm_strategy_list_all(&count), *best = rm_strategy_find("best");
    rm_strategy_options o = limits(300);
    size_t lo = rm_problem_peak_lower_bound(p), hi = ckpt_all_peak(p);
    for (int k = 0; k <= 4; k++) {
        p->budget = p->fixed_bytes + lo + (hi - lo) * (size_t)k / 5;
        rm_strategy_stats bs;
        double b = cost_of(best, p, &o, &bs);
        for (int i = 0; i < count; i++) {
            if (&all[i] == best) continue;
            rm_strategy_stats ss;
            double c = cost_of(&all[i], p, &o, &ss);
            if (c < 0) continue;
            cr_assert(b >= 0, "%s budget %zu: %s fits (cost %g), best found nothing", what, p->budget, all[i].name, c);
            cr_assert(b <= c * (1 + 1e-12), "%s budget %zu: best %g dearer than %s %g", what, p->budget, b, all[i].name,
                      c);
        }
        if (b >= 0) {
            (*answered)++;
            cr_assert(bs.has_bound && bs.lp_bound <= b * (1 + 1e-9), "%s: best's bound %g above its cost %g", what,
                      bs.lp_bound, b);
        }
    }
}

Test(best, never_dearer_than_any_strategy_on_random_graphs)
{
    RM_SKIP_WHEN_SANITIZED();
    int answered = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        rg_options go = {4 + (int)(seed % 6), 0.3, 0.2, 0, 4096};
        rm_problem *p = rg_training_problem(seed, &go);
        cr_assert_not_null(p);
        char what[64];
        snprintf(what, sizeof what, "training graph seed %llu (n=%d)", (unsigned long long)seed, p->n);
        best_is_never_dearer(p, what, &answered);
        rm_problem_free(p);
    }
    for (uint64_t seed = 1; seed <= 5; seed++) {
        rm_problem *p = rg_chain_problem(seed, 3 + (int)seed, 2048);
        cr_assert_not_null(p);
        char what[64];
        snprintf(what, sizeof what, "chain seed %llu (n=%d)", (unsigned long long)seed, p->n);
        best_is_never_dearer(p, what, &answered);
        rm_problem_free(p);
    }
    cr_assert(answered >= 50, "only %d budgets had an answer", answered);
}

/* A MILP stopped before it finds anything (one node) is no error for best:
 * the cheapest heuristic is the answer, unproved. */
Test(best, a_stopped_solver_leaves_the_cheapest_heuristic)
{
    int tested = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        rg_options go = {8, 0.3, 0.2, 0, 4096};
        rm_problem *p = rg_training_problem(seed, &go);
        size_t lo = rm_problem_peak_lower_bound(p), hi = ckpt_all_peak(p);
        p->budget = p->fixed_bytes + lo + (hi - lo) / 2;
        rm_strategy_options o = limits(1);
        rm_strategy_stats bs;
        rm_schedule *h = NULL;
        rm_sim_result hr;
        h = rm_best_baseline(p, 0, 0, NULL, &hr);
        double b = cost_of(rm_strategy_find("best"), p, &o, &bs);
        if (h) {
            cr_assert(b >= 0 && b <= hr.cost, "seed %llu: best %g, cheapest heuristic %g", (unsigned long long)seed, b,
                      hr.cost);
            cr_assert(bs.status == RM_STATUS_OPTIMAL || bs.status == RM_STATUS_FEASIBLE);
            tested++;
        }
        rm_schedule_free(h);
        rm_problem_free(p);
    }
    cr_assert(tested >= 6);
}

Test(best, first_fit_stops_at_the_first_heuristic_that_fits)
{
    rg_options go = {8, 0.3, 0.2, 0, 4096};
    rm_problem *p = rg_training_problem(5, &go);
    size_t lo = rm_problem_peak_lower_bound(p), hi = ckpt_all_peak(p);
    p->budget = p->fixed_bytes + lo + (hi - lo) * 3 / 4;
    rm_sim_result hr;
    rm_schedule *h = rm_best_baseline(p, 0, 0, NULL, &hr);
    cr_assert_not_null(h, "the test needs a budget some heuristic fits");
    rm_strategy_options o = limits(0);
    o.first_fit = 1;
    rm_strategy_stats bs;
    double b = cost_of(rm_strategy_find("best"), p, &o, &bs);
    cr_assert_eq(bs.first_fit, 1);
    cr_assert_eq(b, hr.cost, "first fit %g, cheapest heuristic %g", b, hr.cost);
    rm_schedule_free(h);
    rm_problem_free(p);
}

/* Above RM_COARSEN_MIN_NODES the MILP route is coarsened and falls back to
 * the cheapest heuristic (or, with a time limit, to the refined rounding):
 * "best" must name the strategy whose schedule it returns, not "milp" for
 * whatever the coarsened route returned (issue 24: the wrong label). Where
 * the answer is, node for node, the schedule some baseline gives alone, the
 * source is that baseline (or another that gives the same schedule). */
Test(best, names_the_strategy_whose_schedule_it_returns_above_the_coarsening_threshold)
{
    int count, heuristic = 0, checked = 0;
    const rm_strategy_info *base = rm_strategy_list(&count), *best = rm_strategy_find("best");
    for (uint64_t seed = 1; seed <= 3; seed++) {
        rm_problem *p = rg_checkmate_linear(41, seed, 4096);
        cr_assert_gt(p->n, RM_COARSEN_MIN_NODES, "the test needs the coarsened route");
        size_t lo = rm_problem_peak_lower_bound(p), hi = ckpt_all_peak(p);
        for (int k = 2; k <= 3; k++) {
            p->budget = p->fixed_bytes + lo + (hi - lo) * (size_t)k / 4;
            /* Without a limit the relaxed LP bound alone takes 1.5 s here;
             * a short one also runs the rounding half (rm_route_milp).
             * Whichever strategy wins, the label must name it. */
            rm_strategy_options o = limits(20);
            o.time_limit_s = 0.25;
            o.moves = 1; /* the anneal, which would improve on every heuristic here */
            rm_strategy_stats bs;
            rm_schedule *s = NULL;
            rm_err e = {0};
            int rc = rm_strategy_run(&s, &bs, best, p, &o, &e);
            cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "seed %llu: best failed: %s", (unsigned long long)seed,
                      e.msg);
            if (rc != RM_OK) continue;
            checked++;
            cr_assert(bs.source && rm_strategy_find(bs.source), "seed %llu budget %zu: source %s is no strategy",
                      (unsigned long long)seed, p->budget, bs.source ? bs.source : "(none)");
            int same = 0, named = 0;
            for (int i = 0; i < count; i++) {
                rm_schedule *h = NULL;
                rm_err he = {0};
                if (base[i].solve(&h, p, &he) == RM_OK && rm_schedule_equal(h, s)) {
                    same = 1;
                    if (!strcmp(bs.source, base[i].name)) named = 1;
                }
                rm_schedule_free(h);
            }
            if (same) {
                heuristic++;
                cr_assert(named, "seed %llu budget %zu: a heuristic's schedule reported as %s's",
                          (unsigned long long)seed, p->budget, bs.source);
            }
            rm_schedule_free(s);
        }
        rm_problem_free(p);
    }
    cr_assert_gt(heuristic, 0, "no answer was a heuristic's (of %d): the test tests nothing", checked);
}

/* Below the coarsening threshold, a MILP that its time limit stops before
 * branch and bound (here: before its LP is built and solved) answers with
 * the heuristic it started from, and says so. It was labelled "milp": the
 * MILP's from_incumbent flag is set only by branch and bound. */
Test(best, a_milp_stopped_before_its_search_names_the_heuristic_it_returns)
{
    int count, checked = 0;
    const rm_strategy_info *base = rm_strategy_list(&count), *milp = rm_strategy_find("milp");
    for (uint64_t seed = 1; seed <= 3; seed++) {
        rg_options go = {30, 0.2, 0.1, 0, 4096};
        rm_problem *p = rg_training_problem(seed, &go);
        cr_assert_leq(p->n, RM_COARSEN_MIN_NODES, "the test needs the direct route");
        size_t lo = rm_problem_peak_lower_bound(p), hi = ckpt_all_peak(p);
        p->budget = p->fixed_bytes + lo + (hi - lo) / 2;
        /* A deadline already passed: the MILP gets its minimum (10 ms), far
         * less than the LP of a graph of some 60 nodes takes. */
        rm_strategy_options o = limits(0);
        o.deadline = rm_now() - 1;
        rm_strategy_stats st;
        rm_schedule *s = NULL;
        rm_err e = {0};
        int rc = rm_strategy_run(&s, &st, milp, p, &o, &e);
        cr_assert(rc == RM_OK, "seed %llu: %s", (unsigned long long)seed, e.msg);
        cr_assert(st.source && rm_strategy_find(st.source), "seed %llu: source %s", (unsigned long long)seed,
                  st.source ? st.source : "(none)");
        for (int i = 0; i < count; i++) {
            rm_schedule *h = NULL;
            rm_err he = {0};
            if (base[i].solve(&h, p, &he) == RM_OK && rm_schedule_equal(h, s)) {
                cr_expect(strcmp(st.source, "milp") != 0, "seed %llu: %s's schedule labelled milp",
                          (unsigned long long)seed, base[i].name);
                checked++;
            }
            rm_schedule_free(h);
        }
        rm_schedule_free(s);
        rm_problem_free(p);
    }
    cr_assert_gt(checked, 0, "no answer was a heuristic's: the test tests nothing");
}

/* Every node computed once is the least any schedule costs, in any order:
 * where the anneal finds an order that fits so (banded layered DAGs at 90%
 * of the no-remat peak, which the order alone reaches), best answers it as
 * optimal, its bound met, without the solvers' search. */
Test(best, an_order_that_fits_every_node_once_is_optimal)
{
    int optimal = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        rm_problem *p = rg_layered_problem(seed, 10, 10, 0.5, 0.15, 2);
        p->budget = p->fixed_bytes + ckpt_all_peak(p) * 9 / 10;
        rm_strategy_options o = limits(1);
        o.moves = 100000;
        rm_strategy_stats as, bs;
        double a = cost_of(rm_strategy_find("anneal"), p, &o, &as);
        double b = cost_of(rm_strategy_find("best"), p, &o, &bs);
        double base = rm_problem_base_cost(p);
        cr_assert(a >= 0 && b >= 0 && b <= a, "seed %lu: anneal %g, best %g", (unsigned long)seed, a, b);
        if (b <= base) {
            optimal++;
            cr_assert_eq(bs.status, RM_STATUS_OPTIMAL, "seed %lu: every node once, status %s", (unsigned long)seed,
                         rm_status_name(bs.status));
            cr_assert(bs.has_bound && bs.lp_bound == base && bs.gap == 0, "seed %lu: bound %g, gap %g",
                      (unsigned long)seed, bs.lp_bound, bs.gap);
        }
        rm_problem_free(p);
    }
    cr_assert_gt(optimal, 0, "no seed where the order alone fits 90%%: the test checks nothing");
}

/* On forward-only DAGs (no heuristic applies), best answers wherever the
 * anneal does, never dearer: the anneal in the problem's order finding
 * nothing must not lose the free anneal's answer in its own order. */
Test(best, never_dearer_than_the_anneal_on_forward_only_dags)
{
    int compared = 0, recomputing = 0;
    for (uint64_t seed = 1; seed <= 3; seed++) {
        rm_problem *p = rg_layered_problem(seed, 5, 6, 0.5, 0.15, 2);
        size_t lo = rm_problem_peak_lower_bound(p), hi = ckpt_all_peak(p);
        for (int k = 1; k <= 4; k++) {
            p->budget = p->fixed_bytes + lo + (hi - lo) * (size_t)k / 5;
            rm_strategy_options o = limits(1);
            o.moves = 30000;
            rm_strategy_stats as, bs;
            double a = cost_of(rm_strategy_find("anneal"), p, &o, &as);
            if (a < 0) continue;
            double b = cost_of(rm_strategy_find("best"), p, &o, &bs);
            cr_assert(b >= 0, "seed %lu budget %zu: the anneal fits (cost %g), best found nothing", (unsigned long)seed,
                      p->budget, a);
            cr_assert(b <= a * (1 + 1e-12), "seed %lu budget %zu: best %g dearer than the anneal %g",
                      (unsigned long)seed, p->budget, b, a);
            compared++;
            recomputing += a > rm_problem_base_cost(p);
        }
        rm_problem_free(p);
    }
    cr_assert_gt(compared, 3, "only %d budgets where the anneal answers", compared);
    cr_assert_gt(recomputing, 0, "no budget where the anneal recomputes: the test checks little");
}

/* A first-fit probe (maxbatch) on a DAG no heuristic applies to: best
 * answers with the anneal's first fit, not after walks until its share of
 * the time ends (above 80 nodes best walks again and again; a probe asks
 * only whether anything fits). */
Test(best, first_fit_answers_with_the_anneals_first_fit)
{
    rm_problem *p = rg_layered_problem(2, 10, 10, 0.5, 0.15, 2);
    cr_assert_gt(p->n, RM_COARSEN_MIN_NODES);
    size_t lo = rm_problem_peak_lower_bound(p), hi = ckpt_all_peak(p);
    /* A budget where the anneal recomputes (where an order fits with every
     * node once, best answers that at once, first fit or not). */
    int k = 8;
    for (; k > 0; k--) {
        p->budget = p->fixed_bytes + lo + (hi - lo) * (size_t)k / 10;
        rm_strategy_options ao = limits(0);
        ao.moves = 30000;
        rm_strategy_stats as;
        double a = cost_of(rm_strategy_find("anneal"), p, &ao, &as);
        if (a > rm_problem_base_cost(p)) break;
    }
    cr_assert_gt(k, 0, "no budget where the anneal recomputes");
    rm_strategy_options o = limits(0);
    o.first_fit = 1;
    o.time_limit_s = 30;
    rm_strategy_stats bs;
    double b = cost_of(rm_strategy_find("best"), p, &o, &bs);
    cr_assert_geq(b, 0, "nothing fits at %d/10 of the way from the lower bound", k);
    cr_assert_eq(bs.first_fit, 1);
    cr_assert(rm_sim_fits(p, &bs.sim));
    /* Walking until the share's end would take 22 s of the 30. */
    cr_assert_lt(bs.seconds, 10, "a first fit took %.1f s", bs.seconds);
    /* The anneal alone as the probe: a walk its first fit ended was not
     * stopped by the clock (maxbatch would warn of the time limit). */
    rm_strategy_stats as;
    cr_assert_geq(cost_of(rm_strategy_find("anneal"), p, &o, &as), 0);
    cr_assert(rm_sim_fits(p, &as.sim));
    cr_assert_eq(as.stopped, 0, "a first fit %.1f s into a 30 s limit reads as stopped by it", as.seconds);
    rm_problem_free(p);
}
