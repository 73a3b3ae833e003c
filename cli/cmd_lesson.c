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
#include "clock.h"
#include "commands.h"
#include "deadline.h"
#include "explain.h"
#include "lp_model.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"
#include "table.h"

#define LESSON_USAGE                                                                                                   \
    "usage: remat lesson (--model FILE --batch N | --problem FILE) --out FILE.html [--budgets K]\n"                    \
    "                    [--strategies LIST] [--costs FILE] [--time-limit S] [--node-limit N] [--exhaustive]\n"        \
    "                    [--milp-engine E] [--quiet]\n"                                                                \
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
    "By default the budgets share their work, so that ResNet-tiny's page takes under a minute: the heuristics\n"       \
    "and LP rounding run from the highest budget down; the MILP runs from the lowest up, started from the\n"           \
    "cheapest schedule found so far that fits (one that fits a budget fits every larger one), and is not run\n"        \
    "where an LP bound (at this budget or a larger one) already proves that schedule optimal, nor, like LP\n"          \
    "rounding, below a budget where every strategy found nothing. The page says which answers were proved\n"           \
    "optimal, where a schedule was found, and which solves did not run. --exhaustive runs every strategy at\n"         \
    "every budget with the full limit (slow: minutes).\n"                                                              \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --model FILE        model config (models/*.cfg), traced at --batch N (1 to 2^30)\n" RM_CLI_MODEL_USAGE(         \
        "        ") "  --problem FILE      a problem file instead (docs/problem-format.md); its budget is not used\n"  \
                    "  --out FILE          the page to write (written whole or not at all)\n"                          \
                    "  --budgets K         how many budgets, 2 to 200 (default 20)\n"                                  \
                    "  --strategies LIST   comma-separated, as `remat plan --strategy` names them, or all (default:\n" \
                    "                      checkpoint_all,chen_sqrtn,chen_greedy,griewank,ogc,dtr,lp_round,milp;\n"    \
                    "                      on a DAG without backward nodes those that need one are left out)\n"        \
                    "  --costs FILE        node costs in profiled seconds (`remat profile`, docs/cost-format.md)\n"    \
                    "  --time-limit S      wall-clock seconds for each solve, whatever the strategy (default 3, the "  \
                    "MILP's\n"                                                                                         \
                    "                      solves sharing what is left of 45 s for the page; with --exhaustive 10; 0 " \
                    "= none)\n"                                                                                        \
                    "  --node-limit N      branch-and-bound nodes for each milp solve (deterministic; default "        \
                    "none)\n" RM_CLI_MILP_ENGINE_HELP(                                                                 \
                        "     ") "  --exhaustive        every strategy at every budget, each solve with its full "     \
                                 "limit, nothing "                                                                     \
                                 "reused\n"                                                                            \
                                 "  --quiet             no progress on stderr (otherwise a line per budget and "       \
                                 "pass)\n"                                                                             \
                                 "\n"                                                                                  \
                                 "examples:\n"                                                                         \
                                 "  remat lesson --problem docs/examples/two-layer.txt --out two-layer.html\n"         \
                                 "  remat lesson --model models/resnet-tiny.cfg --batch 4 --node-limit 10 --out "      \
                                 "resnet-tiny.html"

#define usage_error(...) rm_cli_usage_error("lesson", LESSON_USAGE, __VA_ARGS__)

#define LESSON_DEFAULT_STRATEGIES "checkpoint_all,chen_sqrtn,chen_greedy,griewank,ogc,dtr,lp_round,milp"
#define LESSON_MAX_BUDGETS 200
/* Seconds for each solve: by default the budgets share their work (see
 * solve_all) and ResNet-tiny at batch 8 takes under a minute on two shared
 * cores; --exhaustive gives every solve what the lesson always gave it. */
#define LESSON_TIME_LIMIT 3
/* By default the MILP's solves share what is left of this many seconds
 * (warm_limit). */
#define LESSON_PAGE_SECONDS 45
#define LESSON_EXHAUSTIVE_TIME_LIMIT 10
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
    const char *model, *batch, *problem, *out, *budgets, *strategies, *costs, *time_limit, *node_limit, *milp_engine;
    int quiet, exhaustive;
    long batch_n, budgets_n, node_limit_n;
    rm_milp_engine engine;
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
    const char *note; /* said first: where a reused schedule comes from */
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
    if (r->note[0]) fprintf(m, "\n%s\n", r->note);
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
    json_key(f, "exhaustive", 0);
    fputs(a->exhaustive ? "true" : "false", f);
    /* warm_limit's share, where it applies */
    json_num(f, "page_seconds", a->exhaustive || a->time_limit ? 0 : LESSON_PAGE_SECONDS);
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

static int warm_started(const rm_strategy_info *st);

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
 * the schedule) or RM_ERR_INFEASIBLE (why says what was found instead).
 * skip: the solver was not run (lesson_ans.skip says the cases); source:
 * whose schedule it is, found at budget from (0: here). */
static int write_run(FILE *f, const rm_cli_problem *cp, const rm_strategy_info *st, int rc,
                     const rm_strategy_stats *stats, const rm_schedule *s, const char *why, const char *skip,
                     const char *source, size_t from, rm_err *e)
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
    if (source && source[0]) json_str(f, "source", source);
    if (from) json_num(f, "found_at", (double)from);
    if (skip) json_str(f, "not_run", skip);
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
    char note[400] = "", at[64] = "";
    if (from) {
        char b[32];
        snprintf(at, sizeof at, " at the budget %s", rm_cli_bytes(b, sizeof b, (double)from));
    }
    if (skip && !strcmp(skip, "bound"))
        snprintf(note, sizeof note,
                 "%s was not run at this budget: the LP bound (%+.2f%%) already proves this schedule, found by %s%s, "
                 "optimal.",
                 st->name, rm_overhead_pct(stats->lp_bound, cp->facts.base_cost), source, at);
    else if (skip)
        snprintf(note, sizeof note,
                 "%s was not run at this budget: LP rounding's LP relaxation did not finish here within the time "
                 "limit, and the MILP starts by solving it. This is the incumbent it would have started from, found "
                 "by %s%s, not searched.",
                 st->name, source, at);
    else if (warm_started(st) && source && strcmp(source, st->name) && from)
        snprintf(note, sizeof note, "%s found nothing cheaper than its incumbent, found by %s%s.", st->name, source,
                 at);
    /* Explain's text names whose schedule it is (rm_explain_write_schedule), as `remat explain` does: the
     * strategy the lesson knows found it, not "the caller's incumbent"; where the note above says more (a
     * solve not run, or a schedule found at another budget), the note says it alone. */
    rm_strategy_stats shown = *stats;
    shown.source = note[0] || !source || !source[0] ? st->name : source;
    run_text rt = {cp, s, &rep, st, &shown, note};
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

/* One strategy's answer at one budget, kept until the page is written: the
 * budgets are solved out of the page's order (see solve_all). */
typedef struct lesson_ans {
    int ran; /* solved, or answered without a solve (skip says why) */
    int rc;  /* RM_OK (s is the schedule) or RM_ERR_INFEASIBLE (why says what was found) */
    rm_strategy_stats stats;
    rm_schedule *s;
    char why[RM_ERR_MSG_LEN];
    const char *skip;  /* the solver was not run here: "bound" (the bound proves the reused schedule
                          optimal), "lp" (LP rounding's relaxation did not finish here: the schedule is
                          the incumbent) or "below" (nothing was found at a larger budget); NULL: it ran */
    size_t from_bytes; /* the schedule was found at this other budget (0: here) */
    char source[64];   /* stats.source, kept here when it is relabelled */
} lesson_ans;

typedef struct lesson_solve {
    rm_cli_problem *cp;
    const lesson_args *a;
    size_t hi, lo;   /* the no-remat peak, the lower bound */
    lesson_ans *ans; /* budgets_n x nst, in the page's order (budget 0 the highest) */
    double step;     /* every cost is a multiple of it (rm_lp_cost_step) */
} lesson_solve;

static size_t bytes_of(const lesson_solve *L, int k)
{
    return budget_at(L->hi, L->lo, k, (int)L->a->budgets_n);
}

static lesson_ans *ans_at(const lesson_solve *L, int k, int j)
{
    return &L->ans[(size_t)k * (size_t)L->a->nst + (size_t)j];
}

/* The solvers that take an incumbent and search below it: the warm-started
 * second pass. LP rounding runs with the heuristics: its answer is the MILP's
 * incumbent and its LP bound what may spare the MILP its search. */
static int warm_started(const rm_strategy_info *st)
{
    return !strcmp(st->name, "milp") || !strcmp(st->name, "best");
}

/* Runs strategy j at budget k (inc: an incumbent that fits, with its
 * simulation, or NULL) and keeps the answer. A failure that is not "no
 * schedule" (out of memory, a bug) is an error: the page would be wrong. */
static int run_at(lesson_solve *L, int k, int j, const rm_schedule *inc, const rm_sim_result *inc_sim, double limit,
                  rm_err *e)
{
    const lesson_args *a = L->a;
    const rm_strategy_info *st = a->st[j];
    lesson_ans *x = ans_at(L, k, j);
    L->cp->p->budget = bytes_of(L, k);
    rm_strategy_options o;
    memset(&o, 0, sizeof o);
    o.time_limit_s = limit;
    o.node_limit = a->node_limit_n;
    o.milp_engine = a->engine;
    o.incumbent = inc;
    o.incumbent_sim = inc ? inc_sim : NULL;
    /* The page teaches Checkmate's R and S, stage t computing node t: the
     * anneal (and best's) stay in the problem's order here. */
    o.keep_order = 1;
    rm_err why = {RM_OK, ""};
    x->rc = rm_strategy_run(&x->s, &x->stats, st, L->cp->p, &o, &why);
    x->ran = 1;
    snprintf(x->why, sizeof x->why, "%s", why.msg);
    if (x->rc && x->rc != RM_ERR_INFEASIBLE) {
        char b[32];
        return rm_errorf(e, x->rc, "%s at %s: %s", st->name, rm_cli_bytes(b, sizeof b, (double)bytes_of(L, k)),
                         why.msg);
    }
    if (x->stats.source) snprintf(x->source, sizeof x->source, "%s", x->stats.source);
    return RM_OK;
}

/* The cheapest schedule found so far, at any budget by any strategy, that
 * fits budget k (a schedule that fits one budget fits every larger one), or
 * NULL; ties go to the lower peak. */
static const lesson_ans *cheapest_fitting(const lesson_solve *L, int k)
{
    rm_problem *p = L->cp->p;
    p->budget = bytes_of(L, k);
    const lesson_ans *best = NULL;
    for (int b = 0; b < L->a->budgets_n; b++)
        for (int j = 0; j < L->a->nst; j++) {
            const lesson_ans *x = ans_at(L, b, j);
            if (!x->ran || x->rc || !x->s || !rm_sim_fits(p, &x->stats.sim)) continue;
            if (!best || rm_sim_better(&x->stats.sim, &best->stats.sim)) best = x;
        }
    return best;
}

/* The best proved lower bound on the cost at budget k: an LP bound solved at
 * k or at any larger budget (a larger budget only relaxes the problem, so
 * its bound holds here too), or the cost of a schedule proved optimal there.
 * 0: none. */
static double bound_at(const lesson_solve *L, int k)
{
    double lb = 0;
    for (int b = 0; b <= k; b++)
        for (int j = 0; j < L->a->nst; j++) {
            const lesson_ans *x = ans_at(L, b, j);
            if (!x->ran || x->skip) continue;
            if (x->stats.has_bound && !x->stats.bound_trivial && x->stats.lp_bound > lb) lb = x->stats.lp_bound;
            if (x->rc == RM_OK && x->stats.status == RM_STATUS_OPTIMAL && x->stats.sim.cost > lb)
                lb = x->stats.sim.cost;
        }
    return lb;
}

/* Whether LP rounding ran at budget k and its LP relaxation did not finish
 * there within the time limit. */
static int lp_unsolved_at(const lesson_solve *L, int k)
{
    for (int j = 0; j < L->a->nst; j++) {
        const lesson_ans *x = ans_at(L, k, j);
        if (!strcmp(L->a->st[j]->name, "lp_round") && x->ran && !x->skip)
            return !(x->stats.has_bound && !x->stats.bound_trivial);
    }
    return 0;
}

/* The answer of a solver that is not run: the incumbent it would start
 * from (NULL: none, "no schedule"), with skip saying why. */
static int answer_unrun(lesson_ans *x, const char *skip, const rm_schedule *inc, const rm_sim_result *isim,
                        rm_status status, double lb, rm_err *e)
{
    memset(&x->stats, 0, sizeof x->stats);
    x->ran = 1;
    x->skip = skip;
    x->stats.status = status;
    x->rc = inc ? rm_schedule_copy(&x->s, inc, e) : RM_ERR_INFEASIBLE;
    if (!inc || x->rc) return inc ? x->rc : RM_OK;
    x->stats.sim = *isim;
    if (lb > 0) {
        x->stats.has_bound = 1;
        x->stats.lp_bound = lb;
        x->stats.gap = isim->cost > 0 ? fmax(0, (isim->cost - lb) / isim->cost) : 0;
    }
    return RM_OK;
}

/* A warm-started solver at budget k: the cheapest schedule found so far
 * that fits is its incumbent (nothing dearer comes back). It is not run
 * where the best bound already proves that schedule optimal (the answer is
 * that schedule, optimal), nor where LP rounding's relaxation did not finish
 * here within the same limit (the MILP starts by solving that relaxation:
 * the answer is the incumbent, unsearched, as the MILP would return it). */
static int run_warm(lesson_solve *L, int k, int j, double limit, rm_err *e)
{
    rm_problem *p = L->cp->p;
    lesson_ans *x = ans_at(L, k, j);
    p->budget = bytes_of(L, k);
    /* Below the trivial bound, or where checkpoint-all fits, the route answers at once (the problem's
     * report says which, without simulating anything again). */
    rm_budget_verdict v = rm_budget_verdict_of(p, &L->cp->facts);
    if (!rm_budget_feasible(v) || v >= RM_BUDGET_FITS) return run_at(L, k, j, NULL, NULL, limit, e);
    /* The best baseline here, as the route would find it, so the incumbent is never dearer than its own. */
    const char *bname = NULL;
    rm_sim_result bsim;
    rm_schedule *base = rm_best_baseline(p, rm_deadline_in(limit), 0, &bname, &bsim);
    const lesson_ans *pool = cheapest_fitting(L, k);
    p->budget = bytes_of(L, k);
    const rm_schedule *inc = base;
    const rm_sim_result *isim = &bsim;
    const char *iname = bname;
    size_t from = 0;
    if (pool && (!base || rm_sim_better(&pool->stats.sim, &bsim))) {
        inc = pool->s;
        isim = &pool->stats.sim;
        iname = pool->source[0] ? pool->source : NULL;
        size_t b = bytes_of(L, (int)((pool - L->ans) / L->a->nst));
        from = b == p->budget ? 0 : b;
    }
    double lb = bound_at(L, k);
    int rc;
    if (inc && lb > 0 &&
        (isim->cost <= rm_lp_step_up(lb, L->step) || fabs(isim->cost - lb) <= 1e-9 * fmax(1.0, fabs(lb))))
        rc = answer_unrun(x, "bound", inc, isim, RM_STATUS_OPTIMAL, lb, e);
    else if (lp_unsolved_at(L, k))
        rc = answer_unrun(x, "lp", inc, isim, inc ? RM_STATUS_FEASIBLE : RM_STATUS_NO_SOLUTION, lb, e);
    else
        rc = run_at(L, k, j, inc, isim, limit, e);
    /* A bound proved here or at a larger budget holds for what the solver
     * answered, where its own LP did not get that far. */
    if (!rc && x->rc == RM_OK && !x->skip && lb > 0 &&
        (!x->stats.has_bound || x->stats.bound_trivial || x->stats.lp_bound < lb)) {
        double c = x->stats.sim.cost;
        x->stats.has_bound = 1;
        x->stats.bound_trivial = 0;
        x->stats.lp_bound = lb;
        x->stats.gap = c > 0 ? fmax(0, (c - lb) / c) : 0;
        if (c <= rm_lp_step_up(lb, L->step) || fabs(c - lb) <= 1e-9 * fmax(1.0, fabs(lb))) {
            x->stats.status = RM_STATUS_OPTIMAL;
            x->stats.gap = 0;
        }
    }
    if (!rc && x->skip && !strcmp(x->skip, "lp"))
        snprintf(x->why, sizeof x->why,
                 "%s was not run here: LP rounding's LP relaxation did not finish at this budget within the time "
                 "limit (%g s), and the MILP starts by solving the same relaxation (--exhaustive or a longer "
                 "--time-limit runs it)",
                 L->a->st[j]->name, L->a->time_limit_s);
    /* The incumbent came back (lp_solve's search found nothing cheaper, or
     * none ran): say whose schedule it is, and where it was found. */
    if (!rc && inc && x->rc == RM_OK && (x->skip || rm_schedule_equal(x->s, inc))) {
        snprintf(x->source, sizeof x->source, "%s", iname ? iname : "a baseline");
        x->from_bytes = from;
    }
    rm_schedule_free(base);
    return rc;
}

/* Strategy j is not run at budget k: at budget above (larger), it and the
 * others (what they were, in words) found no schedule. Where a solver proved that (by: its
 * index; -1: none did), it holds here too, a smaller budget; else the page
 * says that nothing was tried. */
static void not_run(lesson_solve *L, int k, int j, int above, int by, const char *others)
{
    lesson_ans *x = ans_at(L, k, j);
    char b[32];
    rm_cli_bytes(b, sizeof b, (double)bytes_of(L, above));
    memset(&x->stats, 0, sizeof x->stats);
    x->ran = 1;
    x->rc = RM_ERR_INFEASIBLE;
    x->skip = "below";
    x->stats.status = by >= 0 ? RM_STATUS_INFEASIBLE : RM_STATUS_NO_SOLUTION;
    if (by >= 0)
        snprintf(x->why, sizeof x->why, "no schedule fits: at %s, a larger budget, %s proved that none fits (%s)", b,
                 L->a->st[by]->name, ans_at(L, above, by)->why);
    else
        snprintf(x->why, sizeof x->why,
                 "%s was not run here: at %s, a larger budget, it and %s found no schedule (remat lesson "
                 "--exhaustive runs every solver at every budget)",
                 L->a->st[j]->name, b, others);
}

/* Whether every strategy answered "no schedule" at budget k (of those
 * answered so far), and whether a solver proved it (*proved_by: its index,
 * -1: none). */
static int nothing_at(const lesson_solve *L, int k, int *proved_by)
{
    *proved_by = -1;
    for (int j = 0; j < L->a->nst; j++) {
        const lesson_ans *x = ans_at(L, k, j);
        if (!x->ran) continue;
        if (x->rc == RM_OK) return 0;
        if (!x->skip && L->a->st[j]->solve_opt && x->stats.status == RM_STATUS_INFEASIBLE) *proved_by = j;
    }
    return 1;
}

static void progress(const lesson_solve *L, int k, int pass, double t0)
{
    const lesson_args *a = L->a;
    if (a->quiet) return;
    char line[2048], x[32];
    size_t ll =
        (size_t)snprintf(line, sizeof line, "remat lesson: budget %d/%ld: %s (%.1f%% of the no-remat peak):", k + 1,
                         a->budgets_n, rm_cli_bytes(x, sizeof x, (double)bytes_of(L, k)),
                         L->hi ? 100.0 * (double)bytes_of(L, k) / (double)L->hi : 100.0);
    int first = 1;
    for (int j = 0; j < a->nst && ll < sizeof line; j++) {
        const lesson_ans *r = ans_at(L, k, j);
        if (pass >= 0 && warm_started(a->st[j]) != pass) continue;
        const char *sep = first ? " " : ", ";
        first = 0;
        if (r->rc)
            ll += (size_t)snprintf(line + ll, sizeof line - ll, "%s%s -%s", sep, a->st[j]->name,
                                   r->skip ? " (not run)" : "");
        else
            ll += (size_t)snprintf(line + ll, sizeof line - ll, "%s%s %+.2f%%%s", sep, a->st[j]->name,
                                   rm_overhead_pct(r->stats.sim.cost, L->cp->facts.base_cost),
                                   r->skip ? " (proved by the bound)" : "");
    }
    rm_text_fprintf(stderr, "%s (%.1f s)\n", line, rm_now() - t0);
}

/* The time limit of a warm-started solve with left such solves to go:
 * --time-limit where it was given; by default the solves share what is
 * left of LESSON_PAGE_SECONDS since the page's solves began (t_start), each
 * at most LESSON_TIME_LIMIT and at least a tenth of it. They mostly return
 * their incumbent (ResNet-tiny at batch 8: at every budget with 10 s each),
 * so on a loaded machine their time goes first. */
static double warm_limit(const lesson_solve *L, double t_start, int left)
{
    const lesson_args *a = L->a;
    if (a->time_limit || a->exhaustive) return a->time_limit_s;
    double share = (LESSON_PAGE_SECONDS - (rm_now() - t_start)) / (left > 0 ? left : 1);
    return fmax(0.1 * LESSON_TIME_LIMIT, fmin(LESSON_TIME_LIMIT, share));
}

/* Every answer of the page. --exhaustive: every strategy at every budget
 * with its full limits, in the page's order (what the lesson always did).
 * By default the budgets share their work, in two passes:
 *  1. from the highest budget down: the heuristics and LP rounding. Once
 *     every one of them finds no schedule at a budget, LP rounding is not
 *     run below it (a smaller budget only makes it harder).
 *  2. the MILP (and best), from the lowest budget where something was found
 *     up: warm-started with the cheapest schedule found so far that fits
 *     (an answer at a smaller budget fits every larger one), and not run
 *     where the best bound (LP rounding's LP at this or a larger budget)
 *     already proves that schedule optimal. Below the highest budget where
 *     nothing fits, it runs downwards until it too finds nothing, and not
 *     below that. */
static int solve_all(lesson_solve *L, rm_err *e)
{
    const lesson_args *a = L->a;
    int K = (int)a->budgets_n, rc = RM_OK;
    double t_start = rm_now();
    if (a->exhaustive) {
        for (int k = 0; !rc && k < K; k++) {
            double t0 = rm_now();
            for (int j = 0; !rc && j < a->nst; j++) rc = run_at(L, k, j, NULL, NULL, a->time_limit_s, e);
            if (!rc) progress(L, k, -1, t0);
        }
        return rc;
    }
    int dead = -1, proved = -1; /* the highest budget where pass 1 found nothing, and which solver proved it */
    for (int k = 0; !rc && k < K; k++) {
        double t0 = rm_now();
        for (int j = 0; !rc && j < a->nst; j++) {
            if (warm_started(a->st[j])) continue;
            if (dead >= 0 && a->st[j]->solve_opt)
                not_run(L, k, j, dead, proved, "every heuristic");
            else
                rc = run_at(L, k, j, NULL, NULL, a->time_limit_s, e);
        }
        if (!rc) progress(L, k, 0, t0);
        int by;
        if (!rc && dead < 0 && nothing_at(L, k, &by)) dead = k, proved = by;
    }
    int nwarm = 0; /* the warm-started strategies left to run */
    for (int j = 0; j < a->nst; j++) nwarm += warm_started(a->st[j]);
    for (int j = 0; !rc && j < a->nst; j++) {
        if (!warm_started(a->st[j])) continue;
        int start = dead >= 0 ? dead : K - 1, stop = -1, stop_by = -1;
        for (int k = start; !rc && k < K; k++) {
            double t0 = rm_now();
            if (stop >= 0) {
                not_run(L, k, j, stop, stop_by, "every other strategy");
                continue;
            }
            rc = run_warm(L, k, j, warm_limit(L, t_start, (start + 1) * nwarm), e);
            if (!rc) progress(L, k, 1, t0);
            if (!rc && ans_at(L, k, j)->rc && nothing_at(L, k, &stop_by)) stop = k;
        }
        for (int k = start - 1; !rc && k >= 0; k--) {
            double t0 = rm_now();
            rc = run_warm(L, k, j, warm_limit(L, t_start, (k + 1) * nwarm), e);
            if (!rc) progress(L, k, 1, t0);
        }
        nwarm--;
    }
    return rc;
}

/* Budget k's JSON object, from the answers. */
static int write_budget(FILE *f, const lesson_solve *L, int k, rm_err *e)
{
    rm_cli_problem *cp = L->cp;
    cp->p->budget = bytes_of(L, k);
    fputs(k ? ",\n{" : "\n{", f);
    json_key(f, "bytes", 1);
    rm_table_json_number(f, (double)cp->p->budget);
    int rc = json_text(f, "explain", budget_text, cp, e);
    json_key(f, "runs", 0);
    fputc('[', f);
    for (int j = 0; !rc && j < L->a->nst; j++) {
        const lesson_ans *x = ans_at(L, k, j);
        if (j) fputc(',', f);
        rc = write_run(f, cp, L->a->st[j], x->rc, &x->stats, x->s, x->why, x->skip, x->source, x->from_bytes, e);
    }
    fputs("]}", f);
    return rc;
}

/* ---- the page ---- */

typedef struct page_ctx {
    lesson_solve *L;
    const char *template, *mark; /* cli/lesson.html, and its data marker */
    int k;                       /* the budget page_budget writes */
} page_ctx;

/* The template up to the data marker, then the problem. */
static int page_head(FILE *m, const void *ctx, rm_err *e)
{
    const page_ctx *x = ctx;
    (void)e;
    fwrite(x->template, 1, (size_t)(x->mark - x->template), m);
    write_problem(m, x->L->cp, x->L->a, x->L->lo);
    json_key(m, "budgets", 0);
    fputc('[', m);
    return RM_OK;
}

static int page_budget(FILE *m, const void *ctx, rm_err *e)
{
    const page_ctx *x = ctx;
    return write_budget(m, x->L, x->k, e);
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
 * commit, the errno of an earlier failed write is gone). The head goes
 * first, before any solve: a disk full already stops the solves instead of
 * running them all for nothing. */
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
    lesson_solve L = {
        cp, a, cp->facts.noremat_total, cp->p->fixed_bytes + cp->facts.lower_bound, NULL, rm_lp_cost_step(cp->p)};
    page_ctx x = {&L, (const char *)rm_lesson_page, NULL, 0};
    x.mark = strstr(x.template, LESSON_DATA_MARKER);
    if (!x.mark) return rm_errorf(e, RM_ERR_INVALID, "the page template has no %s", LESSON_DATA_MARKER);
    size_t nans = (size_t)a->budgets_n * (size_t)a->nst;
    if (!(L.ans = calloc(nans, sizeof *L.ans))) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    int rc = page_piece(af, page_head, &x, e);
    if (!rc) rc = solve_all(&L, e);
    for (x.k = 0; !rc && x.k < a->budgets_n; x.k++) rc = page_piece(af, page_budget, &x, e);
    if (!rc) rc = page_piece(af, page_tail, &x, e);
    for (size_t i = 0; i < nans; i++) rm_schedule_free(L.ans[i].s);
    free(L.ans);
    return rc;
}

static int lesson_parse(lesson_args *a, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->budgets_n = 20;
    const rm_cli_opt opts[] = {
        RM_CLI_FLAG("--quiet", "-q", &a->quiet),
        RM_CLI_FLAG("--exhaustive", NULL, &a->exhaustive),
        RM_CLI_MODEL_OPTIONS(&a->mdl),
        RM_CLI_VALUE("--batch", &a->batch),
        RM_CLI_VALUE("--problem", &a->problem),
        RM_CLI_VALUE("--out", &a->out),
        RM_CLI_VALUE("--budgets", &a->budgets),
        RM_CLI_VALUE("--strategies", &a->strategies),
        RM_CLI_VALUE("--costs", &a->costs),
        RM_CLI_VALUE("--time-limit", &a->time_limit),
        RM_CLI_VALUE("--node-limit", &a->node_limit),
        RM_CLI_VALUE("--milp-engine", &a->milp_engine),
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
    a->time_limit_s = a->exhaustive ? LESSON_EXHAUSTIVE_TIME_LIMIT : LESSON_TIME_LIMIT;
    if (rm_cli_parse_solver_limits(&a->time_limit_s, &a->node_limit_n, a->time_limit, a->node_limit, why, sizeof why) ||
        rm_cli_parse_milp_engine(&a->engine, a->milp_engine, why, sizeof why))
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
    /* On a DAG without backward nodes the checkpointing heuristics have
     * nothing to choose (rm_strategy_applies): the page leaves them out. */
    int kept = 0;
    char gone[256] = "";
    for (int j = 0; j < a.nst; j++) {
        if (rm_strategy_applies(a.st[j], cp.p)) {
            a.st[kept++] = a.st[j];
            continue;
        }
        size_t used = strlen(gone);
        snprintf(gone + used, sizeof gone - used, "%s%s", used ? ", " : "", a.st[j]->name);
    }
    a.nst = kept;
    if (gone[0] && !kept) {
        rm_text_fprintf(stderr,
                        "remat lesson: %s need a training graph's forward/backward split, and this problem has no "
                        "backward nodes: name a strategy that schedules any DAG (dtr, lp_round, milp, anneal, best)\n",
                        gone);
        rm_cli_problem_free(&cp);
        return 2;
    }
    if (gone[0] && !a.quiet)
        rm_text_fprintf(stderr,
                        "remat lesson: left out %s: they need a training graph's forward/backward split, and this "
                        "problem has no backward nodes\n",
                        gone);
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
