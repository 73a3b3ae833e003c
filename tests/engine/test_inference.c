/* Inference through the one executor (rm_executor_set_inference/infer) and
 * the node fetch. On a model without batchnorm or dropout, training mode and
 * inference mode compute the same forward pass, so an inference pass must
 * give bit for bit the loss and logits of a training step on the same batch;
 * a short batch must give each sample's logits exactly as a full one does
 * (every layer is per sample in inference); and a graph that is not the
 * training graph's forward part is refused. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "builder.h"
#include "executor.h"
#include "plan.h"
#include "rng.h"
#include "schedule.h"
#include "strategy.h"
#include "trace.h"

/* conv, relu, pool, linear: the same forward in training and inference mode. */
static const char *const plain_cfg = "[net]\nchannels=3\nheight=8\nwidth=8\n"
                                     "[conv]\nname=c1\nfilters=4\nsize=3\nstride=1\npad=1\n"
                                     "[relu]\nname=r1\n"
                                     "[maxpool]\nname=p1\nsize=2\nstride=2\n"
                                     "[conv]\nname=c2\nfilters=4\nsize=3\nstride=1\npad=1\n"
                                     "[relu]\nname=r2\n"
                                     "[flatten]\nname=f\n"
                                     "[linear]\nname=fc\nout=5\n"
                                     "[softmax_xent]\nname=loss\n";

typedef struct job {
    rm_model *m;
    rm_graph g, fg;
    rm_plan *plan, *fplan;
    rm_backend *be;
    rm_executor *ex;
} job;

/* g's plan under checkpoint-all. */
static rm_plan *plan_of(const rm_graph *g)
{
    rm_err e = {RM_OK, ""};
    rm_plan *pl = NULL;
    cr_assert_eq(rm_schedule_plan_all(&pl, g, &e), RM_OK, "%s", e.msg);
    return pl;
}

static void job_create(job *j, int batch, int infer_batch)
{
    memset(j, 0, sizeof *j);
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_parse(&j->m, plain_cfg, "plain.cfg", &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_model_trace(&j->g, j->m, batch, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_model_trace_forward(&j->fg, j->m, infer_batch, &e), RM_OK, "%s", e.msg);
    j->plan = plan_of(&j->g);
    j->fplan = plan_of(&j->fg);
    cr_assert_eq(rm_backend_cpu_create(&j->be, &e), RM_OK, "%s", e.msg);
    rm_executor_options o = {7, 0, 1};
    cr_assert_eq(rm_executor_create(&j->ex, j->m, &j->g, j->be, j->plan, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_executor_set_inference(j->ex, &j->fg, j->fplan, &e), RM_OK, "%s", e.msg);
}

static void job_free(job *j)
{
    rm_executor_free(j->ex);
    rm_backend_free(j->be);
    rm_plan_free(j->plan);
    rm_plan_free(j->fplan);
    rm_graph_free(&j->g);
    rm_graph_free(&j->fg);
    rm_model_free(j->m);
}

static void batch_data(float *x, int32_t *y, int n, size_t per, int classes)
{
    rm_rng r = rm_rng_make(99);
    for (size_t i = 0; i < (size_t)n * per; i++) x[i] = (float)rm_rng_range(&r, -1, 1);
    for (int i = 0; i < n; i++) y[i] = i % classes;
}

Test(inference, equals_a_training_step_without_batchnorm_or_dropout)
{
    job j;
    job_create(&j, 6, 6);
    const size_t per = 3 * 8 * 8;
    float x[6 * 3 * 8 * 8], logits_step[6 * 5], logits_infer[6 * 5];
    int32_t y[6];
    batch_data(x, y, 6, per, 5);
    const int ln = rm_trace_forward_node(rm_model_find(j.m, "fc"));
    rm_err e = {RM_OK, ""};
    float ls = NAN, li = NAN;
    rm_executor_set_fetch(j.ex, ln, logits_step);
    cr_assert_eq(rm_executor_step(j.ex, &ls, x, y, 0, &e), RM_OK, "%s", e.msg);
    rm_executor_set_fetch(j.ex, ln, logits_infer);
    cr_assert_eq(rm_executor_infer(j.ex, &li, x, y, 6, &e), RM_OK, "%s", e.msg);
    cr_assert(isfinite(ls) && ls > 0);
    cr_assert_eq(memcmp(&ls, &li, sizeof ls), 0, "step loss %.9g, inference loss %.9g", ls, li);
    cr_assert_eq(memcmp(logits_step, logits_infer, sizeof logits_step), 0, "the fetched logits differ");
    job_free(&j);
}

Test(inference, a_short_batch_gives_each_sample_the_full_batch_logits)
{
    job j;
    job_create(&j, 8, 8);
    const size_t per = 3 * 8 * 8;
    float x[8 * 3 * 8 * 8], full[8 * 5], part[8 * 5];
    int32_t y[8];
    batch_data(x, y, 8, per, 5);
    const int ln = rm_trace_forward_node(rm_model_find(j.m, "fc"));
    rm_err e = {RM_OK, ""};
    float lf, lp;
    rm_executor_set_fetch(j.ex, ln, full);
    cr_assert_eq(rm_executor_infer(j.ex, &lf, x, y, 8, &e), RM_OK, "%s", e.msg);
    memset(part, 0xff, sizeof part);
    rm_executor_set_fetch(j.ex, ln, part);
    cr_assert_eq(rm_executor_infer(j.ex, &lp, x, y, 3, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(memcmp(full, part, 3 * 5 * sizeof(float)), 0, "the first 3 samples' logits differ");
    for (int i = 3 * 5; i < 8 * 5; i++) cr_assert(isnan(part[i]), "the fetch wrote past the 3 samples");
    cr_assert_neq(lf, lp, "the short batch's loss is a mean over its own 3 samples");
    /* The count is bounded by the inference graph's batch. */
    cr_assert_eq(rm_executor_infer(j.ex, &lp, x, y, 9, &e), RM_ERR_INVALID);
    cr_assert_eq(rm_executor_infer(j.ex, &lp, x, y, 0, &e), RM_ERR_INVALID);
    job_free(&j);
}

Test(inference, refuses_graphs_that_are_not_the_forward_part)
{
    job j;
    job_create(&j, 4, 4);
    rm_err e = {RM_OK, ""};
    /* The training graph itself has backward nodes. */
    cr_assert_eq(rm_executor_set_inference(j.ex, &j.g, j.plan, &e), RM_ERR_INVALID);
    /* A larger batch than training's. */
    rm_graph big;
    cr_assert_eq(rm_model_trace_forward(&big, j.m, 5, &e), RM_OK, "%s", e.msg);
    rm_plan *bp = plan_of(&big);
    cr_assert_eq(rm_executor_set_inference(j.ex, &big, bp, &e), RM_ERR_INVALID);
    /* Another model's forward graph. */
    rm_model *other = NULL;
    cr_assert_eq(rm_model_parse(&other,
                                "[net]\nchannels=3\nheight=8\nwidth=8\n[flatten]\nname=f\n[linear]\nname=fc\n"
                                "out=5\n[softmax_xent]\nname=loss\n",
                                "other.cfg", &e),
                 RM_OK, "%s", e.msg);
    rm_graph og;
    cr_assert_eq(rm_model_trace_forward(&og, other, 4, &e), RM_OK, "%s", e.msg);
    rm_plan *op = plan_of(&og);
    cr_assert_eq(rm_executor_set_inference(j.ex, &og, op, &e), RM_ERR_INVALID);
    /* After a refusal no inference graph is set. */
    float x[4 * 3 * 8 * 8] = {0}, l;
    int32_t y[4] = {0};
    cr_assert_eq(rm_executor_infer(j.ex, &l, x, y, 4, &e), RM_ERR_INVALID);
    rm_plan_free(op);
    rm_graph_free(&og);
    rm_model_free(other);
    rm_plan_free(bp);
    rm_graph_free(&big);
    job_free(&j);
}
