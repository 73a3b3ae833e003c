/* Table 1 of remat_bench_sched, the report: each model's overhead matrix
 * and detail table, and each budget judged against the goal (the
 * MILP or the LP rounding within GOAL_GAP of the LP bound, or proved
 * optimal, in under GOAL_SECONDS), with the reason when it is missed. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sched_bench.h"

static int find_strategy(const bench_cfg *c, const char *name)
{
    for (int k = 0; k < c->nstrats; k++)
        if (!strcmp(c->strats[k]->name, name)) return k;
    return -1;
}

/* The baseline (a strategy that solves no optimization) with the cheapest
 * schedule at this budget, or -1 when none found one. */
static int best_baseline(const bench_cfg *c, const budget_row *row)
{
    int kb = -1;
    for (int k = 0; k < c->nstrats; k++) {
        if (c->strats[k]->solve_opt || row->cells[k].rc != RM_OK) continue;
        if (kb < 0 || row->cells[k].cost < row->cells[kb].cost) kb = k;
    }
    return kb;
}

static int found(const cell *x)
{
    return x && x->ran && x->rc == RM_OK;
}
static int solver_ok(const cell *x)
{
    return found(x) && x->has_bound;
}

/* The verdict for one budget: met, or not and the reason the numbers show. */
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
    int kb = best_baseline(c, row);
    int milp_opt = solver_ok(milp) && !strcmp(milp->status, "optimal");
    int milp_in = solver_ok(milp) && (milp_opt || milp->gap <= GOAL_GAP) && milp->seconds <= GOAL_SECONDS;
    int lpr_in = solver_ok(lpr) && lpr->gap <= GOAL_GAP && lpr->seconds <= GOAL_SECONDS;
    if (milp_in || lpr_in) {
        g->met = 1;
        if (milp_in && milp_opt)
            snprintf(g->verdict, sizeof g->verdict, "yes (optimal)");
        else {
            const cell *w = milp_in && (!lpr_in || milp->gap <= lpr->gap) ? milp : lpr;
            snprintf(g->verdict, sizeof g->verdict, "yes (gap %.2f%%%s)", 100.0 * w->gap,
                     w->bound_trivial ? " to the trivial bound" : "");
        }
        return;
    }
    snprintf(g->verdict, sizeof g->verdict, "no");
    size_t o = 0;
    size_t len = sizeof g->reason;
#define ADD(...)                                                                                                       \
    do {                                                                                                               \
        if (o < len) o += (size_t)snprintf(g->reason + o, len - o, __VA_ARGS__);                                       \
    } while (0)
    int milp_found = found(milp), lpr_found = found(lpr);
    if (!milp_found && !lpr_found) {
        ADD("no solver schedule");
        if (milp && milp->ran) ADD(": milp %s after %.1f s", milp->status, milp->seconds);
        if (lpr && lpr->ran)
            ADD("%s lp_round %s after %.1f s", milp && milp->ran ? "," : ":", lpr->status, lpr->seconds);
        if (kb >= 0)
            ADD("; best baseline %s %+.2f%%", c->strats[kb]->name,
                overhead_pct(row->cells[kb].cost, cp->facts.base_cost));
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
    double best_ov = overhead_pct(best->cost, cp->facts.base_cost);
    if (best->bound_trivial) {
        /* The LP relaxation did not finish, or the solve was coarsened: only
         * the trivial bound (every node once) measures the answer. */
        ADD("no LP bound (the relaxation did not finish, or the solve was coarsened); %s %+.2f%% after %.1f s, "
            "gap %.2f%% to the trivial bound",
            best_name, best_ov, best->seconds, 100.0 * best->gap);
    } else {
        double bound_ov = overhead_pct(best->lp_bound, cp->facts.base_cost);
        ADD("best gap %.2f%% (%s %+.2f%% vs LP bound %+.2f%%)", 100.0 * best->gap, best_name, best_ov, bound_ov);
        if (solver_ok(milp) && strcmp(milp->status, "optimal") && c->time_limit_s > 0 &&
            milp->seconds >= 0.95 * c->time_limit_s)
            ADD("; milp stopped at the %g s time limit", c->time_limit_s);
        /* The LP relaxation of this model lets a fraction of each value be
         * kept, so its bound can sit near checkpoint-all's cost when every
         * integer schedule must recompute a lot: then the gap may measure
         * the bound rather than the schedule. */
        if (best_ov > 0 && bound_ov < 0.25 * best_ov) ADD("; the LP bound is near zero overhead, likely weak");
    }
    /* A solve stopped by a 60 s limit ends a few hundredths past it; say so
     * only when it overran by more than that (building the model counts). */
    if (best->seconds > GOAL_SECONDS + 1) ADD("; %s took %.1f s > %g s", best_name, best->seconds, GOAL_SECONDS);
    if (kb >= 0) {
        double base_ov = overhead_pct(row->cells[kb].cost, cp->facts.base_cost);
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

enum {
    D_MODEL,
    D_BATCH,
    D_BUDGET,
    D_BYTES,
    D_STRATEGY,
    D_STATUS,
    D_OVERHEAD,
    D_COST,
    D_PEAK,
    D_TIME,
    D_BOUND,
    D_BOUND_KIND,
    D_GAP,
    D_NCOLS
};
static const rm_table_col detail_cols[D_NCOLS] = {
    [D_MODEL] = {"model", "model", RM_TABLE_LEFT, 0, RM_TABLE_DATA},
    [D_BATCH] = {"batch", "batch", RM_TABLE_RIGHT, 0, RM_TABLE_DATA},
    [D_BUDGET] = {"budget", "budget_pct", RM_TABLE_LEFT, 0, RM_TABLE_BOTH},
    [D_BYTES] = {"budget bytes", "budget_bytes", RM_TABLE_RIGHT, 0, RM_TABLE_DATA},
    [D_STRATEGY] = {"strategy", "strategy", RM_TABLE_LEFT, 0, RM_TABLE_BOTH},
    [D_STATUS] = {"status", "status", RM_TABLE_LEFT, 0, RM_TABLE_BOTH},
    [D_OVERHEAD] = {"overhead", "overhead_pct", RM_TABLE_RIGHT, 0, RM_TABLE_BOTH},
    [D_COST] = {"cost", "cost", RM_TABLE_RIGHT, 0, RM_TABLE_DATA},
    [D_PEAK] = {"peak", "peak_bytes", RM_TABLE_RIGHT, 0, RM_TABLE_BOTH},
    [D_TIME] = {"time", "seconds", RM_TABLE_RIGHT, 0, RM_TABLE_BOTH},
    [D_BOUND] = {"LP bound", "lp_bound_pct", RM_TABLE_RIGHT, 0, RM_TABLE_BOTH},
    [D_BOUND_KIND] = {"bound", "bound", RM_TABLE_LEFT, 0, RM_TABLE_DATA},
    [D_GAP] = {"gap", "gap_pct", RM_TABLE_RIGHT, 0, RM_TABLE_BOTH},
};

int detail_table_begin(bench_table *bt, rm_table_format fmt)
{
    return bench_table_begin(bt, detail_cols, D_NCOLS, fmt);
}

/* One run's row: md shows the text it always has, csv / json the numbers. */
static void detail_row(rm_table *t, const model_spec *m, const budget_row *row, const rm_strategy_info *st,
                       const cell *q, const rm_cli_problem *cp)
{
    char ov[32], pk[32] = "—";
    int ok = q->rc == RM_OK;
    rm_table_set_text(t, D_MODEL, "%s", m->name);
    rm_table_set_num(t, D_BATCH, (double)m->batch, "%ld", m->batch);
    rm_table_set_num(t, D_BUDGET, row->percent, "%g%%", row->percent);
    rm_table_set_num(t, D_BYTES, (double)row->bytes, "%zu", row->bytes);
    rm_table_set_text(t, D_STRATEGY, "%s", st->name);
    rm_table_set_text(t, D_STATUS, "%s", ok || q->rc == RM_ERR_INFEASIBLE ? q->status : "error");
    overhead_cell(ov, sizeof ov, q, cp->facts.base_cost);
    if (ok) rm_cli_bytes(pk, sizeof pk, (double)q->peak_total);
    rm_table_set_num(t, D_OVERHEAD, ok ? overhead_pct(q->cost, cp->facts.base_cost) : NAN, "%s", ov);
    rm_table_set_num(t, D_COST, ok ? q->cost : NAN, "%s", "");
    rm_table_set_num(t, D_PEAK, ok ? (double)q->peak_total : NAN, "%s", pk);
    rm_table_set_num(t, D_TIME, q->seconds, "%.2f s", q->seconds);
    rm_table_set_num(t, D_BOUND, NAN, "%s", "");
    rm_table_set_num(t, D_GAP, NAN, "%s", "");
    if (q->has_bound) {
        double lb = overhead_pct(q->lp_bound, cp->facts.base_cost);
        if (q->bound_trivial)
            rm_table_set_num(t, D_BOUND, lb, "trivial");
        else
            rm_table_set_num(t, D_BOUND, lb, "%+.2f%%", lb);
        rm_table_set_text(t, D_BOUND_KIND, "%s", q->bound_trivial ? "trivial" : "lp");
        if (ok) rm_table_set_num(t, D_GAP, 100.0 * q->gap, "%.2f%%", 100.0 * q->gap);
    }
}

void print_model(const bench_cfg *c, const model_spec *m, const rm_cli_problem *cp, const budget_row *rows, int nrows,
                 goal_line *goals, int *ngoals)
{
    const rm_problem *p = cp->p;
    char x[32], y[32], z[32], w[32], v[32];
    int nf = 0, nb = 0;
    for (int i = 0; i < p->n; i++) nf += p->nodes[i].tag == RM_TAG_FORWARD, nb += p->nodes[i].tag == RM_TAG_BACKWARD;
    emit("\n### %s, batch %ld\n\n", m->name, m->batch);
    emit("%d nodes (%d forward, 1 loss, %d backward); checkpoint-all costs %s. No-remat peak %s = fixed %s + "
         "activations %s. Lower bound %s (%.1f%% of the no-remat peak): '%s' with its inputs.\n",
         p->n, nf, nb, rm_cli_cost(x, sizeof x, cp->facts.base_cost, cp->flops),
         rm_cli_bytes(y, sizeof y, (double)cp->facts.noremat_total), rm_cli_bytes(z, sizeof z, (double)p->fixed_bytes),
         rm_cli_bytes(w, sizeof w, (double)cp->facts.noremat.peak_bytes),
         rm_cli_bytes(v, sizeof v, (double)(p->fixed_bytes + cp->facts.lower_bound)),
         100.0 * (double)(p->fixed_bytes + cp->facts.lower_bound) / (double)cp->facts.noremat_total,
         p->nodes[cp->facts.lb_node].name);

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
            if (!rows[r].below_lb) emit(" %s |", overhead_cell(x, sizeof x, &rows[r].cells[k], cp->facts.base_cost));
        emit("\n");
    }
    for (int r = 0; r < nrows; r++)
        if (rows[r].below_lb)
            emit("\n%g%% (%s) and below: below lower bound (%s), no schedule exists.\n", rows[r].percent,
                 rm_cli_bytes(x, sizeof x, (double)rows[r].bytes),
                 rm_cli_bytes(y, sizeof y, (double)(p->fixed_bytes + cp->facts.lower_bound)));

    /* The detail: every run; in md a table per model, in csv / json the one table of c->data. */
    bench_table own, *bt = c->data;
    if (c->fmt == RM_TABLE_MD) {
        emit("\n");
        bt = detail_table_begin(&own, RM_TABLE_MD) ? NULL : &own;
    }
    for (int r = 0; bt && r < nrows; r++) {
        if (rows[r].below_lb) continue;
        for (int k = 0; k < c->nstrats; k++) {
            detail_row(bt->t, m, &rows[r], c->strats[k], &rows[r].cells[k], cp);
            if (bench_table_row(bt)) fprintf(stderr, "remat_bench_sched: writing the table failed\n");
        }
    }
    if (bt == &own) bench_table_end(&own);

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
        int kb = best_baseline(c, &rows[r]);
        snprintf(gl->best_base, sizeof gl->best_base, "—");
        if (kb >= 0)
            snprintf(gl->best_base, sizeof gl->best_base, "%s %+.2f%%", c->strats[kb]->name,
                     overhead_pct(rows[r].cells[kb].cost, cp->facts.base_cost));
        snprintf(gl->lp_bound, sizeof gl->lp_bound, "—");
        const cell *bc = km >= 0 && rows[r].cells[km].has_bound && !rows[r].cells[km].bound_trivial ? &rows[r].cells[km]
                         : kr >= 0 && rows[r].cells[kr].has_bound && !rows[r].cells[kr].bound_trivial
                             ? &rows[r].cells[kr]
                             : NULL;
        if (bc) snprintf(gl->lp_bound, sizeof gl->lp_bound, "%+.2f%%", overhead_pct(bc->lp_bound, cp->facts.base_cost));
        snprintf(gl->lpr, sizeof gl->lpr, "—");
        if (kr >= 0) {
            const cell *q = &rows[r].cells[kr];
            if (q->rc == RM_OK)
                snprintf(gl->lpr, sizeof gl->lpr, "%+.2f%%, gap %.2f%%%s, %.1f s",
                         overhead_pct(q->cost, cp->facts.base_cost), 100.0 * q->gap, q->bound_trivial ? "*" : "",
                         q->seconds);
            else
                snprintf(gl->lpr, sizeof gl->lpr, "%s, %.1f s", q->status, q->seconds);
        }
        snprintf(gl->milp, sizeof gl->milp, "—");
        if (km >= 0) {
            const cell *q = &rows[r].cells[km];
            if (q->rc == RM_OK)
                snprintf(gl->milp, sizeof gl->milp, "%s %+.2f%%, gap %.2f%%%s, %.1f s", q->status,
                         overhead_pct(q->cost, cp->facts.base_cost), 100.0 * q->gap, q->bound_trivial ? "*" : "",
                         q->seconds);
            else
                snprintf(gl->milp, sizeof gl->milp, "%s, %.1f s", q->status, q->seconds);
        }
    }
}

void print_goal_table(const goal_line *goals, int n)
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
