/* The executor: one training step following a plan. See executor.h for why it
 * lives in train/ and what makes it exact.
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
#include "executor.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "log.h"
#include "layer.h"
#include "trace.h"

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
    rm_shape *in_shape;  /* [L * RM_MAX_INPUTS]: layer inputs at the batch */
    rm_shape *out_shape; /* [L] */
    size_t *slot_off;    /* [L * RM_MAX_INPUTS]: float offset of input k's gradient in the backward output */
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
    float *loss_dev;     /* be->queued: the loss's fixed slot (dev); else NULL */
    const float **grad_src; /* [largest grad-sum]: its sources, filled per node (host) */

    /* Activations, and the step's bookkeeping (host, allocated once). */
    rm_arena *arena;
    float **ptr;        /* [n]: where each live node's value is; NULL when not live */
    int *live;          /* [n]: 1 while the node has a live buffer */
    uint8_t *computed;  /* [n]: computed at least once in this step */
    float loss;

    rm_executor_node_hook hook; /* profiling (rm_executor_set_node_hook); NULL: none */
    void *hook_ctx;
    int fetch_node;     /* rm_executor_set_fetch: -1 none */
    float *fetch_host;

    /* Inference (rm_executor_set_inference): a forward-only graph of the
     * same model and its plan, run in the same arena and workspace. */
    const rm_graph *infer_g;
    const rm_plan *infer_plan;
};

/* One run of a plan: a training step, or an inference pass. */
typedef struct exec_run {
    const rm_graph *g;
    const rm_plan *plan;
    int training;     /* layers in training mode (batch statistics, dropout) */
    int fold_stats;   /* batchnorm folds batch statistics into running ones, once per step */
    int count;        /* samples in the batch: g->batch, or fewer for inference */
    const float *input;
    uint64_t step;
} exec_run;

/* ---- checking the graph against the model -------------------------------- */

static const char *node_name(const rm_graph *g, int i) { return g->nodes[i].name; }

/* The graph node holding input k of layer L's forward value. */
static int input_node_of(const rm_executor *ex, int L, int k)
{
    int src = ex->m->layers[L].inputs[k];
    return src == RM_MODEL_INPUT ? ex->input_node : ex->fwd_node[src];
}

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
                         i, node_name(g, i), dep, node_name(g, dep), slot, L);
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
                             "executor: node %d (%s) is a second or malformed input node (%s, want %s)", i,
                             nd->name, rm_shape_str(nd->shape, a, sizeof a), rm_shape_str(want, b, sizeof b));
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
            if (input_node_of(ex, L, k) < 0 || nd->deps[k] != input_node_of(ex, L, k))
                return rm_errorf(e, RM_ERR_INVALID, "executor: forward node %d (%s) reads node %d as input %d",
                                 i, nd->name, nd->deps[k], k);
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
            return rm_errorf(e, RM_ERR_INVALID, "executor: grad-sum node %d (%s) does not match layer %s", i,
                             nd->name, ly->name);
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
            if (pos >= nd->ndeps || nd->deps[pos] != input_node_of(ex, L, k))
                return rm_errorf(e, RM_ERR_INVALID, "executor: backward node %d (%s) does not read input %d of %s", i,
                                 nd->name, k, ly->name);
    if (ly->desc->backward_reads & RM_READS_OUTPUT) {
        if (pos >= nd->ndeps || nd->deps[pos] != ex->fwd_node[L])
            return rm_errorf(e, RM_ERR_INVALID, "executor: backward node %d (%s) does not read %s's output", i,
                             nd->name, ly->name);
        pos++;
    }
    if (pos != nd->ndeps)
        return rm_errorf(e, RM_ERR_INVALID, "executor: backward node %d (%s) has %d dependencies, layer %s needs %d",
                         i, nd->name, nd->ndeps, ly->name, pos);
    size_t bytes = 0;
    for (int k = 0; k < ly->nin; k++)
        if (ly->inputs[k] != RM_MODEL_INPUT) bytes += rm_shape_bytes(ex->in_shape[(size_t)L * RM_MAX_INPUTS + k]);
    if (nd->bytes != bytes)
        return rm_errorf(e, RM_ERR_INVALID, "executor: backward node %d (%s) has %zu bytes, its input gradients %zu", i,
                         nd->name, nd->bytes, bytes);
    return RM_OK;
}

static int check_graph(rm_executor *ex, rm_err *e)
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

/* ---- fixed memory -------------------------------------------------------- */

int rm_executor_workspace_needed(size_t *out, const rm_model *m, int batch, rm_err *e)
{
    return rm_executor_workspace_needed_on(out, m, batch, RM_BACKEND_CPU, e);
}

int rm_executor_workspace_needed_on(size_t *out, const rm_model *m, int batch, rm_backend_kind kind, rm_err *e)
{
    *out = 0;
    rm_shape *ins = malloc((size_t)m->nlayers * RM_MAX_INPUTS * sizeof *ins);
    rm_shape *outs = malloc((size_t)m->nlayers * sizeof *outs);
    int rc = !ins || !outs ? rm_errorf(e, RM_ERR_NOMEM, "executor: out of memory")
                           : rm_model_shapes(ins, outs, m, batch, e);
    for (int i = 0; !rc && i < m->nlayers; i++) {
        const rm_model_layer *ly = &m->layers[i];
        for (int backward = 0; backward < 2; backward++) {
            size_t w = rm_backend_kind_layer_workspace(kind, ly->desc, &ly->cfg, &ins[(size_t)i * RM_MAX_INPUTS],
                                                       ly->nin, outs[i], backward);
            if (w > *out) *out = w;
        }
    }
    free(ins);
    free(outs);
    return rc;
}

int rm_executor_fixed_needed(rm_executor_fixed *f, const rm_model *m, int batch, const rm_backend *be, rm_err *e)
{
    memset(f, 0, sizeof *f);
    rm_backend_kind kind = be ? be->kind : RM_BACKEND_CPU;
    int rc = rm_executor_workspace_needed_on(&f->workspace_bytes, m, batch, kind, e);
    if (rc) return rc;
    f->weights = f->grads = rm_align_up(sizeof(float) * m->param_count);
    f->buffers = rm_align_up(sizeof(float) * m->buffer_count);
    f->labels = rm_align_up(sizeof(int32_t) * rm_model_label_count(m, batch));
    if (be && be->queued) f->labels += rm_align_up(sizeof(float)); /* the loss slot: a download per run waits for its work */
    f->workspace = rm_align_up(f->workspace_bytes);
    f->total = f->weights + f->grads + f->buffers + f->labels + f->workspace;
    return RM_OK;
}

static int alloc_fixed(rm_executor *ex, void **ptr, size_t bytes, rm_err *e)
{
    *ptr = NULL;
    if (bytes == 0) return RM_OK;
    int rc = rm_backend_alloc(ex->be, ptr, bytes, e);
    if (rc) {
        rm_err_context(e, "executor: fixed memory");
        return rc;
    }
    ex->fixed_bytes += rm_align_up(bytes);
    return RM_OK;
}

/* Lays the parameters out (layer order, w then b; gradients mirror them)
 * over the vectors params, grads and buffers, and initialises them from the
 * seed when init is set (then the vectors must be host memory). */
static int layout_params(rm_executor *ex, float *params, float *grads, float *buffers, int init, rm_err *e)
{
    const rm_model *m = ex->m;
    size_t pc = 0, bc = 0;
    rm_rng rng = rm_rng_make(ex->seed);
    for (int i = 0; i < ex->L; i++) {
        const rm_model_layer *ly = &m->layers[i];
        rm_layer_params *p = &ex->lp[i];
        memset(p, 0, sizeof *p);
        if (ly->desc->param_shapes) {
            rm_shape w = {0, 0, 0, 0}, b = {0, 0, 0, 0};
            ly->desc->param_shapes(&w, &b, &ly->cfg, ly->in_shape, ly->nin);
            size_t nw = rm_shape_numel(w), nb = rm_shape_numel(b);
            if (pc + nw + nb > ex->nparams)
                return rm_errorf(e, RM_ERR_INVALID, "executor: layer %s has more parameters than the model counts",
                                 ly->name);
            if (nw) {
                p->w = rm_tensor_make(w, params + pc);
                p->dw = rm_tensor_make(w, grads + pc);
            }
            if (nb) {
                p->b = rm_tensor_make(b, params + pc + nw);
                p->db = rm_tensor_make(b, grads + pc + nw);
            }
            pc += nw + nb;
        }
        if (ly->buffer_count) { /* batchnorm: mean then variance, one per channel */
            size_t c = ly->buffer_count / 2;
            if (bc + 2 * c > ex->nbuffers)
                return rm_errorf(e, RM_ERR_INVALID, "executor: layer %s has more buffers than the model counts",
                                 ly->name);
            rm_shape s = rm_shape_make((int)c, 1, 1, 1);
            p->running_mean = rm_tensor_make(s, buffers + bc);
            p->running_var = rm_tensor_make(s, buffers + bc + c);
            bc += 2 * c;
        }
        if (init && ly->desc->init) ly->desc->init(p, &ly->cfg, ly->in_shape, ly->nin, &rng);
    }
    if (pc != ex->nparams || bc != ex->nbuffers)
        return rm_errorf(e, RM_ERR_INVALID,
                         "executor: %zu parameters and %zu buffers laid out, the model counts %zu and %zu", pc, bc,
                         ex->nparams, ex->nbuffers);
    return RM_OK;
}

static int init_params(rm_executor *ex, rm_err *e)
{
    /* The layers' init writes host memory, so initialise host copies
     * (grads too, which init never reads), upload them, then lay the
     * tensors out over the device vectors. Creation only: a step never
     * allocates. */
    size_t np = ex->nparams ? ex->nparams : 1, nb = ex->nbuffers ? ex->nbuffers : 1;
    float *hp = calloc(np, sizeof(float)), *hg = calloc(np, sizeof(float)), *hb = calloc(nb, sizeof(float));
    int rc = !hp || !hg || !hb ? rm_errorf(e, RM_ERR_NOMEM, "executor: no host memory to initialise the parameters")
                               : layout_params(ex, hp, hg, hb, 1, e);
    const rm_backend_ops *ops = ex->be->ops;
    if (!rc && ex->nparams) rc = ops->upload(ex->be->ctx, ex->params, hp, ex->nparams * sizeof(float), e);
    if (!rc && ex->nbuffers) rc = ops->upload(ex->be->ctx, ex->buffers, hb, ex->nbuffers * sizeof(float), e);
    if (!rc && ex->nparams) rc = ops->zero(ex->be->ctx, ex->grads, ex->nparams * sizeof(float), e);
    /* The uploads read host memory asynchronously: wait before freeing it. */
    if (!rc) rc = ops->sync(ex->be->ctx, e);
    free(hp);
    free(hg);
    free(hb);
    if (rc) {
        rm_err_context(e, "executor: initialising the parameters on %s", ex->be->name);
        return rc;
    }
    return layout_params(ex, ex->params, ex->grads, ex->buffers, 0, e);
}

/* ---- creation ------------------------------------------------------------ */

static int check_plan(const rm_executor *ex, rm_err *e)
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
    ex->in_shape = calloc(L * RM_MAX_INPUTS, sizeof *ex->in_shape);
    ex->out_shape = calloc(L, sizeof *ex->out_shape);
    ex->slot_off = calloc(L * RM_MAX_INPUTS, sizeof *ex->slot_off);
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
            ex->slot_off[i * RM_MAX_INPUTS + (size_t)k] = off;
            if (m->layers[i].inputs[k] != RM_MODEL_INPUT)
                off += rm_shape_numel(ex->in_shape[i * RM_MAX_INPUTS + (size_t)k]);
        }
    }
    if ((rc = check_graph(ex, e)) || (rc = check_plan(ex, e))) goto fail;
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
    if (be->queued && (rc = alloc_fixed(ex, (void **)&ex->loss_dev, sizeof(float), e))) goto fail;
    if ((rc = alloc_fixed(ex, (void **)&ex->params, ex->nparams * sizeof(float), e)) ||
        (rc = alloc_fixed(ex, (void **)&ex->grads, ex->nparams * sizeof(float), e)) ||
        (rc = alloc_fixed(ex, (void **)&ex->buffers, ex->nbuffers * sizeof(float), e)) ||
        (rc = alloc_fixed(ex, (void **)&ex->labels, ex->nlabels * sizeof(int32_t), e)) ||
        (rc = alloc_fixed(ex, &ex->workspace, ex->workspace_size, e)))
        goto fail;
    if ((rc = init_params(ex, e))) goto fail;
    if ((rc = rm_arena_create(&ex->arena, be, plan->span, opts->arena_budget ? opts->arena_budget : plan->span, e))) {
        rm_err_context(e, "executor: the plan needs an arena of %zu bytes (live peak %zu)", plan->span,
                       plan->live_peak);
        goto fail;
    }
    RM_LOG_INFO("executor: %s backend, batch %d, %d graph nodes, %d operations; fixed memory %zu bytes (workspace "
                "%zu), arena %zu bytes for a plan span of %zu", be->name, ex->batch, g->n, plan->nops,
                ex->fixed_bytes, ex->workspace_size, rm_arena_capacity(ex->arena), plan->span);
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
    return base + ex->slot_off[(size_t)consumer * RM_MAX_INPUTS + (size_t)slot];
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
        rm_shape s = ex->in_shape[(size_t)L * RM_MAX_INPUTS + (size_t)k];
        /* Only declared reads get data: a layer reading more than it declares crashes here, not silently. */
        in[k] = rm_tensor_make(s, reads & RM_READS_INPUTS ? ex->ptr[input_node_of(ex, L, k)] : NULL);
        call.in[k] = &in[k];
        if (ly->inputs[k] == RM_MODEL_INPUT) continue; /* the batch needs no gradient */
        din[k] = rm_tensor_make(s, ex->ptr[v] + ex->slot_off[(size_t)L * RM_MAX_INPUTS + (size_t)k]);
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
    case RM_OP_FORWARD: return run_forward(ex, run, v, e);
    case RM_OP_BACKWARD: return run_backward(ex, run, v, e);
    case RM_OP_GRAD_SUM: return run_grad_sum(ex, v, e);
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
                                 node_name(g, v));
            if (ex->poison && (rc = poison_fill(ex, ex->ptr[v], b->size, e))) return rc;
            ex->live[v] = 0;
            ex->ptr[v] = NULL;
            continue;
        }
        /* The plan was checked at creation; this keeps a bad op sequence
         * from reading a dead value instead of failing. */
        if (ex->live[v])
            return rm_errorf(e, RM_ERR_INVALID, "executor: operation %d computes %s, which is live", o,
                             node_name(g, v));
        for (int d = 0; d < g->nodes[v].ndeps; d++)
            if (!ex->live[g->nodes[v].deps[d]])
                return rm_errorf(e, RM_ERR_INVALID, "executor: operation %d computes %s, whose input %s is not live",
                                 o, node_name(g, v), node_name(g, g->nodes[v].deps[d]));
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
                 run->training ? "training step" : "inference pass", run->count, (unsigned long long)run->step,
                 p->nops, rm_arena_high_water(ex->arena), (double)ex->loss);
    if (loss) *loss = ex->loss;
    return RM_OK;
}

int rm_executor_step(rm_executor *ex, float *loss, const float *input, const int32_t *labels, uint64_t step,
                     rm_err *e)
{
    exec_run run = {ex->g, ex->plan, 1, 1, ex->batch, input, step};
    return run_plan(ex, &run, labels, loss, e);
}

/* The inference graph must be the training graph's forward part at a batch
 * no larger: the same nodes in the same order, reading the same nodes, so
 * everything checked for the training graph holds for it too. */
static int check_inference(const rm_executor *ex, const rm_graph *fg, const rm_plan *fp, rm_err *e)
{
    const rm_graph *g = ex->g;
    if (fg->n > g->n || fg->batch < 1 || fg->batch > ex->batch)
        return rm_errorf(e, RM_ERR_INVALID,
                         "executor: the inference graph (%d nodes at batch %d) is not a forward part of the training "
                         "graph (%d nodes at batch %d)", fg->n, fg->batch, g->n, ex->batch);
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
        return rm_errorf(e, RM_ERR_BUDGET, "executor: inference at batch %d needs an arena of %zu bytes, the training "
                         "arena has %zu", fg->batch, fp->span, rm_arena_capacity(ex->arena));
    size_t ws = 0;
    if ((rc = rm_executor_workspace_needed_on(&ws, ex->m, fg->batch, ex->be->kind, e))) return rc;
    if (ws > ex->workspace_size)
        return rm_errorf(e, RM_ERR_BUDGET, "executor: inference at batch %d needs a workspace of %zu bytes, training's "
                         "has %zu", fg->batch, ws, ex->workspace_size);
    return RM_OK;
}

int rm_executor_set_inference(rm_executor *ex, const rm_graph *fg, const rm_plan *fp, rm_err *e)
{
    ex->infer_g = NULL, ex->infer_plan = NULL;
    int rc = check_inference(ex, fg, fp, e);
    if (rc) return rc;
    ex->infer_g = fg, ex->infer_plan = fp;
    return RM_OK;
}

int rm_executor_infer(rm_executor *ex, float *loss, const float *input, const int32_t *labels, int count,
                      rm_err *e)
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

/* Host <-> device copies of the fixed vectors (memcpy on the CPU backend). */
static int fixed_copy(rm_executor *ex, void *host, float *dev, size_t count, int up, const char *what, rm_err *e)
{
    if (!count) return RM_OK;
    if (!host) return rm_errorf(e, RM_ERR_INVALID, "executor: no host buffer for the %s", what);
    const rm_backend_ops *ops = ex->be->ops;
    size_t bytes = count * sizeof(float);
    int rc = up ? ops->upload(ex->be->ctx, dev, host, bytes, e) : ops->download(ex->be->ctx, host, dev, bytes, e);
    /* An upload reads host memory asynchronously: done before returning. */
    if (!rc && up) rc = ops->sync(ex->be->ctx, e);
    if (rc) rm_err_context(e, "executor: %s the %s", up ? "uploading" : "downloading", what);
    return rc;
}

int rm_executor_download_params(rm_executor *ex, float *host, rm_err *e)
{
    return fixed_copy(ex, host, ex->params, ex->nparams, 0, "parameters", e);
}
int rm_executor_download_grads(rm_executor *ex, float *host, rm_err *e)
{
    return fixed_copy(ex, host, ex->grads, ex->nparams, 0, "gradients", e);
}
int rm_executor_download_buffers(rm_executor *ex, float *host, rm_err *e)
{
    return fixed_copy(ex, host, ex->buffers, ex->nbuffers, 0, "batchnorm statistics", e);
}
int rm_executor_upload_params(rm_executor *ex, const float *host, rm_err *e)
{
    return fixed_copy(ex, (void *)host, ex->params, ex->nparams, 1, "parameters", e);
}
int rm_executor_upload_buffers(rm_executor *ex, const float *host, rm_err *e)
{
    return fixed_copy(ex, (void *)host, ex->buffers, ex->nbuffers, 1, "batchnorm statistics", e);
}

rm_backend *rm_executor_backend(const rm_executor *ex) { return ex->be; }

size_t rm_executor_arena_high_water(const rm_executor *ex) { return rm_arena_high_water(ex->arena); }
void *rm_executor_arena_memory(const rm_executor *ex, size_t *bytes)
{
    *bytes = rm_arena_capacity(ex->arena);
    return rm_arena_base(ex->arena);
}
void *rm_executor_workspace_memory(const rm_executor *ex, size_t *bytes)
{
    *bytes = ex->workspace_size;
    return ex->workspace;
}
size_t rm_executor_fixed_bytes(const rm_executor *ex) { return ex->fixed_bytes; }
size_t rm_executor_workspace_bytes(const rm_executor *ex) { return ex->workspace_size; }
