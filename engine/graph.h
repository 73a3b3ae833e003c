/* The training graph: a DAG of forward nodes, one loss node and backward
 * nodes, in execution (topological) order. Each node knows its FLOPs, its
 * output bytes and exactly which node outputs it reads. The scheduler sees
 * only this structure (through scheduler/problem.h); the executor uses the
 * `op`/`layer`/`dep_slot` fields to know what to run.
 *
 * Node kinds:
 *  - RM_OP_INPUT: the input batch (N x C x H x W), loaded, not computed.
 *  - RM_OP_FORWARD: layer `layer` applied to deps (its inputs, in order).
 *  - RM_OP_BACKWARD: the backward of layer `layer`. Output: the gradients
 *    w.r.t. each of the layer's inputs, concatenated in input order (an input
 *    that needs no gradient, the input batch, takes 0 bytes). Parameter
 *    gradients go to fixed memory. deps[0] is the gradient of the layer's
 *    output (a consumer's backward node or a grad-sum node; absent for the
 *    loss layer), then the layer's inputs if it declares RM_READS_INPUTS,
 *    then its own forward node if it declares RM_READS_OUTPUT.
 *  - RM_OP_GRAD_SUM: the sum of the gradients of a tensor that several
 *    consumers read; deps are those consumers' backward nodes.
 * For a gradient dependency, dep_slot[k] says which input position of that
 * consumer the slice belongs to (its offset inside the consumer's backward
 * output); it is -1 for all other dependencies. */
#ifndef REMAT_GRAPH_H
#define REMAT_GRAPH_H

#include <stddef.h>

#include "error.h"
#include "tensor.h"

typedef enum rm_node_tag { RM_TAG_FORWARD = 0, RM_TAG_LOSS, RM_TAG_BACKWARD } rm_node_tag;
typedef enum rm_node_op { RM_OP_INPUT = 0, RM_OP_FORWARD, RM_OP_BACKWARD, RM_OP_GRAD_SUM } rm_node_op;

#define RM_NAME_LEN 64

typedef struct rm_graph_node {
    char name[RM_NAME_LEN]; /* "conv1", "conv1.grad", "res2a.gradsum" */
    rm_node_tag tag;
    rm_node_op op;
    int layer;      /* index of the model layer; -1 for the input */
    double flops;   /* cost of computing this node once */
    size_t bytes;   /* output bytes */
    rm_shape shape; /* output shape (forward/input/grad-sum); zero for backward */
    int ndeps;
    int *deps;     /* indices of earlier nodes read */
    int *dep_slot; /* see above */
} rm_graph_node;

typedef struct rm_graph {
    int n;
    rm_graph_node *nodes;
    int cap; /* nodes allocated; rm_graph_add_node doubles it when full */
    int batch;
    size_t param_count; /* trainable parameters */
    double forward_flops, backward_flops;
} rm_graph;

/* One step of executing a graph: compute a node's output, or free it. A
 * schedule's operation sequence (scheduler/schedule.h) is a list of these, and
 * the executor's plan follows it. */
typedef enum rm_op_kind { RM_OP_COMPUTE = 0, RM_OP_FREE } rm_op_kind;

typedef struct rm_op {
    rm_op_kind kind;
    int node;
    int stage;
} rm_op;

/* Appends a node; deps/dep_slot are copied. Returns its index or -1 (error in e). */
int rm_graph_add_node(rm_graph *g, const rm_graph_node *node, const int *deps, const int *dep_slot, int ndeps,
                      rm_err *e);
void rm_graph_free(rm_graph *g); /* frees the contents; g itself may be on the stack */

size_t rm_graph_activation_bytes(const rm_graph *g); /* sum of every node's output bytes */
size_t rm_graph_edge_count(const rm_graph *g);
/* Checks topological order and index ranges. */
int rm_graph_validate(const rm_graph *g, rm_err *e);

#endif
