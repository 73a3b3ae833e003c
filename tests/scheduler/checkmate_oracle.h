/* The LP relaxation of Checkmate's MILP exactly as published (Jain et al.,
 * MLSys 2020, section 4, and parasj/checkmate's gurobi_solver.py), built
 * with lp_solve directly and sharing no code with scheduler/lp_model.c, so
 * that the tests can hold remat's relaxation against the paper's: per-edge
 * FREE forced from both sides by the hazard count, and Checkmate's U
 * variables in [0, budget] at every point of every stage. */
#ifndef REMAT_TEST_CHECKMATE_ORACLE_H
#define REMAT_TEST_CHECKMATE_ORACLE_H

#include <stddef.h>

#include "problem.h"

typedef struct cm_oracle_relaxation {
    int n;
    double bound; /* the LP optimum in cost units: a lower bound on every schedule within act bytes */
    double *S;    /* n x n row-major, fractional S[t][i] (0 where the model has no S) */
} cm_oracle_relaxation;

/* Solves the published LP relaxation of p at an activation budget of act
 * bytes. Returns 0 (optimal, out filled), 1 (infeasible: no schedule fits),
 * or -1 (lp_solve failed or out of memory; msg says why). */
int cm_oracle_relax(cm_oracle_relaxation *out, const rm_problem *p, size_t act, char *msg, size_t msglen);
void cm_oracle_free(cm_oracle_relaxation *r);

#endif
