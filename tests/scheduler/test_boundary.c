/* Exact arithmetic at the budget boundary: budgets a few bytes below or at a
 * schedule's peak, at byte scales where lp_solve's tolerances are larger
 * than a byte (values of ~10 MB and ~400 MB, VGG16's largest at batch 32,
 * with odd sizes so that no common unit hides the difference). Every
 * answer must fit by the simulator's exact count and equal the independent
 * DP's optimum. */
#include <criterion/criterion.h>
#include <stdio.h>

#include "exact_dp.h"
#include "milp_checks.h"
#include "random_graphs.h"
#include "sanitized.h"
#include "simulate.h"
#include "strategy.h"

/* The 5-node problem: checkpoint-all peaks at 40000016 bytes. */
static rm_problem *five_nodes(void)
{
    const size_t bytes[5] = {10000001, 10000003, 10000005, 10000007, 10000009};
    const char *const deps[5] = {"", "0", "1", "1,2", "0,3"};
    rm_problem *p = rg_problem_make(5, bytes, NULL, deps);
    cr_assert_not_null(p);
    p->nodes[2].tag = RM_TAG_LOSS;
    p->nodes[3].tag = p->nodes[4].tag = RM_TAG_BACKWARD;
    return p;
}

/* Runs a strategy by name and checks its answer fits exactly. */
static int run_named(double *cost, rm_status *status, const char *name, const rm_problem *p)
{
    const rm_strategy_info *st = rm_strategy_find(name);
    cr_assert_not_null(st, "no strategy %s", name);
    rm_strategy_options o = {0};
    o.node_limit = 100000;
    rm_schedule *s = NULL;
    rm_strategy_stats stats;
    rm_err e = {0};
    int rc = rm_strategy_run(&s, &stats, st, p, &o, &e);
    if (status) *status = stats.status;
    if (rc != RM_OK) return rc;
    cr_assert(stats.sim.peak_bytes + p->fixed_bytes <= p->budget, "%s: peak %zu over the budget %zu", name,
              stats.sim.peak_bytes, p->budget);
    *cost = stats.sim.cost;
    rm_schedule_free(s);
    return RM_OK;
}

Test(boundary, five_node_problem_one_byte_below_checkpoint_all)
{
    rm_problem *p = five_nodes();
    p->budget = 40000015;
    const char *names[] = {"best", "milp", "lp_round", "ogc", "chen_greedy"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        double cost = -1;
        cr_assert_eq(run_named(&cost, NULL, names[k], p), RM_OK, "%s found no schedule", names[k]);
        cr_assert_eq(cost, 6.0, "%s: cost %g, the optimum is 6", names[k], cost);
    }
    p->budget = 40000016; /* checkpoint-all fits exactly: every node once */
    double cost = -1;
    cr_assert_eq(run_named(&cost, NULL, "milp", p), RM_OK);
    cr_assert_eq(cost, 5.0);
    rm_problem_free(p);
}

/* Budgets at every baseline's peak and 1 and 3 bytes below it. */
static int boundary_budgets(size_t *b, int cap, const rm_problem *p)
{
    int count, nb = 0;
    const rm_strategy_info *list = rm_strategy_list(&count);
    rm_problem q = *p;
    q.budget = 0;
    for (int k = 0; k < count && nb + 3 <= cap; k++) {
        rm_schedule *s = NULL;
        rm_err e = {0};
        if (list[k].solve(&s, &q, &e) != RM_OK) continue;
        rm_sim_result r;
        cr_assert_eq(rm_simulate(&r, &q, s, &e), RM_OK);
        rm_schedule_free(s);
        b[nb++] = r.peak_bytes, b[nb++] = r.peak_bytes - 1, b[nb++] = r.peak_bytes - 3;
    }
    return nb;
}

/* The MILP at every boundary budget: never an error where a schedule
 * exists, never below the DP's optimum, and optimal where it says so. Where
 * lp_solve's tolerances defeat it (its answers over the budget by a byte,
 * cut off and searched again, until lp_solve loses accuracy), it answers
 * with its incumbent, unproved, or NO_SOLUTION when it had none. */
static void milp_exact_at_the_boundary(size_t scale)
{
    int feasible = 0, proved = 0;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        rm_problem *p = scaled_dag(seed, 6 + (int)(seed % 3), scale);
        size_t budgets[48];
        double dp[48];
        int nb = boundary_budgets(budgets, 48, p);
        cr_assert_eq(exact_dp_solve(dp, p, budgets, nb, 1), 0);
        for (int b = 0; b < nb; b++) {
            p->budget = budgets[b];
            double cost = -1;
            rm_status status;
            int rc = run_named(&cost, &status, "milp", p);
            char what[96];
            snprintf(what, sizeof what, "seed %llu budget %zu (scale %zu)", (unsigned long long)seed, budgets[b],
                     scale);
            if (dp[b] < 0) {
                cr_assert_eq(rc, RM_ERR_INFEASIBLE, "%s: DP infeasible, milp rc %d", what, rc);
                continue;
            }
            feasible++;
            if (rc != RM_OK) {
                cr_assert_eq(status, RM_STATUS_NO_SOLUTION, "%s: DP optimum %g, milp rc %d", what, dp[b], rc);
                continue;
            }
            cr_assert(cost >= dp[b] * (1 - 1e-9), "%s: milp %g below the DP's optimum %g", what, cost, dp[b]);
            if (status == RM_STATUS_OPTIMAL) {
                cr_assert(close_rel(cost, dp[b]), "%s: milp says optimal at %g, DP %g", what, cost, dp[b]);
                proved++;
            }
            double best = -1;
            cr_assert_eq(run_named(&best, &status, "best", p), RM_OK, "%s: milp answered, best did not", what);
            cr_assert(best <= cost && best >= dp[b] * (1 - 1e-9), "%s: best %g, milp %g, DP %g", what, best, cost,
                      dp[b]);
        }
        rm_problem_free(p);
    }
    cr_log_info("scale %zu: %d of %d feasible boundary budgets proved optimal", scale, proved, feasible);
    cr_assert(proved * 2 >= feasible, "only %d of %d proved", proved, feasible);
}

Test(boundary, milp_exact_with_10_megabyte_values)
{
    milp_exact_at_the_boundary(10000000);
}
/* The same searches at VGG16's scale: only the numbers differ (the
 * sanitized suite runs the 10 MB one). */
Test(boundary, milp_exact_with_vgg16_sized_values)
{
    RM_SKIP_WHEN_SANITIZED();
    milp_exact_at_the_boundary(411041792);
}
