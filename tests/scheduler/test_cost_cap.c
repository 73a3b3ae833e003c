/* The compute cap (rm_problem.max_cost, maxbatch's --max-overhead): a
 * schedule dearer than the cap does not fit, for every strategy alike. On
 * random training graphs small enough for the exact DP, with the budget
 * between the trivial bound and checkpoint-all and C* the DP's optimum:
 * - a cap of C* leaves the MILP's answer at C*, proved optimal;
 * - a cap just below C* is proved infeasible (status INFEASIBLE, not a
 *   limit), by the LP bound or by branch and bound with the cap as cutoff;
 * - every strategy's answer under a cap costs at most the cap, and "best"
 *   answers under the cap exactly when the DP says a schedule exists;
 * - first fit stops at the first schedule within the cap. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "exact_dp.h"
#include "milp.h"
#include "random_graphs.h"
#include "sanitized.h"
#include "simulate.h"
#include "strategy.h"

static size_t noremat_peak(const rm_problem *p)
{
    rm_problem q = *p;
    q.budget = 0;
    q.max_cost = 0;
    rm_schedule *s = NULL;
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, &q, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_simulate(&r, &q, s, &e), RM_OK, "%s", e.msg);
    rm_schedule_free(s);
    return r.peak_bytes;
}

static rm_problem *small_graph(uint64_t seed)
{
    rg_options o = {.forward = 4 + (int)(seed % 2), .skip_prob = 0.3, .branch_prob = 0.2, .max_bytes = 256};
    rm_problem *p = rg_training_problem(seed, &o);
    cr_assert_not_null(p);
    cr_assert_leq(p->n, EXACT_DP_MAX_N, "seed %llu: %d nodes", (unsigned long long)seed, p->n);
    for (int i = 0; i < p->n; i++) p->nodes[i].cost = 1 + (double)((seed * 7 + (uint64_t)i * 13) % 5);
    return p;
}

static int milp_run(rm_problem *p, double cap, rm_milp_result *info, double *cost)
{
    p->max_cost = cap;
    rm_milp_options o;
    rm_milp_options_default(&o);
    rm_schedule *s = NULL;
    rm_err e = {0};
    memset(info, 0, sizeof *info);
    int rc = rm_strategy_milp(&s, info, p, &o, &e);
    cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "milp failed: %s", e.msg);
    if (rc == RM_OK) {
        rm_sim_result r;
        cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK);
        cr_assert(rm_sim_fits(p, &r), "the MILP's answer does not fit its own problem");
        *cost = r.cost;
    }
    rm_schedule_free(s);
    return rc;
}

Test(cost_cap, the_milp_proves_the_cap_exactly_against_the_exact_dp)
{
    int proved_below = 0, checked = 0;
    for (uint64_t seed = 1; seed <= 8; seed++) {
        rm_problem *p = small_graph(seed);
        size_t lo = rm_problem_peak_lower_bound(p), hi = noremat_peak(p);
        for (int k = 0; k < 3; k++) {
            size_t act = lo + (hi - lo) * (size_t)k / 4;
            p->budget = p->fixed_bytes + act;
            double dp;
            cr_assert_eq(exact_dp_solve(&dp, p, &act, 1, 0), 0);
            if (dp < 0) continue;
            rm_milp_result info;
            double cost = -1;
            cr_assert_eq(milp_run(p, dp, &info, &cost), RM_OK, "seed %llu act %zu: cap C* = %g refused",
                         (unsigned long long)seed, act, dp);
            cr_assert(fabs(cost - dp) <= 1e-9 * dp, "seed %llu: cost %g under the cap C* = %g",
                      (unsigned long long)seed, cost, dp);
            double all = 0;
            for (int i = 0; i < p->n; i++) all += p->nodes[i].cost;
            if (dp > all) { /* some recomputation is needed: a cap below C* (and above all-once) is infeasible */
                double below = dp - 0.5 * fmin(1.0, dp - all);
                cr_assert_eq(milp_run(p, below, &info, &cost), RM_ERR_INFEASIBLE,
                             "seed %llu act %zu: cap %g below C* = %g, yet the MILP found cost %g",
                             (unsigned long long)seed, act, below, dp, cost);
                cr_assert_eq(info.status, RM_STATUS_INFEASIBLE, "seed %llu: %s, not a proof", (unsigned long long)seed,
                             rm_status_name(info.status));
                proved_below++;
            }
            checked++;
        }
        rm_problem_free(p);
    }
    cr_assert_geq(checked, 12, "only %d instances", checked);
    cr_assert_geq(proved_below, 6, "only %d instances needed recomputation", proved_below);
}

Test(cost_cap, every_strategy_answers_within_the_cap_and_best_whenever_one_exists)
{
    int count;
    const rm_strategy_info *all = rm_strategy_list_all(&count);
    for (uint64_t seed = 20; seed < 28; seed++) {
        rm_problem *p = small_graph(seed);
        size_t lo = rm_problem_peak_lower_bound(p), hi = noremat_peak(p);
        size_t act = lo + (hi - lo) / 3;
        p->budget = p->fixed_bytes + act;
        double dp, base = 0;
        cr_assert_eq(exact_dp_solve(&dp, p, &act, 1, 0), 0);
        for (int i = 0; i < p->n; i++) base += p->nodes[i].cost;
        const double caps[] = {base, base * 1.1, base * 1.3, base * 2};
        for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
            p->max_cost = caps[c];
            for (int k = 0; k < count; k++) {
                for (int ff = 0; ff <= 1; ff++) {
                    rm_strategy_options o;
                    memset(&o, 0, sizeof o);
                    o.first_fit = ff;
                    rm_schedule *s = NULL;
                    rm_strategy_stats st;
                    rm_err e = {0};
                    int rc = rm_strategy_run(&s, &st, &all[k], p, &o, &e);
                    cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "%s: %s", all[k].name, e.msg);
                    if (rc == RM_OK)
                        cr_assert(st.sim.cost <= caps[c], "seed %llu %s: cost %g over the cap %g",
                                  (unsigned long long)seed, all[k].name, st.sim.cost, caps[c]);
                    if (!strcmp(all[k].name, "best") || !strcmp(all[k].name, "milp")) {
                        int exists = dp >= 0 && dp <= caps[c];
                        cr_assert_eq(rc == RM_OK, exists, "seed %llu %s (first fit %d): cap %g, C* %g: rc %d (%s)",
                                     (unsigned long long)seed, all[k].name, ff, caps[c], dp, rc, e.msg);
                    }
                    rm_schedule_free(s);
                }
            }
        }
        rm_problem_free(p);
    }
}

Test(cost_cap, a_cap_below_every_node_once_is_refused_and_a_bad_cap_is_invalid)
{
    rm_problem *p = small_graph(3);
    double base = 0;
    for (int i = 0; i < p->n; i++) base += p->nodes[i].cost;
    p->budget = 0;
    p->max_cost = base * 0.99;
    rm_err e = {0};
    cr_assert_eq(rm_problem_check_budget(p, "test", &e), RM_ERR_INFEASIBLE);
    cr_assert(strstr(e.msg, "compute cap"), "%s", e.msg);
    p->max_cost = NAN;
    cr_assert_eq(rm_problem_validate(p, &e), RM_ERR_INVALID);
    p->max_cost = -1;
    cr_assert_eq(rm_problem_validate(p, &e), RM_ERR_INVALID);
    p->max_cost = base;
    cr_assert_eq(rm_problem_validate(p, &e), RM_OK);
    rm_problem_free(p);
}

/* Above 80 nodes the route solves a coarsened graph, which proves nothing;
 * the relaxed LP bound of the whole graph does: a cap at every node once
 * (below the bound, at a budget that needs recomputation) is infeasible,
 * proved (status INFEASIBLE, not a limit), for lp_round and milp, and for
 * the MILP's first fit, where the coarse level comes first; a first fit
 * under a cap the cheapest heuristic meets returns it, no solver run. */
Test(cost_cap, the_relaxed_bound_proves_a_cap_on_coarsened_graphs)
{
    RM_SKIP_WHEN_SANITIZED();
    rg_options ro = {.forward = 46, .skip_prob = 0.2, .branch_prob = 0.1, .max_skip = 4, .max_bytes = 4096};
    rm_problem *p = rg_training_problem(77, &ro);
    cr_assert_gt(p->n, 80);
    size_t lo = rm_problem_peak_lower_bound(p), hi = noremat_peak(p);
    p->budget = p->fixed_bytes + lo + (hi - lo) / 4;
    double base = 0;
    for (int i = 0; i < p->n; i++) base += p->nodes[i].cost;
    rm_sim_result hr;
    rm_schedule *h = rm_best_baseline(p, 0, 0, NULL, &hr);
    cr_assert_not_null(h, "a heuristic fits");
    rm_schedule_free(h);
    cr_assert_gt(hr.cost, base, "the budget needs recomputation");
    const char *names[] = {"lp_round", "milp"};
    for (int k = 0; k < 2; k++)
        for (int ff = 0; ff <= 1; ff++) {
            /* lp_round's first fit is the same coarsened route as the MILP's
             * (and its coarse LP alone takes seconds): tested once, on milp. */
            if (k == 0 && ff) continue;
            rm_strategy_options o;
            memset(&o, 0, sizeof o);
            o.node_limit = 50; /* no wall clock: the bound is solved in full, so the proof cannot time out */
            o.first_fit = ff;
            rm_schedule *s = NULL;
            rm_strategy_stats st;
            rm_err e = {0};
            p->max_cost = base * (1 + 1e-9);
            int rc = rm_strategy_run(&s, &st, rm_strategy_find(names[k]), p, &o, &e);
            cr_assert_eq(rc, RM_ERR_INFEASIBLE, "%s (first fit %d): a cap at every node once, rc %d", names[k], ff, rc);
            cr_assert_eq(st.status, RM_STATUS_INFEASIBLE, "%s (first fit %d): %s, not a proof: %s", names[k], ff,
                         rm_status_name(st.status), e.msg);
            cr_assert(strstr(e.msg, "compute cap"), "%s", e.msg);
            if (!ff) continue;
            p->max_cost = hr.cost;
            cr_assert_eq(rm_strategy_run(&s, &st, rm_strategy_find(names[k]), p, &o, &e), RM_OK, "%s: %s", names[k],
                         e.msg);
            cr_assert_leq(st.sim.cost, p->max_cost);
            cr_assert(st.first_fit && st.source && rm_strategy_find(st.source),
                      "%s: a heuristic answers the first fit, no solver: %s", names[k], st.source ? st.source : "?");
            rm_schedule_free(s);
        }
    rm_problem_free(p);
}
