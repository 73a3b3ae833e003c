/* Checking what the executor is handed, once, at creation: the training
 * graph against the model (every node's layer, shape, bytes and exactly the
 * dependencies engine/graph.h describes), the plan against the graph, and an
 * inference graph against the training graph. A step then only follows the
 * operations. */
#include <string.h>

#include "executor_internal.h"

/* A gradient dependency: dep must be the backward node of a layer that reads
 * layer L's output at input position slot. */
static int check_grad_dep(const rm_executor *ex, int i, int dep, int slot, int L, rm_err *e)
{
    const rm_graph *g = ex->g;
    const rm_graph_node *d = &g->nodes[dep];
    if (d->op != RM_OP_BACKWARD || d->layer < 0 || d->layer >= ex->L || slot < 0 ||
        slot >= ex->m->layers[d->layer].nin || ex->m->layers[d->layer].inputs[slot] != L)
        return rm_errorf(e, RM_ERR_INVALID,
                         "executor: node %d (%s) reads node %d (%s) slot %d as the gradient of layer %d's output, "
                         "but that is not a backward node of a reader of that output",
                         i, rm_exec_node_name(g, i), dep, rm_exec_node_name(g, dep), slot, L);
    return RM_OK;
}

static int check_node(rm_executor *ex, int i, rm_err *e)
{
    const rm_graph *g = ex->g;
    const rm_model *m = ex->m;
    const rm_graph_node *nd = &g->nodes[i];
    char a[64], b[64];
    if (nd->op == RM_OP_INPUT) {
        rm_shape want = m->input;
        want.n = ex->batch;
        if (ex->input_node >= 0 || nd->ndeps || !rm_shape_equal(nd->shape, want) || nd->bytes != rm_shape_bytes(want))
            return rm_errorf(e, RM_ERR_INVALID,
                             "executor: node %d (%s) is a second or malformed input node (%s, want %s)", i, nd->name,
                             rm_shape_str(nd->shape, a, sizeof a), rm_shape_str(want, b, sizeof b));
        ex->input_node = i;
        return RM_OK;
    }
    int L = nd->layer;
    if (L < 0 || L >= ex->L)
        return rm_errorf(e, RM_ERR_INVALID, "executor: node %d (%s) names layer %d; the model has %d", i, nd->name, L,
                         ex->L);
    const rm_model_layer *ly = &m->layers[L];
    int is_loss = L == ex->L - 1;
    if (nd->op == RM_OP_FORWARD) {
        if (ex->fwd_node[L] >= 0 || !rm_shape_equal(nd->shape, ex->out_shape[L]) ||
            nd->bytes != rm_shape_bytes(ex->out_shape[L]) || nd->ndeps != ly->nin)
            return rm_errorf(e, RM_ERR_INVALID,
                             "executor: forward node %d (%s) of layer %s does not match the model (a second forward "
                             "node, shape %s instead of %s, or %d inputs instead of %d)",
                             i, nd->name, ly->name, rm_shape_str(nd->shape, a, sizeof a),
                             rm_shape_str(ex->out_shape[L], b, sizeof b), nd->ndeps, ly->nin);
        for (int k = 0; k < ly->nin; k++)
            if (rm_exec_input_node_of(ex, L, k) < 0 || nd->deps[k] != rm_exec_input_node_of(ex, L, k))
                return rm_errorf(e, RM_ERR_INVALID, "executor: forward node %d (%s) reads node %d as input %d", i,
                                 nd->name, nd->deps[k], k);
        ex->fwd_node[L] = i;
        if (is_loss) ex->loss_node = i;
        return RM_OK;
    }
    if (ex->fwd_node[L] < 0)
        return rm_errorf(e, RM_ERR_INVALID, "executor: node %d (%s) comes before layer %s's forward node", i, nd->name,
                         ly->name);
    if (nd->op == RM_OP_GRAD_SUM) {
        if (is_loss || nd->ndeps < 1 || !rm_shape_equal(nd->shape, ex->out_shape[L]) ||
            nd->bytes != rm_shape_bytes(ex->out_shape[L]))
            return rm_errorf(e, RM_ERR_INVALID, "executor: grad-sum node %d (%s) does not match layer %s", i, nd->name,
                             ly->name);
        for (int d = 0; d < nd->ndeps; d++) {
            int rc = check_grad_dep(ex, i, nd->deps[d], nd->dep_slot[d], L, e);
            if (rc) return rc;
        }
        return RM_OK;
    }
    if (nd->op != RM_OP_BACKWARD)
        return rm_errorf(e, RM_ERR_INVALID, "executor: node %d (%s) has an unknown op %d", i, nd->name, (int)nd->op);
    int pos = 0;
    if (!is_loss) {
        if (nd->ndeps < 1)
            return rm_errorf(e, RM_ERR_INVALID, "executor: backward node %d (%s) reads no output gradient", i,
                             nd->name);
        const rm_graph_node *d = &g->nodes[nd->deps[0]];
        int rc = d->op == RM_OP_GRAD_SUM && d->layer == L && nd->dep_slot[0] == -1
                     ? RM_OK
                     : check_grad_dep(ex, i, nd->deps[0], nd->dep_slot[0], L, e);
        if (rc) return rc;
        pos = 1;
    }
    if (ly->desc->backward_reads & RM_READS_INPUTS)
        for (int k = 0; k < ly->nin; k++, pos++)
            if (pos >= nd->ndeps || nd->deps[pos] != rm_exec_input_node_of(ex, L, k))
                return rm_errorf(e, RM_ERR_INVALID, "executor: backward node %d (%s) does not read input %d of %s", i,
                                 nd->name, k, ly->name);
    if (ly->desc->backward_reads & RM_READS_OUTPUT) {
        if (pos >= nd->ndeps || nd->deps[pos] != ex->fwd_node[L])
            return rm_errorf(e, RM_ERR_INVALID, "executor: backward node %d (%s) does not read %s's output", i,
                             nd->name, ly->name);
        pos++;
    }
    if (pos != nd->ndeps)
        return rm_errorf(e, RM_ERR_INVALID, "executor: backward node %d (%s) has %d dependencies, layer %s needs %d", i,
                         nd->name, nd->ndeps, ly->name, pos);
    size_t bytes = 0;
    for (int k = 0; k < ly->nin; k++)
        if (ly->inputs[k] != RM_MODEL_INPUT) bytes += rm_shape_bytes(ex->in_shape[ly->in_at + k]);
    if (nd->bytes != bytes)
        return rm_errorf(e, RM_ERR_INVALID, "executor: backward node %d (%s) has %zu bytes, its input gradients %zu", i,
                         nd->name, nd->bytes, bytes);
    return RM_OK;
}

int rm_executor_check_graph(rm_executor *ex, rm_err *e)
{
    int rc = rm_graph_validate(ex->g, e);
    if (rc) return rc;
    for (int i = 0; i < ex->g->n; i++)
        if ((rc = check_node(ex, i, e))) return rc;
    if (ex->input_node < 0 || ex->loss_node < 0)
        return rm_errorf(e, RM_ERR_INVALID, "executor: the graph has no %s node",
                         ex->input_node < 0 ? "input" : "loss");
    return RM_OK;
}

int rm_executor_check_plan(const rm_executor *ex, rm_err *e)
{
    const rm_plan *p = ex->plan;
    if (p->nodes != ex->g->n)
        return rm_errorf(e, RM_ERR_INVALID, "executor: the plan is for %d nodes, the graph has %d", p->nodes, ex->g->n);
    for (int i = 0; i < p->nbuffers; i++) {
        const rm_plan_buffer *b = &p->buffers[i];
        if (b->node < 0 || b->node >= ex->g->n || b->bytes != ex->g->nodes[b->node].bytes)
            return rm_errorf(e, RM_ERR_INVALID,
                             "executor: plan buffer %d (node %d, %zu bytes) does not match the graph", i, b->node,
                             b->bytes);
    }
    return rm_plan_check(p, e);
}

/* The inference graph must be the training graph's forward part at a batch
 * no larger: the same nodes in the same order, reading the same nodes, so
 * everything checked for the training graph holds for it too. */
int rm_executor_check_inference(const rm_executor *ex, const rm_graph *fg, const rm_plan *fp, rm_err *e)
{
    const rm_graph *g = ex->g;
    if (fg->n > g->n || fg->batch < 1 || fg->batch > ex->batch)
        return rm_errorf(e, RM_ERR_INVALID,
                         "executor: the inference graph (%d nodes at batch %d) is not a forward part of the training "
                         "graph (%d nodes at batch %d)",
                         fg->n, fg->batch, g->n, ex->batch);
    for (int i = 0; i < fg->n; i++) {
        const rm_graph_node *a = &fg->nodes[i], *b = &g->nodes[i];
        rm_shape want = b->shape; /* at the inference batch; the loss is a scalar at any batch */
        if (want.n == ex->batch) want.n = fg->batch;
        int same = a->op == b->op && (a->op == RM_OP_INPUT || a->op == RM_OP_FORWARD) && a->layer == b->layer &&
                   a->ndeps == b->ndeps && rm_shape_equal(a->shape, want) && a->bytes == rm_shape_bytes(want);
        for (int d = 0; same && d < a->ndeps; d++) same = a->deps[d] == b->deps[d];
        if (!same)
            return rm_errorf(e, RM_ERR_INVALID,
                             "executor: inference node %d (%s) is not the training graph's forward node %d (%s)", i,
                             a->name, i, b->name);
    }
    if (fp->nodes != fg->n) return rm_errorf(e, RM_ERR_INVALID, "executor: the inference plan is for another graph");
    for (int i = 0; i < fp->nbuffers; i++)
        if (fp->buffers[i].node < 0 || fp->buffers[i].node >= fg->n ||
            fp->buffers[i].bytes != fg->nodes[fp->buffers[i].node].bytes)
            return rm_errorf(e, RM_ERR_INVALID, "executor: inference plan buffer %d does not match its graph", i);
    int rc = rm_plan_check(fp, e);
    if (rc) return rc;
    if (fp->span > rm_arena_capacity(ex->arena))
        return rm_errorf(e, RM_ERR_BUDGET,
                         "executor: inference at batch %d needs an arena of %zu bytes, the training "
                         "arena has %zu",
                         fg->batch, fp->span, rm_arena_capacity(ex->arena));
    size_t ws = 0;
    if ((rc = rm_executor_workspace_needed_on(&ws, ex->m, fg->batch, ex->be->kind, e))) return rc;
    if (ws > ex->workspace_size)
        return rm_errorf(e, RM_ERR_BUDGET,
                         "executor: inference at batch %d needs a workspace of %zu bytes, training's "
                         "has %zu",
                         fg->batch, ws, ex->workspace_size);
    return RM_OK;
}
