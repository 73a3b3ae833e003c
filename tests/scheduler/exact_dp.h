/* An exact solver for tiny rematerialization problems, independent of the
 * MILP: a dynamic program over stage boundaries whose state is the set of
 * values resident at the start of a stage. It is the oracle the MILP tests
 * compare against, together with its own replay of the memory model. */
#ifndef REMAT_TEST_EXACT_DP_H
#define REMAT_TEST_EXACT_DP_H

#include <stddef.h>
#include <stdint.h>

#include "problem.h"
#include "schedule.h"

#define EXACT_DP_MAX_N 16

/* Peak of one stage by the simulator's rules, or -1 when the stage is
 * invalid: values S (resident at the start), R (computed, must contain t),
 * S_next (retained into the next stage; 0 for the last stage). Values of S
 * that nothing reads and nothing carries are freed at the start. */
long long exact_stage_peak(const rm_problem *p, int t, uint32_t S, uint32_t R, uint32_t S_next);

/* Replays a whole schedule with exact_stage_peak: 0 and its cost and peak,
 * or -1 (invalid; msg says why). */
int exact_replay(double *cost, size_t *peak, const rm_problem *p, const rm_schedule *s, char *msg, size_t msglen);

/* Minimum cost of any schedule whose activation peak fits each budget
 * (budgets[b], bytes; fixed bytes excluded). costs[b] = -1 when none fits.
 * full = 1 enumerates every valid R of each stage (independent of any
 * lemma); full = 0 uses only the cheapest R for each (S, S_next), the lemma
 * the rounding relies on, which the full mode checks on small graphs.
 * Returns 0, or -1 if p->n > EXACT_DP_MAX_N. */
int exact_dp_solve(double *costs, const rm_problem *p, const size_t *budgets, int nbudgets, int full);

#endif
