/* Scheduling strategies. Each returns a schedule (checked by the simulator
 * before it is returned) or RM_ERR_INFEASIBLE when it finds none within the
 * problem's budget. Names follow the Checkmate paper. */
#ifndef REMAT_STRATEGY_H
#define REMAT_STRATEGY_H

#include "schedule.h"

/* No recomputation: every value is kept until its last use. */
int rm_strategy_checkpoint_all(rm_schedule **out, const rm_problem *p, rm_err *e);

#endif
