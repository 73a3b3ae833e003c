/* The one clock of remat: CLOCK_MONOTONIC in seconds. Deadlines
 * (scheduler/deadline.h), the trainer's and profiler's timings, the CPU
 * backend's timer and the benches all read it, so that a time limit and a
 * measured time mean the same seconds everywhere. */
#ifndef REMAT_CLOCK_H
#define REMAT_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (an arbitrary origin: only differences mean
 * anything). */
double rm_now(void);

/* The median of n >= 1 timings (sorts x in place): what the profiler and
 * `remat train` report of repeated steps, since a step that a page fault or
 * another process slowed must not move the figure. */
double rm_median(double *x, int n);

#endif
