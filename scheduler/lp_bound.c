/* The relaxed LP bound (lp_bound.h).
 *
 * Model. The stages (stage t computes node t last) are cut into blocks of
 * consecutive stages; block [a, b] has, for every value i < a still live at
 * a (i or a descendant of i is at or after a), S[i] (held into stage a) and
 * Y[i] (recomputed somewhere in the block), in [0, 1]. b = bytes,
 * B = the activation budget, D_t = deps(t) + {t}:
 *   retention  S'[i] <= S[i] + Y[i]          (S' = the next block's S)
 *   inputs     1 <= S[j] + Y[j]               for j < a read by a node of the block
 *              Y[k] <= S[j] + Y[j]            for j in deps(k)
 *   memory     sum_{i not in D_b} b_i S'[i] <= B - sum_{j in D_b} b_j    (at the block's last stage b)
 *   minimise   sum over blocks of sum_i cost_i Y[i]  (+ every node once)
 * One stage per block is the per-stage relaxation (Y = R).
 *
 * Why every valid schedule satisfies it (so its optimum bounds them all):
 * take S[i] = S[a][i] and Y[i] = 1 when some stage of the block computes i.
 * By the retention rule S[u][i] <= S[a][i] + sum_{a <= v < u} R[v][i] for
 * every u in the block, so a value retained out of the block, or read at
 * some stage of it, was held into the block or computed in it: retention
 * and both input rows hold. Each Y[i] = 1 stands for at least one compute,
 * so the objective is at most the schedule's cost. Memory: right after
 * "compute b", the last compute of stage b, the simulator holds b, b's
 * inputs and every value retained into stage b+1: such a value is carried
 * through the stage (freed at the start only when the stage recomputes it,
 * at a point before b) or computed at a point before b, and nothing frees
 * it before the stage ends. These sets count once each (a retained member
 * of D_b is in the constant part); a fitting schedule's peak is at most B.
 * Pruning: a schedule that computes or carries a value with no descendant
 * at or after the stage stays valid and is no dearer without it (what the
 * stage still computes reads only live values), and its memory sums only
 * shrink, so an optimum lives in the pruned model. Dropping the memory rows
 * of the other stages only relaxes. The model is a relaxation of the binary
 * schedules, not of the per-stage LP: "at least once per block" is tighter
 * than a sum of fractional R, and measured coarser levels are sometimes
 * higher than the per-stage LP (U-Net b8 at 70%: 96 blocks +0.025%, every
 * stage +0.011%).
 *
 * Where blocks end: at the stages whose memory row checkpoint-all violates
 * (elsewhere the row is slack for the schedule that keeps everything), k of
 * them evenly spread, k = 16, 32, ... while the next level (about 4x the
 * last) fits the time.
 *
 * Measured (2 shared cores, so wall clock is noisy): VGG16 b32 at 80%
 * (79 nodes): every stage +0.184% over checkpoint-all in 0.9 s, the full
 * LP (rm_milp_relax) +0.008% in 23 s; ResNet-50 b32 (367 nodes): every
 * stage, 134k columns, unsolved in 120 s; 65 blocks, 25k columns, 10-20 s.
 * What it leaves out against Checkmate's LP: the memory at every other
 * point of a stage. */
#include "lp_bound.h"

#include <lp_lib.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "lp_model.h"

/* Above this many nodes the column maps alone are too large to bother: the
 * LP would not finish in any sensible limit either. */
#define BOUND_MAX_NODES 2000

typedef struct bmodel {
    const rm_problem *p;
    int n, nb;
    const int *lastdesc; /* largest node reachable from i (i itself if none) */
    int *start;          /* nb + 1: block B is stages start[B] .. start[B+1]-1 */
    int *s_col, *y_col;  /* nb x n, lp_solve columns; 0 = none */
    int *mark;           /* n: stamps while a row is built */
    int ncols, nrows;
    double cost_scale, act;
    double *rv;
    int *ri;
    lprec *lp;
} bmodel;

static void bmodel_free(bmodel *m)
{
    if (m->lp) delete_lp(m->lp);
    free(m->start);
    free(m->s_col);
    free(m->y_col);
    free(m->mark);
    free(m->rv);
    free(m->ri);
    memset(m, 0, sizeof *m);
}

/* Columns, block by block: S then Y of every value live at the block's start. */
static void number_columns(bmodel *m)
{
    for (int B = 0; B < m->nb; B++) {
        int a = m->start[B];
        for (int i = 0; i < a; i++)
            if (m->lastdesc[i] >= a) m->s_col[(size_t)B * m->n + i] = ++m->ncols;
        for (int i = 0; i < a; i++)
            if (m->lastdesc[i] >= a) m->y_col[(size_t)B * m->n + i] = ++m->ncols;
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

#define S_(B, i) m->s_col[(size_t)(B)*m->n + (i)]
#define Y_(B, i) m->y_col[(size_t)(B)*m->n + (i)]

/* Columns in [0, 1] and the objective (costs over the largest cost, so the
 * LP's numbers stay near 1). */
static int make_columns(bmodel *m, rm_err *e)
{
    const rm_problem *p = m->p;
    int cnt = 0;
    m->lp = make_lp(0, m->ncols);
    if (!m->lp) return rm_errorf(e, RM_ERR_NOMEM, "lp bound: lp_solve make_lp failed for %d columns", m->ncols);
    if (!set_outputfile(m->lp, "")) return rm_errorf(e, RM_ERR_SOLVER, "lp bound: lp_solve set_outputfile failed");
    set_verbose(m->lp, NEUTRAL);
    set_minim(m->lp);
    for (int c = 1; c <= m->ncols; c++)
        if (!set_bounds(m->lp, c, 0.0, 1.0))
            return rm_errorf(e, RM_ERR_SOLVER, "lp bound: lp_solve set_bounds failed on column %d", c);
    for (int B = 0; B < m->nb; B++)
        for (int i = 0; i < m->start[B]; i++)
            if (Y_(B, i)) m->rv[cnt] = p->nodes[i].cost / m->cost_scale, m->ri[cnt++] = Y_(B, i);
    if (!set_obj_fnex(m->lp, cnt, m->rv, m->ri))
        return rm_errorf(e, RM_ERR_SOLVER, "lp bound: lp_solve set_obj_fnex failed");
    return RM_OK;
}

/* Retention into the next block, and the inputs of what block B computes:
 * its own nodes (first computes, whose earlier inputs must be held into the
 * block or recomputed in it) and its recomputations Y. */
static int rows_retention_inputs(bmodel *m, int B, rm_err *e)
{
    const rm_problem *p = m->p;
    int a = m->start[B], b = m->start[B + 1] - 1, rc, stamp = 2 * B + 1;
    for (int i = 0; B + 1 < m->nb && i < a; i++) {
        if (!S_(B + 1, i)) continue;
        int cnt = 0; /* i < a is live at a wherever it is live after the block */
        m->rv[cnt] = 1, m->ri[cnt++] = S_(B + 1, i);
        m->rv[cnt] = -1, m->ri[cnt++] = S_(B, i);
        m->rv[cnt] = -1, m->ri[cnt++] = Y_(B, i);
        if ((rc = add_row(m, cnt, LE, 0, e)) != RM_OK) return rc;
    }
    for (int k = 0; k <= b; k++) {
        if (k < a && !Y_(B, k)) continue;
        for (int d = 0; d < p->nodes[k].ndeps; d++) {
            int j = p->nodes[k].deps[d], cnt = 0;                    /* j < k is live at a wherever k is */
            if (j >= a || (k >= a && m->mark[j] == stamp)) continue; /* computed in the block; a row already made */
            if (k >= a) m->mark[j] = stamp;
            if (k < a) m->rv[cnt] = 1, m->ri[cnt++] = Y_(B, k);
            m->rv[cnt] = -1, m->ri[cnt++] = Y_(B, j);
            m->rv[cnt] = -1, m->ri[cnt++] = S_(B, j);
            if ((rc = add_row(m, cnt, LE, k >= a ? -1.0 : 0.0, e)) != RM_OK) return rc;
        }
    }
    return RM_OK;
}

/* The memory row at the block's last stage t, at the point t is computed:
 * S[t+1] is the next block's S (see the top). */
static int row_memory(bmodel *m, int B, rm_err *e)
{
    const rm_problem *p = m->p;
    int t = m->start[B + 1] - 1, stamp = 2 * B + 2;
    const rm_problem_node *nd = &p->nodes[t];
    if (B + 1 >= m->nb) return RM_OK; /* nothing is retained after the last stage */
    double fixed = (double)nd->bytes;
    m->mark[t] = stamp;
    for (int d = 0; d < nd->ndeps; d++) m->mark[nd->deps[d]] = stamp, fixed += (double)p->nodes[nd->deps[d]].bytes;
    int cnt = 0;
    for (int i = 0; i < t; i++)
        if (S_(B + 1, i) && m->mark[i] != stamp)
            m->rv[cnt] = (double)p->nodes[i].bytes / m->act, m->ri[cnt++] = S_(B + 1, i);
    /* A hair of slack for lp_solve's tolerances: loosening only lowers the bound. */
    double rhs = (m->act - fixed) / m->act + 1e-9;
    if (rhs < 0) return rm_errorf(e, RM_ERR_INFEASIBLE, "lp bound: node %d and its inputs exceed the budget", t);
    return add_row(m, cnt, LE, rhs, e);
}

#undef S_
#undef Y_

/* The model for blocks ending at the stages ends[0..nends-1] (ascending;
 * the last stage always ends one). */
static int build(bmodel *m, const rm_problem *p, const int *lastdesc, const int *ends, int nends, rm_err *e)
{
    int n = p->n, rc;
    memset(m, 0, sizeof *m);
    m->p = p, m->n = n, m->lastdesc = lastdesc, m->act = (double)rm_problem_activation_budget(p);
    m->start = malloc(((size_t)nends + 2) * sizeof *m->start);
    m->mark = calloc((size_t)n, sizeof *m->mark);
    if (!m->start || !m->mark) goto nomem;
    m->start[0] = 0;
    for (int k = 0; k < nends; k++)
        if (ends[k] >= m->start[m->nb] && ends[k] < n - 1) m->start[++m->nb] = ends[k] + 1;
    m->start[++m->nb] = n;
    m->s_col = calloc((size_t)m->nb * n, sizeof *m->s_col);
    m->y_col = calloc((size_t)m->nb * n, sizeof *m->y_col);
    if (!m->s_col || !m->y_col) goto nomem;
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
    for (int B = 0; B < m->nb; B++) {
        if ((rc = rows_retention_inputs(m, B, e)) != RM_OK) return rc;
        if ((rc = row_memory(m, B, e)) != RM_OK) return rc;
    }
    if (!set_add_rowmode(m->lp, FALSE)) return rm_errorf(e, RM_ERR_SOLVER, "lp bound: set_add_rowmode(FALSE) failed");
    return RM_OK;
nomem:
    return rm_errorf(e, RM_ERR_NOMEM, "lp bound: out of memory building the model (n = %d)", n);
}

/* Solves the built model; *lp = -1 on a time limit. */
static int solve_model(bmodel *m, double *lp, double trivial, double deadline, rm_err *e)
{
    rm_lp_watch w = rm_lp_watch_make(0, deadline);
    int code = rm_lp_solve_watched(m->lp, &w, 0);
    *lp = -1;
    if (code == INFEASIBLE)
        return rm_errorf(e, RM_ERR_INFEASIBLE, "lp bound: the relaxed LP is infeasible: no schedule fits");
    if (code == TIMEOUT || code == USERABORT || code == SUBOPTIMAL) return RM_OK;
    if (code != OPTIMAL) return rm_lp_failure(code, "relaxed LP bound", e);
    /* lp_solve's optimum is exact to its tolerances only: give back a hair
     * (far below any gap worth reporting) before rounding to the cost step. */
    double v = trivial + m->cost_scale * get_objective(m->lp);
    v -= 1e-9 * trivial + 1e-9 * m->cost_scale;
    *lp = rm_lp_step_up(v, rm_lp_cost_step(m->p));
    return RM_OK;
}

/* lastdesc[i]: the largest node reachable from i (i itself when none). */
static void last_descendants(int *lastdesc, const rm_problem *p)
{
    for (int i = 0; i < p->n; i++) lastdesc[i] = i;
    for (int k = p->n - 1; k >= 0; k--) /* users come after, so their lastdesc is final */
        for (int d = 0; d < p->nodes[k].ndeps; d++) {
            int j = p->nodes[k].deps[d];
            if (lastdesc[k] > lastdesc[j]) lastdesc[j] = lastdesc[k];
        }
}

/* One level: the model for the given block ends, solved; raises out->bound. */
static int solve_level(rm_lp_bound_result *out, const rm_problem *p, const int *lastdesc, const int *ends, int nends,
                       double deadline, rm_err *e)
{
    bmodel m;
    double lp = -1;
    int rc = build(&m, p, lastdesc, ends, nends, e);
    out->ncols = m.ncols, out->nrows = m.nrows, out->blocks = m.nb;
    if (rc == RM_OK && m.ncols == 0)
        lp = out->trivial; /* nothing to recompute or retain (lp_solve answers NOTRUN) */
    else if (rc == RM_OK && (deadline == 0 || rm_now() < deadline))
        rc = solve_model(&m, &lp, out->trivial, deadline, e);
    bmodel_free(&m);
    if (lp >= 0) out->solved = 1, out->levels++;
    if (lp > out->bound) out->bound = lp;
    RM_LOG_DEBUG("lp bound: %d nodes in %d blocks, %d columns, %d rows: %s %.6g", p->n, out->blocks, out->ncols,
                 out->nrows, lp >= 0 ? "solved" : "not solved", lp);
    return rc;
}

/* The stages whose memory row checkpoint-all violates (candidate block
 * ends): elsewhere the row is slack for the schedule that keeps everything,
 * and a relaxation may drop any row. */
static int pressure_stages(int *ends, const rm_problem *p, const int *lastdesc)
{
    int n = p->n, ne = 0;
    double act = (double)rm_problem_activation_budget(p);
    for (int t = 0; t + 1 < n; t++) {
        const rm_problem_node *nd = &p->nodes[t];
        double used = (double)nd->bytes;
        for (int i = 0; i < t; i++) {
            int in_d = 0;
            for (int d = 0; d < nd->ndeps && !in_d; d++) in_d = nd->deps[d] == i;
            if (in_d || lastdesc[i] > t) used += (double)p->nodes[i].bytes;
        }
        if (used > act) ends[ne++] = t;
    }
    return ne;
}

static int bound_begin(rm_lp_bound_result *out, const rm_problem *p, int **lastdesc, rm_err *e)
{
    memset(out, 0, sizeof *out);
    *lastdesc = NULL;
    int rc = rm_problem_validate(p, e);
    if (rc == RM_OK) rc = rm_problem_check_budget(p, "lp bound", e);
    if (rc != RM_OK) return rc;
    out->trivial = rm_problem_base_cost(p);
    out->bound = out->trivial;
    if (p->budget == 0 || p->n > BOUND_MAX_NODES) return RM_OK;
    if (!(*lastdesc = malloc((size_t)p->n * sizeof **lastdesc)))
        return rm_errorf(e, RM_ERR_NOMEM, "lp bound: out of memory (n = %d)", p->n);
    last_descendants(*lastdesc, p);
    return RM_OK;
}

int rm_lp_bound_blocks(rm_lp_bound_result *out, const rm_problem *p, const int *ends, int nends, rm_err *e)
{
    double t0 = rm_now();
    int *lastdesc;
    int rc = bound_begin(out, p, &lastdesc, e);
    if (rc == RM_OK && lastdesc) rc = solve_level(out, p, lastdesc, ends, nends, 0, e);
    free(lastdesc);
    out->seconds = rm_now() - t0;
    return rc;
}

/* k of the ne candidate ends, evenly spread, into sel. */
static void spread(int *sel, const int *ends, int ne, int k)
{
    for (int j = 0; j < k; j++) sel[j] = ends[(int)(((long long)(2 * j + 1) * ne) / (2LL * k))];
}

/* Levels of 16, 32, 64, ... blocks until every candidate ends one, while
 * the next level (about 4x the last: twice the columns) fits the time. */
static int refine(rm_lp_bound_result *out, const rm_problem *p, const int *lastdesc, double deadline, rm_err *e)
{
    int *ends = malloc((size_t)p->n * sizeof *ends), *sel = malloc((size_t)p->n * sizeof *sel), rc = RM_OK;
    if (!ends || !sel) rc = rm_errorf(e, RM_ERR_NOMEM, "lp bound: out of memory (n = %d)", p->n);
    int ne = rc == RM_OK ? pressure_stages(ends, p, lastdesc) : 0;
    for (int k = deadline > 0 ? 16 : ne; rc == RM_OK && ne > 0; k *= 2) {
        if (k > ne) k = ne;
        double l0 = rm_now();
        spread(sel, ends, ne, k);
        rc = solve_level(out, p, lastdesc, sel, k, deadline, e);
        double took = rm_now() - l0;
        if (k == ne || (deadline > 0 && rm_now() + 4 * took > deadline)) break;
    }
    free(ends);
    free(sel);
    return rc;
}

int rm_lp_bound(rm_lp_bound_result *out, const rm_problem *p, double time_limit_s, rm_err *e)
{
    double t0 = rm_now();
    int *lastdesc;
    int rc = bound_begin(out, p, &lastdesc, e);
    if (rc == RM_OK && lastdesc) rc = refine(out, p, lastdesc, time_limit_s > 0 ? t0 + time_limit_s : 0, e);
    free(lastdesc);
    out->seconds = rm_now() - t0;
    RM_LOG_DEBUG("lp bound: %d nodes: %.6g (%s; trivial %.6g), %d levels, %.3f s", p->n, out->bound,
                 out->solved ? "solved" : "not solved", out->trivial, out->levels, out->seconds);
    return rc;
}
