/* A rematerialization problem (Checkmate's setting): nodes in topological
 * order, each with a compute cost, output bytes, dependencies and a
 * forward/loss/backward tag; plus fixed bytes and a memory budget. Built from
 * a traced training graph or read from a plain-text problem file, so the
 * scheduler never needs layers/. */
#ifndef REMAT_PROBLEM_H
#define REMAT_PROBLEM_H

#include <stddef.h>

#include "error.h"
#include "graph.h"

typedef struct rm_problem_node {
    char name[RM_NAME_LEN];
    rm_node_tag tag;
    double cost;  /* compute cost (FLOPs by default, or profiled seconds) */
    size_t bytes; /* output bytes */
    int ndeps;
    int *deps; /* earlier node indices, no duplicates */
} rm_problem_node;

typedef struct rm_problem {
    int n;
    rm_problem_node *nodes;
    size_t fixed_bytes; /* parameters, gradients, optimizer state: always resident */
    size_t budget;      /* total device budget in bytes, fixed bytes included; 0 = unlimited */
    /* The compute cap: a schedule costing more does not fit, like one over
     * the budget (maxbatch's overhead cap: Checkmate's max-batch figure
     * allows one extra forward pass). 0 = none; never below every node once. */
    double max_cost;
} rm_problem;

/* Costs are node FLOPs; budget = 0 (set it before solving). */
int rm_problem_from_graph(rm_problem **out, const rm_graph *g, rm_err *e);
/* The documented problem-file format (see docs/problem-format.md), or the
 * node-link JSON of Checkmate and Moccasin when the file's first byte that is
 * not white space is '{' (same document). Errors name the line. */
int rm_problem_read(rm_problem **out, const char *path, rm_err *e);
/* The problem-file format, atomically (base/atomic_file.h); costs are
 * written with 17 significant digits, so reading the file back gives p. */
int rm_problem_write(const rm_problem *p, const char *path, rm_err *e);
void rm_problem_free(rm_problem *p);

/* Activation budget: budget - fixed_bytes (0 if the fixed bytes do not fit).
 * An unlimited problem (budget 0) has an unlimited activation budget: SIZE_MAX. */
size_t rm_problem_activation_budget(const rm_problem *p);

/* The trivial lower bound on any schedule's activation peak: the largest
 * bytes[k] + sum of bytes of k's deps (every node needs its inputs and its
 * output resident at once). No strategy can go below it. */
size_t rm_problem_peak_lower_bound(const rm_problem *p);
/* The same, with the node k that sets it in *node (the first such; 0 when
 * every node needs 0 bytes; node may be NULL). The one place it is computed. */
size_t rm_problem_peak_lower_bound_at(const rm_problem *p, int *node);

/* Every node once: checkpoint-all's cost, the least any schedule pays. */
double rm_problem_base_cost(const rm_problem *p);

/* cost (a schedule's, or a bound) over base (checkpoint-all's) in percent:
 * +12.5 for 12.5% more. 0 where base is 0: every node is free, so every
 * schedule costs 0 and there is no overhead (not 0/0's NaN). Every printed
 * overhead goes through it, so that all outputs agree ("+0.00%"). */
double rm_overhead_pct(double cost, double base);

/* 1 when a lower bound on every schedule's cost (an LP bound) proves that
 * none is within p's compute cap (max_cost; never without one): above it by
 * more than 1e-9 of the larger (at least 1), the solver's rounding. Asked
 * here only. */
int rm_problem_bound_over_cap(const rm_problem *p, double bound);

/* "Is the budget below the trivial bound?": RM_OK when the budget is 0
 * (unlimited) or holds the fixed bytes plus the trivial lower bound, and the
 * compute cap (if any) is at least every node once; else RM_ERR_INFEASIBLE
 * with the reason prefixed by who. Every strategy and solver refuses such a
 * problem at once with this answer. Answered by the budget's verdict
 * (scheduler/report.h: rm_problem_check_budget_of, defined there). */
int rm_problem_check_budget(const rm_problem *p, const char *who, rm_err *e);

/* The most bytes a problem may hold: fixed bytes plus every node's output,
 * summed (2^62, 4 EiB). Peaks, budgets and percentages of them are computed
 * in size_t; below this bound none of those sums can wrap around. */
#define RM_PROBLEM_MAX_BYTES RM_MAX_DEVICE_BYTES

/* The most nodes a problem file may declare. */
#define RM_PROBLEM_MAX_NODES 10000000

/* The most the node costs of a problem of n nodes may add up to: a schedule
 * computes a node at most once per stage, n times in all, so its cost is at
 * most n times this sum, which must stay a finite double (DBL_MAX / n). A
 * cost of inf or NaN would make every schedule "optimal" at once. */
double rm_problem_max_cost_sum(int n);

/* The running totals of a problem's nodes, checked node by node against the
 * bounds above, so that a reader can name the line where one is passed. */
typedef struct rm_problem_sums {
    size_t bytes; /* the fixed bytes and the outputs so far */
    double cost;  /* the costs so far */
} rm_problem_sums;

/* Adds node i of p to s (which starts at {p->fixed_bytes, 0}). RM_OK, or
 * RM_ERR_INVALID saying which total passed its bound, naming the node; the
 * caller prefixes where (file and line). */
int rm_problem_sums_add(rm_problem_sums *s, const rm_problem *p, int i, rm_err *e);
/* Its cost part, for costs kept outside a problem (a cost file of n nodes):
 * adds node i's (named name) cost to *sum, or says that the sum passes
 * rm_problem_max_cost_sum(n). */
int rm_problem_cost_add(double *sum, double cost, int n, int i, const char *name, rm_err *e);

/* RM_OK when budget is at most RM_PROBLEM_MAX_BYTES; else RM_ERR_INVALID
 * with a message the caller prefixes with where. A larger budget would only
 * invite wrapping sums: no problem holds more, and 0 means unlimited. */
int rm_problem_budget_in_range(size_t budget, rm_err *e);

/* Checks what every strategy assumes: n >= 1, deps earlier than their node,
 * no duplicate deps, finite non-negative costs adding up to at most
 * rm_problem_max_cost_sum(n), fixed bytes plus all output bytes at most
 * RM_PROBLEM_MAX_BYTES, and a budget at most that too. Errors name the node. */
int rm_problem_validate(const rm_problem *p, rm_err *e);

/* An empty problem of n nodes (names empty, tag forward, no deps) for
 * builders and tests; rm_problem_set_deps copies deps into node i. */
int rm_problem_create(rm_problem **out, int n, rm_err *e);
int rm_problem_set_deps(rm_problem *p, int i, const int *deps, int ndeps, rm_err *e);

#endif
