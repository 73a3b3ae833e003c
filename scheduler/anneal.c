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
 * it; drop a recomputation (and those only it needed). A move is judged by
 * replaying the whole state (evaluate(), linear in its computes and their
 * inputs) under the memory model of schedule_ops.c; the answer is checked
 * against rm_simulate before it is returned, so the two cannot drift apart.
 * The objective is cost over checkpoint-all's plus a penalty on the bytes
 * over the budget, whose weight doubles while the walk stays over it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadline.h"
#include "log.h"
#include "order.h"
#include "rng.h"
#include "route_internal.h"

/* A node's recomputations: the values its stage recomputes. */
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

typedef struct eval {
    double cost;
    size_t peak;
    double excess; /* over the stages, the bytes by which each one's peak passes the budget */
} eval;

typedef struct anneal {
    const rm_problem *p;
    int n;
    int *rd_start, *rd; /* readers of each node (CSR) */
    int *order, *pos;
    vec *rc;  /* rc[w]: what w's stage recomputes */
    long nrc; /* recomputations in all */
    int *seq; /* the computes of the last evaluation, stage by stage */
    int *seq_start;
    long seq_cap;
    int *cur, *start, *end, *last_read, *stamp, *lastuse, *used;
    int *inst_at, *inst; /* each node's copies in the last evaluation, by stage: inst[inst_at[v] ..] */
    int fresh;           /* the last evaluation is of the current state */
    size_t *freeb;
    long long *diff;
    int *mark; /* scratch for the moves */
    int mark_gen;
    size_t budget; /* the activation budget, for eval.excess */
    size_t *top;   /* each stage's peak in the last evaluation */
    size_t peak;   /* and the whole schedule's */
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

/* Room for the computes of the current state. */
static int ensure_seq(anneal *a)
{
    long need = a->n + a->nrc;
    if (need <= a->seq_cap) return 0;
    long cap = need * 2;
    int *seq = realloc(a->seq, (size_t)cap * sizeof *seq), *start = NULL, *end = NULL;
    if (seq) a->seq = seq;
    if (seq) start = realloc(a->start, (size_t)cap * sizeof *start);
    if (start) a->start = start;
    if (start) end = realloc(a->end, (size_t)cap * sizeof *end);
    if (end) a->end = end;
    size_t *fb = end ? realloc(a->freeb, (size_t)cap * sizeof *fb) : NULL;
    if (fb) a->freeb = fb;
    int *inst = fb ? realloc(a->inst, (size_t)cap * sizeof *inst) : NULL;
    if (inst) a->inst = inst;
    if (!seq || !start || !end || !fb || !inst) return -1;
    a->seq_cap = cap;
    return 0;
}

/* Stage t's computes into a->seq at k: its recomputations by position,
 * then its own node. Returns the new end. */
static long stage_computes(anneal *a, int t, long k)
{
    int w = a->order[t];
    const vec *r = &a->rc[w];
    long k0 = k;
    for (int i = 0; i < r->n; i++) { /* insertion sort by position: stages recompute few */
        int x = r->a[i];
        long j = k++;
        while (j > k0 && a->pos[a->seq[j - 1]] > a->pos[x]) a->seq[j] = a->seq[j - 1], j--;
        a->seq[j] = x;
    }
    a->seq[k++] = w;
    return k;
}

/* The state's cost and activation peak, as rm_simulate would find them for
 * to_schedule()'s schedule. Pass 1 lays out the computes and finds how long
 * each copy is kept (to its last reading stage); pass 2 replays each stage:
 * what is kept into it, then each compute, then the frees after its last
 * use in the stage of what is not kept into the next. */
static int evaluate(anneal *a, eval *out)
{
    if (ensure_seq(a)) return -1;
    const rm_problem *p = a->p;
    int n = a->n;
    long k = 0, id = 0;
    double cost = 0;
    for (int v = 0; v < n; v++) a->cur[v] = -1;
    memset(a->diff, 0, ((size_t)n + 1) * sizeof *a->diff);
    for (int t = 0; t < n; t++) {
        a->seq_start[t] = (int)k;
        long k1 = stage_computes(a, t, k);
        for (; k < k1; k++, id++) {
            int x = a->seq[k];
            const rm_problem_node *nd = &p->nodes[x];
            for (int d = 0; d < nd->ndeps; d++) {
                int u = nd->deps[d];
                if (a->start[a->cur[u]] != t) a->last_read[u] = t; /* kept from an earlier stage */
            }
            if (a->cur[x] >= 0) { /* the previous copy ends at its last reading stage */
                long c = a->cur[x];
                a->end[c] = a->last_read[x];
                a->diff[a->start[c] + 1] += (long long)nd->bytes;
                a->diff[a->last_read[x] + 1] -= (long long)nd->bytes;
            }
            a->cur[x] = (int)id;
            a->start[id] = t;
            a->last_read[x] = t;
            cost += nd->cost;
        }
    }
    a->seq_start[n] = (int)k;
    for (int v = 0; v < n; v++) {
        long c = a->cur[v];
        a->end[c] = a->last_read[v];
        a->diff[a->start[c] + 1] += (long long)p->nodes[v].bytes;
        a->diff[a->last_read[v] + 1] -= (long long)p->nodes[v].bytes;
    }
    /* Each node's copies, in stage order (for the moves' questions). */
    memset(a->inst_at, 0, ((size_t)n + 1) * sizeof *a->inst_at);
    for (long j = 0; j < k; j++) a->inst_at[a->seq[j] + 1]++;
    for (int v = 0; v < n; v++) a->inst_at[v + 1] += a->inst_at[v];
    for (int v = 0; v < n; v++) a->cur[v] = a->inst_at[v];
    for (long j = 0; j < k; j++) a->inst[a->cur[a->seq[j]]++] = (int)j; /* copy ids are compute indices */
    a->fresh = 1;
    /* Pass 2. */
    for (int v = 0; v < n; v++) a->cur[v] = -1, a->stamp[v] = -1;
    long long kept = 0;
    size_t peak = 0;
    double excess = 0;
    id = 0;
    for (int t = 0; t < n; t++) {
        kept += a->diff[t];
        int lo = a->seq_start[t], hi = a->seq_start[t + 1], nu = 0;
        for (int j = lo; j < hi; j++) {
            int x = a->seq[j];
            const rm_problem_node *nd = &p->nodes[x];
            for (int d = 0; d < nd->ndeps; d++) {
                int u = nd->deps[d];
                a->lastuse[u] = j;
                if (a->stamp[u] != t) a->stamp[u] = t, a->used[nu++] = u;
            }
            a->cur[x] = (int)(id + (j - lo));
            a->lastuse[x] = j;
            if (a->stamp[x] != t) a->stamp[x] = t, a->used[nu++] = x;
            a->freeb[j] = 0;
        }
        for (int i = 0; i < nu; i++) {
            int u = a->used[i];
            if (a->end[a->cur[u]] <= t) a->freeb[a->lastuse[u]] += p->nodes[u].bytes;
        }
        size_t mem = (size_t)kept, top = 0;
        for (int j = lo; j < hi; j++) {
            mem += p->nodes[a->seq[j]].bytes;
            if (mem > top) top = mem;
            mem -= a->freeb[j];
        }
        if (top > peak) peak = top;
        if (top > a->budget) excess += (double)(top - a->budget);
        a->top[t] = top;
        id += hi - lo;
    }
    out->cost = cost;
    out->peak = a->peak = peak;
    out->excess = excess;
    return 0;
}

/* The schedule of the state (positions in its order; the order attached
 * unless it is the problem's own). */
static int to_schedule(rm_schedule **out, anneal *a, rm_err *e)
{
    eval ev;
    if (evaluate(a, &ev)) return rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory");
    rm_schedule_builder b;
    int rc = rm_builder_init(&b, a->n, e), own = 1;
    if (rc) return rc;
    long id = 0;
    for (int t = 0; t < a->n; t++)
        for (int j = a->seq_start[t]; j < a->seq_start[t + 1]; j++, id++) {
            int x = a->seq[j];
            rm_builder_compute(&b, t, a->pos[x]);
            if (a->end[id] > t) rm_builder_retain(&b, a->pos[x], t + 1, a->end[id]);
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

/* Whether a copy of v is resident through stage t in the last evaluation
 * (computed before t and kept at least until t). */
static int kept_through(const anneal *a, int v, int t)
{
    int lo = a->inst_at[v], hi = a->inst_at[v + 1];
    while (lo < hi) { /* the first copy computed at or after t */
        int mid = (lo + hi) / 2;
        if (a->start[a->inst[mid]] < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > a->inst_at[v] && a->end[a->inst[lo - 1]] >= t;
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
                r->a[i--] = r->a[--r->n];
                a->nrc--;
                changed = 1;
            }
    }
    return 0;
}

/* Puts node v at position q, shifting those between. */
static void move_to(anneal *a, int v, int q)
{
    int at = a->pos[v];
    if (q > at)
        for (int t = at; t < q; t++) a->order[t] = a->order[t + 1], a->pos[a->order[t]] = t;
    else
        for (int t = at; t > q; t--) a->order[t] = a->order[t - 1], a->pos[a->order[t]] = t;
    a->order[q] = v;
    a->pos[v] = q;
}

enum { MOVE_NONE, MOVE_ORDER, MOVE_ADD, MOVE_DROP, MOVE_CHAIN };

typedef struct move {
    int kind, v, w, from; /* ORDER: v was at from; ADD/DROP: v in w's stage */
    vec gone;             /* DROP: every recomputation removed; CHAIN: every one added */
} move;

static int try_order(anneal *a, move *m)
{
    const rm_problem *p = a->p;
    int v = rnd_below(a, a->n), lo = 0, hi = a->n - 1;
    for (int d = 0; d < p->nodes[v].ndeps; d++)
        if (a->pos[p->nodes[v].deps[d]] + 1 > lo) lo = a->pos[p->nodes[v].deps[d]] + 1;
    for (int k = a->rd_start[v]; k < a->rd_start[v + 1]; k++)
        if (a->pos[a->rd[k]] - 1 < hi) hi = a->pos[a->rd[k]] - 1;
    if (hi <= lo) return MOVE_NONE;
    int q = lo + rnd_below(a, hi - lo);
    if (q >= a->pos[v]) q++;
    m->kind = MOVE_ORDER, m->v = v, m->from = a->pos[v]; /* (m->gone's buffer is kept for reuse) */
    move_to(a, v, q);
    return MOVE_ORDER;
}

static int try_add(anneal *a, move *m)
{
    const rm_problem *p = a->p;
    int w = rnd_below(a, a->n);
    /* A value the stage reads and does not compute: one of its inputs'. */
    mark_reads(a, w);
    int gen = a->mark_gen;
    for (int i = 0; i < a->rc[w].n; i++) a->mark[a->rc[w].a[i]] = gen - 1; /* computed here already */
    int pick = -1, seen = 0;
    const rm_problem_node *nd = &p->nodes[w];
    for (int i = -1; i < a->rc[w].n; i++) {
        const rm_problem_node *xd = i < 0 ? nd : &p->nodes[a->rc[w].a[i]];
        for (int d = 0; d < xd->ndeps; d++) {
            int u = xd->deps[d];
            if (a->mark[u] != gen) continue;
            a->mark[u] = gen - 1; /* each candidate once */
            if (rnd_below(a, ++seen) == 0) pick = u;
        }
    }
    a->mark_gen++; /* the marks above are spent */
    if (pick < 0 || a->n + a->nrc >= (long)RM_SCHEDULE_MAX_COMPUTES) return MOVE_NONE;
    if (vec_push(&a->rc[w], pick)) return -1;
    a->nrc++;
    m->kind = MOVE_ADD, m->v = pick, m->w = w;
    return MOVE_ADD;
}

/* Recomputes pick in w's stage (which reads it and does not compute it),
 * with every input it needs that is not resident there anyway, and theirs
 * (a rematerialization from what is in memory): one move where single
 * recomputations would each first lengthen their inputs' lives. At most 64
 * computes. Needs a fresh evaluation (kept_through). */
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
    for (int i = 0; i < m->gone.n; i++) {
        if (vec_push(&a->rc[w], m->gone.a[i])) return -1;
        a->nrc++;
    }
    return MOVE_CHAIN;
}

static int ensure_fresh(anneal *a)
{
    eval ev;
    return a->fresh ? 0 : evaluate(a, &ev);
}

/* A chain for a value a random stage reads and does not compute. */
static int try_chain(anneal *a, move *m)
{
    const rm_problem *p = a->p;
    if (ensure_fresh(a)) return -1;
    int w = rnd_below(a, a->n);
    mark_reads(a, w);
    int gen = a->mark_gen, pick = -1, seen = 0;
    for (int i = 0; i < a->rc[w].n; i++) a->mark[a->rc[w].a[i]] = gen - 1;
    for (int i = -1; i < a->rc[w].n; i++) {
        const rm_problem_node *xd = i < 0 ? &p->nodes[w] : &p->nodes[a->rc[w].a[i]];
        for (int d = 0; d < xd->ndeps; d++) {
            int u = xd->deps[d];
            if (a->mark[u] != gen) continue;
            a->mark[u] = gen - 1;
            if (rnd_below(a, ++seen) == 0) pick = u;
        }
    }
    return pick < 0 ? MOVE_NONE : chain_add(a, m, w, pick);
}

/* The move aimed at the peak: in a stage over the budget (or, within it,
 * one at the peak), a value kept through the stage that it does not read
 * is dropped there and rematerialized (chain_add) at its next reader. */
static int try_evict(anneal *a, move *m)
{
    if (ensure_fresh(a)) return -1;
    int t = -1, seen = 0;
    for (int s = 0; s < a->n; s++)
        if (a->top[s] > a->budget || (a->top[s] == a->peak && a->peak <= a->budget))
            if (rnd_below(a, ++seen) == 0) t = s;
    if (t < 0) return MOVE_NONE;
    mark_reads(a, a->order[t]);
    int gen = a->mark_gen;
    long pick = -1;
    seen = 0;
    for (long c = 0; c < a->seq_start[a->n]; c++) /* the copies kept through t, beyond it */
        if (a->start[c] < t && a->end[c] > t && a->mark[a->seq[c]] != gen && rnd_below(a, ++seen) == 0) pick = c;
    if (pick < 0) return MOVE_NONE;
    int u = a->seq[pick], next = a->n;
    for (int k = a->rd_start[u]; k < a->rd_start[u + 1]; k++)
        if (a->pos[a->rd[k]] > t && a->pos[a->rd[k]] < next) next = a->pos[a->rd[k]];
    return next < a->n ? chain_add(a, m, a->order[next], u) : MOVE_NONE;
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
    vec *r = &a->rc[w];
    int i = rnd_below(a, r->n);
    m->kind = MOVE_DROP;
    m->w = w;
    m->gone.n = 0;
    if (vec_push(&m->gone, r->a[i])) return -1;
    r->a[i] = r->a[--r->n];
    a->nrc--;
    if (prune(a, w, &m->gone)) return -1;
    return MOVE_DROP;
}

static int undo(anneal *a, move *m)
{
    switch (m->kind) {
    case MOVE_ORDER:
        move_to(a, m->v, m->from);
        break;
    case MOVE_ADD:
        for (int i = a->rc[m->w].n - 1; i >= 0; i--)
            if (a->rc[m->w].a[i] == m->v) {
                a->rc[m->w].a[i] = a->rc[m->w].a[--a->rc[m->w].n];
                a->nrc--;
                break;
            }
        break;
    case MOVE_DROP:
        for (int i = 0; i < m->gone.n; i++) {
            if (vec_push(&a->rc[m->w], m->gone.a[i])) return -1;
            a->nrc++;
        }
        break;
    case MOVE_CHAIN: /* they were appended last */
        a->rc[m->w].n -= m->gone.n;
        a->nrc -= m->gone.n;
        break;
    }
    a->fresh = 0;
    return 0;
}

/* ---- the walk ---- */

/* The best state so far: its order and its recomputations as (w, v) pairs. */
typedef struct saved {
    int *order;
    vec pairs;
    eval ev;
    int have;
} saved;

static int save(saved *s, const anneal *a, const eval *ev)
{
    memcpy(s->order, a->order, (size_t)a->n * sizeof *s->order);
    s->pairs.n = 0;
    for (int w = 0; w < a->n; w++)
        for (int i = 0; i < a->rc[w].n; i++)
            if (vec_push(&s->pairs, w) || vec_push(&s->pairs, a->rc[w].a[i])) return -1;
    s->ev = *ev;
    s->have = 1;
    return 0;
}

static int restore(anneal *a, const saved *s)
{
    memcpy(a->order, s->order, (size_t)a->n * sizeof *a->order);
    rm_order_positions(a->pos, a->order, a->n);
    a->fresh = 0;
    for (int w = 0; w < a->n; w++) a->rc[w].n = 0;
    a->nrc = 0;
    for (int i = 0; i < s->pairs.n; i += 2) {
        if (vec_push(&a->rc[s->pairs.a[i]], s->pairs.a[i + 1])) return -1;
        a->nrc++;
    }
    return 0;
}

/* The last step: every recomputation of the best state dropped in turn
 * (with those only it needed) wherever the schedule still fits and costs
 * less, until none can be. The walk ends cold, but not necessarily where no
 * single drop helps. */
static int descend(anneal *a, saved *best, size_t budget, double max_cost, double deadline)
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
                a->rc[w].a[i] = a->rc[w].a[--a->rc[w].n];
                a->nrc--;
                eval ev;
                if (prune(a, w, &m.gone) || evaluate(a, &ev)) {
                    rc = -1;
                    break;
                }
                int fits = ev.peak <= budget && (max_cost <= 0 || ev.cost <= max_cost);
                if (fits && (ev.cost < best->ev.cost || (ev.cost == best->ev.cost && ev.peak < best->ev.peak))) {
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

static void anneal_free(anneal *a)
{
    if (a->rc)
        for (int v = 0; v < a->n; v++) free(a->rc[v].a);
    free(a->rc);
    free(a->rd_start);
    free(a->rd);
    free(a->order);
    free(a->pos);
    free(a->seq);
    free(a->seq_start);
    free(a->cur);
    free(a->start);
    free(a->end);
    free(a->last_read);
    free(a->stamp);
    free(a->lastuse);
    free(a->used);
    free(a->freeb);
    free(a->diff);
    free(a->mark);
    free(a->inst_at);
    free(a->top);
    free(a->inst);
}

/* The state of schedule s (its order and its recomputations; NULL:
 * checkpoint-all in the problem's order). */
static int anneal_init(anneal *a, const rm_problem *p, const rm_schedule *s, unsigned long long seed, rm_err *e)
{
    int n = p->n;
    size_t nn = (size_t)n;
    memset(a, 0, sizeof *a);
    a->p = p, a->n = n;
    a->rng = rm_rng_make(seed);
    long edges = 0;
    for (int v = 0; v < n; v++) edges += p->nodes[v].ndeps;
    a->rd_start = calloc(nn + 1, sizeof *a->rd_start);
    a->rd = malloc((size_t)(edges ? edges : 1) * sizeof *a->rd);
    a->order = malloc(nn * sizeof *a->order);
    a->pos = malloc(nn * sizeof *a->pos);
    a->rc = calloc(nn, sizeof *a->rc);
    a->seq_start = malloc((nn + 1) * sizeof *a->seq_start);
    a->cur = malloc(nn * sizeof *a->cur);
    a->last_read = malloc(nn * sizeof *a->last_read);
    a->stamp = malloc(nn * sizeof *a->stamp);
    a->lastuse = malloc(nn * sizeof *a->lastuse);
    a->used = malloc(nn * sizeof *a->used);
    a->diff = malloc((nn + 2) * sizeof *a->diff);
    a->inst_at = malloc((nn + 1) * sizeof *a->inst_at);
    a->top = malloc(nn * sizeof *a->top);
    a->mark = calloc(nn, sizeof *a->mark);
    if (!a->rd_start || !a->rd || !a->order || !a->pos || !a->rc || !a->seq_start || !a->cur || !a->last_read ||
        !a->stamp || !a->lastuse || !a->used || !a->diff || !a->mark || !a->inst_at || !a->top)
        return rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory for %d nodes", n);
    for (int v = 0; v < n; v++)
        for (int d = 0; d < p->nodes[v].ndeps; d++) a->rd_start[p->nodes[v].deps[d] + 1]++;
    for (int v = 0; v < n; v++) a->rd_start[v + 1] += a->rd_start[v];
    for (int v = 0; v < n; v++) a->cur[v] = a->rd_start[v];
    for (int v = 0; v < n; v++)
        for (int d = 0; d < p->nodes[v].ndeps; d++) a->rd[a->cur[p->nodes[v].deps[d]]++] = v;
    for (int t = 0; t < n; t++) a->order[t] = s ? rm_schedule_node_at(s, t) : t;
    rm_order_positions(a->pos, a->order, n);
    if (s) {
        for (int t = 0; t < n; t++)
            for (int k = s->r_start[t]; k < s->r_start[t + 1]; k++) {
                if (s->r_node[k] == t) continue;
                if (vec_push(&a->rc[a->order[t]], rm_schedule_node_at(s, s->r_node[k])))
                    return rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory");
                a->nrc++;
            }
        for (int w = 0; w < n; w++) /* recomputations nothing reads cost and keep nothing */
            if (a->rc[w].n && prune(a, w, NULL)) return rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory");
    }
    if (ensure_seq(a)) return rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory");
    return RM_OK;
}

/* The default number of moves: 2,000 a node, within 30,000 .. 10,000,000
 * (a time limit stops a long walk earlier, and it then cools by the clock). */
static long default_moves(int n)
{
    long m = 2000L * n;
    return m < 30000 ? 30000 : m > 10000000 ? 10000000 : m;
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
    long moves = o->moves > 0 ? o->moves : default_moves(p->n);
    anneal a;
    saved best = {0};
    move m = {0};
    if ((rc = anneal_init(&a, p, o->incumbent, o->seed ? o->seed : 1, e))) goto done;
    if (!(best.order = malloc((size_t)p->n * sizeof *best.order))) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "anneal: out of memory");
        goto done;
    }
    size_t budget = rm_problem_activation_budget(p);
    a.budget = budget;
    double base = rm_problem_base_cost(p), scale = base > 0 ? base : 1;
    double bscale = budget > 0 && budget != SIZE_MAX ? (double)budget : 1, weight = 1;
    eval cur;
    if (evaluate(&a, &cur)) goto nomem;
#define FITS(ev) ((ev).peak <= budget && (p->max_cost <= 0 || (ev).cost <= p->max_cost))
#define SCORE(ev) ((ev).cost / scale + weight * (ev).excess / bscale)
    if (FITS(cur) && save(&best, &a, &cur)) goto nomem;
    /* Where checkpoint-all fits there is nothing to improve: every node once. */
    long done_moves = 0, accepted = 0;
    int epoch = 0;
    double t0 = rm_now(), temp0 = 0.02, temp1 = 1e-5, next_say = t0 + 1;
    if (!(best.have && best.ev.cost <= base)) {
        double fcur = SCORE(cur);
        for (;;) {
            double frac = moves > 0 ? (double)done_moves / (double)moves : 0;
            if (deadline > 0) { /* every move: a clock read is nothing beside a replay */
                double now = rm_now();
                if (now >= deadline) break;
                double tf = (now - t0) / (deadline - t0);
                if (tf > frac) frac = tf;
                if (o->log && now >= next_say) {
                    char line[200];
                    if (best.have)
                        snprintf(line, sizeof line, "anneal: %.0f s, %ld moves, best %+.2f%% at peak %zu", now - t0,
                                 done_moves, rm_overhead_pct(best.ev.cost, base), best.ev.peak);
                    else
                        snprintf(line, sizeof line, "anneal: %.0f s, %ld moves, nothing within the budget yet",
                                 now - t0, done_moves);
                    o->log(o->log_ctx, line);
                    next_say = now + 5;
                }
            }
            if (moves > 0 && done_moves >= moves) break;
            if (frac >= 1) break;
            /* Each fortieth of the walk ended over the budget doubles the
             * weight of the bytes over it. */
            if ((int)(frac * 40) > epoch) {
                epoch = (int)(frac * 40);
                if (!FITS(cur) && weight < 1e12) weight *= 2, fcur = SCORE(cur);
            }
            double temp = temp0 * pow(temp1 / temp0, frac);
            double r = rnd_unit(&a);
            /* Order 30% (none with keep_order), then a fifth each of the
             * rest: a recomputation, a chain of them, an eviction at the
             * peak, and two fifths drops. */
            double p_order = o->keep_order ? 0 : 0.3, q = (1 - p_order) / 5;
            int kind = r < p_order           ? try_order(&a, &m)
                       : r < p_order + q     ? try_add(&a, &m)
                       : r < p_order + 2 * q ? try_chain(&a, &m)
                       : r < p_order + 3 * q ? try_evict(&a, &m)
                                             : try_drop(&a, &m);
            done_moves++;
            if (kind < 0) goto nomem;
            if (kind == MOVE_NONE) continue;
            eval ev;
            if (evaluate(&a, &ev)) goto nomem;
            double f = SCORE(ev);
            if (f <= fcur || rnd_unit(&a) < exp((fcur - f) / temp)) {
                cur = ev, fcur = f, accepted++;
                if (FITS(ev) &&
                    (!best.have || ev.cost < best.ev.cost || (ev.cost == best.ev.cost && ev.peak < best.ev.peak)) &&
                    save(&best, &a, &ev))
                    goto nomem;
            } else if (undo(&a, &m)) {
                goto nomem;
            }
        }
    }
#undef FITS
#undef SCORE
    stats->stopped = deadline > 0 && rm_deadline_passed(deadline);
    RM_LOG_INFO("anneal: %ld moves, %ld accepted, %s", done_moves, accepted,
                best.have ? "a schedule within the budget" : "none within the budget");
    if (!best.have) {
        stats->status = RM_STATUS_INFEASIBLE;
        rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                       "anneal: no schedule within the budget found in %ld moves (not a proof that none exists)",
                       done_moves);
        goto done;
    }
    if (restore(&a, &best) || descend(&a, &best, budget, p->max_cost, deadline)) goto nomem;
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
    free(m.gone.a);
    free(best.order);
    free(best.pairs.a);
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
