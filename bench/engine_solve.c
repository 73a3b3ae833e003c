/* One instance of remat_bench_cbc: the cheapest baseline (the heuristic the
 * MILP must never be worse than), remat's answer through the "milp"
 * strategy exactly as `remat plan --strategy milp` gets it, then CBC on the
 * same MILP (rm_lp_model_build with RM_MILP_DEFAULT, S and R binary as
 * milp.c makes them) written by lp_solve as free MPS. CBC's own S is then
 * judged by remat's simulator, and the two answers are compared: a proved
 * optimum of one solver above a solution or below a bound of the other is a
 * bug in one of them, or a disagreement between the model and the
 * simulator, and the row says which. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine_bench.h"
#include "cli_util.h"
#include "clock.h"
#include "lp_model.h"
#include "lp_round.h"
#include "strategy.h"

/* ---- remat ---- */

static void run_heuristic(cbc_row *row, const rm_problem *p)
{
    const char *name = NULL;
    rm_sim_result sim;
    rm_schedule *s = rm_best_baseline(p, 0, 0, &name, &sim);
    row->has_heur = s != NULL;
    if (s) {
        row->heur_cost = sim.cost;
        snprintf(row->heur_name, sizeof row->heur_name, "%s", name ? name : "?");
    }
    rm_schedule_free(s);
}

static void run_remat(remat_side *r, const cbc_cfg *c, const rm_problem *p)
{
    const rm_strategy_info *st = rm_strategy_find("milp");
    rm_strategy_options o;
    memset(&o, 0, sizeof o);
    o.time_limit_s = c->time_limit_s;
    rm_schedule *s = NULL;
    rm_strategy_stats stats;
    memset(&stats, 0, sizeof stats);
    rm_err e = {RM_OK, ""};
    r->rc = st ? rm_strategy_run(&s, &stats, st, p, &o, &e) : rm_errorf(&e, RM_ERR_INVALID, "no milp strategy");
    rm_schedule_free(s);
    r->status = rm_status_name(stats.status);
    r->seconds = stats.seconds;
    r->proved =
        stats.status == RM_STATUS_OPTIMAL || (stats.status == RM_STATUS_INFEASIBLE && r->rc == RM_ERR_INFEASIBLE);
    r->bound_trivial = stats.bound_trivial || !stats.has_bound;
    if (r->rc == RM_OK) {
        r->cost = stats.sim.cost;
        r->gap = r->proved ? 0 : stats.gap;
        /* The proved floor the gap is measured against. */
        r->bound = r->proved ? r->cost : r->cost * (1 - r->gap);
    } else if (r->rc != RM_ERR_INFEASIBLE) {
        fprintf(stderr, "cbc-bench:   remat failed: %s\n", e.msg);
    }
}

/* ---- CBC's run and its output ---- */

/* The summary CBC prints last ("Result - ...", "Objective value:", "Lower
 * bound:"); objective and bound are in the model's units here. */
static void parse_cbc_line(cbc_side *cs, const char *line)
{
    const char *v;
    if ((v = strstr(line, "Result - "))) {
        v += 9;
        if (!strncmp(v, "Optimal", 7))
            snprintf(cs->status, sizeof cs->status, "optimal");
        else if (strstr(v, "infeasible"))
            snprintf(cs->status, sizeof cs->status, "infeasible");
        else if (strstr(v, "time"))
            snprintf(cs->status, sizeof cs->status, "time limit");
        else
            snprintf(cs->status, sizeof cs->status, "%.*s", (int)strcspn(v, "\r\n"), v);
    } else if (!strncmp(line, "Objective value:", 16)) {
        cs->has_cost = sscanf(line + 16, "%lf", &cs->cost) == 1;
    } else if (!strncmp(line, "Lower bound:", 12)) {
        cs->has_bound = sscanf(line + 12, "%lf", &cs->bound) == 1;
    } else if (!strncmp(line, "No feasible solution found", 26)) {
        cs->has_cost = 0;
    }
}

/* Runs cbc on mps, writing its solution to sol; 0, or -1 with the reason in
 * cs->status. */
static int run_cbc(cbc_side *cs, const cbc_cfg *c, const char *mps, const char *sol)
{
    char cmd[3 * 4096], sec[64] = "";
    /* Wall clock, as remat's limit is: CBC counts CPU seconds by default. */
    if (c->time_limit_s > 0) snprintf(sec, sizeof sec, "-timeMode elapsed -sec %g ", c->time_limit_s);
    snprintf(cmd, sizeof cmd, "'%s' '%s' %s-solve -solu '%s' 2>&1", c->cbc, mps, sec, sol);
    double t0 = rm_now();
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(cs->status, sizeof cs->status, "failed: popen: %s", strerror(errno));
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) parse_cbc_line(cs, line);
    int st = pclose(f);
    cs->seconds = rm_now() - t0;
    cs->ran = 1;
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(cs->status, sizeof cs->status, "failed: exit %d", st == -1 ? -1 : WEXITSTATUS(st));
        return -1;
    }
    if (!cs->status[0]) {
        snprintf(cs->status, sizeof cs->status, "failed: no result line");
        return -1;
    }
    cs->infeasible = !strcmp(cs->status, "infeasible");
    cs->proved = cs->infeasible || !strcmp(cs->status, "optimal");
    if (cs->infeasible) cs->has_cost = cs->has_bound = 0;
    return 0;
}

/* ---- CBC's solution judged by the simulator ---- */

/* Reads CBC's solution file: S from the columns lp_solve named C<k> (CBC
 * lists the nonzero ones). */
static int read_solution_S(rm_rs *s, const rm_lp_model *m, const char *sol)
{
    int *s_of_col = calloc((size_t)m->ncols + 1, sizeof *s_of_col); /* column -> 1 + S index */
    FILE *f = s_of_col ? fopen(sol, "r") : NULL;
    if (!f) {
        free(s_of_col);
        return -1;
    }
    size_t nn = (size_t)m->n * (size_t)m->n;
    for (size_t x = 0; x < nn; x++)
        if (m->s_col[x]) s_of_col[m->s_col[x]] = (int)x + 1;
    char line[512];
    int idx, col;
    double val;
    while (fgets(line, sizeof line, f)) {
        /* CBC flags a value outside its bounds with a leading "**". */
        const char *l = line + strspn(line, " *");
        if (sscanf(l, "%d C%d %lf", &idx, &col, &val) == 3 && col >= 1 && col <= m->ncols && s_of_col[col])
            s->S[s_of_col[col] - 1] = val > 0.5;
    }
    fclose(f);
    free(s_of_col);
    return 0;
}

static void check_cbc_solution(cbc_side *cs, const rm_lp_model *m, const rm_problem *p, const char *sol)
{
    rm_rs *s = NULL;
    rm_err e = {RM_OK, ""};
    rm_sim_result sim;
    if (rm_rs_create(&s, p->n, &e) != RM_OK || read_solution_S(s, m, sol) != 0 ||
        rm_milp_cheapest_R(s, p, &e) != RM_OK || rm_simulate_rs(&sim, p, s, &e) != RM_OK) {
        fprintf(stderr, "cbc-bench:   CBC's solution could not be judged: %s\n", e.msg[0] ? e.msg : sol);
        rm_rs_free(s);
        return;
    }
    rm_rs_free(s);
    cs->checked = 1;
    cs->sim_cost = sim.cost;
    cs->sim_peak = sim.peak_bytes;
    cs->sim_fits = sim.peak_bytes <= rm_problem_activation_budget(p);
}

/* ---- the model, written and solved ---- */

static void run_cbc_side(cbc_row *row, const cbc_cfg *c, const rm_problem *p)
{
    cbc_side *cs = &row->c;
    rm_lp_model m;
    rm_err e = {RM_OK, ""};
    char mps[4096], sol[4096], base[64];
    /* Named after the instance, so that --keep-files keeps every one. */
    size_t k = 0;
    for (; row->name[k] && k + 1 < sizeof base; k++)
        base[k] = isalnum((unsigned char)row->name[k]) ? row->name[k] : '_';
    base[k] = '\0';
    snprintf(mps, sizeof mps, "%s/%s.mps", c->workdir, base);
    snprintf(sol, sizeof sol, "%s/%s.sol", c->workdir, base);
    if (c->max_nodes > 0 && p->n > c->max_nodes) {
        /* The budget rows alone are ~n^3 nonzeros: not worth building. */
        snprintf(cs->status, sizeof cs->status, "not run: %d nodes", p->n);
        return;
    }
    int rc = rm_lp_model_build(&m, p, rm_problem_activation_budget(p), RM_MILP_DEFAULT, NULL, NULL, 0, 0, &e);
    if (rc == RM_OK) rc = rm_lp_model_set_integers(&m, &e);
    row->ncols = m.ncols;
    row->nrows = m.nrows;
    if (rc == RM_OK && c->max_cols > 0 && m.ncols > c->max_cols) {
        snprintf(cs->status, sizeof cs->status, "not run: %d columns", m.ncols);
    } else if (rc == RM_OK && (rc = rm_lp_model_write_mps(&m, mps, &row->dropped, &e)) == RM_OK) {
        fprintf(stderr, "cbc-bench:   cbc on %d columns, %d rows ...\n", m.ncols, m.nrows);
        if (run_cbc(cs, c, mps, sol) == 0) {
            /* Back to cost units, as rm_lp_model's objective maps. */
            if (cs->has_cost) cs->cost = m.cost_const + m.cost_scale * cs->cost;
            if (cs->has_bound) cs->bound = m.cost_const + m.cost_scale * cs->bound;
            if (!strcmp(cs->status, "optimal")) cs->bound = cs->cost, cs->has_bound = cs->has_cost;
            if (cs->has_cost) check_cbc_solution(cs, &m, p, sol);
        }
    }
    if (rc != RM_OK) snprintf(cs->status, sizeof cs->status, "failed: model: %.30s", e.msg);
    rm_lp_model_free(&m);
    if (!c->keep_files) {
        if (unlink(mps) && errno != ENOENT) perror(mps);
        if (unlink(sol) && errno != ENOENT) perror(sol);
    }
}

/* ---- do the two answers agree? ---- */

static int below(double a, double b)
{
    return a < b - 1e-6 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* Each claim one solver proves must hold for the other's answer. */
static void compare(cbc_row *row, const rm_problem *p)
{
    const remat_side *r = &row->r;
    const cbc_side *cs = &row->c;
    char *d = row->disagree;
    size_t len = sizeof row->disagree;
    int r_has = r->rc == RM_OK, r_infeasible = r->rc == RM_ERR_INFEASIBLE && r->proved;
    if (cs->checked && !cs->sim_fits)
        snprintf(d, len, "CBC's S peaks at %zu > %zu bytes in the simulator", cs->sim_peak,
                 rm_problem_activation_budget(p));
    else if (cs->infeasible && r_has)
        snprintf(d, len, "CBC proves infeasible, remat has cost %.6g", r->cost);
    else if (r_infeasible && cs->has_cost)
        snprintf(d, len, "remat proves infeasible, CBC has cost %.6g", cs->cost);
    else if (r_has && cs->has_bound && below(r->cost, cs->bound))
        snprintf(d, len, "remat's cost %.6g below CBC's bound %.6g", r->cost, cs->bound);
    else if (r_has && r->proved && cs->has_cost && below(cs->cost, r->cost))
        snprintf(d, len, "CBC's cost %.6g below remat's optimum %.6g", cs->cost, r->cost);
    else if (r_has && !r->bound_trivial && cs->has_cost && below(cs->cost, r->bound))
        snprintf(d, len, "CBC's cost %.6g below remat's bound %.6g", cs->cost, r->bound);
    else if (cs->checked && below(cs->cost, cs->sim_cost))
        snprintf(d, len, "CBC's S costs %.6g in the simulator, %.6g in the model", cs->sim_cost, cs->cost);
}

int cbc_run_instance(cbc_row *row, const cbc_cfg *c, const rm_problem *p)
{
    char b[32];
    row->nodes = p->n;
    row->budget = p->budget;
    row->base_cost = rm_problem_base_cost(p);
    fprintf(stderr, "cbc-bench: %s (%d nodes, budget %s) ...\n", row->name, p->n,
            rm_cli_bytes(b, sizeof b, (double)p->budget));
    run_heuristic(row, p);
    run_remat(&row->r, c, p);
    fprintf(stderr, "cbc-bench:   remat %s, cost %.6g, gap %.2f%%, %.2f s\n", row->r.status, row->r.cost,
            100 * row->r.gap, row->r.seconds);
    run_cbc_side(row, c, p);
    fprintf(stderr, "cbc-bench:   cbc %s, cost %.6g, bound %.6g, %.2f s\n", row->c.status, row->c.cost, row->c.bound,
            row->c.seconds);
    compare(row, p);
    if (row->disagree[0]) fprintf(stderr, "cbc-bench:   DISAGREEMENT: %s\n", row->disagree);
    return 0;
}
