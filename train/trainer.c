/* The training loop as a library (see trainer.h for the memory accounting
 * and why runs are reproducible).
 *
 * Besides the executor, which runs a training step by the plan, this file
 * has one small forward-only runner of its own (fwd_*): evaluation needs the
 * model in inference mode (batchnorm running statistics, no dropout) at a
 * batch that may end short, which a training step is not. It plans its
 * buffers with the same engine/plan.c (free after the last reader) and is
 * sized so that its arena fits in the activation budget: on a device it
 * would reuse the idle training arena, since evaluation never overlaps a
 * step.
 *
 * Training accuracy. The executor reports the loss of a step, not its
 * predictions (the logits are freed inside the step, as the plan says). So
 * on every train_accuracy_every-th step the same forward runner replays the
 * step's forward pass in training mode (batch statistics, the step's dropout
 * masks, no running-statistics update) between the executor's step and the
 * optimizer's update: its logits are bit-identical to the step's, at the
 * price of one more forward pass (20-40% of a step on the tiny models,
 * hence only on some steps by default). An executor hook that counted
 * correct predictions when it computes the loss would make this free. */
#include "trainer.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "arena.h"
#include "backend.h"
#include "batcher.h"
#include "builder.h"
#include "snapshot.h"
#include "layer.h"
#include "maxbatch.h"
#include "plan.h"
#include "rng.h"
#include "schedule.h"
#include "simulate.h"
#include "trace.h"

/* Salts that keep the uses of the run's seed apart (rng.h hashes them in). */
#define SALT_SPLIT 0x73706c74ULL  /* the held-out split */
#define SALT_ORDER 0x6f726472ULL  /* the batch order */

#define SOLVE_ATTEMPTS 4 /* one solve plus re-solves that absorb fragmentation */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Binary units for messages, "12.34 MiB", returned by value so that a
 * message can hold several: MB(x).s lives until the end of the full
 * expression that formats it (C11 6.2.4p8). */
typedef struct mbuf {
    char s[24];
} mbuf;

static mbuf MB(size_t bytes)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double b = (double)bytes;
    int u = 0;
    while (b >= 1024.0 && u < 4) b /= 1024.0, u++;
    mbuf m;
    snprintf(m.s, sizeof m.s, u ? "%.2f %s" : "%.0f %s", b, units[u]);
    return m;
}

void rm_trainer_config_default(rm_trainer_config *c)
{
    memset(c, 0, sizeof *c);
    c->data = "synthetic";
    c->batch = 32;
    c->strategy = "checkpoint_all";
    c->epochs = 1;
    c->optim = rm_optim_options_default(RM_OPTIM_SGD);
    c->lr = 0.05;
    c->lr_kind = RM_LR_CONSTANT;
    c->seed = 1;
    c->train_accuracy_every = 4;
}

void rm_trainer_model_task(int *classes, rm_task *task, const rm_model *m)
{
    const rm_model_layer *loss = &m->layers[m->nlayers - 1];
    *classes = loss->in_shape[0].c;
    *task = loss->desc->kind == RM_LAYER_PIXEL_SOFTMAX_XENT ? RM_TASK_SEGMENTATION : RM_TASK_CLASSIFICATION;
}

/* ---- the problem ----------------------------------------------------------- */

int rm_trainer_problem(rm_problem **out, rm_trainer_summary *bd, const rm_model *m, int batch,
                       const rm_optim_options *o, rm_err *e)
{
    return rm_trainer_problem_on(out, bd, m, batch, o, RM_BACKEND_CPU, e);
}

int rm_trainer_problem_on(rm_problem **out, rm_trainer_summary *bd, const rm_model *m, int batch,
                          const rm_optim_options *o, rm_backend_kind device, rm_err *e)
{
    *out = NULL;
    rm_graph g;
    int rc = rm_model_trace(&g, m, batch, e);
    if (rc) return rc;
    rm_problem *p = NULL;
    rc = rm_problem_from_graph(&p, &g, e);
    rm_graph_free(&g);
    if (rc) return rc;
    size_t ws = 0;
    if ((rc = rm_executor_workspace_needed_on(&ws, m, batch, device, e))) {
        rm_problem_free(p);
        return rc;
    }
    /* Aligned as the plan places them, so the simulator's peak is the plan's live peak. */
    for (int i = 0; i < p->n; i++) p->nodes[i].bytes = rm_align_up(p->nodes[i].bytes);
    rm_trainer_summary s;
    memset(&s, 0, sizeof s);
    s.fixed_weights = rm_align_up(sizeof(float) * m->param_count);
    s.fixed_grads = s.fixed_weights;
    s.fixed_optim = rm_align_up(rm_optim_state_bytes_for(o, m->param_count));
    s.fixed_buffers = rm_align_up(sizeof(float) * m->buffer_count);
    s.fixed_labels = rm_align_up(sizeof(int32_t) * rm_model_label_count(m, batch));
    if (device == RM_BACKEND_CUDA) s.fixed_labels += rm_align_up(sizeof(float)); /* the executor's loss slot */
    s.fixed_workspace = rm_align_up(ws);
    s.fixed = s.fixed_weights + s.fixed_grads + s.fixed_optim + s.fixed_buffers + s.fixed_labels + s.fixed_workspace;
    p->fixed_bytes = s.fixed;
    p->budget = 0;
    if (bd) {
        bd->fixed = s.fixed;
        bd->fixed_weights = s.fixed_weights;
        bd->fixed_grads = s.fixed_grads;
        bd->fixed_optim = s.fixed_optim;
        bd->fixed_buffers = s.fixed_buffers;
        bd->fixed_labels = s.fixed_labels;
        bd->fixed_workspace = s.fixed_workspace;
    }
    *out = p;
    return RM_OK;
}

int rm_trainer_problem_costs(rm_problem **out, rm_trainer_summary *bd, const rm_model *m, int batch,
                             const rm_optim_options *o, rm_backend_kind device, const rm_cost_file *costs,
                             rm_cost_batch mode, rm_err *e)
{
    int rc = rm_trainer_problem_on(out, bd, m, batch, o, device, e);
    if (rc || !costs) return rc;
    char name[RM_NAME_LEN];
    rm_cost_model_name(name, sizeof name, m->path);
    if ((rc = rm_cost_file_apply(*out, costs, name, batch, mode, e))) {
        rm_problem_free(*out);
        *out = NULL;
    }
    return rc;
}

int rm_trainer_problem_device(rm_problem **out, rm_trainer_summary *bd, const rm_model *m, int batch,
                              const rm_optim_options *o, const rm_backend *be, const rm_cost_file *costs,
                              rm_cost_batch mode, rm_err *e)
{
    int rc = rm_trainer_problem_costs(out, bd, m, batch, o, be ? be->kind : RM_BACKEND_CPU, costs, mode, e);
    if (rc || !be) return rc;
    /* Allocated once by the backend, never inside an arena: fixed memory like the layers' workspace. */
    size_t extra = rm_align_up(rm_backend_cuda_fixed_bytes(be));
    (*out)->fixed_bytes += extra;
    if (bd) bd->fixed += extra, bd->fixed_workspace += extra;
    return RM_OK;
}

typedef struct problem_ctx {
    const rm_model *m;
    const rm_optim_options *o;
    const rm_backend *be;
    const rm_cost_file *costs;
} problem_ctx;

/* The problems of the max-batch searches and bounds: they try many batch
 * sizes, so profiled costs are scaled linearly to each one. */
static int build_problem(rm_problem **out, void *vctx, int batch, rm_err *e)
{
    const problem_ctx *c = vctx;
    return rm_trainer_problem_device(out, NULL, c->m, batch, c->o, c->be, c->costs, RM_COST_SCALE_BATCH, e);
}

/* ---- a seeded split of a dataset ------------------------------------------ */

typedef struct subset {
    rm_dataset *base; /* not owned */
    int64_t *idx;
    char source[300];
} subset;

static int subset_load(void *ctx, float *image, int32_t *labels, int64_t i, rm_err *e)
{
    subset *s = ctx;
    return rm_dataset_load(s->base, image, labels, s->idx[i], e);
}

static const char *subset_class_name(void *ctx, int k)
{
    subset *s = ctx;
    return s->base->ops->class_name ? s->base->ops->class_name(s->base->ctx, k) : NULL;
}

static void subset_destroy(void *ctx)
{
    subset *s = ctx;
    free(s->idx);
    free(s);
}

static const rm_dataset_ops subset_ops = {subset_load, subset_class_name, subset_destroy};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int subset_make(rm_dataset **out, rm_dataset *base, const int64_t *idx, int64_t n, const char *what, rm_err *e)
{
    subset *s = calloc(1, sizeof *s);
    if (s) s->idx = malloc((size_t)(n ? n : 1) * sizeof *s->idx);
    if (!s || !s->idx) {
        if (s) free(s);
        return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", base->info.source);
    }
    memcpy(s->idx, idx, (size_t)n * sizeof *idx);
    /* In index order: a lazily decoded dataset then reads its files in order. */
    qsort(s->idx, (size_t)n, sizeof *s->idx, cmp_i64);
    s->base = base;
    snprintf(s->source, sizeof s->source, "%s (%s)", base->info.source, what);
    rm_dataset_info info = base->info;
    info.count = n;
    info.source = s->source;
    return rm_dataset_wrap(out, &info, &subset_ops, s, e);
}

/* Holds out `held` samples of base, chosen by a seeded permutation. */
static int split_make(rm_dataset **train, rm_dataset **test, rm_dataset *base, int64_t held, uint64_t seed,
                      rm_err *e)
{
    *train = *test = NULL;
    int64_t n = base->info.count;
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    if (!perm) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", base->info.source);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    rm_rng r = rm_rng_make(rm_hash64(seed ^ SALT_SPLIT));
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(rm_rng_next(&r) % (uint64_t)(i + 1));
        int64_t x = perm[i];
        perm[i] = perm[j], perm[j] = x;
    }
    int rc = subset_make(test, base, perm, held, "held-out split", e);
    if (!rc) rc = subset_make(train, base, perm + held, n - held, "training split", e);
    free(perm);
    if (rc) {
        rm_dataset_free(*test);
        *test = NULL;
    }
    return rc;
}

/* ---- the forward-only runner ----------------------------------------------- */

typedef struct fwd_pass {
    const rm_model *m;
    rm_backend *be;
    int batch;          /* capacity */
    int n;              /* nodes: the input, then every layer but the loss */
    int logits;         /* the node the loss layer reads */
    rm_shape *shape;    /* [n] at the capacity batch */
    rm_plan *plan;
    char *arena;        /* the executor's arena, idle between steps */
    void *workspace;    /* the executor's workspace, or own_workspace */
    void *own_workspace;
    size_t workspace_size;
    int32_t *labels;    /* device, rm_model_label_count(m, batch) */
    float *loss;        /* device, 1 */
    float *host_logits; /* the logits, downloaded for the argmax */
    float **ptr;        /* [n] */
} fwd_pass;

static void fwd_free(fwd_pass *f)
{
    if (f->be) {
        void *dev[] = {f->own_workspace, f->labels, f->loss};
        for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
            if (dev[i]) rm_backend_release(f->be, dev[i]);
    }
    rm_plan_free(f->plan);
    free(f->shape);
    free(f->host_logits);
    free(f->ptr);
    memset(f, 0, sizeof *f);
}

/* Plans the forward pass at a batch size; with ex NULL only the plan (to
 * size it). Otherwise it runs in ex's arena and workspace, which hold
 * nothing between steps, so evaluation needs no memory beyond the budget:
 * the plan's span must fit ex's arena (the caller picks the batch so). */
static int fwd_create(fwd_pass *f, const rm_model *m, rm_backend *be, int batch, const rm_executor *ex, rm_err *e)
{
    memset(f, 0, sizeof *f);
    f->m = m, f->batch = batch;
    const int L = m->nlayers, n = L; /* input + L - 1 layers */
    if (L < 1) return rm_errorf(e, RM_ERR_INVALID, "evaluation: the model has no layers");
    f->n = n;
    const rm_model_layer *loss = &m->layers[L - 1];
    f->logits = loss->inputs[0] == RM_MODEL_INPUT ? 0 : rm_trace_forward_node(loss->inputs[0]);
    rm_shape *ins = malloc((size_t)L * RM_MAX_INPUTS * sizeof *ins);
    rm_shape *outs = malloc((size_t)L * sizeof *outs);
    size_t *bytes = malloc((size_t)n * sizeof *bytes);
    int *last = malloc((size_t)n * sizeof *last);
    rm_op *ops = malloc((size_t)2 * (size_t)n * sizeof *ops);
    f->shape = malloc((size_t)n * sizeof *f->shape);
    f->ptr = calloc((size_t)n, sizeof *f->ptr);
    int rc = RM_OK, nops = 0;
    if (!ins || !outs || !bytes || !last || !ops || !f->shape || !f->ptr) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "evaluation: out of memory");
        goto done;
    }
    if ((rc = rm_model_shapes(ins, outs, m, batch, e))) goto done;
    f->shape[0] = m->input;
    f->shape[0].n = batch;
    for (int i = 0; i + 1 < L; i++) f->shape[i + 1] = outs[i];
    for (int v = 0; v < n; v++) {
        bytes[v] = rm_shape_bytes(f->shape[v]);
        last[v] = -1;
    }
    for (int i = 0; i + 1 < L; i++)
        for (int k = 0; k < m->layers[i].nin; k++) {
            int src = m->layers[i].inputs[k];
            last[src == RM_MODEL_INPUT ? 0 : rm_trace_forward_node(src)] = i;
        }
    /* Each value is freed right after its last reader; the logits stay to the end. */
    ops[nops++] = (rm_op){RM_OP_COMPUTE, 0, 0};
    if (last[0] < 0 && f->logits != 0) ops[nops++] = (rm_op){RM_OP_FREE, 0, 0};
    for (int i = 0; i + 1 < L; i++) {
        int v = rm_trace_forward_node(i);
        ops[nops++] = (rm_op){RM_OP_COMPUTE, v, v};
        for (int k = 0; k < m->layers[i].nin; k++) {
            int src = m->layers[i].inputs[k];
            int d = src == RM_MODEL_INPUT ? 0 : rm_trace_forward_node(src);
            if (last[d] == i && d != f->logits) ops[nops++] = (rm_op){RM_OP_FREE, d, v};
        }
        if (last[v] < 0 && v != f->logits) ops[nops++] = (rm_op){RM_OP_FREE, v, v};
    }
    if ((rc = rm_plan_create(&f->plan, bytes, n, ops, nops, e))) goto done;
    if (!ex) goto done;
    f->be = be;
    size_t nlabels = rm_model_label_count(m, batch), arena_bytes, ws_bytes;
    f->arena = rm_executor_arena_memory(ex, &arena_bytes);
    if (f->plan->span > arena_bytes) {
        rc = rm_errorf(e, RM_ERR_BUDGET, "evaluation needs an arena of %zu bytes, the training arena has %zu",
                       f->plan->span, arena_bytes);
        goto done;
    }
    if ((rc = rm_executor_workspace_needed_on(&f->workspace_size, m, batch, be->kind, e))) goto done;
    f->workspace = rm_executor_workspace_memory(ex, &ws_bytes);
    /* A forward pass at a batch no larger than training's needs no more
     * scratch than training's forward and backward; allocate only if a
     * layer ever breaks that. */
    if (f->workspace_size > ws_bytes) {
        if ((rc = rm_backend_alloc(be, &f->own_workspace, f->workspace_size, e))) goto done;
        f->workspace = f->own_workspace;
    }
    if ((rc = rm_backend_alloc(be, (void **)&f->labels, nlabels * sizeof(int32_t), e)) ||
        (rc = rm_backend_alloc(be, (void **)&f->loss, sizeof(float), e)))
        goto done;
    if (!(f->host_logits = malloc(rm_shape_bytes(f->shape[f->logits])))) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "evaluation: out of memory");
        goto done;
    }
done:
    free(ins);
    free(outs);
    free(bytes);
    free(last);
    free(ops);
    if (rc) {
        rm_err_context(e, "evaluation at batch %d", batch);
        fwd_free(f);
    }
    return rc;
}

static int fwd_span(size_t *span, const rm_model *m, int batch, rm_err *e)
{
    fwd_pass f;
    int rc = fwd_create(&f, m, NULL, batch, NULL, e);
    if (!rc) *span = f.plan->span;
    fwd_free(&f);
    return rc;
}

typedef struct fwd_result {
    double loss_sum;   /* loss x label count, summed */
    int64_t correct, total;
} fwd_result;

static rm_shape with_n(rm_shape s, int n)
{
    s.n = n;
    return s;
}

/* The forward pass of `count` samples (count <= capacity): every layer with
 * the batch dimension cut to count (every layer but batchnorm in training
 * mode is per sample; training mode only runs full batches). Adds the argmax
 * hits against labels to r, and the loss when want_loss. */
static int fwd_run(fwd_pass *f, fwd_result *r, rm_executor *ex, const float *images, const int32_t *labels, int count,
                   int training, uint64_t seed, uint64_t step, int want_loss, rm_err *e)
{
    const rm_model *m = f->m;
    const int L = m->nlayers;
    rm_backend *be = f->be;
    int rc;
    for (int o = 0; o < f->plan->nops; o++) {
        const rm_plan_op *op = &f->plan->ops[o];
        int v = op->node;
        if (op->kind == RM_OP_FREE) {
            f->ptr[v] = NULL;
            continue;
        }
        f->ptr[v] = (float *)(f->arena + op->offset);
        rm_shape s = with_n(f->shape[v], count);
        if (v == 0) {
            if ((rc = be->ops->upload(be->ctx, f->ptr[0], images, rm_shape_bytes(s), e))) return rc;
            continue;
        }
        int i = v - 1;
        const rm_model_layer *ly = &m->layers[i];
        rm_layer_call call;
        memset(&call, 0, sizeof call);
        rm_tensor in[RM_MAX_INPUTS], out = rm_tensor_make(s, f->ptr[v]);
        for (int k = 0; k < ly->nin; k++) {
            int d = ly->inputs[k] == RM_MODEL_INPUT ? 0 : rm_trace_forward_node(ly->inputs[k]);
            in[k] = rm_tensor_make(with_n(f->shape[d], count), f->ptr[d]);
            call.in[k] = &in[k];
        }
        call.cfg = &ly->cfg;
        call.params = rm_executor_layer_params(ex, i);
        call.be = be;
        call.nin = ly->nin;
        call.out = &out;
        call.training = training;
        call.update_stats = 0; /* the executor's step folds the statistics in, once */
        call.seed = seed;
        call.step = step;
        call.node_id = v; /* the executor's forward node of layer i: the same dropout mask */
        call.workspace = f->workspace;
        call.workspace_size = f->workspace_size;
        if ((rc = rm_layer_forward(ly->desc, &call, e))) {
            rm_err_context(e, "evaluation: forward of %s", ly->name);
            return rc;
        }
    }
    const rm_model_layer *loss = &m->layers[L - 1];
    rm_shape ls = with_n(f->shape[f->logits], count);
    size_t nlabels = rm_model_label_count(m, count);
    if (want_loss) {
        if ((rc = be->ops->upload(be->ctx, f->labels, labels, nlabels * sizeof(int32_t), e))) return rc;
        rm_layer_call call;
        memset(&call, 0, sizeof call);
        rm_tensor in = rm_tensor_make(ls, f->ptr[f->logits]), out = rm_tensor_make(rm_shape_make(1, 1, 1, 1), f->loss);
        call.cfg = &loss->cfg;
        call.params = rm_executor_layer_params(ex, L - 1);
        call.be = be;
        call.nin = 1;
        call.in[0] = &in;
        call.out = &out;
        call.labels = f->labels;
        call.training = training;
        call.seed = seed, call.step = step, call.node_id = rm_trace_forward_node(L - 1);
        call.workspace = f->workspace;
        call.workspace_size = f->workspace_size;
        if ((rc = rm_layer_forward(loss->desc, &call, e))) {
            rm_err_context(e, "evaluation: the loss");
            return rc;
        }
        float lv;
        if ((rc = be->ops->download(be->ctx, &lv, f->loss, sizeof lv, e))) return rc;
        r->loss_sum += (double)lv * (double)nlabels; /* both losses are means over their labels */
    }
    if ((rc = be->ops->download(be->ctx, f->host_logits, f->ptr[f->logits], rm_shape_bytes(ls), e))) return rc;
    /* logits: count x K x HW; labels: count x HW (HW = 1 for classification). */
    const size_t K = (size_t)ls.c, hw = (size_t)ls.h * (size_t)ls.w;
    for (size_t s = 0; s < (size_t)count; s++)
        for (size_t q = 0; q < hw; q++) {
            const float *x = f->host_logits + s * K * hw + q;
            size_t best = 0;
            for (size_t k = 1; k < K; k++)
                if (x[k * hw] > x[best * hw]) best = k;
            r->correct += (int32_t)best == labels[s * hw + q];
        }
    r->total += (int64_t)nlabels;
    return RM_OK;
}

/* ---- the trainer ------------------------------------------------------------ */

struct rm_trainer {
    rm_trainer_config cfg;
    rm_trainer_summary sum;
    rm_model *m;
    rm_backend *be;
    rm_task task;
    int classes, batch;

    /* Data. base_*: what was opened (owned); train/test: what is used (a base, or a view of one). */
    rm_dataset *base_train, *base_test;
    rm_dataset *train, *test;
    rm_batcher *batcher;
    float *images;   /* host batch */
    int32_t *labels; /* host labels */

    /* The schedule and its plan (independent of the seed). */
    rm_graph g;
    rm_problem *p;
    rm_schedule *s;
    rm_plan *plan;

    /* Seeded state. */
    uint64_t seed;
    rm_executor *ex;
    rm_optim *opt;
    rm_layer_params **lpp;
    fwd_pass eval;   /* evaluation (and training accuracy) forward pass */
    /* CUDA: host twins of the device parameters, statistics and optimizer
     * state, laid out alike, which snapshots are written from and read
     * into (snapshot.c reads and writes host memory). NULL on the CPU. */
    float *host_params, *host_buffers;
    rm_layer_params *host_lp;
    rm_layer_params **host_lpp;
    rm_optim *host_opt;
    int synthetic;

    rm_lr_schedule lr;
    uint64_t lr_total;
    uint64_t step;
    int finished;
};

static void emit(const rm_trainer *t, const rm_trainer_event *ev)
{
    if (t->cfg.event) t->cfg.event(t->cfg.event_ctx, ev);
}

static void note(const rm_trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const rm_trainer *t, const char *fmt, ...)
{
    char line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    rm_trainer_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = RM_TRAINER_NOTE;
    ev.text = line;
    emit(t, &ev);
}

const rm_trainer_summary *rm_trainer_summary_of(const rm_trainer *t) { return &t->sum; }
uint64_t rm_trainer_steps(const rm_trainer *t) { return t->step; }
rm_executor *rm_trainer_executor(rm_trainer *t) { return t->ex; }
rm_optim *rm_trainer_optimizer(rm_trainer *t) { return t->opt; }
const rm_model *rm_trainer_model(const rm_trainer *t) { return t->m; }

static int check_config(const rm_trainer_config *c, rm_err *e)
{
    if (!c->model_path) return rm_errorf(e, RM_ERR_INVALID, "no model given");
    if (!c->data || !*c->data) return rm_errorf(e, RM_ERR_INVALID, "no data given (a folder, or synthetic)");
    if (!c->strategy || !rm_strategy_find(c->strategy))
        return rm_errorf(e, RM_ERR_INVALID, "unknown strategy '%s'", c->strategy ? c->strategy : "");
    if (c->batch < 0) return rm_errorf(e, RM_ERR_INVALID, "batch %d is negative", c->batch);
    if (c->budget_percent < 0 || !isfinite(c->budget_percent))
        return rm_errorf(e, RM_ERR_INVALID, "budget percentage %g is not a positive number", c->budget_percent);
    if (c->budget_percent == 0 && c->budget == 0) return rm_errorf(e, RM_ERR_INVALID, "no budget given");
    if (c->batch == 0 && c->budget_percent > 0)
        return rm_errorf(e, RM_ERR_INVALID,
                         "an automatic batch needs the budget as an amount of memory, not a percentage: the "
                         "no-remat peak it would refer to grows with the batch");
    if (c->epochs < 1) return rm_errorf(e, RM_ERR_INVALID, "at least 1 epoch");
    if (!(c->lr > 0) || !isfinite(c->lr)) return rm_errorf(e, RM_ERR_INVALID, "learning rate %g is not > 0", c->lr);
    if (c->synthetic_samples < 0) return rm_errorf(e, RM_ERR_INVALID, "negative synthetic sample count");
    return rm_optim_options_check(&c->optim, e);
}

/* The data that does not depend on the seed: a folder's splits. */
static int open_dir_data(rm_trainer *t, rm_err *e)
{
    const rm_model *m = t->m;
    rm_image_options img;
    rm_image_options_default(&img, m->input.c, m->input.h, m->input.w);
    int rc = rm_dataset_open_dir(&t->base_train, t->cfg.data, RM_SPLIT_TRAIN, &img, t->classes, e);
    if (rc) return rc;
    /* A test split that is missing (an I/O error: no such files) is made up
     * from the training data; one that is there but broken is an error. */
    rm_err te = {RM_OK, ""};
    if ((rc = rm_dataset_open_dir(&t->base_test, t->cfg.data, RM_SPLIT_TEST, &img, t->classes, &te))) {
        t->base_test = NULL;
        if (rc != RM_ERR_IO) {
            *e = te;
            return rc;
        }
        note(t, "data: no held-out split (%s); holding out 10%% of the training data, chosen by the seed", te.msg);
    } else if (!strcmp(t->base_test->info.source, t->base_train->info.source)) {
        note(t, "data: %s has no separate held-out split; holding out 10%% of it, chosen by the seed", t->cfg.data);
        rm_dataset_free(t->base_test);
        t->base_test = NULL;
    }
    return RM_OK;
}

/* The data must be what the model eats: same input shape, same task, labels in range. */
static int check_data(const rm_trainer *t, const rm_dataset *ds, rm_err *e)
{
    const rm_dataset_info *d = &ds->info;
    const rm_model *m = t->m;
    if (d->c != m->input.c || d->h != m->input.h || d->w != m->input.w)
        return rm_errorf(e, RM_ERR_INVALID, "%s: samples are %dx%dx%d, the model %s takes %dx%dx%d", d->source, d->c,
                         d->h, d->w, m->path, m->input.c, m->input.h, m->input.w);
    if (d->task != t->task)
        return rm_errorf(e, RM_ERR_INVALID, "%s: %s data, but the model %s is trained for %s", d->source,
                         d->task == RM_TASK_SEGMENTATION ? "segmentation" : "classification", m->path,
                         t->task == RM_TASK_SEGMENTATION ? "segmentation (pixel_softmax_xent)"
                                                         : "classification (softmax_xent)");
    if (d->classes > t->classes)
        return rm_errorf(e, RM_ERR_INVALID, "%s: %d classes, but the model %s predicts only %d", d->source, d->classes,
                         m->path, t->classes);
    return RM_OK;
}

/* ---- the schedule ----------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* The cache key: everything a schedule depends on (the problem, the budget,
 * the strategy), and nothing else, so two models with the same training
 * graph share their schedules. */
static uint64_t cache_key(const rm_problem *p, size_t budget, const char *strategy)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv(h, "remat schedule cache 1", 22);
    h = fnv(h, strategy, strlen(strategy));
    uint64_t v[3] = {(uint64_t)p->n, (uint64_t)p->fixed_bytes, (uint64_t)budget};
    h = fnv(h, v, sizeof v);
    for (int i = 0; i < p->n; i++) {
        const rm_problem_node *nd = &p->nodes[i];
        uint64_t w[3] = {(uint64_t)nd->tag, (uint64_t)nd->bytes, (uint64_t)nd->ndeps};
        h = fnv(h, nd->name, strlen(nd->name) + 1);
        h = fnv(h, w, sizeof w);
        h = fnv(h, &nd->cost, sizeof nd->cost);
        h = fnv(h, nd->deps, (size_t)nd->ndeps * sizeof *nd->deps);
    }
    return h;
}

static int make_plan(rm_plan **out, const rm_trainer *t, const rm_schedule *s, rm_err *e)
{
    rm_op *ops = NULL;
    int nops = 0;
    int rc = rm_schedule_ops(&ops, &nops, t->p, s, e);
    if (!rc) rc = rm_plan_from_graph(out, &t->g, ops, nops, e);
    free(ops);
    return rc;
}

static int recomputed_nodes(const rm_schedule *s)
{
    int count = 0;
    for (int i = 0; i < s->n; i++) {
        int times = 0;
        for (int t = i; t < s->n; t++) times += rm_R_at(s, t, i);
        count += times > 1;
    }
    return count;
}

/* A cached schedule is used only if the reader (valid, agreeing with the
 * simulator), the budget and the plan's span all accept it. */
static int cache_load(rm_trainer *t, const char *path, rm_err *e)
{
    rm_schedule *s = NULL;
    rm_plan *pl = NULL;
    rm_sim_result r;
    int rc = rm_schedule_read(&s, t->p, path, e);
    if (!rc) rc = rm_simulate(&r, t->p, s, e);
    if (!rc && !rm_sim_fits(t->p, &r))
        rc = rm_errorf(e, RM_ERR_BUDGET, "%s: peaks at %s, over the budget %s", path,
                       MB(t->p->fixed_bytes + r.peak_bytes).s, MB(t->p->budget).s);
    if (!rc) rc = make_plan(&pl, t, s, e);
    if (!rc && t->p->fixed_bytes + pl->span > t->p->budget)
        rc = rm_errorf(e, RM_ERR_BUDGET, "%s: its plan needs %s, over the budget %s", path,
                       MB(t->p->fixed_bytes + pl->span).s, MB(t->p->budget).s);
    if (rc) {
        rm_schedule_free(s);
        rm_plan_free(pl);
        return rc;
    }
    t->s = s;
    t->plan = pl;
    t->sum.status = "cached";
    return RM_OK;
}

/* rm_schedule_write replaces the file atomically (engine/atomic_file.h), so
 * a concurrent run never reads half a file and a full disk never leaves one.
 * The cache only saves solver time: a failure to store is a note, not a
 * reason to stop a training run whose schedule is already in hand. */
static void cache_store(rm_trainer *t, const char *path)
{
    rm_err e = {RM_OK, ""};
    if (mkdir(t->cfg.cache_dir, 0777) && errno != EEXIST) {
        note(t, "schedule cache: cannot create %s: %s", t->cfg.cache_dir, strerror(errno));
        return;
    }
    if (rm_schedule_write(t->s, t->p, path, &e)) note(t, "schedule cache: not stored: %s", e.msg);
}

/* Where no schedule is found, what would fit: the largest batch this
 * strategy fits in the budget (baselines are cheap enough to search), and
 * the largest batch any schedule could fit. */
static void what_fits(const rm_trainer *t, const rm_strategy_info *st, char *buf, size_t len)
{
    problem_ctx pc = {t->m, &t->cfg.optim, t->be, t->cfg.costs};
    rm_err e = {RM_OK, ""};
    int bound = 0;
    buf[0] = '\0';
    if (rm_maxbatch_bound(&bound, build_problem, &pc, t->sum.budget, t->batch, &e)) return;
    if (bound == 0) {
        snprintf(buf, len, "; not even batch 1 fits this budget");
        return;
    }
    size_t l = 0;
    if (!st->solve_opt && t->batch > 1) {
        rm_maxbatch_options o;
        memset(&o, 0, sizeof o);
        o.budget = t->sum.budget;
        o.max_batch = t->batch - 1;
        o.bound_batch = bound < t->batch ? bound : t->batch - 1;
        rm_maxbatch_result r;
        if (!rm_maxbatch_search(&r, st, build_problem, &pc, &o, &e) && r.max_batch > 0)
            l = (size_t)snprintf(buf, len, "; in this budget %s fits batch %d (--batch %d)", st->name, r.max_batch,
                                 r.max_batch);
    }
    if (l >= len) return;
    if (bound < t->batch)
        snprintf(buf + l, len - l, "; no schedule at all fits a batch above %d", bound);
    else if (!st->solve_opt)
        snprintf(buf + l, len - l, "; batch %d is above the lower bound, so lp_round or milp may fit it", t->batch);
}

static int solve(rm_trainer *t, rm_err *e)
{
    const rm_strategy_info *st = rm_strategy_find(t->cfg.strategy);
    rm_problem *p = t->p;
    const size_t budget = p->budget, fixed = p->fixed_bytes, act = budget - fixed;
    t->sum.strategy = st->name;
    t->sum.cache = -1;
    char path[512] = "";
    if (t->cfg.cache_dir) {
        snprintf(path, sizeof path, "%s/%s-%016llx.schedule", t->cfg.cache_dir, st->name,
                 (unsigned long long)cache_key(p, budget, st->name));
        snprintf(t->sum.cache_file, sizeof t->sum.cache_file, "%s", path);
        FILE *f = fopen(path, "r");
        if (f) {
            fclose(f);
            rm_err ce = {RM_OK, ""};
            if (!cache_load(t, path, &ce)) {
                t->sum.cache = 1;
                return RM_OK;
            }
            note(t, "schedule cache: ignoring %s (%s); solving again", path, ce.msg);
        }
        t->sum.cache = 0;
    }
    /* Solved for the budget; when the placement's fragmentation pushes the
     * arena over, solved again for that much less. Checkpoint-all's schedule
     * does not depend on the budget, so re-solving it cannot help. */
    size_t target = budget, span = 0;
    int fixed_schedule = !strcmp(st->name, "checkpoint_all");
    rm_strategy_stats stats;
    for (int attempt = 0; attempt < SOLVE_ATTEMPTS; attempt++) {
        p->budget = target;
        char line[300];
        snprintf(line, sizeof line, "solving the %s schedule for batch %d in %s (%s for activations)%s", st->name,
                 t->batch, MB(target).s, MB(target - fixed).s, attempt ? ", again" : "");
        rm_trainer_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = RM_TRAINER_SOLVING;
        ev.text = line;
        ev.batch = t->batch;
        emit(t, &ev);
        rm_schedule *s = NULL;
        int rc = rm_strategy_run(&s, &stats, st, p, &t->cfg.solver, e);
        p->budget = budget;
        if (rc == RM_ERR_INFEASIBLE) {
            char fits[300];
            what_fits(t, st, fits, sizeof fits);
            return rm_errorf(e, RM_ERR_INFEASIBLE,
                             "%s finds no schedule for batch %d within %s (%s%s): training without "
                             "rematerialization needs %s, and no schedule needs less than %s%s",
                             st->name, t->batch, MB(target).s, stats.status,
                             !strcmp(stats.status, "no solution") ? ": the time limit came first" : "",
                             MB(t->sum.noremat_peak).s, MB(t->sum.lower_bound).s, fits);
        }
        if (rc) return rc;
        rm_plan *pl = NULL;
        if ((rc = make_plan(&pl, t, s, e))) {
            rm_schedule_free(s);
            return rc;
        }
        span = pl->span;
        if (span <= act) {
            t->s = s;
            t->plan = pl;
            break;
        }
        size_t over = span - act;
        rm_schedule_free(s);
        rm_plan_free(pl);
        if (fixed_schedule || target - over < t->sum.lower_bound) break;
        note(t, "the %s plan needs %s for activations (live peak %s plus fragmentation), over the %s there is; "
                "solving for %s less",
             st->name, MB(span).s, MB(stats.sim.peak_bytes).s, MB(act).s, MB(over).s);
        target -= over;
        t->sum.resolves++;
    }
    if (!t->s)
        return rm_errorf(e, RM_ERR_BUDGET,
                         "the %s schedule for batch %d peaks within %s, but its arena needs %s for activations where "
                         "%s is left after the fixed %s (placement fragmentation); a slightly larger budget or "
                         "another strategy fits",
                         st->name, t->batch, MB(budget).s, MB(span).s, MB(act).s, MB(fixed).s);
    t->sum.status = stats.status;
    t->sum.solve_s = stats.seconds;
    t->sum.has_bound = stats.has_bound;
    t->sum.gap = stats.gap;
    if (path[0]) cache_store(t, path);
    return RM_OK;
}

/* The memory side of create: problem, budget, the checks that say what fits, the schedule. */
static int plan_memory(rm_trainer *t, rm_err *e)
{
    const rm_trainer_config *c = &t->cfg;
    int rc = rm_model_trace(&t->g, t->m, t->batch, e);
    /* Profiled costs must be of this batch, unless --batch auto chose it:
     * then they are scaled like the search's probes were. */
    rm_cost_batch mode = t->sum.batch_auto ? RM_COST_SCALE_BATCH : RM_COST_SAME_BATCH;
    if (!rc) rc = rm_trainer_problem_device(&t->p, &t->sum, t->m, t->batch, &c->optim, t->be, c->costs, mode, e);
    if (rc) return rc;
    if (c->costs && t->batch != c->costs->batch)
        note(t, "costs: profiled at batch %d, scaled linearly to batch %d (assumes time grows with the batch)",
             c->costs->batch, t->batch);
    rm_problem *p = t->p;
    rm_schedule *all = NULL;
    rm_sim_result r;
    if ((rc = rm_strategy_checkpoint_all(&all, p, e)) || (rc = rm_simulate(&r, p, all, e))) {
        rm_schedule_free(all);
        return rc;
    }
    rm_schedule_free(all);
    const size_t fixed = p->fixed_bytes, lb = rm_problem_peak_lower_bound(p);
    t->sum.noremat_peak = fixed + r.peak_bytes;
    t->sum.lower_bound = fixed + lb;
    for (int i = 0; i < p->n; i++) t->sum.base_cost += p->nodes[i].cost;
    if (c->budget_percent > 0) {
        double v = floor((double)t->sum.noremat_peak * c->budget_percent / 100.0);
        t->sum.budget = v < 1 ? 1 : v >= 1.8e19 ? SIZE_MAX : (size_t)v;
    } else {
        t->sum.budget = c->budget;
    }
    p->budget = t->sum.budget;
    const rm_trainer_summary *s = &t->sum;
    if (p->budget <= fixed)
        return rm_errorf(e, RM_ERR_BUDGET,
                         "the budget %s does not hold the fixed memory of training at batch %d, %s (weights %s, "
                         "gradients %s, optimizer state %s, batchnorm statistics %s, labels %s, workspace %s); at "
                         "this batch any schedule needs at least %s, training without rematerialization %s",
                         MB(p->budget).s, t->batch, MB(fixed).s, MB(s->fixed_weights).s, MB(s->fixed_grads).s,
                         MB(s->fixed_optim).s, MB(s->fixed_buffers).s, MB(s->fixed_labels).s,
                         MB(s->fixed_workspace).s, MB(s->lower_bound).s, MB(s->noremat_peak).s);
    if (p->budget < s->lower_bound) {
        int lbn = 0;
        size_t best = 0;
        for (int n = 0; n < p->n; n++) {
            size_t sz = p->nodes[n].bytes;
            for (int q = 0; q < p->nodes[n].ndeps; q++) sz += p->nodes[p->nodes[n].deps[q]].bytes;
            if (sz > best) best = sz, lbn = n;
        }
        problem_ctx pc = {t->m, &c->optim, t->be, c->costs};
        int bound = 0;
        rm_err be = {RM_OK, ""};
        char more[120] = "";
        if (!rm_maxbatch_bound(&bound, build_problem, &pc, p->budget, t->batch, &be)) {
            if (bound) snprintf(more, sizeof more, "; batch %d is the largest any schedule could fit in it", bound);
            else snprintf(more, sizeof more, "; not even batch 1 fits in it");
        }
        return rm_errorf(e, RM_ERR_INFEASIBLE,
                         "no schedule exists: the budget %s is below the least any schedule needs at batch %d, %s = "
                         "fixed %s + %s to compute '%s' with its inputs resident (no-remat peak %s)%s",
                         MB(p->budget).s, t->batch, MB(s->lower_bound).s, MB(fixed).s, MB(lb).s, p->nodes[lbn].name,
                         MB(s->noremat_peak).s, more);
    }
    if ((rc = solve(t, e))) return rc;
    rm_sim_result sr;
    if ((rc = rm_simulate(&sr, p, t->s, e))) return rc;
    t->sum.sched_peak = fixed + sr.peak_bytes;
    t->sum.cost = sr.cost;
    t->sum.recomputations = sr.recomputations;
    t->sum.recomputed_nodes = recomputed_nodes(t->s);
    t->sum.plan_span = t->plan->span;
    return RM_OK;
}

/* ---- the seeded part: data order, parameters, optimizer --------------------- */

/* ---- host twins of device state, for snapshots ---------------------------- */

static void mirror_free(rm_trainer *t)
{
    rm_optim_free(t->host_opt);
    free(t->host_params);
    free(t->host_buffers);
    free(t->host_lp);
    free(t->host_lpp);
    t->host_opt = NULL, t->host_params = t->host_buffers = NULL, t->host_lp = NULL, t->host_lpp = NULL;
}

/* A device pointer inside [dev, dev + n) mapped to the same element of host. */
static float *remap(float *p, float *dev, float *host)
{
    return p ? host + (p - dev) : NULL;
}

/* Host copies of the executor's layer parameters (same layout) and a host
 * optimizer over them, with the device optimizer's kind and slots. Its
 * gradients point at the host parameters: it never steps, it only holds
 * state for rm_snapshot_save/load. */
static int mirror_build(rm_trainer *t, rm_err *e)
{
    const rm_model *m = t->m;
    size_t np = 0, nb = 0;
    float *dp = rm_executor_params(t->ex, &np), *dg = rm_executor_grads(t->ex, NULL);
    float *db = rm_executor_buffers(t->ex, &nb);
    t->host_params = calloc(np ? np : 1, sizeof(float));
    t->host_buffers = calloc(nb ? nb : 1, sizeof(float));
    t->host_lp = calloc((size_t)m->nlayers, sizeof *t->host_lp);
    t->host_lpp = calloc((size_t)m->nlayers, sizeof *t->host_lpp);
    rm_optim_tensor *ts = calloc(2 * (size_t)m->nlayers + 1, sizeof *ts);
    if (!t->host_params || !t->host_buffers || !t->host_lp || !t->host_lpp || !ts) {
        free(ts);
        return rm_errorf(e, RM_ERR_NOMEM, "out of host memory for the snapshot copies of the parameters");
    }
    for (int i = 0; i < m->nlayers; i++) {
        rm_layer_params *d = t->lpp[i], *h = &t->host_lp[i];
        *h = *d;
        h->w.data = remap(d->w.data, dp, t->host_params);
        h->b.data = remap(d->b.data, dp, t->host_params);
        h->dw.data = remap(d->dw.data, dg, t->host_params);
        h->db.data = remap(d->db.data, dg, t->host_params);
        h->running_mean.data = remap(d->running_mean.data, db, t->host_buffers);
        h->running_var.data = remap(d->running_var.data, db, t->host_buffers);
        t->host_lpp[i] = h;
    }
    int nts = 0;
    int rc = rm_optim_tensors_from_model(ts, &nts, m, t->host_lpp, e);
    if (!rc) rc = rm_optim_create(&t->host_opt, ts, nts, &t->cfg.optim, e);
    free(ts);
    return rc;
}

/* Device -> host twins (before a save). */
static int mirror_pull(rm_trainer *t, rm_err *e)
{
    int rc = rm_executor_download_params(t->ex, t->host_params, e);
    if (!rc) rc = rm_executor_download_buffers(t->ex, t->host_buffers, e);
    if (!rc) rc = rm_optim_state_copy(t->host_opt, t->opt, e);
    return rc;
}

/* Host twins -> device (after a load). */
static int mirror_push(rm_trainer *t, rm_err *e)
{
    int rc = rm_executor_upload_params(t->ex, t->host_params, e);
    if (!rc) rc = rm_executor_upload_buffers(t->ex, t->host_buffers, e);
    if (!rc) rc = rm_optim_state_copy(t->opt, t->host_opt, e);
    return rc;
}

/* A snapshot into the parameters and optimizer, wherever they live. */
static int load_checkpoint(rm_trainer *t, rm_snapshot_counters *k, const char *path, rm_err *e)
{
    if (!t->host_opt) return rm_snapshot_load(k, path, t->m, t->lpp, t->opt, e);
    int rc = rm_snapshot_load(k, path, t->m, t->host_lpp, t->host_opt, e);
    if (!rc) rc = mirror_push(t, e);
    return rc;
}

static void seeded_free(rm_trainer *t)
{
    mirror_free(t);
    fwd_free(&t->eval);
    rm_optim_free(t->opt);
    rm_executor_free(t->ex);
    rm_batcher_free(t->batcher);
    t->opt = NULL, t->ex = NULL, t->batcher = NULL;
    if (t->test != t->base_test) rm_dataset_free(t->test);
    if (t->train != t->base_train) rm_dataset_free(t->train);
    t->train = t->test = NULL;
    if (t->synthetic) {
        rm_dataset_free(t->base_train);
        t->base_train = NULL;
    }
    free(t->lpp);
    t->lpp = NULL;
}

static int seeded_build(rm_trainer *t, uint64_t seed, rm_err *e)
{
    const rm_trainer_config *c = &t->cfg;
    const rm_model *m = t->m;
    t->seed = seed;
    t->sum.seed = seed;
    int rc;
    if (t->synthetic) {
        int64_t n = c->synthetic_samples ? c->synthetic_samples : (8LL * t->batch > 2048 ? 8LL * t->batch : 2048);
        rm_synthetic_options so;
        rm_synthetic_options_default(&so, t->task, n + n / 4, m->input.c, m->input.h, m->input.w, t->classes);
        so.seed = seed; /* the generator hashes it into its own streams */
        if ((rc = rm_dataset_synthetic_create(&t->base_train, &so, e))) return rc;
        if ((rc = split_make(&t->train, &t->test, t->base_train, n / 4, seed, e))) return rc;
        t->sum.held_out_split = 1;
    } else if (t->base_test) {
        t->train = t->base_train, t->test = t->base_test;
    } else {
        int64_t n = t->base_train->info.count, held = n >= 10 ? n / 10 : n >= 2 ? 1 : 0;
        if ((rc = split_make(&t->train, &t->test, t->base_train, held, seed, e))) return rc;
        t->sum.held_out_split = 1;
    }
    if ((rc = check_data(t, t->train, e)) || (rc = check_data(t, t->test, e))) return rc;
    snprintf(t->sum.train_data, sizeof t->sum.train_data, "%s", t->base_train->info.source);
    snprintf(t->sum.test_data, sizeof t->sum.test_data, "%s", t->sum.held_out_split ? "" : t->base_test->info.source);
    t->sum.train_samples = t->train->info.count;
    t->sum.test_samples = t->test->info.count;
    if (t->train->info.count < t->batch)
        return rm_errorf(e, RM_ERR_INVALID, "%s has %lld training samples, fewer than one batch of %d",
                         t->train->info.source, (long long)t->train->info.count, t->batch);

    rm_batcher_options bo;
    rm_batcher_options_default(&bo, t->batch);
    bo.seed = rm_hash64(seed ^ SALT_ORDER);
    if ((rc = rm_batcher_create(&t->batcher, t->train, &bo, e))) return rc;
    t->sum.epoch_steps = rm_batcher_batches(t->batcher);
    uint64_t all = c->epochs * (uint64_t)t->sum.epoch_steps;
    t->lr_total = all;
    t->sum.total_steps = c->max_steps && c->max_steps < all ? c->max_steps : all;

    rm_executor_options xo = {seed, 0, 0};
    if ((rc = rm_executor_create(&t->ex, m, &t->g, t->be, t->plan, &xo, e))) return rc;
    t->lpp = calloc((size_t)m->nlayers, sizeof *t->lpp);
    rm_optim_tensor *ts = calloc(2 * (size_t)m->nlayers + 1, sizeof *ts);
    if (!t->lpp || !ts) {
        free(ts);
        return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < m->nlayers; i++) t->lpp[i] = rm_executor_layer_params(t->ex, i);
    int nts = 0;
    rc = rm_optim_tensors_from_model(ts, &nts, m, t->lpp, e);
    if (!rc) rc = rm_optim_create_on(&t->opt, ts, nts, &c->optim, t->be, e);
    free(ts);
    if (rc) return rc;
    if (!t->be->host_memory && (rc = mirror_build(t, e))) return rc;

    /* Evaluation runs in the training arena (idle then), so its batch is
     * the largest whose forward pass fits there; training accuracy needs the
     * whole training batch. */
    size_t act = 0, span = 0;
    (void)rm_executor_arena_memory(t->ex, &act);
    int eb = t->batch;
    if ((rc = fwd_span(&span, m, eb, e))) return rc;
    t->sum.train_accuracy = span <= act ? c->train_accuracy_every : 0;
    if (c->train_accuracy_every && !t->sum.train_accuracy)
        note(t, "training accuracy is not measured: replaying the forward pass needs %s, more than the %s of the "
                "training arena", MB(span).s, MB(act).s);
    while (span > act && eb > 1) {
        eb = eb / 2;
        if ((rc = fwd_span(&span, m, eb, e))) return rc;
    }
    if (span > act) return rm_errorf(e, RM_ERR_BUDGET, "evaluation: not even one sample's forward pass fits "
                                                       "the training arena of %zu bytes", act);
    if ((rc = fwd_create(&t->eval, m, t->be, eb, t->ex, e))) return rc;
    t->sum.eval_batch = eb;
    t->sum.eval_span = t->eval.plan->span;
    return RM_OK;
}

/* Resuming: the counters must agree with this data and batch size. */
static int resume(rm_trainer *t, rm_err *e)
{
    const rm_trainer_config *c = &t->cfg;
    rm_snapshot_counters k;
    int rc = load_checkpoint(t, &k, c->resume_path, e);
    if (rc) return rc;
    if (k.seed != t->seed) {
        if (c->seed_given)
            return rm_errorf(e, RM_ERR_INVALID,
                             "%s was saved by a run with seed %llu, not %llu: its batch order and dropout masks "
                             "would differ (leave out --seed to continue it)",
                             c->resume_path, (unsigned long long)k.seed, (unsigned long long)t->seed);
        seeded_free(t);
        if ((rc = seeded_build(t, k.seed, e))) return rc;
        if ((rc = load_checkpoint(t, &k, c->resume_path, e))) return rc;
    }
    uint64_t per = (uint64_t)t->sum.epoch_steps;
    if (k.epoch != k.step / per)
        return rm_errorf(e, RM_ERR_INVALID,
                         "%s was saved at step %llu after %llu epochs, but with this data and batch size an epoch "
                         "is %llu steps: it was written with another batch size or dataset",
                         c->resume_path, (unsigned long long)k.step, (unsigned long long)k.epoch,
                         (unsigned long long)per);
    if (rm_optim_steps(t->opt) != k.step && rm_optim_options_of(t->opt)->kind != RM_OPTIM_NONE)
        return rm_errorf(e, RM_ERR_INVALID, "%s: the optimizer has taken %llu steps, the run %llu", c->resume_path,
                         (unsigned long long)rm_optim_steps(t->opt), (unsigned long long)k.step);
    t->step = k.step;
    t->sum.start_step = k.step;
    return RM_OK;
}

static void probe(void *ctx, const char *strategy, int batch, int feasible, double seconds)
{
    (void)strategy, (void)seconds;
    if (feasible < 0) return;
    rm_trainer_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = RM_TRAINER_PROBE;
    ev.batch = batch;
    ev.fits = feasible;
    emit(ctx, &ev);
}

static int auto_batch(rm_trainer *t, rm_err *e)
{
    const rm_trainer_config *c = &t->cfg;
    const rm_strategy_info *st = rm_strategy_find(c->strategy);
    problem_ctx pc = {t->m, &c->optim, t->be, c->costs};
    rm_maxbatch_options o;
    memset(&o, 0, sizeof o);
    o.budget = c->budget;
    o.max_batch = 1 << 16;
    o.solver = c->solver;
    o.progress = probe;
    o.progress_ctx = t;
    int rc = rm_maxbatch_bound(&o.bound_batch, build_problem, &pc, o.budget, o.max_batch, e);
    if (rc) return rc;
    if (o.bound_batch == 0) {
        rm_problem *p = NULL;
        rc = build_problem(&p, &pc, 1, e);
        if (rc) return rc;
        size_t fixed = p->fixed_bytes, lb = rm_problem_peak_lower_bound(p);
        rm_problem_free(p);
        return rm_errorf(e, RM_ERR_INFEASIBLE,
                         "not even batch 1 fits the budget %s: training %s at batch 1 needs at least %s (fixed %s + "
                         "the largest node with its inputs)",
                         MB(c->budget).s, t->m->path, MB(fixed + lb).s, MB(fixed).s);
    }
    note(t, "--batch auto: searching the largest batch %s fits in %s (no schedule fits more than %d)", st->name,
         MB(c->budget).s, o.bound_batch);
    rm_maxbatch_result r;
    if ((rc = rm_maxbatch_search(&r, st, build_problem, &pc, &o, e))) return rc;
    if (r.max_batch == 0)
        return rm_errorf(e, RM_ERR_INFEASIBLE, "%s fits no batch in the budget %s, not even 1%s", st->name,
                         MB(c->budget).s,
                         st->solve_opt ? "" : " (lp_round or milp may: they recompute more cleverly)");
    t->batch = r.max_batch;
    t->sum.batch_auto = 1;
    t->sum.bound_batch = r.bound_batch;
    note(t, "--batch auto: batch %d (%d solves, %.2f s)%s", r.max_batch, r.probes, r.search_s,
         r.capped ? ", the search's cap" : "");
    return RM_OK;
}

int rm_trainer_create(rm_trainer **out, const rm_trainer_config *c, rm_err *e)
{
    *out = NULL;
    int rc = check_config(c, e);
    if (rc) return rc;
    rm_trainer *t = calloc(1, sizeof *t);
    if (!t) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    t->cfg = *c;
    t->synthetic = !strcmp(c->data, "synthetic");
    t->batch = c->batch;
    t->sum.cache = -1;
    if ((rc = rm_model_load(&t->m, c->model_path, e))) goto fail;
    rm_trainer_model_task(&t->classes, &t->task, t->m);
    t->sum.layers = t->m->nlayers;
    t->sum.classes = t->classes;
    t->sum.task = t->task;
    t->sum.params = t->m->param_count;
    if (c->device == RM_BACKEND_CUDA) {
        if ((rc = rm_backend_cuda_create(&t->be, 0, e))) {
            rm_err_context(e, "cannot train on the GPU");
            goto fail;
        }
    } else if (c->device != RM_BACKEND_CPU) {
        rc = rm_errorf(e, RM_ERR_INVALID, "unknown device %d (cpu or cuda)", (int)c->device);
        goto fail;
    } else if ((rc = rm_backend_cpu_create(&t->be, e))) {
        goto fail;
    }
    t->sum.device = t->be->name;
    /* A missing data folder fails before any solve. */
    if (!t->synthetic && (rc = open_dir_data(t, e))) goto fail;
    if (t->batch == 0 && (rc = auto_batch(t, e))) goto fail;
    t->sum.batch = t->batch;
    if ((rc = plan_memory(t, e))) goto fail;
    {
        /* The budget is device memory: refused before allocating if the GPU has less free (the CPU: no bound). */
        size_t free_b = 0, total_b = 0;
        if ((rc = t->be->ops->mem_info(t->be->ctx, &free_b, &total_b, e))) goto fail;
        if (t->sum.budget > free_b) {
            rc = rm_errorf(e, RM_ERR_BUDGET, "the budget %s is more than the GPU has free, %s (of %s)",
                           MB(t->sum.budget).s, MB(free_b).s, MB(total_b).s);
            goto fail;
        }
    }
    t->lr = rm_lr_schedule_make(c->lr_kind, c->lr);
    if ((rc = seeded_build(t, c->seed, e))) goto fail;
    if (c->lr_kind == RM_LR_STEP) {
        t->lr.step_size = t->lr_total / 3 ? t->lr_total / 3 : 1;
        t->lr.gamma = 0.1;
    }
    if ((rc = rm_lr_schedule_check(&t->lr, e))) goto fail;
    if (c->resume_path && (rc = resume(t, e))) goto fail;
    *out = t;
    return RM_OK;
fail:
    rm_trainer_free(t);
    return rc;
}

void rm_trainer_free(rm_trainer *t)
{
    if (!t) return;
    seeded_free(t);
    rm_dataset_free(t->base_test);
    if (!t->synthetic) rm_dataset_free(t->base_train);
    free(t->images);
    free(t->labels);
    rm_plan_free(t->plan);
    rm_schedule_free(t->s);
    rm_problem_free(t->p);
    rm_graph_free(&t->g);
    rm_backend_free(t->be);
    rm_model_free(t->m);
    free(t);
}

/* ---- running ------------------------------------------------------------------ */

static int ensure_buffers(rm_trainer *t, rm_err *e)
{
    if (t->images) return RM_OK;
    size_t per = rm_dataset_image_numel(t->train), lab = rm_dataset_label_count(t->train);
    t->images = malloc((size_t)t->batch * per * sizeof(float));
    t->labels = malloc((size_t)t->batch * lab * sizeof(int32_t));
    if (!t->images || !t->labels) return rm_errorf(e, RM_ERR_NOMEM, "no memory for a batch of %d", t->batch);
    return RM_OK;
}

int rm_trainer_evaluate(rm_trainer *t, rm_trainer_eval *out, rm_err *e)
{
    memset(out, 0, sizeof *out);
    if (t->test->info.count == 0) return RM_OK;
    int rc = ensure_buffers(t, e);
    if (rc) return rc;
    double t0 = now_s();
    rm_batcher *b = NULL;
    rm_batcher_options bo;
    rm_batcher_options_default(&bo, t->eval.batch);
    bo.shuffle = 0;
    bo.last = RM_LAST_PARTIAL;
    if ((rc = rm_batcher_create(&b, t->test, &bo, e))) return rc;
    fwd_result r = {0, 0, 0};
    int count = 0;
    int64_t samples = 0;
    while (!(rc = rm_batcher_next(b, t->images, t->labels, &count, e)) && count > 0) {
        if ((rc = fwd_run(&t->eval, &r, t->ex, t->images, t->labels, count, 0, t->seed, t->step, 1, e))) break;
        samples += count;
    }
    rm_batcher_free(b);
    if (rc) return rc;
    out->samples = samples;
    out->loss = r.total ? r.loss_sum / (double)r.total : 0;
    out->accuracy = r.total ? (double)r.correct / (double)r.total : 0;
    out->seconds = now_s() - t0;
    return RM_OK;
}

int rm_trainer_save(rm_trainer *t, const char *path, rm_err *e)
{
    rm_snapshot_counters k = {t->step, t->step / (uint64_t)t->sum.epoch_steps, t->seed, 0};
    if (!t->host_opt) return rm_snapshot_save(path, t->m, t->lpp, t->opt, &k, e);
    int rc = mirror_pull(t, e); /* CUDA: the file is written from host copies */
    return rc ? rc : rm_snapshot_save(path, t->m, t->host_lpp, t->host_opt, &k, e);
}

int rm_trainer_run(rm_trainer *t, rm_err *e)
{
    if (t->finished) return RM_OK;
    int rc = ensure_buffers(t, e);
    if (rc) return rc;
    const uint64_t per = (uint64_t)t->sum.epoch_steps, stop = t->sum.total_steps;
    double loss_sum = 0, train_s = 0;
    fwd_result acc = {0, 0, 0};
    uint64_t in_epoch = 0, done = 0; /* steps counted in the running means; steps of this call */
    int64_t epoch_set = -1;
    rm_trainer_event ev;
    while (t->step < stop) {
        const uint64_t epoch = t->step / per, pos = t->step % per;
        if ((int64_t)epoch != epoch_set) {
            rm_batcher_set_epoch(t->batcher, epoch);
            epoch_set = (int64_t)epoch;
            loss_sum = 0, in_epoch = 0;
            acc = (fwd_result){0, 0, 0};
        }
        double t0 = now_s();
        int count = 0;
        float loss = 0;
        if ((rc = rm_batcher_get(t->batcher, t->images, t->labels, &count, (int64_t)pos, e))) return rc;
        if ((rc = rm_executor_step(t->ex, &loss, t->images, t->labels, t->step, e))) return rc;
        if (!isfinite(loss))
            return rm_errorf(e, RM_ERR_INVALID,
                             "the loss is %g at step %llu (epoch %llu): training diverged; try a smaller learning rate",
                             (double)loss, (unsigned long long)t->step, (unsigned long long)epoch + 1);
        if (t->sum.train_accuracy && t->step % (uint64_t)t->sum.train_accuracy == 0 &&
            (rc = fwd_run(&t->eval, &acc, t->ex, t->images, t->labels, count, 1,
                          t->seed, t->step, 0, e)))
            return rc;
        double lr = rm_lr_at(&t->lr, t->step, t->lr_total);
        if ((rc = rm_optim_step(t->opt, (float)lr, e))) return rc;
        t->step++, done++, in_epoch++;
        loss_sum += loss;
        train_s += now_s() - t0;

        memset(&ev, 0, sizeof ev);
        ev.kind = RM_TRAINER_STEP;
        ev.step = t->step;
        ev.total_steps = stop;
        ev.epoch = epoch;
        ev.epochs = t->cfg.epochs;
        ev.epoch_step = (int64_t)(pos + 1);
        ev.epoch_steps = (int64_t)per;
        ev.loss = loss;
        ev.running_loss = loss_sum / (double)in_epoch;
        ev.running_acc = acc.total ? (double)acc.correct / (double)acc.total : -1;
        ev.images_per_s = train_s > 0 ? (double)done * t->batch / train_s : 0;
        ev.eta_s = (double)(stop - t->step) * train_s / (double)done;
        ev.elapsed_s = train_s;
        emit(t, &ev);

        int epoch_end = t->step % per == 0, last = t->step == stop;
        int periodic = t->cfg.eval_every && t->step % t->cfg.eval_every == 0;
        if ((epoch_end || last || periodic) && t->test->info.count > 0) {
            rm_trainer_event ee = ev;
            if ((rc = rm_trainer_evaluate(t, &ee.eval, e))) return rc;
            ee.kind = epoch_end ? RM_TRAINER_EPOCH : RM_TRAINER_EVAL;
            emit(t, &ee);
        }
        if ((epoch_end || last) && t->cfg.snapshot_path) {
            if ((rc = rm_trainer_save(t, t->cfg.snapshot_path, e))) return rc;
            rm_trainer_event ce = ev;
            ce.kind = RM_TRAINER_SNAPSHOT;
            ce.text = t->cfg.snapshot_path;
            emit(t, &ce);
        }
    }
    t->finished = 1;
    return RM_OK;
}
