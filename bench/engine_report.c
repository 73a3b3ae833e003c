/* remat_bench_engine's markdown: a row per instance, written as soon as the
 * instance is done (two cells per engine: its answer, its time), and the
 * totals per engine with the goals under them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "engine_bench.h"
#include "milp_engine.h"

static int asked(const engine_cfg *c, int k)
{
    return (c->engines >> k) & 1u;
}

void engine_table_start(const engine_cfg *c, const char *title, const char *what)
{
    if (c->data) return;
    emit("\n## %s\n\n%s\n\n| instance | nodes | cols | budget | cheapest heuristic |", title, what);
    for (int k = 0; k < E_N; k++)
        if (asked(c, k)) emit(" %s | s |", engine_names[k]);
    emit(" check |\n|---|--:|--:|--:|--:|");
    for (int k = 0; k < E_N; k++)
        if (asked(c, k)) emit("---|--:|");
    emit("---|\n");
    emit_flush();
}

/* A cost as the table shows it: the overhead over checkpoint-all for FLOP
 * costs (the counts themselves say nothing), the cost and the overhead
 * for unit and random costs. */
static const char *fmt_cost(char *buf, size_t len, double cost, double base, int flops)
{
    double over = rm_overhead_pct(cost, base);
    if (flops)
        snprintf(buf, len, "%+.2f%%", over);
    else
        snprintf(buf, len, "%.6g (%+.1f%%)", cost, over);
    return buf;
}

static double gap_of(const engine_side *s)
{
    return s->proved ? 0 : s->cost > 0 ? fmax(0, (s->cost - s->bound) / s->cost) : 0;
}

/* The time ratio to lp_solve's, where both proved: what the ratios compare. */
static int ratio_to_lp(double *q, const engine_row *row, int k)
{
    const engine_side *lp = &row->e[E_LPSOLVE], *s = &row->e[k];
    if (k == E_LPSOLVE || !lp->proved || !s->proved || lp->seconds <= 0) return 0;
    *q = s->seconds / lp->seconds;
    return 1;
}

/* Answer cell: "**optimal** COST", "COST, gap G%", "infeasible (proved)",
 * or the status when there is no answer. */
static void answer_cell(char *buf, size_t len, const engine_side *s, const engine_row *row, int flops)
{
    char cost[48];
    if (s->infeasible) {
        snprintf(buf, len, "infeasible (proved)");
    } else if (!s->has_cost) {
        snprintf(buf, len, "%s", s->status);
    } else if (s->proved) {
        snprintf(buf, len, "**optimal** %s", fmt_cost(cost, sizeof cost, s->cost, row->base_cost, flops));
    } else if (!s->has_bound) {
        snprintf(buf, len, "%s, %s, no bound", s->status, fmt_cost(cost, sizeof cost, s->cost, row->base_cost, flops));
    } else {
        snprintf(buf, len, "%s, gap %.2f%%%s", fmt_cost(cost, sizeof cost, s->cost, row->base_cost, flops),
                 100 * gap_of(s), s->bound_trivial ? " (trivial bound)" : "");
    }
}

static void time_cell(char *buf, size_t len, const engine_row *row, int k)
{
    const engine_side *s = &row->e[k];
    double q;
    if (!s->ran)
        snprintf(buf, len, "-");
    else if (ratio_to_lp(&q, row, k))
        snprintf(buf, len, "%.2f (%.2fx)", s->seconds, q);
    else
        snprintf(buf, len, "%.2f", s->seconds);
}

/* ---- csv / json: the same rows, every value in its own column ---- */

enum { C_FAMILY, C_INSTANCE, C_NODES, C_COLS, C_BUDGET, C_BASE, C_HEUR, C_HEUR_COST, C_FIXED };
/* Per engine: status, cost, bound, bound kind, seconds, proof seconds. */
enum { P_STATUS, P_COST, P_BOUND, P_KIND, P_SECONDS, P_PROOF, P_N };
#define C_CHECK (C_FIXED + E_N * P_N)
#define C_NCOLS (C_CHECK + 1)

static char col_keys[C_NCOLS][40];
static rm_table_col data_cols[C_NCOLS];

int engine_data_begin(bench_table *bt, rm_table_format fmt)
{
    static const char *fixed[C_FIXED] = {
        "family", "instance", "nodes", "cols", "budget_bytes", "checkpoint_all_cost", "heuristic", "heuristic_cost"};
    static const char *per[P_N] = {"status", "cost", "bound", "bound_kind", "seconds", "proof_seconds"};
    for (int j = 0; j < C_NCOLS; j++) {
        if (j < C_FIXED)
            snprintf(col_keys[j], sizeof col_keys[j], "%s", fixed[j]);
        else if (j < C_CHECK)
            snprintf(col_keys[j], sizeof col_keys[j], "%s_%s", engine_keys[(j - C_FIXED) / P_N],
                     per[(j - C_FIXED) % P_N]);
        else
            snprintf(col_keys[j], sizeof col_keys[j], "check");
        data_cols[j] = (rm_table_col){col_keys[j], col_keys[j], RM_TABLE_LEFT, 0, RM_TABLE_BOTH};
    }
    return bench_table_begin(bt, data_cols, C_NCOLS, fmt);
}

/* The markdown row's facts as values (costs in the instance's unit; the
 * md table's overheads are each cost over checkpoint_all_cost). */
static void data_row(bench_table *bt, const engine_row *row)
{
    rm_table *t = bt->t;
    rm_table_set_text(t, C_FAMILY, "%s", row->family);
    rm_table_set_text(t, C_INSTANCE, "%s", row->name);
    rm_table_set_num(t, C_NODES, row->nodes, "%d", row->nodes);
    rm_table_set_num(t, C_COLS, row->ncols, "%d", row->ncols);
    rm_table_set_num(t, C_BUDGET, (double)row->budget, "%zu", row->budget);
    rm_table_set_num(t, C_BASE, row->base_cost, "%g", row->base_cost);
    if (row->has_heur) rm_table_set_text(t, C_HEUR, "%s", row->heur_name);
    rm_table_set_num(t, C_HEUR_COST, row->has_heur ? row->heur_cost : NAN, "%s", "");
    for (int k = 0; k < E_N; k++) {
        const engine_side *s = &row->e[k];
        int j = C_FIXED + k * P_N;
        rm_table_set_text(t, j + P_STATUS, "%s", s->status);
        rm_table_set_num(t, j + P_COST, s->has_cost ? s->cost : NAN, "%s", "");
        rm_table_set_num(t, j + P_BOUND, s->has_bound ? s->bound : NAN, "%s", "");
        if (s->has_bound) rm_table_set_text(t, j + P_KIND, "%s", s->bound_trivial ? "trivial" : "proved");
        rm_table_set_num(t, j + P_SECONDS, s->ran ? s->seconds : NAN, "%s", "");
        rm_table_set_num(t, j + P_PROOF, s->proved ? s->seconds : NAN, "%s", "");
    }
    rm_table_set_text(t, C_CHECK, "%s", row->disagree[0] ? row->disagree : "ok");
    if (bench_table_row(bt)) fprintf(stderr, "remat_bench_engine: writing the table failed\n");
}

static int above_heur(const engine_row *row, int k)
{
    return row->has_heur && row->e[k].has_cost && k != E_HIGHS && row->e[k].cost > row->heur_cost;
}

void engine_table_row(const engine_cfg *c, const engine_row *row, int flops)
{
    if (c->data) {
        data_row(c->data, row);
        return;
    }
    char b[32], heur[48] = "none fits", cols[16] = "-", cell[128], secs[32];
    if (row->has_heur) fmt_cost(heur, sizeof heur, row->heur_cost, row->base_cost, flops);
    if (row->ncols) snprintf(cols, sizeof cols, "%d", row->ncols);
    emit("| %s | %d | %s | %s | %s |", row->name, row->nodes, cols,
         flops ? rm_cli_bytes(b, sizeof b, (double)row->budget) : (snprintf(b, sizeof b, "%zu", row->budget), b), heur);
    int above = 0;
    for (int k = 0; k < E_N; k++) {
        if (!asked(c, k)) continue;
        answer_cell(cell, sizeof cell, &row->e[k], row, flops);
        time_cell(secs, sizeof secs, row, k);
        emit(" %s | %s |", cell, secs);
        above |= above_heur(row, k);
    }
    const engine_side *h = &row->e[E_HIGHS];
    /* "ok" alone: HiGHS's solution, when it had one, was simulated and fits. */
    const char *fine = h->has_cost && !h->checked ? "ok (HiGHS's S not judged)" : "ok";
    emit(" %s%s%s |\n", row->disagree[0] ? "**DISAGREE**: " : "", row->disagree,
         above              ? " **above the heuristic**"
         : row->disagree[0] ? ""
                            : fine);
    emit_flush();
}

/* ---- totals ---- */

static int push(double **v, int *n, int *cap, double q)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 64;
        double *w = realloc(*v, (size_t)c * sizeof *w);
        if (!w) return -1;
        *v = w;
        *cap = c;
    }
    (*v)[(*n)++] = q;
    return 0;
}

int engine_totals_add(engine_totals *t, const engine_row *row)
{
    t->instances++;
    t->disagreements += row->disagree[0] != '\0';
    for (int k = 0; k < E_N; k++) {
        const engine_side *s = &row->e[k];
        if (!s->ran) continue;
        t->ran[k]++;
        t->proved[k] += s->proved;
        t->proved_goal[k] += s->proved && s->seconds <= ENGINE_GOAL_SECONDS;
        t->within[k] += s->proved || (s->has_cost && s->has_bound && !s->bound_trivial && gap_of(s) <= ENGINE_GOAL_GAP);
        t->above_heur[k] += above_heur(row, k);
        double q;
        if (ratio_to_lp(&q, row, k) && push(&t->ratios[k], &t->nratios[k], &t->cap[k], q)) return -1;
    }
    const engine_side *cbc = &row->e[E_CBC], *best = &row->e[E_BEST];
    if (cbc->proved && cbc->seconds <= ENGINE_GOAL_SECONDS && best->ran) {
        t->cbc_goal++;
        if (best->proved) {
            t->best_too++;
            t->best_no_slower += best->seconds <= cbc->seconds;
            t->best_close += best->seconds <= 1.1 * cbc->seconds + 0.05;
            if (cbc->seconds > 0) t->best_worst = fmax(t->best_worst, best->seconds / cbc->seconds);
        }
    }
    if (row->e[E_AUTO].ran && (row->e[E_LPSOLVE].proved || row->e[E_CBC].proved)) {
        t->either++;
        t->auto_too += row->e[E_AUTO].proved;
    }
    const char *big[] = {"resnet50 ", "unet ", "mobilenet "};
    for (size_t j = 0; j < sizeof big / sizeof *big; j++)
        if (best->ran && !strncmp(row->name, big[j], strlen(big[j]))) {
            t->big++;
            int real = best->proved || (best->has_cost && best->has_bound && !best->bound_trivial);
            double g = real ? gap_of(best) : 1;
            t->big_within += best->seconds <= ENGINE_GOAL_SECONDS && g <= ENGINE_GOAL_GAP;
            t->big_worst_gap = fmax(t->big_worst_gap, g);
        }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void ratio_cells(char *buf, size_t len, double *v, int n)
{
    if (!n) {
        snprintf(buf, len, "- | -");
        return;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    double med = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    snprintf(buf, len, "%.2f | %.2f", med, v[n - 1]);
}

static const char *const fam_names[ENG_NFAM] = {"models", "linear", "random", "all"};

void engine_totals_print(const engine_cfg *c, engine_totals tt[ENG_NFAM])
{
    emit("\n## Totals\n\nPer engine. Proved: optimal (or infeasibility proved) within --time-limit; in %g s: the "
         "issue's goal. Within 1%%: proved, or a gap of at most 1%% to a real (not trivial) bound. Ratio: the "
         "engine's time to proof over lp_solve's, where both proved.\n\n"
         "| family | engine | instances | proved | proved in %g s | within 1%% | both proved | median ratio | max "
         "ratio | above the heuristic |\n|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n",
         ENGINE_GOAL_SECONDS, ENGINE_GOAL_SECONDS);
    for (int f = 0; f < ENG_NFAM; f++) {
        engine_totals *t = &tt[f];
        if (!t->instances) continue;
        for (int k = 0; k < E_N; k++) {
            if (!asked(c, k) || !t->ran[k]) continue;
            char rat[64] = "- | -", both[16] = "-";
            if (k != E_LPSOLVE) {
                ratio_cells(rat, sizeof rat, t->ratios[k], t->nratios[k]);
                snprintf(both, sizeof both, "%d", t->nratios[k]);
            }
            emit("| %s | %s | %d | %d | %d | %d | %s | %s | %d |\n", fam_names[f], engine_names[k], t->ran[k],
                 t->proved[k], t->proved_goal[k], t->within[k], both, rat, t->above_heur[k]);
        }
    }
    const engine_totals *a = &tt[ENG_ALL];
    emit("\nDisagreements between engines (a proof contradicted by another engine's answer): %d.\n\n"
         "Goals (issue 25):\n\n",
         a->disagreements);
    if (asked(c, E_CBC) && asked(c, E_BEST))
        emit("- `best` proves every instance that CBC alone proves within %g s, in no more time: CBC alone proved "
             "%d; `best` proved %d of them, %d in no more time, %d within 10%% + 0.05 s (the largest time ratio best / "
             "CBC: %.2f). %s.\n",
             ENGINE_GOAL_SECONDS, a->cbc_goal, a->best_too, a->best_no_slower, a->best_close, a->best_worst,
             a->best_too == a->cbc_goal && a->best_no_slower == a->cbc_goal ? "**Met**" : "**Not met**");
    else
        emit("- `best` against CBC alone: not measured (--engines left one out).\n");
    if (asked(c, E_LPSOLVE) && asked(c, E_CBC) && asked(c, E_AUTO))
        emit("- `auto` (%s) proves what either engine alone proves: %d of %d.\n",
             rm_milp_engine_resolve(RM_MILP_ENGINE_AUTO, RM_MILP_RACE_MIN_NODES, 0, NULL) == RM_MILP_ENGINE_BOTH
                 ? "the race on this machine's cores"
                 : "one engine here: CBC alone, or lp_solve below the race's size",
             a->auto_too, a->either);
    if (a->big && asked(c, E_BEST))
        emit("- On ResNet-50, U-Net and MobileNet at 90-60%% of the no-remat peak, `best` within 1%% of a real "
             "(not trivial) bound in %g s: %d of %d (the largest gap: %.2f%%; the bound is the one `best` "
             "reports).\n",
             ENGINE_GOAL_SECONDS, a->big_within, a->big, 100 * a->big_worst_gap);
    else
        emit("- On ResNet-50, U-Net and MobileNet at 90-60%% of the no-remat peak, `best` within 1%% of a real "
             "bound: not in this run (--models resnet50,unet,mobilenet).\n");
    emit("- U-Net max batch at least the paper's 3.81x: not measured here (bench/maxbatch_paper.sh).\n");
    emit_flush();
}

void engine_totals_free(engine_totals *t)
{
    for (int k = 0; k < E_N; k++) {
        free(t->ratios[k]);
        t->ratios[k] = NULL;
        t->nratios[k] = t->cap[k] = 0;
    }
}
