/* `remat maxbatch`: for each strategy, the largest batch size whose schedule
 * the simulator accepts within a device budget (fixed bytes included) and an
 * overhead cap, found by scheduler/maxbatch.c's galloping-then-binary
 * search; this file supplies the problem for each batch size by tracing the
 * model, in remat's accounting or Checkmate's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "cli_util.h"
#include "commands.h"
#include "maxbatch.h"
#include "table.h"
#include "trace.h"
#include "trainer.h"
#include <unistd.h>

#define MAXBATCH_USAGE                                                                                                 \
    "usage: remat maxbatch --model FILE --budget B [--max-overhead X] [--accounting remat|checkmate]\n"                \
    "                      [--input HxW] [--strategies a,b,...] [--max-batch N] [--ranks N] [--costs FILE]\n"          \
    "                      [--time-limit S] [--node-limit N] [--milp-engine E] [--device cpu|cuda]\n"                  \
    "                      [--format text|csv|json]\n"                                                                 \
    "                      [--quiet]\n"                                                                                \
    "                      (--onnx FILE [--loss L] [--init I] in place of --model FILE)\n"                             \
    "\n"                                                                                                               \
    "For each strategy, the largest batch size at which it finds a schedule that the simulator accepts\n"              \
    "within the budget, fixed bytes included, and whose extra compute stays within the overhead cap; and\n"            \
    "how it compares with training without rematerialization (checkpoint-all), which is always measured.\n"            \
    "\n"                                                                                                               \
    "The search grows the batch 1, 2, 4, ... until it does not fit, then bisects. The solvers (lp_round,\n"            \
    "milp, best) start from the largest batch a heuristic fitted, since they are never worse than their\n"             \
    "incumbent, and gallop up from it; each probe asks for the first schedule that fits, not the cheapest\n"           \
    "(the overhead shown is that schedule's). No batch whose trivial lower bound (the largest node with\n"             \
    "its inputs) exceeds the budget is ever solved. Feasibility is monotone for checkpoint-all and an\n"               \
    "exactly solved MILP, so their answers are exact; a heuristic (or a MILP stopped by its time limit)\n"             \
    "need not be monotone, and for those the answer is a batch that fits with the next one verified not\n"             \
    "to. A '*' in the notes marks a solver answer where a larger batch found no schedule and none was ruled\n"         \
    "out (a time or node limit stopped the solver, or no rounding fit): unproved. A strategy that fails\n"             \
    "is a row saying why, and the exit status is 1.\n"                                                                 \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --model FILE          model config (models/*.cfg)\n" RM_CLI_MODEL_USAGE(                                        \
        "          ") "  --budget B            TOTAL device memory: 16GiB, 512MiB, 1.5e9, 16GB (no percentages here: " \
                      "the\n"                                                                                          \
                      "                        peak they would refer to depends on the batch; a number without a "     \
                      "unit is\n"                                                                                      \
                      "                        bytes, at least 1000000)\n"                                             \
                      "  --max-overhead X      the most extra compute a schedule may cost over checkpoint-all's: "     \
                      "1fwd (the\n"                                                                                    \
                      "                        default: one extra forward pass, as Checkmate's max-batch figure), "    \
                      "Nfwd,\n"                                                                                        \
                      "                        a percentage with its sign (50%), or none\n"                            \
                      "  --accounting A        remat (default): fixed bytes as `remat train` allocates them "          \
                      "(weights,\n"                                                                                    \
                      "                        gradients, momentum, batchnorm statistics, labels, workspace); "        \
                      "checkmate:\n"                                                                                   \
                      "                        parameters and their gradients only, and sizes in GB (10^9 bytes), as " \
                      "the paper\n"                                                                                    \
                      "  --input HxW           the input's height and width instead of the config's (e.g. 416x608)\n"  \
                      "  --format F            text (default), csv or json: the results table alone on stdout as "     \
                      "data (the setup\n"                                                                              \
                      "                        goes to stderr); columns strategy, max_batch, global_batch, vs_all, "   \
                      "overhead_pct,\n"                                                                                \
                      "                        peak_bytes, solve_s, search_s, probes, notes, bound_batch,\n"           \
                      "                        unproved (0/1), from\n"                                                 \
                      "  --ranks N             a data-parallel job of N processes (`mpirun -np N remat train`): the\n" \
                      "                        budget and max batch are each rank's, and a `global` column gives "     \
                      "the\n"                                                                                          \
                      "                        step's batch, N times it (default 1)\n"                                 \
                      "  --strategies LIST     comma-separated names from `remat plan --help` (default: all of "       \
                      "them)\n"                                                                                        \
                      "  --max-batch N         the largest batch tried (default 1048576, at most 2^30)\n"              \
                      "  --costs FILE          node costs in profiled seconds (`remat profile`, docs/cost-format.md) " \
                      "instead\n"                                                                                      \
                      "                        of FLOPs; the search tries many batches, so they are scaled linearly "  \
                      "from the\n"                                                                                     \
                      "                        batch they were measured at (an assumption: small batches run below "   \
                      "peak)\n"                                                                                        \
                      "  --time-limit S        wall-clock seconds for each solve, whatever the strategy (default 30; " \
                      "0 = none)\n"                                                                                    \
                      "  --node-limit N        branch-and-bound nodes for each milp solve (deterministic; default "    \
                      "none)\n" RM_CLI_MILP_ENGINE_HELP(                                                               \
                          "       ") "  --device cpu|cuda     whose accounting (default cpu); cuda: GPU 0's, as "      \
                                     "`remat train "                                                                   \
                                     "--device cuda`\n"                                                                \
                                     "                        allocates it (the layers' CUDA workspace, the loss "     \
                                     "slot, the cuBLAS\n"                                                              \
                                     "                        workspace); needs a GPU, and the budget must be free "   \
                                     "on it\n"                                                                         \
                                     "  --quiet               no progress on stderr\n"                                 \
                                     "\n"                                                                              \
                                     "example: remat maxbatch --model models/vgg16.cfg --budget 16GiB --strategies "   \
                                     "checkpoint_all,chen_greedy,milp"

#define usage_error(...) rm_cli_usage_error("maxbatch", MAXBATCH_USAGE, __VA_ARGS__)

#define MAX_STRATEGIES 32

typedef struct trace_ctx {
    const rm_model *m;
    rm_optim_options optim;
    const rm_cost_file *costs;      /* NULL: FLOPs */
    const rm_backend *be;           /* NULL: the CPU's accounting; else this GPU's */
    int checkmate;                  /* Checkmate's accounting: fixed = parameters + gradients */
    char too_large[RM_ERR_MSG_LEN]; /* why the batch above the bound could not be traced ("": it could) */
} trace_ctx;

/* By default the same accounting as `remat train` (workspace and optimizer
 * state included), so the batch reported here is one that really trains;
 * Checkmate's counts only the parameters and their gradients as fixed, so
 * that its batches compare with the paper's. */
static int build_problem(rm_problem **out, void *vctx, int batch, rm_err *e)
{
    trace_ctx *c = vctx;
    rm_footprint f;
    int rc = rm_training_problem(out, &f, c->m, batch, &c->optim, c->be, c->costs, RM_COST_SCALE_BATCH, e);
    if (rc == RM_OK && c->checkmate) (*out)->fixed_bytes = f.weights + f.grads;
    return rc;
}

/* Progress on stderr: on a terminal one line, rewritten at each probe; in
 * a log one line per strategy, when it is done. */
typedef struct progress_state {
    int tty;
} progress_state;

static void progress(void *ctx, const char *strategy, int batch, int feasible, double seconds)
{
    progress_state *ps = ctx;
    if (!ps->tty) return;
    if (feasible < 0)
        fprintf(stderr, "\r\033[Kremat maxbatch: %s: batch %d ...", strategy, batch);
    else
        rm_text_fprintf(stderr, " %s (%.2f s)", feasible ? "fits" : "does not fit", seconds);
}

static void strategy_done(const progress_state *ps, const char *name, const rm_maxbatch_result *r, int ok)
{
    if (ps->tty) fprintf(stderr, "\r\033[K");
    if (ps->tty || !ok) return; /* errors are reported by the caller */
    rm_text_fprintf(stderr, "remat maxbatch: %s: batch %d (%d probe%s, %.2f s)\n", name, r->max_batch, r->probes,
                    r->probes == 1 ? "" : "s", r->search_s);
}

/* --max-overhead: "1fwd", "2.5fwd" (more than 0, at most 1000), "50%"
 * (at most 100000%), "none". Plain decimals only. 0 on success. */
static int parse_cap(rm_overhead_cap *cap, const char *s)
{
    if (!strcmp(s, "none")) {
        cap->kind = RM_CAP_NONE;
        return 0;
    }
    size_t n = rm_cli_number_prefix(s);
    if (!n) return -1;
    double v = strtod(s, NULL);
    if (!strcmp(s + n, "fwd") && v > 0 && v <= 1000) {
        cap->kind = RM_CAP_FORWARDS;
        cap->value = v;
        return 0;
    }
    if (!strcmp(s + n, "%") && v <= 100000) {
        cap->kind = RM_CAP_FRACTION;
        cap->value = v / 100;
        return 0;
    }
    return -1;
}

/* --input HxW, each a whole number from 1 to 65536. 0 on success. */
static int parse_input(int *height, int *width, const char *s)
{
    const char *x = strchr(s, 'x');
    long h, w;
    char hs[16];
    if (!x || (size_t)(x - s) >= sizeof hs) return -1;
    memcpy(hs, s, (size_t)(x - s));
    hs[x - s] = 0;
    if (rm_cli_parse_long(&h, hs, 1, 65536) || rm_cli_parse_long(&w, x + 1, 1, 65536)) return -1;
    *height = (int)h, *width = (int)w;
    return 0;
}

/* The most any schedule of p can cost: stage t computes each node up to t
 * at most once, so node i at most n - i times. */
static double dearest_schedule(const rm_problem *p)
{
    double c = 0;
    for (int i = 0; i < p->n; i++) c += p->nodes[i].cost * (double)(p->n - i);
    return c;
}

/* The cap in words, with what it is in percent at batch 1 (costs grow
 * linearly with the batch, so at every batch). A cap no schedule can reach
 * (--max-overhead 100000% on a small graph) is said to rule nothing out:
 * shown bare, it read as if it had been applied. */
static void describe_cap(char *buf, size_t len, const rm_overhead_cap *cap, trace_ctx *tc)
{
    rm_problem *p = NULL;
    rm_err e = {RM_OK, ""};
    double pct = -1, most = -1;
    if (cap->kind != RM_CAP_NONE && build_problem(&p, tc, 1, &e) == RM_OK) {
        double all = rm_problem_base_cost(p);
        if (all > 0) pct = 100.0 * (rm_overhead_cap_cost(cap, p) / all - 1);
        if (all > 0) most = 100.0 * (dearest_schedule(p) / all - 1);
    }
    rm_problem_free(p);
    size_t n = 0;
    if (cap->kind == RM_CAP_FORWARDS)
        n = (size_t)snprintf(buf, len, "%g extra forward pass%s (+%.2f%% of checkpoint-all's compute)", cap->value,
                             cap->value == 1 ? "" : "es", pct);
    else if (cap->kind == RM_CAP_FRACTION)
        n = (size_t)snprintf(buf, len, "+%g%% of checkpoint-all's compute", 100 * cap->value);
    else
        snprintf(buf, len, "none: any recomputation is allowed");
    if (most >= 0 && pct >= most && n < len)
        snprintf(buf + n, len - n,
                 ": no schedule costs that much (at most +%.2f%%, every node recomputed in every stage), so the "
                 "cap rules nothing out",
                 most);
}

/* The GPU the search accounts for, refusing a budget it cannot hold. 0, or
 * the exit code. */
static int open_gpu(rm_backend **gpu, rm_backend_kind kind, size_t *gpu_free, size_t *gpu_total, size_t budget)
{
    rm_err e = {RM_OK, ""};
    int rc = rm_backend_create(gpu, kind, &e);
    if (!rc) rc = (*gpu)->ops->mem_info((*gpu)->ctx, gpu_free, gpu_total, &e);
    if (rc) {
        rm_text_fprintf(stderr, "remat maxbatch: cannot search on the GPU: %s\n", e.msg);
        rm_backend_free(*gpu);
        *gpu = NULL;
        return rc == RM_ERR_NOMEM || rc == RM_ERR_DEVICE ? 2 : 1;
    }
    char f[32], t[32], b[32];
    if (budget > *gpu_free) {
        rm_text_fprintf(stderr,
                        "remat maxbatch: the budget %s is more than the GPU has free, %s (of %s): `remat train "
                        "--device cuda` would refuse it\n",
                        rm_cli_bytes(b, sizeof b, (double)budget), rm_cli_bytes(f, sizeof f, (double)*gpu_free),
                        rm_cli_bytes(t, sizeof t, (double)*gpu_total));
        rm_backend_free(*gpu);
        *gpu = NULL;
        return 1;
    }
    return 0;
}

/* The results, one row per strategy, ratios to checkpoint-all's (row 0). */
enum {
    COL_STRATEGY,
    COL_BATCH,
    COL_GLOBAL,
    COL_RATIO,
    COL_OVERHEAD,
    COL_PEAK,
    COL_SOLVE,
    COL_SEARCH,
    COL_PROBES,
    COL_NOTES,
    COL_BOUND,
    COL_UNPROVED,
    COL_FROM,
    NCOLS
};
static const rm_table_col maxbatch_cols[NCOLS] = {
    [COL_STRATEGY] = {"strategy", "strategy", RM_TABLE_LEFT, 18, RM_TABLE_BOTH},
    [COL_BATCH] = {"max batch", "max_batch", RM_TABLE_RIGHT, 9, RM_TABLE_BOTH},
    [COL_GLOBAL] = {"global", "global_batch", RM_TABLE_RIGHT, 7, RM_TABLE_DATA}, /* shown with --ranks N > 1 */
    [COL_RATIO] = {"vs all", "vs_all", RM_TABLE_RIGHT, 7, RM_TABLE_BOTH},
    [COL_OVERHEAD] = {"overhead", "overhead_pct", RM_TABLE_RIGHT, 9, RM_TABLE_BOTH},
    [COL_PEAK] = {"peak", "peak_bytes", RM_TABLE_RIGHT, 11, RM_TABLE_BOTH},
    [COL_SOLVE] = {"solve", "solve_s", RM_TABLE_RIGHT, 8, RM_TABLE_BOTH},
    [COL_SEARCH] = {"search", "search_s", RM_TABLE_RIGHT, 8, RM_TABLE_BOTH},
    [COL_PROBES] = {"probes", "probes", RM_TABLE_RIGHT, 6, RM_TABLE_BOTH},
    [COL_NOTES] = {" notes", "notes", RM_TABLE_LEFT, 0, RM_TABLE_BOTH},
    [COL_BOUND] = {"bound batch", "bound_batch", RM_TABLE_RIGHT, 0, RM_TABLE_DATA},
    [COL_UNPROVED] = {"unproved", "unproved", RM_TABLE_RIGHT, 0, RM_TABLE_DATA},
    [COL_FROM] = {"from", "from", RM_TABLE_LEFT, 0, RM_TABLE_DATA},
};

static void add_note(char *notes, size_t len, const char *note)
{
    size_t l = strlen(notes);
    snprintf(notes + l, len - l, "%s%s", l ? "; " : "", note);
}

static int print_table(const rm_strategy_info *const *list, int nlist, const rm_maxbatch_result *res, const int *ok,
                       char err[][160], const char *const *from, int si, int ranks, rm_table_format fmt)
{
    rm_table_col cols[NCOLS];
    memcpy(cols, maxbatch_cols, sizeof cols);
    if (ranks > 1) cols[COL_GLOBAL].only = RM_TABLE_BOTH;
    rm_table *t = rm_table_create(cols, NCOLS);
    if (!t) return -1;
    int base = ok[0] ? res[0].max_batch : 0, any_from = 0;
    for (int k = 0; k < nlist; k++) {
        const rm_maxbatch_result *r = &res[k];
        char x[32], notes[200] = " ";
        rm_table_set_text(t, COL_STRATEGY, "%s", list[k]->name);
        if (!ok[k]) {
            for (int c = COL_BATCH; c < COL_NOTES; c++) rm_table_set_num(t, c, NAN, "-");
            rm_table_set_text(t, COL_NOTES, "%serror: %s", fmt == RM_TABLE_TEXT ? " " : "", err[k]);
            rm_table_add_row(t);
            continue;
        }
        rm_table_set_num(t, COL_BATCH, r->max_batch, "%d", r->max_batch);
        rm_table_set_num(t, COL_GLOBAL, (double)r->max_batch * ranks, "%.0f", (double)r->max_batch * ranks);
        if (base > 0)
            rm_table_set_num(t, COL_RATIO, (double)r->max_batch / base, "%.2fx", (double)r->max_batch / base);
        else
            rm_table_set_num(t, COL_RATIO, NAN, "-");
        const char *src = NULL;
        if (r->max_batch > 0) {
            double ov = rm_overhead_pct(r->cost, r->base_cost);
            double peak = (double)(r->fixed_bytes + r->peak_bytes);
            rm_table_set_num(t, COL_OVERHEAD, ov, "%+.2f%%", ov);
            rm_table_set_num(t, COL_PEAK, peak, "%s", (si ? rm_cli_bytes_si : rm_cli_bytes)(x, sizeof x, peak));
            rm_table_set_num(t, COL_SOLVE, r->stats.seconds, "%.2fs", r->stats.seconds);
            if (r->stats.source && list[k]->solve_opt) {
                /* The incumbent handed over is the schedule of the strategy it came from. */
                src = !strcmp(r->stats.source, RM_SOURCE_CALLER_INCUMBENT) && from[k] ? from[k] : r->stats.source;
                if (!strcmp(src, list[k]->name)) src = NULL; /* a schedule of its own needs no note */
            }
            if (src) {
                char note[64];
                snprintf(note, sizeof note, "from %s", src);
                add_note(notes + 1, sizeof notes - 1, note);
            }
        } else {
            for (int c = COL_OVERHEAD; c <= COL_SOLVE; c++) rm_table_set_num(t, c, NAN, "-");
        }
        rm_table_set_num(t, COL_SEARCH, r->search_s, "%.2fs", r->search_s);
        rm_table_set_num(t, COL_PROBES, r->probes, "%d", r->probes);
        if (r->max_batch > 0 && r->max_batch == r->bound_batch && !r->capped)
            add_note(notes + 1, sizeof notes - 1, "the bound: no larger batch fits");
        if (r->max_batch == 0)
            add_note(notes + 1, sizeof notes - 1,
                     list[k]->solve_opt || k > 0 ? "nothing within the budget and the overhead cap at batch 1"
                                                 : "nothing within the budget at batch 1");
        if (r->unproved)
            add_note(notes + 1, sizeof notes - 1, "* a larger batch unproved: no schedule found, none ruled out");
        if (r->capped) add_note(notes + 1, sizeof notes - 1, "the --max-batch cap");
        /* The leading space is text's second space before the notes. */
        rm_table_set_text(t, COL_NOTES, "%s", fmt == RM_TABLE_TEXT ? notes : notes + 1);
        rm_table_set_num(t, COL_BOUND, r->bound_batch, "%d", r->bound_batch);
        rm_table_set_num(t, COL_UNPROVED, r->unproved, "%d", r->unproved);
        if (src) rm_table_set_text(t, COL_FROM, "%s", src), any_from = 1;
        rm_table_add_row(t);
    }
    int rc = rm_table_write(t, stdout, fmt);
    rm_table_free(t);
    if (fmt == RM_TABLE_TEXT)
        printf("\nmax batch: the largest batch that fits the budget and the overhead cap; vs all: its ratio to\n"
               "checkpoint-all's; overhead: extra compute at that batch over checkpoint-all's (every node once), of\n"
               "the first schedule found to fit (not the cheapest); peak: fixed + activations there; solve: the solve\n"
               "at that batch; search: all probes of the strategy%s.\n",
               any_from ? "; a note \"from S\": the solver kept strategy S's schedule" : "");
    if (fmt == RM_TABLE_TEXT && ranks > 1)
        printf("global: the batch of a step of %d ranks, each with this budget and a replica of the model\n"
               "(`mpirun -np %d remat train --batch GLOBAL`; --batch is the global batch there).\n",
               ranks, ranks);
    return rc;
}

/* What the search is for: model, costs, device, budget, bound. 1 when not
 * even batch 1 fits (said on stderr). */
static int print_setup(const char *model, const char *input, const char *costs_path, const rm_cost_file *costs,
                       const rm_backend *gpu, size_t gpu_free, size_t gpu_total, const rm_cli_budget *budget,
                       const rm_maxbatch_options *o, trace_ctx *tc, double limit, int solvers, FILE *out)
{
    char a[32], b[32], cap[300];
    rm_err e = {RM_OK, ""};
    const char *(*bytes)(char *, size_t, double) = tc->checkmate ? rm_cli_bytes_si : rm_cli_bytes;
    rm_text_fprintf(out, "model        %s", model);
    if (input) fprintf(out, " at input %s", input);
    fprintf(out, "\n");
    if (costs)
        rm_text_fprintf(out,
                        "costs        profiled seconds from %s (%s, batch %d), scaled linearly to each batch tried:\n"
                        "             an assumption (kernels run below peak at small batches); overheads are in time\n",
                        costs_path, costs->device, costs->batch);
    else
        fprintf(out, "costs        FLOPs (traced from the model)\n");
    if (gpu) {
        char f[32], t[32], w[32];
        fprintf(out,
                "device       cuda (GPU 0, %s free of %s): fixed bytes as `remat train --device cuda` allocates\n"
                "             them, the layers' CUDA workspace and the %s cuBLAS workspace included\n",
                rm_cli_bytes(f, sizeof f, (double)gpu_free), rm_cli_bytes(t, sizeof t, (double)gpu_total),
                rm_cli_bytes(w, sizeof w, (double)rm_backend_fixed_bytes(gpu)));
    }
    fprintf(out, "budget       %s (%s bytes) in total, fixed bytes included\n",
            bytes(a, sizeof a, (double)budget->bytes), rm_cli_group_digits(b, sizeof b, budget->bytes));
    fprintf(out, "accounting   %s\n",
            tc->checkmate ? "checkmate: fixed = parameters + their gradients (as the paper)"
                          : "remat: fixed bytes as `remat train` allocates them");
    describe_cap(cap, sizeof cap, &o->cap, tc);
    fprintf(out, "overhead cap %s\n", cap);
    if (o->bound_batch == 0) {
        /* Why, in the words of every other refusal: batch 1's verdict on the budget. */
        rm_problem *p = NULL;
        rm_problem_report facts;
        fflush(out);
        rm_budget_verdict v = RM_BUDGET_UNLIMITED;
        if (!build_problem(&p, tc, 1, &e) && !rm_problem_report_of(&facts, p, &e)) {
            p->budget = budget->bytes;
            v = rm_budget_verdict_of(p, &facts);
        }
        if (!rm_budget_feasible(v)) {
            char why[RM_ERR_MSG_LEN];
            rm_text_fprintf(stderr, "remat maxbatch: not even batch 1 fits: %s\n",
                            rm_budget_reason(why, sizeof why, v, p, &facts, bytes));
        } else {
            rm_text_fprintf(stderr, "remat maxbatch: not even batch 1 fits the budget (%s)\n", e.msg);
        }
        rm_problem_free(p);
        return 1;
    }
    if (o->bound_batch == o->max_batch)
        fprintf(out, "bound        batch %d: the --max-batch cap (the largest node with its inputs fits more)\n",
                o->bound_batch);
    else if (tc->too_large[0])
        fprintf(out, "bound        batch %d: above it the problem is too large for any device (%s)\n", o->bound_batch,
                tc->too_large);
    else
        fprintf(out, "bound        batch %d: above it the largest node with its inputs alone exceeds the budget\n",
                o->bound_batch);
    if (limit > 0 && solvers) fprintf(out, "time limit   %g s for each lp_round / milp solve\n", limit);
    fprintf(out, "\n");
    fflush(out);

    return 0;
}

static int maxbatch_run(int argc, char **argv)
{
    rm_cli_model mdl;
    memset(&mdl, 0, sizeof mdl);
    const char *model = NULL, *budget = NULL, *strategies = NULL, *max_batch = NULL, *time_limit = NULL,
               *costs_path = NULL, *device = NULL, *max_overhead = NULL, *accounting = NULL, *input = NULL,
               *format = NULL, *node_limit = NULL, *milp_engine = NULL, *ranks_s = NULL;
    int quiet = 0;
    const rm_cli_opt opts[] = {
        RM_CLI_FLAG("--quiet", "-q", &quiet),
        RM_CLI_MODEL_OPTIONS(&mdl),
        RM_CLI_VALUE("--budget", &budget),
        RM_CLI_VALUE("--strategies", &strategies),
        RM_CLI_VALUE("--max-batch", &max_batch),
        RM_CLI_VALUE("--time-limit", &time_limit),
        RM_CLI_VALUE("--costs", &costs_path),
        RM_CLI_VALUE("--device", &device),
        RM_CLI_VALUE("--max-overhead", &max_overhead),
        RM_CLI_VALUE("--accounting", &accounting),
        RM_CLI_VALUE("--input", &input),
        RM_CLI_VALUE("--format", &format),
        RM_CLI_VALUE("--node-limit", &node_limit),
        RM_CLI_VALUE("--milp-engine", &milp_engine),
        RM_CLI_VALUE("--ranks", &ranks_s),
    };
    if (rm_cli_parse_options(opts, sizeof opts / sizeof opts[0], argc, argv, "maxbatch", MAXBATCH_USAGE) ||
        rm_cli_model_check(&mdl, "maxbatch", MAXBATCH_USAGE))
        return 1;
    model = mdl.path;
    if (!model) return usage_error("--model FILE is required (or --onnx FILE)");
    if (!budget) return usage_error("--budget B is required");
    rm_cli_budget bud;
    char why[256];
    if (rm_cli_parse_budget(&bud, budget, why, sizeof why)) return usage_error("--budget: %s", why);
    if (bud.percent)
        return usage_error("--budget must be an amount of memory here (16GiB), not a percentage: the no-remat peak "
                           "it would refer to grows with the batch");
    long ranks = 1;
    if (ranks_s && rm_cli_parse_long(&ranks, ranks_s, 1, 65536))
        return usage_error("--ranks must be an integer from 1 to 65536, got '%s'", ranks_s);
    long cap = 1L << 20;
    if (max_batch && rm_cli_parse_long(&cap, max_batch, 1, RM_MAX_BATCH))
        return usage_error("--max-batch must be an integer from 1 to %d, got '%s'", RM_MAX_BATCH, max_batch);
    /* --device through the backends' registry, as train and profile parse it: any device but the host
     * (the default) is a GPU whose memory the search accounts for. */
    rm_backend_kind kind;
    if (rm_cli_parse_device(&kind, device, why, sizeof why)) return usage_error("%s", why);
    int cuda = kind != RM_BACKEND_DEFAULT;
    double limit = 30;
    long nodes = 0;
    rm_milp_engine engine;
    if (rm_cli_parse_solver_limits(&limit, &nodes, time_limit, node_limit, why, sizeof why) ||
        rm_cli_parse_milp_engine(&engine, milp_engine, why, sizeof why))
        return usage_error("%s", why);
    rm_overhead_cap ocap = {RM_CAP_FORWARDS, 1};
    if (max_overhead && parse_cap(&ocap, max_overhead))
        return usage_error("--max-overhead must be 1fwd (one extra forward pass), Nfwd (N up to 1000), a "
                           "percentage such as 50%% (at most 100000%%), or none; got '%s'",
                           max_overhead);
    int checkmate = accounting && !strcmp(accounting, "checkmate");
    if (accounting && !checkmate && strcmp(accounting, "remat"))
        return usage_error("--accounting must be remat or checkmate, got '%s'", accounting);
    if (checkmate && cuda)
        return usage_error("--accounting checkmate counts what the paper counts, not what a GPU allocates: it "
                           "does not go with --device cuda");
    rm_table_format fmt = RM_TABLE_TEXT;
    if (format && (rm_table_format_parse(&fmt, format) || fmt == RM_TABLE_MD))
        return usage_error("--format must be text, csv or json, got '%s'", format);
    int height = 0, width = 0;
    if (input && parse_input(&height, &width, input))
        return usage_error("--input must be HEIGHTxWIDTH with each from 1 to 65536 (e.g. 416x608), got '%s'", input);
    if (input && costs_path)
        return usage_error("--costs was measured at the config's input size; at --input %s its seconds would be "
                           "another size's: profile a config of that size instead",
                           input);

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
        int rc = open_gpu(&gpu, kind, &gpu_free, &gpu_total, bud.bytes);
        if (rc) return rc;
    }
    rm_model *m = NULL;
    {
        /* A model that does not fit the size says so: "remat maxbatch: at --input HxW: ...". */
        char who[96];
        snprintf(who, sizeof who, "maxbatch%s%s", input ? ": at --input " : "", input ? input : "");
        int rc = rm_cli_model_load(&m, who, &mdl, height, width, NULL);
        if (rc) {
            rm_backend_free(gpu);
            return rc;
        }
    }
    rm_cost_file *costs = NULL;
    if (costs_path && rm_cost_file_read(&costs, costs_path, &e)) {
        rm_text_fprintf(stderr, "remat maxbatch: %s\n", e.msg);
        rm_model_free(m);
        rm_backend_free(gpu);
        return e.code == RM_ERR_NOMEM ? 2 : 1;
    }
    trace_ctx tc = {m, rm_optim_options_default(RM_OPTIM_SGD), costs, gpu, checkmate, ""};
    /* A file of another model is refused now, not at the first probe. */
    rm_problem *check = NULL;
    if (costs && build_problem(&check, &tc, costs->batch, &e)) {
        rm_text_fprintf(stderr, "remat maxbatch: %s\n", e.msg);
        rm_cost_file_free(costs);
        rm_model_free(m);
        rm_backend_free(gpu);
        return 1;
    }
    rm_problem_free(check);
    rm_maxbatch_options o;
    memset(&o, 0, sizeof o);
    o.budget = bud.bytes;
    o.max_batch = (int)cap;
    o.solver.time_limit_s = limit;
    o.solver.node_limit = nodes;
    o.solver.milp_engine = engine;
    o.cap = ocap;
    progress_state ps = {isatty(STDERR_FILENO)};
    if (!quiet) {
        o.progress = progress;
        o.progress_ctx = &ps;
    }

    int rc = rm_maxbatch_bound_why(&o.bound_batch, tc.too_large, sizeof tc.too_large, build_problem, &tc, o.budget,
                                   o.max_batch, &e);
    if (rc) {
        rm_text_fprintf(stderr, "remat maxbatch: %s\n", e.msg);
        rm_cost_file_free(costs);
        rm_model_free(m);
        rm_backend_free(gpu);
        return e.code == RM_ERR_NOMEM ? 2 : 1;
    }
    /* With csv or json, stdout carries the table alone; the setup goes to stderr. */
    int solvers = 0;
    for (int k = 0; k < nlist; k++) solvers |= list[k]->solve_opt != NULL;
    if (print_setup(model, input, costs_path, costs, gpu, gpu_free, gpu_total, &bud, &o, &tc, limit, solvers,
                    fmt == RM_TABLE_TEXT ? stdout : stderr)) {
        rm_cost_file_free(costs);
        rm_model_free(m);
        rm_backend_free(gpu);
        return 1;
    }
    rm_maxbatch_result res[MAX_STRATEGIES];
    int ok[MAX_STRATEGIES];
    char err[MAX_STRATEGIES][160];
    const char *from[MAX_STRATEGIES];
    int lead = -1; /* the strategy with the largest batch so far */
    int milp = -1;
    for (int k = 0; k < nlist; k++) {
        rm_err se = {RM_OK, ""};
        /* A solver is never worse than its incumbent: it starts where the
         * strategies before it ended, with that schedule as incumbent. */
        int start = list[k]->solve_opt && lead >= 0;
        o.start_batch = start ? res[lead].max_batch : 0;
        o.start_schedule = start ? res[lead].schedule : NULL;
        /* Probes ask for a first fit, and there "best" is the MILP route
         * after the heuristics, with the same incumbent: where the MILP
         * gave up, it would repeat the same solve. */
        o.fail_batch = 0;
        if (!strcmp(list[k]->name, "best") && milp >= 0 && ok[milp] && res[milp].max_batch == o.start_batch)
            o.fail_batch = res[milp].fail_batch;
        from[k] = start ? list[lead]->name : NULL;
        ok[k] = rm_maxbatch_search(&res[k], list[k], build_problem, &tc, &o, &se) == RM_OK;
        if (ok[k] && o.fail_batch && res[k].fail_batch == o.fail_batch) res[k].unproved |= res[milp].unproved;
        snprintf(err[k], sizeof err[k], "%s", se.msg);
        if (!quiet) strategy_done(&ps, list[k]->name, &res[k], ok[k]);
        if (!ok[k] && !quiet) rm_text_fprintf(stderr, "remat maxbatch: %s\n", se.msg); /* it names the strategy */
        /* The lead: the largest batch, the cheaper schedule on a tie. */
        if (ok[k] && res[k].max_batch > 0 &&
            (lead < 0 || res[k].max_batch > res[lead].max_batch ||
             (res[k].max_batch == res[lead].max_batch && res[k].cost < res[lead].cost)))
            lead = k;
        if (!strcmp(list[k]->name, "milp")) milp = k;
    }

    int prc = print_table(list, nlist, res, ok, err, from, checkmate, (int)ranks, fmt);
    for (int k = 0; k < nlist; k++)
        if (ok[k]) rm_schedule_free(res[k].schedule);
    if (prc) {
        rm_text_fprintf(stderr, "remat maxbatch: cannot write the table (out of memory or a write error)\n");
        rm_cost_file_free(costs);
        rm_model_free(m);
        rm_backend_free(gpu);
        return 2;
    }
    rm_cost_file_free(costs);
    rm_model_free(m);
    rm_backend_free(gpu);
    int failed = 0;
    for (int k = 0; k < nlist; k++) failed |= !ok[k];
    return failed;
}

const rm_command rm_cmd_maxbatch = {
    .name = "maxbatch",
    .summary = "the largest batch each strategy fits in a memory budget",
    .usage = MAXBATCH_USAGE,
    .run = maxbatch_run,
};
