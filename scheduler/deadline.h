/* Time limits: one clock and one deadline for a whole solve.
 *
 * A time limit is a promise about wall clock: `remat plan --time-limit T`
 * answers within T seconds of the problem being read, plus a small margin
 * (docs/reliability.md, "Time limits"). So the limit becomes one deadline,
 * a point on the monotonic clock computed once when the strategy starts
 * (rm_strategy_run), and every phase under it (the baselines' sweeps and
 * dynamic programs, coarsening, the LP, branch and bound, the expansion)
 * checks that same point and stops with the best answer it has, instead of
 * each phase being handed "seconds" that it counts from its own start.
 * A deadline of 0 means none. */
#ifndef REMAT_DEADLINE_H
#define REMAT_DEADLINE_H

#include "clock.h" /* rm_now: the one clock */

/* The deadline limit_s seconds from now; 0 (none) when limit_s <= 0. */
double rm_deadline_in(double limit_s);

/* 1 when deadline is set and has passed. */
int rm_deadline_passed(double deadline);

/* Seconds left before deadline (never below 0); -1 when there is none. */
double rm_deadline_left(double deadline);

/* A point frac (0..1) of the way from now to deadline: the part of the time
 * left that one phase may use; 0 when deadline is 0. */
double rm_deadline_share(double deadline, double frac);

/* The earlier of two deadlines (0 = none). */
double rm_deadline_min(double a, double b);

#endif
