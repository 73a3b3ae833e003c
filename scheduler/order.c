/* Orders of first computes: the check, and the problem renumbered in one. */
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
