/* "anneal": simulated annealing over orders and recomputations (issue 29;
 * after Imanishi et al.'s FastSA, 2023), for any DAG, with or without a
 * backward pass.
 *
 * The state is an order of first computes (any topological order) and a
 * set of recomputations, each named by the stage that needs it: (v, w)
 * recomputes v in the stage whose own node is w, where that stage reads v.
 * Everything else follows, with nothing kept longer than it is read: each
 * copy of a value stays from its compute to the last stage that reads that
 * copy (Checkmate's S, derived). That is the cheapest memory any schedule
 * with these computes can have, so a schedule read in loses nothing here.
 *
 * Moves: put a node elsewhere within its dependency window (after its last
 * input, before its first reader); recompute a value in a stage that reads
 * it, alone or with the inputs it needs (a chain); evict a value kept
 * through a stage over the budget; drop a recomputation (and those only it
 * needed).
 *
 * A move is judged incrementally, in about log n. A stage's peak is what
 * is kept into it plus the peak of its own computes above that ("local":
 * the stage replayed alone, given which of the values it touches it frees).
 * What is kept into the stage at position t is the sum, over the stages
 * before t, of each stage's delta: the bytes of the copies it computes that
 * outlive it, less those of the copies whose last reader it is. So the
 * schedule's peak is the largest prefix(delta, t) + local(t), which a
 * segment tree over positions holding (sum of delta, largest such value)
 * keeps at its root. A move changes only the copies of the values it
 * touches (each value's copies follow from the stages that compute and
 * read it), the deltas and locals at those copies' ends, and, for a move
 * in the order, the leaves of the positions it shifts. The answer is
 * checked against rm_simulate before it is returned, and the tests replay
 * every move of random walks through it (rm_anneal_check_walk).
 *
 * Before the walks, free to reorder, a walk of moves in the order alone
 * looks for an order in which every node computed once fits: nothing is
 * cheaper (order_walk).
 *
 * The objective is cost over checkpoint-all's plus a penalty on the peak's
 * bytes over the budget, whose weight doubles while the walk stays over it.
 * (The sum over stages of their bytes over the budget, a smoother penalty,
 * cannot be kept in log n; on the layered benchmark graphs the peak alone
 * found schedules as cheap or cheaper.) */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "deadline.h"
#include "log.h"
#include "order.h"
#include "rng.h"
#include "route_internal.h"

/* A growable list of node indices. */
typedef struct vec {
    int *a;
    int n, cap;
} vec;

static int vec_push(vec *v, int x)
{
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 4;
        int *a = realloc(v->a, (size_t)cap * sizeof *a);
        if (!a) return -1;
        v->a = a, v->cap = cap;
    }
    v->a[v->n++] = x;
    return 0;
}

/* Removes one x (the lists are sets of stages, or multisets of reading
 * stages, kept unordered). */
static void vec_remove(vec *v, int x)
{
    for (int i = v->n - 1; i >= 0; i--)
        if (v->a[i] == x) {
            v->a[i] = v->a[--v->n];
            return;
        }
}

typedef struct eval {
    double cost;
    size_t peak;
} eval;

/* Whether a state fits: the activation budget, and the cost limit if any. */
static int fits(const rm_problem *p, size_t budget, const eval *ev)
{
    return ev->peak <= budget && (p->max_cost <= 0 || ev->cost <= p->max_cost);
}

#define NEG (LLONG_MIN / 4) /* an empty leaf's value: below any stage's */

typedef struct anneal {
    const rm_problem *p;
    int n;
    int *rd_start, *rd; /* readers of each node (CSR): stages reading it for their own node */
    int *order, *pos;
    vec *rc;  /* rc[w]: what w's stage recomputes */
    vec *cs;  /* cs[v]: the stages that recompute v */
    vec *rs;  /* rs[v]: the stages that read v for a recomputation, once per reading compute */
    vec *cp;  /* cp[v]: v's copies, (start stage, end stage) pairs in the order of their starts */
    long nrc; /* recomputations in all */
    double cost;
    long long *delta, *local; /* by stage (its own node) */
    int leaves;               /* the segment tree's: a power of two >= n */
    long long *sum, *best;    /* by tree node (1 = root; leaf t at leaves + t) */
    int *touched, ntouched;   /* values whose copies may have changed */
    int *dirty, ndirty;       /* stages whose delta or local may have changed */
    unsigned *tmark, *dmark, tgen;
    /* A stage's replay: its computes, the bytes freed after each, and per
     * value its last use in the stage and whether it is touched there. */
    int *sbuf, scap;
    long long *sfree;
    int *lastuse, *used;
    unsigned *stamp, sgen;
    int *cbuf, ccap; /* a value's copies, being worked out */
    int *endof;      /* by start stage: a new copy's end (update_value) */
    unsigned *estamp, egen;
    int *mark; /* scratch for the moves */
    int mark_gen;
    long long budget;     /* the activation budget */
    double scale, bscale; /* score()'s: checkpoint-all's cost and the budget (1 where 0 or unlimited) */
    rm_rng rng;
} anneal;

static int rnd_below(anneal *a, int k)
{
    return (int)(rm_rng_next(&a->rng) % (uint64_t)k);
}

static double rnd_unit(anneal *a)
{
    return rm_rng_uniform(&a->rng);
}

static int grow(int **buf, int *cap, int need)
{
    if (need <= *cap) return 0;
    int c = 2 * need;
    int *b = realloc(*buf, (size_t)c * sizeof *b);
    if (!b) return -1;
    *buf = b, *cap = c;
    return 0;
}

/* ---- the segment tree: the peak in its root ---- */

static void pull(anneal *a, int i)
{
    long long sl = a->sum[2 * i], br = a->best[2 * i + 1];
    a->sum[i] = sl + a->sum[2 * i + 1];
    a->best[i] = a->best[2 * i] > sl + br ? a->best[2 * i] : sl + br;
}

static void leaf(anneal *a, int t)
{
    int w = a->order[t], i = a->leaves + t;
    a->sum[i] = a->delta[w];
    a->best[i] = a->local[w];
}

/* The leaves of positions lo..hi from their stages, and what covers them. */
static void seg_refresh(anneal *a, int lo, int hi)
{
    for (int t = lo; t <= hi; t++) leaf(a, t);
    for (int l = (lo + a->leaves) / 2, h = (hi + a->leaves) / 2; l >= 1; l /= 2, h /= 2)
        for (int i = l; i <= h; i++) pull(a, i);
}

static void seg_build(anneal *a)
{
    for (int t = 0; t < a->n; t++) leaf(a, t);
    for (int i = a->leaves + a->n; i < 2 * a->leaves; i++) a->sum[i] = 0, a->best[i] = NEG;
    for (int i = a->leaves - 1; i >= 1; i--) pull(a, i);
}

/* ---- a stage's own peak ---- */

/* Stage w's computes into out: its recomputations by position, then its
 * own node. Returns how many. (Room: stage_room.) */
static int stage_computes(const anneal *a, int w, int *out)
{
    const vec *r = &a->rc[w];
    int k = 0;
    for (int i = 0; i < r->n; i++) { /* insertion sort: stages recompute few */
        int x = r->a[i], j = k++;
        while (j > 0 && a->pos[out[j - 1]] > a->pos[x]) out[j] = out[j - 1], j--;
        out[j] = x;
    }
    out[k++] = w;
    return k;
}

static int stage_room(anneal *a, int w)
{
    int need = a->rc[w].n + 1, cap = a->scap;
    if (grow(&a->sbuf, &cap, need)) return -1;
    if (cap != a->scap) {
        long long *f = realloc(a->sfree, (size_t)cap * sizeof *f);
        if (!f) return -1;
        a->sfree = f, a->scap = cap;
    }
    return 0;
}

/* Of k copies given as (start, end) pairs in the order of their starts,
 * the last to start at or before position t; -1 when none does. A value's
 * copies follow each other in the order, so that is the one copy that can
 * hold t. */
static int copy_at(const anneal *a, const int *pairs, int k, int t)
{
    int lo = -1, hi = k - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (a->pos[pairs[2 * mid]] <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* Whether stage w frees u: it is the end of one of u's copies, the one
 * that holds w. */
static int ends_at(const anneal *a, int u, int w)
{
    const vec *c = &a->cp[u];
    int i = copy_at(a, c->a, c->n / 2, a->pos[w]);
    return i >= 0 && c->a[2 * i + 1] == w;
}

/* Stage w's peak above what is kept into it, as the memory model of
 * schedule_ops.c replays it: each compute allocates its output, and after
 * the last use in the stage of a value this stage frees, its bytes go. */
static int stage_local(anneal *a, int w, long long *out)
{
    if (stage_room(a, w)) return -1;
    const rm_problem *p = a->p;
    int k = stage_computes(a, w, a->sbuf), nu = 0;
    unsigned g = ++a->sgen;
    if (g == 0) { /* the stamps wrapped: clear them */
        memset(a->stamp, 0, (size_t)a->n * sizeof *a->stamp);
        g = a->sgen = 1;
    }
    for (int j = 0; j < k; j++) {
        const rm_problem_node *nd = &p->nodes[a->sbuf[j]];
        for (int d = 0; d <= nd->ndeps; d++) {
            int u = d < nd->ndeps ? nd->deps[d] : a->sbuf[j];
            a->lastuse[u] = j;
            if (a->stamp[u] != g) a->stamp[u] = g, a->used[nu++] = u;
        }
        a->sfree[j] = 0;
    }
    for (int i = 0; i < nu; i++)
        if (ends_at(a, a->used[i], w)) a->sfree[a->lastuse[a->used[i]]] += (long long)p->nodes[a->used[i]].bytes;
    long long mem = 0, top = 0;
    for (int j = 0; j < k; j++) {
        mem += (long long)p->nodes[a->sbuf[j]].bytes;
        if (mem > top) top = mem;
        mem -= a->sfree[j];
    }
    *out = top;
    return 0;
}

/* ---- each value's copies ---- */

/* v's copies into a->cbuf as (start, end) pairs: one from each stage that
 * computes v, ending at the last stage that reads it before the next
 * compute (a stage that recomputes v reads its own copy, so a reader in the
 * stage a copy starts does not lengthen it). Every reader comes after v's
 * own stage: what a stage reads is an ancestor of its node. Returns the
 * number of copies. */
static int value_copies(anneal *a, int v)
{
    const vec *c = &a->cs[v];
    int k = c->n + 1, *b;
    if (grow(&a->cbuf, &a->ccap, 2 * k)) return -1;
    b = a->cbuf;
    b[0] = v;
    for (int i = 0; i < c->n; i++) { /* starts by position */
        int s = c->a[i], j = i + 1;
        while (j > 0 && a->pos[b[2 * (j - 1)]] > a->pos[s]) b[2 * j] = b[2 * (j - 1)], j--;
        b[2 * j] = s;
    }
    for (int i = 0; i < k; i++) b[2 * i + 1] = b[2 * i];
    int nr = a->rd_start[v + 1] - a->rd_start[v];
    for (int i = 0; i < nr + a->rs[v].n; i++) {
        int r = i < nr ? a->rd[a->rd_start[v] + i] : a->rs[v].a[i - nr], pr = a->pos[r];
        int j = copy_at(a, b, k, pr); /* >= 0: every reader comes after v's own stage */
        if (pr > a->pos[b[2 * j + 1]]) b[2 * j + 1] = r;
    }
    return k;
}

/* A new generation of the touched and dirty marks: the lists are empty. */
static void next_gen(anneal *a)
{
    a->ntouched = a->ndirty = 0;
    if (++a->tgen == 0) { /* the marks wrapped: clear them */
        memset(a->tmark, 0, (size_t)a->n * sizeof *a->tmark);
        memset(a->dmark, 0, (size_t)a->n * sizeof *a->dmark);
        a->tgen = 1;
    }
}

static void mark_dirty(anneal *a, int w)
{
    if (a->dmark[w] != a->tgen) a->dmark[w] = a->tgen, a->dirty[a->ndirty++] = w;
}

static void touch(anneal *a, int v)
{
    if (a->tmark[v] != a->tgen) a->tmark[v] = a->tgen, a->touched[a->ntouched++] = v;
}

/* Adds (sign 1) or takes away (-1) what the copy of v from stage s to
 * stage e keeps, and marks the stages at its ends. */
static void apply_copy(anneal *a, int v, int s, int e, long long sign)
{
    mark_dirty(a, s);
    if (e == s) return;
    long long b = sign * (long long)a->p->nodes[v].bytes;
    mark_dirty(a, e);
    a->delta[s] += b;
    a->delta[e] -= b;
}

/* v's copies worked out afresh. Only the copies that changed touch the
 * deltas and mark their stages: a value recomputed often has many copies,
 * and most stay as they were. (A copy is named by its start: a stage
 * computes a value once.) */
static int update_value(anneal *a, int v)
{
    int k = value_copies(a, v);
    if (k < 0) return -1;
    vec *c = &a->cp[v];
    const int *nb = a->cbuf;
    if (c->n == 2 * k && !memcmp(c->a, nb, (size_t)(2 * k) * sizeof *c->a)) return 0;
    unsigned g = ++a->egen;
    if (g == 0) { /* the stamps wrapped: clear them */
        memset(a->estamp, 0, (size_t)a->n * sizeof *a->estamp);
        g = a->egen = 1;
    }
    for (int i = 0; i < k; i++) a->estamp[nb[2 * i]] = g, a->endof[nb[2 * i]] = nb[2 * i + 1];
    for (int i = 0; i < c->n; i += 2) {
        int s = c->a[i], e = c->a[i + 1];
        if (a->estamp[s] == g && a->endof[s] == e)
            a->endof[s] = -1; /* the same copy in both */
        else
            apply_copy(a, v, s, e, -1);
    }
    for (int i = 0; i < k; i++)
        if (!(a->estamp[nb[2 * i]] == g && a->endof[nb[2 * i]] == -1)) apply_copy(a, v, nb[2 * i], nb[2 * i + 1], 1);
    if (grow(&c->a, &c->cap, 2 * k)) return -1;
    memcpy(c->a, nb, (size_t)(2 * k) * sizeof *c->a);
    c->n = 2 * k;
    return 0;
}

/* Brings the copies, deltas, locals and the tree up to date with the
 * changes since the last call, and returns the state's cost and peak. */
static int settle(anneal *a, eval *out)
{
    for (int i = 0; i < a->ntouched; i++)
        if (update_value(a, a->touched[i])) return -1;
    for (int i = 0; i < a->ndirty; i++) {
        int w = a->dirty[i];
        if (stage_local(a, w, &a->local[w])) return -1;
        int t = a->pos[w], j = a->leaves + t;
        leaf(a, t);
        for (j /= 2; j >= 1; j /= 2) pull(a, j);
    }
    next_gen(a);
    if (out) out->cost = a->cost, out->peak = (size_t)a->best[1];
    return 0;
}

/* ---- changes to the state (each marks what it may change) ---- */

static int rc_add(anneal *a, int w, int x)
{
    const rm_problem_node *nd = &a->p->nodes[x];
    if (vec_push(&a->rc[w], x) || vec_push(&a->cs[x], w)) return -1;
    for (int d = 0; d < nd->ndeps; d++) {
        if (vec_push(&a->rs[nd->deps[d]], w)) return -1;
        touch(a, nd->deps[d]);
    }
    touch(a, x);
    mark_dirty(a, w);
    a->cost += nd->cost;
    a->nrc++;
    return 0;
}

static void rc_del(anneal *a, int w, int i)
{
    vec *r = &a->rc[w];
    int x = r->a[i];
    const rm_problem_node *nd = &a->p->nodes[x];
    r->a[i] = r->a[--r->n];
    vec_remove(&a->cs[x], w);
    for (int d = 0; d < nd->ndeps; d++) {
        vec_remove(&a->rs[nd->deps[d]], w);
        touch(a, nd->deps[d]);
    }
    touch(a, x);
    mark_dirty(a, w);
    a->cost -= nd->cost;
    a->nrc--;
}

/* Puts node v at position q, shifting those between, and marks what moved:
 * the values stage v computes and reads, and the stages that recompute v
 * (their computes' order may change). */
static void order_move(anneal *a, int v, int q)
{
    int at = a->pos[v];
    if (q > at)
        for (int t = at; t < q; t++) a->order[t] = a->order[t + 1], a->pos[a->order[t]] = t;
    else
        for (int t = at; t > q; t--) a->order[t] = a->order[t - 1], a->pos[a->order[t]] = t;
    a->order[q] = v;
    a->pos[v] = q;
    seg_refresh(a, at < q ? at : q, at < q ? q : at);
    for (int i = -1; i < a->rc[v].n; i++) {
        int x = i < 0 ? v : a->rc[v].a[i];
        touch(a, x);
        for (int d = 0; d < a->p->nodes[x].ndeps; d++) touch(a, a->p->nodes[x].deps[d]);
    }
    mark_dirty(a, v);
    for (int i = 0; i < a->cs[v].n; i++) mark_dirty(a, a->cs[v].a[i]);
}

/* Everything from the order and the recomputations alone (a start, and
 * after restore). */
static int rebuild(anneal *a, eval *out)
{
    const rm_problem *p = a->p;
    a->cost = 0;
    a->nrc = 0;
    next_gen(a);
    for (int v = 0; v < a->n; v++) {
        a->cs[v].n = a->rs[v].n = a->cp[v].n = 0;
        a->delta[v] = a->local[v] = 0;
        a->cost += p->nodes[v].cost;
    }
    for (int w = 0; w < a->n; w++)
        for (int i = 0; i < a->rc[w].n; i++) {
            int x = a->rc[w].a[i];
            if (vec_push(&a->cs[x], w)) return -1;
            for (int d = 0; d < p->nodes[x].ndeps; d++)
                if (vec_push(&a->rs[p->nodes[x].deps[d]], w)) return -1;
            a->cost += p->nodes[x].cost;
            a->nrc++;
        }
    seg_build(a);
    for (int v = 0; v < a->n; v++) touch(a, v), mark_dirty(a, v);
    return settle(a, out);
}

/* The cost added up afresh, in one order (the walk's running sum drifts). */
static double exact_cost(const anneal *a)
{
    double c = 0;
    for (int v = 0; v < a->n; v++) c += a->p->nodes[v].cost;
    for (int w = 0; w < a->n; w++)
        for (int i = 0; i < a->rc[w].n; i++) c += a->p->nodes[a->rc[w].a[i]].cost;
    return c;
}

/* The schedule of the state (positions in its order; the order attached
 * unless it is the problem's own). The state is settled. */
static int to_schedule(rm_schedule **out, anneal *a, rm_err *e)
{
    rm_schedule_builder b;
    int rc = rm_builder_init(&b, a->n, e), own = 1;
    if (rc) return rc;
    for (int t = 0; t < a->n; t++) {
        int w = a->order[t];
        if (stage_room(a, w)) {
            rm_builder_free(&b);
            return rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory");
        }
        int k = stage_computes(a, w, a->sbuf);
        for (int j = 0; j < k; j++) {
            int x = a->sbuf[j];
            const vec *c = &a->cp[x];
            rm_builder_compute(&b, t, a->pos[x]);
            for (int i = 0; i < c->n; i += 2)
                if (c->a[i] == w && c->a[i + 1] != w) rm_builder_retain(&b, a->pos[x], t + 1, a->pos[c->a[i + 1]]);
        }
    }
    for (int t = 0; t < a->n; t++) own &= a->order[t] == t;
    if ((rc = rm_builder_finish(out, &b, e))) return rc;
    if (!own && (rc = rm_schedule_set_order(*out, a->order, e))) {
        rm_schedule_free(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- moves ---- */

/* Whether a copy of v is resident through the stage at position t
 * (computed before it and kept at least until it). */
static int kept_through(const anneal *a, int v, int t)
{
    const vec *c = &a->cp[v];
    int i = copy_at(a, c->a, c->n / 2, t - 1);
    return i >= 0 && a->pos[c->a[2 * i + 1]] >= t;
}

/* Marks what w's stage reads (its own node's inputs and its recomputations'). */
static void mark_reads(anneal *a, int w)
{
    const rm_problem *p = a->p;
    a->mark_gen++;
    const rm_problem_node *nd = &p->nodes[w];
    for (int d = 0; d < nd->ndeps; d++) a->mark[nd->deps[d]] = a->mark_gen;
    for (int i = 0; i < a->rc[w].n; i++) {
        const rm_problem_node *xd = &p->nodes[a->rc[w].a[i]];
        for (int d = 0; d < xd->ndeps; d++) a->mark[xd->deps[d]] = a->mark_gen;
    }
}

/* Drops w's recomputations that its stage no longer reads, until none is
 * left; each dropped one is appended to gone (for an undo). */
static int prune(anneal *a, int w, vec *gone)
{
    for (int changed = 1; changed;) {
        changed = 0;
        mark_reads(a, w);
        vec *r = &a->rc[w];
        for (int i = 0; i < r->n; i++)
            if (a->mark[r->a[i]] != a->mark_gen) {
                if (gone && vec_push(gone, r->a[i])) return -1;
                rc_del(a, w, i--);
                changed = 1;
            }
    }
    return 0;
}

enum { MOVE_NONE, MOVE_ORDER, MOVE_ADD, MOVE_DROP, MOVE_CHAIN };

typedef struct move {
    int kind, v, w, from; /* ORDER: v was at from; ADD/DROP: v in w's stage */
    vec gone;             /* DROP: every recomputation removed; CHAIN: every one added */
} move;

/* Node v's dependency window: the positions it may take, after its last
 * input and before its first reader. (What its stage recomputes are its
 * ancestors, which come before its inputs.) */
static void window(const anneal *a, int v, int *lo, int *hi)
{
    const rm_problem_node *nd = &a->p->nodes[v];
    *lo = 0, *hi = a->n - 1;
    for (int d = 0; d < nd->ndeps; d++)
        if (a->pos[nd->deps[d]] + 1 > *lo) *lo = a->pos[nd->deps[d]] + 1;
    for (int k = a->rd_start[v]; k < a->rd_start[v + 1]; k++)
        if (a->pos[a->rd[k]] - 1 < *hi) *hi = a->pos[a->rd[k]] - 1;
}

/* Moves v to position q (another than its own). */
static int order_to(anneal *a, move *m, int v, int q)
{
    m->kind = MOVE_ORDER, m->v = v, m->from = a->pos[v]; /* (m->gone's buffer is kept for reuse) */
    order_move(a, v, q);
    return MOVE_ORDER;
}

static int try_order(anneal *a, move *m)
{
    int v = rnd_below(a, a->n), lo, hi;
    window(a, v, &lo, &hi);
    if (hi <= lo) return MOVE_NONE;
    int q = lo + rnd_below(a, hi - lo);
    return order_to(a, m, v, q >= a->pos[v] ? q + 1 : q);
}

/* A value stage w reads and does not compute (one of its computes'
 * inputs), chosen uniformly; -1 when there is none. */
static int pick_read(anneal *a, int w)
{
    const rm_problem *p = a->p;
    mark_reads(a, w);
    int gen = a->mark_gen, pick = -1, seen = 0;
    for (int i = 0; i < a->rc[w].n; i++) a->mark[a->rc[w].a[i]] = gen - 1; /* computed here already */
    for (int i = -1; i < a->rc[w].n; i++) {
        const rm_problem_node *xd = &p->nodes[i < 0 ? w : a->rc[w].a[i]];
        for (int d = 0; d < xd->ndeps; d++) {
            int u = xd->deps[d];
            if (a->mark[u] != gen) continue;
            a->mark[u] = gen - 1; /* each candidate once */
            if (rnd_below(a, ++seen) == 0) pick = u;
        }
    }
    a->mark_gen++; /* the marks above are spent */
    return pick;
}

static int try_add(anneal *a, move *m)
{
    int w = rnd_below(a, a->n), pick = pick_read(a, w);
    if (pick < 0 || a->n + a->nrc >= (long)RM_SCHEDULE_MAX_COMPUTES) return MOVE_NONE;
    if (rc_add(a, w, pick)) return -1;
    m->kind = MOVE_ADD, m->v = pick, m->w = w;
    return MOVE_ADD;
}

/* Recomputes pick in w's stage (which reads it and does not compute it),
 * with every input it needs that is not resident there anyway, and theirs
 * (a rematerialization from what is in memory): one move where single
 * recomputations would each first lengthen their inputs' lives. At most 64
 * computes. */
static int chain_add(anneal *a, move *m, int w, int pick)
{
    const rm_problem *p = a->p;
    int t = a->pos[w], in = ++a->mark_gen;
    a->mark[w] = in;
    for (int i = 0; i < a->rc[w].n; i++) a->mark[a->rc[w].a[i]] = in;
    if (a->mark[pick] == in) return MOVE_NONE;
    m->kind = MOVE_CHAIN;
    m->w = w;
    m->gone.n = 0;
    if (vec_push(&m->gone, pick)) return -1;
    a->mark[pick] = in;
    for (int i = 0; i < m->gone.n; i++) {
        const rm_problem_node *xd = &p->nodes[m->gone.a[i]];
        for (int d = 0; d < xd->ndeps; d++) {
            int u = xd->deps[d];
            if (a->mark[u] == in || kept_through(a, u, t)) continue;
            if (m->gone.n >= 64) return MOVE_NONE;
            a->mark[u] = in;
            if (vec_push(&m->gone, u)) return -1;
        }
    }
    if (a->n + a->nrc + m->gone.n > (long)RM_SCHEDULE_MAX_COMPUTES) return MOVE_NONE;
    for (int i = 0; i < m->gone.n; i++)
        if (rc_add(a, w, m->gone.a[i])) return -1;
    return MOVE_CHAIN;
}

/* A chain for a value a random stage reads and does not compute. */
static int try_chain(anneal *a, move *m)
{
    int w = rnd_below(a, a->n), pick = pick_read(a, w);
    return pick < 0 ? MOVE_NONE : chain_add(a, m, w, pick);
}

/* The position of a stage over the budget (or, when the peak fits, of one
 * at the peak), by a random walk down the tree through the parts that hold
 * one. */
static int pick_stage(anneal *a)
{
    long long peak = a->best[1], off = 0;
    int over = peak > a->budget, i = 1;
#define WANTED(x) (over ? (x) > a->budget : (x) == peak)
    while (i < a->leaves) {
        int l = WANTED(off + a->best[2 * i]), r = WANTED(off + a->sum[2 * i] + a->best[2 * i + 1]);
        if (l && (!r || rnd_below(a, 2)))
            i = 2 * i;
        else
            off += a->sum[2 * i], i = 2 * i + 1;
    }
#undef WANTED
    return i - a->leaves;
}

/* A copy kept through the stage at position t that the stage does not
 * read: its value, and the positions where it starts and ends (-1: none
 * found). Sampled among the values the stages before t computed, half near
 * t, half anywhere before it, so that it takes about log n. */
static int kept_sample(anneal *a, int t, int *start, int *end)
{
    mark_reads(a, a->order[t]);
    int gen = a->mark_gen;
    for (int tries = 0; tries < 64; tries++) {
        int s = tries % 2 ? t - 1 - rnd_below(a, t < 16 ? t : 16) : rnd_below(a, t), ws = a->order[s];
        int i = rnd_below(a, a->rc[ws].n + 1), x = i == a->rc[ws].n ? ws : a->rc[ws].a[i];
        if (a->mark[x] == gen) continue;
        const vec *c = &a->cp[x];
        for (int k = 0; k < c->n; k += 2)
            if (c->a[k] == ws && a->pos[c->a[k + 1]] > t) {
                *start = s, *end = a->pos[c->a[k + 1]];
                return x;
            }
    }
    return -1;
}

/* The move in the order aimed at the peak: at a stage over the budget (or
 * at the peak), a value kept through it that it does not read leaves it,
 * by its producer moving after the stage or by the last reader of its copy
 * moving before it, each within its dependency window. */
static int try_shift(anneal *a, move *m)
{
    int t = pick_stage(a), start, end, lo, hi;
    int u = t > 0 ? kept_sample(a, t, &start, &end) : -1;
    if (u < 0) return MOVE_NONE;
    if (a->order[start] == u && rnd_below(a, 2)) { /* the producer, later */
        window(a, u, &lo, &hi);
        if (lo <= t) lo = t + 1;
        if (lo > hi) return MOVE_NONE;
        return order_to(a, m, u, lo + rnd_below(a, hi - lo + 1));
    }
    int v = a->order[end]; /* the last reader, earlier */
    window(a, v, &lo, &hi);
    if (hi > t) hi = t;
    if (lo > hi) return MOVE_NONE;
    return order_to(a, m, v, lo + rnd_below(a, hi - lo + 1));
}

/* The move aimed at the peak: at a stage over the budget (or at the peak),
 * a value kept through it that it does not read is dropped there and
 * rematerialized (chain_add) at its next reader. The value is found among
 * those the stages before computed, sampled (half near the stage, half
 * anywhere before it), so that the move stays in about log n. */
static int try_evict(anneal *a, move *m)
{
    int t = pick_stage(a), start, end;
    int u = t > 0 ? kept_sample(a, t, &start, &end) : -1;
    if (u < 0) return MOVE_NONE;
    int next = end, nr = a->rd_start[u + 1] - a->rd_start[u]; /* the copy's first reader after t */
    for (int i = 0; i < nr + a->rs[u].n; i++) {
        int q = a->pos[i < nr ? a->rd[a->rd_start[u] + i] : a->rs[u].a[i - nr]];
        if (q > t && q < next) next = q;
    }
    return chain_add(a, m, a->order[next], u);
}

static int try_drop(anneal *a, move *m)
{
    if (a->nrc == 0) return MOVE_NONE;
    int w = -1;
    for (int tries = 0; tries < 32 && w < 0; tries++) {
        int x = rnd_below(a, a->n);
        if (a->rc[x].n) w = x;
    }
    if (w < 0) return MOVE_NONE;
    int i = rnd_below(a, a->rc[w].n);
    m->kind = MOVE_DROP;
    m->w = w;
    m->gone.n = 0;
    if (vec_push(&m->gone, a->rc[w].a[i])) return -1;
    rc_del(a, w, i);
    if (prune(a, w, &m->gone)) return -1;
    return MOVE_DROP;
}

/* Takes back the last move, and settles the state. */
static int undo(anneal *a, move *m)
{
    switch (m->kind) {
    case MOVE_ORDER:
        order_move(a, m->v, m->from);
        break;
    case MOVE_ADD:
        for (int i = a->rc[m->w].n - 1; i >= 0; i--)
            if (a->rc[m->w].a[i] == m->v) {
                rc_del(a, m->w, i);
                break;
            }
        break;
    case MOVE_DROP:
        for (int i = 0; i < m->gone.n; i++)
            if (rc_add(a, m->w, m->gone.a[i])) return -1;
        break;
    case MOVE_CHAIN: /* they were appended last */
        for (int i = 0; i < m->gone.n; i++) rc_del(a, m->w, a->rc[m->w].n - 1);
        break;
    }
    return settle(a, NULL);
}

/* Which moves a walk makes. */
enum { MOVES_ALL, MOVES_KEEP_ORDER, MOVES_ORDER_ONLY };

/* One random move: in the order 30% of the time (none with
 * MOVES_KEEP_ORDER, all with MOVES_ORDER_ONLY), a third of it at the peak;
 * then a fifth each of the rest: a recomputation, a chain of them, an
 * eviction at the peak, and two fifths drops. */
static int random_move(anneal *a, move *m, int kinds)
{
    double r = rnd_unit(a),
           p_order = kinds == MOVES_ALL          ? 0.3
                     : kinds == MOVES_ORDER_ONLY ? 1
                                                 : 0,
           q = (1 - p_order) / 5;
    return r < p_order / 3       ? try_shift(a, m)
           : r < p_order         ? try_order(a, m)
           : r < p_order + q     ? try_add(a, m)
           : r < p_order + 2 * q ? try_chain(a, m)
           : r < p_order + 3 * q ? try_evict(a, m)
                                 : try_drop(a, m);
}

/* ---- the walk ---- */

/* The best state so far: its order and its recomputations as (w, v) pairs. */
typedef struct saved {
    int *order;
    vec pairs;
    eval ev;
    int have;
} saved;

static int save(saved *s, anneal *a, const eval *ev)
{
    memcpy(s->order, a->order, (size_t)a->n * sizeof *s->order);
    s->pairs.n = 0;
    for (int w = 0; w < a->n; w++)
        for (int i = 0; i < a->rc[w].n; i++)
            if (vec_push(&s->pairs, w) || vec_push(&s->pairs, a->rc[w].a[i])) return -1;
    s->ev = *ev;
    s->ev.cost = a->cost = exact_cost(a);
    s->have = 1;
    return 0;
}

/* Keeps the settled state ev as the best when it fits and is cheaper than
 * the best so far (or as cheap with a lower peak). -1 when out of memory. */
static int offer(saved *best, anneal *a, const eval *ev)
{
    if (!fits(a->p, rm_problem_activation_budget(a->p), ev) ||
        (best->have && (ev->cost > best->ev.cost || (ev->cost == best->ev.cost && ev->peak >= best->ev.peak))))
        return 0;
    return save(best, a, ev);
}

static int restore(anneal *a, const saved *s)
{
    memcpy(a->order, s->order, (size_t)a->n * sizeof *a->order);
    rm_order_positions(a->pos, a->order, a->n);
    for (int w = 0; w < a->n; w++) a->rc[w].n = 0;
    for (int i = 0; i < s->pairs.n; i += 2)
        if (vec_push(&a->rc[s->pairs.a[i]], s->pairs.a[i + 1])) return -1;
    return rebuild(a, NULL);
}

/* The last step: every recomputation of the best state dropped in turn
 * (with those only it needed) wherever the schedule still fits and costs
 * less, until none can be. The walk ends cold, but not necessarily where no
 * single drop helps. */
static int descend(anneal *a, saved *best, size_t budget, double deadline)
{
    move m = {0};
    int rc = 0;
    for (int changed = 1; changed && !rc;) {
        changed = 0;
        for (int w = 0; w < a->n && !rc; w++)
            for (int i = a->rc[w].n - 1; i >= 0 && !rc && !rm_deadline_passed(deadline); i--) {
                if (i >= a->rc[w].n) continue; /* a cascade took more than one */
                m.kind = MOVE_DROP, m.w = w, m.gone.n = 0;
                if (vec_push(&m.gone, a->rc[w].a[i])) {
                    rc = -1;
                    break;
                }
                rc_del(a, w, i);
                eval ev;
                if (prune(a, w, &m.gone) || settle(a, &ev)) {
                    rc = -1;
                    break;
                }
                if (fits(a->p, budget, &ev) &&
                    (ev.cost < best->ev.cost || (ev.cost == best->ev.cost && ev.peak < best->ev.peak))) {
                    best->ev = ev;
                    changed = 1;
                } else if (undo(a, &m)) {
                    rc = -1;
                }
            }
    }
    free(m.gone.a);
    return rc ? rc : save(best, a, &best->ev);
}

static void free_vecs(vec *v, int n)
{
    if (v)
        for (int i = 0; i < n; i++) free(v[i].a);
    free(v);
}

static void anneal_free(anneal *a)
{
    free_vecs(a->rc, a->n);
    free_vecs(a->cs, a->n);
    free_vecs(a->rs, a->n);
    free_vecs(a->cp, a->n);
    free(a->rd_start);
    free(a->rd);
    free(a->order);
    free(a->pos);
    free(a->delta);
    free(a->local);
    free(a->sum);
    free(a->best);
    free(a->touched);
    free(a->dirty);
    free(a->tmark);
    free(a->dmark);
    free(a->sbuf);
    free(a->sfree);
    free(a->lastuse);
    free(a->used);
    free(a->stamp);
    free(a->cbuf);
    free(a->endof);
    free(a->estamp);
    free(a->mark);
}

/* The state of schedule s (its order and its recomputations; NULL:
 * checkpoint-all in order, or in the problem's order when that is NULL
 * too), settled, in place of the state so far. -1 when out of memory. */
static int load(anneal *a, const rm_schedule *s, const int *order, eval *ev)
{
    int n = a->n;
    for (int w = 0; w < n; w++) a->rc[w].n = 0;
    for (int t = 0; t < n; t++) a->order[t] = s ? rm_schedule_node_at(s, t) : order ? order[t] : t;
    rm_order_positions(a->pos, a->order, n);
    if (s)
        for (int t = 0; t < n; t++)
            for (int k = s->r_start[t]; k < s->r_start[t + 1]; k++)
                if (s->r_node[k] != t && vec_push(&a->rc[a->order[t]], rm_schedule_node_at(s, s->r_node[k]))) return -1;
    if (rebuild(a, NULL)) return -1;
    for (int w = 0; w < n; w++) /* recomputations nothing reads cost and keep nothing */
        if (a->rc[w].n && prune(a, w, NULL)) return -1;
    return settle(a, ev);
}

/* The state of schedule s (see load) with everything it needs allocated. */
static int anneal_init(anneal *a, const rm_problem *p, const rm_schedule *s, unsigned long long seed, eval *ev,
                       rm_err *e)
{
    int n = p->n;
    size_t nn = (size_t)n;
    memset(a, 0, sizeof *a);
    a->p = p, a->n = n;
    a->rng = rm_rng_make(seed);
    size_t budget = rm_problem_activation_budget(p);
    a->budget = budget > (size_t)LLONG_MAX ? LLONG_MAX : (long long)budget;
    double base = rm_problem_base_cost(p);
    a->scale = base > 0 ? base : 1;
    a->bscale = budget > 0 && budget != SIZE_MAX ? (double)budget : 1;
    for (a->leaves = 1; a->leaves < n; a->leaves *= 2) {
    }
    if (rm_order_readers(p, &a->rd_start, &a->rd))
        return rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory for %d nodes", n);
    a->order = malloc(nn * sizeof *a->order);
    a->pos = malloc(nn * sizeof *a->pos);
    a->rc = calloc(nn, sizeof *a->rc);
    a->cs = calloc(nn, sizeof *a->cs);
    a->rs = calloc(nn, sizeof *a->rs);
    a->cp = calloc(nn, sizeof *a->cp);
    a->delta = malloc(nn * sizeof *a->delta);
    a->local = malloc(nn * sizeof *a->local);
    a->sum = malloc(2 * (size_t)a->leaves * sizeof *a->sum);
    a->best = malloc(2 * (size_t)a->leaves * sizeof *a->best);
    a->touched = malloc(nn * sizeof *a->touched);
    a->dirty = malloc(nn * sizeof *a->dirty);
    a->tmark = calloc(nn, sizeof *a->tmark);
    a->dmark = calloc(nn, sizeof *a->dmark);
    a->lastuse = malloc(nn * sizeof *a->lastuse);
    a->used = malloc(nn * sizeof *a->used);
    a->stamp = calloc(nn, sizeof *a->stamp);
    a->mark = calloc(nn, sizeof *a->mark);
    a->endof = malloc(nn * sizeof *a->endof);
    a->estamp = calloc(nn, sizeof *a->estamp);
    a->tgen = 1;
    if (!a->order || !a->pos || !a->rc || !a->cs || !a->rs || !a->cp || !a->delta || !a->local || !a->sum || !a->best ||
        !a->touched || !a->dirty || !a->tmark || !a->dmark || !a->lastuse || !a->used || !a->stamp || !a->mark ||
        !a->endof || !a->estamp)
        return rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory for %d nodes", n);
    if (load(a, s, NULL, ev)) return rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory");
    return RM_OK;
}

/* ---- a start in a leaner order ---- */

/* Where the state does not fit: the lean order instead of its own, when it
 * lowers the peak (the recomputations stay: what a stage reads comes
 * before it in any order). */
static int lean_start(anneal *a, eval *cur, const int *lean)
{
    int *old = malloc((size_t)a->n * sizeof *old);
    eval ev;
    int rc = old ? 0 : -1;
    if (!rc) {
        memcpy(old, a->order, (size_t)a->n * sizeof *old);
        memcpy(a->order, lean, (size_t)a->n * sizeof *lean);
        rm_order_positions(a->pos, a->order, a->n);
        rc = rebuild(a, &ev);
    }
    if (!rc && ev.peak < cur->peak) {
        RM_LOG_INFO("anneal: the lean order peaks at %zu, its start's at %zu", ev.peak, cur->peak);
        *cur = ev;
    } else if (!rc) {
        memcpy(a->order, old, (size_t)a->n * sizeof *old);
        rm_order_positions(a->pos, a->order, a->n);
        rc = rebuild(a, cur);
    }
    free(old);
    return rc;
}

/* The walk's objective: cost over checkpoint-all's plus, at weight, the
 * bytes over the budget as a share of it. Every move asks it: the scales
 * are the state's (checkpoint-all's cost is a sum over the nodes). */
static double score(const anneal *a, const eval *ev, double weight)
{
    long long over = (long long)ev->peak - a->budget;
    return ev->cost / a->scale + weight * (over > 0 ? (double)over : 0) / a->bscale;
}

/* Schedule s (NULL: checkpoint-all in order, NULL: the problem's) as the
 * start in place of the state cur, when it scores lower at the walk's
 * first weight:
 * a start within the budget at a high cost can be further from a cheap
 * schedule than one a little over it (Moccasin's 1000-node graph at 80%:
 * from DTR's schedule, +117%, the anneal found +11.7% where from
 * checkpoint-all in the lean order, 5% over, it had found +4.8%). -1 when
 * out of memory. */
static int consider_start(anneal *a, eval *cur, const rm_schedule *s, const int *order, const char *what)
{
    saved old = {0};
    eval ev;
    int rc = (old.order = malloc((size_t)a->n * sizeof *old.order)) ? 0 : -1;
    if (!rc) rc = save(&old, a, cur) || load(a, s, order, &ev);
    if (!rc && score(a, &ev, 1) < score(a, cur, 1)) {
        RM_LOG_INFO("anneal: starts from %s (cost %.6g, peak %zu) rather than cost %.6g, peak %zu", what, ev.cost,
                    ev.peak, cur->cost, cur->peak);
        *cur = ev;
    } else if (!rc) {
        rc = restore(a, &old) || settle(a, cur);
    }
    free(old.order);
    free(old.pairs.a);
    return rc;
}

/* Where the state still does not fit: DTR's schedule in its order, when
 * DTR finds one (dtr.c) in a tenth of the time left and it scores lower.
 * The tenth: on 100,263 nodes at 90% DTR in the lean order neither fits
 * nor thrashes fast, and given the anneal's deadline it took the walk's
 * time (231,153 moves in 40 s, where the walk alone makes millions). -1
 * when out of memory. */
static int dtr_start(anneal *a, eval *cur, double deadline)
{
    rm_schedule *s = NULL;
    rm_err ignored = {RM_OK, ""};
    int rc = rm_dtr_in_order(&s, a->p, a->order, a->rd_start, rm_deadline_share(deadline, 0.1), &ignored);
    if (rc == RM_ERR_NOMEM) return -1;
    if (rc != RM_OK) return 0;
    rc = consider_start(a, cur, s, NULL, "DTR's schedule in its order");
    rm_schedule_free(s);
    return rc;
}

/* The lone walk's temperature (with restarts, the hotter walks'), as a
 * share of checkpoint-all's cost: 2%
 * up to 1000 nodes, then the same per node (20 nodes' mean cost). Beyond
 * 1000 nodes the walk has fewer moves a node (default_moves' cap, or the
 * clock), and a hotter one spends them wandering: on 100,263 nodes at 90%
 * in 30 s, 2% found nothing, 2e-4 +2.02%. */
static double first_temp(int n)
{
    return n > 1000 ? 0.02 * 1000.0 / n : 0.02;
}

/* The cooler walks' temperature: two nodes' mean cost (as a share of
 * checkpoint-all's), or first_temp where that is cooler (up to 100 nodes). */
static double cool_temp(int n)
{
    return fmin(first_temp(n), 2.0 / n);
}

/* The default number of moves: 2,000 a node, within 30,000 .. 10,000,000
 * (a time limit stops a long walk earlier, and it then cools by the clock). */
static long default_moves(int n)
{
    long m = 2000L * n;
    return m < 30000 ? 30000 : m > 10000000 ? 10000000 : m;
}

/* A walk's length when walks follow one another (restarts): the default
 * up to 250 nodes, then growing as n squared, 8,000,000 at 1000 nodes
 * (within 10,000,000; a deadline ends a longer walk first). The moves a
 * walk needs grow faster than the nodes: on Moccasin's 1000-node graph at
 * 80%, cool walks of 2,000,000 moves (4.5 s) gave +3.55%, of 8,000,000
 * +2.20% and +2.01% (seeds 1, 2), where on remat's 250-node graphs walks of
 * 500,000 moves, many of them, found +0.32% at 80%, and a few long ones
 * from +0.32% to +12.9%. */
static long restart_moves(int n)
{
    long m = 8L * n * n, d = default_moves(n);
    return m < d ? d : m > 10000000 ? 10000000 : m;
}

/* One walk's settings. */
typedef struct walk_opts {
    long moves;                   /* its length (a deadline may end it earlier: it then cools by the clock) */
    double deadline;              /* 0: none */
    double temp0;                 /* its first temperature, as a share of checkpoint-all's cost */
    int kinds;                    /* its moves (MOVES_*) */
    long cycle;                   /* > 0: a cyclic walk (order_walk), at temp0 throughout, the clock only stopping it */
    const rm_strategy_options *o; /* the progress lines' sink */
    double t0;                    /* when the anneal began (progress) */
    double *next_say;
    long *moves_done, *accepted; /* over every walk */
    size_t *lowest;              /* the lowest peak of any state judged */
} walk_opts;

/* The order walk's cycles: 2,500 moves a node, at most 200,000 (a
 * multiple of 16, so that the eight steps of a push are equal); it walks
 * at most five. Where an order fits with every node once, it found one on
 * the graphs of bench/reorder.sh in the push of the first, second or
 * third cycle (eight seeds), and missed once in three cycles (remat's
 * banded 1000-node graph at 90%, one seed of thirteen). Five cycles take
 * about 1 s at 1000 nodes; where no order is near, the walk stops after
 * one (walk: a cycle more than 5% over). Cycles of 100,000 or 300,000
 * moves missed remat's uniform 1000-node graph at 90% (three seeds of
 * three). */
static long order_cycle(int n)
{
    long c = 2500L * n;
    return (c > 200000 ? 200000 : c) / 16 * 16;
}

/* One annealing walk from the settled state cur; best keeps the cheapest
 * state that fits, over every walk. */
static int walk(anneal *a, saved *best, eval cur, const walk_opts *w)
{
    const rm_problem *p = a->p;
    size_t budget = rm_problem_activation_budget(p);
    double base = rm_problem_base_cost(p), weight = 1;
    move m = {0};
    int rc = 0, epoch = 0;
    long k = 0;
    double t0 = rm_now(), temp1 = w->temp0 * 5e-4;
#define SCORE(ev) score(a, &(ev), weight)
    double fcur = SCORE(cur);
    size_t cycle_low = SIZE_MAX; /* the lowest peak of this cycle (cyclic walks) */
    for (;; k++) {
        /* A probe asks whether anything fits; nothing is cheaper than
         * every node once (the peak then no longer matters). */
        if (best->have && (w->o->first_fit || best->ev.cost <= base)) break;
        if (w->moves > 0 && k >= w->moves) break;
        double frac = w->moves > 0 ? (double)k / (double)w->moves : 0;
        if (w->deadline > 0) { /* every move: a clock read is little beside a move */
            double now = rm_now();
            if (now >= w->deadline) break;
            double tf = (now - t0) / (w->deadline - t0);
            if (tf > frac && !w->cycle) frac = tf;
            if (w->o->log && now >= *w->next_say) {
                char line[200];
                long done = *w->moves_done + k;
                if (best->have)
                    snprintf(line, sizeof line, "anneal: %.0f s, %ld moves, best %+.2f%% at peak %zu", now - w->t0,
                             done, rm_overhead_pct(best->ev.cost, base), best->ev.peak);
                else
                    snprintf(line, sizeof line, "anneal: %.0f s, %ld moves, nothing within the budget yet", now - w->t0,
                             done);
                w->o->log(w->o->log_ctx, line);
                *w->next_say = now + 5;
            }
        }
        if (frac >= 1) break;
        if (w->cycle) {
            /* A cyclic walk: the weight of the bytes over the budget is 1
             * for the first half of a cycle (free to wander), then doubles
             * at each of eight steps of the second half while over it (a
             * push under the budget), then falls back to 1. */
            long c = k % w->cycle, half = w->cycle / 2;
            if (c == 0 && k > 0) {
                /* A cycle whose lowest peak stayed more than 5% over the
                 * budget ends the walk: on bench/reorder.sh's graphs every
                 * fit came after cycles within 2.6%, and 22 of the 26
                 * graph-budgets where the walk found nothing stayed over
                 * 5% in every cycle. */
                RM_LOG_DEBUG("anneal: the order walk's cycle %ld: its lowest peak %.2f%% over the budget", k / w->cycle,
                             100.0 * ((double)cycle_low - (double)budget) / fmax(1, (double)budget));
                if (cycle_low > budget && cycle_low - budget > budget / 20) break;
                cycle_low = SIZE_MAX;
            }
            if (c == 0 && weight != 1) weight = 1, fcur = SCORE(cur);
            if (c >= half && (c - half) % (half / 8) == 0 && !fits(p, budget, &cur)) weight *= 2, fcur = SCORE(cur);
        } else if ((int)(frac * 40) > epoch) {
            /* Each fortieth of the walk ended over the budget doubles the
             * weight of the bytes over it. */
            epoch = (int)(frac * 40);
            if (!fits(p, budget, &cur) && weight < 1e12) weight *= 2, fcur = SCORE(cur);
        }
        double temp = w->cycle ? w->temp0 : w->temp0 * pow(temp1 / w->temp0, frac);
        int kind = random_move(a, &m, w->kinds);
        if (kind < 0) goto nomem;
        if (kind == MOVE_NONE) continue;
        eval ev;
        if (settle(a, &ev)) goto nomem;
        double f = SCORE(ev);
        if (ev.peak < *w->lowest) *w->lowest = ev.peak;
        if (ev.peak < cycle_low) cycle_low = ev.peak;
        if (offer(best, a, &ev)) goto nomem; /* kept even where the walk goes on elsewhere */
        if (f <= fcur || rnd_unit(a) < exp((fcur - f) / temp)) {
            cur = ev, fcur = f, ++*w->accepted;
        } else if (undo(a, &m)) {
            goto nomem;
        }
    }
#undef SCORE
    goto done;
nomem:
    rc = -1;
done:
    *w->moves_done += k;
    free(m.gone.a);
    return rc;
}

/* Whether an order fits with every node computed once, which nothing is
 * cheaper than: from checkpoint-all in the lean order, a walk that only
 * moves nodes in the order and ends at the first such fit (kept in best),
 * after five cycles (order_cycle), after a cycle whose lowest peak stayed
 * more than 5% over the budget, or at a tenth of the time left. Then the
 * state cur is back, and the random stream as it was. Why: the walks with
 * recomputations find such an order late, or never, since a recomputation
 * lowers the peak sooner than moves in the order do (remat's uniform
 * 1000-node graph at 90%: best +0.14% in 40 s; with this walk +0% in under
 * a second), and on the graphs of bench/reorder.sh where one exists they
 * took 15 to 22 s to find it at 1000 nodes. It walks at the cool walks'
 * temperature, in cycles: free (the bytes over the budget at weight 1),
 * then pushed under the budget (the weight doubling), then free again. The
 * fits came in the pushes; one cooling of the weight and the temperature
 * (the walks' schedule) missed some on small graphs (remat's 89-node
 * banded graph at 80%: found by best's later walks in 12 s, once not in
 * 40 s), and at one temperature with a fixed weight it missed some on
 * 500 and 1000 nodes. -1 when out of memory. */
static int order_walk(anneal *a, saved *best, eval *cur, const walk_opts *w0, const int *lean, double deadline)
{
    saved keep = {0};
    eval ev;
    int rc = (keep.order = malloc((size_t)a->n * sizeof *keep.order)) ? 0 : -1;
    if (!rc) rc = save(&keep, a, cur) || load(a, NULL, lean, &ev) || offer(best, a, &ev);
    if (!rc && ev.peak < *w0->lowest) *w0->lowest = ev.peak;
    rm_rng rng = a->rng; /* the walks after draw what they would without this one */
    if (!rc && !fits(a->p, rm_problem_activation_budget(a->p), &ev)) {
        walk_opts w = *w0;
        w.kinds = MOVES_ORDER_ONLY;
        w.cycle = order_cycle(a->n);
        w.moves = 5 * w.cycle;
        w.deadline = rm_deadline_share(deadline, 0.1);
        w.temp0 = cool_temp(a->n);
        long before = *w.moves_done;
        rc = walk(a, best, ev, &w) || settle(a, &ev);
        if (!rc && best->have && best->ev.cost <= rm_problem_base_cost(a->p))
            RM_LOG_INFO("anneal: an order fits with every node computed once (%ld moves in the order)",
                        *w.moves_done - before);
        else if (!rc)
            RM_LOG_INFO("anneal: no order found that fits with every node computed once in %ld moves in the order "
                        "(the last peaks %.1f%% over the budget)",
                        *w.moves_done - before,
                        100.0 * ((double)ev.peak - (double)a->budget) / fmax(1, (double)a->budget));
    }
    if (!rc) rc = restore(a, &keep) || settle(a, cur);
    a->rng = rng;
    free(keep.order);
    free(keep.pairs.a);
    return rc;
}

int rm_strategy_anneal(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                       rm_err *e)
{
    static const rm_strategy_options none;
    if (!o) o = &none;
    rm_strategy_stats dummy;
    if (!stats) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    stats->status = RM_STATUS_ERROR;
    *out = NULL;
    int rc = rm_problem_validate(p, e);
    if (rc || (rc = rm_problem_check_budget(p, "anneal", e))) {
        if (rc == RM_ERR_INFEASIBLE) stats->status = RM_STATUS_INFEASIBLE;
        return rc;
    }
    double deadline = o->deadline > 0 ? o->deadline : o->time_limit_s > 0 ? rm_deadline_in(o->time_limit_s) : 0;
    anneal a;
    saved best = {0}, start = {0};
    eval cur;
    int *lean = NULL; /* free to reorder: the lean order (order.h), the starts' and the order walk's */
    if ((rc = anneal_init(&a, p, o->incumbent, o->seed ? o->seed : 1, &cur, e))) goto done;
    if (!(best.order = malloc((size_t)p->n * sizeof *best.order))) goto nomem;
    size_t budget = rm_problem_activation_budget(p);
    double base = rm_problem_base_cost(p);
    /* The incumbent is the answer to beat, wherever the walk starts. */
    if (offer(&best, &a, &cur)) goto nomem;
    long done_moves = 0, accepted = 0;
    size_t lowest = cur.peak;
    double next_say = rm_now() + 1;
    walk_opts w = {.moves = o->moves > 0 ? o->moves : default_moves(p->n),
                   .deadline = deadline,
                   .temp0 = first_temp(p->n),
                   .kinds = o->keep_order ? MOVES_KEEP_ORDER : MOVES_ALL,
                   .o = o,
                   .t0 = rm_now(),
                   .next_say = &next_say,
                   .moves_done = &done_moves,
                   .accepted = &accepted,
                   .lowest = &lowest};
    if (o->incumbent && consider_start(&a, &cur, NULL, NULL, "checkpoint-all")) goto nomem;
    /* Free to reorder: checkpoint-all in a leaner order may fit where the
     * incumbent recomputes (remat's uniform 1000-node graph at 90%: +0.3%
     * from there, +3.7% from DTR's +8.4% schedule). */
    if (!o->keep_order && (!(lean = malloc((size_t)p->n * sizeof *lean)) || rm_order_lean(p, a.rd_start, a.rd, lean)))
        goto nomem;
    if (lean && o->incumbent && consider_start(&a, &cur, NULL, lean, "checkpoint-all in a leaner order")) goto nomem;
    if (lean && cur.peak > budget && lean_start(&a, &cur, lean)) goto nomem;
#define DONE (best.have && (best.ev.cost <= base || o->first_fit))
    /* A start that fits is the answer to beat too; nothing is cheaper than
     * every node once (DONE), and a probe asks only whether anything fits. */
    if (offer(&best, &a, &cur)) goto nomem;
    if (lean && !DONE && order_walk(&a, &best, &cur, &w, lean, deadline)) goto nomem;
    if (!DONE && !fits(p, budget, &cur) && dtr_start(&a, &cur, deadline)) goto nomem;
    if (offer(&best, &a, &cur)) goto nomem;
    if (cur.peak < lowest) lowest = cur.peak; /* the starts' too */
    int cut = 0;                              /* the first walk stopped by the clock short of its length */
    /* With restarts, walks follow one another until the deadline, each
     * from the start: alternately at two nodes' mean cost and at the first
     * walk's temperature (hotter above 100 nodes), cooler first; each of
     * restart_moves(n) moves (or the moves asked for), the first in at most
     * four fifths of the time (all of it above RM_ONE_WALK_NODES) and the
     * last cooling by the clock. Which temperature a graph favours varies
     * (bench/reorder.sh, one core, 15 s walks, seeds 1 and 2:
     * Moccasin's 1000-node graph at 80% +2.27%, +2.07% cool against +5.69%,
     * +5.16% hot; remat's banded 1000-node graph at 80% +0.81%, +0.91% cool
     * against +0.65%, +0.16% hot, at 70% none, +7.93% cool against +9.50%,
     * +8.62% hot), and both keep the best. Cooler first: a hot walk keeps
     * more recomputations, and its moves are slower (Moccasin's 1000-node
     * graph: 2,000,000 moves in 35 s hot, 7.7 s cool). The fifth left to a
     * hot walk: at 70% on remat's banded graph the cool walk alone in
     * best's 30 s found none in one seed of two. */
    int restarts = o->restarts && deadline > 0 && !o->first_fit;
    if (restarts && (!(start.order = malloc((size_t)p->n * sizeof *start.order)) || save(&start, &a, &cur))) goto nomem;
    if (restarts && o->moves <= 0) w.moves = restart_moves(p->n);
    for (int k = 0; !DONE; k++) {
        if (k > 0) {
            if (!restarts || rm_deadline_passed(deadline)) break;
            if (restore(&a, &start) || settle(&a, &cur)) goto nomem;
        }
        if (restarts) {
            w.temp0 = k % 2 ? first_temp(p->n) : cool_temp(p->n);
            w.deadline = k == 0 && p->n <= RM_ONE_WALK_NODES ? rm_deadline_share(deadline, 0.8) : deadline;
            RM_LOG_INFO("anneal: walk %d, at temperature %.3g", k + 1, w.temp0);
        }
        if (walk(&a, &best, cur, &w)) goto nomem;
        if (k == 0) cut = w.deadline > 0 && rm_deadline_passed(w.deadline);
    }
#undef DONE
    stats->stopped = cut;
    RM_LOG_INFO("anneal: %ld moves, %ld accepted, %s", done_moves, accepted,
                best.have ? "a schedule within the budget" : "none within the budget");
    if (!best.have) {
        stats->status = RM_STATUS_INFEASIBLE;
        if (lowest > budget)
            rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                           "anneal: no schedule within the budget found in %ld moves: the lowest peak it reached is "
                           "%.1f%% over the activation budget (not a proof that none exists)",
                           done_moves, 100.0 * (double)(lowest - budget) / (double)(budget ? budget : 1));
        else
            rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                           "anneal: no schedule within the budget found in %ld moves: those within it cost more "
                           "than the problem's cost limit (not a proof that none exists)",
                           done_moves);
        goto done;
    }
    if (restore(&a, &best) || descend(&a, &best, budget, deadline)) goto nomem;
    if ((rc = to_schedule(out, &a, e))) goto done;
    /* The walk's judge and the simulator must agree to the byte. */
    if ((rc = rm_simulate(&stats->sim, p, *out, e))) goto done;
    if (stats->sim.peak_bytes != best.ev.peak || fabs(stats->sim.cost - best.ev.cost) > 1e-9 * fmax(1, base)) {
        rc = rm_errorf(e, RM_ERR_INVALID, "anneal: its replay says cost %.17g, peak %zu; the simulator %.17g, %zu",
                       best.ev.cost, best.ev.peak, stats->sim.cost, stats->sim.peak_bytes);
        goto done;
    }
    stats->status = RM_STATUS_OK;
    stats->source = "anneal";
    goto done;
nomem:
    rc = rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory");
done:
    if (rc) {
        rm_schedule_free(*out);
        *out = NULL;
    }
    free(best.order);
    free(best.pairs.a);
    free(start.order);
    free(start.pairs.a);
    free(lean);
    anneal_free(&a);
    return rc;
}

/* The incremental judge against the simulator, move by move. */
static int check_state(anneal *a, const eval *ev, long k, const char *what, rm_err *e)
{
    rm_schedule *s = NULL;
    rm_sim_result r;
    int rc = to_schedule(&s, a, e);
    if (!rc) rc = rm_simulate(&r, a->p, s, e);
    rm_schedule_free(s);
    if (rc) return rc;
    double c = exact_cost(a);
    if (r.peak_bytes != ev->peak || fabs(r.cost - c) > 1e-9 * fmax(1, c) || fabs(ev->cost - c) > 1e-6 * fmax(1, c))
        return rm_errorf(e, RM_ERR_INVALID,
                         "anneal: after move %ld (%s) it says cost %.17g, peak %zu; the simulator %.17g, %zu", k, what,
                         ev->cost, ev->peak, r.cost, r.peak_bytes);
    return RM_OK;
}

int rm_anneal_check_walk(const rm_problem *p, long moves, unsigned long seed, rm_err *e)
{
    static const char *const names[] = {"none", "order", "add", "drop", "chain"};
    anneal a;
    move m = {0};
    saved keep = {0};
    eval ev;
    memset(&a, 0, sizeof a);
    int rc = rm_problem_validate(p, e);
    if (rc || (rc = anneal_init(&a, p, NULL, seed, &ev, e))) goto done;
    if (!(keep.order = malloc((size_t)p->n * sizeof *keep.order))) goto nomem;
    for (long k = 0; k < moves && !rc; k++) {
        int kind = random_move(&a, &m, MOVES_ALL);
        if (kind < 0 || settle(&a, &ev)) goto nomem;
        if (kind == MOVE_NONE || (rc = check_state(&a, &ev, k, names[kind], e))) continue;
        double r = rnd_unit(&a);
        if (r < 0.3) { /* taken back */
            if (undo(&a, &m) || settle(&a, &ev)) goto nomem;
            rc = check_state(&a, &ev, k, "undo", e);
        } else if (r < 0.32) { /* kept aside, and brought back from scratch */
            if (save(&keep, &a, &ev) || restore(&a, &keep) || settle(&a, &ev)) goto nomem;
            rc = check_state(&a, &ev, k, "restore", e);
        } else if (r < 0.34) { /* kept as the best (offer), then taken back */
            if (save(&keep, &a, &ev) || undo(&a, &m) || settle(&a, &ev)) goto nomem;
            rc = check_state(&a, &ev, k, "save, undo", e);
        }
    }
    goto done;
nomem:
    rc = rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory");
done:
    free(m.gone.a);
    free(keep.order);
    free(keep.pairs.a);
    anneal_free(&a);
    return rc;
}

int rm_route_anneal(rm_schedule **out, rm_strategy_stats *stats, const rm_problem *p, const rm_strategy_options *o,
                    rm_err *e)
{
    static const rm_strategy_options none;
    if (!o) o = &none;
    rm_strategy_stats dummy;
    if (!stats) stats = &dummy;
    int rc;
    *out = NULL;
    if (rm_route_shortcuts(&rc, out, stats, p, o, "anneal", 0, e) == RM_ROUTE_ANSWERED) return rc;
    double deadline = rm_route_deadline(o);
    const char *iname = NULL;
    rm_sim_result ir;
    rm_schedule *inc = rm_route_incumbent(p, o, rm_deadline_share(deadline, 0.25), "anneal", &iname, &ir, NULL);
    rm_strategy_options so = rm_route_phase(o, deadline);
    so.incumbent = inc;
    rc = rm_strategy_anneal(out, stats, p, &so, e);
    rm_schedule_free(inc);
    return rc;
}
