/* The executor: creation and the run loop, one loop for training steps and
 * inference passes. See executor.h for what makes it exact.
 *
 * How a node is run, per engine/graph.h:
 *  - input: the host batch is uploaded into the node's buffer (again, if a
 *    schedule recomputes it);
 *  - forward: the layer's forward on its deps (in input order);
 *  - backward: the layer's backward; deps[0] is the gradient of its output
 *    (a slice of a consumer's backward output, chosen by dep_slot, or a whole
 *    grad-sum output), absent for the loss; its output is the gradients of
 *    the inputs concatenated in input order, the input batch taking none;
 *  - grad-sum: the element-wise sum, in dependency order, of the slices of
 *    the consumers' backward outputs.
 * Everything is checked once at creation (the graph against the model, the
 * plan for overlaps), so the step itself only follows the operations.
 *
 * On a CUDA backend every buffer (parameters, gradients, batchnorm
 * statistics, labels, the loss, the workspace and the arena) is device
 * memory allocated once at creation; the parameters are initialised on the
 * host by the layers' init and uploaded. A step uploads the batch and the
 * labels, queues every node's kernels on the backend's stream (grad-sum and
 * the poison fill are backend ops too, backend.h), copies the loss
 * into its fixed slot when the loss node is computed and downloads that one
 * float at the end, which synchronises the stream. */
#include "executor_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

/* One run of a plan: a training step, or an inference pass. */
typedef struct exec_run {
    const rm_graph *g;
    const rm_plan *plan;
    int training;   /* layers in training mode (batch statistics, dropout) */
    int fold_stats; /* batchnorm folds batch statistics into running ones, once per step */
    int count;      /* samples in the batch: g->batch, or fewer for inference */
    const float *input;
    uint64_t step;
} exec_run;

/* ---- creation ------------------------------------------------------------ */

int rm_executor_create(rm_executor **out, const rm_model *m, const rm_graph *g, rm_backend *be, const rm_plan *plan,
                       const rm_executor_options *opts, rm_err *e)
{
    *out = NULL;
    rm_executor_options defaults = {0, 0, 0};
    if (!opts) opts = &defaults;
    if (!be->ops->layer_forward || !be->ops->grad_sum || !be->ops->poison || !be->ops->mem_info)
        return rm_errorf(e, RM_ERR_UNSUPPORTED, "executor: backend %s does not compute", be->name);
    if (m->nlayers < 1 || g->n < 1 || g->batch < 1)
        return rm_errorf(e, RM_ERR_INVALID, "executor: empty model or graph");
    rm_executor *ex = calloc(1, sizeof *ex);
    if (!ex) return rm_errorf(e, RM_ERR_NOMEM, "executor: out of memory");
    ex->m = m, ex->g = g, ex->plan = plan, ex->be = be, ex->seed = opts->seed;
    ex->poison = opts->poison;
#ifndef NDEBUG
    ex->poison = 1; /* debug builds always check that nothing reads a dead value */
#endif
    ex->L = m->nlayers;
    ex->batch = g->batch;
    ex->input_node = ex->loss_node = ex->fetch_node = -1;
    size_t L = (size_t)ex->L, n = (size_t)g->n;
    int rc = RM_OK;
    ex->in_shape = calloc((size_t)m->ninputs + 1, sizeof *ex->in_shape);
    ex->out_shape = calloc(L, sizeof *ex->out_shape);
    ex->slot_off = calloc((size_t)m->ninputs + 1, sizeof *ex->slot_off);
    ex->fwd_node = malloc(L * sizeof *ex->fwd_node);
    ex->lp = calloc(L, sizeof *ex->lp);
    ex->ptr = calloc(n, sizeof *ex->ptr);
    ex->live = calloc(n, sizeof *ex->live);
    ex->computed = calloc(n, 1);
    if (!ex->in_shape || !ex->out_shape || !ex->slot_off || !ex->fwd_node || !ex->lp || !ex->ptr || !ex->live ||
        !ex->computed) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "executor: out of memory");
        goto fail;
    }
    for (size_t i = 0; i < L; i++) ex->fwd_node[i] = -1;
    if ((rc = rm_model_shapes(ex->in_shape, ex->out_shape, m, ex->batch, e))) goto fail;
    for (size_t i = 0; i < L; i++) {
        size_t off = 0;
        for (int k = 0; k < m->layers[i].nin; k++) {
            ex->slot_off[m->layers[i].in_at + k] = off;
            if (m->layers[i].inputs[k] != RM_MODEL_INPUT) off += rm_shape_numel(ex->in_shape[m->layers[i].in_at + k]);
        }
    }
    if ((rc = rm_executor_check_graph(ex, e)) || (rc = rm_executor_check_plan(ex, e))) goto fail;
    int max_src = 1;
    for (int i = 0; i < g->n; i++) {
        if (g->nodes[i].op != RM_OP_GRAD_SUM) continue;
        if (be->max_grad_sum && g->nodes[i].ndeps > be->max_grad_sum) {
            rc = rm_errorf(e, RM_ERR_UNSUPPORTED,
                           "executor: grad-sum node %d (%s) sums %d gradients; the %s backend takes at most %d", i,
                           g->nodes[i].name, g->nodes[i].ndeps, be->name, be->max_grad_sum);
            goto fail;
        }
        if (g->nodes[i].ndeps > max_src) max_src = g->nodes[i].ndeps;
    }
    if (!(ex->grad_src = malloc((size_t)max_src * sizeof *ex->grad_src))) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "executor: out of memory");
        goto fail;
    }

    ex->nparams = m->param_count;
    ex->nbuffers = m->buffer_count;
    ex->nlabels = rm_model_label_count(m, ex->batch);
    rm_executor_fixed fx;
    if ((rc = rm_executor_fixed_needed(&fx, m, ex->batch, be, e))) goto fail;
    ex->workspace_size = fx.workspace_bytes;
    {
        /* Refused before anything is allocated: a budget the device cannot
         * hold (the CPU backend reports no bound). */
        size_t arena = opts->arena_budget ? opts->arena_budget : plan->span, free_b = 0, total_b = 0;
        if ((rc = be->ops->mem_info(be->ctx, &free_b, &total_b, e))) goto fail;
        if (fx.total + arena < fx.total || fx.total + arena > free_b) {
            rc = rm_errorf(e, RM_ERR_BUDGET,
                           "executor: %zu bytes of fixed memory plus an arena of %zu bytes do not fit in the %zu "
                           "bytes free on %s (of %zu)",
                           fx.total, arena, free_b, rm_backend_kind_device(be->kind), total_b);
            goto fail;
        }
    }
    if (be->queued && (rc = rm_executor_alloc_fixed(ex, (void **)&ex->loss_dev, sizeof(float), e))) goto fail;
    if ((rc = rm_executor_alloc_fixed(ex, (void **)&ex->params, ex->nparams * sizeof(float), e)) ||
        (rc = rm_executor_alloc_fixed(ex, (void **)&ex->grads, ex->nparams * sizeof(float), e)) ||
        (rc = rm_executor_alloc_fixed(ex, (void **)&ex->buffers, ex->nbuffers * sizeof(float), e)) ||
        (rc = rm_executor_alloc_fixed(ex, (void **)&ex->labels, ex->nlabels * sizeof(int32_t), e)) ||
        (rc = rm_executor_alloc_fixed(ex, &ex->workspace, ex->workspace_size, e)))
        goto fail;
    if ((rc = rm_executor_init_params(ex, e))) goto fail;
    if ((rc = rm_arena_create(&ex->arena, be, plan->span, opts->arena_budget ? opts->arena_budget : plan->span, e))) {
        rm_err_context(e, "executor: the plan needs an arena of %zu bytes (live peak %zu)", plan->span,
                       plan->live_peak);
        goto fail;
    }
    RM_LOG_INFO("executor: %s backend, batch %d, %d graph nodes, %d operations; fixed memory %zu bytes (workspace "
                "%zu), arena %zu bytes for a plan span of %zu",
                be->name, ex->batch, g->n, plan->nops, ex->fixed_bytes, ex->workspace_size,
                rm_arena_capacity(ex->arena), plan->span);
    *out = ex;
    return RM_OK;
fail:
    rm_executor_free(ex);
    return rc;
}

void rm_executor_free(rm_executor *ex)
{
    if (!ex) return;
    rm_arena_free(ex->arena);
    void *fixed[] = {ex->params, ex->grads, ex->buffers, ex->labels, ex->workspace, ex->loss_dev};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (fixed[i]) rm_backend_release(ex->be, fixed[i]);
    free(ex->in_shape);
    free(ex->out_shape);
    free(ex->slot_off);
    free(ex->fwd_node);
    free(ex->lp);
    free(ex->ptr);
    free(ex->live);
    free(ex->computed);
    free(ex->grad_src);
    free(ex);
}

/* ---- the step ------------------------------------------------------------ */

/* Poison of a buffer: NaNs, however the backend writes them. */
static int poison_fill(rm_executor *ex, float *p, size_t bytes, rm_err *e)
{
    return ex->be->ops->poison(ex->be->ctx, p, bytes, e);
}

/* Where the gradient slice that dependency d of node i refers to starts. */
static float *grad_slice(const rm_executor *ex, int dep, int slot)
{
    float *base = ex->ptr[dep];
    if (slot < 0) return base; /* a whole grad-sum output */
    int consumer = ex->g->nodes[dep].layer;
    return base + ex->slot_off[ex->m->layers[consumer].in_at + slot];
}

/* A node's shape with the run's sample count (inference may end short). */
static rm_shape run_shape(const exec_run *run, rm_shape s)
{
    s.n = run->count;
    return s;
}

static rm_layer_call base_call(rm_executor *ex, const exec_run *run, int L, int node_id)
{
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &ex->m->layers[L].cfg;
    call.params = &ex->lp[L];
    call.be = ex->be;
    call.nin = ex->m->layers[L].nin;
    call.labels = L == ex->L - 1 ? ex->labels : NULL;
    call.training = run->training;
    call.seed = ex->seed;
    call.step = run->step;
    call.node_id = node_id; /* the forward node, for the backward too: same dropout mask */
    call.workspace = ex->workspace;
    call.workspace_size = ex->workspace_size;
    return call;
}

static int run_forward(rm_executor *ex, const exec_run *run, int v, rm_err *e)
{
    const rm_graph *g = run->g;
    const rm_graph_node *nd = &g->nodes[v];
    int L = nd->layer;
    rm_layer_call call = base_call(ex, run, L, v);
    rm_tensor in[RM_MAX_INPUTS], out = rm_tensor_make(run_shape(run, nd->shape), ex->ptr[v]);
    for (int k = 0; k < call.nin; k++) {
        int d = nd->deps[k];
        in[k] = rm_tensor_make(run_shape(run, g->nodes[d].shape), ex->ptr[d]);
        call.in[k] = &in[k];
    }
    call.out = &out;
    /* Batchnorm folds batch statistics into its running ones once per step,
     * not once per recomputation. */
    call.update_stats = run->fold_stats && !ex->computed[v];
    int rc = rm_layer_forward(ex->m->layers[L].desc, &call, e);
    if (rc) {
        rm_err_context(e, "executor: forward of %s", nd->name);
        return rc;
    }
    if (L == ex->L - 1) {
        /* Queued work: into the fixed slot, downloaded once at the end of
         * the run (the loss node's buffer may be freed before then). */
        rc = ex->be->queued ? ex->be->ops->copy(ex->be->ctx, ex->loss_dev, ex->ptr[v], sizeof(float), e)
                            : ex->be->ops->download(ex->be->ctx, &ex->loss, ex->ptr[v], sizeof(float), e);
        if (rc) return rc;
    }
    return RM_OK;
}

static int run_backward(rm_executor *ex, const exec_run *run, int v, rm_err *e)
{
    const rm_graph_node *nd = &ex->g->nodes[v];
    int L = nd->layer, f = ex->fwd_node[L];
    const rm_model_layer *ly = &ex->m->layers[L];
    rm_layer_call call = base_call(ex, run, L, f);
    unsigned reads = ly->desc->backward_reads;
    rm_tensor in[RM_MAX_INPUTS], din[RM_MAX_INPUTS], out, dout;
    for (int k = 0; k < ly->nin; k++) {
        rm_shape s = ex->in_shape[ly->in_at + k];
        /* Only declared reads get data: a layer reading more than it declares crashes here, not silently. */
        in[k] = rm_tensor_make(s, reads & RM_READS_INPUTS ? ex->ptr[rm_exec_input_node_of(ex, L, k)] : NULL);
        call.in[k] = &in[k];
        if (ly->inputs[k] == RM_MODEL_INPUT) continue; /* the batch needs no gradient */
        din[k] = rm_tensor_make(s, ex->ptr[v] + ex->slot_off[ly->in_at + k]);
        call.din[k] = &din[k];
    }
    out = rm_tensor_make(ex->out_shape[L], reads & RM_READS_OUTPUT ? ex->ptr[f] : NULL);
    call.out = &out;
    if (L != ex->L - 1) {
        dout = rm_tensor_make(ex->out_shape[L], grad_slice(ex, nd->deps[0], nd->dep_slot[0]));
        call.dout = &dout;
    }
    int rc = rm_layer_backward(ly->desc, &call, e);
    if (rc) rm_err_context(e, "executor: backward of %s", ly->name);
    return rc;
}

/* Summed in double, in dependency order, by the backend: the same bits
 * under every schedule and on every backend. */
static int run_grad_sum(rm_executor *ex, int v, rm_err *e)
{
    const rm_graph_node *nd = &ex->g->nodes[v];
    for (int d = 0; d < nd->ndeps; d++) ex->grad_src[d] = grad_slice(ex, nd->deps[d], nd->dep_slot[d]);
    int rc = ex->be->ops->grad_sum(ex->be->ctx, ex->ptr[v], ex->grad_src, nd->ndeps, rm_shape_numel(nd->shape), e);
    if (rc) rm_err_context(e, "executor: gradient sum %s", nd->name);
    return rc;
}

static int run_node(rm_executor *ex, const exec_run *run, int v, rm_err *e)
{
    const rm_graph_node *nd = &run->g->nodes[v];
    switch (nd->op) {
    case RM_OP_INPUT:
        return ex->be->ops->upload(ex->be->ctx, ex->ptr[v], run->input, rm_shape_bytes(run_shape(run, nd->shape)), e);
    case RM_OP_FORWARD:
        return run_forward(ex, run, v, e);
    case RM_OP_BACKWARD:
        return run_backward(ex, run, v, e);
    case RM_OP_GRAD_SUM:
        return run_grad_sum(ex, v, e);
    }
    return rm_errorf(e, RM_ERR_INVALID, "executor: node %d has an unknown op", v);
}

/* The first computation of the fetched node, downloaded for the caller. */
static int fetch(rm_executor *ex, const exec_run *run, int v, rm_err *e)
{
    if (v != ex->fetch_node || ex->computed[v]) return RM_OK;
    size_t bytes = rm_shape_bytes(run_shape(run, run->g->nodes[v].shape));
    return ex->be->ops->download(ex->be->ctx, ex->fetch_host, ex->ptr[v], bytes, e);
}

/* Runs a plan's operations in order: the one loop every training step and
 * every inference pass goes through. */
static int run_plan(rm_executor *ex, const exec_run *run, const int32_t *labels, float *loss, rm_err *e)
{
    const rm_plan *p = run->plan;
    const rm_graph *g = run->g;
    size_t nlabels = rm_model_label_count(ex->m, run->count);
    if (!run->input || (nlabels && !labels))
        return rm_errorf(e, RM_ERR_INVALID, "executor: a run needs an input batch and its labels");
    int rc = nlabels ? ex->be->ops->upload(ex->be->ctx, ex->labels, labels, nlabels * sizeof(int32_t), e) : 0;
    if (rc) return rc;
    memset(ex->live, 0, (size_t)g->n * sizeof *ex->live);
    memset(ex->computed, 0, (size_t)g->n);
    for (int i = 0; i < g->n; i++) ex->ptr[i] = NULL;
    ex->loss = NAN;
    if (ex->loss_dev && (rc = poison_fill(ex, ex->loss_dev, sizeof(float), e))) return rc;
    for (int o = 0; o < p->nops; o++) {
        const rm_plan_op *op = &p->ops[o];
        const rm_plan_buffer *b = &p->buffers[op->buffer];
        int v = op->node;
        if (op->kind == RM_OP_FREE) {
            if (!ex->live[v])
                return rm_errorf(e, RM_ERR_INVALID, "executor: operation %d frees %s, which is not live", o,
                                 rm_exec_node_name(g, v));
            if (ex->poison && (rc = poison_fill(ex, ex->ptr[v], b->size, e))) return rc;
            ex->live[v] = 0;
            ex->ptr[v] = NULL;
            continue;
        }
        /* The plan was checked at creation; this keeps a bad op sequence
         * from reading a dead value instead of failing. */
        if (ex->live[v])
            return rm_errorf(e, RM_ERR_INVALID, "executor: operation %d computes %s, which is live", o,
                             rm_exec_node_name(g, v));
        for (int d = 0; d < g->nodes[v].ndeps; d++)
            if (!ex->live[g->nodes[v].deps[d]])
                return rm_errorf(e, RM_ERR_INVALID, "executor: operation %d computes %s, whose input %s is not live", o,
                                 rm_exec_node_name(g, v), rm_exec_node_name(g, g->nodes[v].deps[d]));
        void *ptr;
        if ((rc = rm_arena_place(ex->arena, &ptr, op->offset, b->size, e))) return rc;
        ex->ptr[v] = ptr;
        ex->live[v] = 1;
        if (ex->poison && (rc = poison_fill(ex, ex->ptr[v], b->size, e))) return rc;
        if (ex->hook && (rc = ex->hook(ex->hook_ctx, v, 0, e))) return rc;
        if ((rc = run_node(ex, run, v, e))) return rc;
        if (ex->hook && (rc = ex->hook(ex->hook_ctx, v, 1, e))) return rc;
        if ((rc = fetch(ex, run, v, e))) return rc;
        ex->computed[v] = 1;
    }
    /* Queued work: the one download of the run; it waits for every queued
     * kernel, so an execution error of any of them surfaces here. */
    if (ex->loss_dev && (rc = ex->be->ops->download(ex->be->ctx, &ex->loss, ex->loss_dev, sizeof(float), e))) {
        rm_err_context(e, "executor: the step's kernels");
        return rc;
    }
    RM_LOG_DEBUG("executor: %s of %d samples (step %llu): %d operations, arena high-water %zu bytes, loss %.9g",
                 run->training ? "training step" : "inference pass", run->count, (unsigned long long)run->step, p->nops,
                 rm_arena_high_water(ex->arena), (double)ex->loss);
    if (loss) *loss = ex->loss;
    return RM_OK;
}

int rm_executor_step(rm_executor *ex, float *loss, const float *input, const int32_t *labels, uint64_t step, rm_err *e)
{
    exec_run run = {ex->g, ex->plan, 1, 1, ex->batch, input, step};
    return run_plan(ex, &run, labels, loss, e);
}

int rm_executor_set_inference(rm_executor *ex, const rm_graph *fg, const rm_plan *fp, rm_err *e)
{
    ex->infer_g = NULL, ex->infer_plan = NULL;
    int rc = rm_executor_check_inference(ex, fg, fp, e);
    if (rc) return rc;
    ex->infer_g = fg, ex->infer_plan = fp;
    return RM_OK;
}

int rm_executor_infer(rm_executor *ex, float *loss, const float *input, const int32_t *labels, int count, rm_err *e)
{
    if (!ex->infer_g) return rm_errorf(e, RM_ERR_INVALID, "executor: no inference graph was set");
    if (count < 1 || count > ex->infer_g->batch)
        return rm_errorf(e, RM_ERR_INVALID, "executor: an inference batch of %d samples (1 to %d)", count,
                         ex->infer_g->batch);
    exec_run run = {ex->infer_g, ex->infer_plan, 0, 0, count, input, 0};
    return run_plan(ex, &run, labels, loss, e);
}

void rm_executor_set_fetch(rm_executor *ex, int node, float *host)
{
    ex->fetch_node = host ? node : -1;
    ex->fetch_host = host;
}

/* ---- accessors ----------------------------------------------------------- */

void rm_executor_set_node_hook(rm_executor *ex, rm_executor_node_hook fn, void *ctx)
{
    ex->hook = fn;
    ex->hook_ctx = ctx;
}

float *rm_executor_params(rm_executor *ex, size_t *count)
{
    if (count) *count = ex->nparams;
    return ex->params;
}

float *rm_executor_grads(rm_executor *ex, size_t *count)
{
    if (count) *count = ex->nparams;
    return ex->grads;
}

float *rm_executor_buffers(rm_executor *ex, size_t *count)
{
    if (count) *count = ex->nbuffers;
    return ex->buffers;
}

rm_layer_params *rm_executor_layer_params(rm_executor *ex, int layer)
{
    return layer >= 0 && layer < ex->L ? &ex->lp[layer] : NULL;
}

rm_backend *rm_executor_backend(const rm_executor *ex)
{
    return ex->be;
}

size_t rm_executor_arena_high_water(const rm_executor *ex)
{
    return rm_arena_high_water(ex->arena);
}
void *rm_executor_arena_memory(const rm_executor *ex, size_t *bytes)
{
    *bytes = rm_arena_capacity(ex->arena);
    return rm_arena_base(ex->arena);
}
size_t rm_executor_fixed_bytes(const rm_executor *ex)
{
    return ex->fixed_bytes;
}
size_t rm_executor_workspace_bytes(const rm_executor *ex)
{
    return ex->workspace_size;
}
