/* The exact simulator: the one judge of every schedule. It replays the
 * operation sequence under Checkmate's memory model (a node's output is
 * allocated when it is computed, its inputs must be resident, values are
 * freed right after their last use in a stage unless retained) and returns
 * the total cost and the activation peak. Invalid schedules are rejected with
 * a message saying which stage and node broke which rule. */
#ifndef REMAT_SIMULATE_H
#define REMAT_SIMULATE_H

#include <stddef.h>

#include "schedule.h"

typedef struct rm_sim_result {
    double cost;       /* sum of the costs of every compute */
    size_t peak_bytes; /* activation peak, fixed bytes excluded */
    int peak_stage;    /* where the peak happens */
    int peak_node;
    long recomputations; /* computes beyond the first of each node */
} rm_sim_result;

/* p must be valid (rm_problem_validate; problems from rm_problem_from_graph
 * and rm_problem_read are). O(n + runs + computes * deps): it runs inside
 * budget bisections, so it does not re-validate p. peak_stage/peak_node give
 * the first compute that reaches the peak. */
int rm_simulate(rm_sim_result *out, const rm_problem *p, const rm_schedule *s, rm_err *e);

/* rm_simulate of the dense form (the solvers' candidates). */
int rm_simulate_rs(rm_sim_result *out, const rm_problem *p, const rm_rs *d, rm_err *e);

/* Replays an operation sequence from rm_schedule_ops (what rm_simulate does
 * after generating it). mem_after, when not NULL, has nops entries and gets
 * the resident activation bytes after each operation: the memory timeline. */
int rm_simulate_ops(rm_sim_result *out, size_t *mem_after, const rm_problem *p, const rm_schedule *s, const rm_op *ops,
                    int nops, rm_err *e);

/* 1 when fixed_bytes + peak fits the problem's budget (always when budget = 0)
 * and the cost is within its compute cap (max_cost, when set). */
int rm_sim_fits(const rm_problem *p, const rm_sim_result *r);

/* 1 when a is the better answer than b: cheaper, or as cheap at a lower
 * peak. The one order every "keep the best schedule" loop uses. */
static inline int rm_sim_better(const rm_sim_result *a, const rm_sim_result *b)
{
    return a->cost < b->cost || (a->cost == b->cost && a->peak_bytes < b->peak_bytes);
}

#endif
