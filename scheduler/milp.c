/* The Checkmate rematerialization MILP, built sparsely for lp_solve 5.5 and
 * solved with every lever that makes lp_solve usable on it (DESIGN.md,
 * section 4). See milp.h for the formulation and the levers.
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
 * rebuilt as the cheapest R for that S (rm_milp_cheapest_R). */
#include <lp_lib.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "milp.h"
#include "simulate.h"
#include "strategy.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *rm_milp_status_name(rm_milp_status s)
{
    switch (s) {
    case RM_MILP_OPTIMAL: return "optimal";
    case RM_MILP_FEASIBLE: return "feasible";
    case RM_MILP_INFEASIBLE: return "infeasible";
    case RM_MILP_NO_SOLUTION: return "no solution";
    }
    return "unknown";
}

void rm_milp_options_default(rm_milp_options *o)
{
    memset(o, 0, sizeof *o);
    o->levers = RM_MILP_DEFAULT;
    o->rounding_seeds = 16;
    /* NODE_GAPSELECT: measured on random training graphs of 22-38 nodes, it
     * proved 3 of 4 hard instances optimal within 2000 nodes where lp_solve's
     * default (NODE_FIRSTSELECT) proved 1 (see milp.h). */
    o->bb_rule = NODE_GAPSELECT;
}

static const char *lp_code_name(int code)
{
    switch (code) {
    case UNKNOWNERROR: return "UNKNOWNERROR";
    case DATAIGNORED: return "DATAIGNORED";
    case NOBFP: return "NOBFP (no basis factorization package)";
    case NOMEMORY: return "NOMEMORY";
    case NOTRUN: return "NOTRUN";
    case OPTIMAL: return "OPTIMAL";
    case SUBOPTIMAL: return "SUBOPTIMAL";
    case INFEASIBLE: return "INFEASIBLE";
    case UNBOUNDED: return "UNBOUNDED";
    case DEGENERATE: return "DEGENERATE";
    case NUMFAILURE: return "NUMFAILURE (numerical failure)";
    case USERABORT: return "USERABORT";
    case TIMEOUT: return "TIMEOUT";
    case PRESOLVED: return "PRESOLVED";
    case PROCFAIL: return "PROCFAIL (branch and bound failed)";
    case PROCBREAK: return "PROCBREAK";
    case FEASFOUND: return "FEASFOUND";
    case NOFEASFOUND: return "NOFEASFOUND";
    case FATHOMED: return "FATHOMED";
    case ACCURACYERROR: return "ACCURACYERROR";
    }
    return "unknown code";
}

static int check_problem(const rm_problem *p, rm_err *e)
{
    if (!p || p->n <= 0 || !p->nodes) return rm_errorf(e, RM_ERR_INVALID, "milp: empty problem");
    for (int k = 0; k < p->n; k++) {
        const rm_problem_node *nd = &p->nodes[k];
        if (nd->ndeps < 0 || (nd->ndeps > 0 && !nd->deps))
            return rm_errorf(e, RM_ERR_INVALID, "milp: node %d (%s) has a bad dependency list", k, nd->name);
        if (!(nd->cost >= 0) || !isfinite(nd->cost))
            return rm_errorf(e, RM_ERR_INVALID, "milp: node %d (%s) has cost %g; costs must be finite and >= 0", k,
                             nd->name, nd->cost);
        for (int d = 0; d < nd->ndeps; d++)
            if (nd->deps[d] < 0 || nd->deps[d] >= k)
                return rm_errorf(e, RM_ERR_INVALID,
                                 "milp: node %d (%s) depends on %d; dependencies must be earlier nodes", k, nd->name,
                                 nd->deps[d]);
    }
    return RM_OK;
}

/* The largest q such that every cost is an integer multiple of q, when the
 * costs are integers (FLOP counts, test costs); 0 otherwise. Any two schedule
 * costs then differ by a multiple of q, which turns "better than the
 * incumbent" into "at least q better" and rounds LP bounds up. */
static double cost_step(const rm_problem *p)
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
static double step_up(double bound, double step)
{
    if (step <= 0) return bound;
    return ceil(bound / step - 1e-6) * step;
}

/* ---------------------------------------------------------------- model */

typedef struct free_var {
    int t, i, k, col;
} free_var;

typedef struct model {
    const rm_problem *p;
    int n;
    unsigned levers;
    int *s_col, *r_col, *u_col; /* n x n; 0 = no column (fixed at 0; R[t][t] is the constant 1) */
    free_var *fv;               /* sorted by stage, then point k */
    int nfree;
    int *fv_start;              /* n + 1 */
    int *lastdesc;              /* largest index reachable from i (i itself when it has no users) */
    int *ustart, *ulist;        /* users of each node, ascending */
    int ncols, nrows, nint, nS, nR;
    double cost_scale, cost_const; /* objective = cost_const + cost_scale * lp objective */
    double step;                   /* every cost is a multiple of it (0 = no such step) */
    double mem_scale, mem_rhs;     /* budget rows are in units of mem_scale bytes */
    double *rv;
    int *ri;
    lprec *lp;
} model;

static void model_free(model *m)
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
    memset(m, 0, sizeof *m);
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

static int s_exists(const model *m, int t, int i)
{
    return t >= 1 && i < t && (!(m->levers & RM_MILP_PRUNE) || m->lastdesc[i] >= t);
}
static int r_exists(const model *m, int t, int i)
{
    return i < t && (!(m->levers & RM_MILP_PRUNE) || m->lastdesc[i] >= t);
}

static int is_user(const model *m, int i, int j)
{
    for (int u = m->ustart[i]; u < m->ustart[i + 1]; u++)
        if (m->ulist[u] == j) return 1;
    return 0;
}

static int add_row(model *m, int cnt, int type, double rhs, rm_err *e)
{
    if (cnt == 0) {
        int ok = type == LE ? rhs >= 0 : type == GE ? rhs <= 0 : rhs == 0;
        if (ok) return RM_OK;
        return rm_errorf(e, RM_ERR_SOLVER, "milp: internal error: an empty row with right-hand side %g", rhs);
    }
    if (!add_constraintex(m->lp, cnt, m->rv, m->ri, type, rhs))
        return rm_errorf(e, RM_ERR_SOLVER, "lp_solve add_constraintex failed on row %d (%d entries)", m->nrows + 1,
                         cnt);
    m->nrows++;
    return RM_OK;
}

static void lp_log(lprec *lp, void *h, char *buf)
{
    (void)lp;
    const rm_milp_options *o = h;
    if (o && o->log) o->log(o->log_ctx, buf);
}

/* Builds the model for an activation budget of act bytes (act > 0). All
 * columns are continuous in [0, 1]; the MILP makes S and R binary. */
static int model_build(model *m, const rm_problem *p, size_t act, unsigned levers, const rm_milp_options *logopt,
                       rm_err *e)
{
    memset(m, 0, sizeof *m);
    int n = p->n, rc;
    size_t nn = (size_t)n * (size_t)n;
    m->p = p;
    m->n = n;
    m->levers = levers;
    m->s_col = calloc(nn, sizeof *m->s_col);
    m->r_col = calloc(nn, sizeof *m->r_col);
    m->u_col = calloc(nn, sizeof *m->u_col);
    m->lastdesc = malloc((size_t)n * sizeof *m->lastdesc);
    m->ustart = calloc((size_t)n + 1, sizeof *m->ustart);
    m->fv_start = calloc((size_t)n + 1, sizeof *m->fv_start);
    if (!m->s_col || !m->r_col || !m->u_col || !m->lastdesc || !m->ustart || !m->fv_start) goto nomem;

    size_t nedges = 0;
    for (int k = 0; k < n; k++) nedges += (size_t)p->nodes[k].ndeps;
    m->ulist = malloc((nedges + 1) * sizeof *m->ulist);
    if (!m->ulist) goto nomem;
    for (int k = 0; k < n; k++)
        for (int d = 0; d < p->nodes[k].ndeps; d++) m->ustart[p->nodes[k].deps[d] + 1]++;
    for (int i = 0; i < n; i++) m->ustart[i + 1] += m->ustart[i];
    {
        int *fill = malloc((size_t)n * sizeof *fill);
        if (!fill) goto nomem;
        memcpy(fill, m->ustart, (size_t)n * sizeof *fill);
        for (int k = 0; k < n; k++) /* k ascending: each user list comes out sorted */
            for (int d = 0; d < p->nodes[k].ndeps; d++) m->ulist[fill[p->nodes[k].deps[d]]++] = k;
        free(fill);
    }
    for (int i = n - 1; i >= 0; i--) {
        m->lastdesc[i] = i;
        for (int u = m->ustart[i]; u < m->ustart[i + 1]; u++)
            if (m->lastdesc[m->ulist[u]] > m->lastdesc[i]) m->lastdesc[i] = m->lastdesc[m->ulist[u]];
    }

    /* FREE variables: value i freed right after computing k in stage t. */
    size_t fcap = 0;
    for (int t = 0; t < n; t++)
        for (int k = 0; k <= t; k++) fcap += (size_t)p->nodes[k].ndeps + 1;
    m->fv = malloc((fcap + 1) * sizeof *m->fv);
    if (!m->fv) goto nomem;
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
                m->fv[m->nfree++] = (free_var){t, i, k, 0};
            }
        }
    }
    m->fv_start[n] = m->nfree;

    /* Column numbers. Stage order (S_t, R_t, FREE_t, U_t for t = 0..n-1) let
     * lp_solve find first solutions where a grouped order found none. */
    int stage_order = (levers & RM_MILP_STAGE_ORDER) != 0, prefix = (levers & RM_MILP_PREFIX_ROWS) != 0;
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

    m->rv = malloc(((size_t)m->ncols + 2) * sizeof *m->rv);
    m->ri = malloc(((size_t)m->ncols + 2) * sizeof *m->ri);
    if (!m->rv || !m->ri) goto nomem;

    /* Scales: costs relative to the largest, bytes relative to the budget,
     * so lp_solve sees coefficients <= 1 and a right-hand side near 1. */
    double cmax = 0;
    m->cost_const = 0;
    for (int k = 0; k < n; k++) {
        if (p->nodes[k].cost > cmax) cmax = p->nodes[k].cost;
        m->cost_const += p->nodes[k].cost;
    }
    m->cost_scale = cmax > 0 ? cmax : 1;
    m->step = cost_step(p);
    size_t g = 0;
    for (int k = 0; k < n; k++) g = gcd_size(g, p->nodes[k].bytes);
    if (g == 0) g = 1;
    m->mem_scale = (double)act;
    /* Peaks are multiples of g, so the budget is really act rounded down to
     * one; half a unit of slack above that keeps exact fits feasible despite
     * lp_solve's tolerances and still rejects every peak above the budget. */
    m->mem_rhs = ((double)(act - act % g) + 0.5 * (double)g) / m->mem_scale;

    m->lp = make_lp(0, m->ncols);
    if (!m->lp) return rm_errorf(e, RM_ERR_NOMEM, "lp_solve make_lp failed for %d columns", m->ncols);
    lprec *lp = m->lp;
    if (!set_outputfile(lp, "")) return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_outputfile(\"\") failed");
    put_logfunc(lp, lp_log, (void *)logopt);
    set_verbose(lp, logopt && logopt->log ? logopt->verbosity : NEUTRAL);
    set_minim(lp);
    /* The rows are scaled already (bytes / budget, cost / largest cost);
     * lp_solve's geometric scaling on top made the VGG16 LP 1.5-2x slower. */
    if (levers & RM_MILP_NO_SCALING) set_scaling(lp, SCALE_NONE);
    for (int c = 1; c <= m->ncols; c++)
        if (!set_bounds(lp, c, 0.0, 1.0))
            return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_bounds failed on column %d", c);
    if (!prefix)
        for (size_t x = 0; x < nn; x++)
            if (m->u_col[x] && !set_bounds(lp, m->u_col[x], 0.0, m->mem_rhs))
                return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_bounds failed on column %d", m->u_col[x]);

    int cnt = 0;
    for (int t = 0; t < n; t++)
        for (int i = 0; i < t; i++)
            if (m->r_col[(size_t)t * n + i]) {
                m->rv[cnt] = p->nodes[i].cost / m->cost_scale;
                m->ri[cnt++] = m->r_col[(size_t)t * n + i];
            }
    if (!set_obj_fnex(lp, cnt, m->rv, m->ri)) return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_obj_fnex failed");

    if (!set_add_rowmode(lp, TRUE)) return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_add_rowmode(TRUE) failed");
#define S_(t, i) m->s_col[(size_t)(t) * n + (i)]
#define R_(t, i) m->r_col[(size_t)(t) * n + (i)]
    for (int t = 0; t < n; t++) {
        /* retention into stage t + 1 */
        if (t + 1 < n)
            for (int i = 0; i < t; i++) {
                if (!S_(t + 1, i)) continue;
                cnt = 0;
                m->rv[cnt] = 1, m->ri[cnt++] = S_(t + 1, i);
                if (S_(t, i)) m->rv[cnt] = -1, m->ri[cnt++] = S_(t, i);
                if (R_(t, i)) m->rv[cnt] = -1, m->ri[cnt++] = R_(t, i);
                if ((rc = add_row(m, cnt, LE, 0, e)) != RM_OK) return rc;
            }
        /* inputs resident when computing k */
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
        /* frees */
        for (int f = m->fv_start[t]; f < m->fv_start[t + 1]; f++) {
            const free_var *v = &m->fv[f];
            if (v->k != t) {
                m->rv[0] = 1, m->ri[0] = v->col, m->rv[1] = -1, m->ri[1] = R_(t, v->k);
                if ((rc = add_row(m, 2, LE, 0, e)) != RM_OK) return rc;
            }
            if (t + 1 < n && S_(t + 1, v->i)) {
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
        /* A value is freed at most once: without this the LP relaxation
         * frees fractional copies several times over and its bound is weak. */
        if (levers & RM_MILP_FREE_CUT)
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
        /* budget */
        int f = m->fv_start[t];
        if (prefix) {
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
                if ((rc = add_row(m, cnt, LE, rhs, e)) != RM_OK) return rc;
                for (; f < m->fv_start[t + 1] && m->fv[f].k == k; f++)
                    m->rv[cnt] = -(double)p->nodes[m->fv[f].i].bytes / m->mem_scale, m->ri[cnt++] = m->fv[f].col;
            }
        } else {
            /* Checkmate's U: U[t][k] = U[t][prev] - frees(prev) + b_k R[t][k], 0 <= U <= budget. */
            int prev = -1;
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
        }
    }
#undef S_
#undef R_
    if (!set_add_rowmode(lp, FALSE)) return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_add_rowmode(FALSE) failed");
    return RM_OK;
nomem:
    return rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory building the model (n = %d)", n);
}

/* Maps a solve() code that is neither a solution nor infeasibility to an error. */
static int lp_failure(int code, const char *what, rm_err *e)
{
    if (code == NOMEMORY) return rm_errorf(e, RM_ERR_NOMEM, "lp_solve ran out of memory solving the %s", what);
    if (code == UNBOUNDED)
        return rm_errorf(e, RM_ERR_SOLVER, "lp_solve reports the %s unbounded, which a bounded model cannot be",
                         what);
    return rm_errorf(e, RM_ERR_SOLVER, "lp_solve failed on the %s: solve() returned %d (%s)", what, code,
                     lp_code_name(code));
}

typedef struct bb_ctx {
    long node_limit;
    double deadline; /* absolute now_s(); 0 = none */
    double t0;
    double first;
    int improvements;
    int node_abort, time_abort;
} bb_ctx;

static int bb_abort(lprec *lp, void *h)
{
    bb_ctx *c = h;
    if (c->node_limit > 0 && (long)get_total_nodes(lp) >= c->node_limit) {
        c->node_abort = 1;
        return TRUE;
    }
    if (c->deadline > 0 && now_s() >= c->deadline) {
        c->time_abort = 1;
        return TRUE;
    }
    return FALSE;
}

static void bb_msg(lprec *lp, void *h, int msg)
{
    (void)lp;
    bb_ctx *c = h;
    if (msg & (MSG_MILPBETTER | MSG_MILPFEASIBLE)) {
        if (c->first < 0) c->first = now_s() - c->t0;
        if (msg & MSG_MILPBETTER) c->improvements++;
    }
}

static void set_limits(lprec *lp, double deadline)
{
    if (deadline > 0) {
        double left = deadline - now_s();
        set_timeout(lp, left < 1 ? 1 : (long)ceil(left));
    } else {
        set_timeout(lp, 0);
    }
}

/* Solves the model as an LP. *status: OPTIMAL, INFEASIBLE, or a limit. */
static int solve_lp(model *m, int *status, double *bound, double deadline, rm_err *e)
{
    bb_ctx ctx = {0, deadline, now_s(), -1, 0, 0, 0};
    set_limits(m->lp, deadline);
    put_abortfunc(m->lp, bb_abort, &ctx);
    int code = solve(m->lp);
    put_abortfunc(m->lp, NULL, NULL);
    *status = code;
    if (code == OPTIMAL) {
        *bound = m->cost_const + m->cost_scale * get_objective(m->lp);
        return RM_OK;
    }
    if (code == INFEASIBLE || code == TIMEOUT || code == USERABORT || code == SUBOPTIMAL) return RM_OK;
    return lp_failure(code, "LP relaxation", e);
}

static void fill_fractional(const model *m, const double *v, double *S, double *R)
{
    int n = m->n;
    for (int t = 0; t < n; t++)
        for (int i = 0; i < n; i++) {
            size_t x = (size_t)t * n + i;
            if (S) S[x] = m->s_col[x] ? v[m->s_col[x] - 1] : 0.0;
            if (R) R[x] = i == t ? 1.0 : m->r_col[x] ? v[m->r_col[x] - 1] : 0.0;
        }
}

static int budget_act(size_t *act, const rm_problem *p)
{
    if (p->budget == 0) return 0;
    *act = p->budget > p->fixed_bytes ? p->budget - p->fixed_bytes : 0;
    return 1;
}

/* The activation budget the model is built for: budget 0 means unlimited,
 * which the checkpoint-all peak covers (it is optimal then). */
static int model_budget(size_t *act, const rm_problem *p, rm_err *e)
{
    if (budget_act(act, p)) return RM_OK;
    rm_schedule *ca = NULL;
    int rc = rm_schedule_create(&ca, p->n, e);
    if (rc != RM_OK) return rc;
    rm_checkpoint_all_fill(ca, p);
    rm_sim_result sim;
    rc = rm_simulate(&sim, p, ca, e);
    rm_schedule_free(ca);
    if (rc != RM_OK) return rc;
    *act = sim.peak_bytes > 0 ? sim.peak_bytes : 1;
    return RM_OK;
}

int rm_milp_relax(rm_milp_relaxation *out, const rm_problem *p, unsigned levers, double time_limit_s, rm_err *e)
{
    double t0 = now_s();
    memset(out, 0, sizeof *out);
    int rc = check_problem(p, e);
    if (rc != RM_OK) return rc;
    size_t act;
    if ((rc = model_budget(&act, p, e)) != RM_OK) return rc;
    size_t lb = rm_problem_peak_lower_bound(p);
    if (lb > act)
        return rm_errorf(e, RM_ERR_INFEASIBLE,
                         "activation budget %zu bytes is below the trivial lower bound %zu (largest node plus inputs)",
                         act, lb);
    model m;
    if ((rc = model_build(&m, p, act, levers, NULL, e)) != RM_OK) {
        model_free(&m);
        return rc;
    }
    int status;
    double bound = 0;
    rc = solve_lp(&m, &status, &bound, time_limit_s > 0 ? t0 + time_limit_s : 0, e);
    if (rc == RM_OK && status == INFEASIBLE)
        rc = rm_errorf(e, RM_ERR_INFEASIBLE, "the LP relaxation is infeasible: no schedule fits %zu bytes", act);
    else if (rc == RM_OK && status != OPTIMAL && time_limit_s > 0)
        rc = rm_errorf(e, RM_ERR_INFEASIBLE, "the LP relaxation hit the time limit (%g s) before its optimum (%s)",
                       time_limit_s, lp_code_name(status));
    else if (rc == RM_OK && status != OPTIMAL)
        rc = rm_errorf(e, RM_ERR_INFEASIBLE, "lp_solve stopped the LP relaxation before its optimum (%s)",
                       lp_code_name(status));
    if (rc == RM_OK) {
        size_t nn = (size_t)p->n * (size_t)p->n;
        out->S = malloc(nn * sizeof *out->S);
        out->R = malloc(nn * sizeof *out->R);
        double *v = NULL;
        if (!out->S || !out->R) {
            rc = rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory for the relaxation (n = %d)", p->n);
        } else if (!get_ptr_variables(m.lp, &v) || !v) {
            rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve get_ptr_variables failed after the LP relaxation");
        } else {
            fill_fractional(&m, v, out->S, out->R);
            out->n = p->n;
            out->bound = bound;
        }
        if (rc != RM_OK) rm_milp_relaxation_free(out);
    }
    model_free(&m);
    out->seconds = now_s() - t0;
    return rc;
}

void rm_milp_relaxation_free(rm_milp_relaxation *r)
{
    if (!r) return;
    free(r->S);
    free(r->R);
    r->S = r->R = NULL;
}

/* ---------------------------------------------------------------- MILP */

typedef struct best_sched {
    rm_schedule *s;
    rm_sim_result sim;
} best_sched;

/* Keeps cand if it fits and beats *best (taking ownership either way). */
static void offer(best_sched *best, rm_schedule *cand, const rm_sim_result *sim)
{
    /* Equal cost: fewer recomputations (of zero-cost nodes), then lower peak. */
    if (!best->s || sim->cost < best->sim.cost ||
        (sim->cost == best->sim.cost &&
         (sim->recomputations < best->sim.recomputations ||
          (sim->recomputations == best->sim.recomputations && sim->peak_bytes < best->sim.peak_bytes)))) {
        rm_schedule_free(best->s);
        best->s = cand;
        best->sim = *sim;
    } else {
        rm_schedule_free(cand);
    }
}

static int near_equal(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b))); }

int rm_strategy_milp(rm_schedule **out, rm_milp_result *info, const rm_problem *p, const rm_milp_options *opt,
                     rm_err *e)
{
    double t0 = now_s();
    rm_milp_options dflt;
    rm_milp_result dummy;
    if (!opt) {
        rm_milp_options_default(&dflt);
        opt = &dflt;
    }
    if (!info) info = &dummy;
    memset(info, 0, sizeof *info);
    info->solver_code = -100;
    info->first_solution_s = -1;
    info->incumbent_cost = -1;
    info->status = RM_MILP_NO_SOLUTION;
    if (!out) return rm_errorf(e, RM_ERR_INVALID, "milp: out is NULL");
    *out = NULL;
    int rc = check_problem(p, e);
    if (rc != RM_OK) return rc;
    unsigned lv = opt->levers;
    double deadline = opt->time_limit_s > 0 ? t0 + opt->time_limit_s : 0;
    int n = p->n;

    size_t act = 0;
    int limited = budget_act(&act, p);
    size_t lb = rm_problem_peak_lower_bound(p);
    if (limited && lb > act) {
        info->status = RM_MILP_INFEASIBLE;
        info->seconds = now_s() - t0;
        if (p->fixed_bytes >= p->budget)
            return rm_errorf(e, RM_ERR_INFEASIBLE, "milp: fixed bytes %zu leave nothing of the budget %zu",
                             p->fixed_bytes, p->budget);
        return rm_errorf(e, RM_ERR_INFEASIBLE,
                         "milp: activation budget %zu bytes is below the trivial lower bound %zu "
                         "(the largest node plus its inputs); no schedule exists",
                         act, lb);
    }

    best_sched best = {0};
    model m = {0};
    int lp_done = 0;
    double lower = 0; /* the LP bound rounded up to the cost step */
    rm_schedule *cand = NULL;

    /* Checkpoint-all costs exactly the sum of the costs, which every
     * schedule pays at least: when it fits it is optimal. */
    if ((rc = rm_schedule_create(&cand, n, e)) != RM_OK) goto done;
    rm_checkpoint_all_fill(cand, p);
    rm_sim_result sim;
    if ((rc = rm_simulate(&sim, p, cand, e)) != RM_OK) {
        rm_err_context(e, "milp: checkpoint-all rejected by the simulator");
        goto done;
    }
    if (!limited || sim.peak_bytes <= act) {
        if (!limited || (lv & RM_MILP_SHORTCUT)) {
            offer(&best, cand, &sim);
            cand = NULL;
            info->status = RM_MILP_OPTIMAL;
            info->lp_bound = sim.cost;
            goto done;
        }
        if (lv & RM_MILP_INCUMBENT) {
            offer(&best, cand, &sim);
            cand = NULL;
        }
    }
    rm_schedule_free(cand);
    cand = NULL;

    if (opt->incumbent) {
        if (opt->incumbent->n != n) {
            rc = rm_errorf(e, RM_ERR_INVALID, "milp: the incumbent has %d stages, the problem %d nodes",
                           opt->incumbent->n, n);
            goto done;
        }
        if ((rc = rm_schedule_create(&cand, n, e)) != RM_OK) goto done;
        memcpy(cand->R, opt->incumbent->R, (size_t)n * n);
        memcpy(cand->S, opt->incumbent->S, (size_t)n * n);
        if ((rc = rm_simulate(&sim, p, cand, e)) != RM_OK) {
            rm_err_context(e, "milp: the given incumbent is invalid");
            goto done;
        }
        if (sim.peak_bytes <= act) offer(&best, cand, &sim);
        else rm_schedule_free(cand);
        cand = NULL;
    }

    if ((rc = model_build(&m, p, act, lv, opt, e)) != RM_OK) goto done;
    info->ncols = m.ncols;
    info->nrows = m.nrows;
    info->nint = m.nS + m.nR + ((lv & RM_MILP_FREE_CONT) ? 0 : m.nfree);

    /* 1. LP relaxation: the bound, and the fractional S to round. */
    double lp_t0 = now_s();
    int status;
    double lp_bound = 0;
    rc = solve_lp(&m, &status, &lp_bound, deadline, e);
    info->lp_seconds = now_s() - lp_t0;
    if (rc != RM_OK) goto done;
    if (status == INFEASIBLE && best.s) {
        /* The relaxation has no cutoff, and a schedule the simulator
         * accepted within the budget is a point of it: lp_solve's answer is
         * numerical trouble, not a proof. Reported, not papered over. */
        rc = rm_errorf(e, RM_ERR_SOLVER,
                       "milp: lp_solve reports the LP relaxation infeasible, but a schedule of cost %.6g fits %zu "
                       "bytes: numerical trouble in the solver",
                       best.sim.cost, act);
        goto done;
    }
    if (status == INFEASIBLE) {
        info->status = RM_MILP_INFEASIBLE;
        rc = rm_errorf(e, RM_ERR_INFEASIBLE, "milp: the LP relaxation is infeasible: no schedule fits %zu bytes", act);
        goto done;
    }
    if (status != OPTIMAL) goto limit_hit;
    info->lp_bound = lp_bound;
    lp_done = 1;

    /* 2. Incumbent from the rounded relaxation. */
    if (lv & RM_MILP_INCUMBENT) {
        double *v = NULL, *S_frac = malloc((size_t)n * n * sizeof *S_frac);
        if (!S_frac) {
            rc = rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory");
            goto done;
        }
        if (!get_ptr_variables(m.lp, &v) || !v) {
            free(S_frac);
            rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve get_ptr_variables failed after the LP relaxation");
            goto done;
        }
        fill_fractional(&m, v, S_frac, NULL);
        rm_lp_round_options ro;
        rm_lp_round_options_default(&ro);
        ro.seeds = opt->rounding_seeds;
        rm_lp_round_result rr;
        rm_err re = {0};
        int rrc = rm_lp_round_from(&cand, &rr, p, S_frac, lp_bound, &ro, &re);
        free(S_frac);
        if (rrc == RM_ERR_INFEASIBLE && !best.s) {
            /* Nothing to cut with yet: round relaxations of tighter budgets. */
            ro.time_limit_s = deadline > 0 ? deadline - now_s() : 0;
            if (deadline == 0 || ro.time_limit_s > 0) rrc = rm_lp_round_tightened(&cand, &rr, p, lp_bound, &ro, &re);
        }
        if (rrc == RM_OK) {
            if ((rc = rm_simulate(&sim, p, cand, e)) != RM_OK) goto done;
            offer(&best, cand, &sim);
            cand = NULL;
        } else if (rrc != RM_ERR_INFEASIBLE) {
            rc = rrc;
            if (e) *e = re;
            goto done;
        }
    }
    if (best.s) {
        info->incumbent_cost = best.sim.cost;
        if (best.sim.cost <= step_up(lp_bound, m.step) || near_equal(best.sim.cost, lp_bound)) {
            info->status = RM_MILP_OPTIMAL; /* the bound is attained: nothing to search */
            info->from_incumbent = 1;
            goto done;
        }
    }
    if (deadline > 0 && now_s() >= deadline) goto limit_hit;

    /* 3. Branch and bound. */
    {
        if (lv & RM_MILP_PRESOLVE) {
            /* lp_solve 5.5.2 crashes (transfer_solution) when presolve is
             * switched on for a model that was already solved: start afresh. */
            model_free(&m);
            if ((rc = model_build(&m, p, act, lv, opt, e)) != RM_OK) goto done;
            set_presolve(m.lp, PRESOLVE_ROWS | PRESOLVE_COLS | PRESOLVE_LINDEP, get_presolveloops(m.lp));
        }
        lprec *lp = m.lp;
        for (size_t x = 0; x < (size_t)n * n; x++) {
            if (m.s_col[x] && !set_int(lp, m.s_col[x], TRUE)) goto setfail;
            if (m.r_col[x] && !set_int(lp, m.r_col[x], TRUE)) goto setfail;
        }
        if (!(lv & RM_MILP_FREE_CONT))
            for (int f = 0; f < m.nfree; f++)
                if (!set_int(lp, m.fv[f].col, TRUE)) goto setfail;
        set_bb_floorfirst(lp, (lv & RM_MILP_BRANCH_AUTO)  ? BRANCH_AUTOMATIC
                              : (lv & RM_MILP_FLOOR_FIRST) ? BRANCH_FLOOR
                                                           : BRANCH_CEILING);
        if (opt->bb_rule >= 0) set_bb_rule(lp, opt->bb_rule);
        if (opt->depth_limit != 0) set_bb_depthlimit(lp, opt->depth_limit);
        if (opt->mip_gap > 0) set_mip_gap(lp, FALSE, opt->mip_gap);
        if (lv & RM_MILP_S_PRIORITY) {
            /* Lower weight branches first: S (what to keep) decides the
             * schedule; R then mostly follows from the inputs rows. */
            double *w = malloc((size_t)m.ncols * sizeof *w);
            if (!w) {
                rc = rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory");
                goto done;
            }
            for (int c = 0; c < m.ncols; c++) w[c] = 2.0 * m.ncols + c; /* FREE / U: last, in column order */
            for (size_t x = 0; x < (size_t)n * n; x++) {
                if (m.s_col[x]) w[m.s_col[x] - 1] = m.s_col[x];
                if (m.r_col[x]) w[m.r_col[x] - 1] = m.ncols + m.r_col[x];
            }
            MYBOOL ok = set_var_weights(lp, w);
            free(w);
            if (!ok) {
                rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_var_weights failed");
                goto done;
            }
        }
        int cutoff = best.s != NULL;
        if (cutoff) {
            /* Only strictly better solutions are wanted: when the search
             * ends without one, the incumbent is optimal. lp_solve 5.5 has
             * no MIP start, so the cutoff (set_obj_bound) is how the
             * incumbent helps it. */
            double cut;
            if (m.step > 0) /* costs move in steps: ask for a whole step better */
                cut = (best.sim.cost - 0.99 * m.step - m.cost_const) / m.cost_scale;
            else
                cut = (best.sim.cost - m.cost_const) / m.cost_scale;
            set_obj_bound(lp, cut);
        }
        bb_ctx ctx = {opt->node_limit, deadline, now_s(), -1, 0, 0, 0};
        set_limits(lp, deadline);
        put_abortfunc(lp, bb_abort, &ctx);
        put_msgfunc(lp, bb_msg, &ctx, MSG_MILPBETTER | MSG_MILPFEASIBLE);
        int code = solve(lp);
        put_abortfunc(lp, NULL, NULL);
        put_msgfunc(lp, NULL, NULL, 0);
        info->solver_code = code;
        info->nodes = (long)get_total_nodes(lp);
        info->improvements = ctx.improvements;
        if (ctx.first >= 0) info->first_solution_s = ctx.first + (ctx.t0 - t0);

        /* With a cutoff, lp_solve 5.5 may answer OPTIMAL or SUBOPTIMAL
         * without having found anything better, and its "solution" is then
         * not one: only a reported improvement counts. SUBOPTIMAL means
         * "stopped early", so even without a cutoff it holds a solution
         * only if one was reported: reading the variables of a search
         * stopped before its first solution gives a meaningless S. */
        int found = code == OPTIMAL      ? !cutoff || ctx.first >= 0
                    : code == SUBOPTIMAL ? ctx.first >= 0
                                         : 0;
        if (found) {
            if ((rc = rm_schedule_create(&cand, n, e)) != RM_OK) goto done;
            /* By original index: presolve may have removed columns, and
             * get_var_primalresult answers for those too. */
            for (size_t x = 0; x < (size_t)n * n; x++)
                cand->S[x] = m.s_col[x] && get_var_primalresult(lp, m.nrows + m.s_col[x]) > 0.5;
            /* The cheapest R for the solver's S: never dearer, never more memory. */
            if ((rc = rm_milp_cheapest_R(cand, p, e)) != RM_OK) goto done;
            if ((rc = rm_simulate(&sim, p, cand, e)) != RM_OK) {
                rm_err_context(e, "milp: lp_solve's solution was rejected by the simulator");
                goto done;
            }
            if (sim.peak_bytes > act) {
                rc = rm_errorf(e, RM_ERR_SOLVER,
                               "milp: lp_solve's solution peaks at %zu bytes in the simulator, above the budget %zu "
                               "(stage %d, node %d): model and simulator disagree",
                               sim.peak_bytes, act, sim.peak_stage, sim.peak_node);
                goto done;
            }
            int had = best.s != NULL;
            offer(&best, cand, &sim);
            cand = NULL;
            info->from_incumbent = had && best.s && best.sim.cost < sim.cost;
            if (code == OPTIMAL) {
                info->status = RM_MILP_OPTIMAL;
                goto done;
            }
            goto limit_hit;
        }
        if (code == INFEASIBLE || code == OPTIMAL) {
            /* The search finished and found nothing below the cutoff. */
            if (best.s) {
                info->status = RM_MILP_OPTIMAL;
                info->from_incumbent = 1;
                goto done;
            }
            info->status = RM_MILP_INFEASIBLE;
            rc = rm_errorf(e, RM_ERR_INFEASIBLE, "milp: lp_solve proved that no schedule fits %zu bytes", act);
            goto done;
        }
        if (code == SUBOPTIMAL || code == USERABORT || code == TIMEOUT) {
            info->from_incumbent = best.s != NULL;
            goto limit_hit;
        }
        rc = lp_failure(code, "MILP", e);
        goto done;
    setfail:
        rc = rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_int failed");
        goto done;
    }

limit_hit:
    lower = step_up(info->lp_bound, m.step);
    if (best.s) {
        info->status = lp_done && (best.sim.cost <= lower || near_equal(best.sim.cost, lower)) ? RM_MILP_OPTIMAL
                                                                                               : RM_MILP_FEASIBLE;
    } else {
        info->status = RM_MILP_NO_SOLUTION;
        rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                       "milp: no schedule found within the limits (%s; %ld nodes, %.1f s): not proved infeasible",
                       opt->node_limit > 0 && info->nodes >= opt->node_limit ? "node limit" : "time limit",
                       info->nodes, now_s() - t0);
    }

done:
    rm_schedule_free(cand);
    model_free(&m);
    info->seconds = now_s() - t0;
    if (rc == RM_OK && best.s) {
        info->objective = best.sim.cost;
        info->peak_bytes = best.sim.peak_bytes;
        if (info->status == RM_MILP_OPTIMAL) {
            info->lower_bound = best.sim.cost;
            info->gap = 0;
        } else {
            info->lower_bound = lower;
            info->gap = best.sim.cost > 0 ? (best.sim.cost - info->lower_bound) / best.sim.cost : 0;
            if (info->gap < 0) info->gap = 0;
        }
        *out = best.s;
        return RM_OK;
    }
    rm_schedule_free(best.s);
    if (rc == RM_OK) rc = rm_errorf(e, RM_ERR_SOLVER, "milp: internal error: no schedule and no error");
    return rc;
}
