/* Orders of first computes (issue 29). Checkmate's model fixes the order in
 * which nodes are first computed to the problem's topological order; a
 * schedule may instead carry its own (schedule.h: rm_schedule.order). Such a
 * schedule is an ordinary schedule of the problem renumbered in its order,
 * which is what rm_problem_reorder builds: the rules of the memory model,
 * the simulator and every solver then apply there unchanged. */
#ifndef REMAT_ORDER_H
#define REMAT_ORDER_H

#include "problem.h"

/* RM_OK when order (n entries) is a topological order of p: every node
 * exactly once, each after all its deps; else RM_ERR_INVALID naming the first
 * node out of place. */
int rm_order_check(const rm_problem *p, const int *order, rm_err *e);

/* p renumbered in order (checked as above): node t of *out is order[t], its
 * deps are the positions of its deps (in their original sequence), names,
 * tags, costs, bytes, fixed bytes, budget and compute cap unchanged. */
int rm_problem_reorder(rm_problem **out, const rm_problem *p, const int *order, rm_err *e);

/* pos[order[t]] = t, for n entries. */
void rm_order_positions(int *pos, const int *order, int n);

/* The readers of each node (CSR): node v is read by rd[start[v] ..
 * start[v+1]), ascending. Both malloc'ed; -1 when out of memory. */
int rm_order_readers(const rm_problem *p, int **start, int **rd);

/* A topological order that keeps little alive (list scheduling; see
 * order.c), into out (n entries), from the readers above. -1 when out of
 * memory. */
int rm_order_lean(const rm_problem *p, const int *rd_start, const int *rd, int *out);

#endif
