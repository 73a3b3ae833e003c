/* `remat plan`: solves one rematerialization schedule for a memory budget
 * and shows it: a summary (cost overhead, peak, recomputations), for small
 * graphs the R and S matrices as text, and the memory timeline; optionally
 * the schedule file and SVG figures. `--strategy all` compares every
 * strategy in one table (cli/table.h; --format csv|json prints it alone, as
 * data); `--check FILE` re-validates a saved schedule. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "cli_util.h"
#include "commands.h"
#include "deadline.h"
#include "figures.h"
#include "plan.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"
#include "table.h"

#define PLAN_USAGE                                                                                                     \
    "usage: remat plan (--model FILE --batch N --budget B | --problem FILE [--budget B]) [--strategy NAME]\n"          \
    "                  (--onnx FILE [--loss L] [--init I] in place of --model FILE)\n"                                 \
    "                  [--costs FILE] [--time-limit S] [--node-limit N] [--out FILE] [--svg PREFIX]\n"                 \
    "                  [--milp-engine E] [--moves N] [--seed N] [--keep-order] [--format text|csv|json] [--quiet]\n"   \
    "       remat plan --check FILE (--model FILE --batch N | --problem FILE) [--budget B] [--svg PREFIX]\n"           \
    "\n"                                                                                                               \
    "Solves a rematerialization schedule: which activations to keep in memory between the stages of a\n"               \
    "training step and which to recompute, so that the step fits the budget at the least extra compute.\n"             \
    "Prints the problem (fixed bytes, the no-remat peak, the lower bound), a summary of the schedule\n"                \
    "(compute overhead, peak, recomputations), for graphs of up to 60 nodes the R and S matrices as text,\n"           \
    "and the memory timeline. Every schedule is judged by the exact simulator.\n"                                      \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --model FILE      model config (models/*.cfg), traced at --batch N (1 to 2^30)\n" RM_CLI_MODEL_USAGE(           \
        "      ") "  --problem FILE    a problem file instead (docs/problem-format.md); its budget is the default\n"   \
                  "  --costs FILE      node costs in profiled seconds (`remat profile`, docs/cost-format.md) instead " \
                  "of\n"                                                                                               \
                  "                    FLOPs; it must be the model's at this batch (or match the problem file's "      \
                  "nodes)\n"                                                                                           \
                  "  --budget B        TOTAL device memory, fixed bytes included: bytes (1500000000, 1.5e9; a "        \
                  "number\n"                                                                                           \
                  "                    without a unit must be at least 1000000, else write the B: 12000B), a size\n"   \
                  "                    (6GiB, 512MiB, 16GB; KiB ... EiB are powers of 1024, KB ... EB of 1000),\n"     \
                  "                    or a percentage of the no-remat peak (80%: 80% of fixed + checkpoint-all's "    \
                  "peak);\n"                                                                                           \
                  "                    at most 2^62 bytes (4 EiB)\n"                                                   \
                  "  --strategy NAME   best (the default): every heuristic first, then the anneal and the MILP with "  \
                  "the\n"                                                                                              \
                  "                    cheapest as incumbent; the cheapest schedule found, never dearer than a "       \
                  "heuristic;\n"                                                                                       \
                  "                    or one of checkpoint_all, chen_sqrtn, chen_greedy, griewank, ap_sqrtn, "        \
                  "ap_greedy,\n"                                                                                       \
                  "                    linearized_sqrtn, linearized_greedy, ogc, dtr, lp_round, milp, anneal (which "  \
                  "may\n"                                                                                              \
                  "                    also choose the order of first computes) ('-' works for '_'),\n"                \
                  "                    or all: run every strategy and compare them in a table\n"                       \
                  "  --time-limit S    wall-clock seconds for the whole command, reading the problem included, "       \
                  "whatever\n"                                                                                         \
                  "                    the strategy (default 60; 0 = none); with all, for each strategy. A search "    \
                  "it\n"                                                                                               \
                  "                    stops answers with the best schedule it has (said on stderr). The command "     \
                  "ends\n"                                                                                             \
                  "                    within S plus 5% plus 0.5 s per 100,000 nodes (docs/reliability.md, \"Time "    \
                  "limits\")\n"                                                                                        \
                  "  --node-limit N    branch-and-bound nodes for milp (deterministic; default "                       \
                  "none)\n"                                                                                            \
                  "  --moves N         the anneal's moves (default 2,000 a node, within 30,000 .. 10^7; its walk in\n" \
                  "                    the order alone, first, has at most 10^6); with --seed and --time-limit 0\n"    \
                  "                    they fix its answer (under a time limit the walk also cools by the clock\n"     \
                  "                    where that runs ahead of its moves)\n"                                          \
                  "  --seed N          the anneal's random seed (default 1)\n"                                         \
                  "  --keep-order      the anneal keeps the problem's order: recomputations "                          \
                  "only\n" RM_CLI_MILP_ENGINE_HELP(                                                                    \
                      "   ") "  --out FILE        write the schedule (docs/schedule-format.md); with all, the "        \
                             "cheapest one\n"                                                                          \
                             "  --svg PREFIX      write PREFIX-rs.svg (R and S as coloured grids, up to 2000 nodes) "  \
                             "and\n"                                                                                   \
                             "                    PREFIX-memory.svg (memory over the operation sequence: fixed band, " \
                             "live\n"                                                                                  \
                             "                    activations, budget, recomputations); with all, both of the "        \
                             "cheapest schedule "                                                                      \
                             "and\n"                                                                                   \
                             "                    PREFIX-compare.svg: every strategy's memory side by side on shared " \
                             "axes, "                                                                                  \
                             "each\n"                                                                                  \
                             "                    titled with its overhead and peak, those that found no schedule "    \
                             "listed\n"                                                                                \
                             "  --check FILE      re-validate a saved schedule against the problem (and the budget "   \
                             "when one is\n"                                                                           \
                             "                    given): exit 0 when valid, 1 with the reason\n"                      \
                             "  --format F        text (the default), csv or json. csv and json print the table of "   \
                             "--strategy "                                                                             \
                             "all\n"                                                                                   \
                             "                    (or, for one strategy, its one row in that table's columns) and "    \
                             "nothing else "                                                                           \
                             "on\n"                                                                                    \
                             "                    stdout: no problem lines, matrices, timeline or footnotes; the "     \
                             "cheapest "                                                                               \
                             "strategy and\n"                                                                          \
                             "                    the files written are said on stderr. Columns: strategy, status, "   \
                             "overhead_pct, cost\n"                                                                    \
                             "                    (the problem's unit), peak_bytes, recomputed_nodes, "                \
                             "recomputations, seconds,\n"                                                              \
                             "                    lp_bound_pct, bound (lp or trivial), gap_pct (cost minus the "       \
                             "proved floor, "                                                                          \
                             "over the\n"                                                                              \
                             "                    cost: docs/formulation.md); numbers are numbers, missing ones\n"     \
                             "                    empty (csv) or null (json). Not with --check\n"                      \
                             "  --quiet           no progress on stderr\n"                                             \
                             "\n"                                                                                      \
                             "examples:\n"                                                                             \
                             "  remat plan --model models/vgg16.cfg --batch 32 --budget 80% --strategy all\n"          \
                             "  remat plan --model models/vgg16.cfg --batch 32 --budget 80% --strategy all --format "  \
                             "csv --quiet "                                                                            \
                             "> all.csv\n"                                                                             \
                             "  remat plan --model models/resnet-tiny.cfg --batch 4 --budget 70% --strategy milp "     \
                             "--svg rt\n"                                                                              \
                             "  remat plan --problem graph.txt --budget 6GiB --strategy lp-round --out s.txt\n"        \
                             "  remat plan --check s.txt --problem graph.txt"

#define usage_error(...) rm_cli_usage_error("plan", PLAN_USAGE, __VA_ARGS__)

/* Text matrices only where one row fits a terminal. */
#define TEXT_MATRIX_MAX 60

typedef struct plan_args {
    rm_cli_model mdl;
    const char *model, *batch, *problem, *budget, *strategy, *time_limit, *node_limit, *out, *svg, *check, *costs,
        *format, *milp_engine, *moves, *seed;
    int quiet, keep_order;
    long moves_n, seed_n;
    rm_table_format fmt;
    FILE *info; /* where the lines around a table go: stdout in text, stderr in csv and json */
    long batch_n;
    double time_limit_s;
    double started; /* when the command began reading the problem: one strategy's deadline counts from here */
    long node_limit_n;
    rm_milp_engine engine;
    rm_cli_budget b;
    int have_budget;
} plan_args;

/* ---- what a schedule looks like: renderings of its report (scheduler/report.h) ---- */

static char tag_char(rm_node_tag t)
{
    return t == RM_TAG_BACKWARD ? 'B' : t == RM_TAG_LOSS ? 'L' : 'F';
}

/* The teaching view: one row per stage, one column per node. */
static void print_matrices(const rm_problem *p, const rm_schedule *s, const rm_schedule_report *tl)
{
    int n = p->n, w = 0;
    char shown[RM_NAME_SHOW_LEN];
    /* Names as shown (base/utf8.h), in columns, not bytes: at most 24. */
    for (int i = 0; i < n; i++) {
        int l = rm_name_show_cols(shown, sizeof shown, p->nodes[i].name, 24);
        if (l > w) w = l;
    }
    size_t act = rm_problem_activation_budget(p);
    size_t top = act != SIZE_MAX ? act : 1;
    for (int t = 0; t < n; t++)
        if (tl->stage_max[t] > top) top = tl->stage_max[t];
    printf("\nR and S, one row per stage. Stage t computes node t (the diagonal) and may recompute earlier\n"
           "nodes from what it finds in memory; columns are nodes 0..%d.\n"
           "  #  computed in this stage (R = 1); a # left of the diagonal is a recomputation\n"
           "  +  kept in memory from the previous stage (S = 1)\n"
           "  *  both: kept, and recomputed anyway\n"
           "  .  not in memory\n"
           "Kind: F forward, L loss, B backward. Right: the stage's highest activation memory%s.\n\n",
           n - 1, act != SIZE_MAX ? ",\nthe bar scaled to the activation budget (|)" : "");
    int pad = 6 + 2 + w + 1;
    if (n > 10) {
        printf("%*s", pad, "");
        for (int i = 0; i < n; i++) putchar(i % 10 == 0 && i >= 10 ? (char)('0' + (i / 10) % 10) : ' ');
        putchar('\n');
    }
    printf("%*s", pad, "");
    for (int i = 0; i < n; i++) putchar((char)('0' + i % 10));
    putchar('\n');
    for (int t = 0; t < n; t++) {
        int l = rm_name_show_cols(shown, sizeof shown, p->nodes[t].name, w);
        printf("%5d %c %s%*s ", t, tag_char(p->nodes[t].tag), shown, w - l, "");
        for (int i = 0; i < n; i++) {
            int r = i <= t && rm_schedule_R(s, t, i), k = i < t && rm_schedule_S(s, t, i);
            putchar(r && k ? '*' : r ? '#' : k ? '+' : i <= t ? '.' : ' ');
        }
        char buf[32];
        int bar = (int)((double)tl->stage_max[t] / (double)top * 20.0 + 0.5);
        printf("  %10s ", rm_cli_bytes(buf, sizeof buf, (double)tl->stage_max[t]));
        int mark = act != SIZE_MAX ? (int)((double)act / (double)top * 20.0 + 0.5) : -1;
        for (int j = 0; j < 21; j++) putchar(j == mark ? '|' : j < bar ? '=' : ' ');
        putchar('\n');
    }
}

/* A compact area chart of live activation memory over the operations. */
static void print_timeline(const rm_problem *p, const rm_schedule_report *tl)
{
    const rm_sim_result *sim = &tl->sim;
    enum { H = 8, WMAX = 64 };
    int nops = tl->nops;
    if (nops == 0) return;
    int W = nops < WMAX ? nops : WMAX;
    size_t colmax[WMAX] = {0};
    char marks[WMAX + 1];
    memset(marks, ' ', sizeof marks);
    marks[W] = '\0';
    int b0 = tl->backward_op >= 0 ? (int)((long long)tl->backward_op * W / nops) : -1;
    for (int k = 0; k < nops; k++) {
        int j = (int)((long long)k * W / nops);
        if (tl->mem[k] > colmax[j]) colmax[j] = tl->mem[k];
        if (rm_op_is_recompute(tl, &tl->ops[k])) marks[j] = 'r';
    }
    size_t act = rm_problem_activation_budget(p);
    double top = (double)sim->peak_bytes;
    if (act != SIZE_MAX && (double)act > top) top = (double)act;
    if (top <= 0) top = 1;
    int brow = act != SIZE_MAX ? H - (int)((double)act / top * H + 0.5) : -1;
    if (brow >= H) brow = H - 1;
    char buf[32], buf2[32];
    printf("\nMemory timeline: live activations over the %d operations (computes and frees), fixed %s not drawn;\n"
           "each column is the highest point of ~%.1f operations. 'r' below: a recomputation; '^' on the axis:\n"
           "the backward pass begins.\n",
           nops, rm_cli_bytes(buf, sizeof buf, (double)p->fixed_bytes), (double)nops / W);
    for (int r = 0; r < H; r++) {
        if (r == 0)
            printf("%10s |", rm_cli_bytes(buf, sizeof buf, top));
        else
            printf("%10s |", "");
        double level = top * (double)(H - r - 0.5) / H;
        for (int j = 0; j < W; j++) putchar((double)colmax[j] >= level ? '#' : r == brow ? '-' : ' ');
        if (r == brow) printf(" budget %s", rm_cli_bytes(buf2, sizeof buf2, (double)act));
        putchar('\n');
    }
    printf("%10s +", "0");
    for (int j = 0; j < W; j++) putchar(j == b0 ? '^' : '-');
    printf("\n%10s  %s\n", "", marks);
}

/* The static plan of the schedule (engine/plan.c), as the report placed it:
 * the arena it needs, its span, against the live peak; the difference is
 * fragmentation. */
static void print_arena(const rm_problem *p, const rm_schedule_report *r)
{
    char a[32], b[32];
    const rm_plan *pl = r->arena;
    if (!pl) {
        /* Not placed for its size (`remat train` still plans what it runs), or the placement failed. */
        printf("arena        not planned%s: %s\n", r->arena_code == RM_OK ? " here" : "", r->arena_note);
        return;
    }
    printf("arena        %s span = live peak %s + %.2f%% fragmentation (offsets in one arena, %d-byte aligned)\n",
           rm_cli_bytes(a, sizeof a, (double)pl->span), rm_cli_bytes(b, sizeof b, (double)pl->live_peak),
           100.0 * rm_plan_fragmentation(pl), RM_ARENA_ALIGN);
    if (p->budget && p->fixed_bytes + pl->span > p->budget)
        printf("             fixed + span exceeds the budget by %s: `remat train` solves again for that much less\n",
               rm_cli_bytes(a, sizeof a, (double)(p->fixed_bytes + pl->span - p->budget)));
}

static void print_summary(const rm_problem *p, const rm_cli_problem *cp, const rm_strategy_info *st,
                          const rm_strategy_stats *stats, const rm_schedule_report *rep)
{
    char a[32], b[32], c[32];
    const rm_sim_result *r = &rep->sim;
    int nodes = rep->recomputed_nodes;
    printf("\nstrategy     %s: %s", st->name, st->title);
    /* What ran is what is printed: a solver that found nothing cheaper than
     * the schedule it started from answers with that one, and says whose. */
    if (stats->source && strcmp(stats->source, st->name)) printf(" (the schedule %s found)", stats->source);
    printf("\n");
    printf("status       %s in %.2f s", rm_status_name(stats->status), stats->seconds);
    if (stats->has_bound)
        printf(" (%s %s = checkpoint-all %+.2f%%, gap %.2f%%)",
               !stats->bound_trivial ? "LP bound"
               : rep->stage_node     ? "no LP bound in its own order; trivial bound, every node once,"
                                     : "no LP bound; trivial bound, every node once,",
               rm_cli_cost(a, sizeof a, stats->lp_bound, cp->flops),
               rm_overhead_pct(stats->lp_bound, cp->facts.base_cost), 100.0 * stats->gap);
    printf("\n");
    printf("cost         %s = checkpoint-all %+.2f%% (%ld recomputation%s of %d node%s)\n",
           rm_cli_cost(a, sizeof a, r->cost, cp->flops), rm_overhead_pct(r->cost, cp->facts.base_cost),
           r->recomputations, r->recomputations == 1 ? "" : "s", nodes, nodes == 1 ? "" : "s");
    printf("peak         %s = fixed + %s activations",
           rm_cli_bytes(a, sizeof a, (double)(p->fixed_bytes + r->peak_bytes)),
           rm_cli_bytes(b, sizeof b, (double)r->peak_bytes));
    if (p->budget)
        printf(" (%.1f%% of the budget %s)", 100.0 * (double)(p->fixed_bytes + r->peak_bytes) / (double)p->budget,
               rm_cli_bytes(c, sizeof c, (double)p->budget));
    printf("\n");
    if (r->peak_node >= 0)
        printf("             reached computing '%s' in stage %d ('%s')\n",
               rm_name_shown_of(p->nodes[r->peak_node].name).s, r->peak_stage,
               rm_name_shown_of(p->nodes[rm_report_stage_node(rep, r->peak_stage)].name).s);
    if (rep->stage_node) {
        int moved = 0;
        for (int t = 0; t < p->n; t++) moved += rep->stage_node[t] != t;
        printf("order        its own: %d of the %d nodes are computed first elsewhere than in the problem's order\n"
               "             (stages below follow the schedule's order)\n",
               moved, p->n);
    }
    print_arena(p, rep);
}

/* s and its report r: the schedule file and the figures; what: appended to
 * the schedule line ("" or " (the cheapest: milp)"); title: the figures'
 * heading. */
static int write_outputs(const plan_args *a, const rm_problem *p, const rm_schedule *s, const rm_schedule_report *r,
                         const char *what, const char *title)
{
    rm_err e = {RM_OK, ""};
    if (a->out) {
        if (rm_schedule_write_replayed(s, p, r->ops, r->nops, &r->sim, a->out, RM_PATH_NAMED, &e)) {
            rm_text_fprintf(stderr, "remat plan: %s\n", e.msg);
            return 1;
        }
        rm_text_fprintf(a->info, "schedule     %s%s\n", a->out, what);
    }
    if (a->svg) {
        char rs[4096], mem[4096];
        snprintf(rs, sizeof rs, "%s-rs.svg", a->svg);
        snprintf(mem, sizeof mem, "%s-memory.svg", a->svg);
        int draw_rs = p->n <= RM_FIGURE_RS_MAX_NODES; /* n^2 cells */
        rm_cli_shown sh;                              /* R and S in the schedule's order */
        memset(&sh, 0, sizeof sh);
        int rc = draw_rs && rm_cli_shown_of(&sh, p, s, r, 0, &e);
        if (rc || (draw_rs && rm_figure_rs_svg(rs, sh.p, sh.s, title, &e)) ||
            rm_figure_memory_svg(mem, p, r, title, &e)) {
            rm_cli_shown_free(&sh);
            rm_text_fprintf(stderr, "remat plan: %s\n", e.msg);
            return 1;
        }
        rm_cli_shown_free(&sh);
        if (draw_rs)
            rm_text_fprintf(a->info, "figures      %s, %s\n", rs, mem);
        else
            rm_text_fprintf(a->info, "figures      %s (R and S are drawn for at most %d nodes, not %d)\n", mem,
                            RM_FIGURE_RS_MAX_NODES, p->n);
    }
    return 0;
}

/* "models/vgg16.cfg at batch 32, budget 2.73 GiB: milp, +4.39% compute" */
static void figure_title(char *buf, size_t len, const rm_cli_problem *cp, const char *strategy, double cost)
{
    char b[32];
    const char *what = strrchr(cp->what, '/');
    what = what ? what + 1 : cp->what;
    size_t o = (size_t)snprintf(buf, len, "%s", what);
    if (o < len && cp->p->budget)
        o += (size_t)snprintf(buf + o, len - o, ", budget %s", rm_cli_bytes(b, sizeof b, (double)cp->p->budget));
    if (o < len && strategy)
        snprintf(buf + o, len - o, ": %s, %+.2f%% compute", strategy, rm_overhead_pct(cost, cp->facts.base_cost));
}

static void set_solver_options(rm_strategy_options *o, rm_cli_progress *pr, const plan_args *a,
                               const rm_cli_problem *cp, const char *name)
{
    memset(o, 0, sizeof *o);
    o->facts = &cp->facts; /* the route's shortcuts decide by the verdict already given */
    o->time_limit_s = a->time_limit_s;
    o->node_limit = a->node_limit_n;
    o->milp_engine = a->engine;
    o->moves = a->moves_n;
    o->seed = (unsigned long)a->seed_n;
    o->keep_order = a->keep_order;
    pr->prefix = name;
    pr->t0 = rm_now();
    if (!a->quiet) {
        o->log = rm_cli_progress_log;
        o->log_ctx = pr;
    }
}

/* ---- the comparison table (--strategy all, and --format csv|json) ---- */

/* The text widths are today's fixed ones, so the table streams aligned. */
enum {
    COL_STRATEGY,
    COL_STATUS,
    COL_OVERHEAD,
    COL_COST,
    COL_PEAK,
    COL_RECOMPUTED,
    COL_NODES,
    COL_TIMES,
    COL_TIME,
    COL_BOUND,
    COL_BOUND_KIND,
    COL_GAP,
    NCOLS
};
static const rm_table_col plan_cols[NCOLS] = {
    [COL_STRATEGY] = {"strategy", "strategy", RM_TABLE_LEFT, 18, RM_TABLE_BOTH},
    [COL_STATUS] = {"status", "status", RM_TABLE_LEFT, 11, RM_TABLE_BOTH},
    [COL_OVERHEAD] = {"overhead", "overhead_pct", RM_TABLE_RIGHT, 9, RM_TABLE_BOTH},
    [COL_COST] = {"cost", "cost", RM_TABLE_RIGHT, 0, RM_TABLE_DATA},
    [COL_PEAK] = {"peak", "peak_bytes", RM_TABLE_RIGHT, 12, RM_TABLE_BOTH},
    [COL_RECOMPUTED] = {"recomputed", "recomputed", RM_TABLE_RIGHT, 12, RM_TABLE_HUMAN},
    [COL_NODES] = {"recomputed nodes", "recomputed_nodes", RM_TABLE_RIGHT, 0, RM_TABLE_DATA},
    [COL_TIMES] = {"recomputations", "recomputations", RM_TABLE_RIGHT, 0, RM_TABLE_DATA},
    [COL_TIME] = {"time", "seconds", RM_TABLE_RIGHT, 9, RM_TABLE_BOTH},
    [COL_BOUND] = {"LP bound", "lp_bound_pct", RM_TABLE_RIGHT, 9, RM_TABLE_BOTH},
    [COL_BOUND_KIND] = {"bound", "bound", RM_TABLE_LEFT, 0, RM_TABLE_DATA},
    [COL_GAP] = {"gap", "gap_pct", RM_TABLE_RIGHT, 7, RM_TABLE_BOTH},
};

/* One strategy's row. rc: rm_strategy_run's (RM_OK: r is its schedule's
 * report; RM_ERR_INFEASIBLE: no schedule; else an error). */
static int add_strategy_row(rm_table *t, const rm_cli_problem *cp, const rm_strategy_info *st, int rc,
                            const rm_strategy_stats *stats, const rm_schedule_report *r)
{
    char x[32];
    int ok = rc == RM_OK, shown = ok || rc == RM_ERR_INFEASIBLE || stats->status == RM_STATUS_NOT_APPLICABLE;
    rm_table_set_text(t, COL_STRATEGY, "%s", st->name);
    rm_table_set_text(t, COL_STATUS, "%s", shown ? rm_status_name(stats->status) : "error");
    if (ok) {
        double ov = rm_overhead_pct(stats->sim.cost, cp->facts.base_cost);
        size_t peak = cp->p->fixed_bytes + stats->sim.peak_bytes;
        int nodes = r->recomputed_nodes;
        rm_table_set_num(t, COL_OVERHEAD, ov, "%+.2f%%", ov);
        rm_table_set_num(t, COL_COST, stats->sim.cost, "%s", "");
        rm_table_set_num(t, COL_PEAK, (double)peak, "%s", rm_cli_bytes(x, sizeof x, (double)peak));
        rm_table_set_text(t, COL_RECOMPUTED, "%d (%ldx)", nodes, stats->sim.recomputations);
        rm_table_set_num(t, COL_NODES, nodes, "%s", "");
        rm_table_set_num(t, COL_TIMES, (double)stats->sim.recomputations, "%s", "");
    } else {
        /* No schedule: "-" for people, missing for programs. */
        const int none[] = {COL_OVERHEAD, COL_COST, COL_PEAK, COL_RECOMPUTED, COL_NODES, COL_TIMES};
        for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) rm_table_set_num(t, none[i], NAN, "-");
    }
    rm_table_set_num(t, COL_TIME, stats->seconds, "%.2fs", stats->seconds);
    if (shown && stats->has_bound) {
        double lb = rm_overhead_pct(stats->lp_bound, cp->facts.base_cost);
        if (stats->bound_trivial)
            rm_table_set_num(t, COL_BOUND, lb, "trivial");
        else
            rm_table_set_num(t, COL_BOUND, lb, "%+.2f%%", lb);
        rm_table_set_text(t, COL_BOUND_KIND, "%s", stats->bound_trivial ? "trivial" : "lp");
        if (ok)
            rm_table_set_num(t, COL_GAP, 100.0 * stats->gap, "%.2f%%", 100.0 * stats->gap);
        else
            rm_table_set_num(t, COL_GAP, NAN, "%s", "");
    } else {
        rm_table_set_num(t, COL_BOUND, NAN, "%s", "");
        rm_table_set_num(t, COL_GAP, NAN, "%s", "");
    }
    return rm_table_add_row(t);
}

/* The table's start, and its stream's: NULL (said on stderr) when out of memory. */
static rm_table *plan_table_begin(const plan_args *a)
{
    rm_table *t = rm_table_create(plan_cols, NCOLS);
    if (t && a->fmt == RM_TABLE_TEXT) printf("\n");
    if (!t || rm_table_begin(t, stdout, a->fmt)) {
        rm_text_fprintf(stderr, "remat plan: writing the table failed\n");
        rm_table_free(t);
        return NULL;
    }
    return t;
}

static int plan_table_end(rm_table *t)
{
    int rc = rm_table_end(t);
    rm_table_free(t);
    if (rc) rm_text_fprintf(stderr, "remat plan: writing the table failed\n");
    return rc ? 2 : 0;
}

static int plan_one(const plan_args *a, rm_cli_problem *cp, const rm_strategy_info *st)
{
    rm_problem *p = cp->p;
    rm_strategy_options o;
    rm_cli_progress pr;
    set_solver_options(&o, &pr, a, cp, st->name);
    /* The user waits for the whole command: its time limit counts from the
     * moment it began reading the problem (docs/reliability.md, "Time
     * limits"). With --strategy all each strategy counts from its start. */
    if (a->time_limit_s > 0) o.deadline = a->started + a->time_limit_s;
    if (st->solve_opt && !a->quiet) {
        if (a->time_limit_s > 0)
            rm_text_fprintf(stderr, "remat plan: solving with %s (time limit %g s) ...\n", st->name, a->time_limit_s);
        else
            rm_text_fprintf(stderr, "remat plan: solving with %s (no time limit) ...\n", st->name);
    }
    rm_schedule *s = NULL;
    rm_strategy_stats stats;
    rm_schedule_report rep;
    rm_err e = {RM_OK, ""};
    /* The judge's replay is the report everything below prints and draws;
     * the text shows the arena plan too. */
    int rc = rm_strategy_run_report(&s, &stats, &rep, a->fmt == RM_TABLE_TEXT ? RM_REPORT_ARENA_SHOWN : 0, NULL, st, p,
                                    &o, &e);
    if (rc) {
        if (rc == RM_ERR_INFEASIBLE) {
            rm_text_fprintf(stderr, "remat plan: %s found no schedule within the budget (%s after %.2f s): %s\n",
                            st->name, rm_status_name(stats.status), stats.seconds, e.msg);
            return 1;
        }
        if (stats.status == RM_STATUS_NOT_APPLICABLE)
            rm_text_fprintf(stderr, "remat plan: %s does not apply: %s\n", st->name, e.msg);
        else
            rm_text_fprintf(stderr, "remat plan: %s failed: %s\n", st->name, e.msg);
        return 2;
    }
    char title[400];
    figure_title(title, sizeof title, cp, st->name, stats.sim.cost);
    if (a->fmt != RM_TABLE_TEXT) {
        /* One row of the comparison table, then the files. */
        rm_table *t = plan_table_begin(a);
        if (!t)
            rc = 2;
        else if (add_strategy_row(t, cp, st, rc, &stats, &rep))
            rc = 2;
        if (t && plan_table_end(t)) rc = 2;
    } else {
        print_summary(p, cp, st, &stats, &rep);
        rm_cli_shown sh; /* R and S in the schedule's order */
        if (p->n <= TEXT_MATRIX_MAX && !(rc = rm_cli_shown_of(&sh, p, s, &rep, 0, &e))) {
            print_matrices(sh.p, sh.s, sh.rep);
            rm_cli_shown_free(&sh);
        } else if (rc) {
            rm_text_fprintf(stderr, "remat plan: %s\n", e.msg);
            rc = 2;
        } else
            printf("\n(the R and S matrices are printed for up to %d nodes; --svg draws them up to %d)\n",
                   TEXT_MATRIX_MAX, RM_FIGURE_RS_MAX_NODES);
        print_timeline(p, &rep);
        printf("\n");
    }
    if (!rc) rc = write_outputs(a, p, s, &rep, "", title);
    rm_schedule_report_free(&rep);
    rm_schedule_free(s);
    return rc;
}

/* Who else reached the cheapest cost: a heuristic listed first is not
 * "the" answer when eight others tie with it and the MILP proves the cost
 * optimal, and the line should say so. */
typedef struct plan_cheapest {
    int ties;           /* other strategies at exactly the cheapest cost */
    const char *prover; /* the first of them whose status is OPTIMAL, or NULL */
    char taken[512];    /* "lp_round: ogc, milp: ogc": strategies whose answer is another's schedule */
} plan_cheapest;

/* What --strategy all says and writes after its table: the cheapest
 * strategy (list[best_k], its schedule best costing best_cost; best_k < 0:
 * none fits; ch: who ties with it), its schedule file and figures, and with
 * --svg the comparison of every strategy's memory (fig, count entries; NULL
 * without --svg). */
static int plan_all_outputs(const plan_args *a, const rm_cli_problem *cp, const rm_strategy_info *list, int best_k,
                            const plan_cheapest *ch, const rm_schedule *best, const rm_schedule_report *best_r,
                            double best_cost, const rm_figure_entry *fig, int count)
{
    rm_problem *p = cp->p;
    char x[32], title[400];
    if (a->fmt == RM_TABLE_TEXT)
        printf("\noverhead: extra compute over checkpoint-all (every node once, %s); peak: fixed + activations;\n"
               "recomputed: nodes computed more than once (total recomputations); LP bound: the LP relaxation (on\n"
               "coarsened graphs, a relaxed LP of the whole graph), a proved floor on any schedule's overhead in\n"
               "the problem's order; trivial: the floor is every node once (+0%%), where no LP was solved or its\n"
               "bound does not hold (the anneal may change the order); gap: (cost - proved floor) / cost, the most\n"
               "the cost can be above the optimum, as a share of the cost; the floor is the LP bound, or for milp\n"
               "what branch and bound proved (0.00%%: optimal).\n",
               rm_cli_cost(x, sizeof x, cp->facts.base_cost, cp->flops));
    if (a->fmt == RM_TABLE_TEXT && ch->taken[0])
        printf("the schedule another strategy found (a solver's incumbent, where it found nothing cheaper; best's\n"
               "winner): %s.\n",
               ch->taken);
    if (best_k >= 0) {
        fprintf(a->info, "cheapest: %s", list[best_k].name);
        if (ch->ties) fprintf(a->info, ", tied with %d other%s", ch->ties, ch->ties == 1 ? "" : "s");
        if (ch->prover) fprintf(a->info, "; %s proves the cost optimal", ch->prover);
        fprintf(a->info, "\n");
        char what[96];
        snprintf(what, sizeof what, " (the cheapest: %s)", list[best_k].name);
        figure_title(title, sizeof title, cp, list[best_k].name, best_cost);
        int rc = write_outputs(a, p, best, best_r, what, title);
        if (rc) return rc;
    }
    if (fig) {
        /* Drawn even when nothing fits: the figure then says so. */
        char path[4096];
        snprintf(path, sizeof path, "%s-compare.svg", a->svg);
        figure_title(title, sizeof title, cp, NULL, 0);
        size_t o = strlen(title);
        snprintf(title + o, sizeof title - o, ": every strategy's memory");
        rm_err e = {RM_OK, ""};
        if (rm_figure_compare_svg(path, p, &cp->facts, fig, count, title, &e)) {
            rm_text_fprintf(stderr, "remat plan: %s\n", e.msg);
            return 1;
        }
        int nfit = 0;
        for (int k = 0; k < count; k++) nfit += fig[k].r != NULL;
        rm_text_fprintf(a->info, "comparison   %s (%d of %d strategies found a schedule)\n", path, nfit, count);
    }
    if (best_k < 0) {
        rm_text_fprintf(stderr, "remat plan: no strategy found a schedule within the budget\n");
        return 1;
    }
    return 0;
}

static int plan_all(const plan_args *a, rm_cli_problem *cp)
{
    rm_problem *p = cp->p;
    int count;
    const rm_strategy_info *list = rm_strategy_list_all(&count);
    rm_schedule *best = NULL;
    rm_schedule_report best_r;
    memset(&best_r, 0, sizeof best_r);
    int best_k = -1;
    double best_cost = 0;
    plan_cheapest cheapest = {0, NULL, ""};
    /* With --svg every answer is kept, with its report, for the comparison
     * figure (and the cheapest is kept[best_k]); without, only the cheapest
     * so far. */
    rm_schedule **kept = NULL;
    rm_schedule_report *reps = NULL;
    rm_figure_entry *fig = NULL;
    if (a->svg && (!(kept = calloc((size_t)count, sizeof *kept)) || !(reps = calloc((size_t)count, sizeof *reps)) ||
                   !(fig = calloc((size_t)count, sizeof *fig)))) {
        free(kept);
        free(reps);
        rm_text_fprintf(stderr, "remat plan: out of memory\n");
        return 2;
    }
    rm_table *t = plan_table_begin(a);
    if (!t) {
        free(kept);
        free(reps);
        free(fig);
        return 2;
    }
    int failed = 0, skipped = 0;
    for (int k = 0; k < count; k++) {
        const rm_strategy_info *st = &list[k];
        rm_strategy_options o;
        rm_cli_progress pr;
        set_solver_options(&o, &pr, a, cp, st->name);
        if (!a->quiet) {
            rm_text_fprintf(stderr, "remat plan: [%d/%d] %s", k + 1, count, st->name);
            if (st->solve_opt && a->time_limit_s > 0) rm_text_fprintf(stderr, " (time limit %g s)", a->time_limit_s);
            rm_text_fprintf(stderr, " ...\n");
        }
        rm_schedule *s = NULL;
        rm_strategy_stats stats;
        rm_schedule_report rep;
        rm_err e = {RM_OK, ""};
        int rc = rm_strategy_run_report(&s, &stats, &rep, 0, NULL, st, p, &o, &e);
        int na = stats.status == RM_STATUS_NOT_APPLICABLE; /* said once, after the table */
        if (rc && rc != RM_ERR_INFEASIBLE && !na)
            rm_text_fprintf(stderr, "remat plan: %s failed: %s\n", st->name, e.msg);
        skipped += na;
        if (add_strategy_row(t, cp, st, rc, &stats, &rep)) failed = 1;
        int better = !rc && (best_k < 0 || stats.sim.cost < best_cost);
        if (better) {
            best_cost = stats.sim.cost;
            best_k = k;
            cheapest.ties = 0;
            cheapest.prover = NULL;
        } else if (!rc && stats.sim.cost == best_cost) {
            cheapest.ties++;
        }
        if (!rc && stats.sim.cost == best_cost && stats.status == RM_STATUS_OPTIMAL && !cheapest.prover)
            cheapest.prover = st->name;
        if (!rc && stats.source && strcmp(stats.source, st->name)) {
            size_t used = strlen(cheapest.taken);
            snprintf(cheapest.taken + used, sizeof cheapest.taken - used, "%s%s: %s", used ? ", " : "", st->name,
                     stats.source);
        }
        if (fig) {
            kept[k] = s;
            reps[k] = rep;
            fig[k] = (rm_figure_entry){st->name, rc ? NULL : &reps[k],
                                       rc == RM_ERR_INFEASIBLE || na ? rm_status_name(stats.status)
                                       : rc                          ? "error"
                                                                     : NULL};
        } else if (better) {
            rm_schedule_free(best);
            rm_schedule_report_free(&best_r);
            best = s;
            best_r = rep;
        } else {
            rm_schedule_free(s);
            rm_schedule_report_free(&rep);
        }
    }
    const rm_schedule_report *br = &best_r;
    if (kept && best_k >= 0) best = kept[best_k], br = &reps[best_k];
    int rc = plan_table_end(t) || failed ? 2 : 0;
    if (!rc && skipped && a->fmt == RM_TABLE_TEXT)
        printf("\nn/a: %d heuristics need a training graph's forward/backward split, and this problem has no\n"
               "backward nodes; dtr, anneal, milp and best schedule any DAG.\n",
               skipped);
    if (!rc) rc = plan_all_outputs(a, cp, list, best_k, &cheapest, best, br, best_cost, fig, count);
    if (kept) {
        for (int k = 0; k < count; k++) {
            rm_schedule_free(kept[k]);
            rm_schedule_report_free(&reps[k]);
        }
    } else {
        rm_schedule_free(best);
        rm_schedule_report_free(&best_r);
    }
    free(kept);
    free(reps);
    free(fig);
    return rc;
}

static int plan_check(const plan_args *a, rm_cli_problem *cp)
{
    rm_problem *p = cp->p;
    rm_schedule *s = NULL;
    rm_err e = {RM_OK, ""};
    if (rm_schedule_read(&s, p, a->check, &e)) {
        if (e.code == RM_ERR_IO) /* not read at all: nothing was judged */
            rm_text_fprintf(stderr, "remat plan: --check: %s\n", e.msg);
        else
            rm_text_fprintf(stderr, "remat plan: %s is not a valid schedule for %s: %s\n", a->check, cp->what, e.msg);
        return e.code == RM_ERR_NOMEM ? 2 : 1;
    }
    rm_schedule_report rep;
    if (rm_schedule_report_of(&rep, p, s, NULL, 0, &e)) {
        rm_text_fprintf(stderr, "remat plan: %s: %s\n", a->check, e.msg);
        rm_schedule_free(s);
        return 1;
    }
    const rm_sim_result r = rep.sim;
    char x[32], y[32], z[32];
    printf("check        %s: a valid schedule for %s (%d stages)\n", a->check, cp->what, p->n);
    printf("cost         %s = checkpoint-all %+.2f%% (%ld recomputation%s)\n",
           rm_cli_cost(x, sizeof x, r.cost, cp->flops), rm_overhead_pct(r.cost, cp->facts.base_cost), r.recomputations,
           r.recomputations == 1 ? "" : "s");
    printf("peak         %s = fixed + %s activations\n",
           rm_cli_bytes(x, sizeof x, (double)(p->fixed_bytes + r.peak_bytes)),
           rm_cli_bytes(y, sizeof y, (double)r.peak_bytes));
    int rc = 0;
    if (p->budget) {
        if (rm_sim_fits(p, &r)) {
            printf("budget       fits %s\n", rm_cli_bytes(z, sizeof z, (double)p->budget));
        } else {
            rm_text_fprintf(stderr, "remat plan: %s does not fit the budget: peak %s > %s\n", a->check, x,
                            rm_cli_bytes(z, sizeof z, (double)p->budget));
            rc = 1;
        }
    }
    if (!rc) {
        char title[400];
        figure_title(title, sizeof title, cp, NULL, r.cost);
        rc = write_outputs(a, p, s, &rep, "", title);
    }
    rm_schedule_report_free(&rep);
    rm_schedule_free(s);
    return rc;
}

static int plan_run(int argc, char **argv)
{
    plan_args a;
    memset(&a, 0, sizeof a);
    a.time_limit_s = 60;
    const rm_cli_opt opts[] = {
        RM_CLI_FLAG("--quiet", "-q", &a.quiet),
        RM_CLI_MODEL_OPTIONS(&a.mdl),
        RM_CLI_VALUE("--batch", &a.batch),
        RM_CLI_VALUE("--problem", &a.problem),
        RM_CLI_VALUE("--budget", &a.budget),
        RM_CLI_VALUE("--strategy", &a.strategy),
        RM_CLI_VALUE("--time-limit", &a.time_limit),
        RM_CLI_VALUE("--node-limit", &a.node_limit),
        RM_CLI_VALUE("--milp-engine", &a.milp_engine),
        RM_CLI_VALUE("--moves", &a.moves),
        RM_CLI_VALUE("--seed", &a.seed),
        RM_CLI_FLAG("--keep-order", NULL, &a.keep_order),
        RM_CLI_VALUE("--out", &a.out),
        RM_CLI_VALUE("--svg", &a.svg),
        RM_CLI_VALUE("--check", &a.check),
        RM_CLI_VALUE("--costs", &a.costs),
        RM_CLI_VALUE("--format", &a.format),
    };
    if (rm_cli_parse_options(opts, sizeof opts / sizeof opts[0], argc, argv, "plan", PLAN_USAGE) ||
        rm_cli_model_check(&a.mdl, "plan", PLAN_USAGE))
        return 1;
    a.model = a.mdl.path;
    /* Everything that can be judged without loading anything is, so a typo
     * costs nothing. */
    if (a.model && a.problem) return usage_error("give --model or --problem, not both");
    if (!a.model && !a.problem) return usage_error("--model FILE --batch N or --problem FILE is required");
    if (a.model && !a.batch) return usage_error("--batch N is required with --model");
    if (a.problem && a.batch) return usage_error("--batch goes with --model, not --problem");
    char why[256];
    if (a.batch && rm_cli_parse_batch(&a.batch_n, a.batch, why, sizeof why)) return usage_error("%s", why);
    if (a.budget) {
        if (rm_cli_parse_budget(&a.b, a.budget, why, sizeof why)) return usage_error("--budget: %s", why);
        a.have_budget = 1;
    }
    if (rm_cli_parse_solver_limits(&a.time_limit_s, &a.node_limit_n, a.time_limit, a.node_limit, why, sizeof why) ||
        rm_cli_parse_milp_engine(&a.engine, a.milp_engine, why, sizeof why))
        return usage_error("%s", why);
    if (a.moves && rm_cli_parse_long(&a.moves_n, a.moves, 1, 1000000000))
        return usage_error("--moves must be a whole number from 1 to 10^9, got '%s'", a.moves);
    if (a.seed && rm_cli_parse_long(&a.seed_n, a.seed, 0, 2147483647))
        return usage_error("--seed must be a whole number from 0 to 2^31-1, got '%s'", a.seed);
    if (a.format && (rm_table_format_parse(&a.fmt, a.format) || a.fmt == RM_TABLE_MD))
        return usage_error("--format must be text, csv or json, got '%s'", a.format);
    a.info = a.fmt == RM_TABLE_TEXT ? stdout : stderr;
    const rm_strategy_info *st = NULL;
    if (a.check) {
        if (a.strategy || a.out || a.time_limit || a.node_limit || a.milp_engine || a.format || a.moves || a.seed ||
            a.keep_order)
            return usage_error("--check takes the problem, --budget and --svg only");
    } else {
        if (!a.strategy) a.strategy = "best";
        char what[512];
        if (strcmp(a.strategy, "all") && !(st = rm_strategy_find(a.strategy)))
            return usage_error("%s", rm_cli_unknown_strategy(what, sizeof what, a.strategy, 1));
        if (!a.have_budget && !a.problem) return usage_error("--budget B is required");
    }

    /* --svg is the start of the figures' names, and they are created beside
     * it: a prefix that is a device or FIFO (--svg /dev/full) would put
     * regular files into /dev. Said before anything is written. */
    struct stat svg_st;
    if (a.svg && stat(a.svg, &svg_st) == 0 && !S_ISREG(svg_st.st_mode) && !S_ISDIR(svg_st.st_mode)) {
        rm_text_fprintf(stderr,
                        "remat plan: --svg %s: a device or FIFO, not a prefix: --svg PREFIX writes PREFIX-rs.svg and "
                        "PREFIX-memory.svg beside it (e.g. --svg fig)\n",
                        a.svg);
        return 1;
    }

    /* Files written only after the solve: one that cannot be written fails now. */
    {
        rm_err e = {RM_OK, ""};
        char rs[4096], mem[4096], cmp[4096];
        if (a.svg) {
            snprintf(rs, sizeof rs, "%s-rs.svg", a.svg);
            snprintf(mem, sizeof mem, "%s-memory.svg", a.svg);
            snprintf(cmp, sizeof cmp, "%s-compare.svg", a.svg);
        }
        int all = !a.check && !st;
        if ((a.out && rm_atomic_probe(a.out, &e)) ||
            (a.svg && (rm_atomic_probe(rs, &e) || rm_atomic_probe(mem, &e) || (all && rm_atomic_probe(cmp, &e))))) {
            rm_text_fprintf(stderr, "remat plan: %s\n", e.msg);
            return 1;
        }
    }

    rm_cli_problem cp;
    a.started = rm_now();
    int rc = rm_cli_problem_load_costs(&cp, "plan", &a.mdl, a.batch_n, a.problem, a.costs);
    if (rc) return rc;
    if (!a.have_budget && cp.file_budget) {
        a.b = rm_cli_budget_of(cp.file_budget);
        a.have_budget = 1;
    }
    if (!a.have_budget && !a.check) {
        rm_cli_problem_free(&cp);
        return usage_error("--budget B is required (the problem file sets none)");
    }
    if (a.have_budget) {
        if ((rc = rm_cli_problem_set_budget(&cp, "plan", &a.b))) {
            if (a.check) {
                /* A schedule can still be checked for validity; it just cannot fit. */
                rc = 0;
            } else {
                rm_cli_problem_free(&cp);
                return rc;
            }
        }
    } else {
        cp.p->budget = 0;
    }
    if (a.check)
        rc = plan_check(&a, &cp);
    else {
        if (a.fmt == RM_TABLE_TEXT) {
            rm_cli_problem_print(&cp, a.have_budget ? &a.b : NULL);
            if (cp.verdict == RM_BUDGET_FITS)
                printf("             the no-remat peak fits: nothing needs recomputing\n");
        }
        rc = st ? plan_one(&a, &cp, st) : plan_all(&a, &cp);
    }
    rm_cli_problem_free(&cp);
    return rc;
}

const rm_command rm_cmd_plan = {
    .name = "plan",
    .summary = "solve a rematerialization schedule for a budget and show it (R/S matrices, memory timeline)",
    .usage = PLAN_USAGE,
    .run = plan_run,
};
