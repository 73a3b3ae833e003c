/* `remat lesson`: writes one self-contained HTML page that teaches
 * rematerialization on a graph. remat solves the problem at K budgets, from
 * the no-remat peak (checkpoint-all's) down to the trivial lower bound, with
 * several strategies, and embeds every answer as JSON in the page (the
 * template cli/lesson.html, compiled in by cli/embed.cmake): its script draws
 * the graph, and for the budget a slider picks and the strategy a selector
 * picks, the R/S grids, the memory timelines of every strategy on one set of
 * axes, the overhead curves with the LP bound, and explain's text
 * (cli/explain.c, the same words `remat explain` prints). No network: no
 * external script, font or image. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "cli_util.h"
#include "commands.h"
#include "explain.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"
#include "table.h"

#define LESSON_USAGE                                                                                                   \
    "usage: remat lesson (--model FILE --batch N | --problem FILE) --out FILE.html [--budgets K]\n"                    \
    "                    [--strategies LIST] [--costs FILE] [--time-limit S] [--node-limit N] [--quiet]\n"             \
    "                    (--onnx FILE [--loss L] [--init I] in place of --model FILE)\n"                               \
    "\n"                                                                                                               \
    "Writes one self-contained HTML page (no network: inline CSS and script, the data embedded as JSON)\n"             \
    "that teaches rematerialization on the graph. remat solves the problem at K budgets, evenly spaced\n"              \
    "from the no-remat peak (checkpoint-all's) down to the lower bound no schedule can beat, with each\n"              \
    "strategy; the page shows the training graph, and for the budget its slider picks and the strategy\n"              \
    "its selector picks: the R and S grids (as `remat plan --svg` draws them), the memory after every\n"               \
    "operation of every strategy on the same axes with the budget, the compute overhead of each strategy\n"            \
    "against the budget with the LP bound shaded, and `remat explain`'s text. A strategy that finds no\n"              \
    "schedule at a budget is shown as such. Graphs above 400 nodes get no R and S grids (the page says so).\n"         \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --model FILE        model config (models/*.cfg), traced at --batch N (1 to 2^30)\n"                             \
    RM_CLI_MODEL_USAGE("        ")                                                                                 \
    "  --problem FILE      a problem file instead (docs/problem-format.md); its budget is not used\n"                  \
    "  --out FILE          the page to write (written whole or not at all)\n"                                          \
    "  --budgets K         how many budgets, 2 to 200 (default 20)\n"                                                  \
    "  --strategies LIST   comma-separated, as `remat plan --strategy` names them, or all (default:\n"                 \
    "                      checkpoint_all,chen_sqrtn,chen_greedy,griewank,ogc,lp_round,milp)\n"                        \
    "  --costs FILE        node costs in profiled seconds (`remat profile`, docs/cost-format.md)\n"                    \
    "  --time-limit S      wall-clock seconds for each solve, whatever the strategy (default 10; 0 = none)\n"          \
    "  --node-limit N      branch-and-bound nodes for each milp solve (deterministic; default none)\n"                 \
    "  --quiet             no progress on stderr (otherwise one line per budget)\n"                                    \
    "\n"                                                                                                               \
    "examples:\n"                                                                                                      \
    "  remat lesson --problem docs/examples/two-layer.txt --out two-layer.html\n"                                      \
    "  remat lesson --model models/resnet-tiny.cfg --batch 4 --node-limit 10 --out resnet-tiny.html"

#define usage_error(...) rm_cli_usage_error("lesson", LESSON_USAGE, __VA_ARGS__)

#define LESSON_DEFAULT_STRATEGIES "checkpoint_all,chen_sqrtn,chen_greedy,griewank,ogc,lp_round,milp"
#define LESSON_MAX_BUDGETS 200
#define LESSON_MAX_STRATEGIES 16
/* Above this many nodes the page leaves out R and S: a schedule's grids
 * grow with n^2 cells to draw, and the data with its recomputations. */
#define LESSON_RS_MAX_NODES 400
/* The most points of one memory timeline in the page; a longer operation
 * sequence is merged into this many buckets, each keeping its highest point
 * (so the peak is never lost). */
#define LESSON_TIMELINE_MAX 2000
/* Where the data goes in cli/lesson.html. */
#define LESSON_DATA_MARKER "@LESSON_DATA@"

/* cli/lesson.html, NUL-terminated (generated by cli/embed.cmake). */
extern const unsigned char rm_lesson_page[];

typedef struct lesson_args {
    rm_cli_model mdl;
    const char *model, *batch, *problem, *out, *budgets, *strategies, *costs, *time_limit, *node_limit;
    int quiet;
    long batch_n, budgets_n, node_limit_n;
    double time_limit_s;
    const rm_strategy_info *st[LESSON_MAX_STRATEGIES];
    int nst;
} lesson_args;

/* ---- JSON pieces ---- */

static void json_key(FILE *f, const char *key, int first)
{
    if (!first) fputc(',', f);
    rm_table_json_string(f, key);
    fputc(':', f);
}

static void json_num(FILE *f, const char *key, double v)
{
    json_key(f, key, 0);
    rm_table_json_number(f, v);
}

static void json_str(FILE *f, const char *key, const char *s)
{
    json_key(f, key, 0);
    rm_table_json_string(f, s);
}

/* What fn writes to a stream, captured in memory (open_memstream): *buf,
 * malloc'ed, NUL-terminated, *len bytes. A stream that cannot be opened or
 * grown is out of memory. */
typedef int (*text_fn)(FILE *m, const void *ctx, rm_err *e);

static int capture(char **buf, size_t *len, text_fn fn, const void *ctx, rm_err *e)
{
    *buf = NULL;
    *len = 0;
    FILE *m = open_memstream(buf, len);
    if (!m) return rm_errorf(e, RM_ERR_NOMEM, "out of memory writing the page");
    int rc = fn(m, ctx, e);
    if (fclose(m) && !rc) rc = rm_errorf(e, RM_ERR_NOMEM, "out of memory writing the page");
    if (rc) {
        free(*buf);
        *buf = NULL;
    }
    return rc;
}

/* fn's text (explain's) as a JSON string under key. */
static int json_text(FILE *f, const char *key, text_fn fn, const void *ctx, rm_err *e)
{
    char *buf;
    size_t len;
    int rc = capture(&buf, &len, fn, ctx, e);
    if (!rc) json_str(f, key, buf);
    free(buf);
    return rc;
}

/* ---- explain's text ---- */

typedef struct run_text {
    const rm_cli_problem *cp;
    const rm_schedule *s;
    const rm_schedule_report *r;
    const rm_strategy_info *st;
    const rm_strategy_stats *stats;
} run_text;

static int budget_text(FILE *m, const void *ctx, rm_err *e)
{
    const rm_cli_problem *cp = ctx;
    rm_cli_budget b = rm_cli_budget_of(cp->p->budget);
    (void)e;
    rm_explain_write_budget(m, cp, &b);
    return RM_OK;
}

static int schedule_text(FILE *m, const void *ctx, rm_err *e)
{
    const run_text *r = ctx;
    (void)e;
    rm_explain_write_schedule(m, r->cp, r->s, r->r, r->st, r->stats);
    return RM_OK;
}

/* ---- the problem ---- */

static const char *tag_letter(rm_node_tag t)
{
    return t == RM_TAG_BACKWARD ? "B" : t == RM_TAG_LOSS ? "L" : "F";
}

static void write_problem(FILE *f, const rm_cli_problem *cp, const lesson_args *a, size_t lo)
{
    const rm_problem *p = cp->p;
    const char *base = strrchr(cp->what, '/');
    fputc('{', f);
    json_key(f, "what", 1);
    rm_table_json_string(f, cp->what);
    json_str(f, "title", base ? base + 1 : cp->what);
    json_str(f, "costs", cp->cost_model);
    json_num(f, "unit", cp->flops);
    json_num(f, "n", p->n);
    json_num(f, "fixed", (double)p->fixed_bytes);
    json_num(f, "noremat", (double)cp->facts.noremat_total);
    json_num(f, "noremat_node", cp->facts.noremat.peak_node);
    json_num(f, "lower", (double)lo);
    json_num(f, "lower_node", cp->facts.lb_node);
    json_num(f, "base_cost", cp->facts.base_cost);
    json_num(f, "time_limit", a->time_limit_s);
    json_num(f, "node_limit", (double)a->node_limit_n);
    json_num(f, "rs_max_nodes", LESSON_RS_MAX_NODES);
    json_key(f, "rs", 0);
    fputs(p->n <= LESSON_RS_MAX_NODES ? "true" : "false", f);
    /* Nodes as [name, tag, cost, bytes, [deps]]: compact, in topological order. */
    json_key(f, "nodes", 0);
    fputc('[', f);
    for (int i = 0; i < p->n; i++) {
        const rm_problem_node *nd = &p->nodes[i];
        fputs(i ? ",\n[" : "\n[", f);
        rm_table_json_string(f, nd->name);
        fprintf(f, ",\"%s\",", tag_letter(nd->tag));
        rm_table_json_number(f, nd->cost);
        fprintf(f, ",%zu,[", nd->bytes);
        for (int d = 0; d < nd->ndeps; d++) fprintf(f, d ? ",%d" : "%d", nd->deps[d]);
        fputs("]]", f);
    }
    fputc(']', f);
    json_key(f, "strategies", 0);
    fputc('[', f);
    for (int k = 0; k < a->nst; k++) {
        fputs(k ? ",[" : "[", f);
        rm_table_json_string(f, a->st[k]->name);
        fputc(',', f);
        rm_table_json_string(f, a->st[k]->title);
        fputc(']', f);
    }
    fputc(']', f);
}

/* ---- one schedule ---- */

/* "re": R's recomputations as flat (stage, node) pairs (the diagonal is
 * implied); "S": the retention runs as flat (node, from, to) triples. */
static void write_rs(FILE *f, const rm_schedule *s)
{
    json_key(f, "re", 0);
    fputc('[', f);
    int first = 1;
    for (int t = 0; t < s->n; t++)
        for (int k = s->r_start[t]; k < s->r_start[t + 1]; k++) {
            if (s->r_node[k] == t) continue;
            fprintf(f, first ? "%d,%d" : ",%d,%d", t, s->r_node[k]);
            first = 0;
        }
    fputc(']', f);
    json_key(f, "S", 0);
    fputc('[', f);
    for (int k = 0; k < s->nret; k++)
        fprintf(f, k ? ",%d,%d,%d" : "%d,%d,%d", s->ret[k].node, s->ret[k].from, s->ret[k].to);
    fputc(']', f);
}

/* "recomputed": the nodes computed more than once, as flat (node, times
 * computed) pairs; the graph marks them, also where R is left out. */
static int write_recomputed(FILE *f, const rm_schedule *s, rm_err *e)
{
    int *counts = malloc((size_t)s->n * sizeof *counts);
    if (!counts) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    rm_schedule_compute_counts(s, counts);
    json_key(f, "recomputed", 0);
    fputc('[', f);
    int first = 1;
    for (int i = 0; i < s->n; i++)
        if (counts[i] > 1) {
            fprintf(f, first ? "%d,%d" : ",%d,%d", i, counts[i]);
            first = 0;
        }
    fputc(']', f);
    free(counts);
    return RM_OK;
}

/* "mem": the activation bytes after each operation (the report's timeline)
 * as flat (stage, bytes) pairs, at most LESSON_TIMELINE_MAX of them (see
 * there); "mem_merged": 1 when operations were merged. */
static void write_timeline(FILE *f, const rm_schedule_report *r)
{
    int nops = r->nops, m = nops < LESSON_TIMELINE_MAX ? nops : LESSON_TIMELINE_MAX;
    json_key(f, "mem", 0);
    fputc('[', f);
    for (int j = 0; j < m; j++) {
        int lo = (int)((long long)j * nops / m), hi = (int)((long long)(j + 1) * nops / m), top = lo;
        for (int k = lo + 1; k < hi; k++)
            if (r->mem[k] > r->mem[top]) top = k;
        fprintf(f, j ? ",%d,%zu" : "%d,%zu", r->ops[top].stage, r->mem[top]);
    }
    fputc(']', f);
    json_num(f, "mem_merged", m < nops);
    json_num(f, "nops", nops);
}

/* One strategy's answer at one budget. rc: rm_strategy_run's, RM_OK (s is
 * the schedule) or RM_ERR_INFEASIBLE (why says what was found instead). */
static int write_run(FILE *f, const rm_cli_problem *cp, const rm_strategy_info *st, int rc,
                     const rm_strategy_stats *stats, const rm_schedule *s, const char *why, rm_err *e)
{
    int ok = rc == RM_OK;
    fputc('{', f);
    json_key(f, "status", 1);
    rm_table_json_string(f, rm_status_name(stats->status));
    json_key(f, "ok", 0);
    fputs(ok ? "true" : "false", f);
    json_num(f, "seconds", stats->seconds);
    if (stats->has_bound) {
        json_num(f, "bound", stats->lp_bound);
        json_str(f, "bound_kind", stats->bound_trivial ? "trivial" : "lp");
    }
    if (stats->source) json_str(f, "source", stats->source);
    if (!ok) {
        json_str(f, "why", why);
        fputc('}', f);
        return RM_OK;
    }
    json_num(f, "cost", stats->sim.cost);
    json_num(f, "peak", (double)stats->sim.peak_bytes);
    json_num(f, "peak_stage", stats->sim.peak_stage);
    json_num(f, "recomputations", (double)stats->sim.recomputations);
    /* One replay for the timeline and explain's text. */
    rm_schedule_report rep;
    int err = rm_schedule_report_of(&rep, cp->p, s, NULL, 0, e);
    if (err) return err;
    json_num(f, "recomputed_nodes", rep.recomputed_nodes);
    if (stats->has_bound) json_num(f, "gap", stats->gap);
    if (cp->p->n <= LESSON_RS_MAX_NODES) write_rs(f, s);
    err = write_recomputed(f, s, e);
    if (!err) write_timeline(f, &rep);
    run_text rt = {cp, s, &rep, st, stats};
    if (!err) err = json_text(f, "explain", schedule_text, &rt, e);
    fputc('}', f);
    rm_schedule_report_free(&rep);
    return err;
}

/* ---- the budgets ---- */

/* Budget k of n, evenly spaced from hi (k = 0) down to lo (k = n - 1). */
static size_t budget_at(size_t hi, size_t lo, int k, int n)
{
    if (k >= n - 1) return lo;
    return hi - (size_t)floor((double)(hi - lo) * k / (n - 1));
}

/* Solves budget k with every strategy and writes its JSON object; one line
 * of progress on stderr unless quiet. */
static int write_budget(FILE *f, rm_cli_problem *cp, const lesson_args *a, int k, size_t bytes, rm_err *e)
{
    rm_problem *p = cp->p;
    p->budget = bytes;
    char line[2048], x[32];
    size_t ll =
        (size_t)snprintf(line, sizeof line, "remat lesson: budget %d/%ld: %s (%.1f%% of the no-remat peak):", k + 1,
                         a->budgets_n, rm_cli_bytes(x, sizeof x, (double)bytes),
                         cp->facts.noremat_total ? 100.0 * (double)bytes / (double)cp->facts.noremat_total : 100.0);
    double t0 = rm_cli_now();
    fputs(k ? ",\n{" : "\n{", f);
    json_key(f, "bytes", 1);
    rm_table_json_number(f, (double)bytes);
    int rc = json_text(f, "explain", budget_text, cp, e);
    json_key(f, "runs", 0);
    fputc('[', f);
    for (int j = 0; !rc && j < a->nst; j++) {
        const rm_strategy_info *st = a->st[j];
        rm_strategy_options o;
        memset(&o, 0, sizeof o);
        o.time_limit_s = a->time_limit_s;
        o.node_limit = a->node_limit_n;
        rm_schedule *s = NULL;
        rm_strategy_stats stats;
        rm_err why = {RM_OK, ""};
        int run = rm_strategy_run(&s, &stats, st, p, &o, &why);
        if (run && run != RM_ERR_INFEASIBLE) {
            /* Not "no schedule" but a failure (out of memory, a bug): the page would be wrong. */
            rc = rm_errorf(e, run, "%s at %s: %s", st->name, x, why.msg);
            break;
        }
        if (j) fputc(',', f);
        rc = write_run(f, cp, st, run, &stats, s, why.msg, e);
        if (ll < sizeof line) {
            const char *sep = j ? ", " : " ";
            if (run)
                ll += (size_t)snprintf(line + ll, sizeof line - ll, "%s%s -", sep, st->name);
            else
                ll += (size_t)snprintf(line + ll, sizeof line - ll, "%s%s %+.2f%%", sep, st->name,
                                       rm_overhead_pct(stats.sim.cost, cp->facts.base_cost));
        }
        rm_schedule_free(s);
    }
    fputs("]}", f);
    if (!rc && !a->quiet) rm_text_fprintf(stderr, "%s (%.1f s)\n", line, rm_cli_now() - t0);
    return rc;
}

/* ---- the page ---- */

typedef struct page_ctx {
    rm_cli_problem *cp;
    const lesson_args *a;
    const char *template, *mark; /* cli/lesson.html, and its data marker */
    size_t hi, lo;               /* the budgets' range: the no-remat peak, the lower bound */
    int k;                       /* the budget page_budget writes */
} page_ctx;

/* The template up to the data marker, then the problem. */
static int page_head(FILE *m, const void *ctx, rm_err *e)
{
    const page_ctx *x = ctx;
    (void)e;
    fwrite(x->template, 1, (size_t)(x->mark - x->template), m);
    write_problem(m, x->cp, x->a, x->lo);
    json_key(m, "budgets", 0);
    fputc('[', m);
    return RM_OK;
}

static int page_budget(FILE *m, const void *ctx, rm_err *e)
{
    const page_ctx *x = ctx;
    return write_budget(m, x->cp, x->a, x->k, budget_at(x->hi, x->lo, x->k, (int)x->a->budgets_n), e);
}

/* The data's end and the rest of the template. */
static int page_tail(FILE *m, const void *ctx, rm_err *e)
{
    const page_ctx *x = ctx;
    (void)e;
    fputs("]}\n", m);
    fputs(x->mark + strlen(LESSON_DATA_MARKER), m);
    return RM_OK;
}

/* One piece of the page, made in memory, then written and flushed at once:
 * a full disk is found after the piece that met it, with its cause (at the
 * commit, the errno of an earlier failed write is gone), and stops the
 * solves instead of running them all for nothing. */
static int page_piece(rm_atomic_file *af, text_fn fn, const page_ctx *x, rm_err *e)
{
    char *buf;
    size_t len;
    int rc = capture(&buf, &len, fn, x, e);
    if (rc) return rc;
    errno = 0;
    if (fwrite(buf, 1, len, af->f) != len || fflush(af->f))
        rc = rm_errorf(e, RM_ERR_IO, "%s: cannot write: %s", af->path, errno ? strerror(errno) : "write error");
    free(buf);
    return rc;
}

static int write_page(rm_atomic_file *af, rm_cli_problem *cp, const lesson_args *a, rm_err *e)
{
    page_ctx x = {cp, a, (const char *)rm_lesson_page, NULL, cp->facts.noremat_total,
                  cp->p->fixed_bytes + cp->facts.lower_bound, 0};
    x.mark = strstr(x.template, LESSON_DATA_MARKER);
    if (!x.mark) return rm_errorf(e, RM_ERR_INVALID, "the page template has no %s", LESSON_DATA_MARKER);
    int rc = page_piece(af, page_head, &x, e);
    for (x.k = 0; !rc && x.k < a->budgets_n; x.k++) rc = page_piece(af, page_budget, &x, e);
    if (!rc) rc = page_piece(af, page_tail, &x, e);
    return rc;
}

static int lesson_parse(lesson_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->budgets_n = 20;
    a->time_limit_s = 10;
    const rm_cli_opt opts[] = {
        RM_CLI_FLAG("--quiet", "-q", &a->quiet),
        RM_CLI_MODEL_OPTIONS(&a->mdl),
        RM_CLI_VALUE("--batch", &a->batch),
        RM_CLI_VALUE("--problem", &a->problem),
        RM_CLI_VALUE("--out", &a->out),
        RM_CLI_VALUE("--budgets", &a->budgets),
        RM_CLI_VALUE("--strategies", &a->strategies),
        RM_CLI_VALUE("--costs", &a->costs),
        RM_CLI_VALUE("--time-limit", &a->time_limit),
        RM_CLI_VALUE("--node-limit", &a->node_limit),
    };
    if (rm_cli_parse_options(opts, sizeof opts / sizeof opts[0], argc, argv, "lesson", LESSON_USAGE) ||
        rm_cli_model_check(&a->mdl, "lesson", LESSON_USAGE))
        return 1;
    a->model = a->mdl.path;
    if (a->model && a->problem) return usage_error("give --model or --problem, not both");
    if (!a->model && !a->problem) return usage_error("--model FILE --batch N or --problem FILE is required");
    if (a->model && !a->batch) return usage_error("--batch N is required with --model");
    if (a->problem && a->batch) return usage_error("--batch goes with --model, not --problem");
    if (!a->out) return usage_error("--out FILE.html is required");
    char why[256];
    if (a->batch && rm_cli_parse_batch(&a->batch_n, a->batch, why, sizeof why)) return usage_error("%s", why);
    if (a->budgets && rm_cli_parse_long(&a->budgets_n, a->budgets, 2, LESSON_MAX_BUDGETS))
        return usage_error("--budgets must be a whole number from 2 to %d, got '%s'", LESSON_MAX_BUDGETS, a->budgets);
    if (rm_cli_parse_solver_limits(&a->time_limit_s, &a->node_limit_n, a->time_limit, a->node_limit, why, sizeof why))
        return usage_error("%s", why);
    if (rm_cli_add_strategies(a->st, &a->nst, LESSON_MAX_STRATEGIES,
                              a->strategies ? a->strategies : LESSON_DEFAULT_STRATEGIES, why, sizeof why))
        return usage_error("%s", why);
    return 0;
}

static int lesson_run(int argc, char **argv)
{
    lesson_args a;
    int rc = lesson_parse(&a, argc, argv);
    if (rc) return rc;
    rm_err e = {RM_OK, ""};
    /* The page is written only after every solve: one that cannot be written fails now. */
    if (rm_atomic_probe(a.out, &e)) {
        rm_text_fprintf(stderr, "remat lesson: %s\n", e.msg);
        return 1;
    }
    rm_cli_problem cp;
    if ((rc = rm_cli_problem_load_costs(&cp, "lesson", &a.mdl, a.batch_n, a.problem, a.costs))) return rc;
    char x[32], y[32];
    if (!a.quiet)
        rm_text_fprintf(stderr,
                "remat lesson: %s: %d nodes, %ld budgets from %s (the no-remat peak) down to %s (the lower "
                "bound), %d strategies\n",
                cp.what, cp.p->n, a.budgets_n, rm_cli_bytes(x, sizeof x, (double)cp.facts.noremat_total),
                rm_cli_bytes(y, sizeof y, (double)(cp.p->fixed_bytes + cp.facts.lower_bound)), a.nst);
    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, a.out, &e)) == RM_OK) {
        if ((rc = write_page(&af, &cp, &a, &e)))
            rm_atomic_abort(&af);
        else
            rc = rm_atomic_commit(&af, &e);
    }
    if (rc) {
        rm_text_fprintf(stderr, "remat lesson: %s\n", e.msg);
        rm_cli_problem_free(&cp);
        return rc == RM_ERR_IO ? 1 : 2; /* a file that cannot be written, else a failure of remat's */
    }
    printf("lesson       %s: %s, %ld budgets x %d strategies%s\n", a.out, cp.what, a.budgets_n, a.nst,
           cp.p->n <= LESSON_RS_MAX_NODES ? "" : " (no R and S grids: more than 400 nodes)");
    rm_cli_problem_free(&cp);
    return 0;
}

const rm_command rm_cmd_lesson = {
    .name = "lesson",
    .summary = "write an interactive HTML lesson: schedules, memory and overhead of each strategy at many budgets",
    .usage = LESSON_USAGE,
    .run = lesson_run,
};
