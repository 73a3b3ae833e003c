/* Tests of the relaxed LP bound (lp_bound.h): never above the exact optimum
 * (exact_dp.c) on small random DAGs and training graphs at every budget from
 * the trivial peak to checkpoint-all's, never below the trivial bound, never
 * above any strategy's cost on a mid-sized graph; trivial when unlimited,
 * infeasible below the trivial peak. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "exact_dp.h"
#include "lp_bound.h"
#include "random_graphs.h"
#include "rng.h"
#include "sanitized.h"
#include "simulate.h"
#include "strategy.h"

/* Activation budgets: `steps` points from the trivial peak to checkpoint-all's. */
static int budgets_between(size_t *b, const rm_problem *p, int steps)
{
    rm_schedule *all = NULL;
    rm_sim_result r;
    rm_err e = {0};
    rm_problem q = *p;
    q.budget = 0;
    cr_assert_eq(rm_checkpoint_all_fit(&all, &r, &q, &e), RM_OK, "%s", e.msg);
    rm_schedule_free(all);
    size_t lo = rm_problem_peak_lower_bound(p), hi = r.peak_bytes;
    int nb = 0;
    for (int k = 0; k < steps; k++) {
        size_t v = lo + (hi - lo) * (size_t)k / (size_t)(steps - 1);
        if (nb == 0 || b[nb - 1] != v) b[nb++] = v;
    }
    return nb;
}

/* A DAG unlike a training graph: node i reads i-1 and, by chance, up to two
 * random earlier nodes; bytes 16..128, costs 1..6. */
static rm_problem *wild_dag(uint64_t seed, int n)
{
    rm_problem *p;
    rm_err e = {0};
    rm_rng r = rm_rng_make(seed * 104729 + 3);
    cr_assert_eq(rm_problem_create(&p, n, &e), RM_OK);
    for (int i = 0; i < n; i++) {
        p->nodes[i].bytes = 16 * (1 + rm_rng_next(&r) % 8);
        p->nodes[i].cost = (double)(1 + rm_rng_next(&r) % 6);
        int deps[3], nd = 0;
        if (i > 0) deps[nd++] = i - 1;
        for (int k = 0; k < 2 && i > 1; k++) {
            int j = (int)(rm_rng_next(&r) % (uint64_t)(i - 1));
            if (rm_rng_next(&r) % 2 && (nd < 2 || deps[1] != j)) deps[nd++] = j;
        }
        cr_assert_eq(rm_problem_set_deps(p, i, deps, nd, &e), RM_OK, "%s", e.msg);
    }
    p->fixed_bytes = 500;
    return p;
}

/* At every budget of the ladder where the DP finds a schedule, for the
 * default blocks, one block per stage and random blocks: trivial <= bound
 * <= the DP's optimum. Returns how many budgets had a
 * bound above the trivial one. */
static int check_against_dp(rm_problem *p, const char *what)
{
    size_t budgets[8];
    double opt[8];
    int nb = budgets_between(budgets, p, 7), raised = 0;
    /* Levels: rm_lp_bound's own blocks, one block per stage, random blocks. */
    int ends[2][EXACT_DP_MAX_N], ne[2] = {0, 0};
    rm_rng rng = rm_rng_make((uint64_t)p->n * 31 + p->nodes[p->n - 1].bytes);
    for (int t = 0; t < p->n; t++) {
        ends[0][ne[0]++] = t;
        if (rm_rng_next(&rng) % 3 == 0) ends[1][ne[1]++] = t;
    }
    cr_assert_eq(exact_dp_solve(opt, p, budgets, nb, 0), 0);
    for (int b = 0; b < nb; b++) {
        p->budget = p->fixed_bytes + budgets[b];
        for (int level = 0; level < 3; level++) {
            rm_lp_bound_result r;
            rm_err e = {0};
            int rc =
                level == 0 ? rm_lp_bound(&r, p, 0, &e) : rm_lp_bound_blocks(&r, p, ends[level - 1], ne[level - 1], &e);
            if (opt[b] < 0) { /* a relaxation may still be feasible there */
                cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "%s at %zu: %s", what, budgets[b], e.msg);
                continue;
            }
            cr_assert_eq(rc, RM_OK, "%s at %zu: %s", what, budgets[b], e.msg);
            cr_assert(r.bound >= r.trivial, "%s at %zu: bound %g below trivial %g", what, budgets[b], r.bound,
                      r.trivial);
            cr_assert(r.bound <= opt[b] * (1 + 1e-9), "%s at %zu, level %d: bound %.9g above the optimum %.9g", what,
                      budgets[b], level, r.bound, opt[b]);
            raised += r.bound > r.trivial;
        }
    }
    return raised;
}

static rm_problem *dag_of(uint64_t seed)
{
    return wild_dag(seed, 8 + (int)(seed % 5));
}

/* A training graph (every fifth a chain), or NULL when too large for the DP. */
static rm_problem *training_of(uint64_t seed)
{
    rg_options o = {3 + (int)(seed % 4), 0.4, 0.3, 0, 256};
    rm_problem *p = seed % 5 == 0 ? rg_chain_problem(seed, 6, 256) : rg_training_problem(seed, &o);
    cr_assert_not_null(p);
    if (p->n <= EXACT_DP_MAX_N) return p;
    rm_problem_free(p);
    return NULL;
}

/* check_against_dp on 30 seeds of a family; the bound must rise somewhere. */
static void check_family(rm_problem *(*make)(uint64_t), const char *kind)
{
    int raised = 0;
    for (uint64_t seed = 1; seed <= 30; seed++) {
        rm_problem *p = make(seed);
        if (!p) continue;
        char what[64];
        snprintf(what, sizeof what, "%s seed %llu", kind, (unsigned long long)seed);
        raised += check_against_dp(p, what);
        rm_problem_free(p);
    }
    cr_assert(raised > 0, "%s: the bound never rose above the trivial one", kind);
}

Test(lp_bound, below_the_optimum_on_random_dags)
{
    check_family(dag_of, "dag");
}

Test(lp_bound, below_the_optimum_on_training_graphs)
{
    RM_SKIP_WHEN_SANITIZED();
    check_family(training_of, "training graph");
}

/* No strategy, baseline or solver, is cheaper than the bound. */
Test(lp_bound, below_every_strategy_on_a_mid_sized_graph)
{
    rg_options o = {30, 0.3, 0.2, 0, 4096};
    rm_problem *p = rg_training_problem(9, &o);
    cr_assert_not_null(p);
    size_t budgets[4];
    int nb = budgets_between(budgets, p, 4), count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    for (int b = 1; b < nb; b++) {
        p->budget = p->fixed_bytes + budgets[b];
        rm_lp_bound_result r;
        rm_err e = {0};
        cr_assert_eq(rm_lp_bound(&r, p, 0, &e), RM_OK, "%s", e.msg);
        for (int k = 0; k < count; k++) {
            rm_schedule *s = NULL;
            rm_strategy_stats st;
            if (rm_strategy_run(&s, &st, &list[k], p, NULL, &e) != RM_OK) continue;
            cr_assert(r.bound <= st.sim.cost * (1 + 1e-9), "%s at %zu: cost %.9g below the bound %.9g", list[k].name,
                      budgets[b], st.sim.cost, r.bound);
            rm_schedule_free(s);
        }
    }
    rm_problem_free(p);
}

Test(lp_bound, trivial_when_unlimited_and_infeasible_below_the_trivial_peak)
{
    rg_options o = {5, 0.4, 0.3, 0, 256};
    rm_problem *p = rg_training_problem(4, &o);
    cr_assert_not_null(p);
    rm_lp_bound_result r;
    rm_err e = {0};
    p->budget = 0;
    cr_assert_eq(rm_lp_bound(&r, p, 0, &e), RM_OK, "%s", e.msg);
    cr_assert(!r.solved && r.bound == r.trivial);
    p->budget = p->fixed_bytes + rm_problem_peak_lower_bound(p) - 1;
    cr_assert_eq(rm_lp_bound(&r, p, 0, &e), RM_ERR_INFEASIBLE);
    rm_problem_free(p);
}
