/* A schedule in Checkmate's form: n stages; stage t (0-based) computes node t
 * and may recompute earlier nodes. R[t][i] = 1: node i is computed in stage t
 * (i <= t, R[t][t] = 1). S[t][i] = 1: node i's output is retained from the end
 * of stage t-1 into stage t (i < t; S[0][*] = 0).
 *
 * Stored sparse, so that memory and time grow with the schedule, not with
 * n^2: R as each stage's computes, S as its maximal runs (retention
 * intervals: node v resident at the start of stages from..to). On a
 * 100,000-node chain checkpoint-all has 100,000 computes and about as many
 * runs, where the dense matrices would have 10^10 entries each. Schedules are
 * built with rm_schedule_builder and are read-only afterwards.
 *
 * The solvers work on dense 0/1 matrices (rm_rs, below): the ILP has a
 * variable per entry anyway. rm_schedule_from_rs / rm_rs_from_schedule
 * convert. The operation sequence (compute i / free j, frees right after
 * last use) is derived by rm_schedule_ops.
 *
 * A schedule may carry its own order (issue 29): order[t] is the node stage
 * t computes first, any topological order of the problem. Its R and S then
 * index positions in that order, which makes it an ordinary schedule of the
 * problem in that order (rm_problem_reorder, order.h): every rule and every
 * solver applies unchanged there. Without an order (NULL) the order is the
 * problem's own. The operation sequence (rm_schedule_ops) and the
 * simulator's peak node always name the problem's nodes. */
#ifndef REMAT_SCHEDULE_H
#define REMAT_SCHEDULE_H

#include <stddef.h>
#include <stdint.h>

#include "atomic_file.h"
#include "plan.h"
#include "problem.h"

/* S[from..to][node] = 1: node's output is resident at the start of each of
 * those stages. */
typedef struct rm_retention {
    int node, from, to;
} rm_retention;

typedef struct rm_schedule {
    int n;
    int *r_start; /* n + 1: stage t computes r_node[r_start[t] .. r_start[t+1]),
                     ascending */
    int *r_node;
    int nret;
    rm_retention *ret; /* maximal, disjoint, non-adjacent runs, sorted by node,
                          then stage */
    int *ret_start;    /* n + 1: node v's runs are ret[ret_start[v] ..
                          ret_start[v+1]) */
    int *order;        /* n, or NULL (the problem's order): stage t's own node is
                          order[t]; R's nodes, S's nodes and stages are positions in
                          it */
} rm_schedule;

void rm_schedule_free(rm_schedule *s);
int rm_schedule_copy(rm_schedule **out, const rm_schedule *s, rm_err *e);
/* 1 when a and b are the same schedule (the same order included). */
int rm_schedule_equal(const rm_schedule *a, const rm_schedule *b);
/* Gives s the order (n entries, copied; NULL: the problem's own), replacing
 * any it had. Checked against the problem where it is used
 * (rm_schedule_ops): a permutation whose every node comes after its deps. */
int rm_schedule_set_order(rm_schedule *s, const int *order, rm_err *e);
/* The node stage t computes first: order[t], or t. */
static inline int rm_schedule_node_at(const rm_schedule *s, int t)
{
    return s->order ? s->order[t] : t;
}

/* R[t][i] and S[t][i] (0 or 1; 0 outside 0..n-1): binary searches, for
 * displays and tests. Loops over a whole schedule use the arrays. */
int rm_schedule_R(const rm_schedule *s, int t, int i);
int rm_schedule_S(const rm_schedule *s, int t, int i);
/* The number of computes of stage t, and the total. */
static inline int rm_stage_ncomputes(const rm_schedule *s, int t)
{
    return s->r_start[t + 1] - s->r_start[t];
}
static inline long rm_schedule_ncomputes(const rm_schedule *s)
{
    return s->r_start[s->n];
}
/* counts[i] = how many times node i (the problem's, whatever the order) is
 * computed (n entries). */
void rm_schedule_compute_counts(const rm_schedule *s, int *counts);
/* The number of nodes computed more than once. */
int rm_schedule_recomputed_nodes(const rm_schedule *s);

/* The runs by stage, for sweeps over the stages that must see only what
 * changes: the runs starting at stage t are ret[starts[k]] for k in
 * start_at[t] .. start_at[t+1]), those ending there likewise with end_at and
 * ends. start_at and end_at have n + 2 entries (bucket n is empty). */
typedef struct rm_run_index {
    int *start_at, *starts, *end_at, *ends;
} rm_run_index;
int rm_run_index_init(rm_run_index *x, const rm_schedule *s, rm_err *e);
void rm_run_index_free(rm_run_index *x);

/* Collects R and S entries in any order, then sorts them and merges the
 * retention runs. Out of memory and entries outside 0..n-1 are remembered
 * and reported by rm_builder_finish, so that builders need not check every
 * call. Anything inside 0..n-1 is accepted, even entries that make the
 * schedule invalid (R above the diagonal, retaining what was not there):
 * rm_schedule_ops judges validity, with messages naming the rule. */
typedef struct rm_schedule_builder {
    int n;
    int (*comp)[2]; /* (stage, node) */
    size_t ncomp, capcomp;
    rm_retention *ret;
    size_t nret, capret;
    int *last; /* node -> its latest retention, extended in place when the next
                  one touches it */
    rm_err err;
    int failed;
} rm_schedule_builder;

/* The most computes a schedule may have (2^24: about 700 MB with its
 * operation sequence and simulation): beyond it rm_builder_finish reports
 * RM_ERR_BUDGET. Only recomputation-heavy candidates of huge graphs come near
 * it (Chen's construction on a 100,000-node DAG with long skips reached 25
 * million), and the searches skip them. */
#define RM_SCHEDULE_MAX_COMPUTES ((size_t)1 << 24)

int rm_builder_init(rm_schedule_builder *b, int n, rm_err *e);
/* R[t][i] = 1. */
void rm_builder_compute(rm_schedule_builder *b, int t, int i);
/* S[from..to][node] = 1; nothing when from > to. */
void rm_builder_retain(rm_schedule_builder *b, int node, int from, int to);
/* The schedule; the builder is freed either way. */
int rm_builder_finish(rm_schedule **out, rm_schedule_builder *b, rm_err *e);
void rm_builder_free(rm_schedule_builder *b);

/* R and S as dense n x n 0/1 matrices, row-major: the solvers' working form
 * (the MILP, LP rounding, coarsening) and the tests'. Limited to
 * RM_RS_MAX_NODES nodes (2 x 1 GiB); the scalable strategies never use it. */
#define RM_RS_MAX_NODES 32768
typedef struct rm_rs {
    int n;
    uint8_t *R; /* R[t * n + i] */
    uint8_t *S; /* S[t * n + i] */
} rm_rs;

int rm_rs_create(rm_rs **out, int n, rm_err *e); /* all zero */
void rm_rs_free(rm_rs *d);
/* The dense form of s, and the schedule of d (a nonzero entry is a 1). */
int rm_rs_from_schedule(rm_rs **out, const rm_schedule *s, rm_err *e);
int rm_schedule_from_rs(rm_schedule **out, const rm_rs *d, rm_err *e);

static inline uint8_t *rm_R(rm_rs *s, int t, int i)
{
    return &s->R[(size_t)t * (size_t)s->n + (size_t)i];
}
static inline uint8_t *rm_S(rm_rs *s, int t, int i)
{
    return &s->S[(size_t)t * (size_t)s->n + (size_t)i];
}
static inline int rm_R_at(const rm_rs *s, int t, int i)
{
    return s->R[(size_t)t * (size_t)s->n + (size_t)i];
}
static inline int rm_S_at(const rm_rs *s, int t, int i)
{
    return s->S[(size_t)t * (size_t)s->n + (size_t)i];
}

/* The operation sequence: compute ops in stage order, each followed by the
 * frees of values whose last use in the stage it was and that are not
 * retained into the next stage. *ops is malloc'ed.
 * Each stage t begins with the frees of values resident at its start (S[t])
 * that the stage neither reads nor retains, and of retained values it
 * recomputes (the new copy supersedes the old one, which nobody reads since
 * every reader comes after the recompute). Invalid schedules (R[t][t] = 0,
 * entries off the lower triangle, retaining what was not there, reading a
 * value that is not resident) give RM_ERR_INVALID naming stage, node and rule.
 * Time O(n + runs + computes x (deps + log)): it never looks at a whole row. */
int rm_schedule_ops(rm_op **ops, int *nops, const rm_problem *p, const rm_schedule *s, rm_err *e);

/* The arena plan of s (engine/plan.h): its operation sequence placed. With g
 * (the graph p came from) the sizes are g's and every compute's inputs are
 * checked live (rm_plan_from_graph); with g NULL they are p's bytes. */
int rm_schedule_plan(rm_plan **out, const rm_problem *p, const rm_schedule *s, const rm_graph *g, rm_err *e);
/* The same from the operation sequence already at hand (rm_schedule_ops). */
int rm_schedule_plan_ops(rm_plan **out, const rm_problem *p, const rm_op *ops, int nops, const rm_graph *g, rm_err *e);
/* The plan of g under checkpoint-all: every value kept until its last use,
 * and no longer. On a forward-only graph (inference), the least memory a
 * pass can take; on a training graph, no rematerialization. */
int rm_schedule_plan_all(rm_plan **out, const rm_graph *g, rm_err *e);

/* The schedule file (docs/schedule-format.md): R as each stage's
 * recomputations and S as retention runs, the simulated cost and peak, and
 * the operation sequence. Writing rejects invalid schedules. Reading also
 * takes the first format (R and S as rows of bits) and is the check behind
 * `remat plan --check`: the stage count must match the problem, R and S must
 * be valid, and any cost, peak and operation lines must agree with the
 * simulator; errors name the file line. The budget is not checked here (see
 * rm_sim_fits). */
int rm_schedule_write(const rm_schedule *s, const rm_problem *p, const char *path, rm_err *e);
int rm_schedule_read(rm_schedule **out, const rm_problem *p, const char *path, rm_err *e);
/* The same for a path of the given kind (base/atomic_file.h), and the
 * reading of an RM_PATH_ENTRY (the trainer's schedule cache): a link, a
 * FIFO, a device or a file with other hard links there is refused, never
 * followed or waited on (rm_schedule_read takes a FIFO the user names, as
 * in `--check <(...)`). */
int rm_schedule_write_kind(const rm_schedule *s, const rm_problem *p, const char *path, rm_path_kind kind, rm_err *e);
/* The same from s's replay already at hand (its operation sequence and the
 * simulator's verdict on it, as a schedule report holds them). */
struct rm_sim_result; /* simulate.h */
int rm_schedule_write_replayed(const rm_schedule *s, const rm_problem *p, const rm_op *ops, int nops,
                               const struct rm_sim_result *r, const char *path, rm_path_kind kind, rm_err *e);
int rm_schedule_read_entry(rm_schedule **out, const rm_problem *p, const char *path, rm_err *e);

#endif
