/* Allocation failure on the main library paths. Each path runs in a loop:
 * run N fails the Nth allocation of the path (malloc, calloc, realloc,
 * aligned_alloc, strdup, strndup, getline, fopen, fdopen; see inject.h),
 * N = 0, 1, 2, ... until a run completes without reaching an armed failure,
 * which must then succeed. Every run that hits its failure must return an
 * error with a message (RM_ERR_NOMEM, or the error the failed call leads to,
 * e.g. RM_ERR_IO for an fopen that failed with ENOMEM), or succeed with a
 * correct result where the failure was in something optional; it must not
 * crash, and in the ASan build LeakSanitizer checks that nothing leaks. The
 * paths that allocate thousands of times (the solvers, where lp_solve's own
 * lp_solve API calls count too, the trainer) are sampled: every N up to a dense
 * prefix, then every stride-th, as each test says.
 *
 * REMAT_FI_TRACE=FILE in the environment appends each N to FILE before its
 * run, to find the run that crashes. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_cpu.h"
#include "builder.h"
#include "cli_fixture.h"
#include "executor.h"
#include "faults/inject.h"
#include "milp.h"
#include "onnx.h"
#include "optim.h"
#include "plan.h"
#include "problem.h"
#include "schedule.h"
#include "scheduler/random_graphs.h"
#include "simulate.h"
#include "snapshot.h"
#include "strategy.h"
#include "trace.h"
#include "train/train_fixtures.h"
#include "trainer.h"

TestSuite(alloc_faults, .init = cf_setup, .fini = cf_teardown);

typedef int (*op_fn)(void *ctx, rm_err *e);

typedef struct loop_stats {
    long runs, failed, tolerated, total; /* total: allocations of a run without faults */
} loop_stats;

/* With REMAT_FI_TRACE set, a crash appends its stack to the trace file. */
static int trace_fd = -1;
static void on_crash(int sig)
{
    void *frames[48];
    int n = backtrace(frames, 48);
    backtrace_symbols_fd(frames, n, trace_fd);
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Runs op with the Nth allocation failing for N = 0..dense-1, then every
 * stride-th N, until a run reaches no armed failure. */
static loop_stats alloc_loop(const char *what, op_fn op, void *ctx, long dense, long stride)
{
    loop_stats st = {0, 0, 0, 0};
    const char *trace = getenv("REMAT_FI_TRACE");
    if (trace && trace_fd < 0) {
        trace_fd = open(trace, O_WRONLY | O_APPEND | O_CREAT, 0644);
        void *warm[1];
        backtrace(warm, 1); /* loads libgcc now, not in the handler */
        signal(SIGSEGV, on_crash);
        signal(SIGBUS, on_crash);
        signal(SIGABRT, on_crash);
    }
    for (long n = 0;; n = n < dense ? n + 1 : n + stride) {
        if (trace) {
            fi_alloc_hold(1);
            FILE *tf = fopen(trace, "a");
            if (tf) {
                fprintf(tf, "%s: failing allocation %ld\n", what, n);
                fclose(tf);
            }
            fi_alloc_hold(0);
        }
        rm_err e = {RM_OK, ""};
        fi_alloc_fail_nth(n);
        int rc = op(ctx, &e);
        int fired = fi_alloc_fired();
        long count = fi_alloc_count();
        const char *in = fi_alloc_fired_in();
        fi_alloc_fail_nth(-1);
        st.runs++;
        if (!fired) {
            cr_assert_eq(rc, RM_OK, "%s: fails without an injected fault: %s", what, e.msg);
            st.total = count;
            break;
        }
        if (rc == RM_OK) {
            st.tolerated++; /* op checked its result */
            if (trace_fd >= 0) dprintf(trace_fd, "%s: allocation %ld (%s) failed, run succeeded\n", what, n, in);
            continue;
        }
        st.failed++;
        cr_assert(e.msg[0], "%s: allocation %ld (%s) failed with code %d and no message", what, n, in, rc);
        /* lp_solve answers FALSE without saying why: "lp_solve X failed". */
        cr_assert(rc == RM_ERR_NOMEM || rc == RM_ERR_IO || strstr(e.msg, "memory") ||
                      (rc == RM_ERR_SOLVER && strstr(e.msg, "lp_solve")),
                  "%s: allocation %ld (%s) failed: code %s, message '%s'", what, n, in, rm_code_name(rc), e.msg);
    }
    cr_log_info("%-28s %5ld allocations, %5ld runs: %5ld errors, %4ld tolerated", what, st.total, st.runs, st.failed,
                st.tolerated);
    cr_assert_gt(st.failed, 0, "%s: no run failed", what);
    return st;
}

#define ALL_DENSE 1000000L /* every allocation */

/* ---- models: load, trace, problem
 * -------------------------------------------------- */

static int op_model(void *ctx, rm_err *e)
{
    const char *cfg = ctx;
    rm_model *m = NULL;
    rm_graph g;
    memset(&g, 0, sizeof g);
    rm_problem *p = NULL, *q = NULL;
    rm_optim_options sgd = rm_optim_options_default(RM_OPTIM_SGD);
    int rc = rm_model_load(&m, cfg, e);
    if (!rc) rc = rm_model_trace(&g, m, 2, e);
    if (!rc) rc = rm_problem_from_graph(&p, &g, e);
    if (!rc) rc = rm_training_problem(&q, NULL, m, 2, &sgd, NULL, NULL, RM_COST_SAME_BATCH, e);
    if (!rc) {
        cr_assert_eq(p->n, g.n);
        cr_assert_eq(q->n, g.n);
        cr_assert_gt(q->fixed_bytes, 0);
    }
    rm_problem_free(q);
    rm_problem_free(p);
    rm_graph_free(&g);
    rm_model_free(m);
    return rc;
}

Test(alloc_faults, model_load_and_trace)
{
    const char *models[] = {CF_MODEL("vgg-tiny.cfg"), CF_MODEL("resnet-tiny.cfg"), CF_MODEL("unet-tiny.cfg")};
    for (int i = 0; i < 3; i++) alloc_loop(models[i], op_model, (void *)models[i], ALL_DENSE, 1);
}

/* The ONNX importer on its fixtures: the reader's buffers, the values, the
 * folded constants, the layers and the weights (protobuf-c's own decoding
 * allocates in its shared library, which the injection does not reach). */
static int op_onnx(void *ctx, rm_err *e)
{
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    o.loss = RM_ONNX_LOSS_AUTO;
    rm_model *m = NULL;
    int rc = rm_onnx_load(&m, NULL, ctx, &o, e);
    if (!rc) cr_assert(m->init_params && m->nlayers > 2);
    rm_model_free(m);
    return rc;
}

Test(alloc_faults, onnx_import)
{
    const char *files[] = {REMAT_SOURCE_DIR "/tests/models/onnx/cbr_pool_gemm.onnx",
                           REMAT_SOURCE_DIR "/tests/models/onnx/residual.onnx",
                           REMAT_SOURCE_DIR "/tests/models/onnx/unet_tiny.onnx"};
    for (int i = 0; i < 3; i++) alloc_loop(files[i], op_onnx, (void *)files[i], ALL_DENSE, 1);
}

/* ---- problem files
 * ---------------------------------------------------------------------- */

typedef struct problem_ctx {
    const char *path;
    int n; /* the nodes the file holds */
} problem_ctx;

static int op_problem_read(void *ctx, rm_err *e)
{
    const problem_ctx *c = ctx;
    rm_problem *p = NULL;
    int rc = rm_problem_read(&p, c->path, e);
    if (!rc) cr_assert_eq(p->n, c->n);
    rm_problem_free(p);
    return rc;
}

Test(alloc_faults, problem_file_read)
{
    problem_ctx c = {cf_path("p.txt"), 7};
    cf_write(c.path, CF_EXAMPLE_HEADER CF_EXAMPLE_NODES);
    alloc_loop("rm_problem_read", op_problem_read, &c, ALL_DENSE, 1);
    /* The node-link JSON reader (problem_json.c) behind the same call. */
    problem_ctx j = {REMAT_SOURCE_DIR "/docs/examples/checkmate-linear-4.json", 9};
    alloc_loop("rm_problem_read (JSON)", op_problem_read, &j, ALL_DENSE, 1);
}

/* ---- strategies
 * -----------------------------------------------------------------------------
 */

typedef struct strat_ctx {
    const rm_strategy_info *st;
    rm_problem *p;
} strat_ctx;

static int op_strategy(void *ctx, rm_err *e)
{
    strat_ctx *c = ctx;
    rm_schedule *s = NULL;
    rm_strategy_stats stats;
    rm_strategy_options o = {.node_limit = 20};
    int rc = rm_strategy_run(&s, &stats, c->st, c->p, &o, e);
    if (rc == RM_OK) {
        /* Whatever happened on the way, what comes back is valid and fits. */
        rm_sim_result r;
        rm_err e2 = {RM_OK, ""};
        fi_alloc_hold(1);
        cr_assert_eq(rm_simulate(&r, c->p, s, &e2), RM_OK, "%s: %s", c->st->name, e2.msg);
        fi_alloc_hold(0);
        cr_assert(rm_sim_fits(c->p, &r), "%s: over the budget", c->st->name);
    } else {
        cr_assert_null(s);
    }
    rm_schedule_free(s);
    return rc;
}

/* A small training graph at a budget halfway between the lower bound and the
 * no-remat peak, so every strategy has to recompute and the solvers solve. */
static rm_problem *strategy_problem(void)
{
    rg_options o = {.forward = 6, .skip_prob = 0.3, .branch_prob = 0.2, .max_skip = 0, .max_bytes = 512};
    rm_problem *p = rg_training_problem(11, &o);
    cr_assert_not_null(p);
    rm_schedule *s;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    rm_schedule_free(s);
    p->budget = p->fixed_bytes + (rm_problem_peak_lower_bound(p) + r.peak_bytes) / 2;
    return p;
}

Test(alloc_faults, every_baseline_strategy)
{
    rm_problem *p = strategy_problem();
    int count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    for (int k = 0; k < count; k++) {
        strat_ctx c = {&list[k], p};
        rm_schedule *s = NULL;
        rm_err e = {RM_OK, ""};
        if (rm_strategy_run(&s, NULL, &list[k], p, NULL, &e) == RM_ERR_INFEASIBLE) continue;
        rm_schedule_free(s);
        alloc_loop(list[k].name, op_strategy, &c, ALL_DENSE, 1);
    }
    rm_problem_free(p);
}

/* The lp_solve API calls count as allocations too (inject.c): a failure
 * there must come back as an error as well. */
Test(alloc_faults, lp_round, .timeout = 60)
{
    rm_problem *p = strategy_problem();
    strat_ctx c = {rm_strategy_find("lp_round"), p};
    alloc_loop("lp_round", op_strategy, &c, 300, 37);
    rm_problem_free(p);
}

/* The strategy runs every baseline first for an incumbent (best effort: a
 * baseline that fails is skipped, so failures there are tolerated); sampled
 * sparsely. rm_strategy_milp alone, without that search, densely. */
Test(alloc_faults, milp, .timeout = 60)
{
    rm_problem *p = strategy_problem();
    strat_ctx c = {rm_strategy_find("milp"), p};
    alloc_loop("milp strategy", op_strategy, &c, 40, 97);
    rm_problem_free(p);
}

static int op_milp_direct(void *ctx, rm_err *e)
{
    rm_problem *p = ctx;
    rm_milp_options o;
    rm_milp_options_default(&o);
    o.node_limit = 20;
    rm_milp_result info;
    rm_schedule *s = NULL;
    int rc = rm_strategy_milp(&s, &info, p, &o, e);
    if (rc == RM_OK) {
        rm_sim_result r;
        rm_err e2 = {RM_OK, ""};
        fi_alloc_hold(1);
        cr_assert_eq(rm_simulate(&r, p, s, &e2), RM_OK, "milp: %s", e2.msg);
        fi_alloc_hold(0);
        cr_assert(rm_sim_fits(p, &r), "milp: over the budget");
        cr_assert_eq(r.cost, info.objective);
    } else {
        cr_assert_null(s);
    }
    rm_schedule_free(s);
    return rc;
}

Test(alloc_faults, milp_without_incumbent_search, .timeout = 60)
{
    rm_problem *p = strategy_problem();
    alloc_loop("milp direct", op_milp_direct, p, ALL_DENSE, 1);
    rm_problem_free(p);
}

/* ---- schedules: operations, plan, simulation, files
 * ----------------------------------------- */

typedef struct sched_ctx {
    rm_problem *p;
    rm_schedule *s;
    const char *path;
} sched_ctx;

static int op_plan(void *ctx, rm_err *e)
{
    sched_ctx *c = ctx;
    rm_op *ops = NULL;
    int nops = 0;
    rm_plan *pl = NULL;
    rm_sim_result r;
    size_t *bytes = NULL;
    int rc = rm_schedule_ops(&ops, &nops, c->p, c->s, e);
    if (!rc) rc = rm_simulate(&r, c->p, c->s, e);
    if (!rc) {
        bytes = malloc((size_t)c->p->n * sizeof *bytes);
        if (!bytes) rc = rm_errorf(e, RM_ERR_NOMEM, "test: no memory");
    }
    if (!rc) {
        for (int i = 0; i < c->p->n; i++) bytes[i] = c->p->nodes[i].bytes;
        rc = rm_plan_create(&pl, bytes, c->p->n, ops, nops, e);
    }
    if (!rc) {
        cr_assert_eq(pl->bytes_peak, r.peak_bytes);
        fi_alloc_hold(1);
        cr_assert_eq(rm_plan_check(pl, e), RM_OK, "%s", e->msg);
        fi_alloc_hold(0);
    }
    rm_plan_free(pl);
    free(bytes);
    free(ops);
    return rc;
}

static int op_schedule_file(void *ctx, rm_err *e)
{
    sched_ctx *c = ctx;
    rm_schedule *back = NULL;
    int rc = rm_schedule_write(c->s, c->p, c->path, e);
    if (!rc) rc = rm_schedule_read(&back, c->p, c->path, e);
    if (!rc) cr_assert(rm_schedule_equal(back, c->s), "the schedule read back differs");
    rm_schedule_free(back);
    return rc;
}

Test(alloc_faults, plan_simulate_and_schedule_files)
{
    rm_problem *p = strategy_problem();
    rm_schedule *s;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_strategy_chen_greedy(&s, p, &e), RM_OK, "%s", e.msg);
    sched_ctx c = {p, s, cf_path("s.txt")};
    alloc_loop("ops, simulate, plan", op_plan, &c, ALL_DENSE, 1);
    alloc_loop("schedule write and read", op_schedule_file, &c, ALL_DENSE, 1);
    cr_assert_eq(cf_temporaries(cf_dir), 0, "a failed write left a temporary file");
    rm_schedule_free(s);
    rm_problem_free(p);
}

/* ---- the executor and snapshots
 * -------------------------------------------------------- */

typedef struct exec_ctx {
    rm_model *m;
    rm_graph g;
    rm_problem *p;
    rm_schedule *s;
    float *input;
    int32_t *labels;
} exec_ctx;

static int op_executor(void *ctx, rm_err *e)
{
    exec_ctx *c = ctx;
    rm_op *ops = NULL;
    int nops = 0;
    rm_plan *pl = NULL;
    rm_backend *be = NULL;
    rm_executor *ex = NULL;
    float loss = 0;
    rm_executor_options opts = {.seed = 3};
    int rc = rm_schedule_ops(&ops, &nops, c->p, c->s, e);
    if (!rc) rc = rm_plan_from_graph(&pl, &c->g, ops, nops, e);
    if (!rc) rc = rm_backend_cpu_create(&be, e);
    if (!rc) rc = rm_executor_create(&ex, c->m, &c->g, be, pl, &opts, e);
    if (!rc) rc = rm_executor_step(ex, &loss, c->input, c->labels, 1, e);
    if (!rc) cr_assert(loss > 0 && loss < 100, "loss %g", (double)loss);
    rm_executor_free(ex);
    rm_backend_free(be);
    rm_plan_free(pl);
    free(ops);
    return rc;
}

static void exec_load(exec_ctx *c, const char *cfg, int batch)
{
    memset(c, 0, sizeof *c);
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&c->m, cfg, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_model_trace(&c->g, c->m, batch, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_problem_from_graph(&c->p, &c->g, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_strategy_chen_sqrtn(&c->s, c->p, &e), RM_OK, "%s", e.msg);
    size_t n = rm_shape_numel(c->g.nodes[0].shape), nl = rm_model_label_count(c->m, batch);
    c->input = malloc(n * sizeof *c->input);
    c->labels = calloc(nl, sizeof *c->labels);
    cr_assert(c->input && c->labels);
    for (size_t i = 0; i < n; i++) c->input[i] = (float)((i * 37) % 17) / 17.0f - 0.5f;
}

static void exec_free(exec_ctx *c)
{
    free(c->input);
    free(c->labels);
    rm_schedule_free(c->s);
    rm_problem_free(c->p);
    rm_graph_free(&c->g);
    rm_model_free(c->m);
}

Test(alloc_faults, executor_create_and_one_step_vgg_tiny)
{
    exec_ctx c;
    exec_load(&c, CF_MODEL("vgg-tiny.cfg"), 2);
    alloc_loop("executor vgg-tiny", op_executor, &c, ALL_DENSE, 1);
    exec_free(&c);
}

typedef struct snap_ctx {
    tf_net net;
    rm_optim *opt;
    const char *path;
} snap_ctx;

static int op_snapshot(void *ctx, rm_err *e)
{
    snap_ctx *c = ctx;
    rm_snapshot_counters k = {5, 1, 9, 0, 0}, got = {0, 0, 0, 0, 0};
    int rc = rm_snapshot_save(c->path, c->net.m, c->net.lpp, c->opt, &k, e);
    if (!rc) rc = rm_snapshot_load(&got, c->path, c->net.m, c->net.lpp, c->opt, e);
    if (!rc) cr_assert_eq(got.step, 5);
    return rc;
}

Test(alloc_faults, snapshot_save_and_load)
{
    snap_ctx c;
    char text[512];
    tf_model_text(text, sizeof text, "conv1", 4, 5);
    c.net = tf_net_make(text, 42);
    rm_optim_tensor t[32];
    int count;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_optim_tensors_from_model(t, &count, c.net.m, c.net.lpp, &e), RM_OK, "%s", e.msg);
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_ADAM);
    cr_assert_eq(rm_optim_create(&c.opt, t, count, &o, &e), RM_OK, "%s", e.msg);
    c.path = cf_path("run.snap");
    alloc_loop("snapshot save and load", op_snapshot, &c, ALL_DENSE, 1);
    cr_assert_eq(cf_temporaries(cf_dir), 0, "a failed save left a temporary file");
    rm_optim_free(c.opt);
    tf_net_free(&c.net);
}

/* ---- the whole training job
 * --------------------------------------------------------------- */

static int op_trainer(void *ctx, rm_err *e)
{
    rm_trainer_config *c = ctx;
    rm_trainer *t = NULL;
    int rc = rm_trainer_create(&t, c, e);
    if (!rc) rc = rm_trainer_run(t, e);
    rm_trainer_free(t);
    return rc;
}

/* Model, synthetic data, the solve, plan, executor, optimizer, two steps,
 * an evaluation and a snapshot: sampled, it allocates thousands of times. */
Test(alloc_faults, trainer_create_and_run, .timeout = 60)
{
    rm_trainer_config c;
    rm_trainer_config_default(&c);
    c.model_path = CF_MODEL("vgg-tiny.cfg");
    c.batch = 2;
    c.budget_percent = 100;
    c.strategy = "chen_greedy";
    c.synthetic_samples = 4;
    c.max_steps = 2;
    c.snapshot_path = cf_path("t.snap");
    alloc_loop("trainer vgg-tiny", op_trainer, &c, 400, 23);
    cr_assert_eq(cf_temporaries(cf_dir), 0, "a failed save left a temporary file");
}
