/* The max-batch search: the largest batch size at which a strategy finds a
 * schedule that the simulator accepts within a total device budget (fixed
 * bytes included). The caller supplies the problem for each batch size
 * through a callback, so this does not depend on models/ (the CLI traces a
 * model; tests build synthetic problems).
 *
 * The search grows the batch exponentially (1, 2, 4, ...) until a batch does
 * not fit, then bisects between the last batch that fit and the first that
 * did not. That is exact when feasibility is monotone in the batch size,
 * which holds for an exactly solved MILP (every byte grows with the batch,
 * so a schedule for b+1 is one for b). Heuristics need not be monotone (a
 * sweep can land on a better checkpoint set at a larger batch), nor is a
 * MILP stopped by a time limit. For those the answer is a local boundary: a
 * batch b that fits, verified, with b+1 verified not to fit (or b the cap);
 * a larger batch beyond a failing one may exist and is not looked for. Every
 * reported batch was solved and simulated: the search never reports a batch
 * it did not see fit. */
#ifndef REMAT_MAXBATCH_H
#define REMAT_MAXBATCH_H

#include <stddef.h>

#include "strategy.h"

/* Builds the problem for a batch size (its budget is overwritten). */
typedef int (*rm_maxbatch_problem_fn)(rm_problem **out, void *ctx, int batch, rm_err *e);

/* Sets *feasible for a batch size; an error aborts the search. */
typedef int (*rm_maxbatch_feasible_fn)(int *feasible, void *ctx, int batch, rm_err *e);

/* The bisection itself, on any predicate: the largest b in [1, hi-1] the
 * search finds feasible (0 when batch 1 is not), where hi is a batch known
 * not to fit (or the cap + 1); b is never probed at or above hi. *probes
 * (may be NULL) counts the predicate calls: at most 2 log2(hi) + 2. */
int rm_maxbatch_bisect(int *best, int *probes, rm_maxbatch_feasible_fn feasible, void *ctx, int hi, rm_err *e);

/* Progress: called before each probe (feasible = -1) and after it (0 or 1,
 * with the solve's seconds). */
typedef void (*rm_maxbatch_progress_fn)(void *ctx, const char *strategy, int batch, int feasible, double seconds);

typedef struct rm_maxbatch_options {
    size_t budget;              /* total device bytes, fixed bytes included; > 0 */
    int max_batch;              /* the largest batch tried; 0 = 1 << 20 */
    int bound_batch;            /* from rm_maxbatch_bound when already known (0: computed) */
    rm_strategy_options solver; /* per-solve limits for lp_round and milp */
    rm_maxbatch_progress_fn progress;
    void *progress_ctx;
} rm_maxbatch_options;

typedef struct rm_maxbatch_result {
    int max_batch;   /* the largest batch that fit; 0 when batch 1 does not */
    int capped;      /* max_batch is the cap: a larger batch may fit */
    int bound_batch; /* the largest batch whose trivial lower bound fits: no strategy exceeds it */
    int probes;      /* solves */
    int unproved;    /* some batch was judged not to fit because a limit stopped the solver,
                        not because it was proved infeasible */
    /* At max_batch (when > 0): */
    double cost;       /* the schedule's cost */
    double base_cost;  /* checkpoint-all's cost: every node once */
    size_t peak_bytes; /* activation peak */
    size_t fixed_bytes;
    rm_strategy_stats stats; /* of that solve (status, seconds, LP bound, gap) */
    double search_s;         /* the whole search */
} rm_maxbatch_result;

/* The largest batch in [1, cap] whose fixed bytes plus trivial lower bound
 * (the largest node plus its inputs) fit the budget; 0 if none. Monotone,
 * so the bisection is exact. */
int rm_maxbatch_bound(int *out, rm_maxbatch_problem_fn build, void *ctx, size_t budget, int cap, rm_err *e);

/* The search for one strategy (see the top of this file). */
int rm_maxbatch_search(rm_maxbatch_result *out, const rm_strategy_info *st, rm_maxbatch_problem_fn build, void *ctx,
                       const rm_maxbatch_options *o, rm_err *e);

#endif
