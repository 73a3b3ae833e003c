/* `remat profile` and `--costs` driven like a user would: profiling the tiny
 * VGG on the CPU writes a cost file of the model's graph with a positive,
 * finite time for every computed node; `plan`, `maxbatch` and `train` accept
 * it and say so; a file of another model or batch is refused with the
 * reason; the CUDA device fails with a clear message where there is no GPU
 * (or no CUDA build), and the profiler reports exactly what it measured. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cuda.h"
#include "builder.h"
#include "cli_fixture.h"
#include "commands.h"
#include "cost_file.h"
#include "profile.h"
#include "trace.h"

#define TINY REMAT_SOURCE_DIR "/models/vgg-tiny.cfg"
#define RESNET_TINY REMAT_SOURCE_DIR "/models/resnet-tiny.cfg"

TestSuite(profile, .init = cf_setup, .fini = cf_teardown, .timeout = 120);

/* Profiles the tiny VGG at batch 4 into path (few steps: the test checks the
 * plumbing, not the precision). */
static void profile_tiny(const char *path, const char *batch)
{
    int rc = cf_remat("profile", "--model", TINY, "--batch", batch, "--reps", "3", "--warmup", "1", "--out", path,
                      "--quiet", NULL);
    cr_assert_eq(rc, 0, "remat profile failed (%d)", rc);
}

Test(profile, cpu_profile_writes_a_cost_file_plan_accepts)
{
    const char *costs = cf_path("tiny.costs");
    profile_tiny(costs, "4");
    cr_assert(cf_said(0, "slowest nodes"));
    cr_assert(cf_said(0, "By layer kind"));
    cr_assert(cf_said(0, "conv forward"));
    /* The command it suggests runs: its budget is one some schedule fits
     * and checkpoint-all does not (a fixed 70% was below what VGG-tiny
     * needs at batch 8). */
    int pct = 0;
    char want[64], pcts[8];
    for (int k = 1; k < 100 && !pct; k++) {
        snprintf(want, sizeof want, "--budget %d%% --strategy lp_round --costs", k);
        if (cf_said(0, want)) pct = k;
    }
    cr_assert_gt(pct, 0, "profile suggests no plan command");
    snprintf(pcts, sizeof pcts, "%d%%", pct);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "4", "--budget", pcts, "--strategy", "lp_round",
                          "--costs", costs, "--quiet", NULL),
                 0, "the suggested plan at %s fails", pcts);
    cr_assert(cf_said(0, " recomputation"), "the suggested plan at %s recomputes nothing", pcts);

    rm_err e = {RM_OK, ""};
    rm_cost_file *c;
    cr_assert_eq(rm_cost_file_read(&c, costs, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(c->model, "vgg-tiny");
    cr_assert_eq(c->batch, 4);
    cr_assert_str_eq(c->device, "cpu");
    rm_model *m;
    cr_assert_eq(rm_model_load(&m, TINY, &e), RM_OK, "%s", e.msg);
    rm_graph g;
    cr_assert_eq(rm_model_trace(&g, m, 4, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(c->n, g.n);
    for (int i = 0; i < g.n; i++) {
        cr_assert_str_eq(c->nodes[i].name, g.nodes[i].name);
        cr_assert(isfinite(c->nodes[i].seconds));
        /* The input too: its time is the upload a schedule that drops it repeats. */
        cr_assert_gt(c->nodes[i].seconds, 0, "node %d (%s) measured no time", i, g.nodes[i].name);
    }
    rm_graph_free(&g);
    rm_model_free(m);
    rm_cost_file_free(c);

    int rc = cf_remat("plan", "--model", TINY, "--batch", "4", "--budget", "97%", "--strategy", "lp_round", "--costs",
                      costs, "--quiet", NULL);
    cr_assert_eq(rc, 0, "plan --costs failed (%d)", rc);
    cr_assert(cf_said(0, "profiled seconds from"));
    /* Costs print as time, not FLOPs. */
    cr_assert(!cf_said(0, "FLOPs"), "a profiled plan still prints FLOPs");
    cr_assert(cf_said(0, " ms") || cf_said(0, " us"));

    /* Without --costs the same plan says FLOPs. */
    cr_assert_eq(
        cf_remat("plan", "--model", TINY, "--batch", "4", "--budget", "97%", "--strategy", "lp_round", "--quiet", NULL),
        0);
    cr_assert(cf_said(0, "costs        FLOPs"));

    /* explain takes the same file and explains in time. */
    rc = cf_remat("explain", "--model", TINY, "--batch", "4", "--budget", "97%", "--strategy", "lp_round", "--costs",
                  costs, "--quiet", NULL);
    cr_assert_eq(rc, 0, "explain --costs failed (%d)", rc);
    cr_assert(cf_said(0, " ms") || cf_said(0, " us"));
    cr_assert(!cf_said(0, "FLOPs"), "a profiled explanation still prints FLOPs");
}

Test(profile, another_batch_or_model_is_refused)
{
    const char *costs = cf_path("tiny.costs");
    profile_tiny(costs, "2");
    int rc = cf_remat("plan", "--model", TINY, "--batch", "4", "--budget", "97%", "--strategy", "lp_round", "--costs",
                      costs, "--quiet", NULL);
    cr_assert_eq(rc, 1);
    cr_assert(cf_said(1, "profiled at batch 2, not 4"));
    rc = cf_remat("plan", "--model", RESNET_TINY, "--batch", "2", "--budget", "97%", "--strategy", "lp_round",
                  "--costs", costs, "--quiet", NULL);
    cr_assert_eq(rc, 1);
    cr_assert(cf_said(1, "profiled for model 'vgg-tiny', not 'resnet-tiny'"));
    rc = cf_remat("train", "--model", TINY, "--data", "synthetic", "--batch", "4", "--budget", "100%", "--steps", "1",
                  "--costs", costs, "--quiet", NULL);
    cr_assert_eq(rc, 1);
    cr_assert(cf_said(1, "profiled at batch 2, not 4"));
    rc = cf_remat("maxbatch", "--model", RESNET_TINY, "--budget", "64MiB", "--costs", costs, "--quiet", NULL);
    cr_assert_eq(rc, 1);
    cr_assert(cf_said(1, "not 'resnet-tiny'"));
    rc = cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "97%", "--strategy", "lp_round", "--costs",
                  cf_path("nonexistent.costs"), "--quiet", NULL);
    cr_assert_eq(rc, 1);
    cr_assert(cf_said(1, "cannot open"));
}

Test(profile, train_and_maxbatch_take_costs)
{
    const char *costs = cf_path("tiny.costs");
    profile_tiny(costs, "4");
    int rc = cf_remat("train", "--model", TINY, "--data", "synthetic", "--samples", "8", "--batch", "4", "--budget",
                      "100%", "--steps", "1", "--strategy", "checkpoint_all", "--costs", costs, "--quiet", NULL);
    cr_assert_eq(rc, 0, "train --costs failed (%d)", rc);
    cr_assert(cf_said(0, "costs: profiled seconds from"));
    rc = cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--strategies", "checkpoint_all,chen_sqrtn",
                  "--max-batch", "64", "--costs", costs, "--quiet", NULL);
    cr_assert_eq(rc, 0, "maxbatch --costs failed (%d)", rc);
    cr_assert(cf_said(0, "scaled linearly"));
}

Test(profile, bad_usage_and_cuda_without_a_gpu)
{
    cr_assert_eq(cf_remat("profile", "--batch", "4", NULL), 1);
    cr_assert(cf_said(1, "--model FILE is required"));
    cr_assert_eq(cf_remat("profile", "--model", TINY, NULL), 1);
    cr_assert(cf_said(1, "--batch N is required"));
    cr_assert_eq(cf_remat("profile", "--model", TINY, "--batch", "4", "--device", "tpu", NULL), 1);
    cr_assert(cf_said(1, "--device must be cpu or cuda"));
    cr_assert_eq(cf_remat("profile", "--model", TINY, "--batch", "4", "--reps", "0", NULL), 1);
    /* An --out that cannot be written is refused before the measurement, not after it. */
    cr_assert_eq(cf_remat("profile", "--model", TINY, "--batch", "4", "--out", cf_dir, "--quiet", NULL), 1);
    cr_assert(cf_said(1, "is a directory"), "%s", cf_err);
    cr_assert(!cf_said(0, "model"), "refused only after profiling");
    /* Only where CUDA cannot run: no CUDA build, or no GPU. */
    rm_err e = {RM_OK, ""};
    rm_backend *be = NULL;
    if (rm_backend_cuda_create(&be, 0, &e) == RM_OK) {
        rm_backend_free(be);
        return;
    }
    int rc = cf_remat("profile", "--model", TINY, "--batch", "4", "--device", "cuda", "--out", cf_path("x.costs"),
                      "--quiet", NULL);
    cr_assert_neq(rc, 0);
    cr_assert(cf_said(1, "cannot profile on the GPU"));
    cr_assert(access(cf_path("x.costs"), F_OK) != 0, "a failed profile left a cost file");
}

/* The library: a node's cost is the median of exactly `reps` measurements,
 * the spread brackets it, and the cost file carries it unchanged. */
Test(profile, library_medians_and_cost_file)
{
    rm_err e = {RM_OK, ""};
    rm_model *m;
    cr_assert_eq(rm_model_load(&m, TINY, &e), RM_OK, "%s", e.msg);
    rm_profile_options o;
    memset(&o, 0, sizeof o);
    o.batch = 2, o.reps = 4, o.warmup = 0, o.seed = 3;
    rm_profile *p;
    cr_assert_eq(rm_profile_run(&p, m, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(p->reps, 4);
    cr_assert_str_eq(p->device, "cpu");
    double sum = 0;
    for (int v = 0; v < p->g.n; v++) {
        cr_assert_leq(p->lo[v], p->seconds[v]);
        cr_assert_leq(p->seconds[v], p->hi[v]);
        sum += p->seconds[v];
    }
    cr_assert_gt(p->step_median, 0);
    cr_assert_gt(sum, 0);
    rm_cost_file *c;
    cr_assert_eq(rm_profile_cost_file(&c, p, "vgg-tiny", &e), RM_OK, "%s", e.msg);
    cr_assert_eq(c->batch, 2);
    for (int v = 0; v < p->g.n; v++) cr_assert_eq(c->nodes[v].seconds, p->seconds[v]);
    rm_cost_file_free(c);
    rm_profile_free(p);
    o.reps = 0;
    cr_assert_eq(rm_profile_run(&p, m, &o, &e), RM_ERR_INVALID);
    cr_assert_null(p);
    rm_model_free(m);
}
