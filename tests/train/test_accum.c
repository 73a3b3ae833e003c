/* Gradient accumulation (`remat train --accum K`, train/grad_reduce.h): a
 * step of K micro-batches follows the mean gradient of the whole batch, to
 * rounding, on models whose gradient is a plain mean over samples (no
 * batchnorm, no dropout); a remat schedule of the micro-batch leaves the
 * same bits as checkpoint-all's under accumulation too; the budget counts
 * the micro-batches' gradient sum (and the memory measured equals the memory
 * planned), and the schedule is the micro-batch's;
 * and a batch that does not split evenly is refused, saying what would. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_fixture.h"
#include "grad_reduce.h"
#include "trainer.h"

#define MLP_TINY REMAT_SOURCE_DIR "/models/mlp-tiny.cfg"
#define CNN_TINY REMAT_SOURCE_DIR "/models/cnn-tiny.cfg"
#define RESNET_TINY REMAT_SOURCE_DIR "/models/resnet-tiny.cfg"

static rm_trainer *make(const char *model, int batch, int accum, const char *strategy, double percent, int steps)
{
    rm_trainer_config c;
    rm_trainer_config_default(&c);
    c.model_path = model;
    c.batch = batch;
    c.accum = accum;
    c.strategy = strategy;
    c.budget_percent = percent;
    c.synthetic_samples = 4 * batch;
    c.max_steps = (uint64_t)steps;
    c.train_accuracy_every = 0;
    /* The reference kernels' sums do not depend on the batch's size. */
    c.backend.set_kernels = 1;
    c.backend.kernels = 0;
    rm_trainer *t = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_create(&t, &c, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_trainer_run(t, &e), RM_OK, "%s", e.msg);
    return t;
}

/* Largest |a - b| over the largest |b|. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, m = 0;
    for (size_t i = 0; i < n; i++) {
        d = fmax(d, fabs((double)a[i] - (double)b[i]));
        m = fmax(m, fabs((double)b[i]));
    }
    return m > 0 ? d / m : d;
}

static void expect_mean_of_the_batch(const char *model, int batch, int accum)
{
    rm_trainer *a = make(model, batch, accum, "checkpoint_all", 120, 1);
    rm_trainer *b = make(model, batch, 1, "checkpoint_all", 120, 1);
    const rm_trainer_summary *sa = rm_trainer_summary_of(a);
    cr_assert_eq(sa->batch, batch / accum, "the executor runs micro-batches");
    cr_assert_eq(sa->global_batch, batch);
    /* The memory measured is the memory planned: the gradient sum included
     * (it was left out of `measured`, which came out below `planned`). */
    size_t fixed, hw;
    rm_trainer_memory_used(a, &fixed, &hw);
    cr_assert_eq(fixed, sa->fp.total, "%s: measured fixed %zu, planned %zu", model, fixed, sa->fp.total);
    cr_assert_gt(sa->fp.grad_sum, 0);
    rm_trainer_memory_used(b, &fixed, &hw);
    cr_assert_eq(fixed, rm_trainer_summary_of(b)->fp.total, "%s without accumulation", model);
    size_t n, m;
    const float *ga = rm_executor_grads(rm_trainer_executor(a), &n),
                *gb = rm_executor_grads(rm_trainer_executor(b), &m);
    cr_assert_eq(n, m);
    double d = rel_diff(ga, gb, n);
    cr_assert_lt(d, 1e-5, "%s: %d micro-batches of %d against one batch of %d: gradients %.3g apart", model, accum,
                 batch / accum, batch, d);
    cr_assert_gt(rel_diff(ga, gb, n) + rel_diff(gb, gb + 1, n - 1), 0, "gradients are not all equal");
    /* One optimizer step from the same weights: the parameters agree as closely. */
    const float *pa = rm_executor_params(rm_trainer_executor(a), &n),
                *pb = rm_executor_params(rm_trainer_executor(b), &m);
    cr_assert_lt(rel_diff(pa, pb, n), 1e-6, "%s: parameters after a step", model);
    rm_trainer_free(a);
    rm_trainer_free(b);
}

Test(accum, micro_batches_give_the_mean_gradient_of_the_batch)
{
    expect_mean_of_the_batch(MLP_TINY, 16, 2);
    expect_mean_of_the_batch(MLP_TINY, 18, 3);
    expect_mean_of_the_batch(CNN_TINY, 8, 4);
}

/* Under accumulation a schedule that recomputes still leaves checkpoint-all's
 * bits, step after step (batchnorm and residual sums included), and the
 * budget holds the gradient sum. */
Test(accum, remat_under_accumulation_is_bit_identical)
{
    rm_trainer *a = make(RESNET_TINY, 16, 2, "chen_greedy", 75, 4);
    rm_trainer *b = make(RESNET_TINY, 16, 2, "checkpoint_all", 120, 4);
    const rm_trainer_summary *s = rm_trainer_summary_of(a);
    cr_assert_gt(s->recomputations, 0, "75%% of the micro-batch's peak must recompute");
    cr_assert_eq(s->fp.grad_sum, rm_grad_reduce_bytes(rm_trainer_model(a)->param_count, 2));
    cr_assert_gt(s->fp.grad_sum, 0);
    cr_assert_leq(s->fp.total + s->plan_span, s->budget, "fixed memory, the gradient sum in it, and the arena fit");
    cr_assert_eq(rm_executor_arena_high_water(rm_trainer_executor(a)), s->plan_span);
    size_t n, m;
    const float *pa = rm_executor_params(rm_trainer_executor(a), &n),
                *pb = rm_executor_params(rm_trainer_executor(b), &m);
    cr_assert_eq(n, m);
    cr_assert_eq(memcmp(pa, pb, n * sizeof *pa), 0, "parameters differ after 4 accumulated steps");
    rm_trainer_free(a);
    rm_trainer_free(b);
}

TestSuite(accum_cli, .init = cf_setup, .fini = cf_teardown);

Test(accum_cli, the_summary_says_how_a_step_splits_and_bad_values_are_refused)
{
    cr_assert_eq(cf_remat("train", "--model", MLP_TINY, "--data", "synthetic", "--batch", "12", "--accum", "3",
                          "--budget", "100%", "--strategy", "checkpoint_all", "--steps", "2", "--samples", "48", NULL),
                 0, "%s", cf_err);
    cr_assert(cf_said(0, "batch        12 a step = 1 rank x 3 micro-batches of 4, their gradients averaged; the "
                         "budget and the schedule below are a micro-batch's\n"));
    cr_assert(cf_said(0, "+ gradient sum "), "the fixed bytes name the gradient sum");
    cr_assert_eq(cf_remat("train", "--model", MLP_TINY, "--data", "synthetic", "--batch", "10", "--accum", "3",
                          "--budget", "90%", NULL),
                 1);
    cr_assert(cf_said(1, "the batch 10 does not split evenly into 1 rank x 3 micro-batches: give a multiple of 3"),
              "%s", cf_err);
    cr_assert_eq(cf_remat("train", "--model", MLP_TINY, "--data", "synthetic", "--accum", "0", "--budget", "90%", NULL),
                 1);
    cr_assert(cf_said(1, "--accum must be an integer from 1 to 65536, got '0'"), "%s", cf_err);
}
