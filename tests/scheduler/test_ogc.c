/* OGC (scheduler/ogc.c) against brute force: on small random training DAGs
 * with branches and skips, every checkpoint set is built with the shared
 * construction (rm_schedule_from_checkpoints, what the strategy returns)
 * and simulated. The strategy's peak must equal the lowest peak over the
 * family it searches (the unions of prefix boundaries at any set of forward
 * positions), never exceed the best cut-point set, and on chains equal the
 * lowest peak over every subset of forward values. On branched DAGs some
 * subset outside the family can be lower (see ogc.c's header); the test
 * counts those graphs on stderr. Plus validity, the budget, and the DP's
 * prediction against the simulator. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "random_graphs.h"
#include "sanitized.h"
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

static size_t peak_of_set(const rm_problem *p, const uint8_t *pins)
{
    rm_schedule *s;
    rm_err e = {0};
    cr_assert_eq(rm_schedule_from_checkpoints(&s, p, pins, &e), RM_OK, "%s", e.msg);
    size_t pk = peak_of(p, s, NULL);
    rm_schedule_free(s);
    return pk;
}

typedef struct brute {
    size_t family; /* lowest peak over the unions of prefix boundaries */
    size_t any;    /* lowest peak over every subset of the forward region */
} brute;

/* Both minima by exhaustion; the forward region must be small. */
static brute brute_force(const rm_problem *p)
{
    rm_fwd_info fi;
    rm_err e = {0};
    cr_assert_eq(rm_fwd_info_init(&fi, p, &e), RM_OK);
    int b0 = fi.b0;
    cr_assert_leq(b0, 14);
    uint8_t *pins = calloc((size_t)p->n, 1);
    brute best = {(size_t)-1, (size_t)-1};
    for (unsigned mask = 0; mask < (1u << b0); mask++) {
        /* mask as a checkpoint set */
        memset(pins, 0, (size_t)p->n);
        for (int v = 0; v < b0; v++) pins[v] = (mask >> v) & 1u;
        size_t pk = peak_of_set(p, pins);
        if (pk < best.any) best.any = pk;
        /* mask as a set of positions: each checkpoints itself and every
         * earlier value a forward node after it reads */
        memset(pins, 0, (size_t)p->n);
        for (int c = 0; c < b0; c++)
            if ((mask >> c) & 1u) {
                pins[c] = 1;
                for (int v = 0; v < c; v++)
                    if (fi.lastfwd[v] > c) pins[v] = 1;
            }
        pk = peak_of_set(p, pins);
        if (pk < best.family) best.family = pk;
    }
    free(pins);
    rm_fwd_info_free(&fi);
    return best;
}

/* The strategy's peak, checked against rm_ogc_plan's prediction. */
static size_t ogc_peak(const rm_problem *p, uint64_t seed)
{
    rm_fwd_info fi;
    rm_err e = {0};
    cr_assert_eq(rm_fwd_info_init(&fi, p, &e), RM_OK);
    uint8_t *pins = malloc((size_t)p->n);
    size_t predicted;
    cr_assert_eq(rm_ogc_plan(pins, &predicted, NULL, p, &fi, &e), RM_OK, "%s", e.msg);
    size_t planned = peak_of_set(p, pins);
    rm_schedule *s;
    cr_assert_eq(rm_strategy_ogc(&s, p, &e), RM_OK, "%s", e.msg);
    size_t got = peak_of(p, s, NULL);
    cr_assert_eq(got, planned, "seed %lu", (unsigned long)seed);
    cr_assert_eq(predicted, got, "seed %lu: the DP predicts %zu, the simulator says %zu", (unsigned long)seed,
                 predicted, got);
    rm_schedule_free(s);
    free(pins);
    rm_fwd_info_free(&fi);
    return got;
}

static rm_problem *small_dag(uint64_t seed)
{
    /* 4..11 forward nodes (plus the loss: at most 12 in the forward region),
     * branches and skips of every reach. */
    rg_options o = {4 + (int)(seed % 8), 0.15 * (double)(seed % 4), 0.1 * (double)(seed % 3), (int)(seed % 3) * 3,
                    64 + 64 * (size_t)(seed % 8)};
    rm_problem *p = rg_training_problem(seed, &o);
    cr_assert_not_null(p, "seed %lu", (unsigned long)seed);
    return p;
}

Test(ogc, exact_on_chains)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        rm_problem *p = rg_chain_problem(seed, 2 + (int)(seed % 10), 64 + 32 * (size_t)(seed % 7));
        brute b = brute_force(p);
        cr_assert_eq(b.family, b.any); /* on a chain every prefix boundary is one node */
        size_t got = ogc_peak(p, seed);
        cr_assert_eq(got, b.any, "chain seed %lu: ogc %zu, optimum %zu", (unsigned long)seed, got, b.any);
        rm_problem_free(p);
    }
}

Test(ogc, exact_over_its_family_on_small_dags)
{
    RM_SKIP_WHEN_SANITIZED();
    int graphs = 0, beyond_cuts = 0, any_better = 0;
    for (uint64_t seed = 1; seed <= 160; seed++) {
        rm_problem *p = small_dag(seed);
        rm_fwd_info fi;
        rm_err e = {0};
        cr_assert_eq(rm_fwd_info_init(&fi, p, &e), RM_OK);
        int branched = fi.ncuts < fi.b0;
        /* The best cut-point-only set, what ogc returned before. */
        uint8_t *pins = calloc((size_t)p->n, 1);
        size_t cuts_best = (size_t)-1;
        for (unsigned mask = 0; mask < (1u << fi.ncuts); mask++) {
            for (int k = 0; k < fi.ncuts; k++) pins[fi.cuts[k]] = (mask >> k) & 1u;
            size_t pk = peak_of_set(p, pins);
            if (pk < cuts_best) cuts_best = pk;
        }
        free(pins);
        rm_fwd_info_free(&fi);
        brute b = brute_force(p);
        size_t got = ogc_peak(p, seed);
        cr_assert_eq(got, b.family, "seed %lu: ogc %zu, best of its family %zu", (unsigned long)seed, got, b.family);
        cr_assert_geq(got, b.any);
        cr_assert_leq(got, cuts_best, "seed %lu", (unsigned long)seed);
        graphs += branched;
        beyond_cuts += got < cuts_best;
        any_better += b.any < got;
        rm_problem_free(p);
    }
    fprintf(stderr,
            "ogc: %d branched graphs; below the cut-point optimum on %d; some set outside the family lower on %d\n",
            graphs, beyond_cuts, any_better);
    cr_assert_geq(graphs, 60);
    cr_assert_gt(beyond_cuts, 0);
}

/* Under a budget ogc returns its one schedule (the lowest-peak one) when it
 * fits and RM_ERR_INFEASIBLE otherwise; the schedule is valid, within the
 * budget, and never above the cut-point answer (ap_sqrtn is one of those). */
Test(ogc, valid_and_within_budget)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        rg_options o = {2 + (int)(seed * 7 % 40), 0.1 + 0.1 * (double)(seed % 4), 0.1 * (double)(seed % 3),
                        (int)(seed % 5) * 3, 64 + 64 * (size_t)(seed % 16)};
        rm_problem *p = rg_training_problem(seed, &o);
        cr_assert_not_null(p);
        rm_schedule *s;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_ogc(&s, p, &e), RM_OK, "%s", e.msg);
        size_t best = peak_of(p, s, NULL), lb = rm_problem_peak_lower_bound(p);
        rm_schedule_free(s);
        cr_assert_geq(best, lb);
        cr_assert_eq(rm_strategy_ap_sqrtn(&s, p, &e), RM_OK, "%s", e.msg);
        cr_assert_leq(best, peak_of(p, s, NULL), "seed %lu", (unsigned long)seed);
        rm_schedule_free(s);
        size_t budgets[] = {best - 1, best, best + 16};
        for (size_t k = 0; k < sizeof budgets / sizeof budgets[0]; k++) {
            p->budget = p->fixed_bytes + budgets[k];
            int rc = rm_strategy_ogc(&s, p, &e);
            if (budgets[k] < best) {
                cr_assert_eq(rc, RM_ERR_INFEASIBLE, "seed %lu", (unsigned long)seed);
                cr_assert_null(s);
                cr_assert(strstr(e.msg, "ogc"), "%s", e.msg);
                continue;
            }
            cr_assert_eq(rc, RM_OK, "seed %lu: %s", (unsigned long)seed, e.msg);
            rm_sim_result r;
            cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
            cr_assert(rm_sim_fits(p, &r));
            cr_assert_eq(r.peak_bytes, best);
            rm_schedule_free(s);
        }
        rm_problem_free(p);
    }
}

/* A training graph whose node k + 1 reads k branches off the input (issue
 * 13: a DenseNet-like fan-in of 400 took 63 s, its cost growing as k^4). */
static rm_problem *fan_in(int k)
{
    int F = k + 2, n = 2 * F; /* forward, the loss, and a backward node per layer and the loss */
    rm_problem *p;
    rm_err e = {0};
    cr_assert_eq(rm_problem_create(&p, n, &e), RM_OK);
    int *deps = malloc(((size_t)k + 2) * sizeof *deps);
    for (int i = 0; i < n; i++) {
        rm_problem_node *nd = &p->nodes[i];
        int nd_deps = 0;
        nd->bytes = 64;
        nd->cost = i ? 1 : 0;
        nd->tag = i < F ? RM_TAG_FORWARD : i == F ? RM_TAG_LOSS : RM_TAG_BACKWARD;
        if (i >= 1 && i <= k) deps[nd_deps++] = 0; /* a branch */
        if (i == k + 1)                            /* the fan-in */
            for (int j = 1; j <= k; j++) deps[nd_deps++] = j;
        if (i == F) deps[nd_deps++] = k + 1;                                 /* the loss */
        if (i == F + 1) deps[nd_deps++] = F, deps[nd_deps++] = k + 1;        /* the fan-in's backward */
        if (i > F + 1) deps[nd_deps++] = F + 1, deps[nd_deps++] = i - F - 1; /* branch i - F - 1's */
        cr_assert_eq(rm_problem_set_deps(p, i, deps, nd_deps, &e), RM_OK, "%s", e.msg);
    }
    free(deps);
    cr_assert_eq(rm_problem_validate(p, &e), RM_OK, "%s", e.msg);
    return p;
}

/* The work the DP does is capped: positions are thinned until the batches
 * it simulates fit RM_OGC_MAX_WORK, and the answer stays valid. Without the
 * cap, the 403 positions of this graph prune nothing and need over 80,000
 * whole-problem simulations (a batch per residue class of each span). */
Test(ogc, wide_fan_in_work_is_capped)
{
    RM_SKIP_WHEN_SANITIZED();
    rm_problem *p = fan_in(400);
    rm_fwd_info fi;
    rm_err e = {0};
    cr_assert_eq(rm_fwd_info_init(&fi, p, &e), RM_OK);
    uint8_t *pins = malloc((size_t)p->n);
    size_t predicted;
    rm_ogc_stats st;
    cr_assert_eq(rm_ogc_plan(pins, &predicted, &st, p, &fi, &e), RM_OK, "%s", e.msg);
    double edges = 0;
    for (int i = 0; i < p->n; i++) edges += p->nodes[i].ndeps;
    cr_assert_leq(st.work, RM_OGC_MAX_WORK);
    for (int pass = 0; pass < 2; pass++)
        cr_assert_leq(st.simulations[pass] * (p->n + edges), RM_OGC_MAX_WORK, "pass %d: %d simulations", pass,
                      st.simulations[pass]);
    cr_assert(st.positions[1] >= 2 && st.positions[1] < 400, "%d positions", st.positions[1]);
    rm_schedule *s;
    cr_assert_eq(rm_strategy_ogc(&s, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(peak_of(p, s, NULL), peak_of_set(p, pins));
    rm_schedule_free(s);
    free(pins);
    rm_fwd_info_free(&fi);
    rm_problem_free(p);
}

/* Issue 13: 41 forward nodes of 2^59 bytes, with the loss and backward
 * nodes, overflowed a long long in ogc's segment sums (UBSan). Such a
 * problem is refused now (2^62 bytes in all, docs/problem-format.md); one
 * at the bound is solved, and the sanitizer suite (scripts/test) checks
 * that no sum on the way overflows. */
Test(ogc, bytes_at_the_2_62_bound)
{
    rm_problem *p = rg_checkmate_linear(41, 0, 16);
    cr_assert_not_null(p);
    rm_err e = {0};
    for (int i = 0; i < p->n; i++) p->nodes[i].bytes = (size_t)1 << 59;
    cr_assert_eq(rm_problem_validate(p, &e), RM_ERR_INVALID);
    cr_assert_str_eq(e.msg, "problem: the fixed bytes and the outputs up to node 8 (f8) add up to more than 2^62 bytes "
                            "(4 EiB), more than any device holds");
    for (int i = 0; i < p->n; i++) p->nodes[i].bytes = RM_PROBLEM_MAX_BYTES / (size_t)p->n;
    cr_assert_eq(rm_problem_validate(p, &e), RM_OK, "%s", e.msg);
    rm_schedule *s;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    size_t all = peak_of(p, s, NULL);
    rm_schedule_free(s);
    cr_assert_eq(rm_strategy_ogc(&s, p, &e), RM_OK, "%s", e.msg);
    size_t best = peak_of(p, s, NULL);
    rm_schedule_free(s);
    cr_assert_lt(best, all, "ogc %zu, checkpoint-all %zu", best, all);
    cr_assert_geq(best, rm_problem_peak_lower_bound(p));
    /* Within a budget of exactly that peak it fits; a byte less, it does not. */
    p->budget = best;
    cr_assert_eq(rm_strategy_ogc(&s, p, &e), RM_OK, "%s", e.msg);
    rm_schedule_free(s);
    p->budget = best - 1;
    cr_assert_eq(rm_strategy_ogc(&s, p, &e), RM_ERR_INFEASIBLE);
    rm_problem_free(p);
}
