/* The max-batch search (scheduler/maxbatch.h): the bisection finds the
 * exact boundary of any monotone predicate within its probe budget and
 * never probes at or above the known-infeasible end; on a non-monotone one
 * it returns a verified local boundary; on a tiny model checkpoint-all's
 * max batch is exactly the largest batch whose no-remat peak fits, computed
 * directly, and no strategy exceeds the trivial-bound ceiling. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "builder.h"
#include "maxbatch.h"
#include "simulate.h"
#include "trace.h"

#define TINY REMAT_SOURCE_DIR "/models/vgg-tiny.cfg"

typedef struct pred {
    int boundary; /* monotone: feasible iff batch <= boundary */
    int hi;       /* no probe may reach it */
    int probes;
    const int *set; /* non-monotone: feasible iff set[batch] (when not NULL) */
    int set_len;
    int fail_at; /* an error at this batch (0: never) */
    int lo;      /* known to fit: no probe at or below it */
    int fails;   /* probes that did not fit */
} pred;

static int feasible(int *ok, void *ctx, int batch, rm_err *e)
{
    pred *p = ctx;
    cr_assert_geq(batch, 1);
    cr_assert_gt(batch, p->lo, "probed %d at or below the known-feasible %d", batch, p->lo);
    cr_assert_lt(batch, p->hi, "probed %d at or above the known-infeasible %d", batch, p->hi);
    p->probes++;
    if (batch == p->fail_at) return rm_errorf(e, RM_ERR_SOLVER, "boom at %d", batch);
    *ok = p->set ? (batch < p->set_len && p->set[batch]) : batch <= p->boundary;
    p->fails += !*ok;
    return RM_OK;
}

/* From a batch known to fit (a heuristic's answer), the search gallops up:
 * exact, never at or below the known batch, and a boundary just above it
 * costs one or two probes. */
Test(cli_maxbatch_lib, galloping_from_a_known_batch_finds_the_exact_boundary)
{
    const int los[] = {1, 5, 100, 393, 1000};
    const int his[] = {2, 7, 401, 1313, 1 << 20};
    for (size_t a = 0; a < sizeof los / sizeof los[0]; a++)
        for (size_t b = 0; b < sizeof his / sizeof his[0]; b++) {
            int lo = los[a], hi = his[b];
            if (hi <= lo) continue;
            int limit = 2 * (int)ceil(log2((double)(hi - lo) + 1)) + 2;
            for (int k = lo; k < hi && k <= lo + 300; k++) {
                pred p = {.boundary = k, .hi = hi, .lo = lo};
                int best = -1, probes = -1;
                rm_err e = {RM_OK, ""};
                cr_assert_eq(rm_maxbatch_bisect(&best, &probes, feasible, &p, lo, hi, &e), RM_OK, "%s", e.msg);
                cr_assert_eq(best, k, "(%d, %d) boundary %d: found %d", lo, hi, k, best);
                cr_assert_leq(probes, limit, "(%d, %d) boundary %d: %d probes", lo, hi, k, probes);
                if (k == lo) cr_assert_eq(probes, hi > lo + 1, "a boundary at the known batch costs one probe");
            }
        }
    pred p = {.boundary = 9, .hi = 10, .lo = 9};
    int best = -1;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_maxbatch_bisect(&best, NULL, feasible, &p, 9, 9, &e), RM_ERR_INVALID);
}

/* The solvers' search: exact, never at or below the known batch, at most
 * log2(hi - lo) + 1 failing probes (one when the boundary is lo itself),
 * and at most (log2(hi - lo) + 1)^2 in all. */
Test(cli_maxbatch_lib, restarting_gallop_finds_the_boundary_with_few_failures)
{
    const int los[] = {0, 1, 393, 1240};
    const int his[] = {2, 9, 401, 1313, 1 << 20};
    for (size_t a = 0; a < sizeof los / sizeof los[0]; a++)
        for (size_t b = 0; b < sizeof his / sizeof his[0]; b++) {
            int lo = los[a], hi = his[b];
            if (hi <= lo) continue;
            int lg = (int)ceil(log2((double)(hi - lo))) + 1;
            for (int k = lo; k < hi && k <= lo + 300; k++) {
                pred p = {.boundary = k, .hi = hi, .lo = lo};
                int best = -1, probes = -1;
                rm_err e = {RM_OK, ""};
                cr_assert_eq(rm_maxbatch_gallop(&best, &probes, feasible, &p, lo, hi, &e), RM_OK, "%s", e.msg);
                cr_assert_eq(best, k, "(%d, %d) boundary %d: found %d", lo, hi, k, best);
                cr_assert_eq(probes, p.probes);
                cr_assert_leq(p.fails, lg, "(%d, %d) boundary %d: %d failing probes", lo, hi, k, p.fails);
                cr_assert_leq(probes, lg * lg, "(%d, %d) boundary %d: %d probes", lo, hi, k, probes);
                if (k == lo) cr_assert_eq(probes, hi > lo + 1, "a boundary at the known batch costs one probe");
            }
        }
    /* Against bisection on MobileNet's shape (known 1240, frontier 1368,
     * bound 2625): bisection fails more often. */
    pred g = {.boundary = 1368, .hi = 2625, .lo = 1240}, s = g;
    int best;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_maxbatch_gallop(&best, NULL, feasible, &g, 1240, 2625, &e), RM_OK);
    cr_assert_eq(rm_maxbatch_bisect(&best, NULL, feasible, &s, 1240, 2625, &e), RM_OK);
    cr_assert_lt(g.fails, s.fails, "gallop %d failures, bisection %d", g.fails, s.fails);
    pred p = {.boundary = 50, .hi = 1001, .fail_at = 64};
    cr_assert_eq(rm_maxbatch_gallop(&best, NULL, feasible, &p, 0, 1001, &e), RM_ERR_SOLVER);
    cr_assert_eq(rm_maxbatch_gallop(&best, NULL, feasible, &p, 5, 5, &e), RM_ERR_INVALID);
}

Test(cli_maxbatch_lib, bisection_finds_the_exact_boundary)
{
    const int caps[] = {1, 2, 3, 7, 64, 100, 1000, 1 << 20};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        int cap = caps[c];
        int limit = 2 * (int)ceil(log2((double)cap + 1)) + 2;
        for (int k = 0; k <= cap && k <= 300; k++) {
            pred p = {.boundary = k, .hi = cap + 1};
            int best = -1, probes = -1;
            rm_err e = {RM_OK, ""};
            cr_assert_eq(rm_maxbatch_bisect(&best, &probes, feasible, &p, 0, cap + 1, &e), RM_OK, "%s", e.msg);
            cr_assert_eq(best, k, "cap %d boundary %d: found %d", cap, k, best);
            cr_assert_eq(probes, p.probes);
            cr_assert_leq(probes, limit, "cap %d boundary %d: %d probes", cap, k, probes);
        }
        /* The far end, and near it. */
        for (int k = cap; k >= 0 && k >= cap - 3; k--) {
            pred p = {.boundary = k, .hi = cap + 1};
            int best = -1;
            rm_err e = {RM_OK, ""};
            cr_assert_eq(rm_maxbatch_bisect(&best, NULL, feasible, &p, 0, cap + 1, &e), RM_OK, "%s", e.msg);
            cr_assert_eq(best, k, "cap %d boundary %d: found %d", cap, k, best);
        }
    }
}

Test(cli_maxbatch_lib, non_monotone_gives_a_verified_local_boundary)
{
    /* Fits at 1..10 and 13..40: a heuristic that finds a better checkpoint
     * set at a larger batch. */
    int set[64] = {0};
    for (int b = 1; b <= 10; b++) set[b] = 1;
    for (int b = 13; b <= 40; b++) set[b] = 1;
    pred p = {.hi = 64, .set = set, .set_len = 64};
    int best = -1;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_maxbatch_bisect(&best, NULL, feasible, &p, 0, 64, &e), RM_OK);
    cr_assert(set[best], "%d does not fit", best);
    cr_assert(!set[best + 1], "%d + 1 fits: not a boundary", best);
}

Test(cli_maxbatch_lib, errors_abort_the_search)
{
    pred p = {.boundary = 50, .hi = 1001, .fail_at = 64};
    int best = -1;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_maxbatch_bisect(&best, NULL, feasible, &p, 0, 1001, &e), RM_ERR_SOLVER);
    cr_assert(strstr(e.msg, "boom at 64"));
    cr_assert_eq(rm_maxbatch_bisect(&best, NULL, feasible, &p, 0, 0, &e), RM_ERR_INVALID);
}

static int build(rm_problem **out, void *ctx, int batch, rm_err *e)
{
    rm_graph g;
    int rc = rm_model_trace(&g, ctx, batch, e);
    if (rc) return rc;
    rc = rm_problem_from_graph(out, &g, e);
    rm_graph_free(&g);
    return rc;
}

/* fixed + checkpoint-all's activation peak at a batch. */
static size_t noremat_total(rm_model *m, int batch)
{
    rm_problem *p;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(build(&p, m, batch, &e), RM_OK, "%s", e.msg);
    rm_schedule *s;
    rm_sim_result r;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    size_t total = p->fixed_bytes + r.peak_bytes;
    rm_schedule_free(s);
    rm_problem_free(p);
    return total;
}

/* vgg-tiny's problem, or above a batch an error as building it gives. */
typedef struct sized_build {
    rm_model *m;
    int largest; /* batches above it fail to build */
    rm_code code;
} sized_build;

static int build_up_to(rm_problem **out, void *ctx, int batch, rm_err *e)
{
    sized_build *b = ctx;
    if (batch > b->largest) return rm_errorf(e, b->code, "batch %d makes tensors too large to address", batch);
    return build(out, b->m, batch, e);
}

/* Issue 13: a budget of 9e18 on a huge model ended the whole search with
 * "too large to address" from the first probe above the model's limit. A
 * batch that cannot be built where a smaller one was is too large for any
 * budget: it does not fit, and the bound says why. Batch 1 failing, or
 * memory running out, is still an error. */
Test(cli_maxbatch_lib, a_batch_too_large_to_build_does_not_fit)
{
    rm_err e = {RM_OK, ""};
    sized_build b = {NULL, 37, RM_ERR_INVALID};
    cr_assert_eq(rm_model_load(&b.m, TINY, &e), RM_OK, "%s", e.msg);
    int bound = -1;
    char why[RM_ERR_MSG_LEN];
    size_t huge = RM_PROBLEM_MAX_BYTES;
    cr_assert_eq(rm_maxbatch_bound_why(&bound, why, sizeof why, build_up_to, &b, huge, 1 << 20, &e), RM_OK, "%s",
                 e.msg);
    cr_assert_eq(bound, 37);
    cr_assert_str_eq(why, "batch 38 makes tensors too large to address");
    /* A strategy's search stops at that bound, the largest batch that works. */
    rm_maxbatch_options o;
    memset(&o, 0, sizeof o);
    o.budget = huge;
    o.max_batch = 1 << 20;
    rm_maxbatch_result r;
    cr_assert_eq(rm_maxbatch_search(&r, rm_strategy_find("chen_greedy"), build_up_to, &b, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(r.max_batch, 37);
    cr_assert_eq(r.bound_batch, 37);
    rm_schedule_free(r.schedule);
    /* Where the budget ends the range first, no reason is given. */
    size_t at9 = noremat_total(b.m, 9);
    cr_assert_eq(rm_maxbatch_bound_why(&bound, why, sizeof why, build_up_to, &b, at9, 1 << 20, &e), RM_OK);
    cr_assert_geq(bound, 9);
    cr_assert_lt(bound, 37);
    cr_assert_str_eq(why, "");
    /* Batch 1 too large, or out of memory, is an error. */
    b.largest = 0;
    cr_assert_eq(rm_maxbatch_bound(&bound, build_up_to, &b, huge, 1 << 20, &e), RM_ERR_INVALID);
    cr_assert_str_eq(e.msg, "batch 1 makes tensors too large to address");
    b.largest = 37, b.code = RM_ERR_NOMEM;
    cr_assert_eq(rm_maxbatch_bound(&bound, build_up_to, &b, huge, 1 << 20, &e), RM_ERR_NOMEM);
    rm_model_free(b.m);
}

/* A search's answer: its schedule, simulated on the problem at its batch,
 * fits the budget at the cost and peak the result reports. */
static void check_answer(rm_model *m, const rm_maxbatch_result *r, size_t budget)
{
    if (r->max_batch == 0) {
        cr_assert_null(r->schedule);
        return;
    }
    rm_problem *p;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(build(&p, m, r->max_batch, &e), RM_OK, "%s", e.msg);
    p->budget = budget;
    cr_assert_not_null(r->schedule);
    rm_sim_result s;
    cr_assert_eq(rm_simulate(&s, p, r->schedule, &e), RM_OK, "%s", e.msg);
    cr_assert(rm_sim_fits(p, &s), "batch %d: the answer's schedule does not fit", r->max_batch);
    cr_assert_eq(s.cost, r->cost);
    cr_assert_eq(s.peak_bytes, r->peak_bytes);
    rm_problem_free(p);
}

/* With an overhead cap every answer's cost stays within it at its batch,
 * 0% leaves only checkpoint-all's batch, and a looser cap never fits less. */
Test(cli_maxbatch_lib, the_overhead_cap_bounds_every_answer)
{
    rm_model *m;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, TINY, &e), RM_OK, "%s", e.msg);
    const rm_overhead_cap caps[] = {
        {RM_CAP_FRACTION, 0}, {RM_CAP_FRACTION, 0.05}, {RM_CAP_FORWARDS, 1}, {RM_CAP_NONE, 0}};
    const char *names[] = {"checkpoint_all", "chen_greedy", "griewank", "ogc", "milp"};
    int prev[5] = {0};
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        int all = 0;
        for (int k = 0; k < 5; k++) {
            rm_maxbatch_options o;
            memset(&o, 0, sizeof o);
            o.budget = 3u << 20;
            o.max_batch = 4096;
            o.cap = caps[c];
            o.solver.node_limit = 300;
            rm_maxbatch_result r;
            cr_assert_eq(rm_maxbatch_search(&r, rm_strategy_find(names[k]), build, m, &o, &e), RM_OK, "%s", e.msg);
            check_answer(m, &r, o.budget);
            if (k == 0) all = r.max_batch;
            if (r.max_batch > 0) {
                rm_problem *p;
                cr_assert_eq(build(&p, m, r.max_batch, &e), RM_OK);
                double cap = rm_overhead_cap_cost(&caps[c], p);
                if (caps[c].kind != RM_CAP_NONE)
                    cr_assert_leq(r.cost, cap, "%s cap %zu: cost %g over %g", names[k], c, r.cost, cap);
                rm_problem_free(p);
            }
            if (c == 0 && r.max_batch > 0)
                cr_assert_eq(r.max_batch, all, "%s fits more than checkpoint-all at 0%%", names[k]);
            if (!strcmp(names[k], "milp")) cr_assert_geq(r.max_batch, prev[1], "the MILP below chen_greedy");
            cr_assert_geq(r.max_batch, prev[k], "%s: %d under a looser cap, %d under a tighter one", names[k],
                          r.max_batch, prev[k]);
            prev[k] = r.max_batch;
            rm_schedule_free(r.schedule);
        }
    }
    rm_model_free(m);
}

Test(cli_maxbatch_lib, checkpoint_all_matches_direct_computation)
{
    rm_model *m;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, TINY, &e), RM_OK, "%s", e.msg);
    const size_t budgets[] = {1u << 20, 3u << 20, 5000000, 16u << 20};
    for (size_t k = 0; k < sizeof budgets / sizeof budgets[0]; k++) {
        size_t budget = budgets[k];
        int direct = 0;
        while (noremat_total(m, direct + 1) <= budget) direct++;
        rm_maxbatch_options o;
        memset(&o, 0, sizeof o);
        o.budget = budget;
        o.max_batch = 4096;
        rm_maxbatch_result r;
        cr_assert_eq(rm_maxbatch_search(&r, rm_strategy_find("checkpoint_all"), build, m, &o, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(r.max_batch, direct, "budget %zu: search %d, direct %d", budget, r.max_batch, direct);
        cr_assert(!r.capped);
        cr_assert_geq(r.bound_batch, r.max_batch);
        if (direct > 0) {
            cr_assert_eq(r.cost, r.base_cost, "checkpoint-all recomputes nothing");
            cr_assert_leq(r.fixed_bytes + r.peak_bytes, budget);
            cr_assert_eq(r.fixed_bytes + r.peak_bytes, noremat_total(m, direct));
        }

        /* Rematerialization fits at least as much, and never more than the
         * trivial bound admits. */
        rm_maxbatch_result g;
        cr_assert_eq(rm_maxbatch_search(&g, rm_strategy_find("chen_greedy"), build, m, &o, &e), RM_OK, "%s", e.msg);
        cr_assert_geq(g.max_batch, r.max_batch, "budget %zu", budget);
        cr_assert_leq(g.max_batch, g.bound_batch);
        o.bound_batch = g.bound_batch; /* reuse, as the CLI does */
        o.solver.node_limit = 300;
        rm_maxbatch_result mi;
        cr_assert_eq(rm_maxbatch_search(&mi, rm_strategy_find("milp"), build, m, &o, &e), RM_OK, "%s", e.msg);
        cr_assert_geq(mi.max_batch, r.max_batch, "budget %zu: the MILP below checkpoint-all", budget);
        cr_assert_leq(mi.max_batch, g.bound_batch);
        /* Started from chen_greedy's answer with its schedule, as the CLI
         * does: at least as large, its first probe answered by the
         * incumbent, and its schedule fits its batch. */
        o.start_batch = g.max_batch;
        o.start_schedule = g.schedule;
        rm_maxbatch_result ms;
        cr_assert_eq(rm_maxbatch_search(&ms, rm_strategy_find("milp"), build, m, &o, &e), RM_OK, "%s", e.msg);
        cr_assert_geq(ms.max_batch, g.max_batch, "budget %zu: started at %d, answered %d", budget, g.max_batch,
                      ms.max_batch);
        check_answer(m, &ms, budget);
        check_answer(m, &mi, budget);
        check_answer(m, &g, budget);
        check_answer(m, &r, budget);
        o.start_batch = 0;
        o.start_schedule = NULL;
        rm_schedule_free(ms.schedule);
        rm_schedule_free(mi.schedule);
        rm_schedule_free(g.schedule);
        rm_schedule_free(r.schedule);
    }
    /* The cap is honoured and reported. */
    rm_maxbatch_options o;
    memset(&o, 0, sizeof o);
    o.budget = 1u << 30;
    o.max_batch = 5;
    rm_maxbatch_result r;
    cr_assert_eq(rm_maxbatch_search(&r, rm_strategy_find("checkpoint_all"), build, m, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(r.max_batch, 5);
    cr_assert(r.capped);
    rm_schedule_free(r.schedule);
    rm_model_free(m);
}
