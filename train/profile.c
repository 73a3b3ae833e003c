/* Per-node timing of training steps (see profile.h). The executor runs the
 * checkpoint-all plan, so every node is computed exactly once per step and
 * its time is the cost of computing it once: what the problem's cost means.
 * A hook on the executor (rm_executor_set_node_hook) brackets each node;
 * everything else (frees, the loss download) is the executor's own work
 * and shows as the difference between the step time and the nodes' sum. */
#include "profile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "executor.h"
#include "plan.h"
#include "problem.h"
#include "rng.h"
#include "schedule.h"
#include "strategy.h"
#include "trace.h"
#include "trainer.h"

/* What the hook fills during one step. */
typedef struct timing {
    int n;
    rm_backend *be;
    rm_backend_timer *timer; /* the backend's: events 2v (before node v) and 2v + 1 (after) */
    int *count;              /* [n] computations in this step (checkpoint-all: 1 each) */
} timing;

/* The backend's timer times in its order of work (on a GPU, the device's
 * time between the events, not the host's queuing). */
static int node_hook(void *ctx, int node, int after, rm_err *e)
{
    timing *tm = ctx;
    if (after) tm->count[node]++;
    return tm->be->ops->timer_record(tm->be->ctx, tm->timer, 2 * node + after, e);
}

void rm_profile_free(rm_profile *p)
{
    if (!p) return;
    rm_graph_free(&p->g);
    free(p->seconds);
    free(p->lo);
    free(p->hi);
    free(p);
}

int rm_profile_run(rm_profile **out, const rm_model *m, const rm_profile_options *o, rm_err *e)
{
    *out = NULL;
    if (o->batch < 1 || o->reps < 1 || o->warmup < 0)
        return rm_errorf(e, RM_ERR_INVALID, "profile: batch %d, %d timed and %d warm-up steps (need >= 1, >= 1, >= 0)",
                         o->batch, o->reps, o->warmup);
    rm_profile *pr = calloc(1, sizeof *pr);
    if (!pr) return rm_errorf(e, RM_ERR_NOMEM, "profile: out of memory");
    pr->warmup = o->warmup;
    pr->reps = o->reps;
    rm_backend *be = NULL;
    rm_plan *plan = NULL;
    rm_executor *ex = NULL;
    float *input = NULL;
    int32_t *labels = NULL;
    double *samples = NULL, *steps = NULL;
    timing tm;
    memset(&tm, 0, sizeof tm);
    int rc = rm_model_trace(&pr->g, m, o->batch, e);
    if (rc) goto done;
    const int n = pr->g.n;
    if ((rc = rm_backend_create_with(&be, o->device, &o->backend, e))) {
        rm_err_context(e, "cannot profile on %s", rm_backend_kind_device(o->device));
        goto done;
    }
    rm_backend_describe(be, pr->settings, sizeof pr->settings);
    if ((rc = rm_schedule_plan_all(&plan, &pr->g, e))) goto done;
    rm_executor_options xo;
    memset(&xo, 0, sizeof xo);
    xo.seed = o->seed;
    if ((rc = rm_executor_create(&ex, m, &pr->g, be, plan, &xo, e))) goto done;

    /* A random batch and valid labels: the kernels' speed must not depend on
     * special values (zeros can be faster than real data). */
    int classes;
    rm_task task;
    rm_trainer_model_task(&classes, &task, m);
    rm_shape in_shape = m->input;
    in_shape.n = o->batch;
    size_t nin = rm_shape_numel(in_shape), nlab = rm_model_label_count(m, o->batch);
    input = malloc((nin ? nin : 1) * sizeof *input);
    labels = malloc((nlab ? nlab : 1) * sizeof *labels);
    pr->seconds = calloc((size_t)n, sizeof *pr->seconds);
    pr->lo = calloc((size_t)n, sizeof *pr->lo);
    pr->hi = calloc((size_t)n, sizeof *pr->hi);
    samples = malloc((size_t)n * (size_t)o->reps * sizeof *samples);
    steps = malloc((size_t)o->reps * sizeof *steps);
    tm.n = n;
    tm.be = be;
    tm.count = calloc((size_t)n, sizeof *tm.count);
    if (!input || !labels || !pr->seconds || !pr->lo || !pr->hi || !samples || !steps || !tm.count) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "profile: out of memory");
        goto done;
    }
    rm_rng r = rm_rng_make(rm_hash64(o->seed ^ 0x70726f66ULL));
    for (size_t i = 0; i < nin; i++) input[i] = (float)rm_rng_range(&r, -1.0, 1.0);
    for (size_t i = 0; i < nlab; i++) labels[i] = (int32_t)(rm_rng_next(&r) % (uint64_t)(classes > 0 ? classes : 1));
    if ((rc = be->ops->timer_create(be->ctx, &tm.timer, 2 * n, e))) goto done;

    for (int s = 0; s < o->warmup + o->reps; s++) {
        int timed = s >= o->warmup;
        if (o->progress)
            o->progress(o->progress_ctx, timed, timed ? s - o->warmup + 1 : s + 1, timed ? o->reps : o->warmup);
        /* Warm-up steps run without the hook: nothing of theirs is kept. */
        rm_executor_set_node_hook(ex, timed ? node_hook : NULL, &tm);
        memset(tm.count, 0, (size_t)n * sizeof *tm.count);
        float loss;
        double t0 = rm_now();
        /* The step ends with the loss download, which waits for the stream:
         * every event of the step has been reached when it returns. */
        if ((rc = rm_executor_step(ex, &loss, input, labels, (uint64_t)s, e))) goto done;
        double t1 = rm_now();
        if (!timed) continue;
        int k = s - o->warmup;
        steps[k] = t1 - t0;
        for (int v = 0; v < n; v++) {
            double sec;
            if (tm.count[v] != 1) {
                rc = rm_errorf(e, RM_ERR_INVALID, "profile: node %d (%s) ran %d times in a checkpoint-all step", v,
                               pr->g.nodes[v].name, tm.count[v]);
                goto done;
            }
            if ((rc = be->ops->timer_elapsed(be->ctx, tm.timer, 2 * v, 2 * v + 1, &sec, e))) goto done;
            samples[(size_t)v * (size_t)o->reps + (size_t)k] = sec;
        }
    }
    for (int v = 0; v < n; v++) {
        double *x = &samples[(size_t)v * (size_t)o->reps];
        int R = o->reps;
        double med = rm_median(x, R);
        /* The input node is timed like any other: "recomputing" it uploads
         * the batch again, and a schedule that drops it must pay for that
         * (as the FLOP model charges one unit per element). */
        pr->seconds[v] = med;
        pr->lo[v] = x[0];
        pr->hi[v] = x[R - 1];
    }
    pr->step_median = rm_median(steps, o->reps);
done:
    rm_executor_free(ex);
    if (tm.timer) be->ops->timer_free(be->ctx, tm.timer);
    rm_plan_free(plan);
    rm_backend_free(be);
    free(input);
    free(labels);
    free(samples);
    free(steps);
    free(tm.count);
    if (rc) {
        rm_profile_free(pr);
        return rc;
    }
    pr->device = rm_backend_kind_name(o->device); /* the backend (and its name) is gone */
    *out = pr;
    return RM_OK;
}

int rm_profile_cost_file(rm_cost_file **out, const rm_profile *p, const char *model, rm_err *e)
{
    int rc = rm_cost_file_create(out, p->g.n, model, p->g.batch, p->device, e);
    if (rc) return rc;
    for (int v = 0; v < p->g.n; v++) {
        snprintf((*out)->nodes[v].name, sizeof(*out)->nodes[v].name, "%s", p->g.nodes[v].name);
        (*out)->nodes[v].seconds = p->seconds[v];
    }
    return RM_OK;
}
