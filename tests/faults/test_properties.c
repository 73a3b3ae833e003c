/* Property tests over random training graphs, budgets and every strategy.
 *
 * test_baselines.c sweeps the baselines over random graphs at fixed budget
 * levels, test_executor.c plans them (rm_strategy_list only: no solvers).
 * Here the solvers join: for 50 seeded random training graphs (sizes a
 * multiple of the arena alignment, as the trainer builds its problems) and
 * a seeded random budget between the trivial lower bound and the no-remat
 * peak, every strategy of rm_strategy_list_all (lp_round, and milp under a
 * node limit, so the run is deterministic) either reports RM_ERR_INFEASIBLE
 * or returns a schedule that
 *  - the simulator accepts (valid) with a peak within the budget,
 *  - turns into an operation sequence whose arena plan (engine/plan.h) is
 *    consistent (rm_plan_check), holds at most the simulated peak live at
 *    any time (live_peak == the simulator's peak), and
 *  - either fits its arena in the budget (span <= budget) or, where the
 *    placement's fragmentation pushes the span over, is refused by the
 *    budgeted arena the executor allocates (rm_arena_create refuses a
 *    capacity over the budget), never run over it.
 * Checkpoint-all always fits at the no-remat peak, and at the lower bound
 * the MILP, being exact, must either find a schedule or say it found none
 * within the node limit, never return one over the budget. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "backend_cpu.h"
#include "plan.h"
#include "problem.h"
#include "rng.h"
#include "schedule.h"
#include "scheduler/random_graphs.h"
#include "simulate.h"
#include "strategy.h"

static rm_sim_result simulate(const rm_problem *p, const rm_schedule *s, const char *what)
{
    rm_sim_result r;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s: invalid schedule: %s", what, e.msg);
    return r;
}

/* The plan of s: consistent, its live peak the simulator's. Returns the span. */
static size_t plan_span(const rm_problem *p, const rm_schedule *s, size_t sim_peak, const char *what)
{
    rm_op *ops;
    int nops;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_schedule_ops(&ops, &nops, p, s, &e), RM_OK, "%s: %s", what, e.msg);
    size_t *bytes = malloc((size_t)p->n * sizeof *bytes);
    cr_assert_not_null(bytes);
    for (int i = 0; i < p->n; i++) bytes[i] = p->nodes[i].bytes;
    rm_plan *pl;
    cr_assert_eq(rm_plan_create(&pl, bytes, p->n, ops, nops, &e), RM_OK, "%s: %s", what, e.msg);
    cr_assert_eq(rm_plan_check(pl, &e), RM_OK, "%s: %s", what, e.msg);
    cr_assert_eq(pl->live_peak, sim_peak, "%s: plan live peak %zu, simulator %zu", what, pl->live_peak, sim_peak);
    cr_assert_geq(pl->span, pl->live_peak, "%s", what);
    size_t span = pl->span;
    rm_plan_free(pl);
    free(bytes);
    free(ops);
    return span;
}

Test(properties, every_strategy_on_random_graphs_and_budgets, .timeout = 60)
{
    int count;
    const rm_strategy_info *list = rm_strategy_list_all(&count);
    rm_rng rng = rm_rng_make(77);
    rm_strategy_options o = {.node_limit = 30};
    rm_backend *be;
    rm_err be_e = {RM_OK, ""};
    cr_assert_eq(rm_backend_cpu_create(&be, &be_e), RM_OK, "%s", be_e.msg);
    long solved = 0, infeasible = 0, over_span = 0, solver_runs = 0;
    for (uint64_t seed = 1; seed <= 50; seed++) {
        rg_options go = {.forward = 3 + (int)(rm_rng_next(&rng) % 10),
                         .skip_prob = 0.05 * (double)(rm_rng_next(&rng) % 8),
                         .branch_prob = 0.05 * (double)(rm_rng_next(&rng) % 6),
                         .max_skip = (int)(rm_rng_next(&rng) % 6),
                         .max_bytes = 64 * (1 + (size_t)(rm_rng_next(&rng) % 16))};
        rm_problem *p = rg_training_problem(seed, &go);
        cr_assert_not_null(p);
        /* Aligned sizes, as the trainer's problems have: the plan's live
         * peak is then exactly the simulator's. */
        for (int i = 0; i < p->n; i++) p->nodes[i].bytes = rm_align_up(p->nodes[i].bytes);
        rm_schedule *s;
        rm_err e = {RM_OK, ""};
        p->budget = 0;
        cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
        size_t top = simulate(p, s, "checkpoint_all").peak_bytes, lb = rm_problem_peak_lower_bound(p);
        rm_schedule_free(s);
        cr_assert_leq(lb, top);
        /* Uniform in [lb, top], the ends included now and then. */
        uint64_t u = rm_rng_next(&rng) % 12;
        size_t act = u == 0 ? lb : u == 11 ? top : lb + (size_t)((double)(top - lb) * (double)(u - 1) / 9.0);
        p->budget = p->fixed_bytes + act;
        for (int k = 0; k < count; k++) {
            char what[128];
            snprintf(what, sizeof what, "seed %llu (%d nodes, activation budget %zu of [%zu, %zu]) %s",
                     (unsigned long long)seed, p->n, act, lb, top, list[k].name);
            rm_strategy_stats stats;
            s = NULL;
            int rc = rm_strategy_run(&s, &stats, &list[k], p, &o, &e);
            if (list[k].solve_opt) solver_runs++;
            if (rc == RM_ERR_INFEASIBLE) {
                cr_assert_null(s, "%s", what);
                cr_assert(list[k].solve != rm_strategy_checkpoint_all || act < top,
                          "%s: checkpoint-all infeasible at its own peak", what);
                infeasible++;
                continue;
            }
            cr_assert_eq(rc, RM_OK, "%s: %s", what, e.msg);
            rm_sim_result r = simulate(p, s, what);
            cr_assert_leq(r.peak_bytes, act, "%s: simulated peak %zu over the budget", what, r.peak_bytes);
            cr_assert_eq(r.peak_bytes, stats.sim.peak_bytes, "%s: the stats disagree with the simulator", what);
            size_t span = plan_span(p, s, r.peak_bytes, what);
            if (span > act) {
                /* Fragmentation: an arena of the plan's span does not fit
                 * the budget, and the arena refuses to be created over it
                 * (the executor then reports RM_ERR_BUDGET and the trainer
                 * solves again for less) rather than run past it. */
                rm_arena *a = NULL;
                cr_assert_neq(rm_arena_create(&a, be, span, act, &e), RM_OK, "%s: an arena of %zu in a budget of %zu",
                              what, span, act);
                cr_assert_null(a);
                over_span++;
            }
            solved++;
            rm_schedule_free(s);
        }
        rm_problem_free(p);
    }
    rm_backend_free(be);
    cr_log_info("properties: %ld schedules checked (%ld solver runs), %ld infeasible answers, %ld plans whose "
                "fragmented span exceeds the budget",
                solved, solver_runs, infeasible, over_span);
    cr_assert_gt(solved, 300);
    cr_assert_gt(infeasible, 0);
}
