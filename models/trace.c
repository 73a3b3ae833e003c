/* Turns a model and a batch size into the training graph the scheduler and
 * executor share (engine/graph.h). Everything the memory model needs comes
 * from the layers' own declarations: shapes from infer, costs from flops,
 * and the tensors each backward reads from backward_reads.
 *
 * Fixed memory (weights, gradients, optimizer state, ...) is not part of the
 * graph: train/footprint.h computes it, once, for every command. */
#include "trace.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add_node(rm_graph *g, const char *name, const char *suffix, rm_node_tag tag, rm_node_op op, int layer,
                    double flops, size_t bytes, rm_shape shape, const int *deps, const int *slots, int ndeps, rm_err *e)
{
    rm_graph_node nd;
    memset(&nd, 0, sizeof nd);
    /* Model names leave room for the longest suffix (model.c). */
    snprintf(nd.name, sizeof nd.name, "%s%s", name, suffix);
    nd.tag = tag;
    nd.op = op;
    nd.layer = layer;
    nd.flops = flops;
    nd.bytes = bytes;
    nd.shape = shape;
    return rm_graph_add_node(g, &nd, deps, slots, ndeps, e);
}

/* One use of a layer's output: input position `slot` of layer `consumer`. */
typedef struct use {
    int consumer, slot;
} use;

/* Every (consumer, input position) that reads each layer's output, in
 * consumer order: layer i's are uses[first[i]] .. uses[first[i + 1] - 1].
 * One pass over all inputs; looking through every later layer for each
 * layer's readers made tracing quadratic in the layer count. */
static void index_uses(int *first, use *uses, const rm_model *m)
{
    const int L = m->nlayers;
    memset(first, 0, (size_t)(L + 1) * sizeof *first);
    for (int c = 0; c < L; c++)
        for (int k = 0; k < m->layers[c].nin; k++)
            if (m->layers[c].inputs[k] != RM_MODEL_INPUT) first[m->layers[c].inputs[k]]++;
    for (int i = 1; i <= L; i++) first[i] += first[i - 1]; /* first[i]: the end of layer i's uses */
    /* Filled backwards, so each layer's uses come out in (consumer, position)
     * order and first[i] steps back to their start. */
    for (int c = L - 1; c >= 0; c--)
        for (int k = m->layers[c].nin - 1; k >= 0; k--)
            if (m->layers[c].inputs[k] != RM_MODEL_INPUT) uses[--first[m->layers[c].inputs[k]]] = (use){c, k};
}

/* Scratch: bwd[L] (backward node of each layer), first[L + 1] and
 * uses/gdeps/gslots[m->ninputs] (a layer has at most that many uses). */
static int trace(rm_graph *g, const rm_model *m, int batch, int forward_only, const rm_shape *ins, const rm_shape *outs,
                 int *bwd, int *first, use *uses, int *gdeps, int *gslots, rm_err *e)
{
    const int L = m->nlayers;
    rm_shape input = m->input;
    input.n = batch;
    const rm_shape zero = {0, 0, 0, 0};
    int deps[2 * RM_MAX_INPUTS + 2], slots[2 * RM_MAX_INPUTS + 2];

    /* Loading the batch costs nothing to compute, but a nominal cost of one
     * per element keeps the scheduler from treating it as free to recompute. */
    if (add_node(g, "input", "", RM_TAG_FORWARD, RM_OP_INPUT, -1, (double)rm_shape_numel(input), rm_shape_bytes(input),
                 input, NULL, NULL, 0, e) < 0)
        return e ? e->code : RM_ERR_NOMEM;

    for (int i = 0; i < L; i++) {
        const rm_model_layer *ly = &m->layers[i];
        const rm_shape *in = &ins[ly->in_at];
        for (int k = 0; k < ly->nin; k++) {
            deps[k] = rm_trace_forward_node(ly->inputs[k]);
            slots[k] = -1;
        }
        double fl = ly->desc->flops(&ly->cfg, in, ly->nin, outs[i], 0);
        rm_node_tag tag = i == L - 1 ? RM_TAG_LOSS : RM_TAG_FORWARD;
        if (add_node(g, ly->name, "", tag, RM_OP_FORWARD, i, fl, rm_shape_bytes(outs[i]), outs[i], deps, slots, ly->nin,
                     e) < 0)
            return e ? e->code : RM_ERR_NOMEM;
        g->forward_flops += fl;
    }

    for (int i = L - 1; i >= 0 && !forward_only; i--) {
        const rm_model_layer *ly = &m->layers[i];
        const rm_shape *in = &ins[ly->in_at];
        int nd = 0;
        if (i < L - 1) {
            const use *mine = &uses[first[i]];
            int nuses = first[i + 1] - first[i];
            if (nuses == 1) {
                deps[nd] = bwd[mine[0].consumer];
                slots[nd++] = mine[0].slot;
            } else {
                /* nuses >= 2: the model builder rejects unused outputs. */
                for (int u = 0; u < nuses; u++) {
                    gdeps[u] = bwd[mine[u].consumer];
                    gslots[u] = mine[u].slot;
                }
                double fl = (double)(nuses - 1) * (double)rm_shape_numel(outs[i]);
                int idx = add_node(g, ly->name, ".gradsum", RM_TAG_BACKWARD, RM_OP_GRAD_SUM, i, fl,
                                   rm_shape_bytes(outs[i]), outs[i], gdeps, gslots, nuses, e);
                if (idx < 0) return e ? e->code : RM_ERR_NOMEM;
                g->backward_flops += fl;
                deps[nd] = idx;
                slots[nd++] = -1; /* the whole grad-sum output, not a slice of it */
            }
        }
        if (ly->desc->backward_reads & RM_READS_INPUTS)
            for (int k = 0; k < ly->nin; k++) {
                deps[nd] = rm_trace_forward_node(ly->inputs[k]);
                slots[nd++] = -1;
            }
        if (ly->desc->backward_reads & RM_READS_OUTPUT) {
            deps[nd] = rm_trace_forward_node(i);
            slots[nd++] = -1;
        }
        /* The gradient of each input, concatenated; the batch needs none. */
        size_t bytes = 0;
        for (int k = 0; k < ly->nin; k++)
            if (ly->inputs[k] != RM_MODEL_INPUT) bytes += rm_shape_bytes(in[k]);
        double fl = ly->desc->flops(&ly->cfg, in, ly->nin, outs[i], 1);
        bwd[i] =
            add_node(g, ly->name, ".grad", RM_TAG_BACKWARD, RM_OP_BACKWARD, i, fl, bytes, zero, deps, slots, nd, e);
        if (bwd[i] < 0) return e ? e->code : RM_ERR_NOMEM;
        g->backward_flops += fl;
    }
    g->param_count = m->param_count;
    return rm_graph_validate(g, e);
}

static int trace_model(rm_graph *g, const rm_model *m, int batch, int forward_only, rm_err *e)
{
    memset(g, 0, sizeof *g);
    if (batch < 1) return rm_errorf(e, RM_ERR_INVALID, "%s: batch must be at least 1, got %d", m->path, batch);
    /* Element counts beyond this would overflow size_t byte arithmetic. */
    double biggest = (double)rm_shape_numel(m->input);
    int widest = 1; /* a backward node holds the gradients of all its layer's inputs */
    for (int i = 0; i < m->nlayers; i++) {
        if ((double)rm_shape_numel(m->layers[i].out_shape) > biggest)
            biggest = (double)rm_shape_numel(m->layers[i].out_shape);
        if (m->layers[i].nin > widest) widest = m->layers[i].nin;
    }
    if (biggest * (double)batch * 4.0 * widest > 9.0e18)
        return rm_errorf(e, RM_ERR_INVALID, "%s: batch %d makes tensors too large to address", m->path, batch);

    const int L = m->nlayers;
    const size_t ni = (size_t)m->ninputs + 1;
    rm_shape *ins = malloc(ni * sizeof *ins);
    rm_shape *outs = malloc((size_t)L * sizeof *outs);
    int *bwd = malloc((size_t)L * sizeof *bwd);
    int *first = malloc((size_t)(L + 1) * sizeof *first);
    use *uses = malloc(ni * sizeof *uses);
    int *gdeps = malloc(ni * sizeof *gdeps);
    int *gslots = malloc(ni * sizeof *gslots);
    int rc;
    if (!ins || !outs || !bwd || !first || !uses || !gdeps || !gslots)
        rc = rm_errorf(e, RM_ERR_NOMEM, "trace: out of memory");
    else
        rc = rm_model_shapes(ins, outs, m, batch, e);
    if (!rc) {
        g->batch = batch;
        index_uses(first, uses, m);
        rc = trace(g, m, batch, forward_only, ins, outs, bwd, first, uses, gdeps, gslots, e);
    }
    free(ins);
    free(outs);
    free(bwd);
    free(first);
    free(uses);
    free(gdeps);
    free(gslots);
    if (rc) rm_graph_free(g);
    return rc;
}

int rm_model_trace(rm_graph *g, const rm_model *m, int batch, rm_err *e)
{
    return trace_model(g, m, batch, 0, e);
}

int rm_model_trace_forward(rm_graph *g, const rm_model *m, int batch, rm_err *e)
{
    return trace_model(g, m, batch, 1, e);
}
