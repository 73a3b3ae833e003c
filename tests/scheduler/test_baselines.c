/* The baseline strategies: valid schedules on many random training graphs,
 * the budget respected whenever they claim feasibility, RM_ERR_INFEASIBLE
 * below the trivial lower bound, and OGC's optimum checked against an
 * exhaustive search over checkpoint sets. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baseline.h"
#include "random_graphs.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"

static size_t peak_of(const rm_problem *p, const rm_schedule *s, double *cost)
{
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    if (cost) *cost = r.cost;
    return r.peak_bytes;
}

static rm_problem *random_graph(uint64_t seed, int max_forward)
{
    rg_options o = {2 + (int)(seed * 7 % (uint64_t)(max_forward - 1)), 0.1 + 0.1 * (double)(seed % 4),
                    0.1 * (double)(seed % 3), (int)(seed % 5) * 3, 64 + 64 * (size_t)(seed % 16)};
    rm_problem *p = rg_training_problem(seed, &o);
    cr_assert_not_null(p, "seed %lu", (unsigned long)seed);
    return p;
}

Test(baselines, registry)
{
    int count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    cr_assert_geq(count, 9);
    cr_assert_str_eq(list[0].name, "checkpoint_all");
    cr_assert_eq(rm_strategy_find("ogc")->solve, rm_strategy_ogc);
    cr_assert_null(rm_strategy_find("nope"));
}

/* Every strategy, unlimited and under a range of budgets: either a valid
 * schedule within the budget, or RM_ERR_INFEASIBLE. */
Test(baselines, valid_on_random_graphs)
{
    int count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    int solved = 0, infeasible = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        rm_problem *p = random_graph(seed, 24);
        rm_schedule *s;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK);
        size_t top = peak_of(p, s, NULL), lb = rm_problem_peak_lower_bound(p);
        rm_schedule_free(s);
        for (int level = 0; level <= 4; level++) {
            p->budget = level == 4 ? 0 : p->fixed_bytes + lb + (top - lb) * (size_t)level / 3;
            for (int k = 0; k < count; k++) {
                int rc = list[k].solve(&s, p, &e);
                if (rc == RM_ERR_INFEASIBLE) {
                    cr_assert_null(s);
                    cr_assert_neq(level, 4, "%s infeasible without a budget: %s", list[k].name, e.msg);
                    /* The searches that include "keep every forward value"
                     * always fit where checkpoint-all does; fixed heuristics
                     * (sqrt(n), OGC's cut points, AP greedy) need not. */
                    int covers_all =
                        list[k].solve == rm_strategy_checkpoint_all || list[k].solve == rm_strategy_chen_greedy ||
                        list[k].solve == rm_strategy_linearized_greedy || list[k].solve == rm_strategy_griewank;
                    cr_assert(level != 3 || !covers_all, "%s infeasible at the checkpoint-all peak", list[k].name);
                    infeasible++;
                    continue;
                }
                cr_assert_eq(rc, RM_OK, "%s seed %lu: %s", list[k].name, (unsigned long)seed, e.msg);
                rm_sim_result r;
                cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s: %s", list[k].name, e.msg);
                cr_assert(rm_sim_fits(p, &r), "%s seed %lu: peak %zu + %zu over budget %zu", list[k].name,
                          (unsigned long)seed, r.peak_bytes, p->fixed_bytes, p->budget);
                cr_assert_geq(r.peak_bytes, lb);
                solved++;
                rm_schedule_free(s);
            }
        }
        rm_problem_free(p);
    }
    cr_assert_gt(solved, 0);
    cr_assert_gt(infeasible, 0);
}

Test(baselines, infeasible_below_lower_bound)
{
    int count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    clock_t start = clock();
    for (uint64_t seed = 1; seed <= 20; seed++) {
        rm_problem *p = random_graph(seed, 200);
        p->budget = p->fixed_bytes + rm_problem_peak_lower_bound(p) - 1;
        for (int k = 0; k < count; k++) {
            rm_schedule *s;
            rm_err e = {0};
            cr_assert_eq(list[k].solve(&s, p, &e), RM_ERR_INFEASIBLE, "%s", list[k].name);
            cr_assert_null(s);
            cr_assert(strstr(e.msg, list[k].name), "%s", e.msg);
        }
        rm_problem_free(p);
    }
    /* Up to 400-node graphs, 9 strategies, 20 graphs: this must not search. */
    cr_assert_lt((double)(clock() - start) / CLOCKS_PER_SEC, 1.0);
}

/* Without a budget the budget-driven searches include "checkpoint every
 * candidate", which recomputes nothing. */
Test(baselines, unlimited_budget_means_no_recomputation)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        rm_problem *p = random_graph(seed, 20);
        double all_cost, c;
        rm_schedule *s;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK);
        peak_of(p, s, &all_cost);
        rm_schedule_free(s);
        rm_strategy_fn fns[] = {rm_strategy_chen_greedy, rm_strategy_linearized_greedy, rm_strategy_griewank};
        for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
            cr_assert_eq(fns[k](&s, p, &e), RM_OK, "%s", e.msg);
            peak_of(p, s, &c);
            cr_assert_float_eq(c, all_cost, 1e-9, "strategy %zu seed %lu", k, (unsigned long)seed);
            rm_schedule_free(s);
        }
        rm_problem_free(p);
    }
}

/* The cheapest fitting schedule of a fixed family costs more, never less,
 * as the budget shrinks. */
Test(baselines, cost_monotone_in_budget)
{
    rm_strategy_fn fns[] = {rm_strategy_chen_greedy, rm_strategy_ap_greedy, rm_strategy_linearized_greedy,
                            rm_strategy_griewank};
    for (uint64_t seed = 3; seed <= 12; seed++) {
        rm_problem *p = random_graph(seed, 30);
        rm_schedule *s;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK);
        size_t top = peak_of(p, s, NULL), lb = rm_problem_peak_lower_bound(p);
        rm_schedule_free(s);
        for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
            double prev = 0;
            for (int level = 8; level >= 0; level--) {
                p->budget = p->fixed_bytes + lb + (top - lb) * (size_t)level / 8;
                if (fns[k](&s, p, &e) != RM_OK) break;
                double c;
                peak_of(p, s, &c);
                cr_assert_geq(c, prev - 1e-9, "strategy %zu seed %lu level %d", k, (unsigned long)seed, level);
                prev = c;
                rm_schedule_free(s);
            }
        }
        rm_problem_free(p);
    }
}

/* On a uniform chain the sqrt(n) checkpoints are every k-th node and the
 * memory savings are real. */
Test(baselines, sqrtn_on_uniform_chain)
{
    rm_problem *p = rg_chain_problem(7, 26, 16); /* every node 16 bytes */
    for (int i = 0; i < p->n; i++)
        if (p->nodes[i].bytes) p->nodes[i].bytes = 16;
    rm_schedule *all, *sq, *gw;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_checkpoint_all(&all, p, &e), RM_OK);
    cr_assert_eq(rm_strategy_chen_sqrtn(&sq, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_strategy_ap_sqrtn(&gw, p, &e), RM_OK, "%s", e.msg);
    double c_all, c_sq, c_ap;
    size_t p_all = peak_of(p, all, &c_all), p_sq = peak_of(p, sq, &c_sq), p_ap = peak_of(p, gw, &c_ap);
    cr_assert_lt(p_sq, p_all / 2, "sqrt(n) peak %zu vs %zu", p_sq, p_all);
    cr_assert_gt(c_sq, c_all);
    /* On a chain every node is a cut point: AP and linearized agree. */
    cr_assert_eq(p_ap, p_sq);
    cr_assert_float_eq(c_ap, c_sq, 1e-9);
    rm_schedule_free(all);
    rm_schedule_free(sq);
    rm_schedule_free(gw);
    rm_problem_free(p);
}

/* Griewank with few slots on a long chain: far below checkpoint-all. */
Test(baselines, griewank_saves_memory_on_long_chain)
{
    rm_problem *p = rg_chain_problem(11, 60, 16);
    for (int i = 0; i < p->n; i++)
        if (p->nodes[i].bytes) p->nodes[i].bytes = 16;
    rm_schedule *s;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK);
    size_t top = peak_of(p, s, NULL);
    rm_schedule_free(s);
    p->budget = p->fixed_bytes + top / 4;
    cr_assert_eq(rm_strategy_griewank(&s, p, &e), RM_OK, "%s", e.msg);
    cr_assert_leq(peak_of(p, s, NULL), top / 4);
    rm_schedule_free(s);
    rm_problem_free(p);
}

/* Revolve's table from the monotone scan (griewank.c) against trying every
 * split: the same costs and the same least optimal splits. */
Test(baselines, revolve_table_matches_every_split)
{
    enum { M = 300, S = 12 };
    double *F = calloc((M + 1) * (S + 1), sizeof *F), *G = calloc((M + 1) * (S + 1), sizeof *G);
    int *split = calloc((M + 1) * (S + 1), sizeof *split);
    rm_revolve_splits(F, split, M, S);
    for (int s = 0; s <= S; s++)
        for (int l = 1; l <= M; l++) {
            double *g = &G[l * (S + 1) + s];
            int best = 0;
            if (l == 1)
                *g = 0;
            else if (s == 0)
                *g = 0.5 * l * (l - 1);
            else
                for (int j = 1; j < l; j++) {
                    double c = j + G[(l - j) * (S + 1) + s - 1] + G[j * (S + 1) + s];
                    if (!best || c < *g) *g = c, best = j;
                }
            cr_assert_eq(F[l * (S + 1) + s], *g, "l %d s %d: %g, exhaustive %g", l, s, F[l * (S + 1) + s], *g);
            if (best) cr_assert_eq(split[l * (S + 1) + s], best, "l %d s %d", l, s);
        }
    free(F);
    free(G);
    free(split);
}

/* The lowest simulated peak over every subset of the candidates (cut points). */
static size_t exhaustive_min_peak(const rm_problem *p)
{
    rm_fwd_info fi;
    rm_err e = {0};
    cr_assert_eq(rm_fwd_info_init(&fi, p, &e), RM_OK);
    cr_assert_leq(fi.ncuts, 16);
    uint8_t *pins = calloc((size_t)p->n, 1);
    size_t best = (size_t)-1;
    for (unsigned mask = 0; mask < (1u << fi.ncuts); mask++) {
        memset(pins, 0, (size_t)p->n);
        for (int k = 0; k < fi.ncuts; k++)
            if (mask & (1u << k)) pins[fi.cuts[k]] = 1;
        rm_schedule *s;
        cr_assert_eq(rm_schedule_from_checkpoints(&s, p, pins, &e), RM_OK, "%s", e.msg);
        size_t pk = peak_of(p, s, NULL);
        if (pk < best) best = pk;
        rm_schedule_free(s);
    }
    free(pins);
    rm_fwd_info_free(&fi);
    return best;
}

static void check_ogc_optimal(rm_problem *p, const char *what, uint64_t seed)
{
    rm_fwd_info fi;
    rm_err e = {0};
    cr_assert_eq(rm_fwd_info_init(&fi, p, &e), RM_OK);
    uint8_t *pins = malloc((size_t)p->n);
    size_t predicted;
    cr_assert_eq(rm_ogc_plan(pins, &predicted, NULL, p, &fi, &e), RM_OK, "%s", e.msg);
    rm_schedule *s;
    cr_assert_eq(rm_strategy_ogc(&s, p, &e), RM_OK, "%s", e.msg);
    size_t got = peak_of(p, s, NULL), want = exhaustive_min_peak(p);
    cr_assert_eq(predicted, got, "%s seed %lu: the DP predicts %zu, the simulator says %zu", what, (unsigned long)seed,
                 predicted, got);
    /* ogc also searches sets beyond the cut points (test_ogc.c checks its
     * whole family): never above the best cut-point set, equal on chains. */
    cr_assert_leq(got, want, "%s seed %lu: ogc peak %zu, cut-point optimum %zu", what, (unsigned long)seed, got, want);
    rm_schedule_free(s);
    free(pins);
    rm_fwd_info_free(&fi);
}

Test(baselines, ogc_matches_exhaustive_on_chains)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        rm_problem *p = rg_chain_problem(seed, 2 + (int)(seed % 10), 64 + 32 * (size_t)(seed % 7));
        check_ogc_optimal(p, "chain", seed);
        rm_problem_free(p);
    }
}

Test(baselines, ogc_matches_exhaustive_on_small_dags)
{
    int checked = 0;
    for (uint64_t seed = 1; seed <= 60 && checked < 25; seed++) {
        rg_options o = {4 + (int)(seed % 12), 0.3, 0.2, 3, 512};
        rm_problem *p = rg_training_problem(seed, &o);
        rm_fwd_info fi;
        rm_err e = {0};
        cr_assert_eq(rm_fwd_info_init(&fi, p, &e), RM_OK);
        int small = fi.ncuts <= 12;
        rm_fwd_info_free(&fi);
        if (small) {
            check_ogc_optimal(p, "dag", seed);
            checked++;
        }
        rm_problem_free(p);
    }
    cr_assert_geq(checked, 10);
}

/* The decomposition behind the DP predicts the simulated peak exactly on
 * tracer-shaped graphs of any size. */
Test(baselines, ogc_prediction_matches_simulator)
{
    for (uint64_t seed = 1; seed <= 30; seed++) {
        rm_problem *p = random_graph(seed, 60);
        rm_fwd_info fi;
        rm_err e = {0};
        cr_assert_eq(rm_fwd_info_init(&fi, p, &e), RM_OK);
        uint8_t *pins = malloc((size_t)p->n);
        size_t predicted;
        cr_assert_eq(rm_ogc_plan(pins, &predicted, NULL, p, &fi, &e), RM_OK, "%s", e.msg);
        rm_schedule *s;
        cr_assert_eq(rm_schedule_from_checkpoints(&s, p, pins, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(peak_of(p, s, NULL), predicted, "seed %lu", (unsigned long)seed);
        rm_schedule_free(s);
        free(pins);
        rm_fwd_info_free(&fi);
        rm_problem_free(p);
    }
}

Test(baselines, ogc_no_worse_than_ap_sqrtn)
{
    for (uint64_t seed = 1; seed <= 20; seed++) {
        rm_problem *p = random_graph(seed, 40);
        rm_schedule *a, *b;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_ogc(&a, p, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_strategy_ap_sqrtn(&b, p, &e), RM_OK, "%s", e.msg);
        cr_assert_leq(peak_of(p, a, NULL), peak_of(p, b, NULL), "seed %lu", (unsigned long)seed);
        rm_schedule_free(a);
        rm_schedule_free(b);
        rm_problem_free(p);
    }
}

Test(baselines, cut_points)
{
    /* 0 -> 1 -> 2 -> 3 -> 4(loss), with a skip 1 -> 3: 2 is not a cut. */
    static const size_t bytes[] = {8, 8, 8, 8, 8, 8};
    static const char *const deps[] = {"", "0", "1", "1,2", "3", "3,4"};
    rm_problem *p = rg_problem_make(6, bytes, NULL, deps);
    p->nodes[4].tag = RM_TAG_LOSS;
    p->nodes[5].tag = RM_TAG_BACKWARD;
    rm_fwd_info fi;
    rm_err e = {0};
    cr_assert_eq(rm_fwd_info_init(&fi, p, &e), RM_OK);
    cr_assert_eq(fi.b0, 5);
    cr_assert_eq(fi.ncuts, 4);
    cr_assert_eq(fi.cuts[0], 0);
    cr_assert_eq(fi.cuts[1], 1);
    cr_assert_eq(fi.cuts[2], 3);
    cr_assert_eq(fi.cuts[3], 4);
    rm_fwd_info_free(&fi);
    rm_problem_free(p);
}
