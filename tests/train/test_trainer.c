/* The training loop (train/trainer.c) and `remat train`. A tiny model learns
 * a learnable synthetic task (the loss falls, held-out accuracy beats
 * chance); training under a budget below checkpoint-all's peak recomputes
 * and follows checkpoint-all's run bit for bit (losses, parameters,
 * gradients, batchnorm statistics: remat changes memory, not math), with the
 * fixed-memory accounting equal to what the executor allocates and the arena
 * within the budget; a run stopped mid-epoch and resumed from its snapshot
 * repeats the uninterrupted run's losses exactly; --batch auto is the
 * max-batch search's answer; the schedule cache hits, and a tampered cache
 * file is re-solved; and the CLI refuses bad input with exit 1 and a message
 * that says what is wrong. Everything runs the baselines only (no lp_solve),
 * on the tiny models, in a few seconds. */
#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_fixture.h"
#include "commands.h"
#include "maxbatch.h"
#include "train_fixtures.h"
#include "trainer.h"

#define VGG_TINY REMAT_SOURCE_DIR "/models/vgg-tiny.cfg"
#define RESNET_TINY REMAT_SOURCE_DIR "/models/resnet-tiny.cfg"
#define UNET_TINY REMAT_SOURCE_DIR "/models/unet-tiny.cfg"

#define MAX_STEPS 128

/* What a run reported through its events. */
typedef struct recorder {
    double loss[MAX_STEPS]; /* by global step */
    int have[MAX_STEPS];
    double running_loss, running_acc;
    rm_trainer_eval eval; /* the last evaluation */
    int evals, snapshots;
    char notes[2048];
} recorder;

static void record(void *ctx, const rm_trainer_event *ev)
{
    recorder *r = ctx;
    switch (ev->kind) {
    case RM_TRAINER_STEP:
        cr_assert(ev->step >= 1 && ev->step <= MAX_STEPS);
        r->loss[ev->step - 1] = ev->loss;
        r->have[ev->step - 1] = 1;
        r->running_loss = ev->running_loss;
        r->running_acc = ev->running_acc;
        break;
    case RM_TRAINER_EVAL:
    case RM_TRAINER_EPOCH:
        r->eval = ev->eval;
        r->evals++;
        break;
    case RM_TRAINER_SNAPSHOT:
        r->snapshots++;
        break;
    case RM_TRAINER_NOTE: {
        size_t l = strlen(r->notes);
        snprintf(r->notes + l, sizeof r->notes - l, "%s\n", ev->text);
        break;
    }
    default:
        break;
    }
}

static rm_trainer_config config(const char *model, int batch, const char *strategy, double percent, recorder *r)
{
    rm_trainer_config c;
    rm_trainer_config_default(&c);
    c.model_path = model;
    c.batch = batch;
    c.strategy = strategy;
    c.budget_percent = percent;
    c.synthetic_samples = 8 * batch;
    c.epochs = 4;
    c.event = record;
    c.event_ctx = r;
    return c;
}

static rm_trainer *create(const rm_trainer_config *c)
{
    rm_trainer *t = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_create(&t, c, &e), RM_OK, "%s", e.msg);
    return t;
}

static void run(rm_trainer *t)
{
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_run(t, &e), RM_OK, "%s", e.msg);
}

static double mean(const double *x, int n)
{
    double s = 0;
    for (int i = 0; i < n; i++) s += x[i];
    return s / n;
}

/* ---- learning ------------------------------------------------------------ */

Test(trainer, loss_falls_on_a_learnable_task)
{
    recorder r;
    memset(&r, 0, sizeof r);
    rm_trainer_config c = config(VGG_TINY, 16, "checkpoint_all", 100, &r);
    c.synthetic_samples = 640;
    c.max_steps = 40;
    c.lr = 0.01;
    c.train_accuracy_every = 1;
    rm_trainer *t = create(&c);
    run(t);
    cr_assert_eq(rm_trainer_steps(t), 40);
    double first = mean(r.loss, 5), last = mean(r.loss + 35, 5);
    cr_expect_lt(last, 0.7 * first, "mean loss of the first 5 steps %.4f, of the last 5 %.4f", first, last);
    cr_expect_lt(r.running_loss, 0.9 * first, "running loss %.4f, initial %.4f", r.running_loss, first);
    cr_assert_eq(r.eval.samples, 160, "held out: a fifth of 800 samples");
    /* 10 classes: chance is 10%. */
    cr_expect_gt(r.eval.accuracy, 0.3, "held-out accuracy %.3f", r.eval.accuracy);
    cr_expect_gt(r.running_acc, 0.15, "training accuracy %.3f (dropout 0.5 on)", r.running_acc);
    rm_trainer_free(t);
}

Test(trainer, segmentation_learns_pixels)
{
    recorder r;
    memset(&r, 0, sizeof r);
    rm_trainer_config c = config(UNET_TINY, 8, "checkpoint_all", 100, &r);
    c.max_steps = 30;
    rm_trainer *t = create(&c);
    const rm_trainer_summary *s = rm_trainer_summary_of(t);
    cr_assert_eq(s->task, RM_TASK_SEGMENTATION);
    cr_assert_eq(s->classes, 2);
    run(t);
    double first = mean(r.loss, 5), last = mean(r.loss + 25, 5);
    cr_expect_lt(last, 0.7 * first, "first %.4f, last %.4f", first, last);
    /* Pixel accuracy, above what predicting the background everywhere could
     * give on a background-heavy mask is not asserted; above chance is. */
    cr_expect_gt(r.eval.accuracy, 0.5, "held-out pixel accuracy %.3f", r.eval.accuracy);
    rm_trainer_free(t);
}

static void put_be32(FILE *f, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    cr_assert_eq(fwrite(b, 1, 4, f), 4);
}

/* MNIST idx files with only a training split: the held-out data is a seeded
 * tenth of it, and the data's shape must be the model's. Images: a bright
 * square in one of four quadrants, the quadrant is the label. */
Test(trainer, folder_data_without_a_test_split)
{
    char dir[128], path[256];
    tf_tmpdir(dir, sizeof dir);
    const int n = 80, side = 12;
    snprintf(path, sizeof path, "%s/train-images-idx3-ubyte", dir);
    FILE *fi = fopen(path, "wb");
    snprintf(path, sizeof path, "%s/train-labels-idx1-ubyte", dir);
    FILE *fl = fopen(path, "wb");
    cr_assert(fi && fl);
    put_be32(fi, 0x803), put_be32(fi, (uint32_t)n), put_be32(fi, side), put_be32(fi, side);
    put_be32(fl, 0x801), put_be32(fl, (uint32_t)n);
    for (int i = 0; i < n; i++) {
        int q = i % 4;
        for (int y = 0; y < side; y++)
            for (int x = 0; x < side; x++) {
                int in = (y < side / 2) == (q < 2) && (x < side / 2) == (q % 2 == 0);
                fputc(in ? 200 + i % 50 : i % 7, fi);
            }
        fputc(q, fl);
    }
    fclose(fi);
    fclose(fl);
    char model[256];
    snprintf(model, sizeof model, "%s/tiny.cfg", dir);
    FILE *fm = fopen(model, "w");
    cr_assert_not_null(fm);
    fprintf(fm,
            "[net]\nchannels=1\nheight=%d\nwidth=%d\n[conv]\nname=conv1\nfilters=4\nsize=3\npad=1\n"
            "[batchnorm]\nname=bn1\n[relu]\nname=relu1\n[maxpool]\nname=pool1\nsize=2\nstride=2\n"
            "[flatten]\nname=flat\n[linear]\nname=fc\nout=10\n[softmax_xent]\nname=loss\n",
            side, side);
    fclose(fm);

    recorder r;
    memset(&r, 0, sizeof r);
    rm_trainer_config c = config(model, 8, "checkpoint_all", 100, &r);
    c.data = dir;
    c.max_steps = 20;
    rm_trainer *t = create(&c);
    const rm_trainer_summary *s = rm_trainer_summary_of(t);
    cr_assert(strstr(r.notes, "holding out 10%"), "notes: %s", r.notes);
    cr_assert(s->held_out_split);
    cr_assert_eq(s->train_samples, 72);
    cr_assert_eq(s->test_samples, 8);
    cr_assert_eq(s->epoch_steps, 9);
    run(t);
    cr_assert_eq(r.eval.samples, 8);
    cr_expect_lt(mean(r.loss + 15, 5), mean(r.loss, 5));
    rm_trainer_free(t);

    /* A model whose input is not the data's shape is refused, naming both. */
    fm = fopen(model, "w");
    fprintf(fm,
            "[net]\nchannels=3\nheight=%d\nwidth=%d\n[global_avgpool]\n[linear]\nname=fc\nout=10\n"
            "[softmax_xent]\nname=loss\n",
            side, side);
    fclose(fm);
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_create(&t, &c, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "1x12x12") && strstr(e.msg, "3x12x12"), "%s", e.msg);
    tf_rmdir(dir);
}

/* ---- remat changes memory, not math ---------------------------------------- */

/* Runs `steps` steps under strategy at percent of the no-remat peak and
 * under checkpoint-all with room to spare, and compares everything. */
static void expect_same_run(const char *model, int batch, const char *strategy, double percent, int steps)
{
    recorder ra, rb;
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    rm_trainer_config ca = config(model, batch, strategy, percent, &ra);
    ca.max_steps = (uint64_t)steps;
    rm_trainer_config cb = config(model, batch, "checkpoint_all", 120, &rb);
    cb.max_steps = (uint64_t)steps;
    rm_trainer *a = create(&ca), *b = create(&cb);

    const rm_trainer_summary *s = rm_trainer_summary_of(a);
    cr_assert_lt(s->budget, s->noremat_peak, "%s: the budget must be below checkpoint-all's peak", model);
    cr_assert_gt(s->recomputations, 0, "%s: %s at %.0f%% must recompute", model, strategy, percent);
    cr_assert_leq(s->sched_peak, s->budget);
    cr_assert_leq(s->fp.total + s->plan_span, s->budget, "%s: the arena must fit the budget", model);
    /* Evaluation runs in the idle training arena, so it adds nothing to the budget. */
    size_t arena_bytes = 0;
    cr_assert_not_null(rm_executor_arena_memory(rm_trainer_executor(a), &arena_bytes));
    cr_assert_geq(s->eval_batch, 1);
    cr_assert_leq(s->eval_span, arena_bytes, "%s: evaluation needs %zu bytes, the arena has %zu", model, s->eval_span,
                  arena_bytes);
    /* The accounting is what the executor allocates, plus the optimizer's state. */
    cr_assert_eq(rm_executor_fixed_bytes(rm_trainer_executor(a)) + s->fp.optim, s->fp.total);
    cr_assert_eq(rm_trainer_summary_of(b)->recomputations, 0);

    run(a);
    run(b);
    cr_assert_eq(rm_executor_arena_high_water(rm_trainer_executor(a)), s->plan_span);
    for (int i = 0; i < steps; i++) {
        cr_assert(ra.have[i] && rb.have[i]);
        cr_assert_eq(ra.loss[i], rb.loss[i], "%s step %d: loss %.9g under %s, %.9g under checkpoint_all", model, i,
                     ra.loss[i], strategy, rb.loss[i]);
    }
    cr_expect_lt(ra.loss[steps - 1], ra.loss[0], "%s: the loss falls", model);
    size_t n, m;
    rm_executor *xa = rm_trainer_executor(a), *xb = rm_trainer_executor(b);
    const float *pa = rm_executor_params(xa, &n), *pb = rm_executor_params(xb, &m);
    cr_assert_eq(n, m);
    cr_assert_eq(memcmp(pa, pb, n * sizeof(float)), 0, "%s: parameters differ after %d steps", model, steps);
    cr_assert_eq(memcmp(rm_executor_grads(xa, NULL), rm_executor_grads(xb, NULL), n * sizeof(float)), 0,
                 "%s: gradients of the last step differ", model);
    const float *ba = rm_executor_buffers(xa, &n), *bb = rm_executor_buffers(xb, &m);
    cr_assert_eq(n, m);
    if (n) cr_assert_eq(memcmp(ba, bb, n * sizeof(float)), 0, "%s: batchnorm statistics differ", model);
    cr_assert_eq(memcmp(&ra.eval, &rb.eval, offsetof(rm_trainer_eval, seconds)), 0, "%s: evaluations differ", model);
    rm_trainer_free(a);
    rm_trainer_free(b);
}

Test(trainer, remat_run_is_bit_identical_resnet)
{
    expect_same_run(RESNET_TINY, 8, "chen_greedy", 75, 12); /* batchnorm, residual gradient sums */
}

Test(trainer, remat_run_is_bit_identical_vgg_dropout)
{
    expect_same_run(VGG_TINY, 8, "chen_greedy", 95, 12); /* dropout masks replayed when recomputed */
}

Test(trainer, remat_run_is_bit_identical_unet)
{
    expect_same_run(UNET_TINY, 4, "linearized_greedy", 80, 8); /* concat skips, segmentation */
}

/* ---- snapshots ------------------------------------------------------------ */

Test(trainer, resume_repeats_the_uninterrupted_run)
{
    char dir[128], path[256];
    tf_tmpdir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/run.snap", dir);
    /* 8 steps an epoch; stop mid-epoch 1 at step 6, resume past the epoch boundary to 13. Adam and a cosine
     * schedule, so the optimizer's state and step count and the schedule's position all matter. */
    recorder ra, rb, rc;
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    memset(&rc, 0, sizeof rc);
    rm_trainer_config c = config(RESNET_TINY, 8, "chen_greedy", 80, &ra);
    c.synthetic_samples = 64;
    c.epochs = 2;
    c.optim = rm_optim_options_default(RM_OPTIM_ADAM);
    c.lr = 0.01;
    c.lr_kind = RM_LR_COSINE;
    c.seed = 7;
    c.seed_given = 1;
    c.max_steps = 13;
    rm_trainer *a = create(&c);
    cr_assert_eq(rm_trainer_summary_of(a)->epoch_steps, 8);
    run(a);

    rm_trainer_config cb = c;
    cb.event_ctx = &rb;
    cb.max_steps = 6;
    cb.snapshot_path = path;
    rm_trainer *b = create(&cb);
    run(b);
    cr_assert_eq(rb.snapshots, 1);
    for (int i = 0; i < 6; i++) cr_assert_eq(rb.loss[i], ra.loss[i], "step %d before the stop", i);

    /* The resumed run is not told the seed: it takes the snapshot's. */
    rm_trainer_config cc = c;
    cc.event_ctx = &rc;
    cc.seed = 1;
    cc.seed_given = 0;
    cc.resume_path = path;
    rm_trainer *r = create(&cc);
    cr_assert_eq(rm_trainer_summary_of(r)->start_step, 6);
    cr_assert_eq(rm_trainer_summary_of(r)->seed, 7);
    run(r);
    cr_assert_eq(rm_trainer_steps(r), 13);
    for (int i = 0; i < 6; i++) cr_assert(!rc.have[i], "the resumed run starts at step 6");
    for (int i = 6; i < 13; i++) {
        cr_assert(rc.have[i]);
        cr_assert_eq(rc.loss[i], ra.loss[i], "step %d: resumed %.9g, uninterrupted %.9g", i, rc.loss[i], ra.loss[i]);
    }
    size_t n;
    const float *pa = rm_executor_params(rm_trainer_executor(a), &n);
    cr_assert_eq(memcmp(pa, rm_executor_params(rm_trainer_executor(r), NULL), n * sizeof(float)), 0);

    /* Told another seed, it refuses: the batch order and dropout would differ. */
    cc.seed_given = 1;
    rm_trainer *bad = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_create(&bad, &cc, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "seed 7"), "%s", e.msg);
    /* Another batch size is refused, naming the one to resume with: the snapshot records the run's
     * global batch. A batch of 4 (16 steps an epoch) agrees with step 6 after epoch 0, so only the
     * record catches it. */
    cc.seed_given = 0;
    cc.synthetic_samples = 64;
    const int other[] = {16, 4};
    for (int k = 0; k < 2; k++) {
        cc.batch = other[k];
        cr_assert_eq(rm_trainer_create(&bad, &cc, &e), RM_ERR_INVALID, "batch %d: %s", other[k], e.msg);
        cr_assert(strstr(e.msg, "whose steps were batches of 8, not") && strstr(e.msg, "resume with --batch 8"), "%s",
                  e.msg);
    }

    rm_trainer_free(a);
    rm_trainer_free(b);
    rm_trainer_free(r);
    tf_rmdir(dir);
}

/* ---- batch auto, the cache ------------------------------------------------------ */

typedef struct pctx {
    const rm_model *m;
    rm_optim_options o;
} pctx;

static int problem_at(rm_problem **out, void *ctx, int batch, rm_err *e)
{
    pctx *c = ctx;
    return rm_training_problem(out, NULL, c->m, batch, &c->o, NULL, NULL, RM_COST_SAME_BATCH, e);
}

Test(trainer, batch_auto_is_the_max_batch_answer)
{
    recorder r;
    memset(&r, 0, sizeof r);
    rm_trainer_config c = config(RESNET_TINY, 0, "chen_greedy", 0, &r);
    c.budget = 8u << 20;
    c.synthetic_samples = 0;
    c.max_steps = 1;
    rm_trainer *t = create(&c);
    const rm_trainer_summary *s = rm_trainer_summary_of(t);

    pctx pc = {rm_trainer_model(t), c.optim};
    rm_maxbatch_options o;
    memset(&o, 0, sizeof o);
    o.budget = c.budget;
    o.max_batch = 1 << 16;
    o.cap = (rm_overhead_cap){RM_CAP_FORWARDS, 1}; /* --batch auto's, maxbatch's default */
    rm_maxbatch_result mr;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_maxbatch_search(&mr, rm_strategy_find("chen_greedy"), problem_at, &pc, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_gt(mr.max_batch, 1);
    rm_schedule_free(mr.schedule);
    cr_assert(s->batch_auto);
    cr_assert_eq(s->batch, mr.max_batch, "auto picked %d, the search says %d", s->batch, mr.max_batch);
    cr_assert_leq(s->fp.total + s->plan_span, c.budget);
    /* One more sample per batch would not fit this strategy (the search's local boundary). */
    run(t);
    rm_trainer_free(t);

    /* Issue 13: with fewer samples than that batch (--samples), the search
     * picked the budget's batch anyway and the run then failed with "fewer
     * than one batch". It stops at the samples now, and says so. */
    memset(&r, 0, sizeof r);
    c.synthetic_samples = mr.max_batch / 2;
    t = create(&c);
    s = rm_trainer_summary_of(t);
    cr_assert_eq(s->batch, mr.max_batch / 2);
    cr_assert(s->batch_is_samples);
    cr_assert_eq(s->train_samples, mr.max_batch / 2);
    cr_assert_geq(s->bound_batch, mr.max_batch, "the bound is the budget's, not the samples'");
    run(t);
    rm_trainer_free(t);
}

Test(trainer, schedule_cache_hits_and_rejects_tampering)
{
    char dir[128];
    tf_tmpdir(dir, sizeof dir);
    recorder r;
    memset(&r, 0, sizeof r);
    rm_trainer_config c = config(RESNET_TINY, 8, "chen_greedy", 80, &r);
    c.cache_dir = dir;
    rm_trainer *a = create(&c);
    const rm_trainer_summary *sa = rm_trainer_summary_of(a);
    cr_assert_eq(sa->cache, 0, "first run: a miss");
    cr_assert_eq(sa->cache_stored, 1);
    FILE *f = fopen(sa->cache_file, "r");
    cr_assert_not_null(f, "%s was not written", sa->cache_file);
    fclose(f);

    rm_trainer *b = create(&c);
    const rm_trainer_summary *sb = rm_trainer_summary_of(b);
    cr_assert_eq(sb->cache, 1, "second run: a hit");
    cr_assert_str_eq(sb->status, "cached");
    cr_assert_eq(sb->cost, sa->cost);
    cr_assert_eq(sb->sched_peak, sa->sched_peak);
    cr_assert_eq(sb->plan_span, sa->plan_span);
    rm_trainer_free(b);

    /* Another budget is another key. */
    rm_trainer_config c2 = c;
    c2.budget_percent = 90;
    b = create(&c2);
    cr_assert_eq(rm_trainer_summary_of(b)->cache, 0);
    rm_trainer_free(b);

    /* A cache folder that cannot be created: a note, and the summary does
     * not claim the schedule was stored (`remat train` printed "stored in
     * the cache as /nonexistent/..."). */
    rm_trainer_config c3 = c;
    c3.cache_dir = "/nonexistent/remat-cache";
    memset(r.notes, 0, sizeof r.notes);
    b = create(&c3);
    cr_assert_eq(rm_trainer_summary_of(b)->cache, 0);
    cr_assert_eq(rm_trainer_summary_of(b)->cache_stored, 0);
    cr_assert(strstr(r.notes, "cannot create /nonexistent/remat-cache"), "notes: %s", r.notes);
    rm_trainer_free(b);

    /* A tampered file: an R line that lists its stage's own node; the
     * reader rejects it and the schedule is solved again. */
    f = fopen(sa->cache_file, "r");
    cr_assert_not_null(f);
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *row = strstr(buf, "\nS ");
    cr_assert_not_null(row, "no S line in the schedule file");
    f = fopen(sa->cache_file, "w");
    cr_assert_not_null(f);
    fwrite(buf, 1, (size_t)(row - buf), f);
    fputs("\nR 5 5", f);
    fputs(row, f);
    fclose(f);
    memset(r.notes, 0, sizeof r.notes);
    b = create(&c);
    cr_assert_eq(rm_trainer_summary_of(b)->cache, 0, "a tampered file is not used");
    cr_assert(strstr(r.notes, "ignoring"), "notes: %s", r.notes);
    cr_assert_eq(rm_trainer_summary_of(b)->cost, sa->cost);
    rm_trainer_free(b);
    rm_trainer_free(a);
    tf_rmdir(dir);
}

/* ---- the command line ------------------------------------------------------------ */

/* Runs `remat train ARGS...` and returns its exit code; cf_err gets stderr. */
static int train_cli(const char *const *args)
{
    const char *argv[64] = {"train"};
    int argc = 1;
    for (int i = 0; args[i]; i++) argv[argc++] = args[i];
    argv[argc] = NULL;
    return cf_remat_args(argv);
}

TestSuite(trainer_cli, .init = cf_setup, .fini = cf_teardown);

Test(trainer_cli, trains_and_prints_the_summary)
{
    const char *args[] = {"--model",    RESNET_TINY,   "--data",  "synthetic", "--batch",   "8",  "--budget", "80%",
                          "--strategy", "chen-greedy", "--steps", "3",         "--samples", "64", NULL};
    cr_assert_eq(train_cli(args), 0, "%s", cf_err);
    cr_assert(cf_said(0, "no-remat"));
    cr_assert(cf_said(0, "training does not fit without rematerialization"));
    cr_assert(cf_said(0, "compute overhead"));
    cr_assert(cf_said(0, "held-out loss"));
    cr_assert(cf_said(0, "done         3 steps"));
    cr_assert(cf_said(0, "device       cpu: fast kernels (BLIS"), "the default CPU library is fast");
}

/* The bytes of "12.5 MiB" (rm_cli_bytes' form) at s; asserts the form. */
static double bytes_at(const char *s)
{
    double v;
    char unit[8];
    cr_assert_eq(sscanf(s, "%lf %7s", &v, unit), 2, "no amount at '%.40s'", s);
    const char *units[] = {"B", "KiB", "MiB", "GiB"};
    for (int i = 0; i < 4; i++, v *= 1024.0)
        if (!strncmp(unit, units[i], strlen(units[i])) && strlen(unit) - strlen(units[i]) <= 1) return v;
    cr_assert_fail("unknown unit '%s'", unit);
    return 0;
}

/* The closing lines: the arena's high-water plus the fixed bytes is the
 * plan's peak to the byte (the same rounding prints the same text) and
 * within the budget; the kernel's count of the process's growth covers what
 * training touched (the arena and fixed pages, give or take the workspace
 * and a kernel library's buffers); the median step is there. */
Test(trainer_cli, closes_with_the_measured_memory)
{
    const char *args[] = {"--model",   RESNET_TINY, "--data",     "synthetic",   "--batch", "32",
                          "--budget",  "80%",       "--strategy", "chen-greedy", "--steps", "3",
                          "--samples", "96",        "--threads",  "1",           NULL};
    cr_assert_eq(train_cli(args), 0, "%s", cf_err);
    char *out = cf_text(cf_path("stdout"));
    const char *m = strstr(out, "\nmeasured     ");
    cr_assert_not_null(m, "%s", out);
    double total = bytes_at(m + 14);
    const char *fixed = strstr(m, "fixed "), *hw = strstr(m, "high-water "), *plan = strstr(m, "(planned "),
               *budget = strstr(m, "; budget ");
    cr_assert(fixed && hw && plan && budget, "%.300s", m);
    cr_assert_float_eq(total, bytes_at(fixed + 6) + bytes_at(hw + 11), 0.02 * total);
    cr_assert_float_eq(total, bytes_at(plan + 9), 1e-9 * total, "%.200s", m);
    cr_assert_leq(total, bytes_at(budget + 9));
    cr_assert_null(strstr(m, "EXCEEDED"));
    const char *r = strstr(m, "\nresident     ");
    cr_assert_not_null(r, "%s", m);
    if (!strstr(r, "not measured")) {
        double grew = bytes_at(r + 14);
        cr_assert(grew >= 0.5 * total && grew <= total + 64.0 * 1024 * 1024, "resident %.0f B, accounted %.0f B", grew,
                  total);
    }
    cr_assert_not_null(strstr(m, "\nstep time    median "), "%s", m);
    cr_assert_not_null(strstr(m, " over steps 2-3 "), "%s", m);
    free(out);
}

/* --kernels (and --cpu-kernels, its older name on the cpu) and --threads
 * reach the backend, and the summary says so; the option wins over
 * REMAT_CPU_KERNELS. */
Test(trainer_cli, cpu_kernels_and_threads_are_chosen_on_the_command_line)
{
    const char *args[] = {"--model",   RESNET_TINY, "--data",    "synthetic",  "--batch",
                          "8",         "--budget",  "100%",      "--strategy", "checkpoint_all",
                          "--steps",   "1",         "--samples", "16",         "--cpu-kernels",
                          "reference", "--threads", "1",         NULL};
    cr_assert_eq(train_cli(args), 0, "%s", cf_err);
    cr_assert(cf_said(0, "device       cpu: reference kernels, 1 thread\n"));
    args[14] = "--kernels";
    setenv("REMAT_CPU_KERNELS", "fast", 1);
    cr_assert_eq(train_cli(args), 0, "%s", cf_err);
    unsetenv("REMAT_CPU_KERNELS");
    cr_assert(cf_said(0, "device       cpu: reference kernels, 1 thread\n"));
}

Test(trainer_cli, refuses_bad_input_with_a_reason)
{
    struct {
        const char *args[20];
        const char *want;
    } cases[] = {
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--strategy", "nope", NULL},
         "unknown strategy 'nope'"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "1KiB", "--strategy", "chen_greedy", NULL},
         "does not even hold the fixed bytes"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--batch", "8", "--budget", "30%", "--strategy", "chen_greedy",
          NULL},
         "no schedule exists"},
        {{"--model", VGG_TINY, "--data", "synthetic", "--batch", "8", "--budget", "96%", "--strategy", "checkpoint_all",
          NULL},
         "checkpoint_all finds no schedule"},
        {{"--model", RESNET_TINY, "--data", "/nonexistent/data", "--budget", "80%", NULL}, "/nonexistent/data"},
        {{"--model", "/nonexistent.cfg", "--data", "synthetic", "--budget", "80%", NULL}, "/nonexistent.cfg"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--batch", "auto", "--budget", "80%", NULL},
         "not a percentage"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "16G", NULL}, "ambiguous"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--optimizer", "rmsprop", NULL},
         "sgd or adam"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--epochs", "0", NULL}, "--epochs"},
        /* Over the bound: the message gives it (it said "an integer >= 1" of 99999999999). */
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--samples", "99999999999", NULL},
         "--samples must be an integer from 1 to 2000000000"},
        {{"--model", RESNET_TINY, "--data", "synthetic", NULL}, "--budget B is required"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--cpu-kernels", "blas", NULL},
         "unknown cpu kernel library 'blas' (reference or fast)"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--kernels", "blas", NULL},
         "--kernels: unknown cpu kernel library 'blas' (reference or fast)"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--device", "cuda", "--kernels", "fast",
          NULL},
         "--kernels: unknown cuda kernel library 'fast' (handwritten, cublas or cudnn)"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--device", "cuda", "--cpu-kernels", "fast",
          NULL},
         "--cpu-kernels is for --device cpu"},
        /* Both names, two answers: refused, not a silent winner. */
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--kernels", "fast", "--cpu-kernels",
          "reference", NULL},
         "--kernels fast and --cpu-kernels reference (its older name) disagree: give one"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--threads", "0", NULL},
         "--threads: threads must be an integer from 1 to 1024, got '0'"},
        {{"--model", RESNET_TINY, "--data", "synthetic", "--budget", "80%", "--device", "cuda", "--threads", "2", NULL},
         "--threads is for --device cpu"},
        {{"--model", RESNET_TINY, "--budget", "80%", NULL}, "--data"},
        {{"--model", UNET_TINY, "--data", "synthetic", "--budget", "8MiB", "--batch", "auto", "--strategy",
          "checkpoint_all", "--lr", "-1", NULL},
         "--lr"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int rc = train_cli(cases[i].args);
        cr_expect_eq(rc, 1, "case %zu: exit %d, stderr: %s", i, rc, cf_err);
        cr_expect(strstr(cf_err, cases[i].want), "case %zu: stderr lacks '%s': %s", i, cases[i].want, cf_err);
    }
}

/* An unwritable --snapshot was found only when the first epoch ended, a
 * --resume that is no snapshot only after the solve: both now fail before
 * anything is solved or printed. */
Test(trainer_cli, refuses_a_bad_snapshot_path_before_solving)
{
    const char *junk = cf_path("junk.snap");
    FILE *f = fopen(junk, "wb");
    cr_assert_not_null(f);
    fputs("not a snapshot, but long enough to hold a header", f);
    fclose(f);
    struct {
        const char *flag, *path, *want;
    } cases[] = {
        {"--snapshot", cf_dir, "is a directory"},
        {"--snapshot", "/nonexistent/dir/run.snap", "No such file or directory"},
        {"--checkpoint", "/nonexistent/dir/run.snap", "No such file or directory"},
        {"--resume", junk, "not a remat snapshot"},
        {"--resume", cf_dir, "not a regular file"},
        {"--resume", "/nonexistent/run.snap", "No such file or directory"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"--model",     RESNET_TINY,   "--data",     "synthetic", "--batch",      "8",
                              "--budget",    "80%",         "--strategy", "milp",      "--time-limit", "0",
                              cases[i].flag, cases[i].path, "--quiet",    NULL};
        int rc = train_cli(args);
        cr_expect_eq(rc, 1, "case %zu: exit %d, stderr: %s", i, rc, cf_err);
        cr_expect(strstr(cf_err, cases[i].want), "case %zu: stderr lacks '%s': %s", i, cases[i].want, cf_err);
        cr_expect(!cf_said(0, "schedule"), "case %zu: refused only after the solve", i);
    }
}

Test(trainer_cli, refuses_a_corrupt_snapshot)
{
    const char *snap = cf_path("run.snap");
    const char *save[] = {"--model",   RESNET_TINY, "--data",     "synthetic",   "--batch", "8",
                          "--budget",  "80%",       "--strategy", "chen_greedy", "--steps", "2",
                          "--samples", "64",        "--snapshot", snap,          "--quiet", NULL};
    cr_assert_eq(train_cli(save), 0, "%s", cf_err);
    FILE *f = fopen(snap, "r+b");
    cr_assert_not_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, size / 2, SEEK_SET);
    int ch = fgetc(f);
    fseek(f, size / 2, SEEK_SET);
    fputc(ch ^ 0x40, f);
    fclose(f);
    const char *resume[] = {"--model",   RESNET_TINY, "--data",     "synthetic",   "--batch", "8",
                            "--budget",  "80%",       "--strategy", "chen_greedy", "--steps", "4",
                            "--samples", "64",        "--resume",   snap,          "--quiet", NULL};
    int rc = train_cli(resume);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_assert(strstr(cf_err, snap), "the message names the file: %s", cf_err);
    /* A snapshot of another model is refused too. */
    const char *other[] = {"--model", VGG_TINY,     "--data",         "synthetic", "--batch", "8",       "--budget",
                           "100%",    "--strategy", "checkpoint_all", "--resume",  snap,      "--quiet", NULL};
    rc = train_cli(other);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_assert(strstr(cf_err, snap), "%s", cf_err);
}

/* Issue 13: with a cache folder that cannot be created the run goes on (the
 * cache only saves solver time), and says the schedule was not stored,
 * never that it was. */
Test(trainer_cli, an_unwritable_schedule_cache_is_said_not_stored)
{
    const char *args[] = {"--model",   VGG_TINY, "--data",           "synthetic",          "--batch", "2",
                          "--budget",  "100%",   "--strategy",       "chen_greedy",        "--steps", "1",
                          "--samples", "8",      "--schedule-cache", "/nonexistent/cache", NULL};
    cr_assert_eq(train_cli(args), 0, "%s", cf_err);
    cr_assert(strstr(cf_err, "remat train: schedule cache: cannot create /nonexistent/cache: No such file or "
                             "directory\n"),
              "%s", cf_err);
    char *out = cf_text(cf_path("stdout"));
    const char *line = strstr(out, "\n             not stored in the cache: /nonexistent/cache/");
    cr_assert_not_null(line, "%s", out);
    const char *end = strchr(line + 1, '\n');
    cr_assert_not_null(end);
    cr_assert(end - line > 40 && !strncmp(end - strlen(".schedule could not be written"),
                                          ".schedule could not be written", strlen(".schedule could not be written")),
              "%.*s", (int)(end - line), line);
    cr_assert_null(strstr(out, "stored in the cache as"), "%s", out);
    free(out);
}

/* Issue 13: --lr 1e308 passed the parser and became inf as a float in the
 * update kernel, failing only after the run had started. The range is
 * checked as the arguments are read, and said; nothing is printed before. */
Test(trainer_cli, learning_rates_past_a_float_are_refused_at_once)
{
    struct {
        const char *flag, *value, *want;
    } cases[] = {
        {"--lr", "1e308",
         "remat train: --lr must be a number in (0, 3.40282e+38] (the optimizer computes in single precision), got "
         "'1e308'\n"},
        {"--lr", "0",
         "remat train: --lr must be a number in (0, 3.40282e+38] (the optimizer computes in single precision), got "
         "'0'\n"},
        {"--weight-decay", "1e39",
         "remat train: --weight-decay must be a number in [0, 3.40282e+38] (the optimizer computes in single "
         "precision), got '1e39'\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *before = cf_text(cf_path("stdout"));
        const char *args[] = {"--model",  VGG_TINY, "--data",      "synthetic",    "--batch", "2",
                              "--budget", "100%",   cases[i].flag, cases[i].value, NULL};
        cr_assert_eq(train_cli(args), 1, "%s", cf_err);
        cr_assert(!strncmp(cf_err, cases[i].want, strlen(cases[i].want)), "%s", cf_err);
        char *after = cf_text(cf_path("stdout"));
        cr_assert_str_eq(after, before);
        free(before), free(after);
    }
    /* The library holds the same bound. */
    rm_trainer_config c;
    rm_trainer_config_default(&c);
    c.model_path = VGG_TINY;
    c.budget_percent = 100;
    c.lr = 1e308;
    rm_trainer *t = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_create(&t, &c, &e), RM_ERR_INVALID);
    cr_assert_str_eq(e.msg, "learning rate 1e+308 is not in (0, 3.40282e+38]");
}

Test(trainer_cli, batch_auto_stops_at_the_training_samples)
{
    const char *args[] = {"--model",  VGG_TINY, "--data",     "synthetic",   "--samples", "16", "--batch", "auto",
                          "--budget", "16MiB",  "--strategy", "chen_greedy", "--steps",   "1",  NULL};
    cr_assert_eq(train_cli(args), 0, "%s", cf_err);
    cr_assert(cf_said(0, "\nbatch        16: as many as the training samples, and chen_greedy fits it in the budget "
                         "(no schedule fits more than "),
              "%s", cf_err);
    cr_assert(strstr(cf_err, "remat train: --batch auto: batch 16 ("), "%s", cf_err);
    cr_assert(strstr(cf_err, "), the number of training samples\n"), "%s", cf_err);
}
