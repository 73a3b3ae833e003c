/* The relaxed LP bound (lp_bound.h).
 *
 * Model (stage t, 0-based, computes node t last; b = bytes, B = the
 * activation budget, D_t = deps(t) + {t}):
 *   R[t][t] = 1 (a constant); R[t][i], S[t][i] in [0, 1] exist for i < t
 *   only while i is live (some descendant of i, or i, is at or after t);
 *   retention  S[t+1][i] <= S[t][i] + R[t][i]
 *   inputs     R[t][k]   <= R[t][j] + S[t][j]          for j in deps(k)
 *   memory     sum_{i < t, i not in D_t} b_i S[t+1][i] <= B - sum_{j in D_t} b_j
 *   minimise   sum_t sum_{i<t} cost_i R[t][i]  (+ every node once, the R[t][t])
 *
 * Why every valid schedule satisfies it (so its optimum bounds them all):
 * retention and inputs are the schedule's validity rules (docs/schedule-
 * format.md). Memory: right after "compute t", the last compute of stage t
 * (R[t][i] = 0 for i > t), the simulator holds t, t's inputs (still resident
 * while t is computed) and every value retained into stage t+1: such a value
 * is either carried through the stage (freed at the start only when the
 * stage recomputes it, at a point before t) or computed at a point before t,
 * and it is freed by no one before the stage ends. These sets count once
 * each: a retained member of D_t is in the constant part. The peak is at
 * least that sum, and a fitting schedule's peak is at most B. Pruning: a
 * schedule that computes or carries a value with no descendant at or after
 * the stage stays valid and is no dearer without it (whatever the stage
 * computes that is still live reads only live values), and its memory sums
 * only shrink, so an optimum lives in the pruned model.
 *
 * What it leaves out against Checkmate's LP (lp_model.c): the memory at
 * every other point of a stage, so a value computed early in a stage and a
 * value freed before its end are never charged together. It needs no FREE
 * columns and has one dense row per stage: ResNet-50's 367 nodes give about
 * 2 x 60k columns instead of millions. */
#include "lp_bound.h"

#include <lp_lib.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "lp_model.h"

/* Above this many nodes the n x n column maps alone are too large to bother:
 * the LP would not finish in any sensible limit either. */
#define BOUND_MAX_NODES 2000

typedef struct bmodel {
    const rm_problem *p;
    int n;
    int *lastdesc;      /* largest node reachable from i (i itself if none) */
    int *s_col, *r_col; /* n x n, lp_solve columns; 0 = none */
    int *mark;          /* n: stamp of D_t while stage t's memory row is built */
    int ncols, nrows;
    double cost_scale, act;
    double *rv;
    int *ri;
    lprec *lp;
} bmodel;

static void bmodel_free(bmodel *m)
{
    if (m->lp) delete_lp(m->lp);
    free(m->lastdesc);
    free(m->s_col);
    free(m->r_col);
    free(m->mark);
    free(m->rv);
    free(m->ri);
    memset(m, 0, sizeof *m);
}

static int live(const bmodel *m, int t, int i)
{
    return i < t && m->lastdesc[i] >= t;
}

/* Column maps: stage by stage, S then R. */
static void number_columns(bmodel *m)
{
    const rm_problem *p = m->p;
    int n = m->n;
    for (int i = n - 1; i >= 0; i--) m->lastdesc[i] = i;
    for (int k = n - 1; k >= 0; k--) /* users come after, so their lastdesc is final */
        for (int d = 0; d < p->nodes[k].ndeps; d++) {
            int j = p->nodes[k].deps[d];
            if (m->lastdesc[k] > m->lastdesc[j]) m->lastdesc[j] = m->lastdesc[k];
        }
    for (int t = 0; t < n; t++) {
        for (int i = 0; i < t; i++)
            if (live(m, t, i)) m->s_col[(size_t)t * n + i] = ++m->ncols;
        for (int i = 0; i < t; i++)
            if (live(m, t, i)) m->r_col[(size_t)t * n + i] = ++m->ncols;
    }
}

static int add_row(bmodel *m, int cnt, int type, double rhs, rm_err *e)
{
    if (cnt == 0) return RM_OK; /* callers only pass satisfiable empty rows */
    if (!add_constraintex(m->lp, cnt, m->rv, m->ri, type, rhs))
        return rm_errorf(e, RM_ERR_SOLVER, "lp bound: lp_solve add_constraintex failed on row %d", m->nrows + 1);
    m->nrows++;
    return RM_OK;
}

#define S_(t, i) m->s_col[(size_t)(t) * m->n + (i)]
#define R_(t, i) m->r_col[(size_t)(t) * m->n + (i)]

/* Columns in [0, 1] and the objective (costs over the largest cost, so the
 * LP's numbers stay near 1). */
static int make_columns(bmodel *m, rm_err *e)
{
    const rm_problem *p = m->p;
    int n = m->n, cnt = 0;
    m->lp = make_lp(0, m->ncols);
    if (!m->lp) return rm_errorf(e, RM_ERR_NOMEM, "lp bound: lp_solve make_lp failed for %d columns", m->ncols);
    if (!set_outputfile(m->lp, "")) return rm_errorf(e, RM_ERR_SOLVER, "lp bound: lp_solve set_outputfile failed");
    set_verbose(m->lp, NEUTRAL);
    set_minim(m->lp);
    for (int c = 1; c <= m->ncols; c++)
        if (!set_bounds(m->lp, c, 0.0, 1.0))
            return rm_errorf(e, RM_ERR_SOLVER, "lp bound: lp_solve set_bounds failed on column %d", c);
    for (int t = 0; t < n; t++)
        for (int i = 0; i < t; i++)
            if (R_(t, i)) m->rv[cnt] = p->nodes[i].cost / m->cost_scale, m->ri[cnt++] = R_(t, i);
    if (!set_obj_fnex(m->lp, cnt, m->rv, m->ri))
        return rm_errorf(e, RM_ERR_SOLVER, "lp bound: lp_solve set_obj_fnex failed");
    return RM_OK;
}

/* Retention into stage t+1 and the inputs of every compute of stage t. */
static int rows_retention_inputs(bmodel *m, int t, rm_err *e)
{
    const rm_problem *p = m->p;
    int rc;
    for (int i = 0; t + 1 < m->n && i < t; i++) {
        if (!S_(t + 1, i)) continue;
        int cnt = 0;
        m->rv[cnt] = 1, m->ri[cnt++] = S_(t + 1, i);
        if (S_(t, i)) m->rv[cnt] = -1, m->ri[cnt++] = S_(t, i);
        if (R_(t, i)) m->rv[cnt] = -1, m->ri[cnt++] = R_(t, i);
        if ((rc = add_row(m, cnt, LE, 0, e)) != RM_OK) return rc;
    }
    for (int k = 0; k <= t; k++) {
        if (k != t && !R_(t, k)) continue;
        for (int d = 0; d < p->nodes[k].ndeps; d++) {
            int j = p->nodes[k].deps[d], cnt = 0; /* j is live wherever k is: both columns exist */
            if (k != t) m->rv[cnt] = 1, m->ri[cnt++] = R_(t, k);
            m->rv[cnt] = -1, m->ri[cnt++] = R_(t, j);
            m->rv[cnt] = -1, m->ri[cnt++] = S_(t, j);
            if ((rc = add_row(m, cnt, LE, k == t ? -1.0 : 0.0, e)) != RM_OK) return rc;
        }
    }
    return RM_OK;
}

/* The memory row of stage t, at the point t is computed (see the top). */
static int row_memory(bmodel *m, int t, rm_err *e)
{
    const rm_problem *p = m->p;
    const rm_problem_node *nd = &p->nodes[t];
    if (t + 1 >= m->n) return RM_OK; /* nothing is retained after the last stage */
    double fixed = (double)nd->bytes;
    m->mark[t] = t + 1;
    for (int d = 0; d < nd->ndeps; d++) m->mark[nd->deps[d]] = t + 1, fixed += (double)p->nodes[nd->deps[d]].bytes;
    int cnt = 0;
    for (int i = 0; i < t; i++)
        if (S_(t + 1, i) && m->mark[i] != t + 1)
            m->rv[cnt] = (double)p->nodes[i].bytes / m->act, m->ri[cnt++] = S_(t + 1, i);
    /* A hair of slack for lp_solve's tolerances: loosening only lowers the bound. */
    double rhs = (m->act - fixed) / m->act + 1e-9;
    if (rhs < 0) return rm_errorf(e, RM_ERR_INFEASIBLE, "lp bound: node %d and its inputs exceed the budget", t);
    return add_row(m, cnt, LE, rhs, e);
}

#undef S_
#undef R_

static int build(bmodel *m, const rm_problem *p, size_t act, rm_err *e)
{
    int n = p->n, rc;
    size_t nn = (size_t)n * (size_t)n;
    memset(m, 0, sizeof *m);
    m->p = p, m->n = n, m->act = (double)act;
    m->lastdesc = malloc((size_t)n * sizeof *m->lastdesc);
    m->mark = calloc((size_t)n, sizeof *m->mark);
    m->s_col = calloc(nn, sizeof *m->s_col);
    m->r_col = calloc(nn, sizeof *m->r_col);
    if (!m->lastdesc || !m->mark || !m->s_col || !m->r_col) goto nomem;
    number_columns(m);
    m->rv = malloc(((size_t)m->ncols + 3) * sizeof *m->rv);
    m->ri = malloc(((size_t)m->ncols + 3) * sizeof *m->ri);
    if (!m->rv || !m->ri) goto nomem;
    m->cost_scale = 0;
    for (int k = 0; k < n; k++)
        if (p->nodes[k].cost > m->cost_scale) m->cost_scale = p->nodes[k].cost;
    if (m->cost_scale <= 0) m->cost_scale = 1;
    if ((rc = make_columns(m, e)) != RM_OK) return rc;
    if (!set_add_rowmode(m->lp, TRUE)) return rm_errorf(e, RM_ERR_SOLVER, "lp bound: set_add_rowmode(TRUE) failed");
    for (int t = 0; t < n; t++) {
        if ((rc = rows_retention_inputs(m, t, e)) != RM_OK) return rc;
        if ((rc = row_memory(m, t, e)) != RM_OK) return rc;
    }
    if (!set_add_rowmode(m->lp, FALSE)) return rm_errorf(e, RM_ERR_SOLVER, "lp bound: set_add_rowmode(FALSE) failed");
    return RM_OK;
nomem:
    return rm_errorf(e, RM_ERR_NOMEM, "lp bound: out of memory building the model (n = %d)", n);
}

/* Solves the built model; *solved = 0 on a time limit. */
static int solve_model(bmodel *m, rm_lp_bound_result *out, double deadline, rm_err *e)
{
    rm_lp_watch w = rm_lp_watch_make(0, deadline);
    int code = rm_lp_solve_watched(m->lp, &w, 0);
    if (code == INFEASIBLE)
        return rm_errorf(e, RM_ERR_INFEASIBLE, "lp bound: the relaxed LP is infeasible: no schedule fits");
    if (code == TIMEOUT || code == USERABORT || code == SUBOPTIMAL) return RM_OK;
    if (code != OPTIMAL) return rm_lp_failure(code, "relaxed LP bound", e);
    /* lp_solve's optimum is exact to its tolerances only: give back a hair
     * (far below any gap worth reporting) before rounding to the cost step. */
    double lp = out->trivial + m->cost_scale * get_objective(m->lp);
    lp -= 1e-9 * out->trivial + 1e-9 * m->cost_scale;
    lp = rm_lp_step_up(lp, rm_lp_cost_step(m->p));
    out->solved = 1;
    if (lp > out->bound) out->bound = lp;
    return RM_OK;
}

int rm_lp_bound(rm_lp_bound_result *out, const rm_problem *p, double time_limit_s, rm_err *e)
{
    double t0 = rm_lp_now();
    memset(out, 0, sizeof *out);
    int rc = rm_problem_validate(p, e);
    if (rc == RM_OK) rc = rm_problem_check_budget(p, "lp bound", e);
    if (rc != RM_OK) return rc;
    for (int k = 0; k < p->n; k++) out->trivial += p->nodes[k].cost;
    out->bound = out->trivial;
    if (p->budget == 0 || p->n > BOUND_MAX_NODES) return RM_OK;
    bmodel m;
    rc = build(&m, p, rm_problem_activation_budget(p), e);
    out->ncols = m.ncols, out->nrows = m.nrows;
    double deadline = time_limit_s > 0 ? t0 + time_limit_s : 0;
    if (rc == RM_OK && (deadline == 0 || rm_lp_now() < deadline)) rc = solve_model(&m, out, deadline, e);
    bmodel_free(&m);
    out->seconds = rm_lp_now() - t0;
    RM_LOG_DEBUG("lp bound: %d nodes, %d columns, %d rows: %.6g (%s; trivial %.6g), %.3f s", p->n, out->ncols,
                 out->nrows, out->bound, out->solved ? "solved" : "not solved", out->trivial, out->seconds);
    return rc;
}
