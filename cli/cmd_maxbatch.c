/* `remat maxbatch`: for each strategy, the largest batch size whose schedule
 * the simulator accepts within a device budget (fixed bytes included), found
 * by scheduler/maxbatch.c's exponential-then-binary search; this file
 * supplies the problem for each batch size by tracing the model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "maxbatch.h"
#include "builder.h"
#include "trace.h"
#include "trainer.h"

#define MAXBATCH_USAGE                                                                                                 \
    "usage: remat maxbatch --model FILE --budget B [--strategies a,b,...] [--max-batch N]\n"                           \
    "                      [--costs FILE] [--time-limit S] [--device cpu|cuda] [--quiet]\n"                                                \
    "\n"                                                                                                               \
    "For each strategy, the largest batch size at which it finds a schedule that the simulator accepts\n"              \
    "within the budget, fixed bytes (weights, gradients, optimizer state, labels) included; and how it\n"              \
    "compares with training without rematerialization (checkpoint-all), which is always measured.\n"                   \
    "\n"                                                                                                               \
    "The search grows the batch 1, 2, 4, ... until it does not fit, then bisects. No batch whose trivial\n"            \
    "lower bound (the largest node with its inputs) exceeds the budget is ever solved. Feasibility is\n"               \
    "monotone for checkpoint-all and an exactly solved MILP, so their answers are exact; a heuristic (or a\n"          \
    "MILP stopped by its time limit) need not be monotone, and for those the answer is a batch that fits\n"            \
    "with the next one verified not to: a larger batch beyond a failing one is not looked for. A '*' in\n"             \
    "the notes marks a MILP answer where some larger batch was given up at the time limit, unproved.\n"                \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --model FILE          model config (models/*.cfg)\n"                                                            \
    "  --budget B            TOTAL device memory: 16GiB, 512MiB, 1.5e9, 16GB (no percentages here: the\n"              \
    "                        peak they would refer to depends on the batch)\n"                                         \
    "  --strategies LIST     comma-separated names from `remat plan --help` (default: all of them)\n"                  \
    "  --max-batch N         the largest batch tried (default 1048576)\n"                                              \
    "  --costs FILE          node costs in profiled seconds (`remat profile`, docs/cost-format.md) instead\n"          \
    "                        of FLOPs; the search tries many batches, so they are scaled linearly from the\n"        \
    "                        batch they were measured at (an assumption: small batches run below peak)\n"             \
    "  --time-limit S        seconds for each lp_round / milp solve (default 30; 0 = none)\n"                          \
    "  --device cpu|cuda     whose accounting (default cpu); cuda: GPU 0's, as `remat train --device cuda`\n"       \
    "                        allocates it (the layers' CUDA workspace, the loss slot, the cuBLAS\n"                \
    "                        workspace); needs a GPU, and the budget must be free on it\n"                         \
    "  --quiet               no progress on stderr\n"                                                                  \
    "\n"                                                                                                               \
    "example: remat maxbatch --model models/vgg16.cfg --budget 16GiB --strategies checkpoint_all,chen_greedy,milp"

#define usage_error(...) rm_cli_usage_error("maxbatch", MAXBATCH_USAGE, __VA_ARGS__)

#define MAX_STRATEGIES 32

typedef struct trace_ctx {
    const rm_model *m;
    rm_optim_options optim;
    const rm_cost_file *costs; /* NULL: FLOPs */
    const rm_backend *be;      /* NULL: the CPU's accounting; else this GPU's */
} trace_ctx;

/* The same accounting as `remat train` (workspace and optimizer state
 * included), so the batch reported here is one that really trains. */
static int build_problem(rm_problem **out, void *vctx, int batch, rm_err *e)
{
    trace_ctx *c = vctx;
    return rm_training_problem(out, NULL, c->m, batch, &c->optim, c->be, c->costs, RM_COST_SCALE_BATCH, e);
}

static void progress(void *ctx, const char *strategy, int batch, int feasible, double seconds)
{
    (void)ctx;
    if (feasible < 0)
        fprintf(stderr, "remat maxbatch: %-18s batch %7d ...", strategy, batch);
    else
        fprintf(stderr, " %s (%.2f s)\n", feasible ? "fits" : "does not fit", seconds);
}

/* The GPU the search accounts for, refusing a budget it cannot hold. 0, or
 * the exit code. */
static int open_gpu(rm_backend **gpu, size_t *gpu_free, size_t *gpu_total, double budget)
{
    rm_err e = {RM_OK, ""};
    int rc = rm_backend_cuda_create(gpu, 0, &e);
    if (!rc) rc = rm_backend_cuda_mem_info(*gpu, gpu_free, gpu_total, &e);
    if (rc) {
        fprintf(stderr, "remat maxbatch: cannot search on the GPU: %s\n", e.msg);
        rm_backend_free(*gpu);
        *gpu = NULL;
        return rc == RM_ERR_NOMEM || rc == RM_ERR_DEVICE ? 2 : 1;
    }
    char f[32], t[32], b[32];
    if ((size_t)budget > *gpu_free) {
        fprintf(stderr,
                "remat maxbatch: the budget %s is more than the GPU has free, %s (of %s): `remat train "
                "--device cuda` would refuse it\n",
                rm_cli_bytes(b, sizeof b, budget), rm_cli_bytes(f, sizeof f, (double)*gpu_free),
                rm_cli_bytes(t, sizeof t, (double)*gpu_total));
        rm_backend_free(*gpu);
        *gpu = NULL;
        return 1;
    }
    return 0;
}

/* The results, one row per strategy, ratios to checkpoint-all's (row 0). */
static void print_table(const rm_strategy_info *const *list, int nlist, const rm_maxbatch_result *res, const int *ok,
                        char err[][160])
{
    printf("%-18s %9s %7s %9s %11s %8s %8s %6s  %s\n", "strategy", "max batch", "vs all", "overhead", "peak", "solve",
           "search", "probes", "notes");
    int base = ok[0] ? res[0].max_batch : 0;
    for (int k = 0; k < nlist; k++) {
        const rm_maxbatch_result *r = &res[k];
        if (!ok[k]) {
            printf("%-18s %9s %7s %9s %11s %8s %8s %6s  error: %s\n", list[k]->name, "-", "-", "-", "-", "-", "-", "-",
                   err[k]);
            continue;
        }
        char ratio[16] = "-", ov[16] = "-", pk[32] = "-", solve[16] = "-", notes[128] = "";
        if (base > 0) snprintf(ratio, sizeof ratio, "%.2fx", (double)r->max_batch / base);
        if (r->max_batch > 0) {
            snprintf(ov, sizeof ov, "%+.2f%%", r->base_cost > 0 ? 100.0 * (r->cost / r->base_cost - 1) : 0.0);
            rm_cli_bytes(pk, sizeof pk, (double)(r->fixed_bytes + r->peak_bytes));
            snprintf(solve, sizeof solve, "%.2fs", r->stats.seconds);
            if (r->stats.has_bound) {
                size_t l = strlen(notes);
                snprintf(notes + l, sizeof notes - l, "%s%s, gap %.1f%%%s", l ? "; " : "", rm_status_name(r->stats.status),
                         100.0 * r->stats.gap, r->stats.bound_trivial ? " (trivial bound)" : "");
            }
        }
        if (r->unproved) {
            size_t l = strlen(notes);
            snprintf(notes + l, sizeof notes - l, "%s* a larger batch hit the time limit", l ? "; " : "");
        }
        if (r->capped) {
            size_t l = strlen(notes);
            snprintf(notes + l, sizeof notes - l, "%sthe --max-batch cap", l ? "; " : "");
        }
        printf("%-18s %9d %7s %9s %11s %8s %7.2fs %6d  %s\n", list[k]->name, r->max_batch, ratio, ov, pk, solve,
               r->search_s, r->probes, notes);
    }
    printf("\nmax batch: the largest batch that fits; vs all: its ratio to checkpoint-all's; overhead: extra\n"
           "compute at that batch over checkpoint-all's (every node once); peak: fixed + activations there;\n"
           "solve: the solve at that batch; search: all probes of the strategy.\n");
}

/* What the search is for: model, costs, device, budget, bound. 1 when not
 * even batch 1 fits (said on stderr). */
static int print_setup(const char *model, const char *costs_path, const rm_cost_file *costs, const rm_backend *gpu,
                       size_t gpu_free, size_t gpu_total, const rm_cli_budget *budget, const rm_maxbatch_options *o,
                       trace_ctx *tc, double limit)
{
    char a[32], b[32];
    rm_err e = {RM_OK, ""};
    printf("model        %s\n", model);
    if (costs)
        printf("costs        profiled seconds from %s (%s, batch %d), scaled linearly to each batch tried:\n"
               "             an assumption (kernels run below peak at small batches); overheads are in time\n",
               costs_path, costs->device, costs->batch);
    else
        printf("costs        FLOPs (traced from the model)\n");
    if (gpu) {
        char f[32], t[32], w[32];
        printf("device       cuda (GPU 0, %s free of %s): fixed bytes as `remat train --device cuda` allocates\n"
               "             them, the layers' CUDA workspace and the %s cuBLAS workspace included\n",
               rm_cli_bytes(f, sizeof f, (double)gpu_free), rm_cli_bytes(t, sizeof t, (double)gpu_total),
               rm_cli_bytes(w, sizeof w, (double)rm_backend_cuda_fixed_bytes(gpu)));
    }
    printf("budget       %s (%s bytes) in total, fixed bytes included\n", rm_cli_bytes(a, sizeof a, budget->value),
           rm_cli_group_digits(b, sizeof b, (unsigned long long)budget->value));
    if (o->bound_batch == 0) {
        rm_problem *p = NULL;
        fflush(stdout);
        if (!build_problem(&p, tc, 1, &e))
            fprintf(stderr,
                    "remat maxbatch: not even batch 1 fits: fixed %s + the trivial lower bound %s exceed the budget\n",
                    rm_cli_bytes(a, sizeof a, (double)p->fixed_bytes),
                    rm_cli_bytes(b, sizeof b, (double)rm_problem_peak_lower_bound(p)));
        else
            fprintf(stderr, "remat maxbatch: not even batch 1 fits the budget (%s)\n", e.msg);
        rm_problem_free(p);
        return 1;
    }
    printf("bound        batch %d%s: above it the largest node with its inputs alone exceeds the budget\n",
           o->bound_batch, o->bound_batch == o->max_batch ? " (the --max-batch cap)" : "");
    if (limit > 0) printf("time limit   %g s for each lp_round / milp solve\n", limit);
    printf("\n");
    fflush(stdout);

    return 0;
}

static int maxbatch_run(int argc, char **argv)
{
    const char *model = NULL, *budget = NULL, *strategies = NULL, *max_batch = NULL, *time_limit = NULL,
               *costs_path = NULL, *device = NULL;
    int quiet = 0;
    const rm_cli_opt opts[] = {
        RM_CLI_FLAG("--quiet", "-q", &quiet),
        RM_CLI_VALUE("--model", &model),
        RM_CLI_VALUE("--budget", &budget),
        RM_CLI_VALUE("--strategies", &strategies),
        RM_CLI_VALUE("--max-batch", &max_batch),
        RM_CLI_VALUE("--time-limit", &time_limit),
        RM_CLI_VALUE("--costs", &costs_path),
        RM_CLI_VALUE("--device", &device),
    };
    if (rm_cli_parse_options(opts, sizeof opts / sizeof opts[0], argc, argv, "maxbatch", MAXBATCH_USAGE)) return 1;
    if (!model) return usage_error("--model FILE is required");
    if (!budget) return usage_error("--budget B is required");
    rm_cli_budget bud;
    char why[256];
    if (rm_cli_parse_budget(&bud, budget, why, sizeof why)) return usage_error("--budget: %s", why);
    if (bud.percent)
        return usage_error("--budget must be an amount of memory here (16GiB), not a percentage: the no-remat peak "
                           "it would refer to grows with the batch");
    long cap = 1L << 20;
    if (max_batch && rm_cli_parse_long(&cap, max_batch, 1, 1L << 30))
        return usage_error("--max-batch must be an integer from 1 to %ld, got '%s'", 1L << 30, max_batch);
    int cuda = device && !strcmp(device, "cuda");
    if (device && !cuda && strcmp(device, "cpu"))
        return usage_error("--device must be cpu or cuda, got '%s'", device);
    double limit = 30;
    if (time_limit && rm_cli_parse_seconds(&limit, time_limit))
        return usage_error("--time-limit must be a number of seconds >= 0, got '%s'", time_limit);

    /* The strategies, checkpoint_all first: every ratio is to it. */
    const rm_strategy_info *list[MAX_STRATEGIES];
    int nlist = 0;
    list[nlist++] = rm_strategy_find("checkpoint_all");
    if (rm_cli_add_strategies(list, &nlist, MAX_STRATEGIES, strategies ? strategies : "all", why, sizeof why))
        return usage_error("%s", why);

    rm_err e = {RM_OK, ""};
    /* The GPU first: without one there is nothing to search for, and its
     * cuBLAS workspace (sized by the device) is part of the fixed bytes. */
    rm_backend *gpu = NULL;
    size_t gpu_free = 0, gpu_total = 0;
    if (cuda) {
        int rc = open_gpu(&gpu, &gpu_free, &gpu_total, bud.value);
        if (rc) return rc;
    }
    rm_model *m = NULL;
    if (rm_model_load(&m, model, &e)) {
        fprintf(stderr, "remat maxbatch: %s\n", e.msg);
        rm_backend_free(gpu);
        return 1;
    }
    rm_cost_file *costs = NULL;
    if (costs_path && rm_cost_file_read(&costs, costs_path, &e)) {
        fprintf(stderr, "remat maxbatch: %s\n", e.msg);
        rm_model_free(m);
        rm_backend_free(gpu);
        return e.code == RM_ERR_NOMEM ? 2 : 1;
    }
    trace_ctx tc = {m, rm_optim_options_default(RM_OPTIM_SGD), costs, gpu};
    /* A file of another model is refused now, not at the first probe. */
    rm_problem *check = NULL;
    if (costs && build_problem(&check, &tc, costs->batch, &e)) {
        fprintf(stderr, "remat maxbatch: %s\n", e.msg);
        rm_cost_file_free(costs);
        rm_model_free(m);
        rm_backend_free(gpu);
        return 1;
    }
    rm_problem_free(check);
    rm_maxbatch_options o;
    memset(&o, 0, sizeof o);
    o.budget = (size_t)bud.value;
    o.max_batch = (int)cap;
    o.solver.time_limit_s = limit;
    if (!quiet) o.progress = progress;

    int rc = rm_maxbatch_bound(&o.bound_batch, build_problem, &tc, o.budget, o.max_batch, &e);
    if (rc) {
        fprintf(stderr, "remat maxbatch: %s\n", e.msg);
        rm_cost_file_free(costs);
        rm_model_free(m);
        rm_backend_free(gpu);
        return e.code == RM_ERR_NOMEM ? 2 : 1;
    }
    if (print_setup(model, costs_path, costs, gpu, gpu_free, gpu_total, &bud, &o, &tc, limit)) {
        rm_cost_file_free(costs);
        rm_model_free(m);
        rm_backend_free(gpu);
        return 1;
    }
    rm_maxbatch_result res[MAX_STRATEGIES];
    int ok[MAX_STRATEGIES];
    char err[MAX_STRATEGIES][160];
    for (int k = 0; k < nlist; k++) {
        rm_err se = {RM_OK, ""};
        ok[k] = rm_maxbatch_search(&res[k], list[k], build_problem, &tc, &o, &se) == RM_OK;
        snprintf(err[k], sizeof err[k], "%s", se.msg);
        if (!ok[k] && !quiet) fprintf(stderr, "\nremat maxbatch: %s: %s\n", list[k]->name, se.msg);
    }

    print_table(list, nlist, res, ok, err);
    rm_cost_file_free(costs);
    rm_model_free(m);
    rm_backend_free(gpu);
    return 0;
}

const rm_command rm_cmd_maxbatch = {
    .name = "maxbatch",
    .summary = "the largest batch each strategy fits in a memory budget",
    .usage = MAXBATCH_USAGE,
    .run = maxbatch_run,
};
