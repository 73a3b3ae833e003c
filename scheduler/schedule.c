/* The schedule's storage: the sparse form (each stage's computes, S as
 * retention runs), the builder that produces it, and the dense 0/1 matrices
 * the solvers work on. The rules of the memory model are not here but in
 * schedule_ops.c. */
#include "schedule.h"
#include "sort_ints.h"

#include <stdlib.h>
#include <string.h>

void rm_schedule_free(rm_schedule *s)
{
    if (!s) return;
    free(s->r_start);
    free(s->r_node);
    free(s->ret);
    free(s->ret_start);
    free(s->order);
    free(s);
}

/* A schedule of n stages with room for nc computes and nr runs. */
static int alloc_schedule(rm_schedule **out, int n, size_t nc, size_t nr, rm_err *e)
{
    *out = NULL;
    rm_schedule *s = calloc(1, sizeof *s);
    if (!s) return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory");
    s->n = n;
    s->r_start = calloc((size_t)n + 1, sizeof *s->r_start);
    s->ret_start = calloc((size_t)n + 1, sizeof *s->ret_start);
    s->r_node = malloc((nc ? nc : 1) * sizeof *s->r_node);
    s->ret = malloc((nr ? nr : 1) * sizeof *s->ret);
    if (!s->r_start || !s->ret_start || !s->r_node || !s->ret) {
        rm_schedule_free(s);
        return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory for %zu computes and %zu retention runs", nc, nr);
    }
    s->nret = (int)nr;
    *out = s;
    return RM_OK;
}

int rm_schedule_copy(rm_schedule **out, const rm_schedule *s, rm_err *e)
{
    size_t nc = (size_t)rm_schedule_ncomputes(s), nr = (size_t)s->nret;
    int rc = alloc_schedule(out, s->n, nc, nr, e);
    if (rc) return rc;
    memcpy((*out)->r_start, s->r_start, ((size_t)s->n + 1) * sizeof *s->r_start);
    memcpy((*out)->ret_start, s->ret_start, ((size_t)s->n + 1) * sizeof *s->ret_start);
    memcpy((*out)->r_node, s->r_node, nc * sizeof *s->r_node);
    memcpy((*out)->ret, s->ret, nr * sizeof *s->ret);
    if (s->order && (rc = rm_schedule_set_order(*out, s->order, e))) {
        rm_schedule_free(*out);
        *out = NULL;
    }
    return rc;
}

int rm_schedule_set_order(rm_schedule *s, const int *order, rm_err *e)
{
    int *o = NULL;
    if (order) {
        if (!(o = malloc((size_t)s->n * sizeof *o))) return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory");
        memcpy(o, order, (size_t)s->n * sizeof *o);
    }
    free(s->order);
    s->order = o;
    return RM_OK;
}

int rm_schedule_equal(const rm_schedule *a, const rm_schedule *b)
{
    if (a->n != b->n || a->nret != b->nret || rm_schedule_ncomputes(a) != rm_schedule_ncomputes(b)) return 0;
    size_t n1 = (size_t)a->n + 1, nc = (size_t)rm_schedule_ncomputes(a);
    for (int t = 0; t < a->n; t++)
        if (rm_schedule_node_at(a, t) != rm_schedule_node_at(b, t)) return 0;
    return !memcmp(a->r_start, b->r_start, n1 * sizeof(int)) && !memcmp(a->r_node, b->r_node, nc * sizeof(int)) &&
           !memcmp(a->ret, b->ret, (size_t)a->nret * sizeof *a->ret);
}

int rm_schedule_R(const rm_schedule *s, int t, int i)
{
    if (t < 0 || t >= s->n) return 0;
    int lo = s->r_start[t], hi = s->r_start[t + 1];
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (s->r_node[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->r_start[t + 1] && s->r_node[lo] == i;
}

int rm_schedule_S(const rm_schedule *s, int t, int i)
{
    if (i < 0 || i >= s->n) return 0;
    /* The last run of i that starts at or before t. */
    int lo = s->ret_start[i], hi = s->ret_start[i + 1];
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (s->ret[mid].from <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > s->ret_start[i] && s->ret[lo - 1].to >= t;
}

void rm_schedule_compute_counts(const rm_schedule *s, int *counts)
{
    memset(counts, 0, (size_t)s->n * sizeof *counts);
    for (int k = 0; k < s->r_start[s->n]; k++) counts[rm_schedule_node_at(s, s->r_node[k])]++;
}

int rm_schedule_recomputed_nodes(const rm_schedule *s)
{
    /* Each stage's computes ascend and end with the stage's own node, so a
     * node computed twice appears in a stage after its own: count the nodes
     * seen at a stage other than their own, once each. */
    uint8_t *seen = calloc((size_t)s->n, 1);
    int count = 0;
    if (!seen) { /* only a count for display: fall back to computes beyond the
                    first */
        long extra = rm_schedule_ncomputes(s) - s->n;
        return extra > s->n ? s->n : (int)extra;
    }
    for (int t = 0; t < s->n; t++)
        for (int k = s->r_start[t]; k < s->r_start[t + 1]; k++) {
            int v = s->r_node[k];
            if (v != t && !seen[v]) {
                seen[v] = 1;
                count++;
            }
        }
    free(seen);
    return count;
}

/* Counting sort of the runs by a stage (their first or their last): bucket
 * t is items[at[t] .. at[t+1]); at has n + 2 entries, bucket n is empty. */
static void bucket(int *at, int *items, const rm_schedule *s, int by_end)
{
    int n = s->n;
    memset(at, 0, ((size_t)n + 2) * sizeof *at);
    for (int k = 0; k < s->nret; k++) at[(by_end ? s->ret[k].to : s->ret[k].from) + 2]++;
    for (int t = 0; t < n; t++) at[t + 2] += at[t + 1];
    for (int k = 0; k < s->nret; k++) items[at[(by_end ? s->ret[k].to : s->ret[k].from) + 1]++] = k;
}

int rm_run_index_init(rm_run_index *x, const rm_schedule *s, rm_err *e)
{
    size_t nn = (size_t)s->n + 2, nr = (size_t)s->nret + 1;
    x->start_at = malloc(nn * sizeof(int));
    x->end_at = malloc(nn * sizeof(int));
    x->starts = malloc(nr * sizeof(int));
    x->ends = malloc(nr * sizeof(int));
    if (!x->start_at || !x->end_at || !x->starts || !x->ends) {
        rm_run_index_free(x);
        return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory indexing %d retention runs", s->nret);
    }
    bucket(x->start_at, x->starts, s, 0);
    bucket(x->end_at, x->ends, s, 1);
    return RM_OK;
}

void rm_run_index_free(rm_run_index *x)
{
    free(x->start_at);
    free(x->end_at);
    free(x->starts);
    free(x->ends);
    memset(x, 0, sizeof *x);
}

/* ---- the builder ------------------------------------------------------------ */

int rm_builder_init(rm_schedule_builder *b, int n, rm_err *e)
{
    memset(b, 0, sizeof *b);
    if (n < 1) return rm_errorf(e, RM_ERR_INVALID, "schedule: %d stages; need at least 1", n);
    b->n = n;
    b->last = malloc((size_t)n * sizeof *b->last);
    if (!b->last) return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory (n = %d)", n);
    for (int v = 0; v < n; v++) b->last[v] = -1;
    return RM_OK;
}

void rm_builder_free(rm_schedule_builder *b)
{
    free(b->comp);
    free(b->ret);
    free(b->last);
    memset(b, 0, sizeof *b);
}

static int grow(void **buf, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return 0;
    size_t cap2 = *cap ? *cap * 2 : 256;
    while (cap2 < need) cap2 *= 2;
    void *p = realloc(*buf, cap2 * elem);
    if (!p) return -1;
    *buf = p;
    *cap = cap2;
    return 0;
}

static int in_range(rm_schedule_builder *b, int x, int y, const char *what)
{
    if (b->failed) return 0;
    if (x >= 0 && x < b->n && y >= 0 && y < b->n) return 1;
    rm_errorf(&b->err, RM_ERR_INVALID, "schedule: %s (%d, %d) is outside the %d stages", what, x, y, b->n);
    b->failed = 1;
    return 0;
}

static void out_of_memory(rm_schedule_builder *b)
{
    rm_errorf(&b->err, RM_ERR_NOMEM, "schedule: out of memory building a schedule of %d stages", b->n);
    b->failed = 1;
}

void rm_builder_compute(rm_schedule_builder *b, int t, int i)
{
    if (!in_range(b, t, i, "compute")) return;
    if (b->ncomp >= RM_SCHEDULE_MAX_COMPUTES) {
        rm_errorf(&b->err, RM_ERR_BUDGET, "schedule: more than %zu computes (%d stages)", RM_SCHEDULE_MAX_COMPUTES,
                  b->n);
        b->failed = 1;
        return;
    }
    if (grow((void **)&b->comp, &b->capcomp, b->ncomp + 1, sizeof *b->comp)) return out_of_memory(b);
    b->comp[b->ncomp][0] = t;
    b->comp[b->ncomp][1] = i;
    b->ncomp++;
}

void rm_builder_retain(rm_schedule_builder *b, int node, int from, int to)
{
    if (from > to || !in_range(b, from, to, "retention") || !in_range(b, node, node, "retention of node")) return;
    /* Builders mostly extend a node's latest run stage by stage: merge in
     * place so that a run costs one entry, not one per stage. */
    int k = b->last[node];
    if (k >= 0 && from >= b->ret[k].from && from <= b->ret[k].to + 1) {
        if (to > b->ret[k].to) b->ret[k].to = to;
        return;
    }
    if (grow((void **)&b->ret, &b->capret, b->nret + 1, sizeof *b->ret)) return out_of_memory(b);
    b->ret[b->nret] = (rm_retention){node, from, to};
    b->last[node] = (int)b->nret++;
}

static int cmp_ret_from(const void *x, const void *y)
{
    const rm_retention *a = x, *b = y;
    return (a->from > b->from) - (a->from < b->from);
}

/* One node's runs by their first stage (usually one or two, in order). */
static void sort_runs(rm_retention *r, int m)
{
    if (m > 32) {
        qsort(r, (size_t)m, sizeof *r, cmp_ret_from);
        return;
    }
    for (int i = 1; i < m; i++) {
        rm_retention x = r[i];
        int j = i;
        for (; j > 0 && r[j - 1].from > x.from; j--) r[j] = r[j - 1];
        r[j] = x;
    }
}

/* Counting sorts by stage (computes) and by node (runs), then each stage's
 * nodes sorted and deduplicated and each node's runs sorted and merged:
 * linear in the entries, as every builder produces them nearly in order. */
int rm_builder_finish(rm_schedule **out, rm_schedule_builder *b, rm_err *e)
{
    *out = NULL;
    if (b->failed) {
        int code = b->err.code;
        if (e) *e = b->err;
        rm_builder_free(b);
        return code;
    }
    int n = b->n;
    rm_schedule *s;
    int rc = alloc_schedule(&s, n, b->ncomp, b->nret, e);
    if (rc) {
        rm_builder_free(b);
        return rc;
    }
    int *at = calloc((size_t)n + 1, sizeof *at);
    rm_retention *runs = malloc((b->nret ? b->nret : 1) * sizeof *runs);
    if (!at || !runs) {
        free(at);
        free(runs);
        rm_schedule_free(s);
        rm_builder_free(b);
        return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory sorting %zu computes", b->ncomp);
    }
    /* Computes: bucket by stage into r_node, then sort and compact each. */
    for (size_t k = 0; k < b->ncomp; k++) at[b->comp[k][0] + 1]++;
    for (int t = 0; t < n; t++) at[t + 1] += at[t];
    memcpy(s->r_start, at, ((size_t)n + 1) * sizeof *at);
    for (size_t k = 0; k < b->ncomp; k++) s->r_node[at[b->comp[k][0]]++] = b->comp[k][1];
    int nc = 0;
    for (int t = 0; t < n; t++) {
        int lo = s->r_start[t], hi = s->r_start[t + 1];
        rm_sort_ints(&s->r_node[lo], hi - lo);
        s->r_start[t] = nc;
        for (int k = lo; k < hi; k++)
            if (k == lo || s->r_node[k] != s->r_node[k - 1]) s->r_node[nc++] = s->r_node[k];
    }
    s->r_start[n] = nc;
    /* Runs: bucket by node, then sort and merge each node's. */
    memset(at, 0, ((size_t)n + 1) * sizeof *at);
    for (size_t k = 0; k < b->nret; k++) at[b->ret[k].node + 1]++;
    for (int v = 0; v < n; v++) at[v + 1] += at[v];
    memcpy(s->ret_start, at, ((size_t)n + 1) * sizeof *at);
    for (size_t k = 0; k < b->nret; k++) runs[at[b->ret[k].node]++] = b->ret[k];
    int nr = 0;
    for (int v = 0; v < n; v++) {
        int lo = s->ret_start[v], hi = s->ret_start[v + 1];
        sort_runs(&runs[lo], hi - lo);
        s->ret_start[v] = nr;
        for (int k = lo; k < hi; k++) { /* overlapping or adjacent runs merged */
            rm_retention *top = nr > s->ret_start[v] ? &s->ret[nr - 1] : NULL;
            if (top && runs[k].from <= top->to + 1) {
                if (runs[k].to > top->to) top->to = runs[k].to;
            } else {
                s->ret[nr++] = runs[k];
            }
        }
    }
    s->ret_start[n] = nr;
    s->nret = nr;
    free(at);
    free(runs);
    rm_builder_free(b);
    *out = s;
    return RM_OK;
}

/* ---- the dense form
 * ----------------------------------------------------------- */

int rm_rs_create(rm_rs **out, int n, rm_err *e)
{
    *out = NULL;
    if (n < 1) return rm_errorf(e, RM_ERR_INVALID, "schedule: %d stages; need at least 1", n);
    if (n > RM_RS_MAX_NODES)
        return rm_errorf(e, RM_ERR_INVALID,
                         "schedule: dense R and S matrices of %d x %d entries are too large (at most %d nodes); "
                         "this strategy works on dense matrices",
                         n, n, RM_RS_MAX_NODES);
    rm_rs *s = calloc(1, sizeof *s);
    if (!s) return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory");
    s->n = n;
    s->R = calloc((size_t)n * (size_t)n, 1);
    s->S = calloc((size_t)n * (size_t)n, 1);
    if (!s->R || !s->S) {
        rm_rs_free(s);
        return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory for %d x %d matrices", n, n);
    }
    *out = s;
    return RM_OK;
}

void rm_rs_free(rm_rs *s)
{
    if (!s) return;
    free(s->R);
    free(s->S);
    free(s);
}

int rm_rs_from_schedule(rm_rs **out, const rm_schedule *s, rm_err *e)
{
    int rc = rm_rs_create(out, s->n, e);
    if (rc) return rc;
    for (int t = 0; t < s->n; t++)
        for (int k = s->r_start[t]; k < s->r_start[t + 1]; k++) *rm_R(*out, t, s->r_node[k]) = 1;
    for (int k = 0; k < s->nret; k++)
        for (int t = s->ret[k].from; t <= s->ret[k].to; t++) *rm_S(*out, t, s->ret[k].node) = 1;
    return RM_OK;
}

int rm_schedule_from_rs(rm_schedule **out, const rm_rs *d, rm_err *e)
{
    *out = NULL;
    int n = d->n;
    rm_schedule_builder b;
    int rc = rm_builder_init(&b, n, e);
    if (rc) return rc;
    /* Row by row, so each node's runs grow at their end and merge in place. */
    for (int t = 0; t < n; t++) {
        const uint8_t *R = &d->R[(size_t)t * (size_t)n], *S = &d->S[(size_t)t * (size_t)n];
        for (int i = 0; i < n; i++) {
            if (R[i]) rm_builder_compute(&b, t, i);
            if (S[i]) rm_builder_retain(&b, i, t, t);
        }
    }
    return rm_builder_finish(out, &b, e);
}
