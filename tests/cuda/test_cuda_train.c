/* The executor, the optimizer and the trainer on the GPU, against the CPU.
 *
 *  - One training step of each tiny model (vgg-tiny: dropout; resnet-tiny:
 *    batchnorm and residual gradient sums; unet-tiny: concat, transposed
 *    convolutions; mobilenet-tiny: depthwise convolutions; and three ONNX imports, with the
 *    file's weights) under checkpoint-all, on random non-zero data: the loss,
 *    every layer's parameter gradients and the batchnorm running statistics
 *    against the CPU executor, by the layer suite's relative error (per
 *    tensor, max_i |gpu_i - cpu_i| / max(|cpu_i|, 1e-2 max_j |cpu_j|)) with a
 *    whole-network tolerance of STEP_TOL: each layer adds its error (1e-5
 *    for the hand-written kernels, up to 2e-4 for the cuBLAS and cuDNN
 *    kernel libraries, which sum in float32), and a network of ten layers compounds
 *    them.
 *  - Rematerialization on the GPU: every baseline strategy at a budget below
 *    checkpoint-all's peak, LP rounding and the anneal (deterministic move
 *    count; on ResNet-tiny in its own order) give loss, gradients and
 *    statistics bit-identical (memcmp) to
 *    checkpoint-all on the GPU (the kernels use no atomics); the arena's
 *    measured high-water mark equals the plan's span, and its live peak the
 *    simulator's (aligned) peak.
 *  - The SGD (momentum, Nesterov, weight decay) and Adam (L2 and decoupled)
 *    kernels against the CPU optimizer over several steps: the kernels do
 *    the CPU's float operations without contraction, so they are expected
 *    bit-identical; asserted within OPT_TOL, the report says which.
 *  - A few whole training steps (executor + optimizer) GPU vs CPU.
 *  - The trainer with device CUDA: a run with a snapshot, and a resumed run
 *    that continues it bit for bit (snapshots go through host copies).
 *  - A budget larger than the device's free memory is RM_ERR_BUDGET before
 *    anything is allocated.
 *
 * Every comparison appends "what case tensor error tolerance" to the file
 * REMAT_CUDA_REPORT names (scripts/gpu-check prints them); a tolerance of -1
 * marks a value reported for information (the trainer's losses).
 *
 * Over ~600 lines on purpose: every GPU-vs-CPU training case shares the
 * run-and-compare helpers at the top of this file.
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cpu.h"
#include "backend_cuda.h"
#include "builder.h"
#include "cuda_fixture.h"
#include "executor.h"
#include "optim.h"
#include "plan.h"
#include "problem.h"
#include "profile.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"
#include "tiny_models.h"
#include "trace.h"
#include "trainer.h"

#define STEP_TOL 2e-3 /* a whole network's gradients, GPU vs CPU */
#define OPT_TOL 1e-6  /* optimizer updates (expected: 0, bit-identical) */

static void expect_close(const float *got, const float *want, size_t n, double tol, const char *what, const char *name,
                         const char *tensor)
{
    size_t worst;
    double err = rel_err(got, want, n, &worst);
    report_line("%s %s %s %.3e %g", what, name, tensor, err, tol);
    cr_expect(err <= tol, "%s %s %s: relative error %.3e > %.0e (element %zu: gpu %.9g, cpu %.9g)", what, name, tensor,
              err, tol, worst, n ? (double)got[worst] : 0.0, n ? (double)want[worst] : 0.0);
}

static rm_backend *cuda_backend(void)
{
    rm_backend *be = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_backend_cuda_create(&be, 0, &e), RM_OK, "cuda backend: %s", e.msg);
    return be;
}

/* The CPU reference kernels: the oracle the GPU is held to (the CPU's
 * default library, fast, is itself checked against them). */
static rm_backend *cpu_backend(void)
{
    rm_backend *be = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cpu_set_kernels(be, RM_CPU_KERNELS_REFERENCE, &e), RM_OK, "%s", e.msg);
    return be;
}

/* ---- a tiny model, its graph and schedules --------------------------------- */

typedef tm_tiny tiny; /* tests/tiny_models.h: the CPU suite's executor tests run the same */

static rm_sim_result simulate(const rm_problem *p, const rm_schedule *s)
{
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    return r;
}

/* checkpoint-all first; with remat, every baseline at the lowest of eight
 * budgets below checkpoint-all's peak it fits, then LP rounding and the
 * anneal halfway between the lower bound and that peak, each only where it
 * differs from those before (the emulated device would check nothing new,
 * and each run costs seconds under the emulator). Not the MILP: on these
 * three models its schedule under a node limit is LP rounding's, and under
 * ASan it took 16 to 24 s of the test. */
static void tiny_load(tiny *t, const char *cfg, int batch, int remat)
{
    tm_load(t, cfg, batch, remat ? TM_BASELINES | TM_LP_ROUND | TM_ANNEAL | TM_DISTINCT : 0);
}

/* Random non-zero inputs in [-1, -0.1] u [0.1, 1] and random labels. */
static void make_batch(float **input, int32_t **labels, const tiny *t, uint64_t seed)
{
    size_t n = rm_shape_numel(t->g.nodes[0].shape), nl = rm_model_label_count(t->m, t->g.batch);
    int classes = t->m->layers[t->m->nlayers - 1].in_shape[0].c;
    *input = malloc(n * sizeof **input);
    *labels = malloc((nl ? nl : 1) * sizeof **labels);
    rm_rng r = rm_rng_make(seed);
    for (size_t i = 0; i < n; i++) {
        double v = rm_rng_range(&r, 0.1, 1.0);
        (*input)[i] = (float)(rm_rng_uniform(&r) < 0.5 ? -v : v);
    }
    for (size_t i = 0; i < nl; i++) (*labels)[i] = (int32_t)(rm_rng_next(&r) % (uint64_t)classes);
}

static rm_plan *plan_of(const tiny *t, const rm_schedule *s)
{
    rm_op *ops;
    int nops;
    rm_err e = {0};
    cr_assert_eq(rm_schedule_ops(&ops, &nops, t->p, s, &e), RM_OK, "%s", e.msg);
    rm_plan *pl;
    cr_assert_eq(rm_plan_from_graph(&pl, &t->g, ops, nops, &e), RM_OK, "%s", e.msg);
    free(ops);
    return pl;
}

/* What steps leave behind, downloaded. */
typedef struct step_result {
    float loss[2];
    float *grads, *buffers, *params;
    size_t nparams, nbuffers;
    size_t high_water, span, live_peak;
} step_result;

static void step_result_free(step_result *r)
{
    free(r->grads);
    free(r->buffers);
    free(r->params);
}

/* Two steps (7 and 8) on the same batch, parameters not updated (unless
 * optimize: then an SGD/momentum step after each, and `steps` steps). */
static step_result run_steps(const tiny *t, const rm_schedule *s, rm_backend *be, const float *input,
                             const int32_t *labels, int steps, int optimize, int poison)
{
    step_result res;
    memset(&res, 0, sizeof res);
    rm_plan *pl = plan_of(t, s);
    rm_executor *ex;
    rm_err e = {0};
    rm_executor_options opts = {.seed = 42, .poison = poison};
    cr_assert_eq(rm_executor_create(&ex, t->m, &t->g, be, pl, &opts, &e), RM_OK, "%s: %s", be->name, e.msg);
    rm_optim *opt = NULL;
    if (optimize) {
        rm_layer_params **lpp = calloc((size_t)t->m->nlayers, sizeof *lpp);
        rm_optim_tensor *ts = calloc(2 * (size_t)t->m->nlayers + 1, sizeof *ts);
        for (int i = 0; i < t->m->nlayers; i++) lpp[i] = rm_executor_layer_params(ex, i);
        int nts = 0;
        cr_assert_eq(rm_optim_tensors_from_model(ts, &nts, t->m, lpp, &e), RM_OK, "%s", e.msg);
        rm_optim_options oo = rm_optim_options_default(RM_OPTIM_SGD);
        oo.weight_decay = 1e-3;
        cr_assert_eq(rm_optim_create_on(&opt, ts, nts, &oo, be, &e), RM_OK, "%s", e.msg);
        free(lpp);
        free(ts);
    }
    for (int k = 0; k < steps; k++) {
        float l = 0;
        cr_assert_eq(rm_executor_step(ex, &l, input, labels, 7 + (uint64_t)k, &e), RM_OK, "%s step %d: %s", be->name, k,
                     e.msg);
        if (k < 2)
            res.loss[k] = l;
        else
            res.loss[1] = l;
        if (opt) cr_assert_eq(rm_optim_step(opt, 0.01, &e), RM_OK, "%s", e.msg);
    }
    rm_executor_params(ex, &res.nparams);
    rm_executor_buffers(ex, &res.nbuffers);
    res.grads = malloc((res.nparams + 1) * sizeof(float));
    res.params = malloc((res.nparams + 1) * sizeof(float));
    res.buffers = malloc((res.nbuffers + 1) * sizeof(float));
    cr_assert_eq(rm_executor_download_grads(ex, res.grads, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_executor_download_params(ex, res.params, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_executor_download_buffers(ex, res.buffers, &e), RM_OK, "%s", e.msg);
    res.high_water = rm_executor_arena_high_water(ex);
    res.span = pl->span;
    res.live_peak = pl->live_peak;
    rm_optim_free(opt);
    rm_executor_free(ex);
    rm_plan_free(pl);
    return res;
}

/* Per layer: its w and b (and batchnorm statistics), GPU against CPU. */
static void compare_layers(const tiny *t, const char *what, const char *cfg, const float *got, const float *want,
                           int buffers)
{
    size_t at = 0;
    for (int L = 0; L < t->m->nlayers; L++) {
        const rm_model_layer *ly = &t->m->layers[L];
        size_t count = buffers ? ly->buffer_count : ly->param_count;
        if (!count) continue;
        char tensor[96];
        snprintf(tensor, sizeof tensor, "%s.%s", ly->name, buffers ? "stats" : what);
        expect_close(got + at, want + at, count, STEP_TOL, cfg, buffers ? "stats" : what, tensor);
        at += count;
    }
}

/* ---- one step, GPU vs CPU -------------------------------------------------- */

static void step_vs_cpu(const char *cfg, int batch)
{
    tiny t;
    tiny_load(&t, cfg, batch, 0);
    float *input;
    int32_t *labels;
    make_batch(&input, &labels, &t, 1234);
    rm_backend *cpu = cpu_backend(), *gpu = cuda_backend();
    step_result c = run_steps(&t, t.s[0], cpu, input, labels, 2, 0, 0);
    step_result g = run_steps(&t, t.s[0], gpu, input, labels, 2, 0, 1);
    cr_assert_eq(g.nparams, c.nparams);
    cr_assert_eq(g.nbuffers, c.nbuffers);
    cr_assert(isfinite(c.loss[0]) && c.loss[0] > 0, "%s: cpu loss %g", cfg, (double)c.loss[0]);
    /* The same initialisation on both: the parameters are the host init's, uploaded. */
    cr_assert_eq(memcmp(g.params, c.params, c.nparams * sizeof(float)), 0, "%s: initial parameters differ", cfg);
    expect_close(g.loss, c.loss, 2, STEP_TOL, cfg, "step", "loss");
    compare_layers(&t, "grad", cfg, g.grads, c.grads, 0);
    if (c.nbuffers) compare_layers(&t, "grad", cfg, g.buffers, c.buffers, 1);
    /* Every layer got a gradient, and none is NaN (the GPU run poisons dead buffers). */
    for (size_t i = 0; i < g.nparams; i++)
        cr_assert(isfinite(g.grads[i]), "%s: gpu gradient %zu is %g", cfg, i, (double)g.grads[i]);
    cr_log_info("%s: loss cpu %.9g gpu %.9g", cfg, (double)c.loss[1], (double)g.loss[1]);
    step_result_free(&c);
    step_result_free(&g);
    free(input);
    free(labels);
    rm_backend_free(cpu);
    rm_backend_free(gpu);
    tm_free(&t);
}

Test(cuda_train, step_vs_cpu_vgg_tiny)
{
    step_vs_cpu("vgg-tiny.cfg", 3);
}
Test(cuda_train, step_vs_cpu_resnet_tiny)
{
    step_vs_cpu("resnet-tiny.cfg", 2);
}
Test(cuda_train, step_vs_cpu_unet_tiny)
{
    step_vs_cpu("unet-tiny.cfg", 2);
}
Test(cuda_train, step_vs_cpu_mobilenet_tiny)
{
    step_vs_cpu("mobilenet-tiny.cfg", 2);
}
/* ONNX imports (tests/models/onnx): the uploaded initial weights are the file's. */
Test(cuda_train, step_vs_cpu_onnx_residual)
{
    step_vs_cpu("residual.onnx", 2);
}
Test(cuda_train, step_vs_cpu_onnx_unet_tiny)
{
    step_vs_cpu("unet_tiny.onnx", 2);
}
Test(cuda_train, step_vs_cpu_onnx_depthwise)
{
    step_vs_cpu("depthwise.onnx", 2);
}

/* ---- remat on the GPU: bit-identical to checkpoint-all ---------------------- */

static void remat_bit_identical(const char *cfg, int batch)
{
    tiny t;
    tiny_load(&t, cfg, batch, 1);
    cr_assert_gt(t.n, 2, "%s: no rematerializing schedule", cfg);
    float *input;
    int32_t *labels;
    make_batch(&input, &labels, &t, 99);
    rm_backend *gpu = cuda_backend();
    step_result ref = run_steps(&t, t.s[0], gpu, input, labels, 2, 0, 1);
    for (int k = 0; k < t.n; k++) {
        const char *name = t.name[k];
        rm_sim_result r = simulate(t.p, t.s[k]);
        if (k > 0) cr_assert_gt(r.recomputations, 0, "%s %s: no recomputation", cfg, name);
        step_result res = k == 0 ? ref : run_steps(&t, t.s[k], gpu, input, labels, 2, 0, 1);
        size_t aligned_peak = simulate(t.pa, t.s[k]).peak_bytes;
        cr_expect_eq(res.high_water, res.span, "%s %s: arena high water %zu, plan span %zu", cfg, name, res.high_water,
                     res.span);
        cr_expect_eq(res.live_peak, aligned_peak, "%s %s: plan live peak %zu, simulator (aligned) %zu", cfg, name,
                     res.live_peak, aligned_peak);
        int same_loss = !memcmp(res.loss, ref.loss, sizeof ref.loss);
        int same_grads = !memcmp(res.grads, ref.grads, ref.nparams * sizeof(float));
        int same_stats = !memcmp(res.buffers, ref.buffers, ref.nbuffers * sizeof(float));
        size_t worst;
        double err = rel_err(res.grads, ref.grads, ref.nparams, &worst);
        report_line("%s %s %s %.3e %g", cfg, "remat", name, err, 0.0);
        cr_expect(same_loss, "%s %s: loss %.9g, checkpoint-all %.9g", cfg, name, (double)res.loss[1],
                  (double)ref.loss[1]);
        cr_expect(same_grads, "%s %s: gradients differ from checkpoint-all's (relative error %.3e at %zu)", cfg, name,
                  err, worst);
        cr_expect(same_stats, "%s %s: batchnorm running statistics differ", cfg, name);
        cr_log_info("%s %-24s recomputations %3ld  span %zu  high water %zu", cfg, name, r.recomputations, res.span,
                    res.high_water);
        if (k > 0) step_result_free(&res);
    }
    step_result_free(&ref);
    free(input);
    free(labels);
    rm_backend_free(gpu);
    tm_free(&t);
}

Test(cuda_train, remat_bit_identical_vgg_tiny, .timeout = 300)
{
    remat_bit_identical("vgg-tiny.cfg", 3);
}
Test(cuda_train, remat_bit_identical_resnet_tiny, .timeout = 300)
{
    remat_bit_identical("resnet-tiny.cfg", 2);
}
Test(cuda_train, remat_bit_identical_unet_tiny, .timeout = 300)
{
    remat_bit_identical("unet-tiny.cfg", 2);
}

/* ---- whole training steps: executor + optimizer ----------------------------- */

Test(cuda_train, training_steps_vs_cpu_resnet_tiny)
{
    tiny t;
    tiny_load(&t, "resnet-tiny.cfg", 4, 0);
    float *input;
    int32_t *labels;
    make_batch(&input, &labels, &t, 5);
    rm_backend *cpu = cpu_backend(), *gpu = cuda_backend();
    step_result c = run_steps(&t, t.s[0], cpu, input, labels, 4, 1, 0);
    step_result g = run_steps(&t, t.s[0], gpu, input, labels, 4, 1, 0);
    expect_close(g.loss, c.loss, 2, STEP_TOL, "resnet-tiny.cfg", "4steps", "loss");
    compare_layers(&t, "param", "resnet-tiny.cfg", g.params, c.params, 0);
    compare_layers(&t, "grad4", "resnet-tiny.cfg", g.grads, c.grads, 0);
    cr_expect_lt(c.loss[1], c.loss[0], "four SGD steps on one batch lower the loss (cpu %g -> %g)", (double)c.loss[0],
                 (double)c.loss[1]);
    step_result_free(&c);
    step_result_free(&g);
    free(input);
    free(labels);
    rm_backend_free(cpu);
    rm_backend_free(gpu);
    tm_free(&t);
}

/* ---- the optimizer kernels -------------------------------------------------- */

static void optim_vs_cpu(const char *name, rm_optim_options o)
{
    enum { T = 3, STEPS = 5 };
    const size_t sizes[T] = {1000, 37, 4099};
    size_t total = 0;
    for (int i = 0; i < T; i++) total += sizes[i];
    rm_rng rng = rm_rng_make(777);
    float *w = malloc(total * sizeof *w), *dw = malloc(STEPS * total * sizeof *dw);
    for (size_t i = 0; i < total; i++) w[i] = (float)rm_rng_range(&rng, -1, 1);
    for (size_t i = 0; i < STEPS * total; i++) dw[i] = (float)rm_rng_range(&rng, -1, 1);
    float *hw = malloc(total * sizeof *hw), *hdw = malloc(total * sizeof *hdw);
    memcpy(hw, w, total * sizeof *w);
    rm_backend *gpu = cuda_backend();
    rm_err e = {0};
    float *gw = NULL, *gdw = NULL;
    cr_assert_eq(rm_backend_alloc(gpu, (void **)&gw, total * sizeof(float), &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_alloc(gpu, (void **)&gdw, total * sizeof(float), &e), RM_OK, "%s", e.msg);
    cr_assert_eq(gpu->ops->upload(gpu->ctx, gw, w, total * sizeof(float), &e), RM_OK, "%s", e.msg);
    rm_optim_tensor ht[T], gt[T];
    size_t off = 0;
    for (int i = 0; i < T; i++) {
        ht[i] = (rm_optim_tensor){hw + off, hdw + off, sizes[i], i != 1};
        gt[i] = (rm_optim_tensor){gw + off, gdw + off, sizes[i], i != 1};
        off += sizes[i];
    }
    rm_optim *ho = NULL, *go = NULL, *twin = NULL;
    cr_assert_eq(rm_optim_create(&ho, ht, T, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_optim_create_on(&go, gt, T, &o, gpu, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_optim_backend(go), gpu);
    for (int s = 0; s < STEPS; s++) {
        memcpy(hdw, dw + (size_t)s * total, total * sizeof(float));
        cr_assert_eq(gpu->ops->upload(gpu->ctx, gdw, hdw, total * sizeof(float), &e), RM_OK, "%s", e.msg);
        double lr = 0.01 * (s + 1);
        cr_assert_eq(rm_optim_step(ho, lr, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_optim_step(go, lr, &e), RM_OK, "%s", e.msg);
    }
    float *got = malloc(total * sizeof *got);
    cr_assert_eq(gpu->ops->download(gpu->ctx, got, gw, total * sizeof(float), &e), RM_OK, "%s", e.msg);
    expect_close(got, hw, total, OPT_TOL, "optimizer", name, "w");
    int bits = !memcmp(got, hw, total * sizeof(float));
    report_line("%s %s %s %.3e %g", "optimizer", name, "w_bit_identical(1=yes)", (double)bits, -1.0);
    cr_log_info("optimizer %s: %s", name, bits ? "bit-identical to the CPU" : "within tolerance, not bit-identical");
    /* The state, through a host twin (what a snapshot saves). */
    float *tw = calloc(total, sizeof *tw), *tdw = calloc(total, sizeof *tdw);
    rm_optim_tensor tt[T];
    off = 0;
    for (int i = 0; i < T; i++) {
        tt[i] = (rm_optim_tensor){tw + off, tdw + off, sizes[i], i != 1};
        off += sizes[i];
    }
    cr_assert_eq(rm_optim_create(&twin, tt, T, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_optim_state_copy(twin, go, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_optim_steps(twin), STEPS);
    for (int slot = 0; slot < rm_optim_slots(ho); slot++)
        for (int i = 0; i < T; i++) {
            char tensor[32];
            snprintf(tensor, sizeof tensor, "state%d.t%d", slot, i);
            expect_close(rm_optim_state(twin, i, slot), rm_optim_state(ho, i, slot), sizes[i], OPT_TOL, "optimizer",
                         name, tensor);
        }
    /* And back: a device optimizer restored from the twin steps as the original. */
    rm_optim_reset(go);
    cr_assert_eq(rm_optim_steps(go), 0);
    cr_assert_eq(rm_optim_state_copy(go, twin, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_optim_steps(go), STEPS);
    rm_optim_free(twin);
    rm_optim_free(go);
    rm_optim_free(ho);
    rm_backend_release(gpu, gw);
    rm_backend_release(gpu, gdw);
    rm_backend_free(gpu);
    free(w), free(dw), free(hw), free(hdw), free(got), free(tw), free(tdw);
}

Test(cuda_train, optimizer_sgd)
{
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_SGD);
    o.momentum = 0;
    o.weight_decay = 1e-2;
    optim_vs_cpu("sgd_plain", o);
}

Test(cuda_train, optimizer_sgd_momentum)
{
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_SGD);
    o.weight_decay = 5e-4;
    optim_vs_cpu("sgd_momentum", o);
    o.nesterov = 1;
    o.decay_all = 1;
    optim_vs_cpu("sgd_nesterov", o);
}

Test(cuda_train, optimizer_adam)
{
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_ADAM);
    o.weight_decay = 1e-2;
    optim_vs_cpu("adam", o);
    o.decoupled_wd = 1;
    optim_vs_cpu("adamw", o);
}

/* ---- the trainer on the GPU --------------------------------------------------- */

static rm_trainer_config train_config(void)
{
    static char model[512];
    snprintf(model, sizeof model, "%s/models/resnet-tiny.cfg", tm_source_dir());
    rm_trainer_config c;
    rm_trainer_config_default(&c);
    c.model_path = model;
    c.batch = 8;
    c.strategy = "chen_greedy";
    c.synthetic_samples = 64;
    c.epochs = 2;
    c.optim = rm_optim_options_default(RM_OPTIM_ADAM);
    c.lr = 0.01;
    c.seed = 7;
    c.seed_given = 1;
    c.device = RM_BACKEND_CUDA;
    /* An absolute budget seven eighths of the way from the least any
     * schedule needs to checkpoint-all's peak, so chen_greedy recomputes (a
     * percentage of the no-remat peak would mostly be the CUDA workspace). */
    rm_model *m = NULL;
    rm_problem *p = NULL;
    rm_schedule *all = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_model_load(&m, model, &e), RM_OK, "%s", e.msg);
    /* The trainer's accounting on this GPU: the cuBLAS workspace is fixed memory too. */
    rm_backend *gpu = cuda_backend();
    cr_assert_eq(rm_training_problem(&p, NULL, m, c.batch, &c.optim, gpu, NULL, RM_COST_SAME_BATCH, &e), RM_OK, "%s",
                 e.msg);
    rm_backend_free(gpu);
    cr_assert_eq(rm_strategy_checkpoint_all(&all, p, &e), RM_OK, "%s", e.msg);
    size_t top = simulate(p, all).peak_bytes, lb = rm_problem_peak_lower_bound(p);
    c.budget = p->fixed_bytes + lb + (top - lb) * 7 / 8;
    rm_schedule_free(all);
    rm_problem_free(p);
    rm_model_free(m);
    return c;
}

typedef struct losses {
    double loss[32];
    int have[32];
} losses;

static void on_event(void *ctx, const rm_trainer_event *ev)
{
    losses *l = ctx;
    if (ev->kind == RM_TRAINER_STEP && ev->step >= 1 && ev->step <= 32) {
        l->loss[ev->step - 1] = ev->loss;
        l->have[ev->step - 1] = 1;
    }
}

static rm_trainer *trainer_run(const rm_trainer_config *c)
{
    rm_trainer *t = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_create(&t, c, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(rm_trainer_summary_of(t)->device, "cuda");
    cr_assert_eq(rm_trainer_run(t, &e), RM_OK, "%s", e.msg);
    return t;
}

/* `remat profile --device cuda`'s library: every node timed with device
 * events (its median inside its spread, positive where it computes), and
 * the cost file carries the medians unchanged, one entry per node. */
Test(cuda_train, profile_on_the_gpu, .timeout = 300)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/vgg-tiny.cfg", tm_source_dir());
    rm_err e = {0};
    rm_model *m = NULL;
    cr_assert_eq(rm_model_load(&m, path, &e), RM_OK, "%s", e.msg);
    rm_profile_options o;
    memset(&o, 0, sizeof o);
    o.device = RM_BACKEND_CUDA, o.batch = 2, o.warmup = 1, o.reps = 3, o.seed = 5;
    rm_profile *p = NULL;
    cr_assert_eq(rm_profile_run(&p, m, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(p->device, "cuda");
    cr_assert_eq(p->reps, 3);
    cr_assert_gt(p->step_median, 0);
    for (int v = 0; v < p->g.n; v++) {
        const rm_graph_node *nd = &p->g.nodes[v];
        cr_assert(p->lo[v] <= p->seconds[v] && p->seconds[v] <= p->hi[v], "%s: %g not in [%g, %g]", nd->name,
                  p->seconds[v], p->lo[v], p->hi[v]);
        /* Every node with arithmetic runs kernels, which take time (the input is loaded, not computed). */
        if (nd->op != RM_OP_INPUT && nd->flops > 0) cr_assert_gt(p->seconds[v], 0, "%s: no time measured", nd->name);
    }
    rm_cost_file *c = NULL;
    cr_assert_eq(rm_profile_cost_file(&c, p, "vgg-tiny", &e), RM_OK, "%s", e.msg);
    cr_assert_eq(c->batch, 2);
    for (int v = 0; v < p->g.n; v++) cr_assert_eq(c->nodes[v].seconds, p->seconds[v]);
    rm_cost_file_free(c);
    rm_profile_free(p);
    rm_model_free(m);
}

#ifdef REMAT_CUDA_EMU
size_t rm_emu_allocation_count(void); /* tests/cuda_emu/runtime.cpp */

/* Issue 5's rule "no allocation inside a step", checked where allocations
 * can be counted (the CUDA emulator): every kernel library's trainer allocates all
 * device memory at creation, and its steps and evaluations none. */
Test(cuda_train, no_device_allocation_inside_steps, .timeout = 300)
{
    static const char *libs[] = {"handwritten", "cublas", "cudnn"};
    for (int i = 0; i < 3; i++) {
        setenv("REMAT_KERNELS", libs[i], 1);
        rm_trainer_config c = train_config();
        c.max_steps = 3;
        c.eval_every = 2;
        rm_trainer *t = NULL;
        rm_err e = {RM_OK, ""};
        cr_assert_eq(rm_trainer_create(&t, &c, &e), RM_OK, "%s: %s", libs[i], e.msg);
        size_t before = rm_emu_allocation_count();
        cr_assert_eq(rm_trainer_run(t, &e), RM_OK, "%s: %s", libs[i], e.msg);
        size_t during = rm_emu_allocation_count() - before;
        cr_assert_eq(during, 0, "%s: %zu device allocations during 3 steps and their evaluations", libs[i], during);
        rm_trainer_free(t);
    }
}
#endif

/* remat train --device cuda --kernels handwritten: the trainer's backend runs
 * the library the option names, whatever REMAT_KERNELS says, and its
 * summary says which. */
Test(cuda_train, kernels_option_chooses_the_library, .timeout = 300)
{
    setenv("REMAT_KERNELS", "cublas", 1);
    rm_trainer_config c = train_config();
    c.backend.set_kernels = 1;
    c.backend.kernels = RM_CUDA_KERNELS_HANDWRITTEN;
    rm_trainer *t = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_create(&t, &c, &e), RM_OK, "%s", e.msg);
    unsetenv("REMAT_KERNELS");
    cr_expect_eq(rm_backend_cuda_kernels(rm_executor_backend(rm_trainer_executor(t))), RM_CUDA_KERNELS_HANDWRITTEN);
    cr_expect_str_eq(rm_trainer_summary_of(t)->device_settings, "GPU 0, handwritten kernels");
    rm_trainer_free(t);
}

static float *trainer_params(rm_trainer *t, size_t *n)
{
    rm_executor *ex = rm_trainer_executor(t);
    rm_executor_params(ex, n);
    float *p = malloc((*n + 1) * sizeof *p);
    rm_err e = {0};
    cr_assert_eq(rm_executor_download_params(ex, p, &e), RM_OK, "%s", e.msg);
    return p;
}

Test(cuda_train, trainer_snapshot_resume, .timeout = 300)
{
    char dir[] = "/tmp/remat_cuda_train_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/run.snap", dir);
    losses la, lb, lc;
    memset(&la, 0, sizeof la), memset(&lb, 0, sizeof lb), memset(&lc, 0, sizeof lc);
    /* Six steps of four an epoch, stopped after three: the resumed run
     * crosses the end of the first epoch. */
    rm_trainer_config c = train_config();
    c.synthetic_samples = 32;
    c.max_steps = 6;
    c.event = on_event, c.event_ctx = &la;
    cr_log_info("trainer on the GPU: budget %zu bytes", c.budget);
    rm_trainer *a = trainer_run(&c);
    for (int i = 0; i < 6; i++) {
        cr_assert(la.have[i] && isfinite(la.loss[i]), "step %d", i);
        if (i == 0 || i == 5) { /* values, not errors */
            char step[32];
            snprintf(step, sizeof step, "loss_step%d", i + 1);
            report_line("%s %s %s %.3e %g", "trainer", "resnet-tiny", step, la.loss[i], -1.0);
        }
    }
    rm_trainer_config cb = c;
    cb.max_steps = 3;
    cb.snapshot_path = path;
    cb.event_ctx = &lb;
    rm_trainer *b = trainer_run(&cb);
    for (int i = 0; i < 3; i++) cr_assert_eq(lb.loss[i], la.loss[i], "step %d before the stop", i);
    rm_trainer_config cc = c;
    cc.resume_path = path;
    cc.event_ctx = &lc;
    rm_trainer *r = trainer_run(&cc);
    cr_assert_eq(rm_trainer_summary_of(r)->start_step, 3);
    for (int i = 3; i < 6; i++)
        cr_assert_eq(lc.loss[i], la.loss[i], "step %d: resumed %.9g, uninterrupted %.9g", i, lc.loss[i], la.loss[i]);
    size_t n = 0, n2 = 0;
    float *pa = trainer_params(a, &n), *pr = trainer_params(r, &n2);
    cr_assert_eq(n, n2);
    cr_assert_eq(memcmp(pa, pr, n * sizeof(float)), 0, "parameters after the resumed run differ");
    free(pa), free(pr);
    rm_trainer_free(a), rm_trainer_free(b), rm_trainer_free(r);
    remove(path);
    rmdir(dir);
}

/* ---- budgets the device cannot hold -------------------------------------------- */

Test(cuda_train, budget_over_device_memory)
{
    tiny t;
    tiny_load(&t, "vgg-tiny.cfg", 2, 0);
    rm_backend *gpu = cuda_backend();
    size_t free_b = 0, total_b = 0;
    rm_err e = {0};
    cr_assert_eq(gpu->ops->mem_info(gpu->ctx, &free_b, &total_b, &e), RM_OK, "%s", e.msg);
    cr_assert_gt(total_b, 0);
    rm_plan *pl = plan_of(&t, t.s[0]);
    rm_executor *ex = NULL;
    rm_executor_options opts = {.seed = 1, .arena_budget = total_b + ((size_t)1 << 30)};
    cr_assert_eq(rm_executor_create(&ex, t.m, &t.g, gpu, pl, &opts, &e), RM_ERR_BUDGET);
    cr_assert_null(ex);
    cr_assert(strstr(e.msg, "free on the GPU"), "%s", e.msg);
    /* The trainer says so too, before allocating. */
    rm_trainer_config c = train_config();
    c.budget = total_b + ((size_t)1 << 30);
    c.strategy = "checkpoint_all";
    rm_trainer *tr = NULL;
    rm_err e2 = {0};
    cr_assert_eq(rm_trainer_create(&tr, &c, &e2), RM_ERR_BUDGET, "%s", e2.msg);
    cr_assert(strstr(e2.msg, "GPU has free"), "%s", e2.msg);
    rm_plan_free(pl);
    rm_backend_free(gpu);
    tm_free(&t);
}
