/* Orders of first computes: the check, the problem renumbered in one, its
 * readers, and an order that keeps little alive. */
#include "order.h"

#include <stdlib.h>
#include <string.h>

void rm_order_positions(int *pos, const int *order, int n)
{
    for (int t = 0; t < n; t++) pos[order[t]] = t;
}

int rm_order_check(const rm_problem *p, const int *order, rm_err *e)
{
    int n = p->n, rc = RM_OK;
    int *pos = malloc((size_t)(n ? n : 1) * sizeof *pos);
    if (!pos) return rm_errorf(e, RM_ERR_NOMEM, "order: out of memory");
    for (int v = 0; v < n; v++) pos[v] = -1;
    for (int t = 0; t < n && !rc; t++) {
        int v = order[t];
        if (v < 0 || v >= n)
            rc = rm_errorf(e, RM_ERR_INVALID, "order: position %d holds %d, which is not a node (0..%d)", t, v, n - 1);
        else if (pos[v] >= 0)
            rc = rm_errorf(e, RM_ERR_INVALID, "order: node %d (%s) comes twice, at positions %d and %d", v,
                           p->nodes[v].name, pos[v], t);
        else
            pos[v] = t;
    }
    for (int t = 0; t < n && !rc; t++) {
        const rm_problem_node *nd = &p->nodes[order[t]];
        for (int d = 0; d < nd->ndeps && !rc; d++)
            if (pos[nd->deps[d]] > t)
                rc = rm_errorf(e, RM_ERR_INVALID,
                               "order: node %d (%s) at position %d comes before its input %d (%s) at position %d; an "
                               "order must be topological",
                               order[t], nd->name, t, nd->deps[d], p->nodes[nd->deps[d]].name, pos[nd->deps[d]]);
    }
    free(pos);
    return rc;
}

int rm_problem_reorder(rm_problem **out, const rm_problem *p, const int *order, rm_err *e)
{
    *out = NULL;
    int n = p->n, rc = rm_order_check(p, order, e);
    if (rc) return rc;
    int *pos = malloc((size_t)(n ? n : 1) * sizeof *pos);
    rm_problem *q = NULL;
    if (!pos) return rm_errorf(e, RM_ERR_NOMEM, "order: out of memory");
    if ((rc = rm_problem_create(&q, n, e))) goto done;
    rm_order_positions(pos, order, n);
    q->fixed_bytes = p->fixed_bytes;
    q->budget = p->budget;
    q->max_cost = p->max_cost;
    for (int t = 0; t < n && !rc; t++) {
        const rm_problem_node *nd = &p->nodes[order[t]];
        rm_problem_node *qd = &q->nodes[t];
        memcpy(qd->name, nd->name, sizeof qd->name);
        qd->tag = nd->tag;
        qd->cost = nd->cost;
        qd->bytes = nd->bytes;
        if (nd->ndeps == 0) continue;
        if (!(qd->deps = malloc((size_t)nd->ndeps * sizeof *qd->deps))) {
            rc = rm_errorf(e, RM_ERR_NOMEM, "order: out of memory");
            break;
        }
        qd->ndeps = nd->ndeps;
        for (int d = 0; d < nd->ndeps; d++) qd->deps[d] = pos[nd->deps[d]];
    }
done:
    free(pos);
    if (rc) {
        rm_problem_free(q);
        return rc;
    }
    *out = q;
    return RM_OK;
}

int rm_order_readers(const rm_problem *p, int **start, int **rd)
{
    int n = p->n;
    size_t edges = 1, nn = n > 0 ? (size_t)n : 1; /* at least 1: malloc(0) may answer NULL */
    for (int v = 0; v < n; v++)
        if (p->nodes[v].ndeps > 0) edges += (size_t)p->nodes[v].ndeps;
    int *s = calloc(nn + 1, sizeof *s), *r = malloc(edges * sizeof *r), *fill = malloc(nn * sizeof *fill);
    if (!s || !r || !fill) {
        free(s);
        free(r);
        free(fill);
        return -1;
    }
    for (int v = 0; v < n; v++)
        for (int d = 0; d < p->nodes[v].ndeps; d++) s[p->nodes[v].deps[d] + 1]++;
    for (int v = 0; v < n; v++) s[v + 1] += s[v];
    memcpy(fill, s, (size_t)n * sizeof *fill);
    for (int v = 0; v < n; v++)
        for (int d = 0; d < p->nodes[v].ndeps; d++) r[fill[p->nodes[v].deps[d]]++] = v;
    free(fill);
    *start = s, *rd = r;
    return 0;
}

typedef struct heap {
    long long *key;
    int *v, n;
} heap;

/* Whether entry i goes before entry j: the larger key, then the earlier node. */
static int heap_before(const heap *h, int i, int j)
{
    return h->key[i] > h->key[j] || (h->key[i] == h->key[j] && h->v[i] < h->v[j]);
}

static void heap_swap(heap *h, int i, int j)
{
    long long k = h->key[i];
    int v = h->v[i];
    h->key[i] = h->key[j], h->v[i] = h->v[j];
    h->key[j] = k, h->v[j] = v;
}

static void heap_push(heap *h, long long key, int v)
{
    int i = h->n++;
    h->key[i] = key, h->v[i] = v;
    for (; i > 0 && heap_before(h, i, (i - 1) / 2); i = (i - 1) / 2) heap_swap(h, i, (i - 1) / 2);
}

static void heap_pop(heap *h)
{
    heap_swap(h, 0, --h->n);
    for (int i = 0;;) {
        int c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && heap_before(h, c + 1, c)) c++;
        if (!heap_before(h, c, i)) break;
        heap_swap(h, i, c);
        i = c;
    }
}

/* A topological order that keeps little alive, by list scheduling: of the
 * nodes whose inputs are computed, the one whose compute frees the most
 * bytes (inputs it is the last reader of) less what it keeps (its output,
 * when something reads it) comes next; ties to the problem's order. Keys
 * change as readers are computed: stale heap entries are skipped. */
int rm_order_lean(const rm_problem *p, const int *rd_start, const int *rd, int *out)
{
    int n = p->n, k = 0;
    long edges = rd_start[n];
    int *indeg = malloc((size_t)n * sizeof *indeg), *left = malloc((size_t)n * sizeof *left);
    long long *key = malloc((size_t)n * sizeof *key);
    heap h = {malloc((size_t)(n + edges) * sizeof *h.key), malloc((size_t)(n + edges) * sizeof *h.v), 0};
    int rc = indeg && left && key && h.key && h.v ? 0 : -1;
    for (int v = 0; v < n && !rc; v++) {
        indeg[v] = p->nodes[v].ndeps;
        left[v] = rd_start[v + 1] - rd_start[v];
    }
    for (int v = 0; v < n && !rc; v++)
        if (!indeg[v]) heap_push(&h, key[v] = left[v] ? -(long long)p->nodes[v].bytes : 0, v);
    while (!rc && h.n) {
        int x = h.v[0];
        long long kx = h.key[0];
        heap_pop(&h);
        if (indeg[x] < 0 || kx != key[x]) continue; /* done, or a stale key */
        indeg[x] = -1;
        out[k++] = x;
        const rm_problem_node *nd = &p->nodes[x];
        for (int d = 0; d < nd->ndeps; d++) { /* an input down to its last reader: that reader frees it */
            int u = nd->deps[d];
            if (--left[u] != 1) continue;
            for (int j = rd_start[u]; j < rd_start[u + 1]; j++) {
                int r = rd[j];
                if (indeg[r] == 0) heap_push(&h, key[r] += (long long)p->nodes[u].bytes, r);
            }
        }
        for (int j = rd_start[x]; j < rd_start[x + 1]; j++) {
            int r = rd[j];
            if (--indeg[r]) continue;
            const rm_problem_node *rn = &p->nodes[r];
            key[r] = left[r] ? -(long long)rn->bytes : 0;
            for (int d = 0; d < rn->ndeps; d++)
                if (left[rn->deps[d]] == 1) key[r] += (long long)p->nodes[rn->deps[d]].bytes;
            heap_push(&h, key[r], r);
        }
    }
    free(indeg);
    free(left);
    free(key);
    free(h.key);
    free(h.v);
    return rc ? rc : k == n ? 0 : -1;
}
