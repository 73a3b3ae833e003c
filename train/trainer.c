/* The training loop as a library (see trainer.h for the memory accounting
 * and why runs are reproducible).
 *
 * Everything runs through one executor: a training step follows the plan of
 * the solved schedule; evaluation follows the plan of the forward-only graph
 * (rm_model_trace_forward, scheduled and planned the same way) in inference
 * mode, in the same arena and workspace, which are idle between steps, so it
 * needs no memory beyond the budget. Accuracy, in training and evaluation,
 * comes from the logits the executor fetches when it first computes them. */
#include "clock.h"
#include "trainer_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "atomic_file.h"
#include "builder.h"
#include "checksum.h"
#include "rng.h"
#include "snapshot.h"
#include "trace.h"

/* Salts that keep the uses of the run's seed apart (rng.h hashes them in). */
#define SALT_SPLIT 0x73706c74ULL /* the held-out split */
#define SALT_ORDER 0x6f726472ULL /* the batch order */

rm_mbuf rm_trainer_mb(size_t bytes)
{
    const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double b = (double)bytes;
    int u = 0;
    while (b >= 1024.0 && u < 4) b /= 1024.0, u++;
    rm_mbuf m;
    snprintf(m.s, sizeof m.s, u ? "%.2f %s" : "%.0f %s", b, units[u]);
    return m;
}

void rm_trainer_emit(const rm_trainer *t, const rm_trainer_event *ev)
{
    if (t->cfg.event) t->cfg.event(t->cfg.event_ctx, ev);
}

void rm_trainer_note(const rm_trainer *t, const char *fmt, ...)
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
    rm_trainer_emit(t, &ev);
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

const rm_trainer_summary *rm_trainer_summary_of(const rm_trainer *t)
{
    return &t->sum;
}
uint64_t rm_trainer_steps(const rm_trainer *t)
{
    return t->step;
}
rm_executor *rm_trainer_executor(rm_trainer *t)
{
    return t->ex;
}
void rm_trainer_memory_used(const rm_trainer *t, size_t *fixed, size_t *arena)
{
    /* Each part as the footprint counts it (footprint.c): device
     * allocations are aligned as the arena aligns. */
    *fixed = rm_executor_fixed_bytes(t->ex) + rm_align_up(t->opt ? rm_optim_state_bytes(t->opt) : 0) +
             rm_align_up(rm_backend_fixed_bytes(t->be)) + rm_grad_reduce_device_bytes(t->gr);
    *arena = rm_executor_arena_high_water(t->ex);
}
rm_optim *rm_trainer_optimizer(rm_trainer *t)
{
    return t->opt;
}
const rm_model *rm_trainer_model(const rm_trainer *t)
{
    return t->m;
}

static int check_config(const rm_trainer_config *c, rm_err *e)
{
    if (!c->model_path) return rm_errorf(e, RM_ERR_INVALID, "no model given");
    if (!c->data || !*c->data) return rm_errorf(e, RM_ERR_INVALID, "no data given (a folder, or synthetic)");
    if (!c->strategy || !rm_strategy_find(c->strategy))
        return rm_errorf(e, RM_ERR_INVALID, "unknown strategy '%s'", c->strategy ? c->strategy : "");
    if (c->batch < 0) return rm_errorf(e, RM_ERR_INVALID, "batch %d is negative", c->batch);
    if (c->accum < 0) return rm_errorf(e, RM_ERR_INVALID, "%d micro-batches per step", c->accum);
    int parts = (c->accum > 1 ? c->accum : 1) * (c->comm ? c->comm->size : 1);
    if (c->batch % parts)
        return rm_errorf(e, RM_ERR_INVALID,
                         "the batch %d does not split evenly into %d rank%s x %d micro-batch%s: give a multiple of %d",
                         c->batch, c->comm ? c->comm->size : 1, c->comm && c->comm->size > 1 ? "s" : "",
                         c->accum > 1 ? c->accum : 1, c->accum > 1 ? "es" : "", parts);
    if (c->budget_percent < 0 || !isfinite(c->budget_percent))
        return rm_errorf(e, RM_ERR_INVALID, "budget percentage %g is not a positive number", c->budget_percent);
    if (c->budget_percent == 0 && c->budget == 0) return rm_errorf(e, RM_ERR_INVALID, "no budget given");
    if (c->batch == 0 && c->budget_percent > 0)
        return rm_errorf(e, RM_ERR_INVALID,
                         "an automatic batch needs the budget as an amount of memory, not a percentage: the "
                         "no-remat peak it would refer to grows with the batch");
    if (c->epochs < 1) return rm_errorf(e, RM_ERR_INVALID, "at least 1 epoch");
    if (!(c->lr > 0 && c->lr <= RM_OPTIM_MAX_RATE))
        return rm_errorf(e, RM_ERR_INVALID, "learning rate %g is not in (0, %g]", c->lr, RM_OPTIM_MAX_RATE);
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
        rm_trainer_note(t, "data: no held-out split (%s); holding out 10%% of the training data, chosen by the seed",
                        te.msg);
    } else if (!strcmp(t->base_test->info.source, t->base_train->info.source)) {
        rm_trainer_note(t, "data: %s has no separate held-out split; holding out 10%% of it, chosen by the seed",
                        t->cfg.data);
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

/* ---- evaluation and accuracy ------------------------------------------------ */

/* The node the loss layer reads: the logits. */
static int logits_node(const rm_model *m)
{
    return rm_trace_forward_node(m->layers[m->nlayers - 1].inputs[0]);
}

/* Evaluation's graph and plan at a batch size: the forward-only trace,
 * through the same problem -> schedule -> plan path as training. On a
 * forward graph checkpoint-all frees every value after its last reader, the
 * least memory inference can take. */
static int eval_plan(rm_graph *g, rm_plan **plan, const rm_model *m, int batch, rm_err *e)
{
    *plan = NULL;
    int rc = rm_model_trace_forward(g, m, batch, e);
    if (!rc && (rc = rm_schedule_plan_all(plan, g, e))) rm_graph_free(g);
    return rc;
}

/* Argmax hits of count samples' logits (count x K x HW) against their labels
 * (count x HW; HW = 1 for classification). */
static int64_t correct_of(const float *logits, rm_shape ls, const int32_t *labels, int count)
{
    const size_t K = (size_t)ls.c, hw = (size_t)ls.h * (size_t)ls.w;
    int64_t correct = 0;
    for (size_t s = 0; s < (size_t)count; s++)
        for (size_t q = 0; q < hw; q++) {
            const float *x = logits + s * K * hw + q;
            size_t best = 0;
            for (size_t k = 1; k < K; k++)
                if (x[k * hw] > x[best * hw]) best = k;
            correct += (int32_t)best == labels[s * hw + q];
        }
    return correct;
}

static void seeded_free(rm_trainer *t)
{
    rm_trainer_mirror_free(t);
    rm_plan_free(t->eval_plan);
    t->eval_plan = NULL;
    rm_graph_free(&t->eval_g);
    free(t->logits);
    t->logits = NULL;
    rm_optim_free(t->opt);
    rm_grad_reduce_free(t->gr);
    t->gr = NULL;
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

/* The samples a folder without a held-out split gives up for one. */
static int64_t held_out_of(int64_t n)
{
    return n >= 10 ? n / 10 : n >= 2 ? 1 : 0;
}

int64_t rm_trainer_known_samples(const rm_trainer *t)
{
    if (t->synthetic) return t->cfg.synthetic_samples;
    int64_t n = t->base_train->info.count;
    return t->base_test ? n : n - held_out_of(n);
}

static int seeded_build(rm_trainer *t, uint64_t seed, rm_err *e)
{
    const rm_trainer_config *c = &t->cfg;
    const rm_model *m = t->m;
    t->seed = seed;
    t->sum.seed = seed;
    int rc;
    if (t->synthetic) {
        int64_t n = c->synthetic_samples           ? c->synthetic_samples
                    : 8LL * t->global_batch > 2048 ? 8LL * t->global_batch
                                                   : 2048;
        rm_synthetic_options so;
        rm_synthetic_options_default(&so, t->task, n + n / 4, m->input.c, m->input.h, m->input.w, t->classes);
        so.seed = seed; /* the generator hashes it into its own streams */
        if ((rc = rm_dataset_synthetic_create(&t->base_train, &so, e))) return rc;
        if ((rc = rm_dataset_split(&t->train, &t->test, t->base_train, n / 4, rm_hash64(seed ^ SALT_SPLIT), e)))
            return rc;
        t->sum.held_out_split = 1;
    } else if (t->base_test) {
        t->train = t->base_train, t->test = t->base_test;
    } else {
        int64_t n = t->base_train->info.count, held = held_out_of(n);
        if ((rc = rm_dataset_split(&t->train, &t->test, t->base_train, held, rm_hash64(seed ^ SALT_SPLIT), e)))
            return rc;
        t->sum.held_out_split = 1;
    }
    if ((rc = check_data(t, t->train, e)) || (rc = check_data(t, t->test, e))) return rc;
    snprintf(t->sum.train_data, sizeof t->sum.train_data, "%s", t->base_train->info.source);
    snprintf(t->sum.test_data, sizeof t->sum.test_data, "%s", t->sum.held_out_split ? "" : t->base_test->info.source);
    t->sum.train_samples = t->train->info.count;
    t->sum.test_samples = t->test->info.count;
    if (t->train->info.count < t->global_batch)
        return rm_errorf(e, RM_ERR_INVALID, "%s has %lld training samples, fewer than one batch of %d",
                         t->train->info.source, (long long)t->train->info.count, t->global_batch);

    /* Batches are global: a rank's micro-batches are parts of one. */
    rm_batcher_options bo;
    rm_batcher_options_default(&bo, t->global_batch);
    bo.seed = rm_hash64(seed ^ SALT_ORDER);
    if ((rc = rm_batcher_create(&t->batcher, t->train, &bo, e))) return rc;
    t->sum.epoch_steps = rm_batcher_batches(t->batcher);
    uint64_t all = c->epochs * (uint64_t)t->sum.epoch_steps;
    t->lr_total = all;
    t->sum.total_steps = c->max_steps && c->max_steps < all ? c->max_steps : all;

    rm_executor_options xo = {seed, 0, 0};
    rm_trainer_event ae;
    memset(&ae, 0, sizeof ae);
    ae.kind = RM_TRAINER_ALLOCATE;
    rm_trainer_emit(t, &ae);
    if ((rc = rm_executor_create(&t->ex, m, &t->g, t->be, t->plan, &xo, e))) return rc;
    size_t ngrads = 0;
    float *grads = rm_executor_grads(t->ex, &ngrads);
    rm_grad_reduce_step gs = {&t->g, t->plan, t->ex, m->nlayers, c->no_overlap};
    if ((rc = rm_grad_reduce_create(&t->gr, t->be, grads, ngrads, t->accum, t->dcomm ? t->dcomm : t->comm, &gs, e)))
        return rc;
    rm_executor_set_node_hook(t->ex, rm_grad_reduce_hook, t->gr);
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
    if (!t->be->host_memory && (rc = rm_trainer_mirror_build(t, e))) return rc;

    /* Accuracy comes from the logits the executor fetches when it computes
     * them, so measuring it costs a download, no memory on the device. */
    t->sum.train_accuracy = c->train_accuracy_every;
    if (!(t->logits = malloc(t->g.nodes[logits_node(m)].bytes)))
        return rm_errorf(e, RM_ERR_NOMEM, "out of memory for the logits of a batch");
    /* Evaluation runs in the training arena and workspace (idle then), so
     * its batch is the largest, up to training's, whose pass fits there. */
    for (int eb = t->batch;; eb /= 2) {
        if ((rc = eval_plan(&t->eval_g, &t->eval_plan, m, eb, e))) return rc;
        if (!(rc = rm_executor_set_inference(t->ex, &t->eval_g, t->eval_plan, e))) break;
        rm_plan_free(t->eval_plan);
        t->eval_plan = NULL;
        rm_graph_free(&t->eval_g);
        if (rc != RM_ERR_BUDGET || eb == 1) {
            rm_err_context(e, "evaluation at batch %d", eb);
            return rc;
        }
    }
    t->sum.eval_batch = t->eval_g.batch;
    t->sum.eval_span = t->eval_plan->span;
    return RM_OK;
}

/* Resuming: the counters must agree with this data and batch size. */
static int resume(rm_trainer *t, rm_err *e)
{
    const rm_trainer_config *c = &t->cfg;
    rm_snapshot_counters k;
    int rc = rm_trainer_load_snapshot(t, &k, c->resume_path, e);
    if (rc) return rc;
    /* A step is the global batch: with another, the epoch's order would be
     * cut elsewhere and the learning rate's steps counted differently. */
    if (k.batch && k.batch != (uint32_t)t->global_batch)
        return rm_errorf(e, RM_ERR_INVALID,
                         "%s was saved by a run whose steps were batches of %u, not %d: resume with --batch %u (on "
                         "any number of ranks, with any --accum)",
                         c->resume_path, k.batch, t->global_batch, k.batch);
    if (k.seed != t->seed) {
        if (c->seed_given)
            return rm_errorf(e, RM_ERR_INVALID,
                             "%s was saved by a run with seed %llu, not %llu: its batch order and dropout masks "
                             "would differ (leave out --seed to continue it)",
                             c->resume_path, (unsigned long long)k.seed, (unsigned long long)t->seed);
        seeded_free(t);
        if ((rc = seeded_build(t, k.seed, e))) return rc;
        if ((rc = rm_trainer_load_snapshot(t, &k, c->resume_path, e))) return rc;
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

int rm_trainer_create(rm_trainer **out, const rm_trainer_config *c, rm_err *e)
{
    *out = NULL;
    int rc = check_config(c, e);
    if (rc) return rc;
    rm_trainer *t = calloc(1, sizeof *t);
    if (!t) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    t->cfg = *c;
    t->synthetic = !strcmp(c->data, "synthetic");
    t->accum = c->accum > 1 ? c->accum : 1;
    t->comm = c->comm;
    t->rank = c->comm ? c->comm->rank : 0;
    t->ranks = c->comm ? c->comm->size : 1;
    t->slices = t->accum * t->ranks;
    t->batch = c->batch / t->slices;
    t->sum.accum = t->accum;
    t->sum.ranks = t->ranks;
    t->sum.cache = -1;
    if ((rc = rm_model_open(&t->m, c->model_path, c->onnx, 0, 0, NULL, e))) goto fail;
    rm_trainer_model_task(&t->classes, &t->task, t->m);
    t->sum.layers = t->m->nlayers;
    t->sum.classes = t->classes;
    t->sum.task = t->task;
    t->sum.params = t->m->param_count;
    if ((rc = rm_backend_create_with(&t->be, c->device, &c->backend, e))) {
        rm_err_context(e, "cannot train on %s", rm_backend_kind_device(c->device));
        goto fail;
    }
    rm_backend_describe(t->be, t->sum.device_settings, sizeof t->sum.device_settings);
    t->sum.device = t->be->name;
    /* The device's own transport for the gradients where it has one (NCCL). */
    if (t->ranks > 1 && t->be->ops->device_comm && !c->no_device_comm &&
        (rc = t->be->ops->device_comm(t->be->ctx, t->comm, &t->dcomm, e))) {
        rm_err_context(e, "cannot connect the ranks' GPUs");
        goto fail;
    }
    if (t->ranks > 1)
        t->sum.transport = t->dcomm ? t->dcomm->name : t->be->host_memory ? t->comm->name : "mpi through host memory";
    /* A missing data folder fails before any solve. */
    if (!t->synthetic && (rc = open_dir_data(t, e))) goto fail;
    /* So do a --resume that is no snapshot and a --snapshot that cannot be
     * written: found otherwise only after the solve, or after a whole epoch. */
    if (c->resume_path && (rc = rm_snapshot_check_header(c->resume_path, e))) goto fail;
    if (c->snapshot_path && t->rank == 0 &&
        (rc = rm_atomic_probe_room(c->snapshot_path, rm_snapshot_min_bytes(t->m, rm_optim_slots_for(&c->optim)), e)))
        goto fail;
    /* --batch auto: rank 0 searches (a solver's time limit can make the
     * answer differ from run to run) and tells the others. */
    if (t->batch == 0 && t->rank == 0 && (rc = rm_trainer_auto_batch(t, e))) goto fail;
    if (c->batch == 0 && t->ranks > 1) {
        if ((rc = t->comm->ops->broadcast(t->comm->ctx, &t->batch, sizeof t->batch, 0, e))) goto fail;
        t->sum.batch_auto = 1;
    }
    t->sum.batch = t->batch;
    t->global_batch = t->sum.global_batch = t->batch * t->slices;
    if ((rc = rm_trainer_plan_memory(t, e))) goto fail;
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
    rm_comm_free(t->dcomm);
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
    double t0 = rm_now();
    rm_batcher *b = NULL;
    rm_batcher_options bo;
    rm_batcher_options_default(&bo, t->eval_g.batch);
    bo.shuffle = 0;
    bo.last = RM_LAST_PARTIAL;
    if ((rc = rm_batcher_create(&b, t->test, &bo, e))) return rc;
    const int ln = logits_node(t->m);
    /* Each rank evaluates every ranks-th batch from its own rank on; the
     * sums are the job's: loss x labels, correct, labels, samples. */
    double sum[4] = {0, 0, 0, 0};
    int count = 0;
    rm_executor_set_fetch(t->ex, ln, t->logits);
    for (int64_t k = t->rank; k < rm_batcher_batches(b); k += t->ranks) {
        float loss = 0;
        if ((rc = rm_batcher_get(b, t->images, t->labels, &count, k, e)) || count == 0) break;
        if ((rc = rm_executor_infer(t->ex, &loss, t->images, t->labels, count, e))) break;
        size_t nlabels = rm_model_label_count(t->m, count);
        sum[0] += (double)loss * (double)nlabels; /* both losses are means over their labels */
        sum[1] += (double)correct_of(t->logits, t->eval_g.nodes[ln].shape, t->labels, count);
        sum[2] += (double)nlabels;
        sum[3] += count;
    }
    rm_executor_set_fetch(t->ex, -1, NULL);
    rm_batcher_free(b);
    if (!rc && t->ranks > 1) rc = t->comm->ops->allreduce_f64(t->comm->ctx, sum, 4, e);
    if (rc) return rc;
    double loss_sum = sum[0];
    int64_t correct = (int64_t)sum[1], total = (int64_t)sum[2], samples = (int64_t)sum[3];
    out->samples = samples;
    out->loss = total ? loss_sum / (double)total : 0;
    out->accuracy = total ? (double)correct / (double)total : 0;
    out->seconds = rm_now() - t0;
    return RM_OK;
}

/* rm_trainer_config.check_ranks, after a step: the arena reached exactly
 * the plan's span (the simulator's live peak, placed), and the parameters
 * are rank 0's to the bit (their CRC-32, compared by every rank). */
static int check_ranks(rm_trainer *t, rm_err *e)
{
    size_t n = 0, hw = rm_executor_arena_high_water(t->ex);
    const float *p = rm_executor_params(t->ex, &n);
    if (hw != t->plan->span)
        return rm_errorf(e, RM_ERR_INVALID, "rank %d: the arena reached %zu bytes, not the plan's span %zu", t->rank,
                         hw, t->plan->span);
    if (!t->be->host_memory) {
        int rc = rm_executor_download_params(t->ex, t->host_params, e);
        if (rc) return rc;
        p = t->host_params;
    }
    uint32_t crc = rm_crc32(0, p, n * sizeof *p);
    char what[64];
    snprintf(what, sizeof what, "set of parameters after step %llu", (unsigned long long)t->step + 1);
    return rm_comm_check_same(t->comm, &crc, sizeof crc, what, e);
}

/* This rank's micro-batches of global batch pos, each a step of the
 * executor whose gradients grad_reduce sums: their losses into part[0],
 * when measured their correct and counted labels into part[1] and part[2].
 * Rank r's share of the batch is its r-th slice, micro-batch k the k-th
 * slice of that; dropout masks are keyed by the slice's index in the step,
 * so a slice draws the same masks on any number of ranks. */
static int micro_batches(rm_trainer *t, float part[3], uint64_t pos, int measure, rm_err *e)
{
    for (int k = 0; k < t->accum; k++) {
        const int slice = t->rank * t->accum + k;
        int count = 0, rc;
        float loss = 0;
        if ((rc = rm_batcher_get_part(t->batcher, t->images, t->labels, &count, (int64_t)pos, slice * t->batch,
                                      t->batch, e)))
            return rc;
        rm_executor_set_fetch(t->ex, logits_node(t->m), measure ? t->logits : NULL);
        rm_grad_reduce_begin(t->gr);
        rc = rm_executor_step(t->ex, &loss, t->images, t->labels, t->step * (uint64_t)t->slices + (uint64_t)slice, e);
        rm_executor_set_fetch(t->ex, -1, NULL);
        if (rc || (rc = rm_grad_reduce_micro(t->gr, k, e))) return rc;
        part[0] += loss;
        if (measure) {
            part[1] += (float)correct_of(t->logits, t->g.nodes[logits_node(t->m)].shape, t->labels, count);
            part[2] += (float)rm_model_label_count(t->m, count);
        }
    }
    return RM_OK;
}

int rm_trainer_run(rm_trainer *t, rm_err *e)
{
    if (t->finished) return RM_OK;
    int rc = ensure_buffers(t, e);
    if (rc) return rc;
    const uint64_t per = (uint64_t)t->sum.epoch_steps, stop = t->sum.total_steps;
    double loss_sum = 0, train_s = 0;
    int64_t acc_correct = 0, acc_total = 0;
    uint64_t in_epoch = 0, done = 0; /* steps counted in the running means; steps of this call */
    int64_t epoch_set = -1;
    rm_trainer_event ev;
    while (t->step < stop) {
        const uint64_t epoch = t->step / per, pos = t->step % per;
        if ((int64_t)epoch != epoch_set) {
            rm_batcher_set_epoch(t->batcher, epoch);
            epoch_set = (int64_t)epoch;
            loss_sum = 0, in_epoch = 0;
            acc_correct = acc_total = 0;
        }
        double t0 = rm_now();
        /* Accuracy from the step's own logits, fetched when first computed. */
        int measure = t->sum.train_accuracy && t->step % (uint64_t)t->sum.train_accuracy == 0;
        /* This step's loss (summed over the micro-batches, then the ranks)
         * and accuracy counts, as floats for the ranks' sum: exact up to
         * 2^24 labels a step. */
        float part[3] = {0, 0, 0};
        if ((rc = micro_batches(t, part, pos, measure, e))) return rc;
        if (t->ranks > 1 && (rc = rm_comm_allreduce(t->comm, part, 3, e))) return rc;
        if ((rc = rm_grad_reduce_finish(t->gr, e))) return rc;
        float loss = part[0] / (float)t->slices;
        if (!isfinite(loss))
            return rm_errorf(e, RM_ERR_INVALID,
                             "the loss is %g at step %llu (epoch %llu): training diverged; try a smaller learning rate",
                             (double)loss, (unsigned long long)t->step, (unsigned long long)epoch + 1);
        if (measure) acc_correct += (int64_t)part[1], acc_total += (int64_t)part[2];
        double lr = rm_lr_at(&t->lr, t->step, t->lr_total);
        if ((rc = rm_optim_step(t->opt, (float)lr, e))) return rc;
        if (t->cfg.check_ranks && t->ranks > 1 && (rc = check_ranks(t, e))) return rc;
        t->step++, done++, in_epoch++;
        loss_sum += loss;
        train_s += rm_now() - t0;

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
        ev.running_acc = acc_total ? (double)acc_correct / (double)acc_total : -1;
        ev.images_per_s = train_s > 0 ? (double)done * t->global_batch / train_s : 0;
        ev.eta_s = (double)(stop - t->step) * train_s / (double)done;
        ev.elapsed_s = train_s;
        rm_trainer_emit(t, &ev);

        int epoch_end = t->step % per == 0, last = t->step == stop;
        int periodic = t->cfg.eval_every && t->step % t->cfg.eval_every == 0;
        /* Every rank evaluates its share (with its own batchnorm
         * statistics, as in PyTorch's DDP); rank 0 reports and saves. */
        if ((epoch_end || last || periodic) && t->test->info.count > 0) {
            rm_trainer_event ee = ev;
            if ((rc = rm_trainer_evaluate(t, &ee.eval, e))) return rc;
            ee.kind = epoch_end ? RM_TRAINER_EPOCH : RM_TRAINER_EVAL;
            rm_trainer_emit(t, &ee);
        }
        if ((epoch_end || last) && t->cfg.snapshot_path && t->rank == 0) {
            if ((rc = rm_trainer_save(t, t->cfg.snapshot_path, e))) return rc;
            rm_trainer_event ce = ev;
            ce.kind = RM_TRAINER_SNAPSHOT;
            ce.text = t->cfg.snapshot_path;
            rm_trainer_emit(t, &ce);
        }
    }
    t->finished = 1;
    return RM_OK;
}
