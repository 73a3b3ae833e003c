/* One footprint (train/footprint.h): its parts exactly as the executor and
 * the optimizer allocate them, and every command (graph, plan, explain,
 * maxbatch, train) printing and using the same fixed bytes and no-remat peak
 * for the same model and batch. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "backend_cpu.h"
#include "builder.h"
#include "cli_fixture.h"
#include "cli_util.h"
#include "executor.h"
#include "footprint.h"
#include "plan.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"
#include "trace.h"

static rm_model *load(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s.cfg", REMAT_SOURCE_DIR, name);
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, path, &e), RM_OK, "%s", e.msg);
    return m;
}

/* An executor for m at a batch under checkpoint-all: what it allocates. */
static size_t executor_fixed(const rm_model *m, int batch)
{
    rm_err e = {RM_OK, ""};
    rm_graph g;
    rm_plan *plan = NULL;
    rm_backend *be = NULL;
    rm_executor *ex = NULL;
    cr_assert_eq(rm_model_trace(&g, m, batch, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_schedule_plan_all(&plan, &g, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_executor_create(&ex, m, &g, be, plan, NULL, &e), RM_OK, "%s", e.msg);
    size_t fixed = rm_executor_fixed_bytes(ex);
    rm_executor_free(ex);
    rm_backend_free(be);
    rm_plan_free(plan);
    rm_graph_free(&g);
    return fixed;
}

Test(footprint, parts_are_what_executor_and_optimizer_allocate)
{
    const char *models[] = {"vgg-tiny", "resnet-tiny", "unet-tiny"};
    rm_optim_options opts[3] = {rm_optim_options_default(RM_OPTIM_SGD), rm_optim_options_default(RM_OPTIM_SGD),
                                rm_optim_options_default(RM_OPTIM_ADAM)};
    opts[1].momentum = 0;
    const size_t state_floats[3] = {1, 0, 2}; /* momentum; none; Adam's m and v */
    for (size_t k = 0; k < 3; k++) {
        rm_model *m = load(models[k]);
        const int batch = 3;
        const size_t P = m->param_count;
        size_t ws = 0;
        rm_err e = {RM_OK, ""};
        cr_assert_eq(rm_executor_workspace_needed(&ws, m, batch, &e), RM_OK, "%s", e.msg);
        size_t allocated = executor_fixed(m, batch);
        for (size_t o = 0; o < 3; o++) {
            rm_footprint f;
            cr_assert_eq(rm_footprint_of(&f, m, batch, &opts[o], NULL, &e), RM_OK, "%s", e.msg);
            cr_assert_eq(f.weights, rm_align_up(4 * P), "%s", models[k]);
            cr_assert_eq(f.grads, rm_align_up(4 * P));
            cr_assert_eq(f.optim, rm_align_up(4 * P * state_floats[o]), "%s optimizer %zu", models[k], o);
            cr_assert_eq(f.buffers, rm_align_up(4 * m->buffer_count));
            cr_assert_eq(f.labels, rm_align_up(4 * rm_model_label_count(m, batch)));
            cr_assert_eq(f.workspace, rm_align_up(ws));
            cr_assert_gt(f.workspace, 0, "%s: convolutions need scratch", models[k]);
            cr_assert_eq(f.backend, 0);
            cr_assert_eq(f.total, f.weights + f.grads + f.optim + f.buffers + f.labels + f.workspace);
            /* The executor allocates all of it but the optimizer's state. */
            cr_assert_eq(allocated, f.total - f.optim, "%s: the executor allocates %zu, the footprint says %zu",
                         models[k], allocated, f.total - f.optim);
        }
        rm_model_free(m);
    }
}

/* The line of the last command's stdout that starts with prefix (after
 * leading spaces), copied into out. */
static void line_of(char *out, size_t len, const char *prefix)
{
    fflush(stdout);
    char *t = cf_text(cf_path("stdout"));
    const char *hit = NULL;
    for (char *l = t; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *q = l;
        while (*q == ' ') q++;
        if (!strncmp(q, prefix, strlen(prefix))) hit = q; /* the last one: the latest command's */
    }
    cr_assert_not_null(hit, "no line starts with '%s'", prefix);
    size_t n = strcspn(hit, "\n");
    cr_assert_lt(n, len);
    memcpy(out, hit, n);
    out[n] = 0;
    free(t);
}

TestSuite(footprint_cli, .init = cf_setup, .fini = cf_teardown);

Test(footprint_cli, every_command_prints_the_same_fixed_bytes_and_peak)
{
    const char *model = CF_MODEL("resnet-tiny.cfg");
    rm_model *m = load("resnet-tiny");
    rm_err e = {RM_OK, ""};
    rm_optim_options sgd = rm_optim_options_default(RM_OPTIM_SGD);
    rm_footprint f;
    rm_problem *p = NULL;
    rm_schedule *s = NULL;
    rm_sim_result r;
    cr_assert_eq(rm_training_problem(&p, &f, m, 8, &sgd, NULL, NULL, RM_COST_SAME_BATCH, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    const size_t peak = f.total + r.peak_bytes;
    rm_schedule_free(s);
    rm_problem_free(p);
    rm_model_free(m);

    char fixed[512], line[512], want[128], num[64];
    cr_assert_eq(cf_remat("graph", "--model", model, "--batch", "8", NULL), 0, "%s", cf_err);
    line_of(fixed, sizeof fixed, "fixed        ");
    rm_cli_bytes(num, sizeof num, (double)f.total);
    snprintf(want, sizeof want, "fixed        %s = weights", num);
    cr_assert(strstr(fixed, want), "graph: '%s' lacks '%s'", fixed, want);
    line_of(line, sizeof line, "peak ");
    snprintf(want, sizeof want, "(%s bytes) without rematerialization", rm_cli_group_digits(num, sizeof num, peak));
    cr_assert(strstr(line, want), "graph: '%s' lacks '%s'", line, want);

    /* plan, explain and train: the same fixed line and no-remat peak. */
    char pk[64];
    rm_cli_bytes(pk, sizeof pk, (double)peak);
    cr_assert_eq(
        cf_remat("plan", "--model", model, "--batch", "8", "--budget", "100%", "--strategy", "checkpoint_all", NULL), 0,
        "%s", cf_err);
    line_of(line, sizeof line, "fixed        ");
    cr_assert_str_eq(line, fixed, "plan");
    snprintf(want, sizeof want, "no-remat     %s peak", pk);
    cr_assert(cf_said(0, want), "plan does not say '%s'", want);
    cr_assert_eq(
        cf_remat("explain", "--model", model, "--batch", "8", "--budget", "100%", "--strategy", "checkpoint_all", NULL),
        0, "%s", cf_err);
    line_of(line, sizeof line, "fixed        ");
    cr_assert_str_eq(line, fixed, "explain");
    snprintf(want, sizeof want, "the step peaks at %s", pk);
    cr_assert(cf_said(0, want), "explain does not say '%s'", want);
    cr_assert_eq(cf_remat("train", "--model", model, "--data", "synthetic", "--samples", "32", "--batch", "8",
                          "--budget", "100%", "--strategy", "checkpoint_all", "--steps", "1", NULL),
                 0, "%s", cf_err);
    line_of(line, sizeof line, "fixed        ");
    cr_assert_str_eq(line, fixed, "train");
    snprintf(want, sizeof want, "no-remat     %s peak", pk);
    cr_assert(cf_said(0, want), "train does not say '%s'", want);

    /* maxbatch: the peak is exactly where batch 8 stops fitting. */
    char budget[32];
    snprintf(budget, sizeof budget, "%zuB", peak);
    cr_assert_eq(cf_remat("maxbatch", "--model", model, "--budget", budget, "--strategies", "checkpoint_all", NULL), 0,
                 "%s", cf_err);
    line_of(line, sizeof line, "checkpoint_all ");
    cr_assert_eq(atoi(line + strlen("checkpoint_all")), 8, "maxbatch at the batch-8 peak: '%s'", line);
    snprintf(budget, sizeof budget, "%zuB", peak - 1);
    cr_assert_eq(cf_remat("maxbatch", "--model", model, "--budget", budget, "--strategies", "checkpoint_all", NULL), 0,
                 "%s", cf_err);
    line_of(line, sizeof line, "checkpoint_all ");
    cr_assert_eq(atoi(line + strlen("checkpoint_all")), 7, "maxbatch a byte below the batch-8 peak: '%s'", line);
}

/* Issue 13: two convolutions of 2^60 weights each wrapped the fixed bytes
 * (4 bytes x 3 copies of 2^61 weights) around 2^64: `remat graph` printed
 * "fixed 80.00 MiB = weights 8388608.00 TiB + ...", and every command used
 * that 80 MiB. The footprint is now refused, by every command alike; a
 * config whose activations pass 2^62 bytes is refused the same way. */
Test(footprint_cli, fixed_bytes_that_would_wrap_are_refused)
{
    const char *cfg = cf_path("huge-weights.cfg");
    cf_write(cfg, "[net]\nchannels=1048576\nheight=1\nwidth=1\n"
                  "[conv]\nfilters=1048576\nsize=1024\npad=512\n"
                  "[conv]\nfilters=1048576\nsize=1024\npad=512\n"
                  "[global_avgpool]\n[linear]\nout=2\n[softmax_xent]\n");
    char want[512];
    const char *cmds[][12] = {
        {"graph", "--model", cfg, "--batch", "1", NULL},
        {"plan", "--model", cfg, "--batch", "1", "--budget", "1GiB", "--strategy", "ogc", NULL},
        {"maxbatch", "--model", cfg, "--budget", "1GiB", NULL},
        {"train", "--model", cfg, "--data", "synthetic", "--batch", "1", "--budget", "1GiB", "--steps", "1", NULL},
    };
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        snprintf(want, sizeof want,
                 "remat %s: %s at batch 1: the fixed memory (weights, gradients, optimizer state, batchnorm "
                 "statistics, labels, workspace) adds up to more than 2^62 bytes (4 EiB), more than any device holds\n",
                 cmds[k][0], cfg);
        cr_assert_eq(cf_remat_args(cmds[k]), 1, "%s", cmds[k][0]);
        cr_assert_str_eq(cf_err, want);
    }
    /* Activations: 40 ReLUs of 2^42 elements at batch 60000 (2^60 bytes
     * each) pass 2^62 by the fourth; within the trace's per-tensor limit. */
    const char *wide = cf_path("huge-activations.cfg");
    cf_write(wide, "[net]\nchannels=16384\nheight=16384\nwidth=16384\n[repeat]\ncount=40\n[relu]\n[end]\n"
                   "[global_avgpool]\n[linear]\nout=2\n[softmax_xent]\n");
    cr_assert_eq(cf_remat("plan", "--model", wide, "--batch", "60000", "--budget", "1GiB", "--strategy", "ogc", NULL),
                 1);
    snprintf(want, sizeof want,
             "remat plan: %s at batch 60000: problem: the fixed bytes and the outputs up to node 4 (repeat1.3.relu1) "
             "add up to more than 2^62 bytes (4 EiB), more than any device holds\n",
             wide);
    cr_assert_str_eq(cf_err, want);
}
