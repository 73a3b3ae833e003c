/* What a strategy or solver run ended with: one enum for the baselines, LP
 * rounding, the MILP and the route, and one name for printing it. */
#ifndef REMAT_STATUS_H
#define REMAT_STATUS_H

typedef enum rm_status {
    RM_STATUS_ERROR = 0,      /* failed (see the error), or not run yet */
    RM_STATUS_OK,             /* a schedule that fits, without a claim of optimality (baselines, LP rounding) */
    RM_STATUS_OPTIMAL,        /* proved optimal (to lp_solve's gap tolerances) */
    RM_STATUS_FEASIBLE,       /* a schedule within budget; a limit stopped the proof (see the gap) */
    RM_STATUS_INFEASIBLE,     /* no schedule fits the budget (proved, or none found by a heuristic) */
    RM_STATUS_NO_SOLUTION,    /* the MILP: a limit was hit before any schedule was found; not proved infeasible */
    RM_STATUS_NOT_APPLICABLE, /* a heuristic that needs a forward/backward split, on a DAG without backward nodes */
} rm_status;

/* "error", "ok", "optimal", "feasible", "infeasible", "no solution", "n/a". */
const char *rm_status_name(rm_status s);

#endif
