/* Training-step throughput on the GPU: forward, loss, backward and the
 * optimizer update of a whole model, for one or more CUDA kernel libraries
 * (handwritten, cublas, cudnn), under a rematerialization schedule.
 *
 *   remat_bench_gpu_step --model NAME|FILE --batch N [--kernels E[,E...]]
 *                        [--strategy S] [--budget B] [--steps K] [--warmup W]
 *                        [--max-seconds T] [--time-limit S] [--lr X]
 *
 * (--engines and --engine are older names of --kernels.)
 * The job is built by the library's one path, rm_trainer_create on the CUDA
 * backend (model, fixed-memory accounting, schedule for the budget, plan,
 * executor, optimizer); this file only drives rm_executor_step and
 * rm_optim_step itself, so the timed region is the step without the data
 * pipeline: one fixed batch of random inputs in pinned host memory (as a
 * framework's pinned data loader hands it over; its upload is part of the
 * step, as in `remat train`), random labels. Timing follows the device
 * method (METHOD.md): CUDA events on the backend's stream around each step,
 * after W warm-up steps, median of K. Each kernel library's run stops once
 * --max-seconds of wall clock (warm-up included, default 20) are spent, with
 * at least one step done: the hand-written library is exact but slow.
 *
 * Memory: "remat" is the fixed bytes plus the arena's measured high-water
 * mark (what the budget governs); "device" is what cudaMemGetInfo says the
 * process took after the CUDA context existed (library handles and cuDNN's
 * kernels included; the trainer's evaluation runs in the idle training
 * arena, so it adds nothing).
 *
 * Without --budget the budget is 90% of the GPU's free memory (the
 * checkpoint-all default then never recomputes). --budget takes 16GiB or a
 * percentage of the no-remat peak (as `remat train`). Each kernel library ends with
 * one line "RESULT key=value ..." for the drivers (bench/gpu_throughput.sh,
 * bench/gpu_maxbatch.sh). Exit 0 when every kernel library ran, 1 when the job
 * could not be built or a step failed (RESULT status says OOM, BUDGET,
 * INFEASIBLE or ERROR), 2 on bad usage; without a GPU it says so and exits 0
 * having timed nothing, like remat_bench_gpu_layers. */
#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cuda.h"
#include "bench_host.h"
#include "bench_median.h"
#include "cli_util.h"
#include "clock.h"
#include "executor.h"
#include "optim.h"
#include "trace.h"
#include "trainer.h"

#define ME "remat_bench_gpu_step"
#define MAX_STEPS 1000

/* A CUDA runtime call of this file; the library checks its own. */
static int cuda_ok(cudaError_t st, const char *what)
{
    if (st == cudaSuccess) return 1;
    fprintf(stderr, ME ": %s: %s\n", what, cudaGetErrorString(st));
    return 0;
}

static const char *status_of(int rc)
{
    switch (rc) {
    case RM_ERR_NOMEM:
    case RM_ERR_DEVICE:
        return "OOM";
    case RM_ERR_BUDGET:
        return "BUDGET";
    case RM_ERR_INFEASIBLE:
        return "INFEASIBLE";
    default:
        return "ERROR";
    }
}

static void on_event(void *ctx, const rm_trainer_event *ev)
{
    (void)ctx;
    if (ev->kind == RM_TRAINER_NOTE || ev->kind == RM_TRAINER_SOLVING) fprintf(stderr, ME ": %s\n", ev->text);
}

typedef struct args {
    const char *model, *model_arg, *libs, *strategy, *budget;
    int batch, steps, warmup;
    double max_seconds, time_limit, lr;
} args;

static int usage(const char *why)
{
    if (why) fprintf(stderr, ME ": %s\n", why);
    fprintf(stderr, "usage: " ME " --model NAME|FILE --batch N [--kernels handwritten,cublas,cudnn] [--strategy S]\n"
                    "       [--budget 16GiB|P%%] [--steps K (20)] [--warmup W (3)] [--max-seconds T (20)]\n"
                    "       [--time-limit S (30, lp_round / milp)] [--lr X (0.01)]\n");
    return 2;
}

static int parse_args(args *a, int argc, char **argv, char *pathbuf, size_t pathlen)
{
    memset(a, 0, sizeof *a);
    a->libs = "cudnn", a->strategy = "checkpoint_all";
    a->steps = 20, a->warmup = 3, a->max_seconds = 20, a->time_limit = 30, a->lr = 0.01;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        double x;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) return usage(NULL);
        if (!v) return usage("every option takes a value");
        i++;
        if (!strcmp(o, "--model"))
            a->model_arg = v;
        else if (!strcmp(o, "--kernels") || !strcmp(o, "--engines") || !strcmp(o, "--engine"))
            a->libs = v;
        else if (!strcmp(o, "--strategy"))
            a->strategy = v;
        else if (!strcmp(o, "--budget"))
            a->budget = v;
        else if (!strcmp(o, "--batch") && !rm_cli_parse_long(&n, v, 1, 1L << 20))
            a->batch = (int)n;
        else if (!strcmp(o, "--steps") && !rm_cli_parse_long(&n, v, 1, MAX_STEPS))
            a->steps = (int)n;
        else if (!strcmp(o, "--warmup") && !rm_cli_parse_long(&n, v, 0, MAX_STEPS))
            a->warmup = (int)n;
        else if (!strcmp(o, "--max-seconds") && !rm_cli_parse_seconds(&x, v) && x > 0)
            a->max_seconds = x;
        else if (!strcmp(o, "--time-limit") && !rm_cli_parse_seconds(&x, v))
            a->time_limit = x;
        else if (!strcmp(o, "--lr") && !rm_cli_parse_seconds(&x, v) && x > 0)
            a->lr = x;
        else {
            char why[160];
            snprintf(why, sizeof why, "bad option or value: %s %s", o, v);
            return usage(why);
        }
    }
    if (!a->model_arg) return usage("--model is required");
    if (!a->batch) return usage("--batch is required");
    if (!rm_strategy_find(a->strategy)) return usage("unknown --strategy (names as `remat plan --help`)");
    a->model = bench_model_path(pathbuf, pathlen, a->model_arg, REMAT_SOURCE_DIR);
    return 0;
}

/* The fixed batch: inputs uniform in [-1, 1), labels uniform over the
 * classes, from a fixed LCG so every run times the same data. */
static int make_batch(float **images, int32_t **labels, size_t numel, size_t nlabels, int classes)
{
    if (!cuda_ok(cudaMallocHost((void **)images, numel * sizeof(float)), "cudaMallocHost(batch)")) return -1;
    if (!cuda_ok(cudaMallocHost((void **)labels, (nlabels ? nlabels : 1) * sizeof(int32_t)), "cudaMallocHost(labels)"))
        return -1;
    unsigned s = 12345u;
    for (size_t i = 0; i < numel; i++) {
        s = s * 1664525u + 1013904223u;
        (*images)[i] = (float)(s >> 8) / 8388608.0f - 1.0f;
    }
    for (size_t i = 0; i < nlabels; i++) {
        s = s * 1664525u + 1013904223u;
        (*labels)[i] = (int32_t)((s >> 8) % (unsigned)(classes > 0 ? classes : 1));
    }
    return 0;
}

typedef struct timing {
    int ran, steps, warm_only; /* warm_only: the cap came before a timed step; warm-up times reported */
    float median_ms, min_ms;
    double wall_s;
    float loss_first, loss_last;
    unsigned long long fallbacks;
    int rc;
    char err[256];
} timing;

/* Warm-up then timed steps of one kernel library, each between two events on the stream. */
static void run_library(timing *r, rm_trainer *t, const args *a, int warmup, const float *images, const int32_t *labels,
                        uint64_t *step)
{
    memset(r, 0, sizeof *r);
    rm_executor *ex = rm_trainer_executor(t);
    rm_optim *opt = rm_trainer_optimizer(t);
    rm_backend *be = rm_executor_backend(ex);
    cudaStream_t st = (cudaStream_t)rm_backend_cuda_stream(be);
    float ms[MAX_STEPS], warm[MAX_STEPS];
    int nwarm = 0;
    cudaEvent_t t0, t1;
    if (!cuda_ok(cudaEventCreate(&t0), "cudaEventCreate")) {
        r->rc = RM_ERR_DEVICE;
        snprintf(r->err, sizeof r->err, "cannot create CUDA events");
        return;
    }
    if (!cuda_ok(cudaEventCreate(&t1), "cudaEventCreate")) {
        cudaEventDestroy(t0);
        r->rc = RM_ERR_DEVICE;
        snprintf(r->err, sizeof r->err, "cannot create CUDA events");
        return;
    }
    unsigned long long fb0 = rm_backend_cuda_fallbacks(be);
    double start = rm_now();
    rm_err e = {RM_OK, ""};
    for (int i = -warmup; i < a->steps; i++) {
        /* The cap is checked between steps: a started step always finishes. */
        if ((r->steps > 0 || nwarm > 0) && rm_now() - start > a->max_seconds) break;
        float loss = 0;
        int rc = RM_OK;
        if (!cuda_ok(cudaEventRecord(t0, st), "cudaEventRecord")) rc = RM_ERR_DEVICE;
        if (!rc) rc = rm_executor_step(ex, &loss, images, labels, (*step)++, &e);
        if (!rc) rc = rm_optim_step(opt, a->lr, &e);
        if (!rc && !cuda_ok(cudaEventRecord(t1, st), "cudaEventRecord")) rc = RM_ERR_DEVICE;
        if (!rc && !cuda_ok(cudaEventSynchronize(t1), "cudaEventSynchronize")) rc = RM_ERR_DEVICE;
        float dt = 0;
        if (!rc && !cuda_ok(cudaEventElapsedTime(&dt, t0, t1), "cudaEventElapsedTime")) rc = RM_ERR_DEVICE;
        if (rc) {
            r->rc = rc;
            snprintf(r->err, sizeof r->err, "%s", e.msg[0] ? e.msg : "a CUDA call failed (above)");
            break;
        }
        if (r->steps == 0 && nwarm == 0) r->loss_first = loss;
        r->loss_last = loss;
        if (i < 0)
            warm[nwarm++] = dt;
        else
            ms[r->steps++] = dt;
    }
    r->wall_s = rm_now() - start;
    r->fallbacks = rm_backend_cuda_fallbacks(be) - fb0;
    cudaEventDestroy(t0);
    cudaEventDestroy(t1);
    if (r->rc) return;
    r->ran = 1;
    if (r->steps == 0) { /* only warm-up steps fit under the cap: report them, marked */
        memcpy(ms, warm, (size_t)nwarm * sizeof *ms);
        r->steps = nwarm, r->warm_only = 1;
    }
    float lo = ms[0];
    for (int i = 1; i < r->steps; i++) lo = ms[i] < lo ? ms[i] : lo;
    r->min_ms = lo;
    r->median_ms = median(ms, r->steps);
}

static double mib(size_t b)
{
    return (double)b / (1024.0 * 1024.0);
}

/* The trainer's configuration for the job: the model at --batch on the CUDA
 * backend, --strategy under --budget (default: 90% of free0, the GPU's free
 * memory after the context). 0, or usage's status for a bad --budget. */
static int trainer_config_of(rm_trainer_config *c, const args *a, size_t free0)
{
    rm_trainer_config_default(c);
    c->model_path = a->model;
    c->data = "synthetic";
    /* The trainer's data is never read here: a small set (a quarter more is held out). */
    c->synthetic_samples = a->batch < 8 ? 8 : a->batch;
    c->batch = a->batch;
    c->strategy = a->strategy;
    c->solver.time_limit_s = a->time_limit;
    c->train_accuracy_every = 0;
    c->lr = a->lr;
    c->device = RM_BACKEND_CUDA;
    c->event = on_event;
    if (a->budget) {
        rm_cli_budget bud;
        char why[256];
        if (rm_cli_parse_budget(&bud, a->budget, why, sizeof why)) return usage(why);
        if (bud.percent)
            c->budget_percent = bud.pct;
        else
            c->budget = bud.bytes;
    } else {
        c->budget = free0 / 10 * 9;
    }
    return 0;
}

/* The "# ..." lines that describe the job (model, schedule, memory, timing
 * method) and the table's column titles. */
static void print_job(const args *a, const rm_trainer_summary *s, const rm_model *m, rm_backend *be, double build_s)
{
    printf("# model %s, batch %d, input %dx%dx%d, %zu parameters; SGD momentum 0.9, lr %g\n", a->model, a->batch,
           m->input.c, m->input.h, m->input.w, s->params, a->lr);
    printf("# schedule %s (%s, %.2f s): compute overhead %+.2f%%, %ld recomputations; built in %.1f s\n", s->strategy,
           s->status, s->solve_s, s->base_cost > 0 ? 100.0 * (s->cost / s->base_cost - 1) : 0.0, s->recomputations,
           build_s);
    printf("# budget %.1f MiB: fixed %.1f MiB (workspace %.1f) + arena %.1f MiB (no-remat peak %.1f MiB)\n",
           mib(s->budget), mib(s->fp.total), mib(s->fp.workspace + s->fp.backend), mib(s->plan_span),
           mib(s->noremat_peak));
    printf("# deterministic %d, fast_math %d; median of up to %d steps after %d warm-up (handwritten: %d), at most "
           "%g s per kernel library\n",
           rm_backend_cuda_deterministic(be), rm_backend_cuda_fast_math(be), a->steps, a->warmup,
           a->warmup < 1 ? a->warmup : 1, a->max_seconds);
    printf("%-12s %6s %10s %10s %10s %10s %10s %9s %s\n", "engine", "steps", "median_ms", "min_ms", "images/s",
           "remat_MiB", "device_MiB", "fallbacks", "loss first -> last");
    fflush(stdout);
}

/* One kernel library (tok, a name of --kernels): switch the backend to it, time its
 * steps, print its table row and RESULT line. 1 when it failed, 0 when it
 * ran or was skipped (no cuDNN in this build). free0: the device's free
 * memory after the context, what its measured use is counted from. */
static int bench_library(const char *tok, rm_trainer *t, const args *a, size_t free0, const float *images,
                         const int32_t *labels, uint64_t *step)
{
    const rm_trainer_summary *s = rm_trainer_summary_of(t);
    rm_executor *ex = rm_trainer_executor(t);
    rm_backend *be = rm_executor_backend(ex);
    rm_cuda_kernel_lib lib;
    rm_err ee = {RM_OK, ""};
    if (rm_cuda_kernel_lib_parse(&lib, tok, &ee)) {
        fprintf(stderr, ME ": --kernels: %s\n", ee.msg);
        return 1;
    }
    if (lib == RM_CUDA_KERNELS_CUDNN && !rm_backend_cuda_has_cudnn()) {
        printf("%-12s this build has no cuDNN: skipped\n", tok);
        return 0;
    }
    if (rm_backend_cuda_set_kernels(be, lib, &ee)) {
        fprintf(stderr, ME ": %s: %s\n", tok, ee.msg);
        return 1;
    }
    timing r;
    run_library(&r, t, a, lib == RM_CUDA_KERNELS_HANDWRITTEN && a->warmup > 1 ? 1 : a->warmup, images, labels, step);
    size_t free1 = 0, tot1 = 0;
    size_t device = cuda_ok(cudaMemGetInfo(&free1, &tot1), "cudaMemGetInfo") && free0 > free1 ? free0 - free1 : 0;
    size_t remat = s->fp.total + rm_executor_arena_high_water(ex);
    if (!r.ran) {
        fprintf(stderr, ME ": %s: %s\n", tok, r.err);
        printf("%-12s failed: %s\n", tok, r.err);
        printf("RESULT model=%s batch=%d strategy=%s engine=%s status=%s ms=- images_s=- steps=0 budget=%zu "
               "remat_bytes=%zu device_bytes=%zu\n",
               a->model_arg, a->batch, s->strategy, tok, status_of(r.rc), s->budget, remat, device);
        return 1;
    }
    int finite = isfinite(r.loss_first) && isfinite(r.loss_last);
    printf("%-12s %5d%s %10.2f %10.2f %10.1f %10.1f %10.1f %9llu %.4g -> %.4g%s\n", tok, r.steps,
           r.warm_only ? "*" : (r.steps < a->steps ? "+" : " "), r.median_ms, r.min_ms, 1e3 * a->batch / r.median_ms,
           mib(remat), mib(device), r.fallbacks, (double)r.loss_first, (double)r.loss_last,
           finite ? "" : " (not finite)");
    printf("RESULT model=%s batch=%d strategy=%s engine=%s status=OK ms=%.3f images_s=%.2f steps=%d budget=%zu "
           "remat_bytes=%zu device_bytes=%zu overhead_pct=%.2f fallbacks=%llu\n",
           a->model_arg, a->batch, s->strategy, tok, r.median_ms, 1e3 * a->batch / r.median_ms, r.steps, s->budget,
           remat, device, s->base_cost > 0 ? 100.0 * (s->cost / s->base_cost - 1) : 0.0, r.fallbacks);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    args a;
    char pathbuf[1024];
    int urc = parse_args(&a, argc, argv, pathbuf, sizeof pathbuf);
    if (urc) return urc;

    /* No GPU: nothing to time, said plainly (the drivers check first too). */
    int count = 0;
    cudaError_t st = cudaGetDeviceCount(&count);
    if (st != cudaSuccess || count == 0) {
        printf(ME ": no GPU: nothing timed (%s)\n", st == cudaSuccess ? "no device" : cudaGetErrorString(st));
        return 0;
    }
    /* The context first, so that the memory measured below is this job's. */
    size_t free0 = 0, total = 0;
    if (!cuda_ok(cudaSetDevice(0), "cudaSetDevice") || !cuda_ok(cudaFree(0), "cudaFree(0) (context creation)") ||
        !cuda_ok(cudaMemGetInfo(&free0, &total), "cudaMemGetInfo"))
        return 1;
    struct cudaDeviceProp prop;
    if (!cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties")) return 1;

    rm_trainer_config c;
    if ((urc = trainer_config_of(&c, &a, free0))) return urc;

    printf("# %s (%d SMs, %.1f GiB, %.1f GiB free after the context); " ME "\n", prop.name, prop.multiProcessorCount,
           (double)total / 1073741824.0, (double)free0 / 1073741824.0);
    fflush(stdout);
    rm_err e = {RM_OK, ""};
    rm_trainer *t = NULL;
    double tc0 = rm_now();
    int rc = rm_trainer_create(&t, &c, &e);
    if (rc) {
        fprintf(stderr, ME ": %s\n", e.msg);
        printf("RESULT model=%s batch=%d strategy=%s engine=- status=%s ms=- images_s=- steps=0\n", a.model_arg,
               a.batch, a.strategy, status_of(rc));
        return 1;
    }
    double build_s = rm_now() - tc0;
    const rm_trainer_summary *s = rm_trainer_summary_of(t);
    const rm_model *m = rm_trainer_model(t);

    size_t numel = (size_t)a.batch * (size_t)m->input.c * (size_t)m->input.h * (size_t)m->input.w;
    size_t nlabels = rm_model_label_count(m, a.batch);
    float *images = NULL;
    int32_t *labels = NULL;
    if (make_batch(&images, &labels, numel, nlabels, s->classes)) {
        cudaFreeHost(images);
        rm_trainer_free(t);
        return 1;
    }

    print_job(&a, s, m, rm_executor_backend(rm_trainer_executor(t)), build_s);
    int failed = 0;
    uint64_t step = 0;
    char list[256];
    snprintf(list, sizeof list, "%s", a.libs);
    char *save = NULL;
    for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        if (bench_library(tok, t, &a, free0, images, labels, &step)) failed = 1;
    printf("# steps: '+' the --max-seconds cap stopped it early; '*' only warm-up steps fit under the cap (their\n"
           "# times). remat: fixed + arena high-water (what the budget governs); device: cudaMemGetInfo, all this\n"
           "# process took after its CUDA context (library handles and cuDNN's kernels included).\n"
           "# fallbacks: layer calls the kernel library handed to the hand-written kernels.\n");
    cudaFreeHost(images);
    cudaFreeHost(labels);
    rm_trainer_free(t);
    return failed;
}
