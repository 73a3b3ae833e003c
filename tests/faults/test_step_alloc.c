/* No host allocation inside a training step, on the CPU: the twin of the
 * GPU suite's cuda_train::no_device_allocation_inside_steps. The executor
 * allocates its fixed memory, arena and layer workspace once at creation
 * (engine/executor.h: "a run allocates nothing"), and so does the optimizer
 * (train/optim.h); a layer that mallocs its scratch per call (a NULL
 * workspace makes rm_layer_workspace do that) or bookkeeping grown per step
 * would pass every other CPU test. Here the fault injector's wrappers
 * (inject.c, linked with -Wl,--wrap=malloc,calloc,realloc,aligned_alloc,
 * strdup,...) count every allocation the remat libraries make while three
 * steps (forward, loss, backward, under a schedule that recomputes) and
 * their Adam updates run, for each built-in tiny model; the count must be 0. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "builder.h"
#include "executor.h"
#include "faults/inject.h"
#include "optim.h"
#include "plan.h"
#include "problem.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"
#include "trace.h"

TestSuite(step_allocations);

/* A schedule under a budget halfway between the trivial lower bound and
 * checkpoint-all's peak, from the first strategy (chen_greedy, then the
 * others) that fits it and recomputes something. */
static rm_schedule *remat_schedule(rm_problem *p, const char *cfg)
{
    rm_err e = {0};
    rm_schedule *all = NULL;
    p->budget = 0;
    cr_assert_eq(rm_strategy_checkpoint_all(&all, p, &e), RM_OK, "%s", e.msg);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, all, &e), RM_OK, "%s", e.msg);
    size_t top = r.peak_bytes, lb = rm_problem_peak_lower_bound(p);
    rm_schedule_free(all);
    static const rm_strategy_fn fns[] = {rm_strategy_chen_greedy, rm_strategy_griewank, rm_strategy_chen_sqrtn,
                                         rm_strategy_ogc};
    for (int level = 4; level <= 7; level++) {
        p->budget = p->fixed_bytes + lb + (top - lb) * (size_t)level / 8;
        for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
            rm_schedule *s = NULL;
            if (fns[k](&s, p, &e) != RM_OK) continue;
            cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
            if (r.recomputations > 0) return s;
            rm_schedule_free(s);
        }
    }
    cr_assert_fail("%s: no strategy gave a schedule that recomputes", cfg);
    return NULL;
}

static void expect_no_step_allocation(const char *cfg, int batch)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s", REMAT_SOURCE_DIR, cfg);
    rm_err e = {0};
    rm_model *m = NULL;
    rm_graph g;
    rm_problem *p = NULL;
    cr_assert_eq(rm_model_load(&m, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_model_trace(&g, m, batch, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_problem_from_graph(&p, &g, &e), RM_OK, "%s", e.msg);
    rm_schedule *s = remat_schedule(p, cfg);
    rm_op *ops;
    int nops;
    cr_assert_eq(rm_schedule_ops(&ops, &nops, p, s, &e), RM_OK, "%s", e.msg);
    rm_plan *pl;
    cr_assert_eq(rm_plan_from_graph(&pl, &g, ops, nops, &e), RM_OK, "%s", e.msg);
    free(ops);

    rm_backend *be;
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK, "%s", e.msg);
    rm_executor *ex;
    rm_executor_options opts = {.seed = 7, .poison = 0};
    cr_assert_eq(rm_executor_create(&ex, m, &g, be, pl, &opts, &e), RM_OK, "%s: %s", cfg, e.msg);
    rm_layer_params **lpp = malloc((size_t)m->nlayers * sizeof *lpp);
    for (int i = 0; i < m->nlayers; i++) lpp[i] = rm_executor_layer_params(ex, i);
    rm_optim_tensor *ts = malloc(2 * (size_t)m->nlayers * sizeof *ts);
    int nts = 0;
    cr_assert_eq(rm_optim_tensors_from_model(ts, &nts, m, lpp, &e), RM_OK, "%s", e.msg);
    rm_optim_options oo = rm_optim_options_default(RM_OPTIM_ADAM);
    rm_optim *opt;
    cr_assert_eq(rm_optim_create(&opt, ts, nts, &oo, &e), RM_OK, "%s", e.msg);

    size_t nin = rm_shape_numel(g.nodes[0].shape), nl = rm_model_label_count(m, g.batch);
    int classes = m->layers[m->nlayers - 1].in_shape[0].c;
    float *input = malloc(nin * sizeof *input);
    int32_t *labels = malloc(nl * sizeof *labels);
    for (size_t i = 0; i < nin; i++) input[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
    for (size_t i = 0; i < nl; i++) labels[i] = (int32_t)((i * 7) % (size_t)classes);

    /* Every step counts, the first included: nothing may be allocated lazily. */
    for (uint64_t step = 1; step <= 3; step++) {
        float loss = 0;
        fi_alloc_fail_nth(-1); /* unarmed; counting restarts at 0 */
        int rc = rm_executor_step(ex, &loss, input, labels, step, &e);
        long in_step = fi_alloc_count();
        int orc = rc == RM_OK ? rm_optim_step(opt, 0.01, &e) : RM_OK;
        long in_update = fi_alloc_count() - in_step;
        cr_assert_eq(rc, RM_OK, "%s step %d: %s", cfg, (int)step, e.msg);
        cr_assert_eq(orc, RM_OK, "%s update %d: %s", cfg, (int)step, e.msg);
        cr_assert_eq(in_step, 0, "%s: %ld host allocations inside rm_executor_step (step %d)", cfg, in_step, (int)step);
        cr_assert_eq(in_update, 0, "%s: %ld host allocations inside rm_optim_step (step %d)", cfg, in_update,
                     (int)step);
        cr_assert(loss == loss && loss > 0, "%s step %d: loss %g", cfg, (int)step, (double)loss);
    }
    cr_log_info("%s: 3 steps and updates, no host allocation", cfg);

    free(input);
    free(labels);
    rm_optim_free(opt);
    free(ts);
    free(lpp);
    rm_executor_free(ex);
    rm_backend_free(be);
    rm_plan_free(pl);
    rm_schedule_free(s);
    rm_problem_free(p);
    rm_graph_free(&g);
    rm_model_free(m);
}

Test(step_allocations, vgg_tiny)
{
    expect_no_step_allocation("vgg-tiny.cfg", 4);
}
Test(step_allocations, resnet_tiny)
{
    expect_no_step_allocation("resnet-tiny.cfg", 4);
}
Test(step_allocations, unet_tiny)
{
    expect_no_step_allocation("unet-tiny.cfg", 2);
}
