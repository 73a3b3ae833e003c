/* Shared machinery of the baseline strategies (internal to scheduler/):
 * the analysis of a problem's forward region, the one construction that
 * turns a retention plan (checkpoints, revolve snapshots) into R and S, and
 * the search bookkeeping (simulate, check the budget, keep the cheapest).
 *
 * Vocabulary. The forward region is every node before the first node tagged
 * backward (b0); its values are the only ones a baseline recomputes. A cut
 * point is a forward node no forward edge jumps over (no u < c < w with u a
 * dependency of w): everything after it reads everything before it only
 * through it. On a training graph with one input and one loss these are
 * exactly the articulation points of the undirected forward graph with the
 * input and loss tied to virtual endpoints, as in Checkmate. */
#ifndef REMAT_BASELINE_H
#define REMAT_BASELINE_H

#include <stdint.h>

#include "schedule.h"
#include "simulate.h"

typedef struct rm_fwd_info {
    int n, b0;    /* b0: first backward-tagged node (n if none) */
    int *lastuse; /* last reader of each value (the value itself if none) */
    int *lastfwd; /* last reader before b0 (the value itself if none) */
    int *pos;     /* stage t >= b0: highest forward value read at t or later (-1 if none) */
    uint8_t *cut; /* forward v: a cut point */
    int ncuts;
    int *cuts; /* the cut points, ascending */
    /* Not analysis: a deadline (deadline.h; 0 = none, as init leaves it) at
     * which rm_build_schedule gives up with RM_ERR_BUDGET, as it does past
     * max_cost. The searches set it, so that a candidate in progress is not
     * finished after their time is up (on a DAG with long skips one
     * candidate of Chen's construction recomputes millions of nodes). */
    double deadline;
} rm_fwd_info;

int rm_fwd_info_init(rm_fwd_info *fi, const rm_problem *p, rm_err *e);
void rm_fwd_info_free(rm_fwd_info *fi);

/* A value retained over stages take+1 .. free; computed (or recomputed) in
 * stage take if it is not there. */
typedef struct rm_snapshot {
    int node, take, free;
} rm_snapshot;

/* The construction every baseline shares. The forward pass computes each
 * node once and keeps a forward value only until its last forward reader,
 * except pinned values, kept from their compute until their last reader or
 * the last recomputation that reads them, whichever is later. Backward-phase values are kept
 * until their last reader and never recomputed. A backward stage that reads
 * a forward value that is not resident "opens" the value's segment (seg[v],
 * -1 for none): every member still read at or after that stage is
 * recomputed there, once, and kept until its last reader; anything else
 * missing (a member of an already opened segment, a value an edge carries
 * across a non-cut checkpoint) is recomputed in that stage from whatever is
 * resident, transitively, and dropped after the stage. A value resident in
 * the previous stage and read by that stage's own node is kept one stage
 * longer instead of being recomputed (the last forward value, read by the
 * loss and then by the loss's backward). snaps (sorted by take) add
 * explicit retention intervals. max_cost > 0: a search's cheapest fitting
 * schedule so far; the construction gives up with RM_ERR_BUDGET as soon as
 * its computes cost more (such a schedule cannot win, and on graphs with
 * skips Chen's recomputation chains make some candidates quadratic). It
 * also gives up, with the same code, beyond RM_SCHEDULE_MAX_COMPUTES. */
int rm_build_schedule(rm_schedule **out, const rm_problem *p, const rm_fwd_info *fi, const uint8_t *pinned,
                      const int *seg, const rm_snapshot *snaps, int nsnaps, double max_cost, rm_err *e);

/* The checkpoint construction: pinned forward values are the checkpoints;
 * the segments are the maximal runs of unpinned forward values between them.
 * This is "schedule from checkpoint set": the forward pass keeps only
 * checkpoints, and in the backward pass each segment is recomputed once
 * from its checkpoint when its values are first needed. */
int rm_build_from_checkpoints(rm_schedule **out, const rm_problem *p, const rm_fwd_info *fi, const uint8_t *pinned,
                              double max_cost, rm_err *e);

/* The best schedule a search has seen: the cheapest that fits the budget,
 * ties to the lower peak. */
typedef struct rm_best {
    rm_schedule *s;
    rm_sim_result r;
    size_t min_peak; /* lowest peak seen, fitting or not, for the message */
    int tried;
    int stopped; /* the search was stopped by its deadline (rm_best_stop) */
} rm_best;

/* Simulates s and keeps it if it is the best so far; takes ownership of s.
 * Errors only for invalid schedules (a bug) or allocation failures. */
int rm_best_offer(rm_best *b, rm_schedule *s, const rm_problem *p, rm_err *e);
/* A search's deadline check between candidates: 1 (and b->stopped) when
 * deadline has passed and at least one candidate was tried, so that a
 * search always answers with something when anything fits at once. */
int rm_best_stop(rm_best *b, double deadline);
/* Hands the best schedule to *out, or RM_ERR_INFEASIBLE naming the strategy
 * (saying when the deadline stopped the search before anything fit);
 * *stopped (when not NULL) = b->stopped. */
int rm_best_finish(rm_schedule **out, int *stopped, rm_best *b, const rm_problem *p, const char *name, rm_err *e);

/* RM_ERR_INFEASIBLE at once when fixed bytes plus the trivial lower bound
 * exceed the budget (no strategy can go below it), after validating p. */
int rm_baseline_precheck(const rm_problem *p, const char *name, rm_err *e);

/* Simulates s; on success *out = s and *res (if not NULL) holds the result.
 * If it does not fit the budget: RM_ERR_INFEASIBLE naming the strategy. Frees
 * s on any failure. */
int rm_baseline_finish(rm_schedule **out, rm_sim_result *res, rm_schedule *s, const rm_problem *p, const char *name,
                       rm_err *e);

/* Chen et al.'s greedy segmentation (their Algorithm 3): walk the forward
 * nodes in order adding output bytes; at a candidate whose running total
 * exceeds seg_bytes, checkpoint it and restart the total. With cut_state,
 * a checkpoint at v keeps the whole cut state at v (v and every earlier
 * value a forward edge carries past v); the running total counts the
 * nodes' own bytes either way. */
void rm_chen_greedy_pins(uint8_t *pinned, const rm_problem *p, const rm_fwd_info *fi, const uint8_t *candidate,
                         int cut_state, double seg_bytes);
/* Every k-th candidate, k = floor(sqrt(#candidates)) (Chen's sqrt(n)). */
void rm_chen_sqrtn_pins(uint8_t *pinned, const rm_problem *p, const rm_fwd_info *fi, const uint8_t *candidate,
                        int cut_state);
/* Chen's greedy over a sweep of segment budgets; the cheapest fitting
 * schedule, or the cheapest found when deadline (0 = none) stopped it. */
int rm_chen_greedy_search(rm_schedule **out, int *stopped, const rm_problem *p, const uint8_t *candidate_or_null,
                          int use_cuts, int cut_state, const char *name, double deadline, rm_err *e);
int rm_chen_sqrtn_run(rm_schedule **out, int *stopped, const rm_problem *p, int use_cuts, int cut_state,
                      const char *name, double deadline, rm_err *e);

/* Revolve's unit-cost table (griewank.c): F[l * (S + 1) + s], the fewest
 * forward re-evaluations reversing l steps with s snapshot slots, and
 * split[l * (S + 1) + s], the least optimal first advance j (1 <= j < l),
 * for 1 <= l <= M and 0 <= s <= S. Both arrays hold (M + 1)(S + 1) cells. */
void rm_revolve_splits(double *F, int *split, int M, int S);

/* The OGC dynamic program (ogc.c): fills pinned (n entries) with the
 * checkpoint set and *predicted_peak with the peak the decomposition
 * predicts for it (tests compare it with the simulator's). */
/* What the two passes of the DP did (rm_ogc_plan's stats, when not NULL):
 * the positions each ran with (after thinning) and its batch simulations,
 * and the largest work a pass ran with (its batches times the nodes plus
 * edges each simulation visits), which never exceeds RM_OGC_MAX_WORK unless
 * the pass had two positions or fewer, which always run. */
typedef struct rm_ogc_stats {
    int positions[2], simulations[2];
    double work;
} rm_ogc_stats;
#define RM_OGC_MAX_WORK 3e7
int rm_ogc_plan(uint8_t *pinned, size_t *predicted_peak, rm_ogc_stats *stats, const rm_problem *p,
                const rm_fwd_info *fi, rm_err *e);
/* The same under a deadline (0 = none): checked before each batch
 * simulation; when it passes, pinned is pass 1's answer if pass 1 was done,
 * else the better of its seeds (every cut point, or every sqrt(K)-th), and
 * *stopped = 1 (stopped may be NULL). */
int rm_ogc_plan_until(uint8_t *pinned, size_t *predicted_peak, rm_ogc_stats *stats, int *stopped, const rm_problem *p,
                      const rm_fwd_info *fi, double deadline, rm_err *e);

/* rm_best_baseline (strategy.h), also giving the seconds one simulation of
 * the winner took (sim_s may be NULL): what judging an answer like it will
 * take, which a route keeps back from its deadline. skip_checkpoint_all:
 * the caller's verdict (the route's shortcuts) says checkpoint-all does not
 * fit, so it is not tried. */
rm_schedule *rm_best_baseline_timed(const rm_problem *p, double deadline, int prefer_lower_peak, const char **name,
                                    rm_sim_result *r, double *sim_s, int skip_checkpoint_all);

/* The searching baselines under a deadline (rm_strategy_until_fn): the
 * sweeps of Chen's greedy and of Griewank's slots stop between candidates,
 * OGC between the batch simulations of its DP (then it answers with its
 * first pass, or with the checkpoint sets that seeded it). */
int rm_chen_greedy_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e);
/* Chen's sqrt(n) is one construction, but on a DAG with long skips one
 * that recomputes millions of nodes: it gives up at the deadline. */
int rm_chen_sqrtn_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e);
int rm_ap_greedy_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e);
int rm_linearized_greedy_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e);
int rm_griewank_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e);
int rm_ogc_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e);
/* DTR gives up at the deadline (checked every 64 stages) with no answer:
 * RM_ERR_INFEASIBLE, *stopped set. */
int rm_dtr_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e);

/* The baseline strategies in the order tables show them (checkpoint_all
 * first), as rm_strategy_info initializers: rm_strategy_list's table
 * (baseline_table.c) and the head of rm_strategy_list_all's (strategies.c). */
/* DTR ahead of time in order (NULL: the problem's) on a validated p, with
 * the readers of rm_order_readers: the schedule, carrying order unless it is the
 * problem's own. RM_ERR_INFEASIBLE when it finds none within the budget,
 * the deadline or RM_SCHEDULE_MAX_COMPUTES (never a proof). See dtr.c. */
int rm_dtr_in_order(rm_schedule **out, const rm_problem *p, const int *order, const int *rd_start, double deadline,
                    rm_err *e);

#define RM_BASELINE_TABLE                                                                                               \
    {"checkpoint_all", "Checkpoint all", rm_strategy_checkpoint_all, NULL, NULL, 0},                                    \
        {"chen_sqrtn", "Chen et al. sqrt(n)", rm_strategy_chen_sqrtn, NULL, rm_chen_sqrtn_until, 1},                    \
        {"chen_greedy", "Chen et al. greedy", rm_strategy_chen_greedy, NULL, rm_chen_greedy_until, 1},                  \
        {"griewank", "Griewank & Walther log(n)", rm_strategy_griewank, NULL, rm_griewank_until, 1},                    \
        {"ap_sqrtn", "AP sqrt(n)", rm_strategy_ap_sqrtn, NULL, NULL, 1},                                                \
        {"ap_greedy", "AP greedy", rm_strategy_ap_greedy, NULL, rm_ap_greedy_until, 1},                                 \
        {"linearized_sqrtn", "Linearized sqrt(n)", rm_strategy_linearized_sqrtn, NULL, NULL, 1},                        \
        {"linearized_greedy", "Linearized greedy", rm_strategy_linearized_greedy, NULL, rm_linearized_greedy_until, 1}, \
        {"ogc", "Feng & Huang optimal checkpointing", rm_strategy_ogc, NULL, rm_ogc_until, 1},                          \
    {                                                                                                                   \
        "dtr", "Kirisame et al. DTR (greedy eviction)", rm_strategy_dtr, NULL, rm_dtr_until, 0                          \
    }
#define RM_BASELINE_COUNT 10

#endif
