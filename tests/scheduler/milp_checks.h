/* What the MILP suites share (test_milp.c, test_boundary.c,
 * test_milp_engines.c): their small random problems, the budgets they try,
 * and the check every returned schedule gets (the simulator and the exact
 * DP's own replay, both agreeing with what the solver reported). */
#ifndef REMAT_TEST_MILP_CHECKS_H
#define REMAT_TEST_MILP_CHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "problem.h"
#include "schedule.h"

/* The activation budget (the budget less the fixed bytes), and setting it. */
size_t act_budget(const rm_problem *p);
void set_act(rm_problem *p, size_t act);

/* Checkpoint-all's activation peak (and its cost, when cost is not NULL). */
size_t checkpoint_all_peak(const rm_problem *p, double *cost);

/* Equal within a relative 1e-6: costs summed in another order. */
int close_rel(double a, double b);

/* A random DAG that is not shaped like a training graph: each node reads up
 * to three random earlier nodes, sizes 1..8 units of 16 bytes, costs 1..5,
 * 1000 fixed bytes. n <= EXACT_DP_MAX_N. */
rm_problem *random_dag(uint64_t seed, int n);

/* A training graph of 3 forward layers with skips and branches (7 to ~12
 * nodes, values up to 256 bytes). */
rm_problem *small_training(uint64_t seed);

/* A random DAG of n nodes (a chain, and now and then a second input) with
 * sizes around scale bytes, odd and distinct: budgets a byte apart at byte
 * scales where the solvers' tolerances are larger than a byte. */
rm_problem *scaled_dag(uint64_t seed, int n, size_t scale);

/* Up to steps budgets from the trivial lower bound to the checkpoint-all
 * peak, evenly spaced, without repeats; returns how many. */
int budget_ladder(size_t *b, const rm_problem *p, int steps);

/* Asserts s is valid and within the activation budget by the simulator and,
 * for n <= EXACT_DP_MAX_N, by the DP's independent replay, at the cost the
 * solver reported. */
void check_schedule(const rm_problem *p, const rm_schedule *s, double reported_cost);

#endif
