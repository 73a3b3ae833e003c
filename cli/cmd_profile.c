/* `remat profile`: times every node of a model's training step on a device
 * (train/profile.c does the measuring) and writes the cost file that `plan`,
 * `maxbatch` and `train --costs` accept in place of FLOPs. It also shows
 * what FLOPs miss: the slowest nodes, the forward/backward split, and per
 * layer kind the share of time against the share of FLOPs, so a person can
 * see which layers the FLOP model under- or over-prices. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "builder.h"
#include "cli_util.h"
#include "commands.h"
#include "footprint.h"
#include "layer.h"
#include "problem.h"
#include "profile.h"
#include "report.h"

#define PROFILE_USAGE                                                                                                  \
    "usage: remat profile --model FILE --batch N [--device cpu|cuda] [--reps R] [--warmup W]\n"                        \
    "                     [--out FILE] [--top K] [--seed S] [--kernels K] [--threads N]\n"                             \
    "                     [--quiet] (--onnx FILE [--loss L] [--init I] in place of --model FILE)\n"                    \
    "\n"                                                                                                               \
    "Measures how long each node of a training step takes (every forward, loss, backward and gradient-sum\n"           \
    "node of the training graph, as `remat graph` lists them) and writes a cost file\n"                                \
    "(docs/cost-format.md) that `remat plan`, `remat maxbatch` and `remat train` take with --costs FILE,\n"            \
    "so the schedule minimises the recomputed time rather than recomputed FLOPs.\n"                                    \
    "\n"                                                                                                               \
    "It runs W untimed warm-up steps, then R timed steps of the checkpoint-all plan (every node computed\n"            \
    "once) on random data; a node's cost is the median of its R times. On the CPU a node is timed with\n"              \
    "the monotonic clock around its kernels; on CUDA with device events on the stream around its launches.\n"          \
    "Prints the slowest nodes, the forward/backward totals and, per layer kind, its share of the time\n"               \
    "against its share of the FLOPs.\n"                                                                                \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --model FILE     model config (models/*.cfg)\n" RM_CLI_MODEL_USAGE(                                             \
        "     ") "  --batch N        batch size to profile at (1 to 2^30); the cost file is for this batch\n"          \
                 "  --device D       cpu (default) or cuda (GPU 0)\n" RM_CLI_BACKEND_OPTIONS_HELP                      \
                 "  --reps R         timed steps (default 10)\n"                                                       \
                 "  --warmup W       untimed steps first (default 3)\n"                                                \
                 "  --out FILE       the cost file (default MODEL-bN-DEVICE.costs in the current folder)\n"            \
                 "  --top K          how many of the slowest nodes to list (default 10)\n"                             \
                 "  --seed S         parameters and the random batch (default 1)\n"                                    \
                 "  --quiet          no progress on stderr\n"                                                          \
                 "\n"                                                                                                  \
                 "example:\n"                                                                                          \
                 "  remat profile --model models/vgg-tiny.cfg --batch 8 --out vgg-tiny.costs\n"                        \
                 "  remat plan --model models/vgg-tiny.cfg --batch 8 --budget 97% --strategy milp --costs "            \
                 "vgg-tiny.costs"

#define usage_error(...) rm_cli_usage_error("profile", PROFILE_USAGE, __VA_ARGS__)

/* The example's budget, in percent of the no-remat peak of the training
 * problem of m traced as g (as `remat plan` accounts it): halfway between
 * the least any schedule needs and that peak, rounded up, so that it fits
 * and needs rematerialization (a fixed 70% was below what VGG-tiny needs at
 * batch 8: 93%). 90 when the facts cannot be had. */
static int example_percent(const rm_model *m, const rm_graph *g)
{
    rm_problem *p = NULL;
    rm_problem_report r;
    rm_footprint fp;
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_SGD);
    rm_err e = {RM_OK, ""};
    int pct = 90;
    if (!rm_training_problem_of(&p, &fp, m, g, &o, NULL, NULL, RM_COST_SAME_BATCH, &e) &&
        !rm_problem_report_of(&r, p, &e) && r.noremat_total > 0) {
        double lo = 100.0 * (double)(p->fixed_bytes + r.lower_bound) / (double)r.noremat_total;
        pct = (int)ceil((lo + 100.0) / 2);
        if (pct > 99) pct = 99;
    }
    rm_problem_free(p);
    return pct;
}

#define MAX_KINDS 64

static void progress(void *ctx, int timed, int step, int steps)
{
    (void)ctx;
    /* One line per phase: a step takes milliseconds on the tiny models. */
    if (step == 1)
        rm_text_fprintf(stderr, "remat profile: %s %d step%s\n", timed ? "timing" : "warming up with", steps,
                        steps == 1 ? "" : "s");
}

static const char *op_word(rm_node_op op)
{
    switch (op) {
    case RM_OP_INPUT:
        return "input";
    case RM_OP_FORWARD:
        return "forward";
    case RM_OP_BACKWARD:
        return "backward";
    case RM_OP_GRAD_SUM:
        return "grad-sum";
    }
    return "?";
}

/* "conv forward", "relu backward", "grad-sum", "input". */
static void kind_of(char *buf, size_t len, const rm_model *m, const rm_graph_node *nd)
{
    if (nd->op == RM_OP_INPUT || nd->op == RM_OP_GRAD_SUM || nd->layer < 0 || nd->layer >= m->nlayers)
        snprintf(buf, len, "%s", op_word(nd->op));
    else
        snprintf(buf, len, "%s %s", m->layers[nd->layer].desc->name, op_word(nd->op));
}

static const char *gflops(char *buf, size_t len, double flops, double s)
{
    if (s > 0 && flops > 0)
        snprintf(buf, len, "%.2f", flops / s / 1e9);
    else
        snprintf(buf, len, "-");
    return buf;
}

typedef struct kind_row {
    char name[80];
    int nodes;
    double seconds, flops;
} kind_row;

typedef struct node_time {
    int v;
    double seconds;
} node_time;

/* Slowest first; ties in node order, so the table is stable. */
static int by_time_desc(const void *a, const void *b)
{
    const node_time *x = a, *y = b;
    if (x->seconds != y->seconds) return (x->seconds < y->seconds) - (x->seconds > y->seconds);
    return (x->v > y->v) - (x->v < y->v);
}

static int kind_by_time_desc(const void *a, const void *b)
{
    double x = ((const kind_row *)a)->seconds, y = ((const kind_row *)b)->seconds;
    return (x < y) - (x > y);
}

static void print_report(const rm_profile *p, const rm_model *m, const char *model_path, int top)
{
    const rm_graph *g = &p->g;
    double tot_s = 0, tot_f = 0, fw_s = 0, fw_f = 0, bw_s = 0, bw_f = 0;
    int nf = 0, nb = 0;
    for (int v = 0; v < g->n; v++) {
        const rm_graph_node *nd = &g->nodes[v];
        tot_s += p->seconds[v];
        tot_f += nd->flops;
        if (nd->tag == RM_TAG_BACKWARD)
            bw_s += p->seconds[v], bw_f += nd->flops, nb++;
        else
            fw_s += p->seconds[v], fw_f += nd->flops, nf++;
    }
    char a[32], b[32], c[32], d[32];
    rm_text_fprintf(stdout, "model        %s at batch %d: %d nodes\n", model_path, g->batch, g->n);
    printf("device       %s: %s; %d warm-up step%s, then %d timed: each node's cost is its median\n", p->device,
           p->settings, p->warmup, p->warmup == 1 ? "" : "s", p->reps);
    printf("step         %s (median, host clock) = nodes %s + the executor's own work (frees, loss copy)\n",
           rm_cli_seconds(a, sizeof a, p->step_median), rm_cli_seconds(b, sizeof b, tot_s));
    printf("forward      %s for %s (%d nodes, loss included): %s GFLOP/s\n", rm_cli_seconds(a, sizeof a, fw_s),
           rm_cli_flops(b, sizeof b, fw_f), nf, gflops(c, sizeof c, fw_f, fw_s));
    printf("backward     %s for %s (%d nodes): %s GFLOP/s; backward/forward time %.2fx, FLOPs %.2fx\n",
           rm_cli_seconds(a, sizeof a, bw_s), rm_cli_flops(b, sizeof b, bw_f), nb, gflops(c, sizeof c, bw_f, bw_s),
           fw_s > 0 ? bw_s / fw_s : 0.0, fw_f > 0 ? bw_f / fw_f : 0.0);

    node_time *order = malloc((size_t)g->n * sizeof *order);
    kind_row *kinds = calloc(MAX_KINDS, sizeof *kinds);
    if (!order || !kinds) {
        free(order);
        free(kinds);
        return;
    }
    for (int v = 0; v < g->n; v++) order[v] = (node_time){v, p->seconds[v]};
    qsort(order, (size_t)g->n, sizeof *order, by_time_desc);
    if (top > g->n) top = g->n;
    printf("\nThe %d slowest nodes (time: median; spread: fastest..slowest of the timed steps)\n", top);
    printf("%5s  %-24s %-20s %10s %21s %8s %11s %7s\n", "node", "name", "kind", "time", "spread", "share", "FLOPs",
           "GFLOP/s");
    for (int k = 0; k < top; k++) {
        int v = order[k].v;
        const rm_graph_node *nd = &g->nodes[v];
        char kind[80], spread[48];
        kind_of(kind, sizeof kind, m, nd);
        snprintf(spread, sizeof spread, "%s..%s", rm_cli_seconds(b, sizeof b, p->lo[v]),
                 rm_cli_seconds(c, sizeof c, p->hi[v]));
        char fl[32];
        printf("%5d  %-24.24s %-20.20s %10s %21s %7.1f%% %11s %7s\n", v, rm_name_shown_of(nd->name).s, kind,
               rm_cli_seconds(a, sizeof a, p->seconds[v]), spread, tot_s > 0 ? 100.0 * p->seconds[v] / tot_s : 0.0,
               rm_cli_flops(fl, sizeof fl, nd->flops), gflops(d, sizeof d, nd->flops, p->seconds[v]));
    }

    int nk = 0;
    for (int v = 0; v < g->n; v++) {
        char kind[80];
        kind_of(kind, sizeof kind, m, &g->nodes[v]);
        int k = 0;
        while (k < nk && strcmp(kinds[k].name, kind)) k++;
        if (k == nk) {
            if (nk == MAX_KINDS) continue;
            snprintf(kinds[nk++].name, sizeof kinds[0].name, "%s", kind);
        }
        kinds[k].nodes++;
        kinds[k].seconds += p->seconds[v];
        kinds[k].flops += g->nodes[v].flops;
    }
    qsort(kinds, (size_t)nk, sizeof *kinds, kind_by_time_desc);
    printf("\nBy layer kind: share of the time against share of the FLOPs. 'time/FLOP' is the first over the\n"
           "second: above 1 the FLOP cost model underprices the kind (memory-bound, or small kernels), below 1\n"
           "it overprices it; a FLOP-free kind ('-') is invisible to the FLOP model altogether.\n");
    printf("%-22s %5s %10s %7s %8s %7s %9s\n", "kind", "nodes", "time", "time%", "FLOPs%", "GFLOP/s", "time/FLOP");
    for (int k = 0; k < nk; k++) {
        const kind_row *r = &kinds[k];
        double ts = tot_s > 0 ? r->seconds / tot_s : 0, fs = tot_f > 0 ? r->flops / tot_f : 0;
        char ratio[16] = "-";
        /* The input's FLOPs are nominal (one per element, docs/config-format.md): no rate to compare. */
        if (fs > 0 && strcmp(r->name, "input")) snprintf(ratio, sizeof ratio, "%.2f", ts / fs);
        printf("%-22s %5d %10s %6.1f%% %7.1f%% %7s %9s\n", r->name, r->nodes, rm_cli_seconds(a, sizeof a, r->seconds),
               100.0 * ts, 100.0 * fs, gflops(b, sizeof b, r->flops, r->seconds), ratio);
    }
    free(order);
    free(kinds);
}

static int profile_run(int argc, char **argv)
{
    rm_cli_model mdl;
    memset(&mdl, 0, sizeof mdl);
    const char *model = NULL, *batch = NULL, *device = NULL, *reps = NULL, *warmup = NULL, *out = NULL, *top = NULL,
               *seed = NULL, *kernels = NULL, *cpu_kernels = NULL, *threads = NULL;
    int quiet = 0;
    const rm_cli_opt opts[] = {
        RM_CLI_FLAG("--quiet", "-q", &quiet), RM_CLI_MODEL_OPTIONS(&mdl),
        RM_CLI_VALUE("--batch", &batch),      RM_CLI_VALUE("--device", &device),
        RM_CLI_VALUE("--reps", &reps),        RM_CLI_VALUE("--warmup", &warmup),
        RM_CLI_VALUE("--out", &out),          RM_CLI_VALUE("--top", &top),
        RM_CLI_VALUE("--seed", &seed),        RM_CLI_VALUE("--cpu-kernels", &cpu_kernels),
        RM_CLI_VALUE("--kernels", &kernels),  RM_CLI_VALUE("--threads", &threads),
    };
    if (rm_cli_parse_options(opts, sizeof opts / sizeof opts[0], argc, argv, "profile", PROFILE_USAGE) ||
        rm_cli_model_check(&mdl, "profile", PROFILE_USAGE))
        return 1;
    model = mdl.path;
    if (!model) return usage_error("--model FILE is required (or --onnx FILE)");
    if (!batch) return usage_error("--batch N is required (the cost file is for one batch size)");
    rm_profile_options o;
    memset(&o, 0, sizeof o);
    long v;
    char why[256];
    if (rm_cli_parse_batch(&v, batch, why, sizeof why)) return usage_error("%s", why);
    o.batch = (int)v;
    o.reps = 10, o.warmup = 3, o.seed = 1;
    if (reps) {
        if (rm_cli_parse_long(&v, reps, 1, 100000)) return usage_error("--reps must be an integer from 1 to 100000");
        o.reps = (int)v;
    }
    if (warmup) {
        if (rm_cli_parse_long(&v, warmup, 0, 100000))
            return usage_error("--warmup must be an integer from 0 to 100000");
        o.warmup = (int)v;
    }
    long ntop = 10;
    if (top && rm_cli_parse_long(&ntop, top, 0, 1000000)) return usage_error("--top must be an integer >= 0");
    if (seed) {
        if (rm_cli_parse_long(&v, seed, 0, 2147483647L))
            return usage_error("--seed must be an integer from 0 to 2147483647, got '%s'", seed);
        o.seed = (uint64_t)v;
    }
    if (rm_cli_parse_device(&o.device, device, why, sizeof why) ||
        rm_cli_parse_backend_options(&o.backend, kernels, cpu_kernels, threads, o.device, why, sizeof why))
        return usage_error("%s", why);
    if (!quiet) o.progress = progress;

    rm_err e = {RM_OK, ""};
    rm_model *m = NULL;
    int lrc = rm_cli_model_load(&m, "profile", &mdl, 0, 0, NULL);
    if (lrc) return lrc;
    char name[RM_NAME_LEN];
    rm_cost_model_name(name, sizeof name, model);
    char path[512];
    if (out)
        snprintf(path, sizeof path, "%s", out);
    else
        snprintf(path, sizeof path, "%s-b%d-%s.costs", name, o.batch, rm_backend_kind_name(o.device));
    /* Written after the measurement: a path that cannot be written fails now. */
    if (rm_atomic_probe(path, &e)) {
        rm_text_fprintf(stderr, "remat profile: %s\n", e.msg);
        rm_model_free(m);
        return 1;
    }
    if (!quiet)
        rm_text_fprintf(stderr, "remat profile: %s at batch %d on %s: %d warm-up and %d timed steps\n", model, o.batch,
                        rm_backend_kind_name(o.device), o.warmup, o.reps);
    rm_profile *pr = NULL;
    rm_cost_file *cf = NULL;
    int rc = rm_profile_run(&pr, m, &o, &e);
    if (!rc) rc = rm_profile_cost_file(&cf, pr, name, &e);
    if (!rc) {
        char how[256], a[32];
        snprintf(how, sizeof how,
                 "measured by remat profile on %s: median of %d timed steps after %d warm-up steps\n"
                 "step median %s (host clock; the nodes' sum excludes the executor's own work)",
                 pr->device, pr->reps, pr->warmup, rm_cli_seconds(a, sizeof a, pr->step_median));
        rc = rm_cost_file_write(cf, path, how, &e);
    }
    if (rc) {
        rm_text_fprintf(stderr, "remat profile: %s\n", e.msg);
        rm_cost_file_free(cf);
        rm_profile_free(pr);
        rm_model_free(m);
        return rc == RM_ERR_NOMEM || rc == RM_ERR_DEVICE ? 2 : 1;
    }
    print_report(pr, m, model, (int)ntop);
    printf("\nwrote        %s: use it with --costs, e.g.\n"
           "             remat plan %s %s%s%s --batch %d --budget %d%% --strategy lp_round --costs %s\n",
           path, mdl.onnx ? "--onnx" : "--model", model, mdl.loss ? " --loss " : "", mdl.loss ? mdl.loss : "", o.batch,
           example_percent(m, &pr->g), path);
    rm_cost_file_free(cf);
    rm_profile_free(pr);
    rm_model_free(m);
    return 0;
}

const rm_command rm_cmd_profile = {
    .name = "profile",
    .summary = "time every node of a training step and write a cost file for --costs",
    .usage = PROFILE_USAGE,
    .run = profile_run,
};
