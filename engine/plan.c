/* Static memory planning: buffer lifetimes from an operation sequence, then
 * offsets in one arena by offline best-fit placement. The lifetimes are known
 * in full before the step runs, so placement is the classic offline problem
 * (dynamic storage allocation, NP-hard in general); as in TFLite's memory
 * planner, a greedy that places buffers one at a time into the tightest gap
 * left by the already placed buffers that overlap it in time does well, and
 * which order it places them in matters. Several orders are tried and the
 * smallest span is kept, then a short local search on the order improves it,
 * stopping as soon as the span equals the live-bytes peak (no placement can
 * do better). O(buffers^2) per placement tried. */
#include "plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

void rm_plan_free(rm_plan *p)
{
    if (!p) return;
    free(p->ops);
    free(p->buffers);
    free(p);
}

const char *rm_plan_order_name(rm_plan_order order)
{
    switch (order) {
    case RM_PLAN_BY_SIZE:
        return "size";
    case RM_PLAN_BY_BREADTH:
        return "breadth";
    case RM_PLAN_BY_AREA:
        return "area";
    case RM_PLAN_BY_LIFETIME:
        return "lifetime";
    case RM_PLAN_BY_START:
        return "start";
    default:
        return "?";
    }
}

double rm_plan_fragmentation(const rm_plan *p)
{
    return p->live_peak ? (double)(p->span - p->live_peak) / (double)p->live_peak : 0.0;
}

/* ---- placement orders ---------------------------------------------------- */

/* A buffer (or operation) index with its precomputed sort keys: qsort has
 * no context argument, so the keys travel with the index. */
typedef struct sort_key {
    int index;
    unsigned long long primary, secondary; /* larger first */
} sort_key;

static int cmp_keys(const void *x, const void *y)
{
    const sort_key *a = x, *b = y;
    if (a->primary != b->primary) return a->primary > b->primary ? -1 : 1;
    if (a->secondary != b->secondary) return a->secondary > b->secondary ? -1 : 1;
    /* Ties: earlier allocation first, so every order is deterministic. */
    return (a->index > b->index) - (a->index < b->index);
}

static unsigned long long lifetime(const rm_plan_buffer *b)
{
    return (unsigned long long)(b->free_op - b->alloc_op);
}

/* Fills order[0..nb) with buffer indices in the given placement order; keys
 * (nb entries) is scratch. */
static void make_order(int *order, sort_key *keys, const rm_plan *p, const size_t *mem_after, rm_plan_order which)
{
    int nb = p->nbuffers;
    if (which == RM_PLAN_BY_BREADTH) {
        /* Operations by live bytes, most crowded first; each contributes its
         * live buffers, largest first, that no earlier operation took. */
        sort_key *ops = malloc((size_t)(p->nops ? p->nops : 1) * sizeof *ops);
        uint8_t *taken = calloc((size_t)(nb ? nb : 1), 1);
        if (!ops || !taken) { /* fall back to the size order rather than fail */
            free(ops);
            free(taken);
            make_order(order, keys, p, mem_after, RM_PLAN_BY_SIZE);
            return;
        }
        int nops = 0;
        for (int o = 0; o < p->nops; o++)
            if (p->ops[o].kind == RM_OP_COMPUTE) ops[nops++] = (sort_key){o, mem_after[o], 0};
        qsort(ops, (size_t)nops, sizeof *ops, cmp_keys);
        int m = 0;
        for (int k = 0; k < nops && m < nb; k++) {
            int o = ops[k].index, nl = 0;
            for (int i = 0; i < nb; i++)
                if (!taken[i] && p->buffers[i].alloc_op <= o && o < p->buffers[i].free_op)
                    keys[nl++] = (sort_key){i, p->buffers[i].size, lifetime(&p->buffers[i])};
            qsort(keys, (size_t)nl, sizeof *keys, cmp_keys);
            for (int j = 0; j < nl; j++) {
                order[m++] = keys[j].index;
                taken[keys[j].index] = 1;
            }
        }
        free(ops);
        free(taken);
        return;
    }
    for (int i = 0; i < nb; i++) {
        const rm_plan_buffer *b = &p->buffers[i];
        unsigned long long size = b->size, life = lifetime(b);
        sort_key k = {i, 0, 0};
        switch (which) {
        case RM_PLAN_BY_SIZE:
            k.primary = size, k.secondary = life;
            break;
        case RM_PLAN_BY_AREA:
            k.primary = size * life, k.secondary = size;
            break;
        case RM_PLAN_BY_LIFETIME:
            k.primary = life, k.secondary = size;
            break;
        default:
            break; /* RM_PLAN_BY_START: the index tie-break alone */
        }
        keys[i] = k;
    }
    qsort(keys, (size_t)nb, sizeof *keys, cmp_keys);
    for (int i = 0; i < nb; i++) order[i] = keys[i].index;
}

/* Places the buffers in the given order, each into the smallest gap between
 * the already placed buffers that coexist with it (or above all of them),
 * writing offset[] and returning the span. placed is scratch: the placed
 * buffers sorted by offset. */
static size_t place(size_t *offset, int *placed, const rm_plan *p, const int *order)
{
    int np = 0;
    size_t span = 0;
    for (int k = 0; k < p->nbuffers; k++) {
        int i = order[k];
        const rm_plan_buffer *b = &p->buffers[i];
        if (b->size == 0) { /* nothing to reserve: any aligned offset works */
            offset[i] = 0;
            continue;
        }
        size_t prev_end = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
        int insert_at = np;
        for (int j = 0; j < np; j++) {
            const rm_plan_buffer *c = &p->buffers[placed[j]];
            if (!rm_plan_buffers_coexist(b, c)) continue;
            size_t off = offset[placed[j]];
            if (off >= prev_end && off - prev_end >= b->size && off - prev_end < best_gap) {
                best_gap = off - prev_end;
                best = prev_end;
            }
            if (off + c->size > prev_end) prev_end = off + c->size;
        }
        if (best == SIZE_MAX) best = prev_end;
        offset[i] = best;
        if (best + b->size > span) span = best + b->size;
        /* Keep placed sorted by offset (stable: equal offsets keep placement order). */
        while (insert_at > 0 && offset[placed[insert_at - 1]] > best) insert_at--;
        memmove(placed + insert_at + 1, placed + insert_at, (size_t)(np - insert_at) * sizeof *placed);
        placed[insert_at] = i;
        np++;
    }
    return span;
}

/* A fixed-seed generator, so that plans are reproducible. */
static uint64_t next_random(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return *state >> 33;
}

/* Local search on the placement order, from the best greedy order (best,
 * whose placement is in p->buffers[].offset, with span `span`): move a buffer
 * that reaches the span (the one to blame for it) to a random earlier place
 * in the order, or swap two random buffers; keep the new order when its span
 * is no larger (sideways moves cross plateaus). The greedy orders leave a few
 * percent on some U-Nets that this recovers. Work is bounded: about 4e7
 * buffer pairs, at least 8 and at most 256 placements. Returns the span. */
static size_t search(rm_plan *p, int *best, int *cand, size_t *offset, int *placed, size_t span)
{
    int nb = p->nbuffers;
    if (nb < 2) return span;
    size_t pairs = (size_t)nb * (size_t)nb, tries = pairs ? 40000000 / pairs : 256;
    if (tries < 8) tries = 8;
    if (tries > 256) tries = 256;
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (size_t t = 0; t < tries && span > p->live_peak; t++) {
        memcpy(cand, best, (size_t)nb * sizeof *cand);
        uint64_t r = next_random(&state);
        if (r & 1) {
            int blamed = 0, k = -1;
            for (int j = 0; j < nb; j++) {
                const rm_plan_buffer *b = &p->buffers[cand[j]];
                if (b->size && b->offset + b->size == span && next_random(&state) % (uint64_t)++blamed == 0) k = j;
            }
            if (k <= 0) continue;
            int to = (int)(next_random(&state) % (uint64_t)k), moved = cand[k];
            memmove(cand + to + 1, cand + to, (size_t)(k - to) * sizeof *cand);
            cand[to] = moved;
        } else {
            int a = (int)(next_random(&state) % (uint64_t)nb), b = (int)(next_random(&state) % (uint64_t)nb);
            int x = cand[a];
            cand[a] = cand[b];
            cand[b] = x;
        }
        size_t s = place(offset, placed, p, cand);
        if (s <= span) {
            span = s;
            memcpy(best, cand, (size_t)nb * sizeof *best);
            for (int i = 0; i < nb; i++) p->buffers[i].offset = offset[i];
        }
    }
    return span;
}

/* ---- lifetimes ----------------------------------------------------------- */

static int build_lifetimes(rm_plan *p, size_t *mem_after, const size_t *bytes, const rm_graph *g, const rm_op *ops,
                           int *live, rm_err *e)
{
    int n = p->nodes;
    for (int v = 0; v < n; v++) live[v] = -1;
    size_t mem = 0, mem_raw = 0;
    p->live_peak_op = -1;
    for (int o = 0; o < p->nops; o++) {
        const rm_op *op = &ops[o];
        int v = op->node;
        if (v < 0 || v >= n)
            return rm_errorf(e, RM_ERR_INVALID, "plan: operation %d refers to node %d of a %d-node graph", o, v, n);
        rm_plan_op *po = &p->ops[o];
        po->kind = op->kind;
        po->node = v;
        po->stage = op->stage;
        if (op->kind == RM_OP_COMPUTE) {
            if (live[v] >= 0)
                return rm_errorf(e, RM_ERR_INVALID, "plan: operation %d computes node %d, which is already live", o, v);
            if (g)
                for (int d = 0; d < g->nodes[v].ndeps; d++) {
                    int u = g->nodes[v].deps[d];
                    if (u < 0 || u >= n || live[u] < 0)
                        return rm_errorf(e, RM_ERR_INVALID,
                                         "plan: operation %d computes node %d (%s), whose input %d is not live", o, v,
                                         g->nodes[v].name, u);
                }
            rm_plan_buffer *b = &p->buffers[p->nbuffers];
            b->node = v;
            b->bytes = bytes[v];
            b->size = rm_align_up(bytes[v]);
            b->offset = 0;
            b->alloc_op = o;
            b->free_op = p->nops;
            live[v] = po->buffer = p->nbuffers++;
            mem += b->size;
            mem_raw += b->bytes;
            if (mem > p->live_peak || p->live_peak_op < 0) {
                p->live_peak = mem;
                p->live_peak_op = o;
            }
            if (mem_raw > p->bytes_peak) p->bytes_peak = mem_raw;
        } else if (op->kind == RM_OP_FREE) {
            if (live[v] < 0)
                return rm_errorf(e, RM_ERR_INVALID, "plan: operation %d frees node %d, which is not live", o, v);
            rm_plan_buffer *b = &p->buffers[live[v]];
            b->free_op = o;
            po->buffer = live[v];
            live[v] = -1;
            mem -= b->size;
            mem_raw -= b->bytes;
        } else {
            return rm_errorf(e, RM_ERR_INVALID, "plan: operation %d has an unknown kind %d", o, (int)op->kind);
        }
        mem_after[o] = mem;
    }
    return RM_OK;
}

static int plan_create(rm_plan **out, const size_t *bytes, int n, const rm_graph *g, const rm_op *ops, int nops,
                       rm_err *e)
{
    *out = NULL;
    if (n < 0 || nops < 0 || (nops > 0 && !ops))
        return rm_errorf(e, RM_ERR_INVALID, "plan: %d nodes and %d operations", n, nops);
    int ncomp = 0;
    for (int o = 0; o < nops; o++) ncomp += ops[o].kind == RM_OP_COMPUTE;
    rm_plan *p = calloc(1, sizeof *p);
    size_t nb1 = (size_t)(ncomp ? ncomp : 1), no1 = (size_t)(nops ? nops : 1);
    int *live = malloc((size_t)(n ? n : 1) * sizeof *live);
    size_t *mem_after = malloc(no1 * sizeof *mem_after);
    size_t *offset = malloc(nb1 * sizeof *offset);
    int *order = malloc(nb1 * sizeof *order), *placed = malloc(nb1 * sizeof *placed);
    int *best = malloc(nb1 * sizeof *best);
    sort_key *keys = malloc(nb1 * sizeof *keys);
    int rc = RM_OK;
    if (!p || !live || !mem_after || !offset || !order || !placed || !best || !keys ||
        !(p->ops = calloc(no1, sizeof *p->ops)) || !(p->buffers = calloc(nb1, sizeof *p->buffers))) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "plan: out of memory for %d operations", nops);
        goto done;
    }
    p->nodes = n;
    p->nops = nops;
    if ((rc = build_lifetimes(p, mem_after, bytes, g, ops, live, e))) goto done;

    p->span = SIZE_MAX;
    for (int k = 0; k < RM_PLAN_ORDER_COUNT && p->span > p->live_peak; k++) {
        make_order(order, keys, p, mem_after, (rm_plan_order)k);
        size_t span = place(offset, placed, p, order);
        if (span < p->span) {
            p->span = span;
            p->order = (rm_plan_order)k;
            memcpy(best, order, (size_t)p->nbuffers * sizeof *best);
            for (int i = 0; i < p->nbuffers; i++) p->buffers[i].offset = offset[i];
        }
    }
    if (p->nbuffers == 0) p->span = 0;
    p->greedy_span = p->span;
    p->span = search(p, best, order, offset, placed, p->span);
    for (int o = 0; o < nops; o++) p->ops[o].offset = p->buffers[p->ops[o].buffer].offset;
done:
    free(live);
    free(mem_after);
    free(offset);
    free(order);
    free(placed);
    free(best);
    free(keys);
    if (rc)
        rm_plan_free(p);
    else
        *out = p;
    return rc;
}

/* What REMAT_LOG=info shows of every plan: its span against its live peak. */
static void log_plan(const rm_plan *p)
{
    RM_LOG_INFO("plan: %d operations, %d buffers; span %zu bytes, live peak %zu (fragmentation %.2f%%), greedy "
                "order %s (span %zu before the local search)",
                p->nops, p->nbuffers, p->span, p->live_peak, 100.0 * rm_plan_fragmentation(p),
                rm_plan_order_name(p->order), p->greedy_span);
}

int rm_plan_create(rm_plan **out, const size_t *bytes, int n, const rm_op *ops, int nops, rm_err *e)
{
    if (n > 0 && !bytes) return rm_errorf(e, RM_ERR_INVALID, "plan: no node sizes given");
    int rc = plan_create(out, bytes, n, NULL, ops, nops, e);
    if (!rc) log_plan(*out);
    return rc;
}

int rm_plan_from_graph(rm_plan **out, const rm_graph *g, const rm_op *ops, int nops, rm_err *e)
{
    *out = NULL;
    int rc = rm_graph_validate(g, e);
    if (rc) return rc;
    size_t *bytes = malloc((size_t)(g->n ? g->n : 1) * sizeof *bytes);
    if (!bytes) return rm_errorf(e, RM_ERR_NOMEM, "plan: out of memory");
    for (int i = 0; i < g->n; i++) bytes[i] = g->nodes[i].bytes;
    rc = plan_create(out, bytes, g->n, g, ops, nops, e);
    free(bytes);
    if (!rc) log_plan(*out);
    return rc;
}

int rm_plan_check(const rm_plan *p, rm_err *e)
{
    for (int i = 0; i < p->nbuffers; i++) {
        const rm_plan_buffer *a = &p->buffers[i];
        if (a->offset % RM_ARENA_ALIGN || a->size % RM_ARENA_ALIGN || a->size < a->bytes)
            return rm_errorf(e, RM_ERR_INVALID, "plan: buffer %d (node %d) at offset %zu, size %zu is not aligned", i,
                             a->node, a->offset, a->size);
        if (a->size && (a->offset > p->span || a->size > p->span - a->offset))
            return rm_errorf(e, RM_ERR_INVALID, "plan: buffer %d (node %d) at %zu + %zu exceeds the span %zu", i,
                             a->node, a->offset, a->size, p->span);
        for (int j = i + 1; j < p->nbuffers; j++) {
            const rm_plan_buffer *b = &p->buffers[j];
            if (a->size && b->size && rm_plan_buffers_coexist(a, b) && a->offset < b->offset + b->size &&
                b->offset < a->offset + a->size)
                return rm_errorf(e, RM_ERR_INVALID,
                                 "plan: buffers %d (node %d, [%zu, %zu)) and %d (node %d, [%zu, %zu)) are live at "
                                 "the same time and overlap",
                                 i, a->node, a->offset, a->offset + a->size, j, b->node, b->offset,
                                 b->offset + b->size);
        }
    }
    return RM_OK;
}
