/* remat_bench_cbc's markdown: a row per instance, written as soon as the
 * instance is done, and the totals against the goals. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_bench.h"
#include "cli_util.h"

void cbc_table_start(const char *title, const char *what)
{
    emit("\n## %s\n\n%s\n\n"
         "| instance | nodes | cols | budget | cheapest heuristic | remat status | remat cost | remat bound | gap | "
         "time (s) | to proof (s) | CBC status | CBC cost | CBC bound | CBC time (s) | ratio | check |\n"
         "|---|--:|--:|--:|--:|---|--:|--:|--:|--:|--:|---|--:|--:|--:|--:|---|\n",
         title, what);
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

static void remat_cells(char *buf, size_t len, const cbc_row *row, int flops)
{
    const remat_side *r = &row->r;
    char cost[48] = "-", bound[48] = "-", gap[16] = "-", proof[16] = "-";
    if (r->rc == 0) {
        fmt_cost(cost, sizeof cost, r->cost, row->base_cost, flops);
        fmt_cost(bound, sizeof bound, r->bound, row->base_cost, flops);
        if (r->bound_trivial && !r->proved) strncat(bound, " trivial", sizeof bound - strlen(bound) - 1);
        snprintf(gap, sizeof gap, "%.2f%%", 100 * r->gap);
    }
    if (r->proved) snprintf(proof, sizeof proof, "%.2f", r->seconds);
    snprintf(buf, len, "%s | %s | %s | %s | %.2f | %s", r->status, cost, bound, gap, r->seconds, proof);
}

static void cbc_cells(char *buf, size_t len, const cbc_row *row, int flops)
{
    const cbc_side *c = &row->c;
    char cost[48] = "-", bound[48] = "-", secs[16] = "-";
    if (c->has_cost) fmt_cost(cost, sizeof cost, c->cost, row->base_cost, flops);
    if (c->has_bound) fmt_cost(bound, sizeof bound, c->bound, row->base_cost, flops);
    if (c->ran) snprintf(secs, sizeof secs, "%.2f", c->seconds);
    snprintf(buf, len, "%s | %s | %s | %s", c->status, cost, bound, secs);
}

/* ---- csv / json: the same rows, every value in its own column ---- */

enum {
    C_FAMILY,
    C_INSTANCE,
    C_NODES,
    C_COLS,
    C_BUDGET,
    C_BASE,
    C_HEUR,
    C_HEUR_COST,
    C_R_STATUS,
    C_R_COST,
    C_R_BOUND,
    C_R_BOUND_KIND,
    C_R_GAP,
    C_R_SECONDS,
    C_R_PROOF,
    C_C_STATUS,
    C_C_COST,
    C_C_BOUND,
    C_C_SECONDS,
    C_RATIO,
    C_CHECK,
    C_NCOLS
};
#define DATA_COL(key)                                                                                                  \
    {                                                                                                                  \
        key, key, RM_TABLE_LEFT, 0, RM_TABLE_BOTH                                                                      \
    }
static const rm_table_col data_cols[C_NCOLS] = {
    [C_FAMILY] = DATA_COL("family"),
    [C_INSTANCE] = DATA_COL("instance"),
    [C_NODES] = DATA_COL("nodes"),
    [C_COLS] = DATA_COL("cols"),
    [C_BUDGET] = DATA_COL("budget_bytes"),
    [C_BASE] = DATA_COL("checkpoint_all_cost"),
    [C_HEUR] = DATA_COL("heuristic"),
    [C_HEUR_COST] = DATA_COL("heuristic_cost"),
    [C_R_STATUS] = DATA_COL("remat_status"),
    [C_R_COST] = DATA_COL("remat_cost"),
    [C_R_BOUND] = DATA_COL("remat_bound"),
    [C_R_BOUND_KIND] = DATA_COL("remat_bound_kind"),
    [C_R_GAP] = DATA_COL("remat_gap_pct"),
    [C_R_SECONDS] = DATA_COL("remat_seconds"),
    [C_R_PROOF] = DATA_COL("remat_proof_seconds"),
    [C_C_STATUS] = DATA_COL("cbc_status"),
    [C_C_COST] = DATA_COL("cbc_cost"),
    [C_C_BOUND] = DATA_COL("cbc_bound"),
    [C_C_SECONDS] = DATA_COL("cbc_seconds"),
    [C_RATIO] = DATA_COL("ratio"),
    [C_CHECK] = DATA_COL("check"),
};
#undef DATA_COL

int cbc_data_begin(bench_table *bt, rm_table_format fmt)
{
    return bench_table_begin(bt, data_cols, C_NCOLS, fmt);
}

/* The markdown row's facts as values (costs in the instance's unit; the
 * md table's overheads are each cost over checkpoint_all_cost). */
static void data_row(bench_table *bt, const cbc_row *row)
{
    rm_table *t = bt->t;
    const remat_side *r = &row->r;
    const cbc_side *c = &row->c;
    rm_table_set_text(t, C_FAMILY, "%s", row->family);
    rm_table_set_text(t, C_INSTANCE, "%s", row->name);
    rm_table_set_num(t, C_NODES, row->nodes, "%d", row->nodes);
    rm_table_set_num(t, C_COLS, row->ncols, "%d", row->ncols);
    rm_table_set_num(t, C_BUDGET, (double)row->budget, "%zu", row->budget);
    rm_table_set_num(t, C_BASE, row->base_cost, "%g", row->base_cost);
    if (row->has_heur) rm_table_set_text(t, C_HEUR, "%s", row->heur_name);
    rm_table_set_num(t, C_HEUR_COST, row->has_heur ? row->heur_cost : NAN, "%s", "");
    rm_table_set_text(t, C_R_STATUS, "%s", r->status ? r->status : "");
    rm_table_set_num(t, C_R_COST, r->rc == 0 ? r->cost : NAN, "%s", "");
    rm_table_set_num(t, C_R_BOUND, r->rc == 0 ? r->bound : NAN, "%s", "");
    if (r->rc == 0) rm_table_set_text(t, C_R_BOUND_KIND, "%s", r->bound_trivial ? "trivial" : "lp");
    rm_table_set_num(t, C_R_GAP, r->rc == 0 ? 100 * r->gap : NAN, "%s", "");
    rm_table_set_num(t, C_R_SECONDS, r->seconds, "%s", "");
    rm_table_set_num(t, C_R_PROOF, r->proved ? r->seconds : NAN, "%s", "");
    rm_table_set_text(t, C_C_STATUS, "%s", c->status);
    rm_table_set_num(t, C_C_COST, c->has_cost ? c->cost : NAN, "%s", "");
    rm_table_set_num(t, C_C_BOUND, c->has_bound ? c->bound : NAN, "%s", "");
    rm_table_set_num(t, C_C_SECONDS, c->ran ? c->seconds : NAN, "%s", "");
    int both = r->proved && c->proved && c->seconds > 0;
    rm_table_set_num(t, C_RATIO, both ? r->seconds / c->seconds : NAN, "%s", "");
    int above = row->has_heur && r->rc == 0 && r->cost > row->heur_cost;
    rm_table_set_text(t, C_CHECK, "%s%s%s", row->disagree[0] ? "DISAGREE: " : "", row->disagree,
                      above              ? " above the heuristic"
                      : row->disagree[0] ? ""
                                         : "ok");
    if (bench_table_row(bt)) fprintf(stderr, "remat_bench_cbc: writing the table failed\n");
}

void cbc_table_row(const cbc_cfg *cfg, const cbc_row *row, int flops)
{
    if (cfg->data) {
        data_row(cfg->data, row);
        return;
    }
    char b[32], heur[48] = "none fits", rs[256], cs[256], ratio[16] = "-", check[240];
    if (row->has_heur) fmt_cost(heur, sizeof heur, row->heur_cost, row->base_cost, flops);
    remat_cells(rs, sizeof rs, row, flops);
    cbc_cells(cs, sizeof cs, row, flops);
    if (row->r.proved && row->c.proved && row->c.seconds > 0)
        snprintf(ratio, sizeof ratio, "%.2f", row->r.seconds / row->c.seconds);
    int above = row->has_heur && row->r.rc == 0 && row->r.cost > row->heur_cost;
    /* "ok" alone: CBC's solution, when it had one, was simulated and fits. */
    const char *fine = row->c.has_cost && !row->c.checked ? "ok (CBC's S not judged)" : "ok";
    snprintf(check, sizeof check, "%s%s%s", row->disagree[0] ? "**DISAGREE**: " : "", row->disagree,
             above              ? " **above the heuristic**"
             : row->disagree[0] ? ""
                                : fine);
    emit("| %s | %d | %d | %s | %s | %s | %s | %s | %s |\n", row->name, row->nodes, row->ncols,
         flops ? rm_cli_bytes(b, sizeof b, (double)row->budget) : (snprintf(b, sizeof b, "%zu", row->budget), b), heur,
         rs, cs, ratio, check);
    emit_flush();
}

/* ---- totals ---- */

int cbc_totals_add(cbc_totals *t, const cbc_row *row)
{
    t->instances++;
    t->cbc_proved += row->c.proved && row->c.seconds <= CBC_GOAL_SECONDS;
    t->cbc_skipped += !row->c.ran;
    t->remat_proved += row->r.proved;
    t->remat_within += row->r.rc == 0 && (row->r.proved || (!row->r.bound_trivial && row->r.gap <= CBC_GOAL_GAP));
    t->above_heur += row->has_heur && row->r.rc == 0 && row->r.cost > row->heur_cost;
    t->disagreements += row->disagree[0] != '\0';
    if (!(row->r.proved && row->c.proved && row->c.seconds > 0)) return 0;
    if (t->nratios == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        double *v = realloc(t->ratios, (size_t)cap * sizeof *v);
        if (!v) return -1;
        t->ratios = v;
        t->cap = cap;
    }
    double q = row->r.seconds / row->c.seconds;
    t->ratios[t->nratios++] = q;
    t->both++;
    t->ratio_le1 += q <= 1.0;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void ratio_cells(char *buf, size_t len, cbc_totals *t)
{
    if (!t->nratios) {
        snprintf(buf, len, "- | -");
        return;
    }
    qsort(t->ratios, (size_t)t->nratios, sizeof *t->ratios, cmp_double);
    int n = t->nratios;
    double med = n % 2 ? t->ratios[n / 2] : 0.5 * (t->ratios[n / 2 - 1] + t->ratios[n / 2]);
    snprintf(buf, len, "%.2f | %.2f", med, t->ratios[n - 1]);
}

void cbc_totals_print(const cbc_totals tt[CBC_NFAM])
{
    static const char *fam[CBC_NFAM] = {"models", "linear", "random", "all"};
    emit("\n## Totals\n\nAgainst the issue's goals (%g s whatever --time-limit is). Within 1%%: proved optimal, "
         "or a gap of at most 1%% to a real (LP, not trivial) bound. Ratio: remat's time to proof over CBC's, "
         "where both proved.\n\n"
         "| family | instances | CBC proved in %g s | CBC not run | remat proved | remat within 1%% | both proved | "
         "median ratio | max ratio | ratio <= 1 | remat above the heuristic | disagreements |\n"
         "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
         CBC_GOAL_SECONDS, CBC_GOAL_SECONDS);
    for (int f = 0; f < CBC_NFAM; f++) {
        cbc_totals t = tt[f];
        if (!t.instances) continue;
        char rat[64];
        ratio_cells(rat, sizeof rat, &t);
        emit("| %s | %d | %d | %d | %d | %d | %d | %s | %d | %d | %d |\n", fam[f], t.instances, t.cbc_proved,
             t.cbc_skipped, t.remat_proved, t.remat_within, t.both, rat, t.ratio_le1, t.above_heur, t.disagreements);
    }
    emit_flush();
}

void cbc_totals_free(cbc_totals *t)
{
    free(t->ratios);
    t->ratios = NULL;
    t->nratios = t->cap = 0;
}
