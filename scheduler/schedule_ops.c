/* The one place where the memory model's rules live: rm_schedule_ops checks
 * a schedule and turns it into the compute/free sequence that the simulator
 * replays and the executor follows. Keeping the rules here, once, is what
 * makes "simulated peak == executed peak" true by construction.
 *
 * It works on the sparse form: per stage it touches the stage's computes,
 * their inputs and the retention runs that start or end there, never a
 * whole row of S, so a 100,000-stage schedule takes milliseconds. */
#include <stdlib.h>
#include <string.h>

#include "order.h"
#include "schedule.h"
#include "sort_ints.h"

static const char *nm(const rm_problem *p, int i)
{
    return p->nodes[i].name[0] ? p->nodes[i].name : "?";
}

/* ---- validity of R and S alone
 * ------------------------------------------------ */

/* A violation and where it is: the first in (row, node, kind) order is
 * reported, as a scan of the rows in order would find it. */
enum { OWN_MISSING, R_ABOVE, S_ABOVE, S_GROWS };
typedef struct violation {
    int row, node, kind;
} violation;

static void consider(violation *v, int row, int node, int kind)
{
    if (v->row < 0 || row < v->row || (row == v->row && (node < v->node || (node == v->node && kind < v->kind))))
        *v = (violation){row, node, kind};
}

static int check_structure(const rm_problem *p, const rm_schedule *s, rm_err *e)
{
    int n = s->n;
    if (p->n != n) return rm_errorf(e, RM_ERR_INVALID, "schedule has %d stages but the problem has %d nodes", n, p->n);
    violation v = {-1, 0, 0};
    for (int t = 0; t < n; t++) {
        int hi = s->r_start[t + 1];
        if (hi == s->r_start[t] || s->r_node[hi - 1] < t) {
            consider(&v, t, -1, OWN_MISSING);
        } else if (s->r_node[hi - 1] > t) {
            int k = hi - 1; /* the first node after t */
            while (k > s->r_start[t] && s->r_node[k - 1] > t) k--;
            consider(&v, t, s->r_node[k], rm_schedule_R(s, t, t) ? R_ABOVE : OWN_MISSING);
        }
    }
    for (int k = 0; k < s->nret; k++) {
        const rm_retention *r = &s->ret[k];
        if (r->from <= r->node)
            consider(&v, r->from, r->node, S_ABOVE);
        else if (!rm_schedule_R(s, r->from - 1, r->node)) /* runs are maximal: S[from-1] is 0 */
            consider(&v, r->from - 1, r->node, S_GROWS);
    }
    if (v.row < 0) return RM_OK;
    int t = v.row, i = v.node;
    switch (v.kind) {
    case OWN_MISSING:
        return rm_errorf(e, RM_ERR_INVALID, "stage %d does not compute its own node %d (%s): R[t][t] must be 1", t, t,
                         nm(p, t));
    case R_ABOVE:
        return rm_errorf(e, RM_ERR_INVALID,
                         "stage %d computes node %d (%s), which comes after the stage's own node (R above the "
                         "diagonal)",
                         t, i, nm(p, i));
    case S_ABOVE:
        return rm_errorf(e, RM_ERR_INVALID,
                         "stage %d retains node %d (%s), which cannot have been computed before the stage (S on or "
                         "above the diagonal)",
                         t, i, nm(p, i));
    default:
        return rm_errorf(e, RM_ERR_INVALID,
                         "stage %d retains node %d (%s), which was neither resident in stage %d nor computed in it "
                         "(S[t+1] <= S[t] + R[t])",
                         t + 1, i, nm(p, i), t);
    }
}

/* ---- the operation sequence
 * ------------------------------------------------------ */

typedef struct op_buf {
    rm_op *ops;
    int n, cap;
} op_buf;

static int push(op_buf *b, rm_op_kind kind, int node, int stage, rm_err *e)
{
    if (b->n == b->cap) {
        if (b->cap > (1 << 29)) return rm_errorf(e, RM_ERR_INVALID, "schedule: more than 2^30 operations");
        int cap = b->cap ? b->cap * 2 : 256;
        rm_op *ops = realloc(b->ops, (size_t)cap * sizeof *ops);
        if (!ops) return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory for %d operations", cap);
        b->ops = ops;
        b->cap = cap;
    }
    b->ops[b->n++] = (rm_op){kind, node, stage};
    return RM_OK;
}

/* The state of the sweep over the stages. */
typedef struct sweep {
    const rm_problem *p;
    const rm_schedule *s;
    rm_run_index ev;
    int *run_end;     /* v in S[t]: the end of its run; -1 otherwise */
    int *next_from;   /* t + 1 when a run of v starts at t + 1 */
    int *comp_stage;  /* the last stage that computes v */
    int *use_stage;   /* the stage last_use[v] belongs to */
    int *last_use;    /* v's last reader in the stage (v itself if only computed) */
    int *head, *next; /* per compute k, the values to free after it, ascending */
    int *vals;        /* the values the stage computes or reads */
} sweep;

/* S[t+1][v], during stage t. Runs are maximal, so a run that ends at t is
 * never followed by one that starts at t + 1. */
static int retained_next(const sweep *w, int v, int t)
{
    return w->run_end[v] > t || w->next_from[v] == t + 1;
}

/* Stage t: the frees of values resident at its start that it recomputes or
 * neither reads nor retains, then each compute and the frees after it. */
static int emit_stage(sweep *w, op_buf *b, int t, rm_err *e)
{
    const rm_problem *p = w->p;
    const rm_schedule *s = w->s;
    const int *rl = &s->r_node[s->r_start[t]];
    int nr = rm_stage_ncomputes(s, t), nv = 0, rc;
    for (int k = w->ev.start_at[t]; k < w->ev.start_at[t + 1]; k++) {
        const rm_retention *r = &s->ret[w->ev.starts[k]];
        w->run_end[r->node] = r->to;
    }
    for (int k = w->ev.start_at[t + 1]; k < w->ev.start_at[t + 2]; k++)
        w->next_from[s->ret[w->ev.starts[k]].node] = t + 1;
    /* Every value the stage computes or reads, with its last reader. */
    for (int x = 0; x < nr; x++) {
        int k = rl[x];
        const rm_problem_node *nd = &p->nodes[k];
        for (int d = 0; d < nd->ndeps; d++) {
            int j = nd->deps[d];
            if (w->run_end[j] < t && w->comp_stage[j] != t)
                return rm_errorf(e, RM_ERR_INVALID,
                                 "stage %d computes node %d (%s), which reads node %d (%s): that value is neither "
                                 "retained into the stage (S) nor computed earlier in it (R)",
                                 t, k, nm(p, k), j, nm(p, j));
            w->last_use[j] = k;
        }
        w->comp_stage[k] = t;
        if (w->use_stage[k] != t) {
            w->use_stage[k] = t;
            w->vals[nv++] = k;
        }
        w->last_use[k] = k; /* readers come later in index order and overwrite it */
        for (int d = 0; d < nd->ndeps; d++) {
            int j = nd->deps[d];
            if (w->use_stage[j] != t) {
                w->use_stage[j] = t;
                w->vals[nv++] = j;
            }
        }
    }
    /* The last_use of a dep read before its own recompute in this stage is
     * impossible (deps come first), so one pass above is exact. */
    rm_sort_ints(w->vals, nv);
    for (int x = 0; x < nr; x++) w->head[rl[x]] = -1;
    for (int x = nv - 1; x >= 0; x--) {
        int v = w->vals[x];
        if (retained_next(w, v, t)) continue;
        w->next[v] = w->head[w->last_use[v]];
        w->head[w->last_use[v]] = v;
    }
    /* Frees at the stage start: resident values it recomputes, and runs
     * ending here whose value the stage does not read. */
    int nf = 0;
    for (int x = 0; x < nr; x++)
        if (w->run_end[rl[x]] >= t) w->vals[nf++] = rl[x];
    for (int k = w->ev.end_at[t]; k < w->ev.end_at[t + 1]; k++) {
        int v = s->ret[w->ev.ends[k]].node;
        if (w->use_stage[v] != t) w->vals[nf++] = v;
    }
    rm_sort_ints(w->vals, nf);
    for (int x = 0; x < nf; x++)
        if ((rc = push(b, RM_OP_FREE, w->vals[x], t, e))) return rc;
    for (int x = 0; x < nr; x++) {
        int k = rl[x];
        if ((rc = push(b, RM_OP_COMPUTE, k, t, e))) return rc;
        for (int v = w->head[k]; v >= 0; v = w->next[v])
            if ((rc = push(b, RM_OP_FREE, v, t, e))) return rc;
    }
    for (int k = w->ev.end_at[t]; k < w->ev.end_at[t + 1]; k++) w->run_end[s->ret[w->ev.ends[k]].node] = -1;
    return RM_OK;
}

static int ops_in_order(rm_op **ops, int *nops, const rm_problem *p, const rm_schedule *s, rm_err *e);

int rm_schedule_ops(rm_op **ops, int *nops, const rm_problem *p, const rm_schedule *s, rm_err *e)
{
    *ops = NULL;
    *nops = 0;
    if (s->order) {
        /* The schedule of p in its order: the rules apply there, and its
         * operations are renamed to p's nodes. */
        if (s->n != p->n)
            return rm_errorf(e, RM_ERR_INVALID, "schedule has %d stages but the problem has %d nodes", s->n, p->n);
        rm_problem *q;
        int rc = rm_problem_reorder(&q, p, s->order, e);
        if (rc) return rc;
        rm_schedule plain = *s;
        plain.order = NULL;
        if (!(rc = ops_in_order(ops, nops, q, &plain, e)))
            for (int o = 0; o < *nops; o++) (*ops)[o].node = s->order[(*ops)[o].node];
        rm_problem_free(q);
        return rc;
    }
    return ops_in_order(ops, nops, p, s, e);
}

/* rm_schedule_ops of a schedule in p's own order. */
static int ops_in_order(rm_op **ops, int *nops, const rm_problem *p, const rm_schedule *s, rm_err *e)
{
    int rc = check_structure(p, s, e);
    if (rc) return rc;
    int n = s->n;
    size_t nn = (size_t)n;
    sweep w = {.p = p, .s = s};
    if ((rc = rm_run_index_init(&w.ev, s, e))) return rc;
    w.run_end = malloc(nn * sizeof(int));
    w.next_from = malloc(nn * sizeof(int));
    w.comp_stage = malloc(nn * sizeof(int));
    w.use_stage = malloc(nn * sizeof(int));
    w.last_use = malloc(nn * sizeof(int));
    w.head = malloc(nn * sizeof(int));
    w.next = malloc(nn * sizeof(int));
    w.vals = malloc(nn * sizeof(int)); /* a stage's distinct values */
    op_buf b = {0};
    if (!w.run_end || !w.next_from || !w.comp_stage || !w.use_stage || !w.last_use || !w.head || !w.next || !w.vals) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory");
        goto done;
    }
    for (int v = 0; v < n; v++) w.run_end[v] = w.next_from[v] = w.comp_stage[v] = w.use_stage[v] = -1;
    for (int t = 0; t < n && !rc; t++) rc = emit_stage(&w, &b, t, e);
done:
    rm_run_index_free(&w.ev);
    free(w.run_end);
    free(w.next_from);
    free(w.comp_stage);
    free(w.use_stage);
    free(w.last_use);
    free(w.head);
    free(w.next);
    free(w.vals);
    if (rc) {
        free(b.ops);
        return rc;
    }
    *ops = b.ops;
    *nops = b.n;
    return RM_OK;
}
