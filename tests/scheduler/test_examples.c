/* The tutorial's example problems (docs/examples/, docs/tutorial.md) say
 * what they teach in their comments; these tests hold them to it. The
 * six-layer chain must part the chain heuristics from each other and from the
 * optimum at its own budget, and that optimum is checked by the exact dynamic
 * program (tests/scheduler/exact_dp.c, independent of the MILP). The
 * uniform chain's no-remat peak is the one lesson 1 derives by hand, and
 * the U-Net's skips defeat every heuristic at its lower bound. */
#include <criterion/criterion.h>
#include <math.h>

#include "exact_dp.h"
#include "sanitized.h"
#include "simulate.h"
#include "strategy.h"

#define EXAMPLE(name) REMAT_SOURCE_DIR "/docs/examples/" name

static rm_problem *read_example(const char *path)
{
    rm_problem *p = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    return p;
}

/* The cost of a strategy's schedule within p's budget, checked to fit by
 * the simulator; -1 when the strategy finds none. */
static double strategy_cost(const char *name, const rm_problem *p)
{
    const rm_strategy_info *st = rm_strategy_find(name);
    cr_assert_not_null(st, "no strategy %s", name);
    rm_strategy_options o = {0};
    o.node_limit = 100000; /* deterministic: no wall-clock limit */
    rm_schedule *s = NULL;
    rm_strategy_stats stats;
    rm_err e = {0};
    if (rm_strategy_run(&s, &stats, st, p, &o, &e) != RM_OK) return -1;
    cr_assert_leq(p->fixed_bytes + stats.sim.peak_bytes, p->budget, "%s: over the budget", name);
    rm_schedule_free(s);
    return stats.sim.cost;
}

Test(examples, six_layer_chain_parts_every_heuristic_from_the_enumerated_optimum)
{
    RM_SKIP_WHEN_SANITIZED();
    rm_problem *p = read_example(EXAMPLE("chain-6.txt"));
    cr_assert_leq(p->n, EXACT_DP_MAX_N);
    cr_assert_gt(p->budget, 0, "the example carries its budget");
    size_t act = p->budget - p->fixed_bytes;
    double optimum = -1;
    /* The cheapest R for each pair of retained sets (full = 0): the lemma
     * exact_dp::full_and_closure_agree checks against enumerating every R.
     * Enumerating here took 34 s (173 s under ASan), the slowest test of
     * the suite, for the same optimum. */
    cr_assert_eq(exact_dp_solve(&optimum, p, &act, 1, 0), 0);
    cr_assert_gt(optimum, 0, "some schedule fits the example's budget");

    cr_assert_eq(strategy_cost("milp", p), optimum, "the MILP must find the enumerated optimum");
    cr_assert_eq(strategy_cost("best", p), optimum, "the default must find the enumerated optimum");

    const char *heuristics[] = {"chen_sqrtn", "chen_greedy", "griewank"};
    double c[3];
    for (int k = 0; k < 3; k++) {
        c[k] = strategy_cost(heuristics[k], p);
        cr_assert_gt(c[k], optimum, "%s (%g) must fit, and cost more than the optimum %g", heuristics[k], c[k],
                     optimum);
    }
    cr_assert(c[0] != c[1] && c[1] != c[2] && c[0] != c[2], "the three heuristics must differ: %g %g %g", c[0], c[1],
              c[2]);
    /* The figures the file's comment and the tutorial quote. */
    double base = 0;
    for (int i = 0; i < p->n; i++) base += p->nodes[i].cost;
    cr_assert(fabs(100.0 * (optimum / base - 1) - 9.09) < 0.005, "optimum %+.2f%%", 100.0 * (optimum / base - 1));
    cr_assert(fabs(100.0 * (c[2] / base - 1) - 72.73) < 0.005, "griewank %+.2f%%", 100.0 * (c[2] / base - 1));
    rm_problem_free(p);
}

/* Lesson 1's hand derivation: in a uniform chain of L layers with values of
 * one size u, the peak is reached computing loss.grad, the first backward
 * node: every forward output (the input and f1..fL, L + 1 values) is still
 * held for the backward, with the loss and loss.grad itself: (L + 2) u plus
 * the loss's bytes. */
Test(examples, uniform_chain_peaks_where_lesson_one_says)
{
    rm_problem *p = read_example(EXAMPLE("chain-8.txt"));
    const size_t u = 1048576, loss = 4;
    const int layers = 8;
    cr_assert_eq(p->n, 2 * layers + 3);
    rm_schedule *s = NULL;
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_checkpoint_all_fit(&s, &r, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(r.peak_bytes, (size_t)(layers + 2) * u + loss, "peak %zu", r.peak_bytes);
    cr_assert_eq(r.cost, (double)p->n);
    rm_schedule_free(s);
    rm_problem_free(p);
}

/* Lesson 6: at the U-Net's lower bound the MILP finds the enumerated
 * optimum; every heuristic that chooses checkpoints along the order (the
 * chain heuristics and OGC) finds none, and DTR, which evicts value by
 * value, finds the optimum too. */
Test(examples, unet_skips_at_the_lower_bound_no_checkpoint_heuristic_fits)
{
    rm_problem *p = read_example(EXAMPLE("unet-skip.txt"));
    cr_assert_leq(p->n, EXACT_DP_MAX_N);
    p->budget = p->fixed_bytes + rm_problem_peak_lower_bound(p);
    size_t act = p->budget - p->fixed_bytes;
    double optimum = -1;
    cr_assert_eq(exact_dp_solve(&optimum, p, &act, 1, 0), 0);
    cr_assert_gt(optimum, 0, "a schedule fits at the lower bound");
    cr_assert_eq(strategy_cost("milp", p), optimum);
    const char *heuristics[] = {"chen_sqrtn", "chen_greedy", "griewank", "ap_greedy", "linearized_greedy", "ogc"};
    for (size_t k = 0; k < sizeof heuristics / sizeof heuristics[0]; k++)
        cr_assert_eq(strategy_cost(heuristics[k], p), -1, "%s fits, the lesson says none does", heuristics[k]);
    cr_assert_eq(strategy_cost("dtr", p), optimum, "the lesson says dtr finds the optimum");
    rm_problem_free(p);
}
