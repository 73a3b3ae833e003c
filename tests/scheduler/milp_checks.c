/* The MILP suites' shared problems and checks (milp_checks.h). */
#include "milp_checks.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>

#include "exact_dp.h"
#include "random_graphs.h"
#include "rng.h"
#include "simulate.h"
#include "strategy.h"

size_t act_budget(const rm_problem *p)
{
    return p->budget - p->fixed_bytes;
}

void set_act(rm_problem *p, size_t act)
{
    p->budget = p->fixed_bytes + act;
}

size_t checkpoint_all_peak(const rm_problem *p, double *cost)
{
    rm_schedule *s;
    rm_err e = {0};
    cr_assert_eq(rm_checkpoint_all_build(&s, p, &e), RM_OK);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    rm_schedule_free(s);
    if (cost) *cost = r.cost;
    return r.peak_bytes;
}

int close_rel(double a, double b)
{
    return fabs(a - b) <= 1e-6 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

rm_problem *random_dag(uint64_t seed, int n)
{
    rm_rng r = rm_rng_make(seed * 7919 + 17);
    size_t bytes[EXACT_DP_MAX_N];
    double cost[EXACT_DP_MAX_N];
    char depbuf[EXACT_DP_MAX_N][64];
    const char *deps[EXACT_DP_MAX_N];
    cr_assert(n >= 1 && n <= EXACT_DP_MAX_N, "random_dag: n = %d", n);
    for (int i = 0; i < n; i++) {
        bytes[i] = 16 * (1 + rm_rng_next(&r) % 8);
        cost[i] = (double)(1 + rm_rng_next(&r) % 5);
        depbuf[i][0] = '\0';
        if (i > 0) {
            int nd = 1 + (int)(rm_rng_next(&r) % 3), used[EXACT_DP_MAX_N] = {0};
            char *w = depbuf[i];
            used[i - 1] = 1; /* keep it connected: read the previous node */
            w += sprintf(w, "%d", i - 1);
            for (int k = 1; k < nd; k++) {
                int j = (int)(rm_rng_next(&r) % (uint64_t)i);
                if (used[j]) continue;
                used[j] = 1;
                w += sprintf(w, ",%d", j);
            }
        }
        deps[i] = depbuf[i];
    }
    rm_problem *p = rg_problem_make(n, bytes, cost, deps);
    cr_assert_not_null(p);
    p->fixed_bytes = 1000;
    return p;
}

rm_problem *small_training(uint64_t seed)
{
    rg_options o = {3, 0.4, 0.3, 0, 256};
    rm_problem *p = rg_training_problem(seed, &o);
    cr_assert_not_null(p);
    return p;
}

rm_problem *scaled_dag(uint64_t seed, int n, size_t scale)
{
    rm_rng r = rm_rng_make(seed * 104729 + 3);
    size_t bytes[EXACT_DP_MAX_N];
    double cost[EXACT_DP_MAX_N];
    char buf[EXACT_DP_MAX_N][48];
    const char *deps[EXACT_DP_MAX_N];
    cr_assert(n >= 1 && n <= EXACT_DP_MAX_N, "scaled_dag: n = %d", n);
    for (int i = 0; i < n; i++) {
        bytes[i] = scale / (1 + rm_rng_next(&r) % 4) + 2 * (rm_rng_next(&r) % 1000) + 1;
        cost[i] = (double)(1 + rm_rng_next(&r) % 5);
        buf[i][0] = 0;
        if (i > 0) snprintf(buf[i], sizeof buf[i], "%d", i - 1);
        if (i > 1 && rm_rng_next(&r) % 2) {
            int j = (int)(rm_rng_next(&r) % (uint64_t)(i - 1));
            snprintf(buf[i], sizeof buf[i], "%d,%d", j, i - 1);
        }
        deps[i] = buf[i];
    }
    rm_problem *p = rg_problem_make(n, bytes, cost, deps);
    cr_assert_not_null(p);
    return p;
}

int budget_ladder(size_t *b, const rm_problem *p, int steps)
{
    size_t lo = rm_problem_peak_lower_bound(p), hi = checkpoint_all_peak(p, NULL);
    int nb = 0;
    for (int k = 0; k < steps; k++) {
        size_t v = lo + (hi - lo) * (size_t)k / (size_t)(steps - 1);
        if (nb == 0 || b[nb - 1] != v) b[nb++] = v;
    }
    return nb;
}

void check_schedule(const rm_problem *p, const rm_schedule *s, double reported_cost)
{
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "simulator rejected the schedule: %s", e.msg);
    cr_assert(r.peak_bytes <= act_budget(p), "peak %zu above the activation budget %zu", r.peak_bytes, act_budget(p));
    cr_assert(close_rel(r.cost, reported_cost), "simulated cost %g, reported %g", r.cost, reported_cost);
    if (p->n <= EXACT_DP_MAX_N) {
        double c;
        size_t pk;
        char msg[128];
        cr_assert_eq(exact_replay(&c, &pk, p, s, msg, sizeof msg), 0, "independent replay rejects it: %s", msg);
        cr_assert(close_rel(c, r.cost), "replay cost %g, simulator %g", c, r.cost);
        cr_assert_eq(pk, r.peak_bytes, "replay peak %zu, simulator %zu", pk, r.peak_bytes);
    }
}
