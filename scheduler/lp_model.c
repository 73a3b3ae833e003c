/* The Checkmate rematerialization model, built sparsely for lp_solve 5.5
 * (see lp_model.h for the levers). Over the ~600-line
 * guide on purpose: the row families, the watched solve and the relaxation
 * all work on rm_lp_model's column maps, whose invariants (0 = no column,
 * FREE sorted by stage and point) would otherwise be shared across files.
 *
 * Model (stage t, 0-based, computes node t last):
 *   R[t][t] = 1 (a constant, no column); R[t][i], S[t][i] exist for i < t.
 *   retention  S[t+1][i] <= S[t][i] + R[t][i]
 *   inputs     R[t][k]   <= R[t][j] + S[t][j]          for j in deps(k)
 *   frees      FREE[t][i][k] <= R[t][k], <= 1 - S[t+1][i],
 *              <= 1 - R[t][j] for every user j of i with k < j <= t
 *   free once  sum_k FREE[t][i][k] <= R[t][i] + S[t][i]   (a valid cut that
 *              stops the relaxation from freeing fractional copies twice)
 *   budget     for each point k of stage t (after computing k, before its frees):
 *              sum_i b_i S[t][i] + sum_{j<=k} b_j R[t][j]
 *                - sum_{j<k} sum_{i in deps(j)+j} b_i FREE[t][i][j] <= budget
 * The disaggregated FREE rows are exact for binary R and S, so FREE may be
 * continuous: freeing only ever lowers memory, so FREE can always sit at its
 * upper bound min(R[k], 1-S[t+1][i], 1-R[j]...), which is 0 or 1, and a
 * smaller FREE only overstates the peak. Values in S[t] that nothing reads
 * and nothing carries are counted all stage (the simulator frees them at the
 * start), so the model's peak is never below the simulator's; an optimum
 * never retains such values, so the optima agree (tests check it against an
 * exact dynamic program). Only S is taken from lp_solve's answer: R is
 * rebuilt as the cheapest R for that S (rm_milp_cheapest_R, lp_round.c). */
#include "lp_model.h"

#include <lp_lib.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "milp_engine.h"
#include "simulate.h"
#include "strategy.h"

const char *rm_lp_code_name(int code)
{
    switch (code) {
    case UNKNOWNERROR:
        return "UNKNOWNERROR";
    case DATAIGNORED:
        return "DATAIGNORED";
    case NOBFP:
        return "NOBFP (no basis factorization package)";
    case NOMEMORY:
        return "NOMEMORY";
    case NOTRUN:
        return "NOTRUN";
    case OPTIMAL:
        return "OPTIMAL";
    case SUBOPTIMAL:
        return "SUBOPTIMAL";
    case INFEASIBLE:
        return "INFEASIBLE";
    case UNBOUNDED:
        return "UNBOUNDED";
    case DEGENERATE:
        return "DEGENERATE";
    case NUMFAILURE:
        return "NUMFAILURE (numerical failure)";
    case USERABORT:
        return "USERABORT";
    case TIMEOUT:
        return "TIMEOUT";
    case PRESOLVED:
        return "PRESOLVED";
    case PROCFAIL:
        return "PROCFAIL (branch and bound failed)";
    case PROCBREAK:
        return "PROCBREAK";
    case FEASFOUND:
        return "FEASFOUND";
    case NOFEASFOUND:
        return "NOFEASFOUND";
    case FATHOMED:
        return "FATHOMED";
    case ACCURACYERROR:
        return "ACCURACYERROR";
    }
    return "unknown code";
}

int rm_lp_check_problem(const rm_problem *p, const char *who, rm_err *e)
{
    if (!p || p->n <= 0 || !p->nodes) return rm_errorf(e, RM_ERR_INVALID, "%s: empty problem", who);
    for (int k = 0; k < p->n; k++) {
        const rm_problem_node *nd = &p->nodes[k];
        if (nd->ndeps < 0 || (nd->ndeps > 0 && !nd->deps))
            return rm_errorf(e, RM_ERR_INVALID, "%s: node %d (%s) has a bad dependency list", who, k, nd->name);
        if (!(nd->cost >= 0) || !isfinite(nd->cost))
            return rm_errorf(e, RM_ERR_INVALID, "%s: node %d (%s) has cost %g; costs must be finite and >= 0", who, k,
                             nd->name, nd->cost);
        for (int d = 0; d < nd->ndeps; d++)
            if (nd->deps[d] < 0 || nd->deps[d] >= k)
                return rm_errorf(e, RM_ERR_INVALID,
                                 "%s: node %d (%s) depends on %d; dependencies must be earlier nodes", who, k, nd->name,
                                 nd->deps[d]);
    }
    return RM_OK;
}

/* The largest q such that every cost is an integer multiple of q, when the
 * costs are integers (FLOP counts, test costs); 0 otherwise. Any two schedule
 * costs then differ by a multiple of q, which turns "better than the
 * incumbent" into "at least q better" and rounds LP bounds up. */
double rm_lp_cost_step(const rm_problem *p)
{
    double g = 0;
    for (int k = 0; k < p->n; k++) {
        double c = p->nodes[k].cost;
        if (c == 0) continue;
        if (c > 9007199254740992.0 || c != floor(c)) return 0;
        double a = g, b = c;
        while (b > 0) {
            double r = fmod(a, b);
            a = b;
            b = r;
        }
        g = a;
    }
    return g;
}

/* The bound rounded up to the cost step (less a hair for lp_solve's tolerance). */
double rm_lp_step_up(double bound, double step)
{
    if (step <= 0) return bound;
    return ceil(bound / step - 1e-6) * step;
}

/* ---------------------------------------------------------------- model */

void rm_lp_model_free(rm_lp_model *m)
{
    if (m->lp) delete_lp(m->lp);
    free(m->s_col);
    free(m->r_col);
    free(m->u_col);
    free(m->fv);
    free(m->fv_start);
    free(m->lastdesc);
    free(m->ustart);
    free(m->ulist);
    free(m->rv);
    free(m->ri);
    free(m->row_start);
    free(m->row_col);
    free(m->row_val);
    free(m->row_rhs);
    free(m->row_type);
    free(m->brow);
    memset(m, 0, sizeof *m);
}

void rm_lp_model_discard(rm_lp_model *m)
{
    if (!m) return;
    rm_lp_model_free(m);
    free(m);
}

static size_t gcd_size(size_t a, size_t b)
{
    while (b) {
        size_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

static int s_exists(const rm_lp_model *m, int t, int i)
{
    return t >= 1 && i < t && (!(m->levers & RM_MILP_PRUNE) || m->lastdesc[i] >= t);
}
static int r_exists(const rm_lp_model *m, int t, int i)
{
    return i < t && (!(m->levers & RM_MILP_PRUNE) || m->lastdesc[i] >= t);
}

static int is_user(const rm_lp_model *m, int i, int j)
{
    for (int u = m->ustart[i]; u < m->ustart[i + 1]; u++)
        if (m->ulist[u] == j) return 1;
    return 0;
}

static int add_row(rm_lp_model *m, int cnt, int type, double rhs, rm_err *e)
{
    if (cnt == 0) {
        int ok = type == LE ? rhs >= 0 : type == GE ? rhs <= 0 : rhs == 0;
        if (ok) return RM_OK;
        return rm_errorf(e, RM_ERR_SOLVER, "milp: internal error: an empty row with right-hand side %g", rhs);
    }
    size_t used = m->row_start[m->nrows];
    if ((size_t)m->nrows + 2 > m->row_cap) {
        size_t cap = m->row_cap ? 2 * m->row_cap : 1024;
        size_t *st = realloc(m->row_start, cap * sizeof *st);
        if (st) m->row_start = st;
        double *rhs_ = realloc(m->row_rhs, cap * sizeof *rhs_);
        if (rhs_) m->row_rhs = rhs_;
        unsigned char *ty = realloc(m->row_type, cap);
        if (ty) m->row_type = ty;
        if (!st || !rhs_ || !ty) goto nomem;
        m->row_cap = cap;
    }
    if (used + (size_t)cnt > m->nz_cap) {
        size_t cap = m->nz_cap ? 2 * m->nz_cap : 4096;
        while (cap < used + (size_t)cnt) cap *= 2;
        int *c = realloc(m->row_col, cap * sizeof *c);
        if (c) m->row_col = c;
        double *v = realloc(m->row_val, cap * sizeof *v);
        if (v) m->row_val = v;
        if (!c || !v) goto nomem;
        m->nz_cap = cap;
    }
    memcpy(m->row_col + used, m->ri, (size_t)cnt * sizeof *m->ri);
    memcpy(m->row_val + used, m->rv, (size_t)cnt * sizeof *m->rv);
    m->row_type[m->nrows] = (unsigned char)type;
    m->row_rhs[m->nrows] = rhs;
    m->row_start[++m->nrows] = used + (size_t)cnt;
    return RM_OK;
nomem:
    return rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory for the model's rows (%d rows so far)", m->nrows);
}

static void lp_log(lprec *lp, void *h, char *buf)
{
    (void)lp;
    const rm_lp_model *m = h;
    if (m && m->log) m->log(m->log_ctx, buf);
}

/* lp_solve's model, made once every row is known: its settings, the rows'
 * types and right-hand sides, then each column with its objective
 * coefficient and bounds. Column by column, because lp_solve appends a
 * column in time proportional to its entries but a row in time
 * proportional to the columns. The rows are freed afterwards. */
static int load_model(rm_lp_model *m, const rm_problem *p, rm_err *e)
{
    int n = m->n, rc = RM_OK;
    size_t nz = m->row_start[m->nrows];
    size_t *cstart = calloc((size_t)m->ncols + 2, sizeof *cstart);
    int *crow = malloc((nz ? nz : 1) * sizeof *crow);
    double *cval = malloc((nz ? nz : 1) * sizeof *cval);
    double *obj = calloc((size_t)m->ncols + 1, sizeof *obj);
    double *col = malloc(((size_t)m->nrows + 1) * sizeof *col);
    int *rowno = malloc(((size_t)m->nrows + 1) * sizeof *rowno);
    if (!cstart || !crow || !cval || !obj || !col || !rowno) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory loading the model (%zu entries)", nz);
        goto done;
    }
    m->lp = make_lp(m->nrows, 0);
    lprec *lp = m->lp;
    if (!lp) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "lp_solve make_lp failed for %d rows", m->nrows);
        goto done;
    }
    if (!set_outputfile(lp, "")) {
        rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_outputfile(\"\") failed");
        goto done;
    }
    put_logfunc(lp, lp_log, m);
    set_verbose(lp, m->log ? m->verbosity : NEUTRAL);
    set_minim(lp);
    /* The rows are scaled already (bytes / budget, cost / largest cost);
     * lp_solve's geometric scaling on top made the VGG16 LP about twice as slow
     * (RM_MILP_NO_SCALING in lp_model.h has the figures). */
    if (m->levers & RM_MILP_NO_SCALING) set_scaling(lp, SCALE_NONE);
    for (int r = 1; r <= m->nrows; r++)
        if (!set_constr_type(lp, r, m->row_type[r - 1]) || !set_rh(lp, r, m->row_rhs[r - 1])) {
            rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_constr_type/set_rh failed on row %d", r);
            goto done;
        }
    for (int t = 0; t < n; t++)
        for (int i = 0; i < t; i++)
            if (m->r_col[(size_t)t * n + i]) obj[m->r_col[(size_t)t * n + i]] = p->nodes[i].cost / m->cost_scale;
    /* CSR to CSC: count, place (each column's entries in row order). */
    for (size_t k = 0; k < nz; k++) cstart[m->row_col[k] + 1]++;
    for (int c = 1; c <= m->ncols + 1; c++) cstart[c] += cstart[c - 1];
    for (int r = 0; r < m->nrows; r++)
        for (size_t k = m->row_start[r]; k < m->row_start[r + 1]; k++) {
            size_t at = cstart[m->row_col[k]]++;
            crow[at] = r + 1;
            cval[at] = m->row_val[k];
        }
    for (int c = m->ncols + 1; c >= 1; c--) cstart[c] = cstart[c - 1]; /* back to the starts */
    cstart[0] = 0;
    for (int c = 1; c <= m->ncols; c++) {
        int cnt = 0;
        if (obj[c] != 0) col[cnt] = obj[c], rowno[cnt++] = 0;
        for (size_t k = cstart[c]; k < cstart[c + 1]; k++) col[cnt] = cval[k], rowno[cnt++] = crow[k];
        if (!add_columnex(lp, cnt, col, rowno) || !set_bounds(lp, c, 0.0, 1.0)) {
            rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve add_columnex/set_bounds failed on column %d", c);
            goto done;
        }
    }
    if (!(m->levers & RM_MILP_PREFIX_ROWS))
        for (size_t x = 0; x < (size_t)n * n; x++)
            if (m->u_col[x] && !set_bounds(lp, m->u_col[x], 0.0, m->mem_rhs)) {
                rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_bounds failed on column %d", m->u_col[x]);
                goto done;
            }
done:
    free(cstart);
    free(crow);
    free(cval);
    free(obj);
    free(col);
    free(rowno);
    free(m->row_start);
    free(m->row_col);
    free(m->row_val);
    free(m->row_rhs);
    free(m->row_type);
    m->row_start = NULL, m->row_col = NULL, m->row_val = NULL, m->row_rhs = NULL, m->row_type = NULL;
    return rc;
}

/* Users of each node (ascending) and the last descendant of each value. */
static int index_users(rm_lp_model *m, const rm_problem *p)
{
    int n = p->n;
    size_t nedges = 0;
    for (int k = 0; k < n; k++) nedges += (size_t)p->nodes[k].ndeps;
    m->ulist = malloc((nedges + 1) * sizeof *m->ulist);
    if (!m->ulist) return 0;
    for (int k = 0; k < n; k++)
        for (int d = 0; d < p->nodes[k].ndeps; d++) m->ustart[p->nodes[k].deps[d] + 1]++;
    for (int i = 0; i < n; i++) m->ustart[i + 1] += m->ustart[i];
    int *fill = malloc((size_t)n * sizeof *fill);
    if (!fill) return 0;
    memcpy(fill, m->ustart, (size_t)n * sizeof *fill);
    for (int k = 0; k < n; k++) /* k ascending: each user list comes out sorted */
        for (int d = 0; d < p->nodes[k].ndeps; d++) m->ulist[fill[p->nodes[k].deps[d]]++] = k;
    free(fill);
    for (int i = n - 1; i >= 0; i--) {
        m->lastdesc[i] = i;
        for (int u = m->ustart[i]; u < m->ustart[i + 1]; u++)
            if (m->lastdesc[m->ulist[u]] > m->lastdesc[i]) m->lastdesc[i] = m->lastdesc[m->ulist[u]];
    }
    return 1;
}

/* FREE variables: value i freed right after computing k in stage t. */
static int index_frees(rm_lp_model *m, const rm_problem *p)
{
    int n = p->n;
    size_t fcap = 0;
    for (int t = 0; t < n; t++)
        for (int k = 0; k <= t; k++) fcap += (size_t)p->nodes[k].ndeps + 1;
    m->fv = malloc((fcap + 1) * sizeof *m->fv);
    if (!m->fv) return 0;
    for (int t = 0; t < n; t++) {
        m->fv_start[t] = m->nfree;
        for (int k = 0; k <= t; k++) {
            if (k != t && !r_exists(m, t, k)) continue;
            const rm_problem_node *nd = &p->nodes[k];
            for (int d = -1; d < nd->ndeps; d++) {
                int i = d < 0 ? k : nd->deps[d];
                if (!(i == t || r_exists(m, t, i) || s_exists(m, t, i))) continue;
                /* t itself reads i later in the stage: i cannot be freed before t. */
                if (k < t && is_user(m, i, t)) continue;
                m->fv[m->nfree++] = (rm_lp_free_var){t, i, k, 0};
            }
        }
    }
    m->fv_start[n] = m->nfree;
    return 1;
}

/* Column numbers. Stage order (S_t, R_t, FREE_t, U_t for t = 0..n-1) let
 * lp_solve find first solutions where a grouped order found none. */
static void number_columns(rm_lp_model *m)
{
    int n = m->n;
    int stage_order = (m->levers & RM_MILP_STAGE_ORDER) != 0, prefix = (m->levers & RM_MILP_PREFIX_ROWS) != 0;
    for (int pass = 0; pass < (stage_order ? 1 : 4); pass++)
        for (int t = 0; t < n; t++) {
            if (stage_order || pass == 0)
                for (int i = 0; i < t; i++)
                    if (s_exists(m, t, i)) m->s_col[(size_t)t * n + i] = ++m->ncols, m->nS++;
            if (stage_order || pass == 1)
                for (int i = 0; i < t; i++)
                    if (r_exists(m, t, i)) m->r_col[(size_t)t * n + i] = ++m->ncols, m->nR++;
            if (stage_order || pass == 2)
                for (int f = m->fv_start[t]; f < m->fv_start[t + 1]; f++) m->fv[f].col = ++m->ncols;
            if (!prefix && (stage_order || pass == 3))
                for (int k = 0; k <= t; k++)
                    if (k == t || r_exists(m, t, k)) m->u_col[(size_t)t * n + k] = ++m->ncols;
        }
}

/* The budget rows' right-hand side for act bytes, in units of mem_scale.
 * Peaks are multiples of the bytes' gcd g, so the budget is really act
 * rounded down to one, and any slack below g still rejects every peak
 * above it; some slack keeps exact fits feasible despite lp_solve's
 * tolerances (~1e-9 on these rows). Half a unit (without TIGHT_BUDGET) lets
 * the LP use half a value more at every point, which on graphs of few equal
 * values (Checkmate's linear graphs: 4 values become 4.5) puts the bound
 * below the published formulation's; 1e-7 of the budget does not. */
static double budget_rhs(const rm_lp_model *m, size_t act)
{
    size_t g = m->mem_gcd;
    double slack = 0.5 * (double)g;
    if ((m->levers & RM_MILP_TIGHT_BUDGET) && slack > 1e-7 * (double)act) slack = 1e-7 * (double)act;
    return ((double)(act - act % g) + slack) / m->mem_scale;
}

int rm_lp_model_set_budget(rm_lp_model *m, size_t act, rm_err *e)
{
    double rhs = budget_rhs(m, act), d = rhs - m->mem_rhs;
    if (m->levers & RM_MILP_PREFIX_ROWS) {
        for (int k = 0; k < m->nbrow; k++)
            if (!set_rh(m->lp, m->brow[k], get_rh(m->lp, m->brow[k]) + d))
                return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_rh failed on row %d", m->brow[k]);
    } else {
        for (size_t x = 0; x < (size_t)m->n * (size_t)m->n; x++)
            if (m->u_col[x] && !set_upbo(m->lp, m->u_col[x], rhs))
                return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_upbo failed on column %d", m->u_col[x]);
    }
    m->mem_rhs = rhs;
    return RM_OK;
}

/* Scales: costs relative to the largest, bytes relative to the budget, so
 * lp_solve sees coefficients <= 1 and a right-hand side near 1. */
static void set_scales(rm_lp_model *m, const rm_problem *p, size_t act)
{
    int n = p->n;
    double cmax = 0;
    m->cost_const = 0;
    for (int k = 0; k < n; k++) {
        if (p->nodes[k].cost > cmax) cmax = p->nodes[k].cost;
        m->cost_const += p->nodes[k].cost;
    }
    m->cost_scale = cmax > 0 ? cmax : 1;
    m->step = rm_lp_cost_step(p);
    size_t g = 0;
    for (int k = 0; k < n; k++) g = gcd_size(g, p->nodes[k].bytes);
    if (g == 0) g = 1;
    m->mem_scale = (double)act;
    m->mem_gcd = g;
    m->mem_rhs = budget_rhs(m, act);
}

#define S_(t, i) m->s_col[(size_t)(t)*m->n + (i)]
#define R_(t, i) m->r_col[(size_t)(t)*m->n + (i)]

/* Retention into stage t + 1, and the inputs resident when computing k. */
static int rows_retention_inputs(rm_lp_model *m, int t, rm_err *e)
{
    const rm_problem *p = m->p;
    int rc, cnt;
    if (t + 1 < m->n)
        for (int i = 0; i < t; i++) {
            if (!S_(t + 1, i)) continue;
            cnt = 0;
            m->rv[cnt] = 1, m->ri[cnt++] = S_(t + 1, i);
            if (S_(t, i)) m->rv[cnt] = -1, m->ri[cnt++] = S_(t, i);
            if (R_(t, i)) m->rv[cnt] = -1, m->ri[cnt++] = R_(t, i);
            if ((rc = add_row(m, cnt, LE, 0, e)) != RM_OK) return rc;
        }
    for (int k = 0; k <= t; k++) {
        if (k != t && !R_(t, k)) continue;
        const rm_problem_node *nd = &p->nodes[k];
        for (int d = 0; d < nd->ndeps; d++) {
            int j = nd->deps[d];
            cnt = 0;
            if (k != t) m->rv[cnt] = 1, m->ri[cnt++] = R_(t, k);
            if (R_(t, j)) m->rv[cnt] = -1, m->ri[cnt++] = R_(t, j);
            if (S_(t, j)) m->rv[cnt] = -1, m->ri[cnt++] = S_(t, j);
            if (k == t && cnt == 0)
                return rm_errorf(e, RM_ERR_SOLVER, "milp: internal error: input %d of node %d has no column", j, k);
            if ((rc = add_row(m, cnt, LE, k == t ? -1.0 : 0.0, e)) != RM_OK) return rc;
        }
    }
    return RM_OK;
}

/* The disaggregated FREE rows of stage t, then (FREE_CUT) "a value is freed
 * at most once": without it the LP relaxation frees fractional copies several
 * times over and its bound is weak. */
static int rows_frees(rm_lp_model *m, int t, rm_err *e)
{
    int rc, cnt;
    for (int f = m->fv_start[t]; f < m->fv_start[t + 1]; f++) {
        const rm_lp_free_var *v = &m->fv[f];
        if (v->k != t) {
            m->rv[0] = 1, m->ri[0] = v->col, m->rv[1] = -1, m->ri[1] = R_(t, v->k);
            if ((rc = add_row(m, 2, LE, 0, e)) != RM_OK) return rc;
        }
        if (t + 1 < m->n && S_(t + 1, v->i)) {
            m->rv[0] = 1, m->ri[0] = v->col, m->rv[1] = 1, m->ri[1] = S_(t + 1, v->i);
            if ((rc = add_row(m, 2, LE, 1, e)) != RM_OK) return rc;
        }
        for (int u = m->ustart[v->i]; u < m->ustart[v->i + 1]; u++) {
            int j = m->ulist[u];
            if (j <= v->k || j > t || !R_(t, j)) continue; /* j == t was excluded when the FREE was made */
            m->rv[0] = 1, m->ri[0] = v->col, m->rv[1] = 1, m->ri[1] = R_(t, j);
            if ((rc = add_row(m, 2, LE, 1, e)) != RM_OK) return rc;
        }
    }
    if (!(m->levers & RM_MILP_FREE_CUT)) return RM_OK;
    for (int i = 0; i <= t; i++) {
        cnt = 0;
        for (int f = m->fv_start[t]; f < m->fv_start[t + 1]; f++)
            if (m->fv[f].i == i) m->rv[cnt] = 1, m->ri[cnt++] = m->fv[f].col;
        if (cnt < 2) continue; /* a single FREE is already bounded by R[k] <= R[i] + S[i] */
        double rhs = 0;
        if (i == t) rhs = 1;
        if (i < t && R_(t, i)) m->rv[cnt] = -1, m->ri[cnt++] = R_(t, i);
        if (i < t && S_(t, i)) m->rv[cnt] = -1, m->ri[cnt++] = S_(t, i);
        if ((rc = add_row(m, cnt, LE, rhs, e)) != RM_OK) return rc;
    }
    return RM_OK;
}

/* The budget rows of stage t: one prefix sum per point (PREFIX_ROWS), or
 * Checkmate's U: U[t][k] = U[t][prev] - frees(prev) + b_k R[t][k], 0 <= U <= budget. */
static int rows_budget(rm_lp_model *m, int t, rm_err *e)
{
    const rm_problem *p = m->p;
    int rc, cnt, f = m->fv_start[t];
    if (m->levers & RM_MILP_PREFIX_ROWS) {
        cnt = 0;
        for (int i = 0; i < t; i++)
            if (S_(t, i)) m->rv[cnt] = (double)p->nodes[i].bytes / m->mem_scale, m->ri[cnt++] = S_(t, i);
        for (int k = 0; k <= t; k++) {
            if (k != t && !R_(t, k)) continue;
            double rhs = m->mem_rhs;
            if (k != t)
                m->rv[cnt] = (double)p->nodes[k].bytes / m->mem_scale, m->ri[cnt++] = R_(t, k);
            else
                rhs -= (double)p->nodes[t].bytes / m->mem_scale;
            int before = m->nrows;
            if ((rc = add_row(m, cnt, LE, rhs, e)) != RM_OK) return rc;
            if (m->nrows != before) { /* (an empty row is not added) */
                int *b = m->nbrow % 1024 ? m->brow : realloc(m->brow, ((size_t)m->nbrow + 1024) * sizeof *b);
                if (!b) return rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory for the model's budget rows");
                m->brow = b;
                m->brow[m->nbrow++] = m->nrows;
            }
            for (; f < m->fv_start[t + 1] && m->fv[f].k == k; f++)
                m->rv[cnt] = -(double)p->nodes[m->fv[f].i].bytes / m->mem_scale, m->ri[cnt++] = m->fv[f].col;
        }
        return RM_OK;
    }
    int prev = -1, n = m->n;
    for (int k = 0; k <= t; k++) {
        if (k != t && !R_(t, k)) continue;
        cnt = 0;
        double rhs = 0;
        m->rv[cnt] = 1, m->ri[cnt++] = m->u_col[(size_t)t * n + k];
        if (prev < 0) {
            for (int i = 0; i < t; i++)
                if (S_(t, i)) m->rv[cnt] = -(double)p->nodes[i].bytes / m->mem_scale, m->ri[cnt++] = S_(t, i);
        } else {
            m->rv[cnt] = -1, m->ri[cnt++] = m->u_col[(size_t)t * n + prev];
            for (; f < m->fv_start[t + 1] && m->fv[f].k == prev; f++)
                m->rv[cnt] = (double)p->nodes[m->fv[f].i].bytes / m->mem_scale, m->ri[cnt++] = m->fv[f].col;
        }
        if (k != t)
            m->rv[cnt] = -(double)p->nodes[k].bytes / m->mem_scale, m->ri[cnt++] = R_(t, k);
        else
            rhs = (double)p->nodes[t].bytes / m->mem_scale;
        if ((rc = add_row(m, cnt, EQ, rhs, e)) != RM_OK) return rc;
        prev = k;
    }
    return RM_OK;
}

#undef S_
#undef R_

int rm_lp_model_build(rm_lp_model *m, const rm_problem *p, size_t act, unsigned levers, rm_milp_log_fn log,
                      void *log_ctx, int verbosity, double deadline, rm_err *e)
{
    memset(m, 0, sizeof *m);
    int n = p->n, rc;
    size_t nn = (size_t)n * (size_t)n;
    m->p = p;
    m->n = n;
    m->levers = levers;
    m->log = log;
    m->log_ctx = log_ctx;
    m->verbosity = verbosity;
    m->s_col = calloc(nn, sizeof *m->s_col);
    m->r_col = calloc(nn, sizeof *m->r_col);
    m->u_col = calloc(nn, sizeof *m->u_col);
    m->lastdesc = malloc((size_t)n * sizeof *m->lastdesc);
    m->ustart = calloc((size_t)n + 1, sizeof *m->ustart);
    m->fv_start = calloc((size_t)n + 1, sizeof *m->fv_start);
    if (!m->s_col || !m->r_col || !m->u_col || !m->lastdesc || !m->ustart || !m->fv_start) goto nomem;
    if (!index_users(m, p) || !index_frees(m, p)) goto nomem;
    number_columns(m);
    m->rv = malloc(((size_t)m->ncols + 2) * sizeof *m->rv);
    m->ri = malloc(((size_t)m->ncols + 2) * sizeof *m->ri);
    if (!m->rv || !m->ri) goto nomem;
    set_scales(m, p, act);
    if (!(m->row_start = calloc(1, sizeof *m->row_start))) goto nomem;
    for (int t = 0; t < n; t++) {
        if (rm_deadline_passed(deadline)) {
            m->stopped = 1;
            return rm_errorf(e, RM_ERR_BUDGET, "the time limit stopped building the LP model at stage %d of %d", t, n);
        }
        if ((rc = rows_retention_inputs(m, t, e)) != RM_OK) return rc;
        if ((rc = rows_frees(m, t, e)) != RM_OK) return rc;
        if ((rc = rows_budget(m, t, e)) != RM_OK) return rc;
    }
    if (rm_deadline_passed(deadline)) {
        m->stopped = 1;
        return rm_errorf(e, RM_ERR_BUDGET, "the time limit stopped building the LP model before loading it");
    }
    if ((rc = load_model(m, p, e)) != RM_OK) return rc;
    RM_LOG_DEBUG("lp model: %d nodes at %zu activation bytes: %d rows, %d columns (%d S, %d R, %d FREE), "
                 "levers %#x",
                 n, act, m->nrows, m->ncols, m->nS, m->nR, m->nfree, levers);
    return RM_OK;
nomem:
    return rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory building the model (n = %d)", n);
}

int rm_lp_model_variables(long *vars, const rm_problem *p, unsigned levers, rm_err *e)
{
    rm_lp_model m;
    memset(&m, 0, sizeof m);
    int n = p->n, ok;
    m.p = p, m.n = n, m.levers = levers;
    m.lastdesc = malloc((size_t)n * sizeof *m.lastdesc);
    m.ustart = calloc((size_t)n + 1, sizeof *m.ustart);
    m.fv_start = calloc((size_t)n + 1, sizeof *m.fv_start);
    ok = m.lastdesc && m.ustart && m.fv_start && index_users(&m, p) && index_frees(&m, p);
    *vars = m.nfree;
    for (int t = 0; ok && t < n; t++)
        for (int i = 0; i < t; i++) *vars += s_exists(&m, t, i) + r_exists(&m, t, i);
    rm_lp_model_free(&m);
    return ok ? RM_OK : rm_errorf(e, RM_ERR_NOMEM, "out of memory counting the model of %d nodes", n);
}

int rm_lp_model_set_integers(rm_lp_model *m, rm_err *e)
{
    size_t nn = (size_t)m->n * (size_t)m->n;
    for (size_t x = 0; x < nn; x++) {
        if (m->s_col[x] && !set_int(m->lp, m->s_col[x], TRUE)) goto fail;
        if (m->r_col[x] && !set_int(m->lp, m->r_col[x], TRUE)) goto fail;
    }
    if (!(m->levers & RM_MILP_FREE_CONT))
        for (int f = 0; f < m->nfree; f++)
            if (!set_int(m->lp, m->fv[f].col, TRUE)) goto fail;
    return RM_OK;
fail:
    return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_int failed");
}

/* Names every column C<k>, then deletes the empty ones (from the last, so
 * the numbers still to visit do not move): the names keep the numbering. */
static int drop_empty_columns(rm_lp_model *m, int *dropped, rm_err *e)
{
    char name[32];
    *dropped = 0;
    REAL *col = malloc(((size_t)m->nrows + 1) * sizeof *col);
    int *nz = malloc(((size_t)m->nrows + 1) * sizeof *nz);
    if (!col || !nz) {
        free(col);
        free(nz);
        return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    }
    int rc = RM_OK;
    for (int c = 1; c <= m->ncols && rc == RM_OK; c++) {
        snprintf(name, sizeof name, "C%d", c);
        if (!set_col_name(m->lp, c, name)) rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_col_name failed");
    }
    for (int c = m->ncols; c >= 1 && rc == RM_OK; c--) {
        if (get_columnex(m->lp, c, col, nz) != 0) continue;
        if (!del_column(m->lp, c)) rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve del_column failed on column %d", c);
        (*dropped)++;
    }
    free(col);
    free(nz);
    return rc;
}

int rm_lp_model_write_mps(rm_lp_model *m, const char *path, int *dropped, rm_err *e)
{
    int rc = drop_empty_columns(m, dropped, e);
    if (rc != RM_OK) return rc;
    /* lp_solve's prototype takes a mutable name but only reads it. */
    char *name = strdup(path);
    if (!name) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    MYBOOL ok = write_freemps(m->lp, name);
    free(name);
    if (!ok) return rm_errorf(e, RM_ERR_IO, "lp_solve write_freemps failed for %s", path);
    return RM_OK;
}

/* Maps a solve() code that is neither a solution nor infeasibility to an error. */
int rm_lp_failure(int code, const char *what, rm_err *e)
{
    if (code == NOMEMORY) return rm_errorf(e, RM_ERR_NOMEM, "lp_solve ran out of memory solving the %s", what);
    if (code == UNBOUNDED)
        return rm_errorf(e, RM_ERR_SOLVER, "lp_solve reports the %s unbounded, which a bounded model cannot be", what);
    return rm_errorf(e, RM_ERR_SOLVER, "lp_solve failed on the %s: solve() returned %d (%s)", what, code,
                     rm_lp_code_name(code));
}

/* ---------------------------------------------------------------- solving */

rm_lp_watch rm_lp_watch_make(long node_limit, double deadline)
{
    rm_lp_watch w;
    memset(&w, 0, sizeof w);
    w.node_limit = node_limit;
    w.deadline = deadline;
    w.t0 = rm_now();
    w.first = -1;
    return w;
}

static int watch_abort(lprec *lp, void *h)
{
    rm_lp_watch *c = h;
    if (c->node_limit > 0 && (long)get_total_nodes(lp) >= c->node_limit) {
        c->node_abort = 1;
        return TRUE;
    }
    double now = c->deadline > 0 || c->cancel ? rm_now() : 0;
    if (c->deadline > 0 && now >= c->deadline) {
        c->time_abort = 1;
        return TRUE;
    }
    if (c->cancel && now >= c->next_check) {
        c->next_check = now + 0.005;
        if (c->cancel(c->cancel_ctx)) {
            c->cancelled = 1;
            return TRUE;
        }
    }
    return FALSE;
}

static void watch_msg(lprec *lp, void *h, int msg)
{
    (void)lp;
    rm_lp_watch *c = h;
    if (msg & (MSG_MILPBETTER | MSG_MILPFEASIBLE)) {
        if (c->first < 0) c->first = rm_now() - c->t0;
        if (msg & MSG_MILPBETTER) c->improvements++;
    }
}

static void set_limits(lprec *lp, double deadline)
{
    if (deadline > 0) {
        double left = deadline - rm_now();
        set_timeout(lp, left < 1 ? 1 : (long)ceil(left));
    } else {
        set_timeout(lp, 0);
    }
}

int rm_lp_solve_watched(lprec *lp, rm_lp_watch *w, int track_improvements)
{
    set_limits(lp, w->deadline);
    put_abortfunc(lp, watch_abort, w);
    if (track_improvements) put_msgfunc(lp, watch_msg, w, MSG_MILPBETTER | MSG_MILPFEASIBLE);
    int code = solve(lp);
    put_abortfunc(lp, NULL, NULL);
    if (track_improvements) put_msgfunc(lp, NULL, NULL, 0);
    RM_LOG_DEBUG("lp_solve solve(): %d (%s) after %.3f s, %.0f nodes", code, rm_lp_code_name(code), rm_now() - w->t0,
                 (double)get_total_nodes(lp));
    return code;
}

int rm_lp_solve_relaxation(rm_lp_model *m, int *code, double *bound, double deadline, rm_err *e)
{
    rm_lp_watch w = rm_lp_watch_make(0, deadline);
    int c = rm_lp_solve_watched(m->lp, &w, 0);
    *code = c;
    if (c == OPTIMAL) {
        *bound = m->cost_const + m->cost_scale * get_objective(m->lp);
        return RM_OK;
    }
    if (c == INFEASIBLE || c == TIMEOUT || c == USERABORT || c == SUBOPTIMAL) return RM_OK;
    return rm_lp_failure(c, "LP relaxation", e);
}

void rm_lp_fill_fractional(const rm_lp_model *m, const double *v, double *S, double *R)
{
    int n = m->n;
    for (int t = 0; t < n; t++)
        for (int i = 0; i < n; i++) {
            size_t x = (size_t)t * n + i;
            if (S) S[x] = m->s_col[x] ? v[m->s_col[x] - 1] : 0.0;
            if (R) R[x] = i == t ? 1.0 : m->r_col[x] ? v[m->r_col[x] - 1] : 0.0;
        }
}

/* ---------------------------------------------------------------- relaxation */

/* The activation budget the model is built for: budget 0 means unlimited,
 * which the checkpoint-all peak covers (it is optimal then). */
static int model_budget(size_t *act, const rm_problem *p, rm_err *e)
{
    if (p->budget != 0) {
        *act = rm_problem_activation_budget(p);
        return RM_OK;
    }
    rm_schedule *ca = NULL;
    rm_sim_result sim;
    int rc = rm_checkpoint_all_fit(&ca, &sim, p, e);
    rm_schedule_free(ca);
    if (rc != RM_OK) return rc;
    *act = sim.peak_bytes > 0 ? sim.peak_bytes : 1;
    return RM_OK;
}

/* The relaxation's values after an optimal solve, into out: v by column
 * (CBC's), or NULL for lp_solve's. */
static int take_relaxation(rm_milp_relaxation *out, const rm_lp_model *m, const rm_problem *p, double bound, double *v,
                           rm_err *e)
{
    size_t nn = (size_t)p->n * (size_t)p->n;
    out->S = malloc(nn * sizeof *out->S);
    out->R = malloc(nn * sizeof *out->R);
    int rc = RM_OK;
    if (!out->S || !out->R) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory for the relaxation (n = %d)", p->n);
    } else if (!v && (!get_ptr_variables(m->lp, &v) || !v)) {
        rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve get_ptr_variables failed after the LP relaxation");
    } else {
        rm_lp_fill_fractional(m, v, out->S, out->R);
        out->n = p->n;
        out->bound = bound;
    }
    if (rc != RM_OK) rm_milp_relaxation_free(out);
    return rc;
}

int rm_milp_relax_kept(rm_milp_relaxation *out, rm_lp_model **kept, const rm_problem *p, unsigned levers,
                       double time_limit_s, rm_err *e)
{
    double t0 = rm_now();
    memset(out, 0, sizeof *out);
    int rc = rm_lp_check_problem(p, "milp", e);
    if (rc != RM_OK) return rc;
    if ((rc = rm_problem_check_budget(p, "lp relaxation", e)) != RM_OK) return rc;
    size_t act;
    if ((rc = model_budget(&act, p, e)) != RM_OK) return rc;
    rm_lp_model own, *m = kept ? *kept : NULL;
    double deadline = time_limit_s > 0 ? t0 + time_limit_s : 0;
    if (m && (m->levers != levers || m->n != p->n))
        return rm_errorf(e, RM_ERR_INVALID, "milp: a kept model of another problem");
    if (m) {
        if ((rc = rm_lp_model_set_budget(m, act, e)) != RM_OK) return rc; /* (the caller keeps the model) */
    } else {
        if (kept && !(m = malloc(sizeof *m))) return rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory");
        if (!kept) m = &own;
        if ((rc = rm_lp_model_build(m, p, act, levers, NULL, NULL, 0, deadline, e)) != RM_OK) {
            if (m->stopped)
                rc = rm_errorf(e, RM_ERR_INFEASIBLE, "the LP relaxation hit the time limit (%g s) building its model",
                               time_limit_s);
            if (kept)
                rm_lp_model_discard(m);
            else
                rm_lp_model_free(m);
            return rc;
        }
        if (kept) *kept = m;
    }
    int code;
    double bound = 0, *x = NULL;
    if (m->ncols >= RM_CLP_MIN_COLUMNS && rm_milp_engine_have_cbc() && !(levers & RM_MILP_LPSOLVE_ONLY)) {
        /* CBC's Clp, where it is faster: a killed child answers nothing. */
        rm_err ce = {RM_OK, ""};
        if (!(x = malloc((size_t)m->ncols * sizeof *x))) {
            rc = rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory for the relaxation (n = %d)", p->n);
        } else if ((rc = rm_cbc_relax(&bound, x, m, deadline, &ce)) == RM_OK) {
            code = OPTIMAL;
        } else if (rc == RM_ERR_INFEASIBLE || rc == RM_ERR_BUDGET) {
            code = rc == RM_ERR_INFEASIBLE ? INFEASIBLE : TIMEOUT;
            rc = RM_OK;
        } else {
            RM_LOG_WARN("lp relaxation: CBC failed (%s): lp_solve solves it", ce.msg);
            free(x);
            x = NULL;
            rc = rm_lp_solve_relaxation(m, &code, &bound, deadline, e);
        }
    } else {
        rc = rm_lp_solve_relaxation(m, &code, &bound, deadline, e);
    }
    if (rc == RM_OK && code == INFEASIBLE)
        rc = rm_errorf(e, RM_ERR_INFEASIBLE, "the LP relaxation is infeasible: no schedule fits %zu bytes", act);
    else if (rc == RM_OK && code != OPTIMAL && time_limit_s > 0)
        rc = rm_errorf(e, RM_ERR_INFEASIBLE, "the LP relaxation hit the time limit (%g s) before its optimum (%s)",
                       time_limit_s, rm_lp_code_name(code));
    else if (rc == RM_OK && code != OPTIMAL)
        rc = rm_errorf(e, RM_ERR_INFEASIBLE, "lp_solve stopped the LP relaxation before its optimum (%s)",
                       rm_lp_code_name(code));
    if (rc == RM_OK) rc = take_relaxation(out, m, p, bound, x, e);
    free(x);
    if (!kept) rm_lp_model_free(m);
    out->seconds = rm_now() - t0;
    RM_LOG_DEBUG("lp relaxation: %d nodes, bound %.6g, %.3f s%s", p->n, out->bound, out->seconds,
                 rc == RM_OK ? "" : " (no optimum)");
    return rc;
}

int rm_milp_relax(rm_milp_relaxation *out, const rm_problem *p, unsigned levers, double time_limit_s, rm_err *e)
{
    return rm_milp_relax_kept(out, NULL, p, levers, time_limit_s, e);
}

void rm_milp_relaxation_free(rm_milp_relaxation *r)
{
    if (!r) return;
    free(r->S);
    free(r->R);
    r->S = r->R = NULL;
}
