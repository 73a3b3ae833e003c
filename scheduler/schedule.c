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

/* Finds and reports the first violation in row t (the slow path of
 * check_structure, taken only when the fast scan found one). */
static int report_row(const rm_problem *p, const rm_schedule *s, int t, rm_err *e)
{
    int n = s->n;
    const uint8_t *R = &s->R[(size_t)t * (size_t)n], *S = &s->S[(size_t)t * (size_t)n];
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
    return rm_errorf(e, RM_ERR_INVALID, "stage %d: invalid row", t);
}

/* Rows are mostly zero and this runs for every simulation, inside
 * bisections over graphs of ~1000 nodes: look at them 8 bytes at a time. */
static uint64_t load8(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

static unsigned or_range(const uint8_t *a, int from, int to)
{
    uint64_t acc = 0;
    int i = from;
    for (; i + 8 <= to; i += 8) acc |= load8(a + i);
    for (; i < to; i++) acc |= a[i];
    return acc != 0;
}

/* Indices i in [0, len) with row[i] nonzero, ascending. */
static int collect(int *out, const uint8_t *row, int len)
{
    int m = 0, i = 0;
    for (; i + 8 <= len; i += 8)
        if (load8(row + i))
            for (int j = i; j < i + 8; j++)
                if (row[j]) out[m++] = j;
    for (; i < len; i++)
        if (row[i]) out[m++] = i;
    return m;
}

/* The rules that involve R and S alone: a word-at-a-time scan for the
 * common (valid) case, and report_row to name the first violation. */
static int check_structure(const rm_problem *p, const rm_schedule *s, rm_err *e)
{
    int n = s->n;
    if (p->n != n) return rm_errorf(e, RM_ERR_INVALID, "schedule has %d stages but the problem has %d nodes", n, p->n);
    for (int t = 0; t < n; t++) {
        const uint8_t *R = &s->R[(size_t)t * (size_t)n], *S = &s->S[(size_t)t * (size_t)n];
        if (R[t] != 1)
            return rm_errorf(e, RM_ERR_INVALID, "stage %d does not compute its own node %d (%s): R[t][t] must be 1", t,
                             t, nm(p, t));
        const uint64_t high = 0xFEFEFEFEFEFEFEFEULL, low = 0x0101010101010101ULL;
        const uint8_t *S1 = t + 1 < n ? S + n : NULL;
        uint64_t acc = 0;
        int i = 0;
        for (; i + 8 <= t; i += 8) {
            uint64_t r = load8(R + i), sv = load8(S + i);
            acc |= (r | sv) & high;
            if (S1) acc |= load8(S1 + i) & ~(r | sv) & low;
        }
        for (; i < t; i++) {
            acc |= (R[i] | S[i]) & 0xFE;
            if (S1) acc |= S1[i] & ~(R[i] | S[i]) & 1;
        }
        if (acc || or_range(S, t, n) || or_range(R, t + 1, n)) return report_row(p, s, t, e);
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
    int *rl = malloc((size_t)n * sizeof *rl), *sl = malloc((size_t)n * sizeof *sl);
    int *ul = malloc((size_t)n * sizeof *ul);
    op_buf b = {0};
    if (!last_use || !head || !next || !rl || !sl || !ul) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory");
        goto done;
    }
    for (int t = 0; t < n && !rc; t++) {
        const uint8_t *R = &s->R[(size_t)t * (size_t)n], *S = &s->S[(size_t)t * (size_t)n];
        const uint8_t *S1 = t + 1 < n ? &s->S[(size_t)(t + 1) * (size_t)n] : NULL;
        /* The stage's values: computed (rl), resident at its start (sl), both (ul). */
        int nr = collect(rl, R, t + 1), ns = collect(sl, S, t), nu = 0;
        for (int x = 0, y = 0; x < nr || y < ns;) {
            int v = y >= ns || (x < nr && rl[x] < sl[y]) ? rl[x] : sl[y];
            if (x < nr && rl[x] == v) x++;
            if (y < ns && sl[y] == v) y++;
            ul[nu++] = v;
            last_use[v] = -1;
        }
        for (int x = 0; x < nr; x++) {
            int k = rl[x];
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
        for (int x = 0; x < nr; x++) head[rl[x]] = -1;
        for (int x = nu - 1; x >= 0; x--) {
            int v = ul[x];
            if (last_use[v] < 0 || (S1 && S1[v])) continue;
            next[v] = head[last_use[v]];
            head[last_use[v]] = v;
        }
        for (int y = 0; y < ns; y++) {
            int v = sl[y];
            if (R[v] || (last_use[v] < 0 && !(S1 && S1[v])))
                if ((rc = push(&b, RM_OP_FREE, v, t, e))) goto done;
        }
        for (int x = 0; x < nr; x++) {
            int k = rl[x];
            if ((rc = push(&b, RM_OP_COMPUTE, k, t, e))) goto done;
            for (int v = head[k]; v >= 0; v = next[v])
                if ((rc = push(&b, RM_OP_FREE, v, t, e))) goto done;
        }
    }
done:
    free(last_use);
    free(head);
    free(next);
    free(rl);
    free(sl);
    free(ul);
    if (rc) {
        free(b.ops);
        return rc;
    }
    *ops = b.ops;
    *nops = b.n;
    return RM_OK;
}
