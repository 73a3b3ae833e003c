/* Small helpers every remat subcommand shares: "--opt value" parsing, usage
 * errors, strict number and size parsing (budgets), and human-readable
 * numbers. They print only where a function says so (usage errors). */
#ifndef REMAT_CLI_UTIL_H
#define REMAT_CLI_UTIL_H

#include <stddef.h>
#include <stdio.h>

#include "backend.h"
#include "footprint.h"
#include "model.h"
#include "onnx.h"
#include "problem.h"
#include "report.h"
#include "simulate.h"
#include "strategy.h"
#include "utf8.h" /* rm_name_shown_of: every name printed that remat did not choose */

/* 1 when argv[*a] is opt, as "--opt value" (then *a advances past the value)
 * or "--opt=value"; *out is the value, or NULL when it is missing. 0 when
 * argv[*a] is another argument. */
int rm_cli_option(const char **out, int argc, char **argv, int *a, const char *opt);

/* Prints "remat CMD: <message>", a blank line, the usage's synopsis (up
 * to its first blank line) and where the rest is (`remat CMD --help`) to
 * stderr and returns 1 (the exit code of bad usage). */
int rm_cli_usage_error(const char *cmd, const char *usage, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* One option a subcommand accepts: a valued "--opt V" / "--opt=V" stored in
 * *value, or a flag ("--quiet", with an optional short form "-q") that sets
 * *flag to 1. Build them with RM_CLI_VALUE and RM_CLI_FLAG. */
typedef struct rm_cli_opt {
    const char *name;
    const char *short_name; /* flags only; NULL when there is none */
    const char **value;     /* valued options; NULL for a flag */
    int *flag;              /* flags; NULL for a valued option */
} rm_cli_opt;
#define RM_CLI_VALUE(name, value)                                                                                      \
    {                                                                                                                  \
        (name), NULL, (value), NULL                                                                                    \
    }
#define RM_CLI_FLAG(name, short_name, flag)                                                                            \
    {                                                                                                                  \
        (name), (short_name), NULL, (flag)                                                                             \
    }

/* Parses argv[1..argc-1] against opts[0..n-1]. Every valued option may be
 * given once, with a non-empty value; a flag may repeat. On an unknown
 * argument, a missing value or a repeated option prints the usage error (see
 * rm_cli_usage_error) and returns 1; returns 0 otherwise. */
int rm_cli_parse_options(const rm_cli_opt *opts, size_t n, int argc, char **argv, const char *cmd, const char *usage);

/* Calls fn(ctx, item) on each comma-separated item of list, empty items
 * skipped; returns fn's first non-zero result, or -1 (before any call) when
 * list is too long to copy. */
int rm_cli_each_item(const char *list, int (*fn)(void *ctx, const char *item), void *ctx);

/* Appends to v[*n .. cap) the strategies a --strategies LIST names ("all":
 * every strategy of rm_strategy_list_all), skipping any already in v. 0, or
 * -1 with the reason in why (an unknown name, an empty list, too many). */
int rm_cli_add_strategies(const rm_strategy_info **v, int *n, int cap, const char *list, char *why, size_t len);

/* "unknown strategy 'NAME' (one of: best, checkpoint_all, ...)" into buf
 * (truncated to len; with_all: "..., or all"); returns buf. What every
 * command says of a strategy name it does not know. */
const char *rm_cli_unknown_strategy(char *buf, size_t len, const char *name, int with_all);

/* "1,234,567" */
const char *rm_cli_group_digits(char *buf, size_t len, unsigned long long v);
/* Binary units, three significant digits or so: "12.34 MiB", "512 B". */
const char *rm_cli_bytes(char *buf, size_t len, double bytes);
/* The same in powers of 1000 ("16.00 GB"), as Checkmate's paper counts. */
const char *rm_cli_bytes_si(char *buf, size_t len, double bytes);

/* A whole decimal number in [lo, hi] with nothing after it. 0 on success;
 * -1 otherwise (*out untouched). */
int rm_cli_parse_long(long *out, const char *s, long lo, long hi);
/* A batch size: a whole number from 1 to RM_MAX_BATCH (engine/model.h).
 * 0, or -1 with "--batch must be an integer from 1 to 1073741824, got 'S'"
 * in why. */
int rm_cli_parse_batch(long *out, const char *s, char *why, size_t len);
/* --device NAME (NULL: not given, the default backend) as a registry
 * lookup: 0, or -1 with "--device: unknown device 'x' (cpu or cuda)". */
int rm_cli_parse_device(rm_backend_kind *out, const char *name, char *why, size_t len);
/* --kernels NAME, parsed by the backend of device, its CPU alias
 * --cpu-kernels NAME (only with the cpu device) and --threads N (only with a
 * backend that has host threads); each may be NULL: not given. 0, or -1
 * with the reason in why. */
int rm_cli_parse_backend_options(rm_backend_options *out, const char *kernels, const char *cpu_kernels,
                                 const char *threads, rm_backend_kind device, char *why, size_t len);
/* The help lines of those options, for the commands that take them. */
#define RM_CLI_BACKEND_OPTIONS_HELP                                                                                    \
    "  --kernels K           the device's kernel library. cpu: reference or fast (default fast, or\n"                  \
    "                        REMAT_CPU_KERNELS); fast runs convolution, linear, attention and\n"                       \
    "                        the 2x2 transposed convolution as BLIS products, the depthwise\n"                         \
    "                        convolution as float loops (docs/cpu-kernels.md),\n"                                      \
    "                        reference is the double-accumulating test oracle.\n"                                      \
    "                        cuda: handwritten, cublas or cudnn (default cudnn when built with it,\n"                  \
    "                        else cublas; or REMAT_KERNELS). The option wins over the variable\n"                      \
    "  --cpu-kernels K       --kernels K for the cpu device (its older name; both given must agree)\n"                 \
    "  --threads N           CPU threads (default: every core, or REMAT_THREADS); results are\n"                       \
    "                        bit-identical run to run at a given N\n"
/* A finite number of seconds >= 0 ("60", "2.5"); 0 on success, -1 otherwise. */
int rm_cli_parse_seconds(double *out, const char *s);
/* The solver limits every solving command takes, --time-limit S and
 * --node-limit N (each NULL when not given: its *out keeps the caller's
 * default): 0, or -1 with why ("--node-limit must be ..."). */
int rm_cli_parse_solver_limits(double *seconds, long *nodes, const char *time_limit, const char *node_limit, char *why,
                               size_t len);
/* --milp-engine lp_solve|cbc|auto (NULL when not given: auto); 0, or -1
 * with why. The help line every solving command prints is
 * RM_CLI_MILP_ENGINE_HELP. */
int rm_cli_parse_milp_engine(rm_milp_engine *k, const char *s, char *why, size_t len);
#define RM_CLI_MILP_ENGINE_HELP(pad)                                                                                   \
    "  --milp-engine E" pad "who solves the MILP: lp_solve (alone, its LPs too), cbc (when built in) or auto\n"        \
    "                 " pad "(default: both at once on 2+ cores, first proof wins; lp_solve with --node-limit)\n"
/* Length of the plain decimal number at s (digits, an optional fraction and
 * exponent; no sign, space, hex, inf or nan); 0 when s does not start with one. */
size_t rm_cli_number_prefix(const char *s);

/* A memory budget as typed: bytes, or a percentage of a reference peak. */
typedef struct rm_cli_budget {
    int percent;  /* 1: pct of the reference (see rm_cli_budget_bytes); 0: bytes */
    double pct;   /* the percentage */
    size_t bytes; /* the amount, exact (no trip through a double: a problem file's budget may need 62 bits) */
} rm_cli_budget;

/* Numbers without a unit are bytes, and must be at least this many: a bare
 * 80 or 16 is far more likely a missing % or GiB than a budget of 80 bytes,
 * so smaller amounts need the unit written out (80B). */
#define RM_CLI_BARE_BYTES_MIN 1000000

/* Parses "6GiB", "512MiB", "1.5e9", "1500000000B", "16GB" or "80%".
 * Suffixes (case-insensitive): none or B (bytes), KiB MiB GiB TiB (powers of
 * 1024), KB MB GB TB (powers of 1000), % (of the reference). A bare K, M, G
 * or T is refused as ambiguous, and so is a number without a unit below
 * RM_CLI_BARE_BYTES_MIN. The number must be positive and the bytes at most
 * RM_PROBLEM_MAX_BYTES (2^62, 4 EiB: more than any problem holds); a whole
 * number of a unit is converted exactly. On failure returns -1 and writes
 * why into why[len]. */
int rm_cli_parse_budget(rm_cli_budget *out, const char *s, char *why, size_t len);

/* A budget of exactly bytes (a problem file's own), or of pct percent of the reference. */
rm_cli_budget rm_cli_budget_of(size_t bytes);
rm_cli_budget rm_cli_budget_percent(double pct);

/* The budget in bytes; a percentage is of reference, the no-remat peak
 * (rm_budget_percent_bytes: rounded down, at least 1, at most
 * RM_PROBLEM_MAX_BYTES). */
size_t rm_cli_budget_bytes(const rm_cli_budget *b, size_t reference);

/* A percentage budget b (b->percent) as printed: "80% of the no-remat
 * peak", or, where rm_cli_budget_bytes clamped it to budget bytes, the
 * percentage used and why ("3.9e+12% of the no-remat peak: 1e+15% of it is
 * more than 2^62 bytes, so capped at 2^62 bytes (4 EiB), the largest
 * budget"). Returns buf. */
const char *rm_cli_budget_pct(char *buf, size_t len, const rm_cli_budget *b, size_t budget, size_t reference);

/* ---- The model a command works on ---- */

/* --model FILE (a config) or --onnx FILE (an exported network) with its
 * --loss and --init: every command that takes a model takes these, through
 * RM_CLI_MODEL_OPTIONS and rm_cli_model_check, and loads it with
 * rm_cli_model_load, so an ONNX file works wherever a config does. */
typedef struct rm_cli_model {
    const char *model, *onnx, *loss, *init; /* as given (NULL: not given) */
    const char *path;                       /* whichever file was given; NULL when neither */
    rm_onnx_options onnx_opt;               /* the import's options, when onnx is given */
} rm_cli_model;
#define RM_CLI_MODEL_OPTIONS(a)                                                                                        \
    RM_CLI_VALUE("--model", &(a)->model), RM_CLI_VALUE("--onnx", &(a)->onnx), RM_CLI_VALUE("--loss", &(a)->loss),      \
        RM_CLI_VALUE("--init", &(a)->init)
/* The options' lines for a command's usage; P is the spaces that align
 * their descriptions with the command's other options (after "--onnx FILE "). */
#define RM_CLI_MODEL_USAGE(P)                                                                                          \
    "  --onnx FILE " P "an ONNX network instead of --model (exported from PyTorch; docs/onnx.md)\n"                    \
    "  --loss L    " P "the loss added to the ONNX network's output: softmax_xent (the default; N x K\n"               \
    "              " P "logits) or pixel_softmax_xent (N x K x H x W logits, segmentation)\n"                          \
    "  --init I    " P "the ONNX network's initial weights: onnx (the default: its initializers, to\n"                 \
    "              " P "fine-tune) or random (the layers' own initialisation)\n"

/* Checks the options after parsing: not both files, --loss and --init only
 * with --onnx, their values known. Sets a->path and a->onnx_opt. Prints the
 * usage error and returns 1, or returns 0. */
int rm_cli_model_check(rm_cli_model *a, const char *cmd, const char *usage);
/* Loads the model (height, width > 0: the input's size replaced). For an
 * ONNX file it writes what the import did: one line to stderr, or, with
 * report set, a summary and one line per node to report (`remat graph`
 * shows the mapping this way). Prints errors as "remat CMD: ..." and returns
 * the exit code (0, 1 bad input, 2 out of memory). */
int rm_cli_model_load(rm_model **out, const char *cmd, const rm_cli_model *a, int height, int width, FILE *report);

/* ---- The problem a scheduling command works on ---- */

typedef struct rm_cli_problem {
    rm_problem *p;
    char what[300];       /* "models/vgg16.cfg at batch 32" or the problem file's path */
    int flops;            /* the costs' unit: RM_CLI_COST_FLOPS (traced from a model), RM_CLI_COST_SECONDS
                             (a profiled cost file, --costs), else 0: the problem file's own unit */
    char cost_model[360]; /* in words: "FLOPs" or "profiled seconds from FILE (cpu, batch 8)" */
    size_t file_budget;   /* the budget a problem file gave (0: none) */
    int has_footprint;    /* traced from a model: fp holds the fixed bytes' parts */
    rm_footprint fp;
    rm_optim_options optim;    /* accounted for this optimizer (SGD with momentum, as `remat train`) */
    rm_problem_report facts;   /* the no-remat peak (what "80%" is a percentage of), the trivial lower
                                  bound and its node, the base cost: computed once (scheduler/report.h) */
    rm_budget_verdict verdict; /* the budget's, once rm_cli_problem_set_budget has set it */
} rm_cli_problem;

/* The "fixed" line every command prints for a model, to out: the
 * footprint's total and its parts (train/footprint.h), so graph, plan,
 * explain, maxbatch and train show the same numbers. o names the optimizer
 * state. */
void rm_cli_print_footprint(FILE *out, const rm_footprint *f, const rm_optim_options *o);

/* Traces the config model at batch (when model is set) or reads
 * problem_path, and measures the no-remat peak and the lower bound. Prints
 * any error as "remat CMD: ..." and returns the exit code (0, 1 bad input,
 * 2 internal). */
int rm_cli_problem_load(rm_cli_problem *out, const char *cmd, const char *model, long batch, const char *problem_path);
/* The same for the model of --model or --onnx (model NULL or without a
 * path: the problem file), with the node costs of a profiled cost file
 * (costs_path; NULL: FLOPs, or the problem file's costs): for a model it must be that model's
 * at this batch (rm_training_problem); for a problem file its node
 * names must match. */
int rm_cli_problem_load_costs(rm_cli_problem *out, const char *cmd, const rm_cli_model *model, long batch,
                              const char *problem_path, const char *costs_path);
void rm_cli_problem_free(rm_cli_problem *cp);

/* Sets cp->p->budget from b (a percentage is of the no-remat peak) and
 * cp->verdict. Where no schedule can exist it prints why (rm_budget_reason)
 * and returns 1. */
int rm_cli_problem_set_budget(rm_cli_problem *cp, const char *cmd, const rm_cli_budget *b);

/* The "problem / fixed / no-remat / lower bound / budget" lines. */
void rm_cli_problem_print(const rm_cli_problem *cp, const rm_cli_budget *b);

/* ---- A schedule with its own order, shown ---- */

/* What the tables, matrices and figures show, where stage t's own node is
 * node t: for a schedule with its own order (scheduler/schedule.h), the
 * problem renumbered in that order (own_p), the schedule over it (own_s)
 * and their report (own_rep, what as rm_schedule_report_of takes it); for
 * one without, p, s and rep themselves, nothing allocated. moved: how many
 * nodes the order puts elsewhere than the problem's. */
typedef struct rm_cli_shown {
    const rm_problem *p;
    const rm_schedule *s;
    const rm_schedule_report *rep;
    int moved;
    rm_problem *own_p;
    rm_schedule *own_s;
    rm_schedule_report own_rep;
} rm_cli_shown;
int rm_cli_shown_of(rm_cli_shown *sh, const rm_problem *p, const rm_schedule *s, const rm_schedule_report *rep,
                    unsigned what, rm_err *e);
void rm_cli_shown_free(rm_cli_shown *sh);

/* Units of rm_cli_cost (and rm_cli_problem.flops). */
#define RM_CLI_COST_FLOPS 1
#define RM_CLI_COST_SECONDS 2
/* FLOPs in the unit that reads best, three significant figures: "0 FLOPs",
 * "512 FLOPs", "12.3 KFLOPs", "1.00 MFLOPs", "265 GFLOPs" (TFLOPs above that).
 * Every FLOP count the CLI prints goes through here. */
const char *rm_cli_flops(char *buf, size_t len, double flops);
/* A cost: rm_cli_flops for RM_CLI_COST_FLOPS, "12.3 ms" for
 * RM_CLI_COST_SECONDS, else "%.6g". */
const char *rm_cli_cost(char *buf, size_t len, double cost, int flops);
/* Seconds as a time: "1.23 s", "45.6 ms", "789 us", "12 ns". */
const char *rm_cli_seconds(char *buf, size_t len, double s);

/* A progress sink for rm_strategy_options.log: prints lp_solve's lines to
 * stderr as "  [12.3 s] line", dropping blank ones. ctx: an rm_cli_progress. */
typedef struct rm_cli_progress {
    const char *prefix; /* "milp" */
    double t0;          /* rm_now() at the start */
} rm_cli_progress;
void rm_cli_progress_log(void *ctx, const char *line);

#endif
