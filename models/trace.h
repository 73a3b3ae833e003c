/* Tracing a model at a batch size into the training graph of engine/graph.h:
 * the input node, one forward node per layer (the last is the loss), then
 * the backward nodes in reverse layer order with a gradient-sum node before
 * the backward of every layer whose output is read more than once. */
#ifndef REMAT_MODELS_TRACE_H
#define REMAT_MODELS_TRACE_H

#include <stddef.h>

#include "graph.h"
#include "model.h"

/* Fills *g (its previous contents are ignored; free it with rm_graph_free).
 * On failure *g is left empty. */
int rm_model_trace(rm_graph *g, const rm_model *m, int batch, rm_err *e);

/* The forward part alone (the input, then one forward node per layer, the
 * loss last): the graph evaluation runs. Its nodes are the training graph's
 * first nodes, identical but for the batch. */
int rm_model_trace_forward(rm_graph *g, const rm_model *m, int batch, rm_err *e);

/* Graph node indices of layer i's forward node (layer -1: the input). */
static inline int rm_trace_forward_node(int layer)
{
    return layer + 1;
}

#endif
