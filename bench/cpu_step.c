/* Training-step time on the CPU: forward, loss, backward and the SGD update
 * of a whole model, on one CPU kernel library and thread count, as
 * bench/cpu_step.sh sets it beside PyTorch's step (bench/pytorch_step.py
 * --device cpu).
 *
 *   remat_bench_cpu_step --model NAME|FILE --batch N [--cpu-kernels fast|reference]
 *                        [--threads T] [--strategy S] [--budget B] [--lr X (0.001)]
 *                        [--steps K (5)] [--warmup W (1)] [--max-seconds X (0: none)]
 *
 * The job is built by the library's one path (rm_trainer_create on the CPU
 * backend: model, fixed memory, schedule, plan, executor, SGD with momentum
 * 0.9); this file drives rm_executor_step and rm_optim_step, so the timed
 * region is the step without the data pipeline: one fixed batch of random
 * inputs and labels. Each step is timed on the monotonic clock; the median of
 * K after W warm-up steps is reported (with --max-seconds X, the timed steps
 * stop once X seconds, warm-up included, are spent and one is done; the
 * RESULT line's steps= says how many were timed). The learning rate is small
 * so that random labels do not drive a large network's loss to infinity in
 * a few steps (the speed of a step does not depend on it).
 * Without --threads (or REMAT_THREADS) the backend's default: every core,
 * fewer while other processes keep them busy (the thread governor).
 * Default strategy checkpoint_all at a 100% budget: no recomputation, so the
 * step does what PyTorch's does. Ends with "RESULT model=... ms=...
 * images_s=..." for the driver. Exit 0, 1 when the job could not be built, a
 * step failed or the loss is not finite, 2 on bad usage (--help: 0). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cpu.h"
#include "bench_host.h"
#include "bench_median.h"
#include "cli_util.h"
#include "clock.h"
#include "executor.h"
#include "optim.h"
#include "trainer.h"

#define ME "remat_bench_cpu_step"
#define MAX_STEPS 1000

static int usage(const char *why)
{
    FILE *f = why ? stderr : stdout;
    if (why) fprintf(stderr, ME ": %s\n", why);
    fprintf(f,
            "usage: " ME " --model NAME|FILE --batch N [--cpu-kernels fast|reference] [--threads T]\n"
            "       [--strategy S (checkpoint_all)] [--budget B (100%%)] [--lr X (0.001)] [--steps K (5, 1..%d)]\n"
            "       [--warmup W (1, 0..%d)] [--max-seconds X (0: no limit)]\n",
            MAX_STEPS, MAX_STEPS);
    return why ? 2 : 0;
}

static void on_event(void *ctx, const rm_trainer_event *ev)
{
    (void)ctx;
    if (ev->kind == RM_TRAINER_NOTE) fprintf(stderr, ME ": %s\n", ev->text);
}

int main(int argc, char **argv)
{
    const char *model = NULL, *kernels = NULL, *threads = NULL, *strategy = "checkpoint_all", *budget = "100%";
    long batch = 0, steps = 5, warmup = 1;
    double max_s = 0, lr = 0.001;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char why[200];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) return usage(NULL);
        static const char *const known[] = {"--model", "--cpu-kernels", "--threads", "--strategy", "--budget",
                                            "--lr",    "--batch",       "--steps",   "--warmup",   "--max-seconds"};
        int is_known = 0;
        for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) is_known |= !strcmp(o, known[k]);
        if (!is_known) {
            snprintf(why, sizeof why, "unknown option %s", o);
            return usage(why);
        }
        if (!v) {
            snprintf(why, sizeof why, "%s needs a value", o);
            return usage(why);
        }
        i++;
        int bad = 0;
        if (!strcmp(o, "--model"))
            model = v;
        else if (!strcmp(o, "--cpu-kernels"))
            kernels = v;
        else if (!strcmp(o, "--threads"))
            threads = v;
        else if (!strcmp(o, "--strategy"))
            strategy = v;
        else if (!strcmp(o, "--budget"))
            budget = v;
        else if (!strcmp(o, "--batch"))
            bad = rm_cli_parse_long(&batch, v, 1, 1L << 20);
        else if (!strcmp(o, "--steps"))
            bad = rm_cli_parse_long(&steps, v, 1, MAX_STEPS);
        else if (!strcmp(o, "--warmup"))
            bad = rm_cli_parse_long(&warmup, v, 0, MAX_STEPS);
        else if (!strcmp(o, "--max-seconds"))
            bad = rm_cli_parse_seconds(&max_s, v);
        else if (!strcmp(o, "--lr"))
            bad = rm_cli_parse_seconds(&lr, v) || !(lr > 0);
        if (bad) {
            snprintf(why, sizeof why, "%s %s: want %s", o, v,
                     !strcmp(o, "--batch")    ? "an integer from 1 to 1048576"
                     : !strcmp(o, "--warmup") ? "an integer from 0 to 1000"
                     : !strcmp(o, "--steps")  ? "an integer from 1 to 1000"
                     : !strcmp(o, "--lr")     ? "a number > 0"
                                              : "a number of seconds >= 0");
            return usage(why);
        }
    }
    if (!model || !batch) return usage("--model and --batch are required");
    if (!rm_strategy_find(strategy)) return usage("unknown --strategy (the names of `remat plan --help`)");

    char path[1024], why[256];
    rm_trainer_config c;
    rm_trainer_config_default(&c);
    c.model_path = bench_model_path(path, sizeof path, model, REMAT_SOURCE_DIR);
    c.data = "synthetic";
    c.synthetic_samples = batch < 8 ? 8 : (int)batch; /* never read here: the trainer wants a data set */
    c.batch = (int)batch;
    c.strategy = strategy;
    c.train_accuracy_every = 0;
    c.lr = lr;
    c.device = RM_BACKEND_CPU;
    c.event = on_event;
    rm_cli_budget bud;
    if (rm_cli_parse_budget(&bud, budget, why, sizeof why)) return usage(why);
    if (bud.percent)
        c.budget_percent = bud.pct;
    else
        c.budget = bud.bytes;
    if (rm_cli_parse_backend_options(&c.backend, kernels, NULL, threads, RM_BACKEND_CPU, why, sizeof why))
        return usage(why);
    rm_err e = {RM_OK, ""};

    rm_trainer *t = NULL;
    if (rm_trainer_create(&t, &c, &e)) {
        fprintf(stderr, ME ": %s\n", e.msg);
        return 1;
    }
    const rm_trainer_summary *s = rm_trainer_summary_of(t);
    const rm_model *m = rm_trainer_model(t);
    size_t numel = (size_t)batch * (size_t)m->input.c * (size_t)m->input.h * (size_t)m->input.w;
    size_t nlabels = rm_model_label_count(m, (int)batch);
    float *images = malloc(numel * sizeof *images);
    int32_t *labels = malloc((nlabels ? nlabels : 1) * sizeof *labels);
    if (!images || !labels) {
        fprintf(stderr, ME ": out of memory for the batch\n");
        return 1;
    }
    unsigned r = 12345u; /* a fixed LCG: every run times the same data */
    for (size_t i = 0; i < numel; i++) {
        r = r * 1664525u + 1013904223u;
        images[i] = (float)(r >> 8) / 8388608.0f - 1.0f;
    }
    for (size_t i = 0; i < nlabels; i++) {
        r = r * 1664525u + 1013904223u;
        labels[i] = (int32_t)((r >> 8) % (unsigned)(s->classes > 0 ? s->classes : 1));
    }

    printf("# %s, batch %ld, %s, %s; schedule %s, compute overhead %+.2f%%; median of up to %ld steps after %ld\n",
           path, batch, s->device, s->device_settings, s->strategy, rm_overhead_pct(s->cost, s->base_cost), steps,
           warmup);
    fflush(stdout);
    rm_executor *ex = rm_trainer_executor(t);
    rm_optim *opt = rm_trainer_optimizer(t);
    float ms[MAX_STEPS], loss = 0, first = NAN;
    int n = 0, rc = 0;
    double start = rm_now();
    for (long i = -warmup; i < steps && !rc; i++) {
        if (max_s > 0 && n > 0 && rm_now() - start > max_s) break; /* between steps: a started step finishes */
        double t0 = rm_now();
        rc = rm_executor_step(ex, &loss, images, labels, (uint64_t)(i + warmup), &e);
        if (!rc) rc = rm_optim_step(opt, c.lr, &e);
        double dt = rm_now() - t0;
        if (isnan(first)) first = loss;
        if (!rc && i >= 0) ms[n++] = (float)(1e3 * dt);
        fprintf(stderr, ME ": step %ld%s: %.1f ms, loss %.4g\n", i + warmup + 1, i < 0 ? " (warm-up)" : "", 1e3 * dt,
                (double)loss);
    }
    if (rc) {
        fprintf(stderr, ME ": %s\n", e.msg);
        rm_trainer_free(t);
        free(images), free(labels);
        return 1;
    }
    float lo = ms[0];
    for (int i = 1; i < n; i++) lo = ms[i] < lo ? ms[i] : lo;
    float med = median(ms, n);
    /* threads= is the count asked for (without --threads, the most the
     * governor may use); threads_end= the count the last step ended on. */
    const rm_backend *be = rm_executor_backend(ex);
    printf("RESULT model=%s batch=%ld threads=%d adaptive=%d threads_end=%d kernels=%s ms=%.3f min_ms=%.3f "
           "images_s=%.3f steps=%d loss_first=%.4g loss_last=%.4g\n",
           model, batch, rm_backend_cpu_max_threads(be), rm_backend_cpu_adaptive(be), rm_backend_cpu_threads(be),
           rm_cpu_kernel_lib_name(rm_backend_cpu_kernels(be)), med, lo, 1e3 * batch / med, n, (double)first,
           (double)loss);
    rm_trainer_free(t);
    free(images), free(labels);
    return isfinite(loss) ? 0 : 1;
}
