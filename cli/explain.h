/* The teaching report of `remat explain`, written to any stream: what the
 * budget means next to the no-remat peak and the lower bound, and, for one
 * schedule, which values are dropped and recomputed, when and why, where the
 * peak is and what the recomputations cost. `remat explain` writes it to
 * stdout; `remat lesson` captures it (open_memstream) for its page. */
#ifndef REMAT_CLI_EXPLAIN_H
#define REMAT_CLI_EXPLAIN_H

#include <stdio.h>

#include "cli_util.h"
#include "strategy.h"

/* The report's first line (which problem), then "What the budget means":
 * cp's budget (cp->p->budget, set) against the no-remat peak and the lower
 * bound; bud is the budget as the user gave it (a percentage is said as
 * one). */
void rm_explain_write_budget(FILE *f, const rm_cli_problem *cp, const rm_cli_budget *bud);

/* "The schedule" onwards, for s, the schedule strategy st returned with
 * stats, and r, its report (scheduler/report.h: the text renders its
 * operations, timeline and peak operation; it replays nothing). */
void rm_explain_write_schedule(FILE *f, const rm_cli_problem *cp, const rm_schedule *s, const rm_schedule_report *r,
                               const rm_strategy_info *st, const rm_strategy_stats *stats);

#endif
