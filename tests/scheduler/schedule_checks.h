/* What every answer of a strategy must be, for the suites of strategies
 * that may choose their own order (test_anneal.c, test_dtr.c): checked in
 * the problem's order and, renumbered in its own, by the exact DP's
 * independent replay; within the budget; planned to an arena whose live
 * peak is the simulated peak; written and read back unchanged. */
#ifndef REMAT_TEST_SCHEDULE_CHECKS_H
#define REMAT_TEST_SCHEDULE_CHECKS_H

#include "schedule.h"
#include "simulate.h"

/* The simulator's verdict on s (asserted valid). */
rm_sim_result sc_simulate(const rm_problem *p, const rm_schedule *s);
/* Checkpoint-all's peak: every value kept until its last reader. */
size_t sc_noremat_peak(const rm_problem *p);
/* Every check above; what names the case in failures. Returns the
 * simulation. */
rm_sim_result sc_check_answer(const rm_problem *p, const rm_schedule *s, const char *what);

#endif
