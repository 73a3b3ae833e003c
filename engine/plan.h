/* The plan: a schedule's operation sequence (compute node i / free node j,
 * engine/graph.h's rm_op) with an arena offset for every buffer, fixed before
 * the training step runs. Each compute opens a new buffer lifetime (a node
 * computed twice, i.e. recomputed, gets two lifetimes that may sit at
 * different offsets); the free of that node closes it.
 *
 * What the numbers mean, precisely:
 *  - every buffer reserves size = rm_align_up(bytes) at an offset that is a
 *    multiple of RM_ARENA_ALIGN, so every tensor starts 64-byte aligned;
 *  - live_peak is the maximum, over the points right after each compute, of
 *    the sum of the live buffers' aligned sizes. It is exactly what
 *    rm_simulate reports as peak_bytes for the same schedule when every
 *    node's bytes are rounded up to RM_ARENA_ALIGN (the same replay over the
 *    same operations, with the same sizes); bytes_peak is the same maximum on
 *    the unrounded bytes, i.e. rm_simulate's peak_bytes on the problem as is;
 *  - span is the arena size the offsets need (max offset + size). span >=
 *    live_peak; the difference is fragmentation. Budget checks must use the
 *    span, since that is what the executor allocates.
 * The layer-agnostic part of execution lives here, in engine/; the executor
 * that calls the layers is engine/executor.c. */
#ifndef REMAT_PLAN_H
#define REMAT_PLAN_H

#include <stddef.h>

#include "arena.h"
#include "error.h"
#include "graph.h"

/* The placement orders tried; the plan keeps the one with the smallest span
 * and then improves on it by a local search over orders (plan.c). */
typedef enum rm_plan_order {
    RM_PLAN_BY_SIZE = 0, /* largest first (TFLite's greedy-by-size) */
    RM_PLAN_BY_BREADTH,  /* the buffers of the most crowded operation first (TFLite's greedy-by-breadth) */
    RM_PLAN_BY_AREA,     /* size x lifetime, largest first */
    RM_PLAN_BY_LIFETIME, /* longest-lived first */
    RM_PLAN_BY_START,    /* in allocation order: what an online best-fit allocator would do */
    RM_PLAN_ORDER_COUNT
} rm_plan_order;

typedef struct rm_plan_buffer {
    int node;
    size_t bytes;  /* the node's output bytes */
    size_t size;   /* bytes rounded up to RM_ARENA_ALIGN: what the arena reserves */
    size_t offset; /* multiple of RM_ARENA_ALIGN */
    int alloc_op;  /* the compute op that opens it */
    int free_op;   /* the free op that closes it; nops if none does */
} rm_plan_buffer;

typedef struct rm_plan_op {
    rm_op_kind kind;
    int node, stage;
    int buffer;    /* the lifetime this op opens (compute) or closes (free) */
    size_t offset; /* that buffer's offset */
} rm_plan_op;

typedef struct rm_plan {
    int nodes; /* node count of the graph the ops refer to */
    int nops;
    rm_plan_op *ops;
    int nbuffers;
    rm_plan_buffer *buffers; /* in the order of their compute ops */
    size_t span;             /* arena bytes the offsets need */
    size_t live_peak;        /* aligned live-bytes peak (see above) */
    size_t bytes_peak;       /* the same peak on unaligned bytes */
    int live_peak_op;        /* the first compute op reaching live_peak (-1 if no computes) */
    size_t greedy_span;      /* the span of the best greedy order, before the local search */
    rm_plan_order order;     /* the greedy order the offsets started from */
} rm_plan;

/* Plans ops over n nodes with output sizes bytes[0..n). The op sequence must
 * be physically consistent (no compute of a node that is live, no free of one
 * that is not); RM_ERR_INVALID naming the op otherwise. Buffers still live at
 * the end stay live to the end. */
int rm_plan_create(rm_plan **out, const size_t *bytes, int n, const rm_op *ops, int nops, rm_err *e);
/* The same with sizes from g, also checking that every compute's inputs are
 * live when it runs (the executor relies on it). */
int rm_plan_from_graph(rm_plan **out, const rm_graph *g, const rm_op *ops, int nops, rm_err *e);
void rm_plan_free(rm_plan *p);

/* Checks alignment, that offset + size stays within the span, and that no two
 * buffers live at the same time overlap in the arena (every pair). */
int rm_plan_check(const rm_plan *p, rm_err *e);

/* Two lifetimes are live at the same time (their op intervals intersect). */
static inline int rm_plan_buffers_coexist(const rm_plan_buffer *a, const rm_plan_buffer *b)
{
    return a->alloc_op < b->free_op && b->alloc_op < a->free_op;
}

/* (span - live_peak) / live_peak, 0 when live_peak is 0. */
double rm_plan_fragmentation(const rm_plan *p);

const char *rm_plan_order_name(rm_plan_order order);

#endif
