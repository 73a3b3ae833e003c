/* Checkmate's two-phase LP rounding (Jain et al., MLSys 2020, section 5):
 * round the retention matrix S of the LP relaxation (lp_model.h), then
 * compute the cheapest R for that S exactly. The scalable fallback when the
 * MILP is out of reach, and the incumbent that makes lp_solve's branch and
 * bound usable at all (milp.c). */
#ifndef REMAT_LP_ROUND_H
#define REMAT_LP_ROUND_H

#include <stddef.h>
#include <stdint.h>

#include "lp_model.h"
#include "schedule.h"

typedef struct rm_lp_round_options {
    int seeds;           /* randomized roundings after the deterministic thresholds */
    uint64_t seed;       /* base seed of the randomized roundings */
    double time_limit_s; /* for the LP relaxation; 0 = none */
    unsigned levers;     /* model levers for the relaxation (RM_MILP_*) */
    int tighten;         /* when nothing fits: re-solve the relaxation at 95%, 90%, ... of the
                            budget, up to this many times, and round those */
} rm_lp_round_options;

void rm_lp_round_options_default(rm_lp_round_options *o);

typedef struct rm_lp_round_result {
    double objective;     /* cost of the returned schedule (simulator) */
    double lp_bound;      /* LP relaxation optimum: a lower bound on the optimum */
    double gap;           /* (objective - lp_bound) / objective */
    size_t peak_bytes;    /* activation peak of the returned schedule */
    double threshold;     /* winning deterministic threshold; -1 when a randomized rounding won */
    int seed_index;       /* winning randomized rounding; -1 when a threshold won */
    int tried, fitted;    /* roundings tried / within budget (of the last relaxation rounded) */
    double budget_factor; /* fraction of the budget the rounded relaxation was solved at */
    double seconds, lp_seconds;
} rm_lp_round_result;

/* Checkmate's two-phase rounding: solve the LP relaxation, round S
 * (threshold 0.5, then other thresholds and randomized roundings, keeping the
 * cheapest that fits), and compute the cheapest R for each rounded S exactly.
 * When none fits, the relaxation is re-solved at tighter budgets (see
 * tighten). RM_ERR_INFEASIBLE when no rounding fits the budget. */
int rm_strategy_lp_round(rm_schedule **out, rm_lp_round_result *info, const rm_problem *p,
                         const rm_lp_round_options *opt, rm_err *e);

/* Only the tightened retries of rm_strategy_lp_round (lp_bound: the bound at
 * the real budget, for the gap). */
int rm_lp_round_tightened(rm_schedule **out, rm_lp_round_result *info, const rm_problem *p, double lp_bound,
                          const rm_lp_round_options *opt, rm_err *e);

/* The same rounding from a given fractional S (n x n) and LP bound. */
int rm_lp_round_from(rm_schedule **out, rm_lp_round_result *info, const rm_problem *p, const double *S_frac,
                     double lp_bound, const rm_lp_round_options *opt, rm_err *e);

/* Phase two of the rounding: given s->S, overwrite s->R with the cheapest
 * valid R (node t, everything needed transitively for it or for a value
 * retained into S[t+1] but not resident in S[t]) and clear the S entries
 * nothing reads or carries. Every R it keeps is forced, so the cost is
 * minimal for that S, and computing less never raises the peak. */
int rm_milp_cheapest_R(rm_rs *s, const rm_problem *p, rm_err *e);

/* The same, stopped with RM_ERR_BUDGET (s->R and s->S then half rewritten:
 * discard s) once deadline (deadline.h; 0 = none) passes. It works on the
 * dense n x n matrices, several seconds at 20,000 nodes: a solve under a
 * time limit must be able to give it up. */
int rm_milp_cheapest_R_by(rm_rs *s, const rm_problem *p, double deadline, rm_err *e);

#endif
