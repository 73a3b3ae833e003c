/* The plan and the executor. Plans: no two buffers live at the same time
 * overlap (every pair), offsets are aligned, and the live-bytes peak equals
 * the simulator's peak on 64-byte-rounded sizes, for checkpoint-all and every
 * baseline strategy at budgets that force recomputation, on the tiny models
 * and on random training graphs. The executor: one training step under every
 * such schedule gives a loss, parameter gradients and batchnorm running
 * statistics bit-identical to checkpoint-all (memcmp) on vgg-tiny (dropout),
 * resnet-tiny (batchnorm, residual gradient sums), unet-tiny (concat,
 * transposed convolutions) and mobilenet-tiny (depthwise convolutions); the
 * arena's measured high-water mark equals the plan's span; and the tiny
 * models' gradients match central finite differences
 * of the loss, which checks the graph wiring (gradient slices, sums) end to
 * end.
 *
 * Over ~600 lines on purpose: the plan and executor cases share the plan
 * checks at the top of this file (the schedule sets: tests/tiny_models.c).
 */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "builder.h"
#include "executor.h"
#include "layers.h"
#include "plan.h"
#include "problem.h"
#include "schedule.h"
#include "scheduler/random_graphs.h"
#include "simulate.h"
#include "strategy.h"
#include "tiny_models.h"
#include "trace.h"

/* ---- helpers ------------------------------------------------------------- */

static rm_sim_result simulate(const rm_problem *p, const rm_schedule *s)
{
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    return r;
}

/* Every pair of coexisting buffers, checked here independently of rm_plan_check. */
static void expect_plan_sound(const rm_plan *pl, const char *what)
{
    size_t top = 0;
    for (int i = 0; i < pl->nbuffers; i++) {
        const rm_plan_buffer *a = &pl->buffers[i];
        cr_assert_eq(a->offset % RM_ARENA_ALIGN, 0, "%s: buffer %d at %zu", what, i, a->offset);
        cr_assert_eq(a->size, rm_align_up(a->bytes), "%s: buffer %d", what, i);
        cr_assert_lt(a->alloc_op, a->free_op, "%s: buffer %d", what, i);
        if (a->size && a->offset + a->size > top) top = a->offset + a->size;
        for (int j = i + 1; j < pl->nbuffers; j++) {
            const rm_plan_buffer *b = &pl->buffers[j];
            int coexist = a->alloc_op < b->free_op && b->alloc_op < a->free_op;
            int overlap = a->size && b->size && a->offset < b->offset + b->size && b->offset < a->offset + a->size;
            cr_assert(!(coexist && overlap),
                      "%s: buffers %d (node %d, ops %d-%d, [%zu,+%zu)) and %d (node %d, ops %d-%d, [%zu,+%zu)) overlap",
                      what, i, a->node, a->alloc_op, a->free_op, a->offset, a->size, j, b->node, b->alloc_op,
                      b->free_op, b->offset, b->size);
        }
    }
    cr_assert_eq(top, pl->span, "%s: span %zu but buffers reach %zu", what, pl->span, top);
    cr_assert_geq(pl->span, pl->live_peak, "%s", what);
    for (int o = 0; o < pl->nops; o++)
        cr_assert_eq(pl->ops[o].offset, pl->buffers[pl->ops[o].buffer].offset, "%s: op %d", what, o);
    rm_err e = {0};
    cr_assert_eq(rm_plan_check(pl, &e), RM_OK, "%s: %s", what, e.msg);
}

/* Plans s and checks it against the simulator: live_peak on aligned sizes,
 * bytes_peak on the sizes as they are. */
static rm_plan *plan_checked(const rm_problem *p, const rm_problem *pa, const rm_schedule *s, const rm_graph *g,
                             const char *what)
{
    rm_op *ops;
    int nops;
    rm_err e = {0};
    cr_assert_eq(rm_schedule_ops(&ops, &nops, p, s, &e), RM_OK, "%s: %s", what, e.msg);
    rm_plan *pl;
    if (g) {
        cr_assert_eq(rm_plan_from_graph(&pl, g, ops, nops, &e), RM_OK, "%s: %s", what, e.msg);
    } else {
        size_t *bytes = malloc((size_t)p->n * sizeof *bytes);
        for (int i = 0; i < p->n; i++) bytes[i] = p->nodes[i].bytes;
        cr_assert_eq(rm_plan_create(&pl, bytes, p->n, ops, nops, &e), RM_OK, "%s: %s", what, e.msg);
        free(bytes);
    }
    free(ops);
    expect_plan_sound(pl, what);
    rm_sim_result ra = simulate(pa, s), r = simulate(p, s);
    cr_assert_eq(pl->live_peak, ra.peak_bytes, "%s: plan live peak %zu, simulator (aligned) %zu", what, pl->live_peak,
                 ra.peak_bytes);
    cr_assert_eq(pl->bytes_peak, r.peak_bytes, "%s: plan bytes peak %zu, simulator %zu", what, pl->bytes_peak,
                 r.peak_bytes);
    return pl;
}

/* A tiny model and its schedules (tests/tiny_models.h): checkpoint-all
 * first, every baseline at the lowest budget it fits (so each recomputes),
 * the anneal halfway (and, with solvers, LP rounding and the MILP, seconds
 * each on the tiny models, so only where the exactness of a step is
 * checked), and the checkpoint construction with none last. */
typedef tm_tiny tiny;

static void tiny_load(tiny *t, const char *cfg, int batch, int solvers)
{
    tm_load(t, cfg, batch, TM_BASELINES | TM_ANNEAL | TM_NO_CHECKPOINTS | (solvers ? TM_LP_ROUND | TM_MILP : 0));
}

/* Deterministic random inputs and labels for a batch. */
static void make_batch(float **input, int32_t **labels, const tiny *t, uint64_t seed)
{
    const rm_graph_node *in = &t->g.nodes[0];
    size_t n = rm_shape_numel(in->shape), nl = rm_model_label_count(t->m, t->g.batch);
    int classes = t->m->layers[t->m->nlayers - 1].in_shape[0].c;
    *input = malloc(n * sizeof **input);
    *labels = malloc(nl * sizeof **labels);
    rm_rng r = rm_rng_make(seed);
    for (size_t i = 0; i < n; i++) (*input)[i] = (float)rm_rng_range(&r, -1.0, 1.0);
    for (size_t i = 0; i < nl; i++) (*labels)[i] = (int32_t)(rm_rng_next(&r) % (uint64_t)classes);
}

/* What one step leaves behind. */
typedef struct step_result {
    float loss[2];
    float *grads, *buffers;
    size_t ngrads, nbuffers;
    size_t high_water, span, live_peak;
} step_result;

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

/* Two steps (step numbers 7 and 8, so batchnorm folds two batches into its
 * running statistics), the same batch each time, parameters not updated. */
static step_result run_steps(const tiny *t, const rm_schedule *s, rm_backend *be, const float *input,
                             const int32_t *labels)
{
    step_result res;
    memset(&res, 0, sizeof res);
    rm_plan *pl = plan_of(t, s);
    rm_executor *ex;
    rm_err e = {0};
    rm_executor_options opts = {.seed = 42, .poison = 1};
    cr_assert_eq(rm_executor_create(&ex, t->m, &t->g, be, pl, &opts, &e), RM_OK, "%s", e.msg);
    for (int k = 0; k < 2; k++)
        cr_assert_eq(rm_executor_step(ex, &res.loss[k], input, labels, 7 + (uint64_t)k, &e), RM_OK, "%s", e.msg);
    float *g = rm_executor_grads(ex, &res.ngrads), *b = rm_executor_buffers(ex, &res.nbuffers);
    res.grads = malloc((res.ngrads + 1) * sizeof(float));
    res.buffers = malloc((res.nbuffers + 1) * sizeof(float));
    memcpy(res.grads, g, res.ngrads * sizeof(float));
    if (res.nbuffers) memcpy(res.buffers, b, res.nbuffers * sizeof(float));
    res.high_water = rm_executor_arena_high_water(ex);
    res.span = pl->span;
    res.live_peak = pl->live_peak;
    rm_executor_free(ex);
    rm_plan_free(pl);
    return res;
}

/* Whether the schedule computes some node satisfying `which` more than once. */
static int recomputes(const tiny *t, const rm_schedule *s, int (*which)(const tiny *, int))
{
    int *counts = malloc((size_t)s->n * sizeof *counts), found = 0;
    rm_schedule_compute_counts(s, counts);
    for (int i = 0; i < s->n; i++) found |= which(t, i) && counts[i] > 1;
    free(counts);
    return found;
}

static int is_layer_kind(const tiny *t, int i, rm_layer_kind kind)
{
    const rm_graph_node *nd = &t->g.nodes[i];
    return nd->op == RM_OP_FORWARD && t->m->layers[nd->layer].desc->kind == kind;
}
static int is_batchnorm(const tiny *t, int i)
{
    return is_layer_kind(t, i, RM_LAYER_BATCHNORM2D);
}
static int is_dropout(const tiny *t, int i)
{
    return is_layer_kind(t, i, RM_LAYER_DROPOUT);
}
static int is_dwconv(const tiny *t, int i)
{
    return is_layer_kind(t, i, RM_LAYER_DWCONV2D);
}
static int is_any(const tiny *t, int i)
{
    return (void)t, (void)i, 1;
}

/* A CPU backend with the given kernel library and threads. */
static rm_backend *cpu_backend(rm_cpu_kernel_lib lib, int threads)
{
    rm_backend *be;
    rm_err e = {0};
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cpu_set_kernels(be, lib, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cpu_set_threads(be, threads, &e), RM_OK, "%s", e.msg);
    return be;
}

/* The exactness check of one model on one CPU kernel library and thread
 * count: every schedule against checkpoint-all on the same backend. */
static void expect_bit_identical_on(tiny *tp, const char *cfg, int (*must_recompute)(const tiny *, int),
                                    rm_cpu_kernel_lib lib, int threads);

/* ... on every CPU kernel library: the fast one at 1 and 2 threads, the
 * reference at 2 (both give the same bits at any count: the products'
 * split is checked in tests/layers/test_cpu_fast.c; each count is still its
 * own case here). */
static void expect_bit_identical(const char *cfg, int batch, int (*must_recompute)(const tiny *, int), int solvers)
{
    tiny t;
    tiny_load(&t, cfg, batch, solvers);
    expect_bit_identical_on(&t, cfg, must_recompute, RM_CPU_KERNELS_REFERENCE, 2);
    expect_bit_identical_on(&t, cfg, must_recompute, RM_CPU_KERNELS_FAST, 1);
    expect_bit_identical_on(&t, cfg, must_recompute, RM_CPU_KERNELS_FAST, 2);
    tm_free(&t);
}

static void expect_bit_identical_on(tiny *tp, const char *cfg, int (*must_recompute)(const tiny *, int),
                                    rm_cpu_kernel_lib lib, int threads)
{
    tiny t = *tp;
    rm_backend *be = cpu_backend(lib, threads);
    cr_log_info("%s: %s kernels, %d threads", cfg, rm_cpu_kernel_lib_name(lib), threads);
    float *input;
    int32_t *labels;
    make_batch(&input, &labels, &t, 1234);
    step_result ref = run_steps(&t, t.s[0], be, input, labels);
    cr_assert(isfinite(ref.loss[0]) && ref.loss[0] > 0, "%s: loss %g", cfg, (double)ref.loss[0]);
    /* Same batch, same parameters: only dropout (its masks differ per step) changes the loss. */
    int has_dropout = 0;
    for (int L = 0; L < t.m->nlayers; L++) has_dropout |= t.m->layers[L].desc->kind == RM_LAYER_DROPOUT;
    cr_assert_eq(ref.loss[0] != ref.loss[1], has_dropout, "%s: losses %.9g and %.9g in steps 7 and 8", cfg,
                 (double)ref.loss[0], (double)ref.loss[1]);
    int seen_recompute = 0;
    for (int k = 0; k < t.n; k++) {
        const char *name = t.name[k];
        rm_sim_result r = simulate(t.p, t.s[k]);
        /* (A schedule in its own order may fit by the order alone.) */
        if (k > 0 && !t.s[k]->order) cr_assert_gt(r.recomputations, 0, "%s %s: no recomputation", cfg, name);
        seen_recompute |= recomputes(&t, t.s[k], must_recompute);
        step_result res = k == 0 ? ref : run_steps(&t, t.s[k], be, input, labels);
        cr_assert_eq(res.high_water, res.span, "%s %s: arena high water %zu, plan span %zu", cfg, name, res.high_water,
                     res.span);
        size_t aligned_peak = simulate(t.pa, t.s[k]).peak_bytes;
        cr_assert_eq(res.live_peak, aligned_peak, "%s %s: plan live peak %zu, simulator (aligned) %zu", cfg, name,
                     res.live_peak, aligned_peak);
        cr_assert_eq(res.ngrads, ref.ngrads);
        cr_assert_eq(memcmp(res.loss, ref.loss, sizeof ref.loss), 0, "%s %s: loss %.9g, checkpoint-all %.9g", cfg, name,
                     (double)res.loss[1], (double)ref.loss[1]);
        for (size_t i = 0; i < ref.ngrads; i++)
            cr_assert_eq(memcmp(&res.grads[i], &ref.grads[i], sizeof(float)), 0,
                         "%s %s: gradient %zu is %.9g, checkpoint-all %.9g", cfg, name, i, (double)res.grads[i],
                         (double)ref.grads[i]);
        cr_assert_eq(memcmp(res.buffers, ref.buffers, ref.nbuffers * sizeof(float)), 0,
                     "%s %s: batchnorm running statistics differ", cfg, name);
        cr_log_info("%s %-24s recomputations %3ld  cost x%.3f", cfg, name, r.recomputations,
                    r.cost / simulate(t.p, t.s[0]).cost);
        if (k > 0) {
            free(res.grads);
            free(res.buffers);
        }
    }
    cr_assert(seen_recompute, "%s: no schedule recomputes the layer this test is about", cfg);
    /* Every layer's gradients were computed (not left zero), and nothing is
     * NaN. The vector holds the layers' parameters in layer order. */
    size_t at = 0;
    for (int L = 0; L < t.m->nlayers; L++) {
        size_t nz = 0, count = t.m->layers[L].param_count;
        for (size_t i = at; i < at + count; i++) {
            cr_assert(isfinite(ref.grads[i]), "%s: gradient %zu is %g", cfg, i, (double)ref.grads[i]);
            nz += ref.grads[i] != 0.0f;
        }
        cr_assert(count == 0 || nz > 0, "%s: layer %s has no nonzero gradient", cfg, t.m->layers[L].name);
        at += count;
    }
    cr_assert_eq(at, ref.ngrads);
    free(ref.grads);
    free(ref.buffers);
    free(input);
    free(labels);
    rm_backend_free(be);
}

/* ---- plans --------------------------------------------------------------- */

/* Liveness by hand: a (64 B) and b (100 B -> 128) coexist, then c (64 B)
 * reuses a's slot, so the span is the live peak, 192. */
Test(executor_plan, small_by_hand)
{
    size_t bytes[] = {64, 100, 64};
    rm_op ops[] = {{RM_OP_COMPUTE, 0, 0}, {RM_OP_COMPUTE, 1, 1}, {RM_OP_FREE, 0, 1},
                   {RM_OP_COMPUTE, 2, 2}, {RM_OP_FREE, 1, 2},    {RM_OP_FREE, 2, 2}};
    rm_plan *pl;
    rm_err e = {0};
    cr_assert_eq(rm_plan_create(&pl, bytes, 3, ops, 6, &e), RM_OK, "%s", e.msg);
    expect_plan_sound(pl, "by hand");
    cr_assert_eq(pl->nbuffers, 3);
    cr_assert_eq(pl->live_peak, 192);
    cr_assert_eq(pl->bytes_peak, 164);
    cr_assert_eq(pl->span, 192);
    cr_assert_eq(pl->live_peak_op, 1);
    cr_assert_eq(pl->buffers[2].offset, pl->buffers[0].offset);
    rm_plan_free(pl);
}

/* A recomputed node gets a second, separate lifetime. */
Test(executor_plan, recomputation_is_a_new_lifetime)
{
    size_t bytes[] = {256, 64};
    rm_op ops[] = {{RM_OP_COMPUTE, 0, 0}, {RM_OP_FREE, 0, 0}, {RM_OP_COMPUTE, 1, 1},
                   {RM_OP_COMPUTE, 0, 2}, {RM_OP_FREE, 1, 2}, {RM_OP_FREE, 0, 2}};
    rm_plan *pl;
    rm_err e = {0};
    cr_assert_eq(rm_plan_create(&pl, bytes, 2, ops, 6, &e), RM_OK, "%s", e.msg);
    expect_plan_sound(pl, "recompute");
    cr_assert_eq(pl->nbuffers, 3);
    cr_assert_eq(pl->buffers[0].node, 0);
    cr_assert_eq(pl->buffers[2].node, 0);
    cr_assert_eq(pl->buffers[0].free_op, 1);
    cr_assert_eq(pl->buffers[2].alloc_op, 3);
    cr_assert_eq(pl->ops[5].buffer, 2);
    cr_assert_eq(pl->live_peak, 320);
    cr_assert_eq(pl->span, 320);
    rm_plan_free(pl);
}

Test(executor_plan, rejects_inconsistent_ops)
{
    size_t bytes[] = {64, 64};
    rm_plan *pl;
    rm_err e = {0};
    rm_op twice[] = {{RM_OP_COMPUTE, 0, 0}, {RM_OP_COMPUTE, 0, 0}};
    cr_assert_eq(rm_plan_create(&pl, bytes, 2, twice, 2, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "already live"), "%s", e.msg);
    rm_op dead[] = {{RM_OP_FREE, 1, 0}};
    cr_assert_eq(rm_plan_create(&pl, bytes, 2, dead, 1, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "not live"), "%s", e.msg);
    rm_op range[] = {{RM_OP_COMPUTE, 2, 0}};
    cr_assert_eq(rm_plan_create(&pl, bytes, 2, range, 1, &e), RM_ERR_INVALID);
    /* With the graph, a compute whose input is not live is refused too. */
    rm_graph g = {0};
    rm_graph_node nd = {.bytes = 64};
    cr_assert_geq(rm_graph_add_node(&g, &nd, NULL, NULL, 0, &e), 0);
    cr_assert_geq(rm_graph_add_node(&g, &nd, (int[]){0}, NULL, 1, &e), 0);
    rm_op unread[] = {{RM_OP_COMPUTE, 0, 0}, {RM_OP_FREE, 0, 0}, {RM_OP_COMPUTE, 1, 1}};
    cr_assert_eq(rm_plan_from_graph(&pl, &g, unread, 3, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "not live"), "%s", e.msg);
    rm_graph_free(&g);
}

/* Batch 3 gives tensors whose sizes are not multiples of 64 bytes (logits,
 * and the 4-byte loss in every model), so the rounding is exercised. */
static void plan_every_schedule(const char *cfg)
{
    tiny t;
    tiny_load(&t, cfg, 3, 0);
    cr_assert_geq(t.n, 6, "%s: only %d schedules", cfg, t.n);
    for (int k = 0; k < t.n; k++) {
        char what[128];
        snprintf(what, sizeof what, "%s %s", cfg, t.name[k]);
        rm_plan *pl = plan_checked(t.p, t.pa, t.s[k], &t.g, what);
        rm_sim_result r = simulate(t.p, t.s[k]), ra = simulate(t.pa, t.s[k]);
        cr_log_info("%-16s %-22s budget %8zu  sim peak %8zu (aligned %8zu)  live peak %8zu  span %8zu  frag %5.2f%%",
                    cfg, t.name[k], t.budget[k] ? t.budget[k] - t.p->fixed_bytes : 0, r.peak_bytes, ra.peak_bytes,
                    pl->live_peak, pl->span, 100.0 * rm_plan_fragmentation(pl));
        rm_plan_free(pl);
    }
    tm_free(&t);
}

Test(executor_plan, vgg_tiny_every_strategy)
{
    plan_every_schedule("vgg-tiny.cfg");
}
Test(executor_plan, resnet_tiny_every_strategy)
{
    plan_every_schedule("resnet-tiny.cfg");
}
Test(executor_plan, unet_tiny_every_strategy)
{
    plan_every_schedule("unet-tiny.cfg");
}
Test(executor_plan, mobilenet_tiny_every_strategy)
{
    plan_every_schedule("mobilenet-tiny.cfg");
}

/* Random training graphs with sizes in multiples of 16 bytes, so rounding to
 * 64 matters; every strategy at every budget level it fits. */
Test(executor_plan, random_graphs_every_strategy)
{
    int count, plans = 0;
    const rm_strategy_info *list = rm_strategy_list(&count);
    double frag_sum = 0, frag_max = 0;
    for (uint64_t seed = 1; seed <= 24; seed++) {
        rg_options o = {.forward = 3 + (int)(seed * 5 % 20),
                        .skip_prob = 0.1 + 0.1 * (double)(seed % 4),
                        .branch_prob = 0.1 * (double)(seed % 3),
                        .max_skip = (int)(seed % 5) * 3,
                        .max_bytes = 64 + 96 * (size_t)(seed % 12)};
        rm_problem *p = rg_training_problem(seed, &o);
        cr_assert_not_null(p);
        rm_problem *pa = tm_aligned_problem(p);
        rm_schedule *s;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
        size_t top = simulate(p, s).peak_bytes, lb = rm_problem_peak_lower_bound(p);
        rm_schedule_free(s);
        for (int level = 0; level <= 4; level++) {
            p->budget = level == 4 ? 0 : p->fixed_bytes + lb + (top - lb) * (size_t)level / 4;
            for (int k = 0; k < count; k++) {
                int rc = list[k].solve(&s, p, &e);
                if (rc == RM_ERR_INFEASIBLE) continue;
                cr_assert_eq(rc, RM_OK, "%s: %s", list[k].name, e.msg);
                char what[96];
                snprintf(what, sizeof what, "seed %lu %s level %d", (unsigned long)seed, list[k].name, level);
                rm_plan *pl = plan_checked(p, pa, s, NULL, what);
                double f = rm_plan_fragmentation(pl);
                frag_sum += f;
                if (f > frag_max) frag_max = f;
                plans++;
                rm_plan_free(pl);
                rm_schedule_free(s);
            }
        }
        rm_problem_free(p);
        rm_problem_free(pa);
    }
    cr_assert_gt(plans, 200);
    cr_log_info("random graphs: %d plans, fragmentation mean %.2f%%, max %.2f%%", plans, 100 * frag_sum / plans,
                100 * frag_max);
}

/* ---- the executor -------------------------------------------------------- */

/* The MILP and LP rounding join on vgg-tiny only: their LPs take tens of
 * seconds on the larger tiny graphs, too slow for this suite. */
Test(executor, bit_identical_vgg_tiny_dropout)
{
    expect_bit_identical("vgg-tiny.cfg", 3, is_dropout, 1);
}
Test(executor, bit_identical_resnet_tiny_batchnorm)
{
    expect_bit_identical("resnet-tiny.cfg", 2, is_batchnorm, 0);
}
Test(executor, bit_identical_unet_tiny)
{
    expect_bit_identical("unet-tiny.cfg", 2, is_any, 0);
}
Test(executor, bit_identical_mobilenet_tiny_dwconv)
{
    expect_bit_identical("mobilenet-tiny.cfg", 2, is_dwconv, 0);
}

/* Batchnorm's running statistics after one step are exactly one momentum
 * update with the batch statistics, however often its forward ran: the
 * no-checkpoint schedule recomputes every batchnorm in the backward pass. */
Test(executor, batchnorm_stats_updated_once_per_step)
{
    tiny t;
    tiny_load(&t, "resnet-tiny.cfg", 2, 0);
    const rm_schedule *s = t.s[t.n - 1];
    cr_assert(recomputes(&t, s, is_batchnorm));
    rm_backend *be;
    rm_err e = {0};
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK);
    float *input;
    int32_t *labels;
    make_batch(&input, &labels, &t, 99);
    rm_plan *pl = plan_of(&t, s);
    rm_executor *ex;
    cr_assert_eq(rm_executor_create(&ex, t.m, &t.g, be, pl, NULL, &e), RM_OK, "%s", e.msg);
    float loss;
    cr_assert_eq(rm_executor_step(ex, &loss, input, labels, 0, &e), RM_OK, "%s", e.msg);
    /* The stem batchnorm (layer 1) normalises the stem convolution's output;
     * recompute that output's batch mean here from the input by running the
     * convolution directly, on the same backend (its kernels). */
    const rm_model_layer *conv = &t.m->layers[0], *bn = &t.m->layers[1];
    cr_assert_eq(bn->desc->kind, RM_LAYER_BATCHNORM2D);
    rm_shape xs = t.g.nodes[0].shape, ys = t.g.nodes[1].shape;
    float *y = malloc(rm_shape_bytes(ys));
    rm_tensor x = rm_tensor_make(xs, input), yt = rm_tensor_make(ys, y);
    rm_layer_call call = {.cfg = &conv->cfg,
                          .params = rm_executor_layer_params(ex, 0),
                          .be = be,
                          .nin = 1,
                          .in = {&x},
                          .out = &yt,
                          .training = 1};
    cr_assert_eq(rm_layer_forward(conv->desc, &call, &e), RM_OK, "%s", e.msg);
    const rm_layer_params *bp = rm_executor_layer_params(ex, 1);
    size_t hw = (size_t)ys.h * ys.w;
    for (int c = 0; c < ys.c; c++) {
        double sum = 0;
        for (int n = 0; n < ys.n; n++)
            for (size_t i = 0; i < hw; i++) sum += y[((size_t)n * ys.c + c) * hw + i];
        double mean = sum / (double)(ys.n * hw), mom = bn->cfg.momentum;
        float once = (float)((1.0 - mom) * 0.0 + mom * mean);
        cr_assert_eq(memcmp(&bp->running_mean.data[c], &once, sizeof once), 0,
                     "channel %d: running mean %.9g, one update gives %.9g", c, (double)bp->running_mean.data[c],
                     (double)once);
    }
    free(y);
    rm_executor_free(ex);
    rm_plan_free(pl);
    free(input);
    free(labels);
    rm_backend_free(be);
    tm_free(&t);
}

/* The executor refuses what it cannot run correctly. */
Test(executor, rejects_budget_and_mismatched_plans)
{
    tiny t;
    tiny_load(&t, "vgg-tiny.cfg", 2, 0);
    rm_backend *be;
    rm_err e = {0};
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK);
    rm_plan *pl = plan_of(&t, t.s[0]);
    rm_executor *ex;
    rm_executor_options tight = {.seed = 1, .arena_budget = pl->span - 1};
    cr_assert_eq(rm_executor_create(&ex, t.m, &t.g, be, pl, &tight, &e), RM_ERR_BUDGET);
    cr_assert_null(ex);
    /* A plan for a graph at another batch size. */
    rm_graph g3;
    cr_assert_eq(rm_model_trace(&g3, t.m, 3, &e), RM_OK);
    cr_assert_neq(rm_executor_create(&ex, t.m, &g3, be, pl, NULL, &e), RM_OK);
    /* A plan whose buffers overlap. */
    rm_plan *bad = plan_of(&t, t.s[0]);
    for (int i = 0; i < bad->nbuffers; i++) bad->buffers[i].offset = 0;
    cr_assert_eq(rm_executor_create(&ex, t.m, &t.g, be, bad, NULL, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "overlap"), "%s", e.msg);
    rm_plan_free(bad);
    rm_graph_free(&g3);
    rm_plan_free(pl);
    rm_backend_free(be);
    tm_free(&t);
}

/* No layer of the tiny models allocates inside a step: they all have their
 * scratch in the executor's one workspace, which is sized for the largest. */
Test(executor, workspace_covers_every_layer)
{
    tiny t;
    tiny_load(&t, "unet-tiny.cfg", 2, 0);
    size_t ws;
    rm_err e = {0};
    cr_assert_eq(rm_executor_workspace_needed(&ws, t.m, 2, &e), RM_OK, "%s", e.msg);
    cr_assert_gt(ws, 0);
    rm_backend *be;
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK);
    rm_plan *pl = plan_of(&t, t.s[0]);
    rm_executor *ex;
    cr_assert_eq(rm_executor_create(&ex, t.m, &t.g, be, pl, NULL, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_executor_workspace_bytes(ex), ws);
    size_t np;
    rm_executor_params(ex, &np);
    cr_assert_eq(np, t.m->param_count);
    cr_assert_geq(rm_executor_fixed_bytes(ex), 4 * (2 * t.m->param_count + t.m->buffer_count) + ws);
    rm_executor_free(ex);
    rm_plan_free(pl);
    rm_backend_free(be);
    tm_free(&t);
}

/* A layer given the executor's workspace (stale contents, here NaN) computes
 * exactly what it computes with scratch of its own. */
static void expect_workspace_exact(const rm_layer_desc *d, rm_layer_config cfg, rm_shape xs)
{
    rm_err e = {0};
    rm_shape ys;
    cr_assert_eq(d->infer(&ys, &cfg, &xs, 1, &e), RM_OK, "%s", e.msg);
    cr_assert_not_null(d->workspace_bytes, "%s", d->name);
    rm_shape ws = {0, 0, 0, 0}, bs = {0, 0, 0, 0};
    if (d->param_shapes) d->param_shapes(&ws, &bs, &cfg, &xs, 1);
    size_t nx = rm_shape_numel(xs), ny = rm_shape_numel(ys), nw = rm_shape_numel(ws), nb = rm_shape_numel(bs);
    float *buf = calloc(2 * nx + 2 * ny + 2 * nw + 2 * nb + 4, sizeof(float));
    float *x = buf, *dx = x + nx, *y = dx + nx, *dy = y + ny;
    float *w = dy + ny, *dw = w + nw, *b = dw + nw, *db = b + nb;
    rm_rng r = rm_rng_make(17);
    for (float *q = buf; q < db + nb; q++) *q = (float)rm_rng_range(&r, -1.0, 1.0);
    rm_layer_params prm = {.w = rm_tensor_make(ws, nw ? w : NULL),
                           .b = rm_tensor_make(bs, nb ? b : NULL),
                           .dw = rm_tensor_make(ws, nw ? dw : NULL),
                           .db = rm_tensor_make(bs, nb ? db : NULL)};
    rm_tensor tx = rm_tensor_make(xs, x), ty = rm_tensor_make(ys, y), tdy = rm_tensor_make(ys, dy),
              tdx = rm_tensor_make(xs, dx);
    rm_layer_call call = {
        .cfg = &cfg, .params = &prm, .nin = 1, .in = {&tx}, .out = &ty, .dout = &tdy, .din = {&tdx}, .training = 1};
    size_t need = 0;
    for (int back = 0; back < 2; back++) {
        size_t n = d->workspace_bytes(&cfg, &xs, 1, ys, back);
        if (n > need) need = n;
    }
    cr_assert_gt(need, 0, "%s", d->name);
    float *scratch = malloc(need + 64);
    float *own = malloc((ny + nx + nw + nb + 1) * sizeof(float)); /* y, dx, dw, db without a workspace */
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < need / sizeof(float); i++) scratch[i] = NAN;
        call.workspace = pass ? scratch : NULL;
        call.workspace_size = pass ? need : 0;
        cr_assert_eq(d->forward_ref(&call, &e), RM_OK, "%s: %s", d->name, e.msg);
        cr_assert_eq(d->backward_ref(&call, &e), RM_OK, "%s: %s", d->name, e.msg);
        float *got[] = {y, dx, dw, db};
        size_t len[] = {ny, nx, nw, nb}, at = 0;
        for (int t = 0; t < 4; t++) {
            if (pass == 0)
                memcpy(own + at, got[t], len[t] * sizeof(float));
            else
                cr_assert_eq(memcmp(own + at, got[t], len[t] * sizeof(float)), 0, "%s: output %d differs", d->name, t);
            at += len[t];
        }
    }
    call.workspace_size = need - 1;
    cr_assert_eq(d->backward_ref(&call, &e) == RM_ERR_INVALID || d->forward_ref(&call, &e) == RM_ERR_INVALID, 1,
                 "%s accepts a workspace that is too small", d->name);
    free(own);
    free(scratch);
    free(buf);
}

Test(executor_workspace, layers_compute_the_same_in_a_given_workspace)
{
    rm_layer_config conv = {
        .kind = RM_LAYER_CONV2D, .out_channels = 5, .kernel = {3, 3}, .stride = {2, 2}, .pad = {1, 1}, .bias = 1};
    expect_workspace_exact(&rm_conv2d_desc, conv, rm_shape_make(2, 3, 9, 7));
    rm_layer_config convt = {.kind = RM_LAYER_CONV_TRANSPOSE2X2, .out_channels = 3, .bias = 1};
    expect_workspace_exact(&rm_conv_transpose2x2_desc, convt, rm_shape_make(2, 4, 5, 3));
    rm_layer_config fc = {.kind = RM_LAYER_LINEAR, .out_channels = 7, .bias = 1};
    expect_workspace_exact(&rm_linear_desc, fc, rm_shape_make(3, 4, 2, 3));
    rm_layer_config pool = {.kind = RM_LAYER_MAXPOOL2D, .kernel = {3, 3}, .stride = {2, 2}, .pad = {1, 1}};
    expect_workspace_exact(&rm_maxpool2d_desc, pool, rm_shape_make(2, 3, 7, 6));
    pool.kind = RM_LAYER_AVGPOOL2D;
    expect_workspace_exact(&rm_avgpool2d_desc, pool, rm_shape_make(2, 3, 7, 6));
}

/* The whole model's gradient against central differences of the loss, in
 * double from the float losses, with the perturbation actually stored in
 * float; tolerance as in tests/layers/gradcheck.c, |a - n| <= tol * max(1,
 * |a|, |n|) with tol = 2e-3, and also |a - n| <= 3e-4 + 5% |a|, which is what
 * makes the check bite on gradients well below 1. The schedule is the
 * no-checkpoint one, so the gradients come through recomputed activations,
 * gradient slices and sums. Per layer with parameters, the weight with the
 * largest gradient is checked (a wiring bug shows there first) plus `extra`
 * at random. A bug that every schedule shares (a gradient slice taken at the
 * wrong offset, a sum missing a term, a dropout backward replaying another
 * mask) passes the bit-identity tests but not this one. It runs on the
 * reference kernels: their double accumulation keeps the loss's rounding
 * below what the quotients resolve (the fast kernels' float sums are checked
 * against the reference layer by layer, tests/layers/test_cpu_fast.c). */
static void expect_finite_differences(const char *cfg, int batch, int extra)
{
    tiny t;
    tiny_load(&t, cfg, batch, 0);
    rm_backend *be = cpu_backend(RM_CPU_KERNELS_REFERENCE, 2);
    rm_err e = {0};
    float *input;
    int32_t *labels;
    make_batch(&input, &labels, &t, 5);
    rm_plan *pl = plan_of(&t, t.s[t.n - 1]);
    rm_executor *ex;
    rm_executor_options opts = {.seed = 3};
    cr_assert_eq(rm_executor_create(&ex, t.m, &t.g, be, pl, &opts, &e), RM_OK, "%s", e.msg);
    float loss;
    const uint64_t step = 4; /* every evaluation replays this step's dropout masks */
    cr_assert_eq(rm_executor_step(ex, &loss, input, labels, step, &e), RM_OK, "%s", e.msg);
    size_t np;
    float *params = rm_executor_params(ex, &np), *grads = rm_executor_grads(ex, &np);
    float *analytic = malloc(np * sizeof(float));
    memcpy(analytic, grads, np * sizeof(float));
    const double tol = 2e-3, atol = 3e-4, rtol = 0.05;
    /* Through ReLU, max-pool and batch-statistic kinks the loss is only
     * piecewise smooth: a step that crosses a kink misses (1e-2 misses by 5%
     * near the input), and the float loss's rounding spoils a small step
     * (~1e-3 in the quotient at 1e-4). So a smaller step is tried when one
     * misses, and the closest quotient counts: a wrong analytic gradient
     * matches at none. */
    const double steps[] = {1e-3, 3e-4, 1e-4};
    double worst = 0;
    int checked = 0, retried = 0;
    rm_rng rng = rm_rng_make(11);
    for (int L = 0; L < t.m->nlayers; L++) {
        rm_layer_params *lp = rm_executor_layer_params(ex, L);
        const rm_tensor *ts[] = {&lp->w, &lp->b};
        for (int w = 0; w < 2; w++) {
            if (!ts[w]->data) continue;
            size_t base = (size_t)(ts[w]->data - params), n = rm_tensor_numel(ts[w]), pick[8];
            pick[0] = 0;
            for (size_t i = 1; i < n; i++)
                if (fabsf(analytic[base + i]) > fabsf(analytic[base + pick[0]])) pick[0] = i;
            for (int k = 1; k <= extra; k++) pick[k] = (size_t)(rm_rng_uniform(&rng) * (double)n);
            for (int k = 0; k <= extra; k++) {
                size_t i = base + pick[k];
                double a = analytic[i], num = 0, err = INFINITY, scale = 1;
                for (int q = 0; q < 3; q++) {
                    float orig = params[i], lplus, lminus;
                    params[i] = (float)(orig + steps[q]);
                    double up = params[i];
                    cr_assert_eq(rm_executor_step(ex, &lplus, input, labels, step, &e), RM_OK, "%s", e.msg);
                    params[i] = (float)(orig - steps[q]);
                    double dn = params[i];
                    cr_assert_eq(rm_executor_step(ex, &lminus, input, labels, step, &e), RM_OK, "%s", e.msg);
                    params[i] = orig;
                    double nq = ((double)lplus - (double)lminus) / (up - dn);
                    if (fabs(nq - a) < err) num = nq, err = fabs(nq - a);
                    scale = fmax(1.0, fmax(fabs(a), fabs(num)));
                    if (err <= tol * scale && err <= atol + rtol * fabs(a)) break;
                    retried++;
                }
                cr_assert_leq(err, tol * scale, "%s layer %s %s[%zu]: analytic %.6g, numeric %.6g", cfg,
                              t.m->layers[L].name, w ? "b" : "w", pick[k], a, num);
                cr_assert_leq(err, atol + rtol * fabs(a), "%s layer %s %s[%zu]: analytic %.6g, numeric %.6g", cfg,
                              t.m->layers[L].name, w ? "b" : "w", pick[k], a, num);
                if (err > worst) worst = err;
                checked++;
            }
        }
    }
    cr_log_info("%s finite differences: %d parameters (%d smaller steps), worst absolute error %.3g", cfg, checked,
                retried, worst);
    free(analytic);
    rm_executor_free(ex);
    rm_plan_free(pl);
    free(input);
    free(labels);
    rm_backend_free(be);
    tm_free(&t);
}

Test(executor, finite_differences_resnet_tiny)
{
    expect_finite_differences("resnet-tiny.cfg", 2, 2);
}
/* Concatenation: each input's gradient is a different slice of the concat's backward output. */
Test(executor, finite_differences_unet_tiny)
{
    expect_finite_differences("unet-tiny.cfg", 2, 1);
}
/* Dropout: the backward must replay the forward's mask. */
Test(executor, finite_differences_vgg_tiny)
{
    expect_finite_differences("vgg-tiny.cfg", 2, 2);
}
/* Depthwise convolutions (one with a bias) between batchnorms. */
Test(executor, finite_differences_mobilenet_tiny)
{
    expect_finite_differences("mobilenet-tiny.cfg", 2, 1);
}
