/* `remat train`: trains a model from its config under a memory budget by
 * executing a rematerialization schedule (train/trainer.c does the work).
 * This file parses the options, prints the summary of what will run (the
 * budget against the no-remat peak, the schedule's peak and overhead), a
 * progress bar on stderr, and one line per epoch and evaluation on stdout. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_util.h"
#include "clock.h"
#include "comm.h"
#include "commands.h"
#include "resident.h"
#include "trainer.h"

#define TRAIN_USAGE                                                                                                    \
    "usage: remat train --model FILE --data DIR|synthetic --budget B [--batch N|auto] [--strategy NAME]\n"             \
    "                   [--accum K] [--epochs E] [--steps N] [--optimizer sgd|adam] [--lr X] [--momentum M]\n"         \
    "                   [--weight-decay W] [--lr-schedule constant|step|cosine] [--seed S]\n"                          \
    "                   [--snapshot FILE] [--resume FILE] [--schedule-cache DIR] [--eval-every K]\n"                   \
    "                   [--time-limit S] [--node-limit N] [--samples N] [--train-accuracy-every K]\n"                  \
    "                   [--milp-engine E] [--device cpu|cuda] [--kernels K] [--threads N] [--costs FILE]\n"            \
    "                   [--quiet] (--onnx FILE [--loss L] [--init I] in place of --model FILE)\n"                      \
    "\n"                                                                                                               \
    "Trains the model on the CPU (or the GPU, --device cuda) within a memory budget. The fixed memory\n"               \
    "(weights, gradients, optimizer state, batchnorm statistics, labels, the layers' workspace) comes off\n"           \
    "the budget first; the rest is for activations, and a rematerialization schedule decides which of\n"               \
    "them to keep and which to recompute so that a training step fits. The arithmetic is that of plain\n"              \
    "training: a step under any schedule gives bit-identical gradients. Prints a summary (the no-remat\n"              \
    "peak, the budget, the schedule's peak and extra compute), a progress bar on stderr, and after every\n"            \
    "epoch the training loss and accuracy and those on the held-out data. It closes with what it\n"                    \
    "measured: the arena's high-water mark plus the fixed bytes as allocated, beside the plan's peak and\n"            \
    "the budget; on the CPU, how much the process's resident memory grew from just before the training\n"              \
    "memory was allocated to its peak (the kernel's count: /proc/self/status); and the median step time.\n"            \
    "\n"                                                                                                               \
    "Data parallel: `mpirun -np N remat train ...` runs N ranks; each trains its slice of every batch\n"               \
    "(--batch is the global batch) within its own --budget, rank 0 solves the schedule and prints, and\n"              \
    "the gradients are averaged over the ranks while the backward pass runs. Give each rank its share of\n"            \
    "the cores (--threads). With --device cuda each rank takes the GPU of its rank on its machine, and\n"              \
    "NCCL sums the gradients (REMAT_DP_NCCL=0: through host memory over MPI).\n"                                       \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --model FILE          model config (models/*.cfg)\n" RM_CLI_MODEL_USAGE(                                        \
        "          ") "  --data DIR            MNIST, CIFAR-10, an image folder or image/mask pairs "                  \
                      "(docs/data-formats.md); its\n"                                                                  \
                      "                        test split (val/ or test/) is held out, else a seeded 10% of it\n"      \
                      "  --data synthetic      generated data matching the model: classification for softmax_xent "    \
                      "models,\n"                                                                                      \
                      "                        segmentation for pixel_softmax_xent; a fifth of it held out\n"          \
                      "  --samples N           synthetic training samples (default max(2048, 8 x batch))\n"            \
                      "  --budget B            TOTAL device memory, fixed bytes included: 16GiB, 512MiB, 1.5e9, or "   \
                      "a\n"                                                                                            \
                      "                        percentage of the no-remat peak at the batch (75%); a number without "  \
                      "a\n"                                                                                            \
                      "                        unit is bytes, at least 1000000\n"                                      \
                      "  --batch N|auto        batch size (default 32, at most 2^30); auto: the largest batch the "    \
                      "strategy\n"                                                                                     \
                      "                        fits in the budget, and no more than the training samples "             \
                      "(--samples);\n"                                                                                 \
                      "                        the max-batch search of `remat maxbatch`; needs an amount, not a %\n"   \
                      "  --accum K             split each batch into K micro-batches, one after the other, and step\n" \
                      "                        the optimizer once on their averaged gradients (default 1): the "       \
                      "budget\n"                                                                                       \
                      "                        and the schedule are a micro-batch's, so K times the batch fits; "      \
                      "with\n"                                                                                         \
                      "                        auto, the largest micro-batch times K\n"                                \
                      "  --strategy NAME       best (default: every heuristic, then the anneal and the MILP, the "     \
                      "cheapest\n"                                                                                     \
                      "                        that fits), or checkpoint_all, chen_sqrtn, chen_greedy, griewank, "     \
                      "ap_sqrtn,\n"                                                                                    \
                      "                        ap_greedy, linearized_sqrtn, linearized_greedy, ogc, dtr, lp_round, "   \
                      "milp, anneal\n"                                                                                 \
                      "  --costs FILE          the schedule minimises profiled seconds (`remat profile`, "             \
                      "docs/cost-format.md)\n"                                                                         \
                      "                        instead of FLOPs; the file must be the model's at this batch (with "    \
                      "--batch\n"                                                                                      \
                      "                        auto, scaled linearly to each batch tried)\n"                           \
                      "  --time-limit S        wall-clock seconds for the solve, whatever the strategy (default 60; "  \
                      "0 = none)\n"                                                                                    \
                      "  --node-limit N        branch-and-bound nodes for milp (deterministic; default "               \
                      "none)\n" RM_CLI_MILP_ENGINE_HELP(                                                               \
                          "       ") "  --schedule-cache DIR  keep solved schedules in DIR, keyed by the problem, "    \
                                     "budget and "                                                                     \
                                     "strategy; a\n"                                                                   \
                                     "                        cached one is re-checked by the simulator before it is " \
                                     "used; a link "                                                                   \
                                     "or FIFO\n"                                                                       \
                                     "                        planted under an entry's name is replaced, never "       \
                                     "followed\n"                                                                      \
                                     "  --epochs E            passes over the training data (default 1)\n"             \
                                     "  --steps N             stop once N steps in all are done (a resumed run "       \
                                     "counts from 0 too)\n"                                                            \
                                     "  --optimizer NAME      sgd (default, momentum 0.9) or adam\n"                   \
                                     "  --lr X                learning rate (default 0.05 for sgd, 0.001 for adam; > " \
                                     "0, at most "                                                                     \
                                     "3.4e38)\n"                                                                       \
                                     "  --momentum M          SGD momentum (default 0.9)\n"                            \
                                     "  --weight-decay W      L2 weight decay of conv and linear weights (default "    \
                                     "0)\n"                                                                            \
                                     "  --lr-schedule KIND    constant (default), step (x0.1 after each third of the " \
                                     "run) or "                                                                        \
                                     "cosine\n"                                                                        \
                                     "  --seed S              parameters, dropout, synthetic data, split and batch "   \
                                     "order (default "                                                                 \
                                     "1)\n"                                                                            \
                                     "  --snapshot FILE       save (atomically) after every epoch and when the run "   \
                                     "stops\n"                                                                         \
                                     "                        (--checkpoint FILE is an older name for it)\n"           \
                                     "  --resume FILE         continue a saved run exactly where it stopped (same "    \
                                     "data, batch, "                                                                   \
                                     "epochs and\n"                                                                    \
                                     "                        optimizer options; the seed is taken from the file)\n"   \
                                     "  --eval-every K        also evaluate on the held-out data every K steps\n"      \
                                     "  --train-accuracy-every K  measure training accuracy on every K-th step "       \
                                     "(default 4; 0 = "                                                                \
                                     "never): each\n"                                                                  \
                                     "                        measurement replays that step's forward pass\n"          \
                                     "  --device cpu|cuda     where training runs (default cpu); cuda: GPU 0, with "   \
                                     "the budget in "                                                                  \
                                     "its memory\n" RM_CLI_BACKEND_OPTIONS_HELP                                        \
                                     "  --quiet               no progress bar or solver log on stderr\n"               \
                                     "\n"                                                                              \
                                     "examples:\n"                                                                     \
                                     "  remat train --model models/resnet-tiny.cfg --data synthetic --batch 32 "       \
                                     "--budget 75% "                                                                   \
                                     "--strategy milp\n"                                                               \
                                     "  remat train --model models/vgg-tiny.cfg --data cifar10/ --batch auto "         \
                                     "--budget 64MiB "                                                                 \
                                     "--epochs 10 \\\n"                                                                \
                                     "              --lr-schedule cosine --snapshot vgg.snap"

#define usage_error(...) rm_cli_usage_error("train", TRAIN_USAGE, __VA_ARGS__)

typedef struct progress {
    int quiet, tty;
    double last_draw;
    int bar_open; /* a \r-redrawn line is on the terminal */
    /* What the closing lines report: the resident size just before the
     * training memory was allocated (measured: the kernel's peak restarted
     * there), and each step's seconds (until an allocation fails: the
     * report then covers the steps recorded). */
    int measured;
    size_t resident_before;
    double *step_s, last_elapsed;
    size_t nsteps, cap;
} progress;

static void hms(char *buf, size_t len, double s)
{
    if (!(s >= 0) || s > 1e8) {
        snprintf(buf, len, "--:--");
        return;
    }
    long v = (long)(s + 0.5);
    if (v >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", v / 3600, v / 60 % 60, v % 60);
    else
        snprintf(buf, len, "%ld:%02ld", v / 60, v % 60);
}

static void close_bar(progress *pr)
{
    if (pr->bar_open) fputc('\n', stderr);
    pr->bar_open = 0;
}

static void print_step(progress *pr, const rm_trainer_event *ev)
{
    if (pr->quiet) return;
    double now = rm_now();
    int end = ev->epoch_step == ev->epoch_steps || ev->step == ev->total_steps;
    /* A terminal gets a bar redrawn at most 10 times a second; a log, a line every tenth of an epoch. */
    if (pr->tty ? !end && now - pr->last_draw < 0.1
                : !end && ev->epoch_step % (ev->epoch_steps >= 10 ? ev->epoch_steps / 10 : 1) != 0)
        return;
    pr->last_draw = now;
    char bar[24], eta[24], acc[24] = "";
    int w = (int)(sizeof bar - 1), fill = (int)((double)w * (double)ev->epoch_step / (double)ev->epoch_steps);
    for (int i = 0; i < w; i++) bar[i] = i < fill ? '#' : '.';
    bar[w] = '\0';
    hms(eta, sizeof eta, ev->eta_s);
    if (ev->running_acc >= 0) snprintf(acc, sizeof acc, "  acc %5.1f%%", 100.0 * ev->running_acc);
    rm_text_fprintf(stderr, "%sepoch %llu/%llu [%s] %lld/%lld  loss %.4f%s  %.0f img/s  ETA %s%s", pr->tty ? "\r" : "",
                    (unsigned long long)ev->epoch + 1, (unsigned long long)ev->epochs, bar, (long long)ev->epoch_step,
                    (long long)ev->epoch_steps, ev->running_loss, acc, ev->images_per_s, eta,
                    pr->tty ? "\033[K" : "\n");
    pr->bar_open = pr->tty;
    fflush(stderr);
}

static void record_step(progress *pr, double elapsed)
{
    if (pr->nsteps == pr->cap) {
        size_t cap = pr->cap ? 2 * pr->cap : 256;
        double *v = realloc(pr->step_s, cap * sizeof *v);
        if (!v) return;
        pr->step_s = v, pr->cap = cap;
    }
    pr->step_s[pr->nsteps++] = elapsed - pr->last_elapsed;
    pr->last_elapsed = elapsed;
}

/* The closing lines: the memory the run measured (its own accounting, and
 * the kernel's count of the process) beside the plan's and the budget, and
 * the median step. So anyone can check the budget's promise on their own
 * model, and bench/vs_pytorch_memory.sh reads them. */
static void print_measured(progress *pr, const rm_trainer *t, int on_host)
{
    const rm_trainer_summary *s = rm_trainer_summary_of(t);
    char a[32], b[32], d[32], f[32], g[32];
    size_t fixed, hw;
    rm_trainer_memory_used(t, &fixed, &hw);
    printf("measured     %s = fixed %s + arena high-water %s (planned %s; budget %s%s)\n",
           rm_cli_bytes(a, sizeof a, (double)(fixed + hw)), rm_cli_bytes(b, sizeof b, (double)fixed),
           rm_cli_bytes(d, sizeof d, (double)hw), rm_cli_bytes(f, sizeof f, (double)(s->fp.total + s->plan_span)),
           rm_cli_bytes(g, sizeof g, (double)s->budget), fixed + hw > s->budget ? ", EXCEEDED" : "");
    size_t now, peak;
    if (!on_host)
        ; /* the process's resident memory is the host's, not the device's the budget is about */
    else if (pr->measured && !rm_resident_read(&now, &peak) && peak >= pr->resident_before)
        printf("resident     %s more at the peak than before the training memory was allocated (the kernel's "
               "count of this process%s)\n",
               rm_cli_bytes(a, sizeof a, (double)(peak - pr->resident_before)), s->ranks > 1 ? ", rank 0" : "");
    else
        printf("resident     not measured: the kernel gives no peak to restart (/proc/self/clear_refs)\n");
    char range[48] = "step 2";
    if (pr->nsteps > 2) snprintf(range, sizeof range, "steps 2-%zu", pr->nsteps);
    if (pr->nsteps >= 2)
        printf("step time    median %.3f s over %s (step 1, which first touches the arena, left out)\n",
               rm_median(pr->step_s + 1, (int)(pr->nsteps - 1)), range);
    else if (pr->nsteps == 1)
        printf("step time    %.3f s (one step)\n", pr->step_s[0]);
}

static void on_event(void *ctx, const rm_trainer_event *ev)
{
    progress *pr = ctx;
    switch (ev->kind) {
    case RM_TRAINER_NOTE:
    case RM_TRAINER_SOLVING:
        /* --quiet drops the solver log, never a note: a note says what the
         * run did differently from what was asked (no held-out split). */
        if (pr->quiet && ev->kind == RM_TRAINER_SOLVING) return;
        close_bar(pr);
        rm_text_fprintf(stderr, "remat train: %s\n", ev->text);
        return;
    case RM_TRAINER_PROBE:
        if (!pr->quiet)
            rm_text_fprintf(stderr, "remat train: --batch auto: batch %d %s\n", ev->batch,
                            ev->fits ? "fits" : "does not fit");
        return;
    case RM_TRAINER_STEP:
        record_step(pr, ev->elapsed_s);
        print_step(pr, ev);
        return;
    case RM_TRAINER_ALLOCATE: {
        size_t peak;
        pr->measured = !rm_resident_reset_peak() && !rm_resident_read(&pr->resident_before, &peak);
        return;
    }
    case RM_TRAINER_EVAL:
    case RM_TRAINER_EPOCH: {
        close_bar(pr);
        char acc[32] = "", held[128] = "";
        if (ev->running_acc >= 0) snprintf(acc, sizeof acc, " acc %5.1f%%", 100.0 * ev->running_acc);
        if (ev->eval.samples > 0)
            snprintf(held, sizeof held, "  held-out loss %.4f acc %5.1f%% (%lld)", ev->eval.loss,
                     100.0 * ev->eval.accuracy, (long long)ev->eval.samples);
        if (ev->kind == RM_TRAINER_EPOCH)
            printf("epoch %llu/%llu  step %llu  train loss %.4f%s%s  %.0f img/s\n", (unsigned long long)ev->epoch + 1,
                   (unsigned long long)ev->epochs, (unsigned long long)ev->step, ev->running_loss, acc, held,
                   ev->images_per_s);
        else
            printf("step %llu (epoch %llu, %lld/%lld)  train loss %.4f%s%s  %.0f img/s\n", (unsigned long long)ev->step,
                   (unsigned long long)ev->epoch + 1, (long long)ev->epoch_step, (long long)ev->epoch_steps,
                   ev->running_loss, acc, held, ev->images_per_s);
        fflush(stdout);
        return;
    }
    case RM_TRAINER_SNAPSHOT:
        close_bar(pr);
        printf("snapshot     %s (step %llu)\n", ev->text, (unsigned long long)ev->step);
        fflush(stdout);
        return;
    }
}

static const char *pct(char *buf, size_t len, size_t part, size_t whole)
{
    snprintf(buf, len, "%.1f%%", whole ? 100.0 * (double)part / (double)whole : 0.0);
    return buf;
}

static void print_summary(const rm_trainer_summary *s, const rm_trainer_config *c, const rm_model *m)
{
    char a[32], b[32], d[32], f[32];
    rm_text_fprintf(stdout, "model        %s: %d layers, input %dx%dx%d, %d classes (%s)%s\n", c->model_path, s->layers,
                    m->input.c, m->input.h, m->input.w, s->classes,
                    s->task == RM_TASK_SEGMENTATION ? "segmentation" : "classification",
                    !c->onnx         ? ""
                    : m->init_params ? ", ONNX: its weights to fine-tune"
                                     : ", ONNX: weights initialised afresh");
    printf("parameters   %s\n", rm_cli_group_digits(a, sizeof a, s->params));
    rm_text_fprintf(stdout, "data         %s: %lld training samples\n", s->train_data, (long long)s->train_samples);
    if (s->held_out_split)
        printf("held out     %lld samples, a seeded split of the same data\n", (long long)s->test_samples);
    else
        printf("held out     %s: %lld samples\n", s->test_data, (long long)s->test_samples);
    char most[96];
    if (s->batch_auto) rm_trainer_batch_limit(most, sizeof most, s->bound_batch, s->search_cap);
    if (s->batch_is_samples)
        printf("batch        %d: as many as the training samples, and %s fits it in the budget (%s)\n", s->batch,
               s->strategy, most);
    else if (s->batch_auto && s->batch >= s->search_cap)
        printf("batch        %d: %s fits it in the budget (%s)\n", s->batch, s->strategy, most);
    else if (s->batch_auto)
        printf("batch        %d: the largest batch %s fits in the budget (%s)\n", s->batch, s->strategy, most);
    else if (s->global_batch == s->batch)
        printf("batch        %d\n", s->batch);
    /* Split: what follows (memory, schedule, evaluation) is one micro-batch's. */
    if (s->global_batch != s->batch)
        printf("%s%d a step = %d rank%s x %d micro-batch%s of %d, their gradients averaged%s%s; the budget and the "
               "schedule below are a micro-batch's\n",
               s->batch_auto ? "             " : "batch        ", s->global_batch, s->ranks, s->ranks == 1 ? "" : "s",
               s->accum, s->accum == 1 ? "" : "es", s->batch, s->ranks > 1 ? " by " : "",
               s->ranks > 1 ? s->transport : "");
    printf("device       %s: %s\n", s->device, s->device_settings);
    rm_cli_print_footprint(stdout, &s->fp, &c->optim);
    printf("no-remat     %s peak = fixed + %s activations, every one kept until its last use (checkpoint-all)\n",
           rm_cli_bytes(a, sizeof a, (double)s->noremat_peak),
           rm_cli_bytes(b, sizeof b, (double)(s->noremat_peak - s->fp.total)));
    printf("budget       %s (%s of the no-remat peak) = fixed + %s for activations%s\n",
           rm_cli_bytes(a, sizeof a, (double)s->budget), pct(b, sizeof b, s->budget, s->noremat_peak),
           rm_cli_bytes(d, sizeof d, (double)(s->budget - s->fp.total)),
           s->budget < s->noremat_peak ? ": training does not fit without rematerialization" : "");
    char how[160];
    if (s->cache == 1)
        snprintf(how, sizeof how, "from the cache %s", s->cache_file);
    else if (s->has_bound)
        snprintf(how, sizeof how, "%s, gap %.1f%%, solved in %.2f s", s->status, 100.0 * s->gap, s->solve_s);
    else
        snprintf(how, sizeof how, "%s, solved in %.2f s", s->status, s->solve_s);
    if (s->source && strcmp(s->source, s->strategy))
        printf("schedule     %s (%s; the schedule %s found)\n", s->strategy, how, s->source);
    else
        printf("schedule     %s (%s)\n", s->strategy, how);
    /* Node sizes are aligned as the plan places them, so the simulated
     * activation peak is the plan's live peak; the span adds fragmentation. */
    const size_t live = s->sched_peak - s->fp.total;
    printf("             peak %s = fixed + %s activations (%s of the no-remat peak)\n",
           rm_cli_bytes(a, sizeof a, (double)s->sched_peak), rm_cli_bytes(b, sizeof b, (double)live),
           pct(d, sizeof d, s->sched_peak, s->noremat_peak));
    printf("             arena %s span = live peak %s + %.2f%% fragmentation\n",
           rm_cli_bytes(f, sizeof f, (double)s->plan_span), rm_cli_bytes(b, sizeof b, (double)live),
           live ? 100.0 * ((double)s->plan_span - (double)live) / (double)live : 0.0);
    if (c->costs)
        printf("             costs: profiled seconds from %s (%s, batch %d%s)\n", c->costs->path, c->costs->device,
               c->costs->batch, c->costs->batch != s->batch ? ", scaled linearly to this batch" : "");
    else
        printf("             costs: FLOPs (traced from the model)\n");
    printf("             compute overhead %+.2f%%: %ld recomputation%s of %d node%s\n",
           rm_overhead_pct(s->cost, s->base_cost), s->recomputations, s->recomputations == 1 ? "" : "s",
           s->recomputed_nodes, s->recomputed_nodes == 1 ? "" : "s");
    if (s->cache == 0 && s->cache_stored)
        printf("             stored in the cache as %s\n", s->cache_file);
    else if (s->cache == 0)
        printf("             not stored in the cache: %s could not be written\n", s->cache_file);
    const char *sched = c->lr_kind == RM_LR_STEP     ? "step (x0.1 after each third)"
                        : c->lr_kind == RM_LR_COSINE ? "cosine"
                                                     : "constant";
    if (c->optim.kind == RM_OPTIM_ADAM)
        printf("optimizer    Adam, lr %g (%s), weight decay %g\n", c->lr, sched, (double)c->optim.weight_decay);
    else
        printf("optimizer    SGD, lr %g (%s), momentum %g, weight decay %g\n", c->lr, sched, (double)c->optim.momentum,
               (double)c->optim.weight_decay);
    printf("run          %llu epoch%s x %lld steps, stopping at step %llu; seed %llu", (unsigned long long)c->epochs,
           c->epochs == 1 ? "" : "s", (long long)s->epoch_steps, (unsigned long long)s->total_steps,
           (unsigned long long)s->seed);
    if (s->start_step) printf("; resumed at step %llu", (unsigned long long)s->start_step);
    printf("\n");
    printf("evaluation   batch %d, forward only, %s of the idle training arena", s->eval_batch,
           rm_cli_bytes(a, sizeof a, (double)s->eval_span));
    if (s->train_accuracy == 1)
        printf("; training accuracy measured on every step");
    else if (s->train_accuracy)
        printf("; training accuracy measured on 1 step in %d", s->train_accuracy);
    printf("\n");
    printf("\n");
    fflush(stdout);
}

static int parse_u64(uint64_t *out, const char *s, long lo)
{
    long v;
    if (rm_cli_parse_long(&v, s, lo, 2000000000L)) return -1;
    *out = (uint64_t)v;
    return 0;
}

/* The command line's values (NULL: not given). */
typedef struct train_args {
    rm_cli_model mdl;
    const char *model, *data, *batch, *budget, *strategy, *epochs, *steps, *optimizer, *lr, *momentum, *wd, *sched,
        *seed, *snap, *resume, *cache, *eval_every, *time_limit, *node_limit, *samples, *acc_every, *device,
        *costs_path, *kernels, *cpu_kernels, *threads, *milp_engine, *accum;
    int quiet;
} train_args;

/* The batch, the budget and the run's length, seed and files. 0, or a usage error's exit code. */
static int config_run(rm_trainer_config *c, const train_args *a)
{
    c->model_path = a->model;
    c->onnx = a->mdl.onnx ? &a->mdl.onnx_opt : NULL;
    c->data = a->data;
    c->strategy = a->strategy ? a->strategy : "best";
    char what[512];
    if (!rm_strategy_find(c->strategy))
        return usage_error("%s", rm_cli_unknown_strategy(what, sizeof what, c->strategy, 0));
    rm_cli_budget bud;
    char why[256];
    if (rm_cli_parse_budget(&bud, a->budget, why, sizeof why)) return usage_error("--budget: %s", why);
    if (bud.percent)
        c->budget_percent = bud.pct;
    else
        c->budget = bud.bytes;
    if (a->batch && !strcmp(a->batch, "auto")) {
        if (bud.percent)
            return usage_error("--batch auto needs --budget as an amount of memory (64MiB), not a percentage: the "
                               "no-remat peak it would refer to grows with the batch");
        c->batch = 0;
    } else if (a->batch) {
        long b;
        if (rm_cli_parse_batch(&b, a->batch, why, sizeof why))
            return usage_error("--batch must be auto or an integer from 1 to %d, got '%s'", RM_MAX_BATCH, a->batch);
        c->batch = (int)b;
    }
    if (a->accum) {
        long k;
        if (rm_cli_parse_long(&k, a->accum, 1, 65536))
            return usage_error("--accum must be an integer from 1 to 65536, got '%s'", a->accum);
        c->accum = (int)k;
    }
    if (a->epochs && parse_u64(&c->epochs, a->epochs, 1))
        return usage_error("--epochs must be an integer from 1 to 2000000000, got '%s'", a->epochs);
    if (a->steps && parse_u64(&c->max_steps, a->steps, 1))
        return usage_error("--steps must be an integer from 1 to 2000000000, got '%s'", a->steps);
    if (a->eval_every && parse_u64(&c->eval_every, a->eval_every, 1))
        return usage_error("--eval-every must be an integer from 1 to 2000000000, got '%s'", a->eval_every);
    if (a->samples) {
        uint64_t n;
        if (parse_u64(&n, a->samples, 1))
            return usage_error("--samples must be an integer from 1 to 2000000000, got '%s'", a->samples);
        if (strcmp(a->data, "synthetic")) return usage_error("--samples is for --data synthetic only");
        c->synthetic_samples = (int64_t)n;
    }
    if (a->seed) {
        long s;
        if (rm_cli_parse_long(&s, a->seed, 0, 2147483647L))
            return usage_error("--seed must be an integer from 0 to 2147483647, got '%s'", a->seed);
        c->seed = (uint64_t)s;
        c->seed_given = 1;
    }
    c->solver.time_limit_s = 60;
    if (a->time_limit && rm_cli_parse_seconds(&c->solver.time_limit_s, a->time_limit))
        return usage_error("--time-limit must be a number of seconds >= 0, got '%s'", a->time_limit);
    if (a->node_limit && rm_cli_parse_long(&c->solver.node_limit, a->node_limit, 1, 2000000000L))
        return usage_error("--node-limit must be an integer >= 1, got '%s'", a->node_limit);
    if (rm_cli_parse_milp_engine(&c->solver.milp_engine, a->milp_engine, why, sizeof why) ||
        rm_cli_parse_device(&c->device, a->device, why, sizeof why) ||
        rm_cli_parse_backend_options(&c->backend, a->kernels, a->cpu_kernels, a->threads, c->device, why, sizeof why))
        return usage_error("%s", why);
    c->snapshot_path = a->snap;
    c->resume_path = a->resume;
    c->cache_dir = a->cache;
    if (a->acc_every) {
        long k;
        if (rm_cli_parse_long(&k, a->acc_every, 0, 1000000000L))
            return usage_error("--train-accuracy-every must be an integer >= 0, got '%s'", a->acc_every);
        c->train_accuracy_every = (int)k;
    }
    return 0;
}

/* The optimizer and its learning-rate schedule. 0, or a usage error's exit code. */
static int config_optimizer(rm_trainer_config *c, const train_args *a)
{
    if (a->optimizer && !strcmp(a->optimizer, "adam"))
        c->optim = rm_optim_options_default(RM_OPTIM_ADAM), c->lr = 0.001;
    else if (a->optimizer && strcmp(a->optimizer, "sgd"))
        return usage_error("--optimizer must be sgd or adam, got '%s'", a->optimizer);
    double x;
    if (a->lr) {
        if (rm_cli_parse_seconds(&x, a->lr) || x <= 0 || x > RM_OPTIM_MAX_RATE)
            return usage_error("--lr must be a number in (0, %g] (the optimizer computes in single precision), got "
                               "'%s'",
                               RM_OPTIM_MAX_RATE, a->lr);
        c->lr = x;
    }
    if (a->momentum) {
        if (c->optim.kind != RM_OPTIM_SGD) return usage_error("--momentum is for --optimizer sgd");
        if (rm_cli_parse_seconds(&x, a->momentum) || x >= 1)
            return usage_error("--momentum must be a number in [0, 1), got '%s'", a->momentum);
        c->optim.momentum = (float)x;
    }
    if (a->wd) {
        if (rm_cli_parse_seconds(&x, a->wd) || x > RM_OPTIM_MAX_RATE)
            return usage_error("--weight-decay must be a number in [0, %g] (the optimizer computes in single "
                               "precision), got '%s'",
                               RM_OPTIM_MAX_RATE, a->wd);
        c->optim.weight_decay = (float)x;
    }
    if (a->sched) {
        if (!strcmp(a->sched, "constant"))
            c->lr_kind = RM_LR_CONSTANT;
        else if (!strcmp(a->sched, "step"))
            c->lr_kind = RM_LR_STEP;
        else if (!strcmp(a->sched, "cosine"))
            c->lr_kind = RM_LR_COSINE;
        else
            return usage_error("--lr-schedule must be constant, step or cosine, got '%s'", a->sched);
    }
    return 0;
}

static int train_job(rm_trainer_config *cfg, const train_args *args, rm_comm *comm);

static int train_run(int argc, char **argv)
{
    train_args a;
    memset(&a, 0, sizeof a);
    const rm_cli_opt opts[] = {
        RM_CLI_FLAG("--quiet", "-q", &a.quiet),
        RM_CLI_MODEL_OPTIONS(&a.mdl),
        RM_CLI_VALUE("--data", &a.data),
        RM_CLI_VALUE("--batch", &a.batch),
        RM_CLI_VALUE("--budget", &a.budget),
        RM_CLI_VALUE("--strategy", &a.strategy),
        RM_CLI_VALUE("--epochs", &a.epochs),
        RM_CLI_VALUE("--steps", &a.steps),
        RM_CLI_VALUE("--accum", &a.accum),
        RM_CLI_VALUE("--optimizer", &a.optimizer),
        RM_CLI_VALUE("--lr", &a.lr),
        RM_CLI_VALUE("--momentum", &a.momentum),
        RM_CLI_VALUE("--weight-decay", &a.wd),
        RM_CLI_VALUE("--lr-schedule", &a.sched),
        RM_CLI_VALUE("--seed", &a.seed),
        RM_CLI_VALUE("--snapshot", &a.snap),
        RM_CLI_VALUE("--checkpoint", &a.snap), /* the older name of --snapshot */
        RM_CLI_VALUE("--resume", &a.resume),
        RM_CLI_VALUE("--schedule-cache", &a.cache),
        RM_CLI_VALUE("--eval-every", &a.eval_every),
        RM_CLI_VALUE("--time-limit", &a.time_limit),
        RM_CLI_VALUE("--node-limit", &a.node_limit),
        RM_CLI_VALUE("--milp-engine", &a.milp_engine),
        RM_CLI_VALUE("--samples", &a.samples),
        RM_CLI_VALUE("--train-accuracy-every", &a.acc_every),
        RM_CLI_VALUE("--device", &a.device),
        RM_CLI_VALUE("--costs", &a.costs_path),
        RM_CLI_VALUE("--kernels", &a.kernels),
        RM_CLI_VALUE("--cpu-kernels", &a.cpu_kernels), /* the older name of --kernels on the cpu */
        RM_CLI_VALUE("--threads", &a.threads),
    };
    if (rm_cli_parse_options(opts, sizeof opts / sizeof opts[0], argc, argv, "train", TRAIN_USAGE) ||
        rm_cli_model_check(&a.mdl, "train", TRAIN_USAGE))
        return 1;
    a.model = a.mdl.path;
    if (!a.model) return usage_error("--model FILE is required (or --onnx FILE)");
    if (!a.data) return usage_error("--data DIR or --data synthetic is required");
    if (!a.budget) return usage_error("--budget B is required (an amount like 64MiB, or a percentage like 75%%)");

    rm_trainer_config c;
    rm_trainer_config_default(&c);
    int rc = config_run(&c, &a);
    if (!rc) rc = config_optimizer(&c, &a);
    if (rc) return rc;
    /* Under mpirun, one rank of the job (engine/comm.h); rank 0 alone
     * prints, the others only their errors. */
    rm_err e = {RM_OK, ""};
    rm_comm *comm = NULL;
    if (rm_comm_create_auto(&comm, &e)) {
        rm_text_fprintf(stderr, "remat train: %s\n", e.msg);
        return 1;
    }
    rc = train_job(&c, &a, comm);
    if (rc && comm->size > 1) comm->ops->abort(comm->ctx, rc); /* every rank ends, none waits for this one */
    rm_comm_free(comm);
    return rc;
}

/* A rank's error, said. Where every rank fails alike (a batch that does
 * not split, a missing file) rank 0's abort ends the others within the
 * second they wait here, so the job says it once, readably, instead of N
 * interleaved copies; a failure of this rank alone is still said, a second
 * later. */
static void say_error(const rm_comm *comm, const char *who, const char *msg)
{
    fflush(stdout);
    if (comm->size > 1 && comm->rank != 0) sleep(1);
    rm_text_fprintf(stderr, "%s: %s\n", who, msg);
}

/* The job of one rank (comm; one process: the single backend). */
static int train_job(rm_trainer_config *cfg, const train_args *args, rm_comm *comm)
{
    rm_trainer_config c = *cfg;
    train_args a = *args;
    int rc;
    const int root = comm->rank == 0;
    if (comm->size > 1) c.comm = comm;
    /* The benchmark's switch (bench/dp.sh), read where the CLI reads the environment. */
    const char *ov = getenv("REMAT_DP_OVERLAP");
    c.no_overlap = ov && !strcmp(ov, "0");
    const char *nc = getenv("REMAT_DP_NCCL"); /* 0: GPUs' gradients through host memory, as without NCCL */
    c.no_device_comm = nc && !strcmp(nc, "0");
    const char *ck = getenv("REMAT_DP_CHECK"); /* the tests' switch (tests/mpi) */
    c.check_ranks = ck && !strcmp(ck, "1");
    if (!root) a.quiet = 1;
    progress pr = {a.quiet, isatty(STDERR_FILENO), 0, 0, 0, 0, NULL, 0, 0, 0};
    rm_cli_progress solver_log = {c.strategy, rm_now()};
    if (!a.quiet) {
        c.solver.log = rm_cli_progress_log;
        c.solver.log_ctx = &solver_log;
    }
    c.event = root ? on_event : NULL; /* what a person reads comes from rank 0 */
    c.event_ctx = &pr;

    rm_err e = {RM_OK, ""};
    char who[48] = "remat train";
    if (comm->size > 1) snprintf(who, sizeof who, "remat train (rank %d of %d)", comm->rank, comm->size);
    rm_cost_file *costs = NULL;
    if (a.costs_path && rm_cost_file_read(&costs, a.costs_path, &e)) {
        say_error(comm, who, e.msg);
        return e.code == RM_ERR_NOMEM ? 2 : 1;
    }
    c.costs = costs;
    rm_trainer *t = NULL;
    rc = rm_trainer_create(&t, &c, &e);
    if (!rc) {
        if (root) print_summary(rm_trainer_summary_of(t), &c, rm_trainer_model(t));
        double t0 = rm_now();
        rc = rm_trainer_run(t, &e);
        close_bar(&pr);
        if (!rc && root) {
            printf("done         %llu steps in %.1f s\n", (unsigned long long)rm_trainer_steps(t), rm_now() - t0);
            print_measured(&pr, t, c.device == RM_BACKEND_CPU);
        }
    }
    close_bar(&pr);
    free(pr.step_s);
    rm_trainer_free(t);
    rm_cost_file_free(costs);
    if (rc) {
        say_error(comm, who, e.msg);
        return rc == RM_ERR_NOMEM || rc == RM_ERR_SOLVER || rc == RM_ERR_DEVICE ? 2 : 1;
    }
    return 0;
}

const rm_command rm_cmd_train = {
    .name = "train",
    .summary = "train a model under a memory budget by executing a rematerialization schedule",
    .usage = TRAIN_USAGE,
    .run = train_run,
};
