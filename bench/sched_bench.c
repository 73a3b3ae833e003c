/* remat_bench_sched: the scheduler benchmark of issue 3.
 *
 * Table 1 (Checkmate-style): for traced built-in models at fixed batch sizes,
 * every strategy at budgets of 100, 90, ... 50% of the no-remat peak (total
 * memory, fixed bytes included, as `remat plan --budget P%` means it), down
 * to the first budget where nothing fits: overhead over checkpoint-all,
 * peak, solve time, and for LP rounding and the MILP the LP bound and gap.
 * Each budget is judged against the goal: the MILP or the rounding
 * within 1% of the LP lower bound (or proved optimal) in under 60 s.
 *
 * Table 2 (Feng & Huang, CVPR 2021): activation memory (peak minus fixed) of
 * regular training (checkpoint-all) against the ogc schedule, at the batch
 * sizes of their paper, with the figures they report beside ours.
 *
 * It builds problems and runs strategies with the same library calls as
 * `remat plan --strategy all` (cli_util, strategy.h), so what it measures is
 * what the CLI does. Markdown goes to stdout and, with --out, to a file
 * written section by section, so a run stopped early still leaves its
 * finished models behind. --format csv|json gives table 1's detail rows
 * alone, through the table writer (cli/table.h). Progress goes to stderr. A benchmark, never a
 * test: it times things and the full run takes many minutes.
 *
 * This file: the options, the model/budget/strategy lists, the document's
 * header and main; the tables are in sched_bench_table1.c,
 * sched_bench_report.c and sched_bench_table2.c (see sched_bench.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_host.h"
#include "cli_util.h"
#include "clock.h"
#include "sched_bench.h"
#include "strategy.h"

#ifndef REMAT_SOURCE_DIR
#define REMAT_SOURCE_DIR "."
#endif

#define USAGE                                                                                                          \
    "usage: remat_bench_sched [--models LIST] [--budgets LIST] [--strategies LIST] [--time-limit S]\n"                 \
    "                         [--ogc-models LIST] [--models-dir DIR] [--out FILE] [--format md|csv|json]\n"            \
    "                         [--quick] [--verbose]\n"                                                                 \
    "\n"                                                                                                               \
    "The scheduler benchmark: markdown tables on stdout (and in --out FILE), progress on stderr.\n"                    \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --models LIST      table 1: name:batch,... (default vgg16:32,vgg19:32,resnet50:32,unet:8); a name is\n"         \
    "                     DIR/NAME.cfg, a name with '/' or '.cfg' is a config path; 'none' skips table 1\n"            \
    "  --budgets LIST     percentages of the no-remat peak, fixed bytes included (default 100,90,80,70,60,50);\n"      \
    "                     run from the largest down, stopping below the lower bound or where nothing fits\n"           \
    "  --strategies LIST  strategy names (default: all of them, as `remat plan --strategy all`)\n"                     \
    "  --time-limit S     wall-clock seconds for each lp_round / milp solve (default 60; 0 = none)\n"                  \
    "  --ogc-models LIST  table 2: name:batch,... (default vgg16:64,resnet18:256,resnet50:64,resnet101:32);\n"         \
    "                     'none' skips table 2\n"                                                                      \
    "  --models-dir DIR   where model names are looked up (default: the source tree's models/)\n"                      \
    "  --out FILE         also write the output to FILE (e.g. docs/bench/scheduler.md)\n"                              \
    "  --format F         md (the default): the markdown document; csv or json: only table 1's detail, one\n"          \
    "                     row per model, budget and strategy (model, batch, budget_pct, budget_bytes, strategy,\n"     \
    "                     status, overhead_pct, cost, peak_bytes, seconds, lp_bound_pct, bound, gap_pct; numbers\n"    \
    "                     as numbers, missing ones empty / null); table 2 is then not run\n"                           \
    "  --quick            smoke run: vgg16:32 at 100,80% with the baselines only, table 2 for vgg16:64\n"              \
    "  --verbose          lp_solve's log on stderr\n"

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "remat_bench_sched: ");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n%s", USAGE);
    return 1;
}

/* ---- lists ---- */

/* "vgg16:32,unet:8" into specs; 'none' is the empty list. */
static int parse_models(model_spec **out, int *count, const char *list, const char *dir, const char *opt)
{
    *out = NULL;
    *count = 0;
    if (!strcmp(list, "none")) return 0;
    char *copy = strdup(list);
    if (!copy) return usage_error("out of memory");
    int cap = 1;
    for (const char *c = list; *c; c++) cap += *c == ',';
    model_spec *m = calloc((size_t)cap, sizeof *m);
    if (!m) {
        free(copy);
        return usage_error("out of memory");
    }
    int n = 0, rc = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strrchr(tok, ':');
        if (!colon || colon == tok || rm_cli_parse_long(&m[n].batch, colon + 1, 1, 1000000000L)) {
            rc = usage_error("%s: '%s' is not name:batch (e.g. vgg16:32)", opt, tok);
            break;
        }
        *colon = '\0';
        int is_path = strchr(tok, '/') || strstr(tok, ".cfg");
        if (is_path)
            snprintf(m[n].path, sizeof m[n].path, "%s", tok);
        else
            snprintf(m[n].path, sizeof m[n].path, "%s/%s.cfg", dir, tok);
        /* The table names the model, not where it lives. */
        const char *base = strrchr(tok, '/');
        snprintf(m[n].name, sizeof m[n].name, "%s", base ? base + 1 : tok);
        char *dot = strstr(m[n].name, ".cfg");
        if (dot) *dot = '\0';
        n++;
    }
    free(copy);
    if (!rc && n == 0) rc = usage_error("%s: empty list", opt);
    if (rc) {
        free(m);
        return rc;
    }
    *out = m;
    *count = n;
    return 0;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

typedef struct budget_list {
    double *v;
    int n;
} budget_list;

static int add_budget(void *ctx, const char *tok)
{
    budget_list *l = ctx;
    char *end;
    double x = strtod(tok, &end);
    if (*end == '%') end++;
    if (end == tok || *end || !isfinite(x) || x <= 0 || x > 1000)
        return usage_error("--budgets: '%s' is not a percentage in (0, 1000]", tok);
    l->v[l->n++] = x;
    return 0;
}

/* "100,90,80%" into percentages, largest first: the run walks down and
 * stops at the first budget where nothing can fit. */
static int parse_budgets(double **out, int *count, const char *list)
{
    int cap = 1;
    for (const char *c = list; *c; c++) cap += *c == ',';
    budget_list l = {calloc((size_t)cap, sizeof(double)), 0};
    if (!l.v) return usage_error("out of memory");
    int rc = rm_cli_each_item(list, add_budget, &l);
    if (rc || l.n == 0) {
        free(l.v);
        return rc == 1 ? 1 : usage_error("--budgets: %s", rc ? "the list is too long" : "empty list");
    }
    qsort(l.v, (size_t)l.n, sizeof *l.v, cmp_desc);
    *out = l.v;
    *count = l.n;
    return 0;
}

static int parse_strategies(const rm_strategy_info ***out, int *count, const char *list)
{
    int cap;
    rm_strategy_list_all(&cap);
    const rm_strategy_info **v = calloc((size_t)cap, sizeof *v);
    if (!v) return usage_error("out of memory");
    int n = 0;
    char why[160];
    if (rm_cli_add_strategies(v, &n, cap, list, why, sizeof why)) {
        free(v);
        return usage_error("%s", why);
    }
    *out = v;
    *count = n;
    return 0;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    const char *models_s = NULL, *budgets_s = NULL, *strategies_s = NULL, *time_s = NULL, *ogc_s = NULL,
               *dir = REMAT_SOURCE_DIR "/models", *out = NULL, *format_s = NULL;
    int quick = 0, verbose = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        const char **slot = NULL, *opt = NULL;
        if (!strcmp(argv[i], "--quick")) {
            quick = 1;
            continue;
        }
        if (!strcmp(argv[i], "--verbose")) {
            verbose = 1;
            continue;
        }
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            printf("%s", USAGE);
            return 0;
        }
        if (rm_cli_option(&v, argc, argv, &i, "--models"))
            slot = &models_s, opt = "--models";
        else if (rm_cli_option(&v, argc, argv, &i, "--budgets"))
            slot = &budgets_s, opt = "--budgets";
        else if (rm_cli_option(&v, argc, argv, &i, "--strategies"))
            slot = &strategies_s, opt = "--strategies";
        else if (rm_cli_option(&v, argc, argv, &i, "--time-limit"))
            slot = &time_s, opt = "--time-limit";
        else if (rm_cli_option(&v, argc, argv, &i, "--ogc-models"))
            slot = &ogc_s, opt = "--ogc-models";
        else if (rm_cli_option(&v, argc, argv, &i, "--models-dir"))
            slot = &dir, opt = "--models-dir";
        else if (rm_cli_option(&v, argc, argv, &i, "--out"))
            slot = &out, opt = "--out";
        else if (rm_cli_option(&v, argc, argv, &i, "--format"))
            slot = &format_s, opt = "--format";
        else
            return usage_error("unknown argument '%s'", argv[i]);
        if (!v || !*v) return usage_error("%s needs a value", opt);
        *slot = v;
    }
    /* --quick only changes defaults: explicit options still win. */
    if (!models_s) models_s = quick ? "vgg16:32" : "vgg16:32,vgg19:32,resnet50:32,unet:8";
    if (!budgets_s) budgets_s = quick ? "100,80" : "100,90,80,70,60,50";
    if (!ogc_s) ogc_s = quick ? "vgg16:64" : "vgg16:64,resnet18:256,resnet50:64,resnet101:32";

    bench_cfg c;
    memset(&c, 0, sizeof c);
    c.time_limit_s = 60;
    c.verbose = verbose;
    c.fmt = RM_TABLE_MD;
    if (format_s && bench_format_parse(&c.fmt, format_s))
        return usage_error("--format must be md, csv or json, got '%s'", format_s);
    if (time_s && rm_cli_parse_seconds(&c.time_limit_s, time_s))
        return usage_error("--time-limit must be a number of seconds >= 0, got '%s'", time_s);
    model_spec *models = NULL, *ogc_models = NULL;
    int nmodels = 0, nogc = 0, rc;
    if ((rc = parse_models(&models, &nmodels, models_s, dir, "--models"))) return rc;
    if ((rc = parse_models(&ogc_models, &nogc, ogc_s, dir, "--ogc-models"))) goto done;
    if ((rc = parse_budgets(&c.budgets, &c.nbudgets, budgets_s))) goto done;
    if (strategies_s) {
        if ((rc = parse_strategies(&c.strats, &c.nstrats, strategies_s))) goto done;
    } else {
        /* Quick: the baselines, which answer in milliseconds. */
        int n;
        const rm_strategy_info *list = quick ? rm_strategy_list(&n) : rm_strategy_list_all(&n);
        c.strats = calloc((size_t)n, sizeof *c.strats);
        if (!c.strats) {
            rc = usage_error("out of memory");
            goto done;
        }
        for (int k = 0; k < n; k++) c.strats[k] = &list[k];
        c.nstrats = n;
    }
    /* csv / json: table 1's detail only; the prose and table 2 are markdown's. */
    if (c.fmt != RM_TABLE_MD) {
        emit_mute(1);
        nogc = 0;
    }
    if (out && emit_open(out)) {
        rc = 1;
        goto done;
    }

    char cmd[4096], cpu[256], date[64], load[64];
    bench_command_line(cmd, sizeof cmd, argc, argv);
    bench_cpu_model(cpu, sizeof cpu);
    bench_utc_now(date, sizeof date);
    bench_load_average(load, sizeof load);
    double t0 = rm_now();
    emit("# Scheduler benchmark\n\n"
         "Produced by:\n\n```sh\n%s\n```\n\n"
         "- date: %s\n- machine: %ld CPUs (nproc), %s\n- load average at the start: %s (the machine is shared; "
         "times are wall clock)\n- MILP / LP rounding time limit: %g s per solve%s\n",
         cmd, date, sysconf(_SC_NPROCESSORS_ONLN), cpu, load, c.time_limit_s, c.time_limit_s > 0 ? "" : " (none)");
    emit_flush();
    int status = 0;
    if (nmodels) status = run_table1(&c, models, nmodels);
    if (nogc) {
        int s2 = run_table2(ogc_models, nogc);
        if (!status) status = s2;
    }
    bench_load_average(load, sizeof load);
    emit("\nTotal wall clock %.0f s; load average at the end: %s.\n", rm_now() - t0, load);
    emit_flush();
    rc = status;
done:
    if (emit_close() && !rc) rc = 2;
    free(models);
    free(ogc_models);
    free(c.budgets);
    free(c.strats);
    return rc;
}
