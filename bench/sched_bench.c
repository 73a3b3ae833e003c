/* remat_bench_sched: the scheduler benchmark of issue 3.
 *
 * Table 1 (Checkmate-style): for traced built-in models at fixed batch sizes,
 * every strategy at budgets of 100, 90, ... 50% of the no-remat peak (total
 * memory, fixed bytes included, as `remat plan --budget P%` means it), down
 * to the first budget where nothing fits: overhead over checkpoint-all,
 * peak, solve time, and for LP rounding and the MILP the LP bound and gap.
 * Each budget is judged against the issue's goal: the MILP or the rounding
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
 * finished models behind. Progress goes to stderr. A benchmark, never a
 * test: it times things and the full run takes many minutes. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_util.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"

#ifndef REMAT_SOURCE_DIR
#define REMAT_SOURCE_DIR "."
#endif

/* The issue's goal, fixed whatever --time-limit is: a smaller limit is a way
 * to make the run shorter, not a different goal. */
#define GOAL_GAP 0.01
#define GOAL_SECONDS 60.0

#define USAGE                                                                                                      \
    "usage: remat_bench_sched [--models LIST] [--budgets LIST] [--strategies LIST] [--time-limit S]\n"             \
    "                         [--ogc-models LIST] [--models-dir DIR] [--out FILE] [--quick] [--verbose]\n"         \
    "\n"                                                                                                           \
    "The scheduler benchmark: markdown tables on stdout (and in --out FILE), progress on stderr.\n"                \
    "\n"                                                                                                           \
    "options:\n"                                                                                                   \
    "  --models LIST      table 1: name:batch,... (default vgg16:32,vgg19:32,resnet50:32,unet:8); a name is\n"     \
    "                     DIR/NAME.cfg, a name with '/' or '.cfg' is a config path; 'none' skips table 1\n"        \
    "  --budgets LIST     percentages of the no-remat peak, fixed bytes included (default 100,90,80,70,60,50);\n"  \
    "                     run from the largest down, stopping below the lower bound or where nothing fits\n"      \
    "  --strategies LIST  strategy names (default: all of them, as `remat plan --strategy all`)\n"                 \
    "  --time-limit S     wall-clock seconds for each lp_round / milp solve (default 60; 0 = none)\n"              \
    "  --ogc-models LIST  table 2: name:batch,... (default vgg16:64,resnet18:256,resnet50:64,resnet101:32);\n"     \
    "                     'none' skips table 2\n"                                                                  \
    "  --models-dir DIR   where model names are looked up (default: the source tree's models/)\n"                  \
    "  --out FILE         also write the markdown to FILE (e.g. docs/bench/scheduler.md)\n"                        \
    "  --quick            smoke run: vgg16:32 at 100,80% with the baselines only, table 2 for vgg16:64\n"          \
    "  --verbose          lp_solve's log on stderr\n"

/* ---- output: stdout and, optionally, a file ---- */

static FILE *g_out_file;

static void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void emit(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (g_out_file) {
        va_start(ap, fmt);
        vfprintf(g_out_file, fmt, ap);
        va_end(ap);
    }
}

/* After each section, so a killed run keeps what it finished. */
static void emit_flush(void)
{
    fflush(stdout);
    if (g_out_file) fflush(g_out_file);
}

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

typedef struct model_spec {
    char name[64];    /* as shown in the tables: "vgg16" */
    char path[4096];  /* the config */
    long batch;
} model_spec;

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

/* ---- the machine and the command, for the document's header ---- */

static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(buf, len, "%s", colon);
        break;
    }
    fclose(f);
}

/* The machine is shared with other jobs; the load says how much the times
 * below can be trusted. */
static void load_average(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    double a, b, c;
    if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
    fclose(f);
}

static void command_line(char *buf, size_t len, int argc, char **argv)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < argc && o < len; i++) {
        /* Quote what a shell would split or expand. */
        int plain = argv[i][0] != '\0' && strspn(argv[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                          "0123456789-_./:,=%+@") == strlen(argv[i]);
        o += (size_t)snprintf(buf + o, len - o, plain ? "%s%s" : "%s'%s'", i ? " " : "", argv[i]);
    }
}

static void utc_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm);
}

/* ---- table 1 ---- */

typedef struct cell {
    int ran;
    int rc;            /* RM_OK, RM_ERR_INFEASIBLE or another error */
    const char *status; /* rm_strategy_stats.status (static strings) */
    double seconds, cost;
    size_t peak_total; /* fixed + activation peak */
    int has_bound, bound_trivial; /* see rm_strategy_stats */
    double lp_bound, gap;
} cell;

typedef struct budget_row {
    double percent;
    size_t bytes;
    int below_lb;    /* not run: below fixed + the trivial lower bound */
    int none_fit;    /* run, and no strategy found a schedule */
    cell *cells;     /* one per strategy */
} budget_row;

typedef struct bench_cfg {
    double *budgets;
    int nbudgets;
    const rm_strategy_info **strats;
    int nstrats;
    double time_limit_s;
    int verbose;
} bench_cfg;

static double overhead_pct(double cost, double base) { return base > 0 ? 100.0 * (cost / base - 1) : 0.0; }

static int find_strategy(const bench_cfg *c, const char *name)
{
    for (int k = 0; k < c->nstrats; k++)
        if (!strcmp(c->strats[k]->name, name)) return k;
    return -1;
}

static void run_budget(budget_row *row, const bench_cfg *c, const model_spec *m, rm_cli_problem *cp)
{
    char b[32];
    rm_problem *p = cp->p;
    row->none_fit = 1;
    for (int k = 0; k < c->nstrats; k++) {
        const rm_strategy_info *st = c->strats[k];
        cell *x = &row->cells[k];
        rm_strategy_options o;
        memset(&o, 0, sizeof o);
        o.time_limit_s = c->time_limit_s;
        rm_cli_progress pr = {st->name, rm_cli_now()};
        if (c->verbose) {
            o.log = rm_cli_progress_log;
            o.log_ctx = &pr;
        }
        fprintf(stderr, "bench: %s b%ld, budget %g%% (%s): %s", m->name, m->batch, row->percent,
                rm_cli_bytes(b, sizeof b, (double)row->bytes), st->name);
        if (st->solve_opt && c->time_limit_s > 0) fprintf(stderr, " (time limit %g s)", c->time_limit_s);
        fprintf(stderr, " ...\n");
        rm_schedule *s = NULL;
        rm_strategy_stats stats;
        rm_err e = {RM_OK, ""};
        int rc = rm_strategy_run(&s, &stats, st, p, &o, &e);
        rm_schedule_free(s);
        x->ran = 1;
        x->rc = rc;
        x->status = rm_status_name(stats.status);
        x->seconds = stats.seconds;
        x->has_bound = stats.has_bound;
        x->bound_trivial = stats.bound_trivial;
        x->lp_bound = stats.lp_bound;
        x->gap = stats.gap;
        if (rc == RM_OK) {
            x->cost = stats.sim.cost;
            x->peak_total = p->fixed_bytes + stats.sim.peak_bytes;
            row->none_fit = 0;
            fprintf(stderr, "bench:   %s %+.2f%% in %.2f s", x->status, overhead_pct(x->cost, cp->base_cost),
                    x->seconds);
            if (x->has_bound) fprintf(stderr, ", gap %.2f%%", 100.0 * x->gap);
            fprintf(stderr, "\n");
        } else if (rc == RM_ERR_INFEASIBLE) {
            fprintf(stderr, "bench:   %s after %.2f s\n", x->status, x->seconds);
        } else {
            fprintf(stderr, "bench:   %s failed: %s\n", st->name, e.msg);
        }
    }
}

/* The issue's goal at one budget, and when it is missed, the reason the
 * numbers show. */
typedef struct goal {
    int applicable; /* lp_round or milp ran */
    int met;
    char verdict[64];
    char reason[400];
} goal;

static int found(const cell *x) { return x && x->ran && x->rc == RM_OK; }
static int solver_ok(const cell *x) { return found(x) && x->has_bound; }

static void judge_goal(goal *g, const bench_cfg *c, const budget_row *row, const rm_cli_problem *cp)
{
    memset(g, 0, sizeof *g);
    int km = find_strategy(c, "milp"), kr = find_strategy(c, "lp_round");
    const cell *milp = km >= 0 ? &row->cells[km] : NULL, *lpr = kr >= 0 ? &row->cells[kr] : NULL;
    if (!milp && !lpr) {
        snprintf(g->verdict, sizeof g->verdict, "n/a");
        snprintf(g->reason, sizeof g->reason, "neither milp nor lp_round was run");
        return;
    }
    g->applicable = 1;
    /* The cheapest baseline: the yardstick for a large gap. */
    int kb = -1;
    for (int k = 0; k < c->nstrats; k++) {
        if (c->strats[k]->solve_opt || row->cells[k].rc != RM_OK) continue;
        if (kb < 0 || row->cells[k].cost < row->cells[kb].cost) kb = k;
    }
    int milp_opt = solver_ok(milp) && !strcmp(milp->status, "optimal");
    int milp_in = solver_ok(milp) && (milp_opt || milp->gap <= GOAL_GAP) && milp->seconds <= GOAL_SECONDS;
    int lpr_in = solver_ok(lpr) && lpr->gap <= GOAL_GAP && lpr->seconds <= GOAL_SECONDS;
    if (milp_in || lpr_in) {
        g->met = 1;
        if (milp_in && milp_opt)
            snprintf(g->verdict, sizeof g->verdict, "yes (optimal)");
        else
        {
            const cell *w = milp_in && (!lpr_in || milp->gap <= lpr->gap) ? milp : lpr;
            snprintf(g->verdict, sizeof g->verdict, "yes (gap %.2f%%%s)", 100.0 * w->gap,
                     w->bound_trivial ? " to the trivial bound" : "");
        }
        return;
    }
    snprintf(g->verdict, sizeof g->verdict, "no");
    size_t o = 0;
    size_t len = sizeof g->reason;
#define ADD(...)                                                                         \
    do {                                                                                 \
        if (o < len) o += (size_t)snprintf(g->reason + o, len - o, __VA_ARGS__);         \
    } while (0)
    int milp_found = found(milp), lpr_found = found(lpr);
    if (!milp_found && !lpr_found) {
        ADD("no solver schedule");
        if (milp && milp->ran) ADD(": milp %s after %.1f s", milp->status, milp->seconds);
        if (lpr && lpr->ran) ADD("%s lp_round %s after %.1f s", milp && milp->ran ? "," : ":", lpr->status,
                                 lpr->seconds);
        if (kb >= 0)
            ADD("; best baseline %s %+.2f%%", c->strats[kb]->name, overhead_pct(row->cells[kb].cost, cp->base_cost));
        return;
    }
    /* The better of the two solver answers; one with a bound first, since
     * only a bound can meet the goal. */
    const cell *best = NULL;
    if (solver_ok(milp) || solver_ok(lpr))
        best = solver_ok(milp) && (!solver_ok(lpr) || milp->cost <= lpr->cost) ? milp : lpr;
    else
        best = milp_found && (!lpr_found || milp->cost <= lpr->cost) ? milp : lpr;
    const char *best_name = best == milp ? "milp" : "lp_round";
    double best_ov = overhead_pct(best->cost, cp->base_cost);
    if (best->bound_trivial) {
        /* The LP relaxation did not finish, or the solve was coarsened: only
         * the trivial bound (every node once) measures the answer. */
        ADD("no LP bound (the relaxation did not finish, or the solve was coarsened); %s %+.2f%% after %.1f s, "
            "gap %.2f%% to the trivial bound",
            best_name, best_ov, best->seconds, 100.0 * best->gap);
    } else {
        double bound_ov = overhead_pct(best->lp_bound, cp->base_cost);
        ADD("best gap %.2f%% (%s %+.2f%% vs LP bound %+.2f%%)", 100.0 * best->gap, best_name, best_ov, bound_ov);
        if (solver_ok(milp) && strcmp(milp->status, "optimal") && c->time_limit_s > 0 &&
            milp->seconds >= 0.95 * c->time_limit_s)
            ADD("; milp stopped at the %g s time limit", c->time_limit_s);
        /* The LP relaxation of this model lets a fraction of each value be
         * kept, so its bound can sit near checkpoint-all's cost when every
         * integer schedule must recompute a lot: then the gap may measure
         * the bound rather than the schedule. */
        if (best_ov > 0 && bound_ov < 0.25 * best_ov)
            ADD("; the LP bound is near zero overhead, likely weak");
    }
    /* A solve stopped by a 60 s limit ends a few hundredths past it; say so
     * only when it overran by more than that (building the model counts). */
    if (best->seconds > GOAL_SECONDS + 1) ADD("; %s took %.1f s > %g s", best_name, best->seconds, GOAL_SECONDS);
    if (kb >= 0) {
        double base_ov = overhead_pct(row->cells[kb].cost, cp->base_cost);
        if (best->cost < row->cells[kb].cost * (1 - 1e-9))
            ADD("; %.2f points cheaper than the best baseline (%s %+.2f%%)", base_ov - best_ov, c->strats[kb]->name,
                base_ov);
        else if (best->cost <= row->cells[kb].cost * (1 + 1e-9))
            ADD("; equal to the best baseline (%s)", c->strats[kb]->name);
        else
            ADD("; worse than the best baseline (%s %+.2f%%)", c->strats[kb]->name, base_ov);
    }
#undef ADD
}

/* A cell of the overhead matrix. */
static const char *overhead_cell(char *buf, size_t len, const cell *x, double base)
{
    if (!x->ran)
        snprintf(buf, len, " ");
    else if (x->rc == RM_OK)
        snprintf(buf, len, "%+.2f%%", overhead_pct(x->cost, base));
    else if (x->rc == RM_ERR_INFEASIBLE)
        snprintf(buf, len, "%s", !strcmp(x->status, "no solution") ? "no sol." : "—");
    else
        snprintf(buf, len, "error");
    return buf;
}

typedef struct goal_line {
    char model[64];
    long batch;
    double percent;
    size_t bytes;
    goal g;
    char lp_bound[32], best_base[64], lpr[64], milp[80];
} goal_line;

static void print_model(const bench_cfg *c, const model_spec *m, const rm_cli_problem *cp, const budget_row *rows,
                        int nrows, goal_line *goals, int *ngoals)
{
    const rm_problem *p = cp->p;
    char x[32], y[32], z[32], w[32], v[32];
    int nf = 0, nb = 0;
    for (int i = 0; i < p->n; i++) nf += p->nodes[i].tag == RM_TAG_FORWARD, nb += p->nodes[i].tag == RM_TAG_BACKWARD;
    emit("\n### %s, batch %ld\n\n", m->name, m->batch);
    emit("%d nodes (%d forward, 1 loss, %d backward); checkpoint-all costs %s. No-remat peak %s = fixed %s + "
         "activations %s. Lower bound %s (%.1f%% of the no-remat peak): '%s' with its inputs.\n",
         p->n, nf, nb, rm_cli_cost(x, sizeof x, cp->base_cost, cp->flops),
         rm_cli_bytes(y, sizeof y, (double)cp->noremat_total), rm_cli_bytes(z, sizeof z, (double)p->fixed_bytes),
         rm_cli_bytes(w, sizeof w, (double)cp->noremat.peak_bytes),
         rm_cli_bytes(v, sizeof v, (double)(p->fixed_bytes + cp->lower_bound)),
         100.0 * (double)(p->fixed_bytes + cp->lower_bound) / (double)cp->noremat_total, p->nodes[cp->lb_node].name);

    /* The overview: overhead by strategy and budget, as Checkmate plots it. */
    int nrun = 0;
    for (int r = 0; r < nrows; r++) nrun += !rows[r].below_lb;
    emit("\nOverhead over checkpoint-all (— : no schedule within the budget; no sol.: the MILP hit its limit "
         "first):\n\n| strategy |");
    for (int r = 0; r < nrows; r++)
        if (!rows[r].below_lb) emit(" %g%% (%s) |", rows[r].percent, rm_cli_bytes(x, sizeof x, (double)rows[r].bytes));
    emit("\n|---|");
    for (int r = 0; r < nrun; r++) emit("---:|");
    emit("\n");
    for (int k = 0; k < c->nstrats; k++) {
        emit("| %s |", c->strats[k]->name);
        for (int r = 0; r < nrows; r++)
            if (!rows[r].below_lb) emit(" %s |", overhead_cell(x, sizeof x, &rows[r].cells[k], cp->base_cost));
        emit("\n");
    }
    for (int r = 0; r < nrows; r++)
        if (rows[r].below_lb)
            emit("\n%g%% (%s) and below: below lower bound (%s), no schedule exists.\n", rows[r].percent,
                 rm_cli_bytes(x, sizeof x, (double)rows[r].bytes),
                 rm_cli_bytes(y, sizeof y, (double)(p->fixed_bytes + cp->lower_bound)));

    /* The detail: every run. */
    emit("\n| budget | strategy | status | overhead | peak | time | LP bound | gap |\n"
         "|---|---|---|---:|---:|---:|---:|---:|\n");
    for (int r = 0; r < nrows; r++) {
        if (rows[r].below_lb) continue;
        for (int k = 0; k < c->nstrats; k++) {
            const cell *q = &rows[r].cells[k];
            char ov[32], pk[32] = "—", lb[32] = "", gap[32] = "";
            overhead_cell(ov, sizeof ov, q, cp->base_cost);
            if (q->rc == RM_OK) rm_cli_bytes(pk, sizeof pk, (double)q->peak_total);
            if (q->has_bound) {
                if (q->bound_trivial) snprintf(lb, sizeof lb, "trivial");
                else snprintf(lb, sizeof lb, "%+.2f%%", overhead_pct(q->lp_bound, cp->base_cost));
                if (q->rc == RM_OK) snprintf(gap, sizeof gap, "%.2f%%", 100.0 * q->gap);
            }
            emit("| %g%% | %s | %s | %s | %s | %.2f s | %s | %s |\n", rows[r].percent, c->strats[k]->name,
                 q->rc == RM_OK || q->rc == RM_ERR_INFEASIBLE ? q->status : "error", ov, pk, q->seconds, lb, gap);
        }
    }

    /* The goal, one line per budget that was run. */
    int km = find_strategy(c, "milp"), kr = find_strategy(c, "lp_round");
    for (int r = 0; r < nrows; r++) {
        if (rows[r].below_lb) continue;
        goal_line *gl = &goals[(*ngoals)++];
        memset(gl, 0, sizeof *gl);
        snprintf(gl->model, sizeof gl->model, "%s", m->name);
        gl->batch = m->batch;
        gl->percent = rows[r].percent;
        gl->bytes = rows[r].bytes;
        judge_goal(&gl->g, c, &rows[r], cp);
        int kb = -1;
        for (int k = 0; k < c->nstrats; k++)
            if (!c->strats[k]->solve_opt && rows[r].cells[k].rc == RM_OK &&
                (kb < 0 || rows[r].cells[k].cost < rows[r].cells[kb].cost))
                kb = k;
        snprintf(gl->best_base, sizeof gl->best_base, "—");
        if (kb >= 0)
            snprintf(gl->best_base, sizeof gl->best_base, "%s %+.2f%%", c->strats[kb]->name,
                     overhead_pct(rows[r].cells[kb].cost, cp->base_cost));
        snprintf(gl->lp_bound, sizeof gl->lp_bound, "—");
        const cell *bc = km >= 0 && rows[r].cells[km].has_bound && !rows[r].cells[km].bound_trivial
                             ? &rows[r].cells[km]
                         : kr >= 0 && rows[r].cells[kr].has_bound && !rows[r].cells[kr].bound_trivial
                             ? &rows[r].cells[kr]
                             : NULL;
        if (bc) snprintf(gl->lp_bound, sizeof gl->lp_bound, "%+.2f%%", overhead_pct(bc->lp_bound, cp->base_cost));
        snprintf(gl->lpr, sizeof gl->lpr, "—");
        if (kr >= 0) {
            const cell *q = &rows[r].cells[kr];
            if (q->rc == RM_OK)
                snprintf(gl->lpr, sizeof gl->lpr, "%+.2f%%, gap %.2f%%%s, %.1f s", overhead_pct(q->cost, cp->base_cost),
                         100.0 * q->gap, q->bound_trivial ? "*" : "", q->seconds);
            else
                snprintf(gl->lpr, sizeof gl->lpr, "%s, %.1f s", q->status, q->seconds);
        }
        snprintf(gl->milp, sizeof gl->milp, "—");
        if (km >= 0) {
            const cell *q = &rows[r].cells[km];
            if (q->rc == RM_OK)
                snprintf(gl->milp, sizeof gl->milp, "%s %+.2f%%, gap %.2f%%%s, %.1f s", q->status,
                         overhead_pct(q->cost, cp->base_cost), 100.0 * q->gap, q->bound_trivial ? "*" : "",
                         q->seconds);
            else
                snprintf(gl->milp, sizeof gl->milp, "%s, %.1f s", q->status, q->seconds);
        }
    }
}

static void print_goal_table(const goal_line *goals, int n)
{
    emit("\n### Against the goal\n\n"
         "Goal (issue 3): at every feasible budget, the MILP or the LP rounding within %g%% of the LP lower bound, "
         "or proved optimal, in under %g s. A large gap over a weak LP bound is not necessarily a bad schedule: "
         "compare with the best baseline. A gap marked * is to the trivial bound (every node computed once), "
         "used where the LP relaxation did not finish or the solve was coarsened: the LP bound is never below "
         "it, so such a gap is at least the gap to the LP bound.\n\n",
         100.0 * GOAL_GAP, GOAL_SECONDS);
    emit("| model | budget | LP bound | best baseline | lp_round | milp | goal met | why not |\n"
         "|---|---|---:|---|---|---|---|---|\n");
    int met = 0, applicable = 0;
    for (int i = 0; i < n; i++) {
        const goal_line *g = &goals[i];
        char b[32];
        emit("| %s b%ld | %g%% (%s) | %s | %s | %s | %s | %s | %s |\n", g->model, g->batch, g->percent,
             rm_cli_bytes(b, sizeof b, (double)g->bytes), g->lp_bound, g->best_base, g->lpr, g->milp, g->g.verdict,
             g->g.met ? "" : g->g.reason);
        applicable += g->g.applicable;
        met += g->g.met;
    }
    emit("\nGoal met at %d of %d budgets where a schedule can exist.\n", met, applicable);
}

static int run_table1(const bench_cfg *c, const model_spec *models, int nmodels)
{
    emit("\n## Table 1: strategies by budget (Checkmate-style)\n\n"
         "Budget: TOTAL device memory (fixed bytes included) as a percentage of the no-remat peak, as `remat plan "
         "--budget P%%` means it. Overhead: extra compute over checkpoint-all (every node once), in FLOPs of the "
         "cost model. Peak: fixed + activation peak, from the exact simulator. Time: wall clock of the whole "
         "strategy call (each lp_round / milp solve limited to %g s%s). LP bound: the LP relaxation's optimum as an "
         "overhead, a proved floor on any schedule ('trivial' where the LP did not finish or the solve was coarsened: "
         "every node once). Gap: (cost - bound) / cost, or 0 when proved optimal.\n",
         c->time_limit_s, c->time_limit_s > 0 ? "" : ": no limit");
    emit_flush();
    goal_line *goals = calloc((size_t)(nmodels * c->nbudgets + 1), sizeof *goals);
    if (!goals) {
        fprintf(stderr, "remat_bench_sched: out of memory\n");
        return 2;
    }
    int ngoals = 0, status = 0;
    for (int i = 0; i < nmodels; i++) {
        const model_spec *m = &models[i];
        fprintf(stderr, "bench: tracing %s at batch %ld ...\n", m->path, m->batch);
        rm_cli_problem cp;
        int rc = rm_cli_problem_load(&cp, "bench", m->path, m->batch, NULL);
        if (rc) {
            emit("\n### %s, batch %ld\n\nfailed to load %s (see stderr).\n", m->name, m->batch, m->path);
            status = rc;
            continue;
        }
        budget_row *rows = calloc((size_t)c->nbudgets, sizeof *rows);
        cell *cells = calloc((size_t)(c->nbudgets * c->nstrats), sizeof *cells);
        if (!rows || !cells) {
            free(rows);
            free(cells);
            rm_cli_problem_free(&cp);
            fprintf(stderr, "remat_bench_sched: out of memory\n");
            free(goals);
            return 2;
        }
        int nrows = 0;
        for (int r = 0; r < c->nbudgets; r++) {
            budget_row *row = &rows[nrows++];
            row->percent = c->budgets[r];
            row->cells = cells + r * c->nstrats;
            rm_cli_budget b = {1, c->budgets[r]};
            row->bytes = rm_cli_budget_bytes(&b, cp.noremat_total);
            /* rm_cli_problem_set_budget explains on stderr why nothing fits. */
            if (rm_cli_problem_set_budget(&cp, "bench", &b)) {
                row->below_lb = 1;
                break;
            }
            run_budget(row, c, m, &cp);
            if (row->none_fit) {
                fprintf(stderr, "bench: %s: no strategy fits %g%%; lower budgets are not tried\n", m->name,
                        row->percent);
                break;
            }
        }
        print_model(c, m, &cp, rows, nrows, goals, &ngoals);
        emit_flush();
        free(cells);
        free(rows);
        rm_cli_problem_free(&cp);
    }
    print_goal_table(goals, ngoals);
    emit_flush();
    free(goals);
    return status;
}

/* ---- table 2 ---- */

/* Feng & Huang's reported figures, as issue 3 quotes them (memory cut and
 * measured time overhead); NULL where we do not know theirs. */
typedef struct fh_figure {
    const char *model;
    long batch;
    const char *memory_cut, *time_overhead;
} fh_figure;

static const fh_figure fh_figures[] = {
    {"vgg16", 64, NULL, NULL},
    {"resnet18", 256, NULL, NULL},
    {"resnet50", 64, "-63%", "+31%"},
    {"resnet101", 32, "-74%", "+35%"},
};

static const fh_figure *fh_find(const char *model, long batch)
{
    for (size_t i = 0; i < sizeof fh_figures / sizeof fh_figures[0]; i++)
        if (!strcmp(fh_figures[i].model, model) && fh_figures[i].batch == batch) return &fh_figures[i];
    return NULL;
}

static int run_table2(const model_spec *models, int nmodels)
{
    emit("\n## Table 2: optimal gradient checkpointing (Feng & Huang, CVPR 2021 form)\n\n"
         "Activation memory: peak minus fixed bytes, from the exact simulator, with no budget. Regular: "
         "checkpoint-all (every value kept until its last use). ogc: Feng & Huang's checkpoint set (the one that "
         "minimizes the activation peak). Our overhead is extra FLOPs of the cost model; theirs is measured "
         "training time, so theirs includes what FLOPs do not count (memory-bound layers, allocator, kernel "
         "launches). Their figures are as quoted in issue 3; n/a where we do not know them. Inputs 224x224.\n\n");
    emit("| model | batch | regular activations | ogc activations | memory cut | overhead (FLOPs) | ogc solve | "
         "F&H memory cut | F&H time overhead |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    emit_flush();
    const rm_strategy_info *all = rm_strategy_find("checkpoint_all"), *ogc = rm_strategy_find("ogc");
    int status = 0;
    for (int i = 0; i < nmodels; i++) {
        const model_spec *m = &models[i];
        fprintf(stderr, "bench: table 2: %s at batch %ld: checkpoint_all, ogc ...\n", m->name, m->batch);
        rm_cli_problem cp;
        int rc = rm_cli_problem_load(&cp, "bench", m->path, m->batch, NULL);
        if (rc) {
            emit("| %s | %ld | failed to load (see stderr) | | | | | | |\n", m->name, m->batch);
            status = rc;
            continue;
        }
        cp.p->budget = 0; /* unlimited: we want each strategy's own peak */
        rm_schedule *s = NULL;
        rm_strategy_stats sa, so;
        rm_err e = {RM_OK, ""};
        int ra = rm_strategy_run(&s, &sa, all, cp.p, NULL, &e);
        rm_schedule_free(s);
        s = NULL;
        int ro = ra ? ra : rm_strategy_run(&s, &so, ogc, cp.p, NULL, &e);
        rm_schedule_free(s);
        if (ra || ro) {
            fprintf(stderr, "remat_bench_sched: %s: %s\n", m->name, e.msg);
            emit("| %s | %ld | error (see stderr) | | | | | | |\n", m->name, m->batch);
            status = 2;
            rm_cli_problem_free(&cp);
            continue;
        }
        const fh_figure *fh = fh_find(m->name, m->batch);
        char a[32], b[32];
        emit("| %s | %ld | %s | %s | %+.1f%% | %+.2f%% | %.2f s | %s | %s |\n", m->name, m->batch,
             rm_cli_bytes(a, sizeof a, (double)sa.sim.peak_bytes), rm_cli_bytes(b, sizeof b, (double)so.sim.peak_bytes),
             -100.0 * (1.0 - (double)so.sim.peak_bytes / (double)sa.sim.peak_bytes),
             overhead_pct(so.sim.cost, cp.base_cost), so.seconds, fh && fh->memory_cut ? fh->memory_cut : "n/a",
             fh && fh->time_overhead ? fh->time_overhead : "n/a");
        emit_flush();
        rm_cli_problem_free(&cp);
    }
    return status;
}

/* ---- main ---- */

int main(int argc, char **argv)
{
    const char *models_s = NULL, *budgets_s = NULL, *strategies_s = NULL, *time_s = NULL, *ogc_s = NULL,
               *dir = REMAT_SOURCE_DIR "/models", *out = NULL;
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
    if (out && !(g_out_file = fopen(out, "w"))) {
        perror(out);
        rc = 1;
        goto done;
    }

    char cmd[4096], cpu[256], date[64], load[64];
    command_line(cmd, sizeof cmd, argc, argv);
    cpu_model(cpu, sizeof cpu);
    utc_now(date, sizeof date);
    load_average(load, sizeof load);
    double t0 = rm_cli_now();
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
    load_average(load, sizeof load);
    emit("\nTotal wall clock %.0f s; load average at the end: %s.\n", rm_cli_now() - t0, load);
    emit_flush();
    rc = status;
done:
    if (g_out_file && fclose(g_out_file)) {
        perror(out);
        if (!rc) rc = 2;
    }
    free(models);
    free(ogc_models);
    free(c.budgets);
    free(c.strats);
    return rc;
}
