/* What the executor's files share (executor.c: creation and the run loop;
 * executor_check.c: the graph and plans checked against the model;
 * executor_memory.c: fixed memory, parameters and their copies): the
 * executor's state. Not part of the interface (executor.h is). */
#ifndef REMAT_EXECUTOR_INTERNAL_H
#define REMAT_EXECUTOR_INTERNAL_H

#include <stdint.h>

#include "arena.h"
#include "executor.h"
#include "layer.h"

struct rm_executor {
    const rm_model *m;
    const rm_graph *g;
    const rm_plan *plan;
    rm_backend *be;
    uint64_t seed;
    int poison;
    /* Every pointer below marked (dev) is memory of be (device memory on a
     * device backend); only be's ops touch it. */

    int L, batch;
    rm_shape *in_shape;  /* [m->ninputs]: layer inputs at the batch, layer i's from layers[i].in_at */
    rm_shape *out_shape; /* [L] */
    size_t *slot_off;    /* [m->ninputs]: float offset of input k's gradient in the backward output */
    int *fwd_node;       /* [L]: the layer's forward node */
    int input_node, loss_node;

    /* Fixed memory (dev). */
    float *params, *grads, *buffers;
    size_t nparams, nbuffers;
    rm_layer_params *lp; /* [L] */
    int32_t *labels;
    size_t nlabels;
    void *workspace;
    size_t workspace_size;
    size_t fixed_bytes;
    float *loss_dev;        /* be->queued: the loss's fixed slot (dev); else NULL */
    const float **grad_src; /* [largest grad-sum]: its sources, filled per node (host) */

    /* Activations, and the step's bookkeeping (host, allocated once). */
    rm_arena *arena;
    float **ptr;       /* [n]: where each live node's value is; NULL when not live */
    int *live;         /* [n]: 1 while the node has a live buffer */
    uint8_t *computed; /* [n]: computed at least once in this step */
    float loss;

    rm_executor_node_hook hook; /* profiling (rm_executor_set_node_hook); NULL: none */
    void *hook_ctx;
    int fetch_node; /* rm_executor_set_fetch: -1 none */
    float *fetch_host;

    /* Inference (rm_executor_set_inference): a forward-only graph of the
     * same model and its plan, run in the same arena and workspace. */
    const rm_graph *infer_g;
    const rm_plan *infer_plan;
};

static inline const char *rm_exec_node_name(const rm_graph *g, int i)
{
    return g->nodes[i].name;
}

/* The graph node holding input k of layer L's forward value. */
static inline int rm_exec_input_node_of(const rm_executor *ex, int L, int k)
{
    int src = ex->m->layers[L].inputs[k];
    return src == RM_MODEL_INPUT ? ex->input_node : ex->fwd_node[src];
}

/* executor_check.c: the graph against the model (filling fwd_node,
 * input_node and loss_node), the training plan against the graph, and an
 * inference graph and plan against the training graph and the memory. */
int rm_executor_check_graph(rm_executor *ex, rm_err *e);
int rm_executor_check_plan(const rm_executor *ex, rm_err *e);
int rm_executor_check_inference(const rm_executor *ex, const rm_graph *fg, const rm_plan *fp, rm_err *e);

/* executor_memory.c: one fixed allocation, counted in fixed_bytes; the
 * parameters laid out and initialised from the seed. */
int rm_executor_alloc_fixed(rm_executor *ex, void **ptr, size_t bytes, rm_err *e);
int rm_executor_init_params(rm_executor *ex, rm_err *e);

#endif
