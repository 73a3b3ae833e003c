/* Schedules (R, S) and the one place where the memory model's rules live:
 * rm_schedule_ops checks a schedule and turns it into the compute/free
 * sequence that the simulator replays and the executor follows. Keeping the
 * rules here, once, is what makes "simulated peak == executed peak" true by
 * construction. */
#include "schedule.h"

#include <stdlib.h>
#include <string.h>

int rm_schedule_create(rm_schedule **out, int n, rm_err *e)
{
    *out = NULL;
    if (n < 1) return rm_errorf(e, RM_ERR_INVALID, "schedule: %d stages; need at least 1", n);
    rm_schedule *s = calloc(1, sizeof *s);
    if (!s) return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory");
    s->n = n;
    s->R = calloc((size_t)n * (size_t)n, 1);
    s->S = calloc((size_t)n * (size_t)n, 1);
    if (!s->R || !s->S) {
        rm_schedule_free(s);
        return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory for %d x %d matrices", n, n);
    }
    *out = s;
    return RM_OK;
}

void rm_schedule_free(rm_schedule *s)
{
    if (!s) return;
    free(s->R);
    free(s->S);
    free(s);
}

int rm_schedule_copy(rm_schedule **out, const rm_schedule *s, rm_err *e)
{
    int rc = rm_schedule_create(out, s->n, e);
    if (rc) return rc;
    size_t nn = (size_t)s->n * (size_t)s->n;
    memcpy((*out)->R, s->R, nn);
    memcpy((*out)->S, s->S, nn);
    return RM_OK;
}

static const char *nm(const rm_problem *p, int i) { return p->nodes[i].name[0] ? p->nodes[i].name : "?"; }

/* The rules that involve R and S alone. */
static int check_structure(const rm_problem *p, const rm_schedule *s, rm_err *e)
{
    int n = s->n;
    if (p->n != n)
        return rm_errorf(e, RM_ERR_INVALID, "schedule has %d stages but the problem has %d nodes", n, p->n);
    for (int t = 0; t < n; t++) {
        const uint8_t *R = &s->R[(size_t)t * (size_t)n], *S = &s->S[(size_t)t * (size_t)n];
        if (R[t] != 1)
            return rm_errorf(e, RM_ERR_INVALID, "stage %d does not compute its own node %d (%s): R[t][t] must be 1",
                             t, t, nm(p, t));
        for (int i = 0; i < n; i++) {
            if (R[i] > 1 || S[i] > 1)
                return rm_errorf(e, RM_ERR_INVALID, "stage %d, node %d (%s): %s = %d; entries must be 0 or 1", t, i,
                                 nm(p, i), R[i] > 1 ? "R" : "S", R[i] > 1 ? R[i] : S[i]);
            if (R[i] && i > t)
                return rm_errorf(e, RM_ERR_INVALID,
                                 "stage %d computes node %d (%s), which comes after the stage's own node (R above "
                                 "the diagonal)",
                                 t, i, nm(p, i));
            if (S[i] && i >= t)
                return rm_errorf(e, RM_ERR_INVALID,
                                 "stage %d retains node %d (%s), which cannot have been computed before the stage "
                                 "(S on or above the diagonal)",
                                 t, i, nm(p, i));
            if (t + 1 < n && s->S[(size_t)(t + 1) * (size_t)n + (size_t)i] && !S[i] && !R[i])
                return rm_errorf(e, RM_ERR_INVALID,
                                 "stage %d retains node %d (%s), which was neither resident in stage %d nor "
                                 "computed in it (S[t+1] <= S[t] + R[t])",
                                 t + 1, i, nm(p, i), t);
        }
    }
    return RM_OK;
}

typedef struct op_buf {
    rm_op *ops;
    int n, cap;
} op_buf;

static int push(op_buf *b, rm_op_kind kind, int node, int stage, rm_err *e)
{
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 256;
        rm_op *ops = realloc(b->ops, (size_t)cap * sizeof *ops);
        if (!ops) return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory for %d operations", cap);
        b->ops = ops;
        b->cap = cap;
    }
    b->ops[b->n++] = (rm_op){kind, node, stage};
    return RM_OK;
}

/* Per stage: every dep read must be resident (retained, or computed earlier in
 * the stage; since deps are earlier nodes and a stage computes in index order,
 * a recomputed dep always precedes its reader). A value's last reader in the
 * stage frees it unless it is retained; a retained value that is also
 * recomputed is superseded, and since all its readers follow the recompute,
 * the old copy is dead from the stage start. */
int rm_schedule_ops(rm_op **ops, int *nops, const rm_problem *p, const rm_schedule *s, rm_err *e)
{
    *ops = NULL;
    *nops = 0;
    int rc = check_structure(p, s, e);
    if (rc) return rc;
    int n = s->n;
    int *last_use = malloc((size_t)n * sizeof *last_use);
    int *head = malloc((size_t)n * sizeof *head);
    int *next = malloc((size_t)n * sizeof *next);
    op_buf b = {0};
    if (!last_use || !head || !next) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory");
        goto done;
    }
    for (int t = 0; t < n && !rc; t++) {
        const uint8_t *R = &s->R[(size_t)t * (size_t)n], *S = &s->S[(size_t)t * (size_t)n];
        const uint8_t *S1 = t + 1 < n ? &s->S[(size_t)(t + 1) * (size_t)n] : NULL;
        for (int v = 0; v <= t; v++) last_use[v] = -1;
        for (int k = 0; k <= t; k++) {
            if (!R[k]) continue;
            last_use[k] = k;
            const rm_problem_node *nd = &p->nodes[k];
            for (int d = 0; d < nd->ndeps; d++) {
                int j = nd->deps[d];
                if (!S[j] && !R[j]) {
                    rc = rm_errorf(e, RM_ERR_INVALID,
                                   "stage %d computes node %d (%s), which reads node %d (%s): that value is neither "
                                   "retained into the stage (S) nor computed earlier in it (R)",
                                   t, k, nm(p, k), j, nm(p, j));
                    goto done;
                }
                last_use[j] = k;
            }
        }
        /* Buckets of values to free after each compute, ascending by value. */
        for (int k = 0; k <= t; k++) head[k] = -1;
        for (int v = t; v >= 0; v--) {
            if (last_use[v] < 0 || (S1 && S1[v])) continue;
            next[v] = head[last_use[v]];
            head[last_use[v]] = v;
        }
        for (int v = 0; v < t; v++)
            if (S[v] && (R[v] || (last_use[v] < 0 && !(S1 && S1[v]))))
                if ((rc = push(&b, RM_OP_FREE, v, t, e))) goto done;
        for (int k = 0; k <= t; k++) {
            if (!R[k]) continue;
            if ((rc = push(&b, RM_OP_COMPUTE, k, t, e))) goto done;
            for (int v = head[k]; v >= 0; v = next[v])
                if ((rc = push(&b, RM_OP_FREE, v, t, e))) goto done;
        }
    }
done:
    free(last_use);
    free(head);
    free(next);
    if (rc) {
        free(b.ops);
        return rc;
    }
    *ops = b.ops;
    *nops = b.n;
    return RM_OK;
}
