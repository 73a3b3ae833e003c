/* DTR ahead of time (scheduler/dtr.c): on random DAGs with and without a
 * backward pass, in the problem's order and in others, every answer is
 * valid for the simulator and for the exact DP's independent replay, fits
 * its budget (DTR's own accounting never holds less than the simulator's),
 * plans to an arena whose live peak is the simulated peak, and never beats
 * the exact optimum in its order; where checkpoint-all fits it evicts
 * nothing; and where it cannot go on it says so and why. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "deadline.h"
#include "exact_dp.h"
#include "order.h"
#include "random_graphs.h"
#include "schedule.h"
#include "schedule_checks.h"
#include "simulate.h"
#include "strategy.h"

static rm_problem *random_problem(uint64_t seed)
{
    if (seed % 2)
        return rg_layered_problem(seed, 2 + (int)(seed % 4), 2 + (int)(seed % 3), 0.5, 0.3, seed % 4 == 1 ? 2 : 0);
    rg_options o = {.forward = 3 + (int)(seed % 5), .skip_prob = 0.4, .branch_prob = 0.2, .max_bytes = 256};
    return rg_training_problem(seed, &o);
}

/* A random topological order of p (Kahn's, picking a ready node at random). */
static void random_order(const rm_problem *p, uint64_t seed, int *order)
{
    int n = p->n, k = 0, *indeg = calloc((size_t)n, sizeof *indeg), *ready = malloc((size_t)n * sizeof *ready), nr = 0;
    uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 1;
    for (int v = 0; v < n; v++) indeg[v] = p->nodes[v].ndeps;
    for (int v = 0; v < n; v++)
        if (!indeg[v]) ready[nr++] = v;
    while (nr) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int i = (int)(x % (uint64_t)nr), v = ready[i];
        ready[i] = ready[--nr];
        order[k++] = v;
        for (int w = v + 1; w < n; w++)
            for (int d = 0; d < p->nodes[w].ndeps; d++)
                if (p->nodes[w].deps[d] == v && --indeg[w] == 0) ready[nr++] = w;
    }
    cr_assert_eq(k, n);
    free(indeg);
    free(ready);
}

/* DTR in order (NULL: the problem's): its answer, checked, or NULL with
 * *rc saying why. */
static rm_schedule *dtr(const rm_problem *p, const int *order, int *rc, rm_err *e)
{
    int *start, *rd;
    cr_assert_eq(rm_order_readers(p, &start, &rd), 0);
    rm_schedule *s = NULL;
    *rc = rm_dtr_in_order(&s, p, order, start, 0, e);
    free(start);
    free(rd);
    cr_assert(*rc == RM_OK || *rc == RM_ERR_INFEASIBLE, "%s", e->msg);
    cr_assert((*rc == RM_OK) == (s != NULL));
    return s;
}

/* Budgets from the trivial lower bound to the no-remat peak, in the
 * problem's order and in a random one: every answer passes every check,
 * and at the no-remat peak (in the problem's order) DTR evicts nothing. */
Test(dtr, valid_and_within_budget_on_random_dags)
{
    int answered = 0, tried = 0, ordered = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        rm_problem *p = random_problem(seed);
        cr_assert_not_null(p);
        size_t lb = rm_problem_peak_lower_bound(p), top = sc_noremat_peak(p);
        int *order = malloc((size_t)p->n * sizeof *order);
        random_order(p, seed, order);
        for (int k = 0; k <= 5; k++)
            for (int own = 0; own <= 1; own++) {
                p->budget = p->fixed_bytes + lb + (top - lb) * (size_t)k / 5;
                int rc;
                rm_err e = {0};
                rm_schedule *s = dtr(p, own ? order : NULL, &rc, &e);
                tried++;
                if (!s) {
                    cr_assert_lt(k, 5, "seed %lu: checkpoint-all fits, DTR fails: %s", (unsigned long)seed, e.msg);
                    cr_assert_not_null(strstr(e.msg, "dtr: "), "%s", e.msg);
                    continue;
                }
                char what[80];
                snprintf(what, sizeof what, "seed %lu, budget %zu, %s order", (unsigned long)seed, p->budget,
                         own ? "a random" : "the problem's");
                rm_sim_result r = sc_check_answer(p, s, what);
                cr_assert_geq(r.cost, rm_problem_base_cost(p) * (1 - 1e-12), "%s", what);
                if (k == 5 && !own) cr_assert_eq(r.recomputations, 0, "%s: recomputes where checkpoint-all fits", what);
                answered++;
                ordered += s->order != NULL;
                rm_schedule_free(s);
            }
        free(order);
        rm_problem_free(p);
    }
    cr_log_info("dtr: %d answers of %d tries, %d in their own order", answered, tried, ordered);
    cr_assert_gt(answered, tried / 2);
    cr_assert_gt(ordered, 0);
}

/* Never below the exact DP's optimum in the problem's order, and nothing
 * where the DP proves that nothing fits; at the DP's optimum often. */
Test(dtr, never_beats_the_exact_optimum)
{
    int answers = 0, optimal = 0, feasible = 0;
    for (uint64_t seed = 1; seed <= 40; seed++) {
        rm_problem *p = random_problem(seed);
        cr_assert_not_null(p);
        if (p->n > 12) { /* the DP takes a second at 16 nodes */
            rm_problem_free(p);
            continue;
        }
        size_t lb = rm_problem_peak_lower_bound(p), top = sc_noremat_peak(p);
        for (int k = 0; k < 5; k++) {
            size_t act = lb + (top - lb) * (size_t)k / 5;
            p->budget = p->fixed_bytes + act;
            double opt;
            cr_assert_eq(exact_dp_solve(&opt, p, &act, 1, 0), 0);
            int rc;
            rm_err e = {0};
            rm_schedule *s = dtr(p, NULL, &rc, &e);
            feasible += opt >= 0;
            if (!s) continue;
            cr_assert_geq(opt, 0, "seed %lu, budget %zu: DTR fits where the exact DP says nothing does",
                          (unsigned long)seed, act);
            double c = sc_simulate(p, s).cost;
            cr_assert_geq(c, opt * (1 - 1e-12), "seed %lu, budget %zu: %g below the optimum %g", (unsigned long)seed,
                          act, c, opt);
            answers++;
            optimal += c <= opt * (1 + 1e-12);
            rm_schedule_free(s);
        }
        rm_problem_free(p);
    }
    cr_log_info("dtr: %d answers where the exact DP fits %d budgets, %d of them optimal", answers, feasible, optimal);
    cr_assert_gt(answers, 20);
    cr_assert_gt(optimal, 0);
}

/* Where it cannot go on, it says why: a budget only the trivial bound
 * holds, a deadline already passed; and it runs as a strategy on a DAG
 * without a backward pass, where the checkpoint heuristics step aside. */
Test(dtr, says_why_it_stops)
{
    /* a (10 bytes) read by b and c (1 each), both read by d: 12 bytes in
     * every order, above the lower bound of 11. */
    static const size_t bytes[] = {10, 1, 1, 1};
    static const char *const deps[] = {"", "0", "0", "1,2"};
    rm_problem *p = rg_problem_make(4, bytes, NULL, deps);
    cr_assert_not_null(p);
    p->budget = p->fixed_bytes + 11;
    int rc;
    rm_err e = {0};
    cr_assert_null(dtr(p, NULL, &rc, &e));
    cr_assert_eq(rc, RM_ERR_INFEASIBLE);
    cr_assert_not_null(strstr(e.msg, "nothing left to evict"), "%s", e.msg);
    cr_assert_not_null(strstr(e.msg, "not a proof"), "%s", e.msg);
    rm_problem_free(p);

    rm_problem *q = rg_layered_problem(3, 6, 4, 0.5, 0.3, 0);
    cr_assert_not_null(q);
    q->budget = q->fixed_bytes + sc_noremat_peak(q) * 9 / 10;
    rm_schedule *s = NULL;
    int stopped = 0;
    rm_err e2 = {0};
    cr_assert_eq(rm_dtr_until(&s, &stopped, q, rm_now() - 1, &e2), RM_ERR_INFEASIBLE, "%s", e2.msg);
    cr_assert_null(s);
    cr_assert(stopped);
    cr_assert_not_null(strstr(e2.msg, "time limit"), "%s", e2.msg);

    rm_strategy_stats st;
    rm_err e3 = {0};
    rc = rm_strategy_run(&s, &st, rm_strategy_find("dtr"), q, NULL, &e3);
    cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "%s", e3.msg);
    if (rc == RM_OK) cr_assert(rm_sim_fits(q, &st.sim));
    rm_schedule_free(s);
    rm_problem_free(q);
}
