/* Graph coarsening for large problems: the MILP and LP rounding
 * are out of reach beyond ~80 nodes (lp_model.h: the LP of ResNet-18, 147 nodes,
 * alone takes minutes), so a large problem is solved on a coarse problem of
 * super-nodes and the answer is expanded back and judged by the simulator.
 *
 * A group is a run of consecutive nodes (in the problem's topological
 * order) with the same tag. Computing the super-node computes its members in
 * order; its kept members are those read by a later group (plus its last
 * member): they stay resident as long as the super-node does, the others are
 * freed after their last reader inside the group. The super-node's
 * - cost is the sum of its members' costs;
 * - deps are the groups its members read from outside the group;
 * - bytes are its internal peak: the most bytes of its own members resident
 *   at once while they are computed in order (kept members held to the end).
 *   That is at least the kept members' bytes, so the coarse memory model
 *   charges every point of the real one at least as much: a coarse schedule's
 *   simulated peak bounds its expansion's (an upper bound, loose by the
 *   internal transient while the super-node is held afterwards).
 *
 * Expansion (rm_coarsen_expand): coarse stage T is original stages a..b (T's
 * members). Stage a recomputes the members of every group the coarse stage
 * recomputes, in order, then a; stages a+1..b compute one member each.
 * Retained: the kept members of groups the coarse S retains; inside T's
 * stages, a value is carried while a later member of T reads it or while its
 * group is retained into the next coarse stage. Every compute of the
 * expansion is a member of a coarse compute and vice versa, so its cost
 * equals the coarse cost exactly; its peak is at most the coarse peak.
 * Groups of one node reproduce the original problem and schedule exactly. */
#ifndef REMAT_COARSEN_H
#define REMAT_COARSEN_H

#include <stdint.h>

#include "schedule.h"

/* Default size of the coarse problem: where lp_solve still proves
 * optimality (milp.h). */
#define RM_COARSEN_TARGET 64

typedef struct rm_coarsening {
    int n;         /* original nodes */
    int m;         /* groups (coarse nodes) */
    int *first;    /* m + 1 entries: group g is nodes first[g] .. first[g+1]-1 */
    int *group;    /* n: the group of each node */
    int *lastuse;  /* n: last reader of each node (the node itself if none) */
    uint8_t *keep; /* n: a kept member (read by a later group, or its group's last node) */
} rm_coarsening;

/* A coarsening from group boundaries: first has m + 1 entries, first[0] = 0,
 * strictly increasing, first[m] = p->n. Tags may mix (soundness does not need
 * them to agree; rm_coarsen_auto keeps them apart). */
int rm_coarsen_from_groups(rm_coarsening *c, const rm_problem *p, const int *first, int m, rm_err *e);

/* Greedy: repeatedly merges the adjacent pair of same-tag groups whose merged
 * super-node has the fewest bytes, never a merge that lifts the coarse
 * problem's trivial lower bound above p's activation budget, until at most
 * target groups remain or no merge is allowed (then m > target). */
int rm_coarsen_auto(rm_coarsening *c, const rm_problem *p, int target, rm_err *e);
/* The same, stopped with RM_ERR_BUDGET once deadline (deadline.h; 0 = none)
 * has passed: each merge is linear in p, about a second in all on 100,000
 * nodes. */
int rm_coarsen_auto_until(rm_coarsening *c, const rm_problem *p, int target, double deadline, rm_err *e);

void rm_coarsening_free(rm_coarsening *c);

/* The coarse problem (same fixed bytes and budget). Names: the first
 * member's, with "+k" for k more members. */
int rm_coarsen_problem(rm_problem **out, const rm_problem *p, const rm_coarsening *c, rm_err *e);

/* Super-node bytes of group g (its internal peak, see above). */
size_t rm_coarsen_group_bytes(const rm_problem *p, const rm_coarsening *c, int g);

/* The expansion above of a coarse schedule cs (which must be valid for the
 * coarse problem: it is checked with the coarse simulator first). The result
 * is valid for p (checked with rm_simulate), not budget-checked. */
int rm_coarsen_expand(rm_schedule **out, const rm_problem *p, const rm_coarsening *c, const rm_schedule *cs, rm_err *e);

#endif
