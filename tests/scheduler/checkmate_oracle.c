/* Checkmate's published LP relaxation (checkmate_oracle.h). Written from the
 * paper and its reference implementation only; nothing here is taken from
 * scheduler/lp_model.c, so agreement or disagreement between the two bounds
 * is evidence about remat's formulation. Stage t, nodes in topological order:
 *   R[t][t] = 1, R[t][i] = 0 for i > t, S[t][i] = 0 for i >= t
 *   S[t+1][i] <= S[t][i] + R[t][i]
 *   R[t][k] <= R[t][i] + S[t][i]                       for each edge (i, k)
 *   hazards(t, i, k) = 1 - R[t][k] + S[t+1][i] (t+1 < T) + sum_{j in users(i), j > k} R[t][j]
 *   1 - FREE[t][(i,k)] <= hazards,  max_hazards * (1 - FREE[t][(i,k)]) >= hazards
 *   U[t][0] = ram_0 R[t][0] + sum_i ram_i S[t][i]
 *   U[t][k+1] = U[t][k] + ram_{k+1} R[t][k+1] - sum_{edges (i,k)} ram_i FREE[t][(i,k)]
 *   0 <= U[t][k] <= budget
 * Memory is in units of the budget and costs in units of the largest cost,
 * only to keep lp_solve's coefficients near 1. */
#include "checkmate_oracle.h"

#include <lp_lib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct oracle {
    const rm_problem *p;
    int n, ne;
    int *ei, *ek;      /* edge e = (ei[e], ek[e]): node ek[e] reads ei[e] */
    int *rc, *sc, *uc; /* n x n lp_solve columns (1-based); 0 = the variable is the constant 0 */
    int *fc;           /* n x ne */
    int ncols;
    double mem, cost; /* bytes and cost per model unit */
    double *v;
    int *ix, cnt;
    lprec *lp;
    char *msg;
    size_t msglen;
} oracle;

static int fail(oracle *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->msg, o->msglen, fmt, ap);
    va_end(ap);
    return -1;
}

static double ram(const oracle *o, int i)
{
    return (double)o->p->nodes[i].bytes / o->mem;
}

/* Appends coef * column to the row being built; an absent column is 0. */
static void term(oracle *o, int col, double coef)
{
    if (!col) return;
    o->v[o->cnt] = coef;
    o->ix[o->cnt++] = col;
}

static int emit(oracle *o, int type, double rhs)
{
    if (o->cnt == 0) {
        int ok = type == LE ? rhs >= 0 : type == GE ? rhs <= 0 : rhs == 0;
        return ok ? 0 : fail(o, "internal error: an empty row with right-hand side %g", rhs);
    }
    int ok = add_constraintex(o->lp, o->cnt, o->v, o->ix, type, rhs);
    o->cnt = 0;
    return ok ? 0 : fail(o, "lp_solve add_constraintex failed");
}

static int index_model(oracle *o)
{
    int n = o->n;
    for (int k = 0; k < n; k++) o->ne += o->p->nodes[k].ndeps;
    size_t nn = (size_t)n * n;
    o->ei = malloc(((size_t)o->ne + 1) * sizeof *o->ei);
    o->ek = malloc(((size_t)o->ne + 1) * sizeof *o->ek);
    o->rc = calloc(nn, sizeof *o->rc);
    o->sc = calloc(nn, sizeof *o->sc);
    o->uc = calloc(nn, sizeof *o->uc);
    o->fc = calloc((size_t)n * o->ne + 1, sizeof *o->fc);
    if (!o->ei || !o->ek || !o->rc || !o->sc || !o->uc || !o->fc) return fail(o, "out of memory");
    int e = 0;
    for (int k = 0; k < n; k++)
        for (int d = 0; d < o->p->nodes[k].ndeps; d++) o->ei[e] = o->p->nodes[k].deps[d], o->ek[e++] = k;
    for (int t = 0; t < n; t++) {
        for (int i = 0; i <= t; i++) o->rc[(size_t)t * n + i] = ++o->ncols;
        for (int i = 0; i < t; i++) o->sc[(size_t)t * n + i] = ++o->ncols;
        for (int x = 0; x < o->ne; x++) o->fc[(size_t)t * o->ne + x] = ++o->ncols;
        for (int k = 0; k < n; k++) o->uc[(size_t)t * n + k] = ++o->ncols;
    }
    o->v = malloc(((size_t)o->ncols + 1) * sizeof *o->v);
    o->ix = malloc(((size_t)o->ncols + 1) * sizeof *o->ix);
    if (!o->v || !o->ix) return fail(o, "out of memory");
    return 0;
}

#define R_(t, i) ((i) <= (t) ? o->rc[(size_t)(t)*o->n + (i)] : 0)
#define S_(t, i) ((t) < o->n && (i) < (t) ? o->sc[(size_t)(t)*o->n + (i)] : 0)
#define U_(t, k) o->uc[(size_t)(t)*o->n + (k)]
#define F_(t, x) o->fc[(size_t)(t)*o->ne + (x)]

/* Bounds (R[t][t] = 1, U in [0, budget], the rest in [0, 1]) and the objective. */
static int make_columns(oracle *o)
{
    int n = o->n;
    o->lp = make_lp(0, o->ncols);
    if (!o->lp) return fail(o, "lp_solve make_lp failed for %d columns", o->ncols);
    set_verbose(o->lp, NEUTRAL);
    set_minim(o->lp);
    for (int c = 1; c <= o->ncols; c++)
        if (!set_bounds(o->lp, c, 0.0, 1.0)) return fail(o, "lp_solve set_bounds failed");
    for (int t = 0; t < n; t++) {
        if (!set_bounds(o->lp, R_(t, t), 1.0, 1.0)) return fail(o, "lp_solve set_bounds failed");
        for (int i = 0; i <= t; i++) term(o, R_(t, i), o->p->nodes[i].cost / o->cost);
    }
    if (!set_obj_fnex(o->lp, o->cnt, o->v, o->ix)) return fail(o, "lp_solve set_obj_fnex failed");
    o->cnt = 0;
    return 0;
}

/* Retention and the inputs of each computation. */
static int rows_dependencies(oracle *o, int t)
{
    for (int i = 0; t + 1 < o->n && i <= t; i++) {
        term(o, S_(t + 1, i), 1), term(o, S_(t, i), -1), term(o, R_(t, i), -1);
        if (emit(o, LE, 0)) return -1;
    }
    for (int x = 0; x < o->ne; x++) {
        if (o->ek[x] > t) continue; /* R[t][k] = 0: nothing to require */
        term(o, R_(t, o->ek[x]), 1), term(o, R_(t, o->ei[x]), -1), term(o, S_(t, o->ei[x]), -1);
        if (emit(o, LE, 0)) return -1;
    }
    return 0;
}

/* hazards - 1 + R[t][k] as terms (the row's constant 1 and -R[t][k] are the caller's); returns max_hazards. */
static int hazard_terms(oracle *o, int t, int i, int k, double sign)
{
    int maxh = 1;
    if (t + 1 < o->n) term(o, S_(t + 1, i), sign), maxh++;
    for (int x = 0; x < o->ne; x++)
        if (o->ei[x] == i && o->ek[x] > k) term(o, R_(t, o->ek[x]), sign), maxh++;
    return maxh;
}

/* FREE forced from both sides: 1 - FREE <= hazards <= max_hazards (1 - FREE). */
static int rows_frees(oracle *o, int t)
{
    for (int x = 0; x < o->ne; x++) {
        int i = o->ei[x], k = o->ek[x];
        /* -FREE + R[t][k] - (S[t+1][i] + sum R[t][j]) <= 0 */
        term(o, F_(t, x), -1), term(o, R_(t, k), 1);
        hazard_terms(o, t, i, k, -1);
        if (emit(o, LE, 0)) return -1;
        /* max (1 - FREE) >= 1 - R[t][k] + S[t+1][i] + sum R[t][j] */
        int maxh = hazard_terms(o, t, i, k, 1);
        term(o, F_(t, x), maxh), term(o, R_(t, k), -1);
        if (emit(o, LE, maxh - 1)) return -1;
    }
    return 0;
}

/* Checkmate's U: memory after computing each point, before its frees. */
static int rows_memory(oracle *o, int t)
{
    int n = o->n;
    term(o, U_(t, 0), 1), term(o, R_(t, 0), -ram(o, 0));
    for (int i = 0; i < t; i++) term(o, S_(t, i), -ram(o, i));
    if (emit(o, EQ, 0)) return -1;
    for (int k = 0; k + 1 < n; k++) {
        term(o, U_(t, k + 1), 1), term(o, U_(t, k), -1), term(o, R_(t, k + 1), -ram(o, k + 1));
        for (int x = 0; x < o->ne; x++)
            if (o->ek[x] == k) term(o, F_(t, x), ram(o, o->ei[x]));
        if (emit(o, EQ, 0)) return -1;
    }
    return 0;
}

static int build(oracle *o, size_t act)
{
    o->mem = (double)(act ? act : 1);
    o->cost = 0;
    for (int k = 0; k < o->n; k++)
        if (o->p->nodes[k].cost > o->cost) o->cost = o->p->nodes[k].cost;
    if (o->cost == 0) o->cost = 1;
    if (index_model(o) || make_columns(o)) return -1;
    for (int t = 0; t < o->n; t++)
        for (int k = 0; k < o->n; k++)
            if (!set_bounds(o->lp, U_(t, k), 0.0, 1.0)) return fail(o, "lp_solve set_bounds failed");
    if (!set_add_rowmode(o->lp, TRUE)) return fail(o, "lp_solve set_add_rowmode failed");
    for (int t = 0; t < o->n; t++)
        if (rows_dependencies(o, t) || rows_frees(o, t) || rows_memory(o, t)) return -1;
    if (!set_add_rowmode(o->lp, FALSE)) return fail(o, "lp_solve set_add_rowmode failed");
    return 0;
}

static int take(cm_oracle_relaxation *out, oracle *o)
{
    int n = o->n;
    double *v = NULL;
    if (!get_ptr_variables(o->lp, &v) || !v) return fail(o, "lp_solve get_ptr_variables failed");
    out->S = calloc((size_t)n * n, sizeof *out->S);
    if (!out->S) return fail(o, "out of memory");
    for (int t = 0; t < n; t++)
        for (int i = 0; i < t; i++) out->S[(size_t)t * n + i] = v[S_(t, i) - 1];
    out->n = n;
    out->bound = o->cost * get_objective(o->lp);
    return 0;
}

#undef R_
#undef S_
#undef U_
#undef F_

int cm_oracle_relax(cm_oracle_relaxation *out, const rm_problem *p, size_t act, char *msg, size_t msglen)
{
    memset(out, 0, sizeof *out);
    oracle o = {.p = p, .n = p->n, .msg = msg, .msglen = msglen};
    int rc = build(&o, act);
    if (rc == 0) {
        int code = solve(o.lp);
        if (code == OPTIMAL)
            rc = take(out, &o);
        else if (code == INFEASIBLE)
            rc = 1;
        else
            rc = fail(&o, "lp_solve solve() returned %d", code);
    }
    if (o.lp) delete_lp(o.lp);
    free(o.ei), free(o.ek), free(o.rc), free(o.sc), free(o.uc), free(o.fc), free(o.v), free(o.ix);
    return rc;
}

void cm_oracle_free(cm_oracle_relaxation *r)
{
    if (!r) return;
    free(r->S);
    r->S = NULL;
}
