/* The simulator, the operation sequence and checkpoint-all, on hand-built
 * graphs whose peaks and costs are worked out by hand in the comments, plus
 * the schedules the simulator must reject. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lp_round.h"
#include "random_graphs.h"
#include "rng.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"

/* Hand-built schedules are written as dense R and S, then converted. */
static rm_rs *identity_schedule(int n)
{
    rm_rs *s;
    rm_err e = {0};
    cr_assert_eq(rm_rs_create(&s, n, &e), RM_OK);
    for (int t = 0; t < n; t++) *rm_R(s, t, t) = 1;
    return s;
}

static int ops_rs(rm_op **ops, int *nops, const rm_problem *p, const rm_rs *d, rm_err *e)
{
    rm_schedule *s;
    int rc = rm_schedule_from_rs(&s, d, e);
    if (!rc) rc = rm_schedule_ops(ops, nops, p, s, e);
    rm_schedule_free(s);
    return rc;
}

/* diamond: a(10) -> b(20), c(30) -> d(40) */
static rm_problem *diamond(void)
{
    static const size_t bytes[] = {10, 20, 30, 40};
    static const double cost[] = {1, 2, 3, 4};
    static const char *const deps[] = {"", "0", "0", "1,2"};
    rm_problem *p = rg_problem_make(4, bytes, cost, deps);
    cr_assert_not_null(p);
    return p;
}

/* skip: a(10) -> b(20) -> c(30) -> d(5), and a -> d */
static rm_problem *skip(void)
{
    static const size_t bytes[] = {10, 20, 30, 5};
    static const double cost[] = {1, 2, 3, 4};
    static const char *const deps[] = {"", "0", "1", "0,2"};
    rm_problem *p = rg_problem_make(4, bytes, cost, deps);
    cr_assert_not_null(p);
    return p;
}

/* chain: a(100) -> b(1) -> c(100) -> d(1) -> e(100) */
static rm_problem *chain(void)
{
    static const size_t bytes[] = {100, 1, 100, 1, 100};
    static const char *const deps[] = {"", "0", "1", "2", "3"};
    rm_problem *p = rg_problem_make(5, bytes, NULL, deps);
    cr_assert_not_null(p);
    return p;
}

Test(simulate, checkpoint_all_diamond)
{
    rm_problem *p = diamond();
    rm_schedule *s;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    /* stage 3: b, c resident, d computed: 20 + 30 + 40 */
    cr_assert_eq(r.peak_bytes, 90);
    cr_assert_eq(r.peak_stage, 3);
    cr_assert_eq(r.peak_node, 3);
    cr_assert_float_eq(r.cost, 10.0, 1e-12);
    cr_assert_eq(r.recomputations, 0);
    cr_assert_eq(r.peak_bytes, rm_problem_peak_lower_bound(p));
    rm_schedule_free(s);
    rm_problem_free(p);
}

Test(simulate, diamond_with_recompute)
{
    rm_problem *p = diamond();
    rm_rs *s = identity_schedule(4);
    /* a is dropped after b and recomputed for c. */
    *rm_S(s, 1, 0) = 1;
    *rm_R(s, 2, 0) = 1;
    *rm_S(s, 2, 1) = 1;
    *rm_S(s, 3, 1) = 1;
    *rm_S(s, 3, 2) = 1;
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_simulate_rs(&r, p, s, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(r.peak_bytes, 90);
    cr_assert_float_eq(r.cost, 11.0, 1e-12);
    cr_assert_eq(r.recomputations, 1);
    rm_rs_free(s);
    rm_problem_free(p);
}

Test(simulate, skip_keep_vs_recompute)
{
    rm_problem *p = skip();
    rm_schedule *s;
    rm_err e = {0};
    rm_sim_result r;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    /* stage 2: a and b resident, c computed: 10 + 20 + 30 */
    cr_assert_eq(r.peak_bytes, 60);
    cr_assert_eq(r.peak_stage, 2);
    rm_schedule_free(s);

    /* Drop a after b, recompute it in stage 3: stage 2 peaks at b + c = 50,
     * stage 3 at c + a + d = 45. */
    rm_rs *d = identity_schedule(4);
    *rm_S(d, 1, 0) = 1;
    *rm_S(d, 2, 1) = 1;
    *rm_S(d, 3, 2) = 1;
    *rm_R(d, 3, 0) = 1;
    cr_assert_eq(rm_simulate_rs(&r, p, d, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(r.peak_bytes, 50);
    cr_assert_eq(r.recomputations, 1);
    cr_assert_float_eq(r.cost, 11.0, 1e-12);
    rm_rs_free(d);
    rm_problem_free(p);
}

Test(simulate, chain_recompute_from_checkpoint)
{
    rm_problem *p = chain();
    rm_sim_result r;
    rm_err e = {0};
    rm_schedule *s;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(r.peak_bytes, 101); /* a chain frees as it goes: 100 + 1 */
    rm_schedule_free(s);

    /* Keep only b (1 byte) after stage 3 and recompute c, d in stage 4.
     * Stage 3 holds b and c and computes d: 102, the peak. Stage 4 starts
     * with b (1), computes c (101), frees b, computes d (101), frees c,
     * computes e (101). */
    rm_rs *d = identity_schedule(5);
    *rm_S(d, 1, 0) = 1;
    *rm_S(d, 2, 1) = 1;
    *rm_S(d, 3, 1) = 1;
    *rm_S(d, 3, 2) = 1;
    *rm_S(d, 4, 1) = 1;
    *rm_R(d, 4, 2) = 1;
    *rm_R(d, 4, 3) = 1;
    cr_assert_eq(rm_simulate_rs(&r, p, d, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(r.recomputations, 2);
    cr_assert_eq(r.peak_bytes, 102);
    cr_assert_eq(r.peak_stage, 3);
    rm_rs_free(d);
    rm_problem_free(p);
}

Test(simulate, rejects_missing_dependency)
{
    rm_problem *p = skip();
    rm_rs *s = identity_schedule(4);
    *rm_S(s, 1, 0) = 1;
    *rm_S(s, 2, 1) = 1;
    *rm_S(s, 3, 2) = 1; /* a is needed by d in stage 3 but is gone */
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_simulate_rs(&r, p, s, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "stage 3") && strstr(e.msg, "node 3") && strstr(e.msg, "reads node 0"), "%s", e.msg);
    rm_rs_free(s);
    rm_problem_free(p);
}

Test(simulate, rejects_retaining_uncomputed_value)
{
    rm_problem *p = skip();
    rm_rs *s = identity_schedule(4);
    *rm_S(s, 1, 0) = 1;
    *rm_S(s, 2, 1) = 1;
    *rm_S(s, 3, 2) = 1;
    *rm_S(s, 3, 0) = 1; /* a was dropped at the end of stage 1 */
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_simulate_rs(&r, p, s, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "stage 3") && strstr(e.msg, "node 0") && strstr(e.msg, "S[t+1] <= S[t] + R[t]"), "%s",
              e.msg);
    rm_rs_free(s);
    rm_problem_free(p);
}

Test(simulate, rejects_missing_diagonal)
{
    rm_problem *p = diamond();
    rm_schedule *s;
    rm_rs *d;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK);
    cr_assert_eq(rm_rs_from_schedule(&d, s, &e), RM_OK);
    *rm_R(d, 2, 2) = 0;
    rm_sim_result r;
    cr_assert_eq(rm_simulate_rs(&r, p, d, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "stage 2") && strstr(e.msg, "R[t][t]"), "%s", e.msg);
    rm_rs_free(d);
    rm_schedule_free(s);
    rm_problem_free(p);
}

Test(simulate, rejects_off_triangle_and_bad_entries)
{
    rm_problem *p = diamond();
    rm_err e = {0};
    rm_sim_result r;
    rm_rs *s = identity_schedule(4);
    *rm_R(s, 1, 2) = 1;
    cr_assert_eq(rm_simulate_rs(&r, p, s, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "stage 1") && strstr(e.msg, "node 2"), "%s", e.msg);
    rm_rs_free(s);
    s = identity_schedule(4);
    *rm_S(s, 0, 0) = 1;
    cr_assert_eq(rm_simulate_rs(&r, p, s, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "stage 0"), "%s", e.msg);
    rm_rs_free(s);
    /* The builder refuses entries outside the stages. */
    rm_schedule_builder b;
    rm_schedule *sp = NULL;
    cr_assert_eq(rm_builder_init(&b, 4, &e), RM_OK);
    rm_builder_compute(&b, 0, 0);
    rm_builder_retain(&b, 0, 1, 4);
    cr_assert_eq(rm_builder_finish(&sp, &b, &e), RM_ERR_INVALID);
    cr_assert_null(sp);
    cr_assert(strstr(e.msg, "outside the 4 stages"), "%s", e.msg);
    s = identity_schedule(3);
    cr_assert_eq(rm_simulate_rs(&r, p, s, &e), RM_ERR_INVALID);
    rm_rs_free(s);
    rm_problem_free(p);
}

static void expect_ops(const rm_op *ops, int nops, const char *want)
{
    char got[512] = "", item[32];
    for (int o = 0; o < nops; o++) {
        snprintf(item, sizeof item, "%s%c%d@%d", o ? " " : "", ops[o].kind == RM_OP_COMPUTE ? 'C' : 'F', ops[o].node,
                 ops[o].stage);
        strncat(got, item, sizeof got - strlen(got) - 1);
    }
    cr_assert_str_eq(got, want);
}

Test(simulate, ops_free_right_after_last_use)
{
    rm_problem *p = diamond();
    rm_schedule *s;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK);
    rm_op *ops;
    int nops;
    cr_assert_eq(rm_schedule_ops(&ops, &nops, p, s, &e), RM_OK, "%s", e.msg);
    /* a dies after c (its last reader); b, c after d; d at the very end. */
    expect_ops(ops, nops, "C0@0 C1@1 C2@2 F0@2 C3@3 F1@3 F2@3 F3@3");
    free(ops);
    rm_schedule_free(s);
    rm_problem_free(p);
}

Test(simulate, ops_stage_start_frees)
{
    rm_problem *p = skip();
    rm_rs *s = identity_schedule(4);
    rm_err e = {0};
    /* a retained into stage 2, which does not read it and does not keep it:
     * freed at the start of stage 2. Stage 3 recomputes a. */
    *rm_S(s, 1, 0) = 1;
    *rm_S(s, 2, 0) = 1;
    *rm_S(s, 2, 1) = 1;
    *rm_S(s, 3, 2) = 1;
    *rm_R(s, 3, 0) = 1;
    rm_op *ops;
    int nops;
    cr_assert_eq(ops_rs(&ops, &nops, p, s, &e), RM_OK, "%s", e.msg);
    expect_ops(ops, nops, "C0@0 C1@1 F0@2 C2@2 F1@2 C0@3 C3@3 F0@3 F2@3 F3@3");
    free(ops);
    rm_sim_result r;
    cr_assert_eq(rm_simulate_rs(&r, p, s, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(r.peak_bytes, 50);

    /* Retained and recomputed in the same stage: the old copy goes first. */
    *rm_S(s, 3, 0) = 0;
    *rm_S(s, 2, 0) = 1;
    *rm_S(s, 3, 0) = 1;
    *rm_R(s, 2, 0) = 0;
    cr_assert_eq(ops_rs(&ops, &nops, p, s, &e), RM_OK, "%s", e.msg);
    expect_ops(ops, nops, "C0@0 C1@1 C2@2 F1@2 F0@3 C0@3 C3@3 F0@3 F2@3 F3@3");
    free(ops);
    rm_rs_free(s);
    rm_problem_free(p);
}

/* The liveness peak without recomputation, computed independently: at stage
 * t, node t plus every earlier value still read at or after t. */
static size_t liveness_peak(const rm_problem *p)
{
    int *last = malloc((size_t)p->n * sizeof *last);
    for (int i = 0; i < p->n; i++) last[i] = i;
    for (int k = 0; k < p->n; k++)
        for (int d = 0; d < p->nodes[k].ndeps; d++)
            if (last[p->nodes[k].deps[d]] < k) last[p->nodes[k].deps[d]] = k;
    size_t peak = 0;
    for (int t = 0; t < p->n; t++) {
        size_t m = p->nodes[t].bytes;
        for (int i = 0; i < t; i++)
            if (last[i] >= t) m += p->nodes[i].bytes;
        if (m > peak) peak = m;
    }
    free(last);
    return peak;
}

Test(simulate, checkpoint_all_matches_liveness_on_random_graphs)
{
    for (uint64_t seed = 1; seed <= 40; seed++) {
        rg_options o = {3 + (int)(seed % 30), 0.3, 0.2, 0, 4096};
        rm_problem *p = rg_training_problem(seed, &o);
        cr_assert_not_null(p);
        rm_schedule *s;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
        rm_sim_result r;
        cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(r.peak_bytes, liveness_peak(p), "seed %lu", (unsigned long)seed);
        cr_assert_eq(r.recomputations, 0);
        double total = 0;
        for (int i = 0; i < p->n; i++) total += p->nodes[i].cost;
        cr_assert_float_eq(r.cost, total, 1e-9);
        rm_schedule_free(s);
        rm_problem_free(p);
    }
}

Test(simulate, checkpoint_all_respects_budget)
{
    rm_problem *p = diamond();
    rm_schedule *s;
    rm_err e = {0};
    p->fixed_bytes = 100;
    p->budget = 189;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_ERR_INFEASIBLE);
    cr_assert_null(s);
    p->budget = 190;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    rm_schedule_free(s);
    cr_assert_eq(rm_problem_activation_budget(p), 90);
    p->budget = 0;
    cr_assert_eq(rm_problem_activation_budget(p), SIZE_MAX);
    rm_problem_free(p);
}

Test(simulate, timeline_matches_peak)
{
    rm_problem *p = skip();
    rm_schedule *s;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK);
    rm_op *ops;
    int nops;
    cr_assert_eq(rm_schedule_ops(&ops, &nops, p, s, &e), RM_OK);
    size_t *mem = malloc((size_t)nops * sizeof *mem);
    rm_sim_result r;
    cr_assert_eq(rm_simulate_ops(&r, mem, p, s, ops, nops, &e), RM_OK, "%s", e.msg);
    size_t mx = 0;
    for (int o = 0; o < nops; o++)
        if (mem[o] > mx) mx = mem[o];
    cr_assert_eq(mx, r.peak_bytes);
    cr_assert_eq(mem[nops - 1], 0);
    free(mem);
    free(ops);
    rm_schedule_free(s);
    rm_problem_free(p);
}

Test(simulate, problem_from_graph)
{
    rm_graph g;
    memset(&g, 0, sizeof g);
    rm_err e = {0};
    rm_graph_node nd;
    memset(&nd, 0, sizeof nd);
    snprintf(nd.name, sizeof nd.name, "x");
    nd.bytes = 64;
    nd.flops = 0;
    cr_assert_eq(rm_graph_add_node(&g, &nd, NULL, NULL, 0, &e), 0);
    snprintf(nd.name, sizeof nd.name, "add");
    nd.flops = 16;
    int deps[] = {0, 0};
    cr_assert_eq(rm_graph_add_node(&g, &nd, deps, NULL, 2, &e), 1);
    snprintf(nd.name, sizeof nd.name, "add.grad");
    nd.tag = RM_TAG_BACKWARD;
    nd.flops = 32;
    int deps2[] = {1, 0, 1};
    cr_assert_eq(rm_graph_add_node(&g, &nd, deps2, NULL, 3, &e), 2);
    rm_problem *p;
    cr_assert_eq(rm_problem_from_graph(&p, &g, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(p->n, 3);
    cr_assert_eq(p->nodes[1].ndeps, 1);
    cr_assert_eq(p->nodes[2].ndeps, 2);
    cr_assert_eq(p->nodes[2].deps[0], 0);
    cr_assert_eq(p->nodes[2].deps[1], 1);
    cr_assert_eq(p->nodes[2].tag, RM_TAG_BACKWARD);
    cr_assert_float_eq(p->nodes[2].cost, 32.0, 0);
    cr_assert_str_eq(p->nodes[1].name, "add");
    cr_assert_eq(p->fixed_bytes, 0); /* a graph has none: train/footprint.h sets them */
    cr_assert_eq(p->budget, 0);
    cr_assert_eq(rm_problem_peak_lower_bound(p), 192);
    rm_problem_free(p);
    g.nodes[1].deps[0] = 1; /* a self reference */
    cr_assert_eq(rm_problem_from_graph(&p, &g, &e), RM_ERR_INVALID);
    cr_assert_null(p);
    rm_graph_free(&g);
}

/* ---- the sparse operation sequence against the rules, written densely ---- */

/* docs/schedule-format.md's rules read literally off dense R and S: at the
 * start of stage t free each v in S[t] that the stage recomputes, or neither
 * reads nor retains into t+1; then per computed k in index order, compute k
 * and free each value (ascending) whose last reader in the stage is k (k
 * itself when nothing later reads it) and that S[t+1] does not retain. */
static int dense_ops(rm_op *ops, const rm_problem *p, const rm_rs *d)
{
    int n = p->n, m = 0;
    int *last = malloc((size_t)n * sizeof *last);
    for (int t = 0; t < n; t++) {
        for (int v = 0; v < n; v++) last[v] = -1;
        for (int k = 0; k <= t; k++) {
            if (!rm_R_at(d, t, k)) continue;
            last[k] = k;
            for (int x = 0; x < p->nodes[k].ndeps; x++) last[p->nodes[k].deps[x]] = k;
        }
        int next = t + 1 < n;
        for (int v = 0; v < t; v++)
            if (rm_S_at(d, t, v) && (rm_R_at(d, t, v) || (last[v] < 0 && !(next && rm_S_at(d, t + 1, v)))))
                ops[m++] = (rm_op){RM_OP_FREE, v, t};
        for (int k = 0; k <= t; k++) {
            if (!rm_R_at(d, t, k)) continue;
            ops[m++] = (rm_op){RM_OP_COMPUTE, k, t};
            for (int v = 0; v <= t; v++)
                if (last[v] == k && !(next && rm_S_at(d, t + 1, v))) ops[m++] = (rm_op){RM_OP_FREE, v, t};
        }
    }
    free(last);
    return m;
}

/* Random valid schedules (random S, then the cheapest R for it) on random
 * training graphs: rm_schedule_ops, which sweeps only the runs that start
 * and end at each stage, gives exactly the literal reading's sequence. */
Test(simulate, sparse_ops_equal_the_dense_rules)
{
    int compared = 0;
    for (uint64_t seed = 1; seed <= 60; seed++) {
        rg_options o = {4 + (int)(seed % 14), 0.3, 0.2, 0, 4096};
        rm_problem *p = rg_training_problem(seed, &o);
        cr_assert_not_null(p);
        rm_rng r = rm_rng_make(seed);
        rm_rs *d;
        rm_err e = {0};
        cr_assert_eq(rm_rs_create(&d, p->n, &e), RM_OK);
        double dens = 0.1 + 0.8 * rm_rng_uniform(&r);
        for (int t = 1; t < p->n; t++)
            for (int i = 0; i < t; i++) *rm_S(d, t, i) = rm_rng_uniform(&r) < dens;
        cr_assert_eq(rm_milp_cheapest_R(d, p, &e), RM_OK, "%s", e.msg);
        rm_schedule *s;
        cr_assert_eq(rm_schedule_from_rs(&s, d, &e), RM_OK, "%s", e.msg);
        rm_op *ops, *want = malloc((size_t)p->n * (size_t)p->n * 3 * sizeof *want);
        int nops;
        cr_assert_eq(rm_schedule_ops(&ops, &nops, p, s, &e), RM_OK, "seed %d: %s", (int)seed, e.msg);
        int nwant = dense_ops(want, p, d);
        cr_assert_eq(nops, nwant, "seed %d", (int)seed);
        for (int k = 0; k < nops; k++)
            cr_assert(ops[k].kind == want[k].kind && ops[k].node == want[k].node && ops[k].stage == want[k].stage,
                      "seed %d, op %d", (int)seed, k);
        /* And the dense form survives the round trip. */
        rm_rs *back;
        cr_assert_eq(rm_rs_from_schedule(&back, s, &e), RM_OK);
        size_t nn = (size_t)p->n * (size_t)p->n;
        cr_assert(!memcmp(back->R, d->R, nn) && !memcmp(back->S, d->S, nn), "seed %d", (int)seed);
        compared++;
        rm_rs_free(back);
        free(ops);
        free(want);
        rm_schedule_free(s);
        rm_rs_free(d);
        rm_problem_free(p);
    }
    cr_assert_eq(compared, 60);
}

/* Issue 13: R and S were dense, so a 100,000-node chain took 20 GB for
 * checkpoint-all and a 20,000-node chain's schedule file 401 MB of text.
 * Sparse, the schedule holds one compute per node and one run per value, and
 * its file a line each (40,001 nodes here: dense, 3.2 GB and 800 MB). */
Test(simulate, forty_thousand_node_chain_stays_small)
{
    rm_problem *p = rg_chain_problem(3, 20000, 4096);
    cr_assert_not_null(p);
    rm_schedule *s;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_schedule_ncomputes(s), p->n);
    cr_assert_leq(s->nret, p->n);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    char path[] = "/tmp/remat_chain_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    cr_assert_eq(rm_schedule_write(s, p, path, &e), RM_OK, "%s", e.msg);
    FILE *f = fopen(path, "r");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fclose(f);
    cr_assert_lt(size, 80L * p->n, "%ld bytes for %d nodes", size, p->n); /* the ops list: 3 lines a node */
    rm_schedule *back;
    cr_assert_eq(rm_schedule_read(&back, p, path, &e), RM_OK, "%s", e.msg);
    cr_assert(rm_schedule_equal(s, back));
    rm_schedule_free(back);
    unlink(path);
    rm_schedule_free(s);
    rm_problem_free(p);
}
