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
 * it did not see fit.
 *
 * "Fits" includes the overhead cap: a schedule whose compute exceeds
 * checkpoint-all's by more than the cap does not fit (Checkmate's max-batch
 * figure allows one extra forward pass). The cap is the problem's max_cost,
 * so every strategy is judged by it the same way, and the MILP takes it as
 * its cutoff: a constraint on branch and bound, and with the LP bound a
 * proof that nothing fits. Costs grow linearly with the batch, so a cap in
 * percent is the same at every batch. */
#ifndef REMAT_MAXBATCH_H
#define REMAT_MAXBATCH_H

#include <stddef.h>

#include "strategy.h"

/* Builds the problem for a batch size (its budget is overwritten). */
typedef int (*rm_maxbatch_problem_fn)(rm_problem **out, void *ctx, int batch, rm_err *e);

/* Sets *feasible for a batch size; an error aborts the search. */
typedef int (*rm_maxbatch_feasible_fn)(int *feasible, void *ctx, int batch, rm_err *e);

/* The search itself, on any predicate: the largest b in [lo+1, hi-1] the
 * search finds feasible (lo when lo+1 is not), where lo is a batch known to
 * fit (0: none) and hi one known not to (or the cap + 1); b is never probed
 * at or below lo, nor at or above hi. From lo it gallops (lo+1, lo+2,
 * lo+4, ...) to the first batch that does not fit, then bisects: *probes
 * (may be NULL) counts the predicate calls, at most 2 log2(hi - lo) + 2. */
int rm_maxbatch_bisect(int *best, int *probes, rm_maxbatch_feasible_fn feasible, void *ctx, int lo, int hi, rm_err *e);

/* The same answer found with fewer failing probes, for predicates whose
 * "no" is dear (a solver that stops at its time limit) and whose "yes" is
 * cheap: gallop up from lo (lo+1, lo+2, lo+4, ...) to the first batch that
 * does not fit, and start again from the last that did. Every round ends
 * on one failing probe, so there are at most log2(hi - lo) + 1 of them
 * (bisection may spend all its probes failing); a boundary just above lo
 * costs one probe. The probes in all are at most (log2(hi - lo) + 1)^2. */
int rm_maxbatch_gallop(int *best, int *probes, rm_maxbatch_feasible_fn feasible, void *ctx, int lo, int hi, rm_err *e);

/* The overhead cap: how much more than checkpoint-all (every node once) a
 * schedule may compute. */
typedef enum { RM_CAP_NONE, RM_CAP_FORWARDS, RM_CAP_FRACTION } rm_cap_kind;
typedef struct rm_overhead_cap {
    rm_cap_kind kind;
    double value; /* FORWARDS: extra forward passes (each the forward nodes' cost; 1 = Checkmate's);
                     FRACTION: of checkpoint-all's cost (0.5 = +50%) */
} rm_overhead_cap;

/* The cap as a problem's max_cost (0: none). */
double rm_overhead_cap_cost(const rm_overhead_cap *c, const rm_problem *p);

/* Progress: called before each probe (feasible = -1) and after it (0 or 1,
 * with the solve's seconds). */
typedef void (*rm_maxbatch_progress_fn)(void *ctx, const char *strategy, int batch, int feasible, double seconds);

typedef struct rm_maxbatch_options {
    size_t budget;                     /* total device bytes, fixed bytes included; > 0 */
    int max_batch;                     /* the largest batch tried; 0 = 1 << 20 */
    int bound_batch;                   /* from rm_maxbatch_bound when already known (0: computed) */
    rm_overhead_cap cap;               /* zeroed: none */
    int start_batch;                   /* a batch known to fit for this strategy (0: none): another strategy's
                                          answer, for a solver that is never dearer than its incumbent. When it
                                          is within 10% of the trivial bound's batch, that batch is probed
                                          first (where it fits, nothing larger can); then start_batch, and the
                                          search gallops up from it */
    int fail_batch;                    /* a batch above start_batch known not to fit (0: none): where a
                                          strategy that finds everything this one does gave up */
    const rm_schedule *start_schedule; /* that strategy's schedule at start_batch (or NULL): the
                                          incumbent of the probe there, so it is not solved again */
    rm_strategy_options solver;        /* per-solve limits for lp_round and milp */
    rm_maxbatch_progress_fn progress;
    void *progress_ctx;
} rm_maxbatch_options;

typedef struct rm_maxbatch_result {
    int max_batch;   /* the largest batch that fit; 0 when batch 1 does not */
    int fail_batch;  /* the smallest batch above it seen not to fit (0: none was probed) */
    int capped;      /* max_batch is the cap: a larger batch may fit */
    int bound_batch; /* the largest batch whose trivial lower bound fits: no strategy exceeds it */
    int probes;      /* solves */
    int unproved;    /* some batch was judged not to fit because a limit stopped the solver,
                        not because it was proved infeasible */
    /* At max_batch (when > 0): */
    double cost;       /* the schedule's cost (with first_fit, the first schedule that fit, not the cheapest) */
    double base_cost;  /* checkpoint-all's cost: every node once */
    size_t peak_bytes; /* activation peak */
    size_t fixed_bytes;
    rm_strategy_stats stats; /* of that solve (status, seconds, LP bound, gap) */
    rm_schedule *schedule;   /* that schedule (the caller frees it; NULL when max_batch is 0) */
    double search_s;         /* the whole search */
} rm_maxbatch_result;

/* The largest batch in [1, cap] whose fixed bytes plus trivial lower bound
 * (the largest node plus its inputs) fit the budget; 0 if none. Monotone,
 * so the bisection is exact. A batch whose problem cannot be built though a
 * smaller one was (tensors too large to address, more than 2^62 bytes) does
 * not fit either: only sizes grow with the batch. A failure to build batch
 * 1 (or to allocate) is an error. */
int rm_maxbatch_bound(int *out, rm_maxbatch_problem_fn build, void *ctx, size_t budget, int cap, rm_err *e);
/* The same, saying in why (len bytes) why the batch just above the answer
 * could not be built, when that is what ends the range; "" otherwise (the
 * budget, or the cap, ends it). */
int rm_maxbatch_bound_why(int *out, char *why, size_t len, rm_maxbatch_problem_fn build, void *ctx, size_t budget,
                          int cap, rm_err *e);

/* The search for one strategy (see the top of this file). */
int rm_maxbatch_search(rm_maxbatch_result *out, const rm_strategy_info *st, rm_maxbatch_problem_fn build, void *ctx,
                       const rm_maxbatch_options *o, rm_err *e);

#endif
