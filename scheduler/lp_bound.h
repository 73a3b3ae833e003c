/* A lower bound on the cost of any schedule that fits a problem's budget,
 * cheap enough for the hundreds of nodes where Checkmate's LP (lp_model.h)
 * is out of reach: the LP of a relaxed model with only S and R, no FREE
 * variables, one memory row per block of consecutive stages, where a block
 * recomputes each value at most once. Blocks end where checkpoint-all
 * overflows the budget; levels of 16, 32, 64, ... blocks are solved while
 * the time lasts and the best bound is kept. The formulation and why every
 * valid schedule satisfies it are at the top of lp_bound.c. Never below the
 * trivial bound (every node once), which it returns when no level is solved
 * in time; on graphs of at most 80 nodes it was never below the full LP
 * relaxation (rm_milp_relax) in the measurements of lp_bound.c. */
#ifndef REMAT_LP_BOUND_H
#define REMAT_LP_BOUND_H

#include "problem.h"

typedef struct rm_lp_bound_result {
    double bound;             /* no schedule within the budget costs less */
    double trivial;           /* every node once */
    int solved;               /* 1: bound is a relaxed LP's optimum (never below trivial); 0: trivial */
    int levels;               /* block partitions solved (the bound is the best of them) */
    int blocks, ncols, nrows; /* the last level's model */
    double seconds;
} rm_lp_bound_result;

/* The bound at p's budget, within time_limit_s (0 = none). A budget of 0
 * (unlimited) gives the trivial bound, which checkpoint-all attains.
 * RM_ERR_INFEASIBLE when the budget is below the trivial peak or the relaxed
 * LP is infeasible (then no schedule fits); RM_ERR_SOLVER / RM_ERR_NOMEM for
 * lp_solve failures. A time limit hit is no error: solved = 0. */
int rm_lp_bound(rm_lp_bound_result *out, const rm_problem *p, double time_limit_s, rm_err *e);
/* One level: the bound of the partition of the stages into blocks ending at
 * ends[0..nends-1] (ascending; ends at or after the last stage are
 * ignored). Every partition gives a valid bound; one block per stage is the
 * finest. For tests and measurements. */
int rm_lp_bound_blocks(rm_lp_bound_result *out, const rm_problem *p, const int *ends, int nends, rm_err *e);

#endif
