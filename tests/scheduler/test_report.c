/* The problem's and the schedule's reports (scheduler/report.h) against
 * independent computations on small random graphs, and the budget's verdict
 * at its boundaries: exactly fixed + the trivial bound, a byte below it,
 * exactly the fixed bytes, exactly the no-remat peak and a byte below. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "random_graphs.h"
#include "report.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"

#define SEEDS 24

static rm_problem *graph(uint64_t seed)
{
    rg_options o = {3 + (int)(seed % 6), 0.3, 0.2, 0, 256};
    rm_problem *p = rg_training_problem(seed, &o);
    cr_assert_not_null(p);
    p->fixed_bytes = 16 * (seed % 4); /* some with none */
    return p;
}

/* The trivial bound by brute force: every node with each of its inputs,
 * looked up by scanning the whole problem (not through deps' indices). */
static size_t brute_lower_bound(const rm_problem *p, int *node)
{
    size_t best = 0;
    *node = 0;
    for (int k = 0; k < p->n; k++) {
        size_t need = p->nodes[k].bytes;
        for (int i = 0; i < p->n; i++)
            for (int d = 0; d < p->nodes[k].ndeps; d++)
                if (p->nodes[k].deps[d] == i) need += p->nodes[i].bytes;
        if (need > best) best = need, *node = k;
    }
    return best;
}

Test(report, facts_equal_independent_computations)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        rm_problem *p = graph(seed);
        p->budget = 0;
        rm_err e = {RM_OK, ""};
        rm_problem_report r;
        cr_assert_eq(rm_problem_report_of(&r, p, &e), RM_OK, "%s", e.msg);
        /* The no-remat peak: the checkpoint-all strategy, simulated. */
        rm_schedule *all = NULL;
        rm_sim_result sim;
        cr_assert_eq(rm_strategy_checkpoint_all(&all, p, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_simulate(&sim, p, all, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(r.noremat.peak_bytes, sim.peak_bytes, "seed %llu", (unsigned long long)seed);
        cr_assert_eq(r.noremat.cost, sim.cost);
        cr_assert_eq(r.noremat_total, p->fixed_bytes + sim.peak_bytes);
        /* Every node once. */
        double base = 0;
        for (int i = 0; i < p->n; i++) base += p->nodes[i].cost;
        cr_assert_eq(r.base_cost, base);
        cr_assert_eq(r.base_cost, sim.cost, "checkpoint-all computes every node once");
        int node;
        cr_assert_eq(r.lower_bound, brute_lower_bound(p, &node), "seed %llu", (unsigned long long)seed);
        cr_assert_eq(r.lb_node, node);
        cr_assert_leq(r.lower_bound, sim.peak_bytes, "no schedule goes below the bound, checkpoint-all included");
        rm_schedule_free(all);
        rm_problem_free(p);
    }
}

/* A schedule's report against rm_simulate and the schedule itself, on a
 * schedule that recomputes (Chen's sqrt(n)). */
Test(report, schedule_report_equals_the_simulator)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        rm_problem *p = graph(seed);
        p->budget = 0;
        rm_err e = {RM_OK, ""};
        rm_schedule *s = NULL;
        cr_assert_eq(rm_strategy_chen_sqrtn(&s, p, &e), RM_OK, "%s", e.msg);
        rm_sim_result sim;
        cr_assert_eq(rm_simulate(&sim, p, s, &e), RM_OK, "%s", e.msg);
        rm_schedule_report r;
        cr_assert_eq(rm_schedule_report_of(&r, p, s, NULL, RM_REPORT_ARENA, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(r.sim.cost, sim.cost);
        cr_assert_eq(r.sim.peak_bytes, sim.peak_bytes);
        cr_assert_eq(r.sim.recomputations, sim.recomputations);
        cr_assert_eq(r.ncomputes, rm_schedule_ncomputes(s));
        cr_assert_eq(r.nrecomputes, sim.recomputations, "every recompute is one compute outside its own stage");
        cr_assert_eq(r.recomputed_nodes, rm_schedule_recomputed_nodes(s));
        size_t top = 0, stop = 0;
        int first = -1, back = -1;
        for (int k = 0; k < r.nops; k++) {
            if (r.mem[k] > top) top = r.mem[k];
            if (first < 0 && r.ops[k].kind == RM_OP_COMPUTE && r.mem[k] == sim.peak_bytes) first = k;
            if (back < 0 && p->nodes[r.ops[k].stage].tag == RM_TAG_BACKWARD) back = k;
            cr_assert_leq(r.mem[k], r.stage_max[r.ops[k].stage]);
        }
        for (int t = 0; t < p->n; t++)
            if (r.stage_max[t] > stop) stop = r.stage_max[t];
        cr_assert_eq(top, sim.peak_bytes, "the timeline's highest point is the peak");
        cr_assert_eq(stop, sim.peak_bytes);
        cr_assert_eq(r.peak_op, first);
        cr_assert_eq(r.backward_op, back);
        cr_assert_not_null(r.arena, "%s", r.arena_note);
        cr_assert_eq(r.arena->nops, r.nops);
        rm_plan *pl = rm_schedule_report_take_arena(&r);
        cr_assert_null(r.arena);
        rm_plan_free(pl);
        rm_schedule_report_free(&r);
        rm_schedule_free(s);
        rm_problem_free(p);
    }
}

static rm_budget_verdict verdict_at(rm_problem *p, const rm_problem_report *r, size_t budget)
{
    p->budget = budget;
    return rm_budget_verdict_of(p, r);
}

/* rm_problem_check_budget agrees with the verdict, and every baseline
 * refuses at once where it says nothing fits. */
static void expect_check(rm_problem *p, const rm_problem_report *r, int feasible)
{
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_problem_check_budget(p, "test", &e), feasible ? RM_OK : RM_ERR_INFEASIBLE, "budget %zu: %s",
                 p->budget, e.msg);
    cr_assert_eq(rm_problem_check_budget_of(p, r, "test", &e), feasible ? RM_OK : RM_ERR_INFEASIBLE);
    if (feasible) return;
    int count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    for (int k = 0; k < count; k++) {
        rm_schedule *s = NULL;
        cr_assert_eq(rm_strategy_run(&s, NULL, &list[k], p, NULL, &e), RM_ERR_INFEASIBLE, "%s", list[k].name);
    }
}

Test(report, verdicts_at_the_boundaries)
{
    for (uint64_t seed = 1; seed <= SEEDS; seed++) {
        rm_problem *p = graph(seed);
        p->fixed_bytes = 4096; /* so that a byte below the bound is still above the fixed bytes */
        rm_err e = {RM_OK, ""};
        rm_problem_report r;
        cr_assert_eq(rm_problem_report_of(&r, p, &e), RM_OK, "%s", e.msg);
        size_t fixed = p->fixed_bytes, need = fixed + r.lower_bound, top = r.noremat_total;
        cr_assert_gt(r.lower_bound, 0);
        cr_assert_eq(verdict_at(p, &r, 0), RM_BUDGET_UNLIMITED);
        cr_assert_eq(verdict_at(p, &r, fixed - 1), RM_BUDGET_BELOW_FIXED);
        expect_check(p, &r, 0);
        cr_assert_eq(verdict_at(p, &r, fixed), RM_BUDGET_BELOW_FIXED);
        expect_check(p, &r, 0);
        cr_assert_eq(verdict_at(p, &r, need - 1), RM_BUDGET_BELOW_BOUND);
        expect_check(p, &r, 0);
        char why[RM_ERR_MSG_LEN];
        rm_budget_reason(why, sizeof why, RM_BUDGET_BELOW_BOUND, p, &r, NULL);
        cr_assert(strstr(why, "trivial lower bound") && strstr(why, p->nodes[r.lb_node].name), "%s", why);
        rm_budget_verdict v = verdict_at(p, &r, need);
        cr_assert_eq(v, need == top ? RM_BUDGET_FITS : RM_BUDGET_NEEDS_REMAT);
        expect_check(p, &r, 1);
        if (need < top) cr_assert_eq(verdict_at(p, &r, top - 1), RM_BUDGET_NEEDS_REMAT);
        cr_assert_eq(verdict_at(p, &r, top), RM_BUDGET_FITS);
        /* At exactly the no-remat peak the route answers checkpoint-all, optimal, and says so. */
        rm_schedule *s = NULL;
        rm_strategy_stats st;
        rm_strategy_options o;
        memset(&o, 0, sizeof o);
        o.facts = &r;
        cr_assert_eq(rm_strategy_run(&s, &st, rm_strategy_find("best"), p, &o, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(st.status, RM_STATUS_OPTIMAL);
        cr_assert_str_eq(st.source, "checkpoint_all");
        cr_assert_eq(st.sim.peak_bytes, r.noremat.peak_bytes);
        rm_schedule_free(s);
        /* The compute cap: below every node once nothing fits, at it checkpoint-all does. */
        p->max_cost = r.base_cost * (1 - 1e-6);
        cr_assert_eq(verdict_at(p, &r, top), RM_BUDGET_OVER_CAP);
        p->max_cost = r.base_cost;
        cr_assert_eq(verdict_at(p, &r, top), RM_BUDGET_FITS);
        rm_problem_free(p);
    }
}

Test(report, percentages_become_budgets_in_one_place)
{
    cr_assert_eq(rm_budget_percent_bytes(100, 12345), 12345);
    cr_assert_eq(rm_budget_percent_bytes(50, 12345), 6172, "rounded down");
    cr_assert_eq(rm_budget_percent_bytes(1e-9, 12345), 1, "at least a byte");
    cr_assert_eq(rm_budget_percent_bytes(1e30, 12345), RM_PROBLEM_MAX_BYTES, "at most 2^62");
}

/* The facts a caller brings change nothing in the answers: every strategy
 * answers the same with them as without (the route computes its own), and
 * says where its schedule came from. */
Test(report, answers_with_and_without_the_callers_facts)
{
    int count;
    const rm_strategy_info *list = rm_strategy_list_all(&count);
    for (uint64_t seed = 1; seed <= 8; seed++) {
        rm_problem *p = graph(seed);
        rm_err e = {RM_OK, ""};
        rm_problem_report r;
        cr_assert_eq(rm_problem_report_of(&r, p, &e), RM_OK, "%s", e.msg);
        /* Between the bound and the no-remat peak: something must recompute. */
        p->budget = p->fixed_bytes + r.lower_bound + (r.noremat.peak_bytes - r.lower_bound) / 2;
        for (int k = 0; k < count; k++) {
            rm_strategy_options o;
            memset(&o, 0, sizeof o);
            o.node_limit = 50;
            rm_schedule *a = NULL, *b = NULL;
            rm_strategy_stats sa, sb;
            int ra = rm_strategy_run(&a, &sa, &list[k], p, &o, &e);
            o.facts = &r;
            int rb = rm_strategy_run(&b, &sb, &list[k], p, &o, &e);
            cr_assert_eq(ra, rb, "%s, seed %llu", list[k].name, (unsigned long long)seed);
            if (!ra) {
                cr_assert_eq(sa.sim.cost, sb.sim.cost, "%s", list[k].name);
                cr_assert_eq(sa.sim.peak_bytes, sb.sim.peak_bytes, "%s", list[k].name);
                cr_assert_str_eq(sa.source, sb.source, "%s", list[k].name);
                cr_assert_not_null(sa.source, "%s answers without saying whose schedule it is", list[k].name);
                if (!list[k].solve_opt) cr_assert_str_eq(sa.source, list[k].name);
            }
            rm_schedule_free(a);
            rm_schedule_free(b);
        }
        rm_problem_free(p);
    }
}
