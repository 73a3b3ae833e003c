/* Tests of the lp_solve MILP and the LP rounding: optima equal an
 * independent exact dynamic program (exact_dp.c) on every small random DAG
 * and training graph, every schedule passes the simulator within budget and
 * agrees with the DP's own replay of the memory model, the LP bound is a
 * lower bound, and the infeasible and unlimited ends behave. Node limits
 * only: nothing here depends on wall-clock time. The problems and the
 * schedule check are milp_checks.h's, shared with the engines' suite. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exact_dp.h"
#include "lp_model.h"
#include "milp.h"
#include "milp_checks.h"
#include "random_graphs.h"
#include "rng.h"
#include "simulate.h"
#include "strategy.h"

/* ---------------------------------------------------------------- helpers */

static double sum_costs(const rm_problem *p)
{
    double c = 0;
    for (int i = 0; i < p->n; i++) c += p->nodes[i].cost;
    return c;
}

static rm_milp_options test_options(unsigned levers)
{
    rm_milp_options o;
    rm_milp_options_default(&o);
    o.levers = levers;
    o.node_limit = 200000; /* deterministic safety net; small problems need far fewer */
    return o;
}

/* What LP rounding answered against the DP's optima (compare_with_dp). */
typedef struct round_tally {
    int feasible;  /* budgets where the DP finds a schedule */
    int answered;  /* ... and LP rounding returned one */
    int optimal;   /* ... at the DP's optimum */
    double excess; /* sum of (rounded cost - optimum) over the answered budgets */
} round_tally;

/* Solves p at every budget of the ladder with the MILP and compares with the
 * DP; also checks bounds and, with a tally, LP rounding. */
static void compare_with_dp(rm_problem *p, unsigned levers, round_tally *round, const char *what)
{
    size_t budgets[8];
    int nb = budget_ladder(budgets, p, 6);
    double dp[8];
    cr_assert_eq(exact_dp_solve(dp, p, budgets, nb, p->n <= 8), 0);
    for (int b = 0; b < nb; b++) {
        set_act(p, budgets[b]);
        rm_milp_options o = test_options(levers);
        rm_milp_result info;
        rm_schedule *s = NULL;
        rm_err e = {0};
        int rc = rm_strategy_milp(&s, &info, p, &o, &e);
        if (dp[b] < 0) {
            cr_assert_eq(rc, RM_ERR_INFEASIBLE, "%s budget %zu: DP says infeasible, MILP rc %d (%s)", what, budgets[b],
                         rc, e.msg);
            cr_assert_eq(info.status, RM_STATUS_INFEASIBLE);
            continue;
        }
        cr_assert_eq(rc, RM_OK, "%s budget %zu: DP optimum %g, MILP failed: %s", what, budgets[b], dp[b], e.msg);
        cr_assert_eq(info.status, RM_STATUS_OPTIMAL, "%s budget %zu: status %s", what, budgets[b],
                     rm_status_name(info.status));
        cr_assert(close_rel(info.objective, dp[b]), "%s (n=%d) budget %zu: MILP %g, DP %g", what, p->n, budgets[b],
                  info.objective, dp[b]);
        check_schedule(p, s, info.objective);
        cr_assert(info.lp_bound <= info.objective * (1 + 1e-9) + 1e-9, "%s: LP bound %g above the optimum %g", what,
                  info.lp_bound, info.objective);
        rm_schedule_free(s);
        if (round) {
            rm_lp_round_result rr;
            round->feasible++;
            rc = rm_strategy_lp_round(&s, &rr, p, NULL, &e);
            if (rc == RM_OK) {
                check_schedule(p, s, rr.objective);
                cr_assert(rr.objective >= dp[b] * (1 - 1e-9), "%s: rounding %g below the optimum %g", what,
                          rr.objective, dp[b]);
                cr_assert(rr.lp_bound <= dp[b] * (1 + 1e-9) + 1e-9);
                rm_schedule_free(s);
                round->answered++;
                round->optimal += close_rel(rr.objective, dp[b]);
                round->excess += rr.objective - dp[b];
            } else {
                cr_assert_eq(rc, RM_ERR_INFEASIBLE, "rounding failed: %s", e.msg);
            }
        }
    }
}

/* ---------------------------------------------------------------- milp */

Test(milp, matches_exact_dp_on_random_dags)
{
    for (uint64_t seed = 1; seed <= 14; seed++) {
        rm_problem *p = random_dag(seed, 5 + (int)(seed % 4));
        char what[64];
        snprintf(what, sizeof what, "random dag seed %llu", (unsigned long long)seed);
        compare_with_dp(p, RM_MILP_DEFAULT & ~RM_MILP_SHORTCUT, NULL, what);
        rm_problem_free(p);
    }
}

Test(milp, matches_exact_dp_on_training_graphs)
{
    int tested = 0;
    for (uint64_t seed = 1; tested < 10 && seed < 100; seed++) {
        rm_problem *p = small_training(seed);
        if (p->n > 8) {
            rm_problem_free(p);
            continue;
        }
        char what[64];
        snprintf(what, sizeof what, "training graph seed %llu", (unsigned long long)seed);
        compare_with_dp(p, RM_MILP_DEFAULT & ~RM_MILP_SHORTCUT, NULL, what);
        rm_problem_free(p);
        tested++;
    }
    cr_assert(tested >= 5);
}

Test(milp, matches_exact_dp_on_chains)
{
    /* Chains of 3, 4 and 5 layers: 7, 9 and 11 nodes. Above 8 nodes the DP
     * uses the cheapest-R lemma, which full_and_closure_dp_agree checks. */
    for (int f = 3; f <= 5; f++)
        for (uint64_t seed = 1; seed <= 2; seed++) {
            rm_problem *p = rg_chain_problem(seed, f, 512);
            cr_assert_not_null(p);
            char what[64];
            snprintf(what, sizeof what, "chain of %d, seed %llu", f, (unsigned long long)seed);
            compare_with_dp(p, RM_MILP_DEFAULT & ~RM_MILP_SHORTCUT, NULL, what);
            rm_problem_free(p);
        }
}

/* The alternative formulations and orders used for measurements must all
 * be exact too. */
Test(milp, every_lever_setting_is_exact)
{
    const unsigned base = RM_MILP_DEFAULT & ~RM_MILP_SHORTCUT;
    const unsigned variants[] = {
        base & ~RM_MILP_PRUNE, base & ~RM_MILP_PREFIX_ROWS, base & ~RM_MILP_STAGE_ORDER, base & ~RM_MILP_FREE_CONT,
        base & ~RM_MILP_FREE_CUT, base & ~RM_MILP_INCUMBENT, base & ~RM_MILP_FLOOR_FIRST, base & ~RM_MILP_S_PRIORITY,
        base & ~RM_MILP_TIGHT_BUDGET,
        /* not RM_MILP_PRESOLVE: lp_solve's presolve answers ACCURACYERROR on some
           of these */
        RM_MILP_PREFIX_ROWS, /* nothing else: plain Checkmate with prefix rows */
        0,                   /* plain Checkmate: U variables, binary FREE, ceiling branching */
    };
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++)
        for (uint64_t seed = 21; seed <= 23; seed++) {
            rm_problem *p = random_dag(seed, 7);
            char what[64];
            snprintf(what, sizeof what, "levers %#x, seed %llu", variants[v], (unsigned long long)seed);
            compare_with_dp(p, variants[v], NULL, what);
            rm_problem_free(p);
        }
}

Test(milp, full_budget_means_no_recomputation)
{
    for (uint64_t seed = 1; seed <= 4; seed++) {
        rg_options go = {8, 0.3, 0.2, 0, 4096};
        rm_problem *p = rg_training_problem(seed, &go);
        cr_assert_not_null(p);
        set_act(p, checkpoint_all_peak(p, NULL));
        for (int shortcut = 0; shortcut <= 1; shortcut++) {
            rm_milp_options o = test_options(RM_MILP_DEFAULT & ~(shortcut ? 0u : RM_MILP_SHORTCUT));
            rm_milp_result info;
            rm_schedule *s = NULL;
            rm_err e = {0};
            cr_assert_eq(rm_strategy_milp(&s, &info, p, &o, &e), RM_OK, "%s", e.msg);
            cr_assert_eq(info.status, RM_STATUS_OPTIMAL);
            cr_assert(close_rel(info.objective, sum_costs(p)));
            rm_sim_result r;
            cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK);
            cr_assert_eq(r.recomputations, 0);
            rm_schedule_free(s);
        }
        /* budget 0: unlimited */
        p->budget = 0;
        rm_milp_result info;
        rm_schedule *s = NULL;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_milp(&s, &info, p, NULL, &e), RM_OK, "%s", e.msg);
        cr_assert(close_rel(info.objective, sum_costs(p)));
        rm_schedule_free(s);
        rm_problem_free(p);
    }
}

Test(milp, below_trivial_bound_is_infeasible_at_once)
{
    rg_options go = {12, 0.3, 0.2, 0, 4096};
    rm_problem *p = rg_training_problem(3, &go);
    cr_assert_not_null(p);
    size_t lb = rm_problem_peak_lower_bound(p);
    set_act(p, lb - 1);
    rm_milp_result info;
    rm_schedule *s = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_milp(&s, &info, p, NULL, &e), RM_ERR_INFEASIBLE);
    cr_assert_null(s);
    cr_assert_eq(info.status, RM_STATUS_INFEASIBLE);
    cr_assert_eq(info.solver_code, -100, "lp_solve must not be called");
    cr_assert(strstr(e.msg, "trivial lower bound"), "%s", e.msg);
    /* fixed bytes alone above the budget */
    p->budget = p->fixed_bytes / 2;
    cr_assert_eq(rm_strategy_milp(&s, &info, p, NULL, &e), RM_ERR_INFEASIBLE);
    /* exactly at the bound: the MILP decides, and the DP-checked tests show it
     * agrees */
    set_act(p, lb);
    rm_milp_options o = test_options(RM_MILP_DEFAULT);
    o.node_limit = 200;
    int rc = rm_strategy_milp(&s, &info, p, &o, &e);
    cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "%s", e.msg);
    if (rc == RM_OK) check_schedule(p, s, info.objective);
    rm_schedule_free(s);
    rm_problem_free(p);
}

Test(milp, node_limit_is_deterministic_and_honest)
{
    rg_options go = {14, 0.3, 0.2, 0, 4096};
    rm_problem *p = rg_training_problem(5, &go);
    cr_assert_not_null(p);
    size_t lo = rm_problem_peak_lower_bound(p), hi = checkpoint_all_peak(p, NULL);
    set_act(p, lo + (hi - lo) / 3);
    rm_milp_result a, b;
    rm_schedule *sa = NULL, *sb = NULL;
    rm_err e = {0};
    rm_milp_options o = test_options(RM_MILP_DEFAULT);
    o.node_limit = 30;
    int rca = rm_strategy_milp(&sa, &a, p, &o, &e);
    int rcb = rm_strategy_milp(&sb, &b, p, &o, &e);
    cr_assert_eq(rca, rcb);
    cr_assert_eq(a.nodes, b.nodes);
    cr_assert_eq(a.status, b.status);
    cr_assert(a.nodes <= 31 || a.status == RM_STATUS_OPTIMAL, "nodes %ld", a.nodes);
    if (rca == RM_OK) {
        cr_assert_eq(a.objective, b.objective);
        cr_assert(rm_schedule_equal(sa, sb));
        check_schedule(p, sa, a.objective);
        cr_assert(a.lower_bound <= a.objective * (1 + 1e-9));
        cr_assert(a.gap >= 0 && a.gap < 1);
        if (a.status == RM_STATUS_OPTIMAL) cr_assert_eq(a.gap, 0);
    } else {
        cr_assert_eq(a.status, RM_STATUS_NO_SOLUTION);
    }
    rm_schedule_free(sa);
    rm_schedule_free(sb);
    rm_problem_free(p);
}

Test(milp, incumbent_is_used_and_never_worsened)
{
    for (uint64_t seed = 31; seed <= 34; seed++) {
        rm_problem *p = random_dag(seed, 8);
        size_t budgets[8];
        int nb = budget_ladder(budgets, p, 4);
        set_act(p, budgets[nb / 2]);
        rm_schedule *inc = NULL, *s = NULL;
        rm_lp_round_result rr;
        rm_err e = {0};
        if (rm_strategy_lp_round(&inc, &rr, p, NULL, &e) != RM_OK) {
            rm_problem_free(p);
            continue;
        }
        rm_milp_options o = test_options(RM_MILP_DEFAULT & ~(RM_MILP_INCUMBENT | RM_MILP_SHORTCUT));
        o.incumbent = inc;
        rm_milp_result info;
        cr_assert_eq(rm_strategy_milp(&s, &info, p, &o, &e), RM_OK, "%s", e.msg);
        cr_assert(info.objective <= rr.objective * (1 + 1e-12));
        cr_assert(close_rel(info.incumbent_cost, rr.objective), "incumbent %g, rounding %g", info.incumbent_cost,
                  rr.objective);
        double dp;
        size_t b = act_budget(p);
        cr_assert_eq(exact_dp_solve(&dp, p, &b, 1, 1), 0);
        cr_assert(close_rel(info.objective, dp), "MILP %g, DP %g", info.objective, dp);
        check_schedule(p, s, info.objective);
        rm_schedule_free(s);
        rm_schedule_free(inc);
        rm_problem_free(p);
    }
}

Test(milp, rejects_bad_input)
{
    rm_problem *p = random_dag(3, 5);
    rm_schedule *s = NULL, *wrong = NULL;
    rm_err e = {0};
    set_act(p, checkpoint_all_peak(p, NULL));
    rm_problem *four = random_dag(3, 4);
    cr_assert_eq(four->n, 4);
    cr_assert_eq(rm_checkpoint_all_build(&wrong, four, &e), RM_OK);
    rm_problem_free(four);
    rm_milp_options o = test_options(RM_MILP_DEFAULT & ~RM_MILP_SHORTCUT);
    o.incumbent = wrong;
    cr_assert_eq(rm_strategy_milp(&s, NULL, p, &o, &e), RM_ERR_INVALID);
    cr_assert_null(s);
    rm_schedule_free(wrong);
    rm_problem_free(p);
}

/* A mid-sized training graph within a node budget: an answer that fits,
 * with an honest bound and gap. */
Test(milp, mid_sized_training_graph_within_a_node_budget)
{
    rg_options go = {14, 0.3, 0.2, 0, 4096};
    rm_problem *p = rg_training_problem(11, &go);
    cr_assert_not_null(p);
    cr_assert(p->n >= 29, "n = %d", p->n);
    size_t hi = checkpoint_all_peak(p, NULL), lo = rm_problem_peak_lower_bound(p);
    set_act(p, lo + (hi - lo) * 7 / 10);
    rm_milp_options o = test_options(RM_MILP_DEFAULT);
    o.node_limit = 300;
    rm_milp_result info;
    rm_schedule *s = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_milp(&s, &info, p, &o, &e), RM_OK, "%s", e.msg);
    check_schedule(p, s, info.objective);
    cr_assert(info.status == RM_STATUS_OPTIMAL || info.status == RM_STATUS_FEASIBLE);
    cr_assert(info.nodes <= 301);
    cr_assert(info.lower_bound <= info.objective * (1 + 1e-9));
    cr_assert(info.lp_bound <= info.lower_bound + 1e-9 * info.objective);
    cr_assert(fabs(info.gap - (info.objective - info.lower_bound) / info.objective) < 1e-12);
    rm_schedule_free(s);
    rm_problem_free(p);
}

/* ---------------------------------------------------------------- lp_round */

/* Valid, never below the DP's optimum, and as good as it is today: of the 39
 * budgets where the DP finds a schedule, rounding answered 38, 34 of them at
 * the optimum, 77 cost units above it in all with the tight budget rows (64
 * with half a memory unit of slack, whose bound is below Checkmate's
 * published one; so only the direction is pinned). A rounding that returns
 * no schedule, or a worse one, fails here. */
Test(lp_round, valid_and_never_below_the_optimum)
{
    round_tally t = {0};
    for (uint64_t seed = 41; seed <= 50; seed++) {
        rm_problem *p = seed % 2 ? random_dag(seed, 7) : small_training(seed);
        if (p->n > 8) {
            rm_problem_free(p);
            continue;
        }
        compare_with_dp(p, RM_MILP_DEFAULT, &t, "rounding");
        rm_problem_free(p);
    }
    cr_assert_eq(t.feasible, 39, "the instances changed: %d feasible budgets", t.feasible);
    cr_assert_geq(t.answered, 38, "rounding answered %d of %d feasible budgets", t.answered, t.feasible);
    cr_assert_geq(t.optimal, 34, "rounding reached the optimum at %d budgets", t.optimal);
    cr_assert_leq(t.excess, 77 + 1e-6, "rounding costs %g above the optima in all", t.excess);
}

/* The lemma behind phase two and the closure DP: for a fixed S, the R that
 * cheapest_R builds is no dearer and peaks no higher than any valid R. */
Test(cheapest_R, minimal_for_its_S)
{
    for (uint64_t seed = 1; seed <= 30; seed++) {
        rm_problem *p = seed % 2 ? random_dag(seed, 7) : small_training(seed);
        int n = p->n;
        if (n > 8) {
            rm_problem_free(p);
            continue;
        }
        rm_rng r = rm_rng_make(seed);
        rm_rs *s;
        rm_err e = {0};
        cr_assert_eq(rm_rs_create(&s, n, &e), RM_OK);
        for (int t = 1; t < n; t++)
            for (int i = 0; i < t; i++) *rm_S(s, t, i) = rm_rng_uniform(&r) < 0.4;
        cr_assert_eq(rm_milp_cheapest_R(s, p, &e), RM_OK);
        rm_sim_result sim;
        cr_assert_eq(rm_simulate_rs(&sim, p, s, &e), RM_OK, "%s", e.msg);
        for (int t = 0; t < n; t++) {
            uint32_t S = 0, Sn = 0, Rmin = 0;
            for (int i = 0; i < n; i++) {
                if (rm_S_at(s, t, i)) S |= 1u << i;
                if (t + 1 < n && rm_S_at(s, t + 1, i)) Sn |= 1u << i;
                if (rm_R_at(s, t, i)) Rmin |= 1u << i;
            }
            long long pmin = exact_stage_peak(p, t, S, Rmin, Sn);
            cr_assert(pmin >= 0);
            double cmin = 0;
            for (int i = 0; i <= t; i++)
                if (Rmin & (1u << i)) cmin += p->nodes[i].cost;
            for (uint32_t R = 0; R < (1u << t); R++) {
                uint32_t RR = R | (1u << t);
                long long pk = exact_stage_peak(p, t, S, RR, Sn);
                if (pk < 0) continue;
                double c = 0;
                for (int i = 0; i <= t; i++)
                    if (RR & (1u << i)) c += p->nodes[i].cost;
                cr_assert(c >= cmin - 1e-12, "seed %llu stage %d: R %#x costs %g < %g", (unsigned long long)seed, t, RR,
                          c, cmin);
                cr_assert(pk >= pmin, "seed %llu stage %d: R %#x peaks %lld < %lld", (unsigned long long)seed, t, RR,
                          pk, pmin);
            }
        }
        rm_rs_free(s);
        rm_problem_free(p);
    }
}

/* The oracle itself: the closure DP (cheapest R only) agrees with the full
 * enumeration, so the lemma behind phase two holds on these graphs. */
Test(exact_dp, full_and_closure_agree)
{
    for (uint64_t seed = 61; seed <= 70; seed++) {
        rm_problem *p = seed % 2 ? random_dag(seed, 8) : small_training(seed);
        if (p->n > 8) {
            rm_problem_free(p);
            continue;
        }
        size_t budgets[8];
        int nb = budget_ladder(budgets, p, 6);
        double full[8], closure[8];
        cr_assert_eq(exact_dp_solve(full, p, budgets, nb, 1), 0);
        cr_assert_eq(exact_dp_solve(closure, p, budgets, nb, 0), 0);
        for (int b = 0; b < nb; b++)
            cr_assert(full[b] == closure[b] || close_rel(full[b], closure[b]), "budget %zu: full %g, closure %g",
                      budgets[b], full[b], closure[b]);
        rm_problem_free(p);
    }
}

/* Infeasible only where nothing fits: below the trivial bound it says so,
 * and at every budget of the ladder above it (where the DP finds schedules)
 * it answers, at most 2 cost units above the optima in all (measured: 17
 * for 16 at the two tightest budgets, the optimum at the other four). */
Test(lp_round, reports_infeasible_honestly)
{
    rm_problem *p = random_dag(5, 7);
    set_act(p, rm_problem_peak_lower_bound(p) - 1);
    rm_schedule *s = NULL;
    rm_lp_round_result rr;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_lp_round(&s, &rr, p, NULL, &e), RM_ERR_INFEASIBLE);
    cr_assert_null(s);
    size_t budgets[8];
    int nb = budget_ladder(budgets, p, 6);
    double dp[8], excess = 0;
    cr_assert_eq(exact_dp_solve(dp, p, budgets, nb, 0), 0);
    for (int b = 0; b < nb; b++) {
        cr_assert_geq(dp[b], 0, "budget %zu: the DP finds no schedule", budgets[b]);
        set_act(p, budgets[b]);
        cr_assert_eq(rm_strategy_lp_round(&s, &rr, p, NULL, &e), RM_OK, "budget %zu (optimum %g): %s", budgets[b],
                     dp[b], e.msg);
        check_schedule(p, s, rr.objective);
        cr_assert(rr.objective >= dp[b] * (1 - 1e-9), "budget %zu: %g below the optimum %g", budgets[b], rr.objective,
                  dp[b]);
        excess += rr.objective - dp[b];
        rm_schedule_free(s);
        s = NULL;
    }
    cr_assert_leq(excess, 2 + 1e-9, "rounding costs %g above the optima in all", excess);
    rm_problem_free(p);
}

Test(lp_round, gap_and_bound_on_a_larger_graph)
{
    rg_options go = {16, 0.3, 0.2, 0, 4096};
    rm_problem *p = rg_training_problem(7, &go);
    cr_assert_not_null(p);
    size_t hi = checkpoint_all_peak(p, NULL), lo = rm_problem_peak_lower_bound(p);
    set_act(p, lo + (hi - lo) * 3 / 5);
    rm_schedule *s = NULL;
    rm_lp_round_result rr;
    rm_err e = {0};
    int rc = rm_strategy_lp_round(&s, &rr, p, NULL, &e);
    cr_assert_eq(rc, RM_OK, "%s", e.msg);
    check_schedule(p, s, rr.objective);
    cr_assert(rr.lp_bound <= rr.objective * (1 + 1e-9));
    cr_assert(rr.gap >= 0 && rr.gap < 1);
    cr_assert(fabs(rr.gap - (rr.objective - rr.lp_bound) / rr.objective) < 1e-12);
    cr_assert(rr.fitted >= 1 && rr.tried >= rr.fitted);
    /* Against the MILP: never below its proved lower bound, and no dearer
     * than the 211 measured with the tight budget rows (3/5 of the way from
     * the trivial bound to checkpoint-all; the MILP reaches 202 in 50 nodes,
     * the root bound is 197.4). At 1/2, where this test was written, the
     * tight relaxation rounds into nothing that fits (the route then answers
     * with its incumbent). */
    rm_milp_options o = test_options(RM_MILP_DEFAULT);
    o.node_limit = 50;
    rm_milp_result info;
    rm_schedule *ms = NULL;
    cr_assert_eq(rm_strategy_milp(&ms, &info, p, &o, &e), RM_OK, "%s", e.msg);
    cr_assert(rr.objective >= info.lower_bound * (1 - 1e-9), "rounding %g below the MILP's bound %g", rr.objective,
              info.lower_bound);
    cr_assert_leq(rr.objective, 211, "rounding costs %g", rr.objective);
    rm_schedule_free(ms);
    rm_schedule_free(s);
    rm_problem_free(p);
}

/* Phase two is exact: the schedule LP rounding returns is the cheapest R for
 * its own S (re-deriving R changes nothing), at budgets halfway between the
 * trivial bound and checkpoint-all's peak, where rounding must answer (it
 * does on these five graphs; it finds none on the next seed, issue 11). */
Test(lp_round, returns_the_cheapest_R_for_its_S)
{
    int answered = 0;
    for (uint64_t seed = 1; seed <= 5; seed++) {
        rg_options go = {6 + (int)seed, 0.3, 0.2, 0, 4096};
        rm_problem *p = rg_training_problem(seed, &go);
        size_t hi = checkpoint_all_peak(p, NULL), lo = rm_problem_peak_lower_bound(p);
        set_act(p, lo + (hi - lo) / 2);
        rm_schedule *s = NULL, *c = NULL;
        rm_rs *d = NULL;
        rm_lp_round_result rr;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_lp_round(&s, &rr, p, NULL, &e), RM_OK, "seed %llu: %s", (unsigned long long)seed,
                     e.msg);
        check_schedule(p, s, rr.objective);
        cr_assert_eq(rm_rs_from_schedule(&d, s, &e), RM_OK);
        cr_assert_eq(rm_milp_cheapest_R(d, p, &e), RM_OK);
        cr_assert_eq(rm_schedule_from_rs(&c, d, &e), RM_OK);
        cr_assert(rm_schedule_equal(c, s), "seed %llu: the rounded schedule is not phase two's",
                  (unsigned long long)seed);
        answered++;
        rm_rs_free(d);
        rm_schedule_free(c);
        rm_schedule_free(s);
        rm_problem_free(p);
    }
    cr_assert_eq(answered, 5);
}

/* Through the strategy table (the solver route): where checkpoint-all does
 * not fit, "lp_round" returns the rounded schedule itself (the same cost as
 * rm_strategy_lp_round), status ok, with the LP bound, not the trivial one,
 * at the DP's optimum on this graph. */
Test(lp_round, through_the_route)
{
    rg_options go = {5, 0.3, 0.2, 0, 4096};
    rm_problem *p = rg_training_problem(3, &go);
    size_t budgets[8];
    int nb = budget_ladder(budgets, p, 6);
    double dp[8];
    cr_assert_eq(exact_dp_solve(dp, p, budgets, nb, 0), 0, "n = %d", p->n);
    int solved = 0;
    double excess = 0;
    for (int b = 0; b + 1 < nb; b++) { /* the last is checkpoint-all's peak: the shortcut */
        if (dp[b] < 0) continue;
        set_act(p, budgets[b]);
        rm_schedule *s = NULL, *d = NULL;
        rm_strategy_stats st;
        rm_lp_round_result rr;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_run(&s, &st, rm_strategy_find("lp_round"), p, NULL, &e), RM_OK, "budget %zu: %s",
                     budgets[b], e.msg);
        cr_assert_eq(st.status, RM_STATUS_OK);
        cr_assert(st.has_bound && !st.bound_trivial);
        cr_assert(st.lp_bound <= dp[b] * (1 + 1e-9) && st.sim.cost >= dp[b] * (1 - 1e-9), "budget %zu: %g <= %g <= %g",
                  budgets[b], st.lp_bound, dp[b], st.sim.cost);
        cr_assert_eq(rm_strategy_lp_round(&d, &rr, p, NULL, &e), RM_OK, "%s", e.msg);
        cr_assert(close_rel(rr.objective, st.sim.cost));
        excess += st.sim.cost - dp[b];
        solved++;
        rm_schedule_free(s);
        rm_schedule_free(d);
    }
    cr_assert_geq(solved, 3, "%d budgets solved (n = %d, %d budgets)", solved, p->n, nb);
    /* Measured: rounding reaches the DP's optimum at every one of them. */
    cr_assert_leq(excess, 1e-9, "rounding costs %g above the optima in all", excess);
    rm_problem_free(p);
}

/* The coarse routes refuse a model by its size before building it
 * (route_coarse.c): the count must be the builder's own, on training graphs
 * and forward-only DAGs, with pruning and without. */
Test(milp, the_model_size_counted_without_building_it_is_the_builders)
{
    for (uint64_t seed = 1; seed <= 6; seed++) {
        rg_options go = {6 + (int)seed, 0.3, 0.3, 0, 4096};
        rm_problem *p = seed % 2 ? rg_training_problem(seed, &go) : rg_layered_problem(seed, 5, 4, 0.5, 0.3, 0);
        cr_assert_not_null(p);
        size_t act = rm_problem_activation_budget(p);
        if (act == 0 || act == SIZE_MAX) act = 1u << 30;
        unsigned levers[] = {RM_MILP_DEFAULT, RM_MILP_DEFAULT & ~RM_MILP_PRUNE};
        for (int k = 0; k < 2; k++) {
            rm_lp_model m;
            rm_err e = {0};
            long vars = -1;
            cr_assert_eq(rm_lp_model_variables(&vars, p, levers[k], &e), RM_OK, "%s", e.msg);
            cr_assert_eq(rm_lp_model_build(&m, p, act, levers[k], NULL, NULL, 0, 0, &e), RM_OK, "%s", e.msg);
            cr_assert_eq(vars, (long)m.nS + m.nR + m.nfree, "seed %lu, levers %#x: counted %ld, built %d + %d + %d",
                         (unsigned long)seed, levers[k], vars, m.nS, m.nR, m.nfree);
            cr_assert_gt(m.nfree, 0);
            rm_lp_model_free(&m);
        }
        rm_problem_free(p);
    }
}
