/* One instance of remat_bench_engine: the cheapest baseline (the heuristic
 * the MILP must never be worse than); remat's "milp" strategy once per
 * engine (lp_solve, cbc, auto; race on request) and the "best" strategy, each exactly as
 * `remat plan --strategy S --milp-engine E` gets it; then HiGHS on the same
 * MILP (rm_lp_model_build with RM_MILP_DEFAULT, S and R binary as milp.c
 * makes them) written by lp_solve as free MPS. remat's schedules are judged
 * by the simulator inside rm_strategy_run; HiGHS's S is judged here. Then
 * every answer is held against every other: a proved optimum above another
 * engine's solution, or a solution below another's proved bound, is a bug
 * in one of them (or a disagreement between the model and the simulator),
 * and the row says which. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_util.h"
#include "clock.h"
#include "engine_bench.h"
#include "lp_model.h"
#include "lp_round.h"
#include "strategy.h"

const char *const engine_names[E_N] = {"lp_solve", "cbc", "auto", "race", "best", "HiGHS"};
const char *const engine_keys[E_N] = {"lp_solve", "cbc", "auto", "race", "best", "highs"};

/* ---- remat ---- */

static void run_heuristic(engine_row *row, const rm_problem *p)
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

/* Column k (a remat one) through rm_strategy_run. */
static void run_remat(engine_side *r, int k, const engine_cfg *c, const rm_problem *p)
{
    static const rm_milp_engine engine_of[E_N] = {[E_LPSOLVE] = RM_MILP_ENGINE_LPSOLVE,
                                                  [E_CBC] = RM_MILP_ENGINE_CBC,
                                                  [E_AUTO] = RM_MILP_ENGINE_AUTO,
                                                  [E_RACE] = RM_MILP_ENGINE_BOTH,
                                                  [E_BEST] = RM_MILP_ENGINE_AUTO};
    const rm_strategy_info *st = rm_strategy_find(k == E_BEST ? "best" : "milp");
    rm_strategy_options o;
    memset(&o, 0, sizeof o);
    o.time_limit_s = c->time_limit_s;
    o.milp_engine = engine_of[k];
    rm_schedule *s = NULL;
    rm_strategy_stats stats;
    memset(&stats, 0, sizeof stats);
    rm_err e = {RM_OK, ""};
    int rc = st ? rm_strategy_run(&s, &stats, st, p, &o, &e) : rm_errorf(&e, RM_ERR_INVALID, "no such strategy");
    rm_schedule_free(s);
    r->ran = 1;
    snprintf(r->status, sizeof r->status, "%s", rm_status_name(stats.status));
    r->seconds = stats.seconds;
    r->source = stats.source;
    r->infeasible = stats.status == RM_STATUS_INFEASIBLE && rc == RM_ERR_INFEASIBLE;
    r->proved = stats.status == RM_STATUS_OPTIMAL || r->infeasible;
    r->bound_trivial = stats.bound_trivial || !stats.has_bound;
    if (rc == RM_OK) {
        r->has_cost = r->has_bound = 1;
        r->cost = stats.sim.cost;
        /* The proved floor the gap is measured against. */
        r->bound = r->proved ? r->cost : r->cost * (1 - stats.gap);
    } else if (rc != RM_ERR_INFEASIBLE) {
        snprintf(r->status, sizeof r->status, "failed: %.38s", e.msg);
        fprintf(stderr, "engine-bench:   %s failed: %s\n", engine_names[k], e.msg);
    }
}

/* ---- HiGHS's run and its output ---- */

/* highs_solve.py's `key: value` lines; objective and bound are in the
 * model's units here. */
static void parse_highs_line(engine_side *h, const char *line)
{
    if (!strncmp(line, "status: ", 8))
        snprintf(h->status, sizeof h->status, "%.*s", (int)strcspn(line + 8, "\r\n"), line + 8);
    else if (!strncmp(line, "objective: ", 11))
        h->has_cost = sscanf(line + 11, "%lf", &h->cost) == 1;
    else if (!strncmp(line, "bound: ", 7))
        h->has_bound = sscanf(line + 7, "%lf", &h->bound) == 1;
    else if (!strncmp(line, "seconds: ", 9))
        sscanf(line + 9, "%lf", &h->seconds);
    /* anything else: HiGHS's banner */
}

/* Runs highs_solve.py on mps, writing its solution to sol; 0, or -1 with
 * the reason in h->status. */
static int run_highs(engine_side *h, const engine_cfg *c, const char *mps, const char *sol)
{
    char cmd[4 * 4096];
    snprintf(cmd, sizeof cmd, "'%s' '%s' '%s' '%s' %g 2>&1", c->python, c->highs_script, mps, sol, c->time_limit_s);
    FILE *f = popen(cmd, "r");
    if (!f) {
        snprintf(h->status, sizeof h->status, "failed: popen: %s", strerror(errno));
        return -1;
    }
    char line[1024];
    while (fgets(line, sizeof line, f)) parse_highs_line(h, line);
    int st = pclose(f);
    h->ran = 1;
    if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        snprintf(h->status, sizeof h->status, "failed: exit %d", st == -1 ? -1 : WEXITSTATUS(st));
        return -1;
    }
    if (!h->status[0]) {
        snprintf(h->status, sizeof h->status, "failed: no status line");
        return -1;
    }
    h->infeasible = !strcmp(h->status, "infeasible");
    h->proved = h->infeasible || !strcmp(h->status, "optimal");
    if (h->infeasible) h->has_cost = h->has_bound = 0;
    return 0;
}

/* ---- HiGHS's solution judged by the simulator ---- */

/* Reads the solution file: S from the columns lp_solve named C<k>. */
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
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "%d C%d %lf", &idx, &col, &val) == 3 && col >= 1 && col <= m->ncols && s_of_col[col])
            s->S[s_of_col[col] - 1] = val > 0.5;
    fclose(f);
    free(s_of_col);
    return 0;
}

static void check_solution(engine_side *h, const rm_lp_model *m, const rm_problem *p, const char *sol)
{
    rm_rs *s = NULL;
    rm_err e = {RM_OK, ""};
    rm_sim_result sim;
    if (rm_rs_create(&s, p->n, &e) != RM_OK || read_solution_S(s, m, sol) != 0 ||
        rm_milp_cheapest_R(s, p, &e) != RM_OK || rm_simulate_rs(&sim, p, s, &e) != RM_OK) {
        fprintf(stderr, "engine-bench:   HiGHS's solution could not be judged: %s\n", e.msg[0] ? e.msg : sol);
        rm_rs_free(s);
        return;
    }
    rm_rs_free(s);
    h->checked = 1;
    h->sim_cost = sim.cost;
    h->sim_peak = sim.peak_bytes;
    h->sim_fits = sim.peak_bytes <= rm_problem_activation_budget(p);
}

/* ---- the model, written and solved ---- */

static void run_highs_side(engine_row *row, const engine_cfg *c, const rm_problem *p)
{
    engine_side *h = &row->e[E_HIGHS];
    if (!c->python) {
        snprintf(h->status, sizeof h->status, "not installed");
        return;
    }
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
        snprintf(h->status, sizeof h->status, "not run: %d nodes", p->n);
        return;
    }
    int rc = rm_lp_model_build(&m, p, rm_problem_activation_budget(p), RM_MILP_DEFAULT, NULL, NULL, 0, 0, &e);
    if (rc == RM_OK) rc = rm_lp_model_set_integers(&m, &e);
    row->ncols = m.ncols;
    row->nrows = m.nrows;
    if (rc == RM_OK && c->max_cols > 0 && m.ncols > c->max_cols) {
        snprintf(h->status, sizeof h->status, "not run: %d columns", m.ncols);
    } else if (rc == RM_OK && (rc = rm_lp_model_write_mps(&m, mps, &row->dropped, &e)) == RM_OK) {
        fprintf(stderr, "engine-bench:   HiGHS on %d columns, %d rows ...\n", m.ncols, m.nrows);
        if (run_highs(h, c, mps, sol) == 0) {
            /* Back to cost units, as rm_lp_model's objective maps. */
            if (h->has_cost) h->cost = m.cost_const + m.cost_scale * h->cost;
            if (h->has_bound) h->bound = m.cost_const + m.cost_scale * h->bound;
            if (!strcmp(h->status, "optimal")) h->bound = h->cost, h->has_bound = h->has_cost;
            if (h->has_cost) check_solution(h, &m, p, sol);
        }
    }
    if (rc != RM_OK) snprintf(h->status, sizeof h->status, "failed: model: %.30s", e.msg);
    rm_lp_model_free(&m);
    if (!c->keep_files) {
        if (unlink(mps) && errno != ENOENT) perror(mps);
        if (unlink(sol) && errno != ENOENT) perror(sol);
    }
}

/* ---- do the answers agree? ---- */

static int below(double a, double b)
{
    return a < b - 1e-6 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

/* What engine a proves must hold for engine b's answer; 1 when it does not
 * (said in d). remat's bound is "trivial" or an LP bound, both proved. */
static int contradicts(char *d, size_t len, const engine_row *row, int a, int b)
{
    const engine_side *x = &row->e[a], *y = &row->e[b];
    const char *na = engine_names[a], *nb = engine_names[b];
    if (x->infeasible && y->has_cost)
        snprintf(d, len, "%s proves infeasible, %s has cost %.6g", na, nb, y->cost);
    else if (x->has_bound && y->has_cost && below(y->cost, x->bound))
        snprintf(d, len, "%s's cost %.6g below %s's bound %.6g", nb, y->cost, na, x->bound);
    else
        return 0;
    return 1;
}

static void compare(engine_row *row, const rm_problem *p)
{
    char *d = row->disagree;
    size_t len = sizeof row->disagree;
    const engine_side *h = &row->e[E_HIGHS];
    if (h->checked && !h->sim_fits) {
        snprintf(d, len, "HiGHS's S peaks at %zu > %zu bytes in the simulator", h->sim_peak,
                 rm_problem_activation_budget(p));
        return;
    }
    if (h->checked && below(h->cost, h->sim_cost)) {
        snprintf(d, len, "HiGHS's S costs %.6g in the simulator, %.6g in the model", h->sim_cost, h->cost);
        return;
    }
    for (int a = 0; a < E_N; a++)
        for (int b = 0; b < E_N; b++)
            if (a != b && row->e[a].ran && row->e[b].ran && contradicts(d, len, row, a, b)) return;
}

int engine_run_instance(engine_row *row, const engine_cfg *c, const rm_problem *p)
{
    char b[32];
    row->nodes = p->n;
    row->budget = p->budget;
    row->base_cost = rm_problem_base_cost(p);
    fprintf(stderr, "engine-bench: %s (%d nodes, budget %s) ...\n", row->name, p->n,
            rm_cli_bytes(b, sizeof b, (double)p->budget));
    run_heuristic(row, p);
    for (int k = 0; k < E_N; k++) {
        engine_side *s = &row->e[k];
        if (!(c->engines & (1u << k))) {
            snprintf(s->status, sizeof s->status, "not asked");
            continue;
        }
        if (k == E_HIGHS)
            run_highs_side(row, c, p);
        else
            run_remat(s, k, c, p);
        fprintf(stderr, "engine-bench:   %-8s %s, cost %.6g, bound %.6g, %.2f s%s%s\n", engine_names[k], s->status,
                s->cost, s->bound, s->seconds, s->source ? ", answer from " : "", s->source ? s->source : "");
    }
    compare(row, p);
    if (row->disagree[0]) fprintf(stderr, "engine-bench:   DISAGREEMENT: %s\n", row->disagree);
    return 0;
}
