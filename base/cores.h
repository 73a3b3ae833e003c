/* How many cores this process may run on. */
#ifndef REMAT_CORES_H
#define REMAT_CORES_H

/* Its CPU affinity (sched_getaffinity: `taskset -c 0` makes it 1), else the
 * online CPUs; at least 1. What the CPU backend's threads default to and
 * what the MILP's "auto" engine counts (milp_engine.c). */
int rm_usable_cores(void);

#endif
