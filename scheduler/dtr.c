/* "dtr": Kirisame et al.'s Dynamic Tensor Rematerialization (ICLR 2021),
 * run ahead of time. The nodes are computed in a given order under the
 * activation budget; when an output does not fit, the resident value with
 * the lowest h = c / (bytes x staleness^s) is evicted, c being what
 * recomputing it would cost now (it and its inputs not resident,
 * transitively: DTR's evicted neighbourhood), and a value read after its
 * eviction is recomputed, with whatever of its inputs are gone, in the
 * stage that reads it. Three passes, s = 1 (DTR's h), 1/2 and 0; the
 * cheapest schedule wins. It needs no backward pass: the one heuristic for
 * forward-only DAGs, and the anneal's start where nothing else fits
 * (anneal.c).
 *
 * A stage first collects what its node needs that is not resident (the
 * closure down to resident values), then computes it in the order's
 * positions (the simulator's order within a stage), the node last. A value
 * the stage reads is locked until its last use there, so an eviction never
 * takes one the stage still needs (a stage computes a value at most once).
 * A value is freed after its last use in a stage once no later node's
 * first compute reads it and no evicted value that will be recomputed from
 * it does: an evicted value pins its inputs until it is recomputed.
 * Without the pins, a forward-only graph's inputs are freed behind an
 * eviction and its recomputation reaches back to the sources (Moccasin's
 * 1000-node graph at 80%: a stage of 819 recomputations, over the budget).
 *
 * The schedule written keeps each copy from its compute to its last reader
 * (Checkmate's S), which frees everything DTR frees, no later: so the
 * simulator's peak is at most DTR's, and the schedule fits whenever DTR's
 * replay does. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "deadline.h"
#include "order.h"
#include "rng.h"
#include "sort_ints.h"
#include "strategy.h"

/* The most candidates an eviction scores: a random sample of the resident
 * values beyond it (DTR's own remedy for large pools). */
#define DTR_SAMPLE 128
/* The most nodes an eviction's cost estimate counts. */
#define DTR_REACH 64
/* A pass gives up once its computes cost this many times the nodes it has
 * reached (see run). */
#define DTR_THRASH 4.0

typedef struct dtr {
    const rm_problem *p;
    int n;
    const int *order;
    int *pos;
    int *left;     /* readers whose first compute is still to come */
    int *pins;     /* evicted readers that will be recomputed from it */
    char *pinning; /* evicted while still needed: it pins its inputs */
    int *stamp;    /* t + 1: read or computed in stage t, so locked there */
    int *lastj;    /* a value's last use among the stage's computes */
    int *start;    /* the stage that computed its current copy */
    int *lastread; /* the last stage that read that copy */
    long *touch;   /* the clock of its last use (staleness) */
    int *slot;     /* its index in res, or -1 when not resident */
    int *res, nres;
    int *x, *stack;
    int *seen, *stack2, sgen; /* score()'s walk */
    long long mem, budget;
    double stale; /* staleness's exponent in h (DTR's own: 1) */
    long clock;
    rm_rng rng;
    rm_schedule_builder b;
} dtr;

static void hold(dtr *d, int v, int t)
{
    if (d->pinning[v]) { /* recomputed: what it pinned may go */
        d->pinning[v] = 0;
        for (int k = 0; k < d->p->nodes[v].ndeps; k++) d->pins[d->p->nodes[v].deps[k]]--;
    }
    d->slot[v] = d->nres;
    d->res[d->nres++] = v;
    d->mem += (long long)d->p->nodes[v].bytes;
    d->start[v] = d->lastread[v] = t;
}

/* Frees v's copy: it was kept from its compute to its last reader. */
static void release(dtr *d, int v)
{
    int i = d->slot[v], last = d->res[--d->nres];
    d->res[i] = last, d->slot[last] = i;
    d->slot[v] = -1;
    d->mem -= (long long)d->p->nodes[v].bytes;
    if (d->lastread[v] > d->start[v]) rm_builder_retain(&d->b, d->pos[v], d->start[v] + 1, d->lastread[v]);
}

/* h of resident v: lower goes first. Its cost counts what recomputing it
 * would take now: v and every input not resident, transitively (DTR's
 * evicted neighbourhood), up to DTR_REACH of them. */
static double score(dtr *d, int v)
{
    int gen = ++d->sgen, ns = 0;
    double c = 0;
    d->seen[v] = gen;
    d->stack2[ns++] = v;
    for (int k = 0; ns > 0 && k < DTR_REACH; k++) {
        const rm_problem_node *nd = &d->p->nodes[d->stack2[--ns]];
        c += nd->cost;
        for (int i = 0; i < nd->ndeps; i++) {
            int u = nd->deps[i];
            if (d->slot[u] >= 0 || d->seen[u] == gen) continue;
            d->seen[u] = gen;
            d->stack2[ns++] = u;
        }
    }
    const rm_problem_node *vd = &d->p->nodes[v];
    double stale = (double)(d->clock - d->touch[v] + 1);
    return c / ((double)vd->bytes * (d->stale == 1 ? stale : d->stale == 0 ? 1 : pow(stale, d->stale)));
}

/* Evicts the resident value with the lowest h that stage t does not lock
 * before its compute j (a value the stage still reads); 0 when there is
 * none. */
static int evict(dtr *d, int t, int j)
{
    int best = -1, k = d->nres < DTR_SAMPLE ? d->nres : DTR_SAMPLE;
    double hb = 0;
    for (int i = 0; i < k; i++) {
        int v = d->res[d->nres <= DTR_SAMPLE ? i : (int)(rm_rng_next(&d->rng) % (uint64_t)d->nres)];
        if ((d->stamp[v] == t + 1 && d->lastj[v] >= j) || d->p->nodes[v].bytes == 0) continue;
        double h = score(d, v);
        if (best < 0 || h < hb) best = v, hb = h;
    }
    if (best < 0) return 0;
    release(d, best);
    d->pinning[best] = 1; /* still needed: its inputs stay until it is recomputed */
    for (int q = 0; q < d->p->nodes[best].ndeps; q++) d->pins[d->p->nodes[best].deps[q]]++;
    return 1;
}

/* Marks v as read in stage t; one not resident joins the stage's computes
 * (as a position) and its inputs are visited in turn. */
static void visit(dtr *d, int v, int t, int *nx, int *ns)
{
    if (d->stamp[v] == t + 1) return;
    d->stamp[v] = t + 1;
    if (d->slot[v] >= 0) return;
    d->x[(*nx)++] = d->pos[v];
    d->stack[(*ns)++] = v;
}

/* Stage t: its node's missing inputs, then its node. RM_ERR_INFEASIBLE when
 * the stage's locked values and an output do not fit. */
static int stage(dtr *d, int t, double *cost, long *computes, rm_err *e)
{
    const rm_problem *p = d->p;
    int w = d->order[t], nx = 0, ns = 0;
    const rm_problem_node *wd = &p->nodes[w];
    for (int k = 0; k < wd->ndeps; k++) visit(d, wd->deps[k], t, &nx, &ns);
    while (ns > 0) {
        const rm_problem_node *nd = &p->nodes[d->stack[--ns]];
        for (int k = 0; k < nd->ndeps; k++) visit(d, nd->deps[k], t, &nx, &ns);
    }
    rm_sort_ints(d->x, nx);
    d->stamp[w] = t + 1;
    d->x[nx++] = t;
    for (int j = 0; j < nx; j++) {
        const rm_problem_node *nd = &p->nodes[d->order[d->x[j]]];
        for (int k = 0; k < nd->ndeps; k++) d->lastj[nd->deps[k]] = j;
    }
    for (int k = 0; k < wd->ndeps; k++) d->left[wd->deps[k]]--;
    for (int j = 0; j < nx; j++) {
        int c = d->order[d->x[j]];
        const rm_problem_node *nd = &p->nodes[c];
        while (d->mem + (long long)nd->bytes > d->budget)
            if (!evict(d, t, j))
                return rm_errorf(e, RM_ERR_INFEASIBLE,
                                 "dtr: node %d (%s) does not fit at position %d: what its stage must hold and its "
                                 "output come to %lld bytes, over the activation budget %lld, with nothing left to "
                                 "evict (not a proof that no schedule fits)",
                                 c, nd->name, t, d->mem + (long long)nd->bytes, d->budget);
        hold(d, c, t);
        d->touch[c] = d->clock++;
        rm_builder_compute(&d->b, t, d->x[j]);
        *cost += nd->cost;
        ++*computes;
        for (int k = 0; k < nd->ndeps; k++) {
            int u = nd->deps[k];
            d->lastread[u] = t;
            d->touch[u] = d->clock;
            if (d->lastj[u] == j && d->left[u] == 0 && d->pins[u] == 0) release(d, u);
        }
        if (c == w && d->left[w] == 0) release(d, w); /* nothing reads it */
    }
    return RM_OK;
}

/* One DTR pass with staleness's exponent stale: its schedule (positions in
 * d->order) and cost. */
static int run(dtr *d, double stale, rm_schedule **out, double *cost, const int *rd_start, double deadline, rm_err *e)
{
    const rm_problem *p = d->p;
    int n = d->n, rc;
    d->stale = stale;
    d->nres = 0, d->mem = 0, d->clock = 0;
    d->rng = rm_rng_make(1);
    for (int v = 0; v < n; v++) {
        d->left[v] = rd_start[v + 1] - rd_start[v];
        d->slot[v] = -1, d->pins[v] = 0, d->pinning[v] = 0, d->stamp[v] = 0;
    }
    if ((rc = rm_builder_init(&d->b, n, e))) return rc;
    long computes = 0;
    double done_cost = 0;
    *cost = 0;
    for (int t = 0; t < n && !rc; t++) {
        if ((t & 63) == 0 && rm_deadline_passed(deadline)) {
            rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                           "dtr: stopped at the time limit at position %d of %d, with no schedule (not a proof "
                           "that none fits)",
                           t, n);
            break;
        }
        rc = stage(d, t, cost, &computes, e);
        if (!rc && p->max_cost > 0 && *cost > p->max_cost)
            rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                           "dtr: its recomputations cost more than the problem's cost limit (not a proof that no "
                           "schedule fits)");
        /* Thrashing: evictions whose recomputations need what was evicted
         * before, on and on (forward-only DAGs with long skips under tight
         * budgets). Once its computes cost DTR_THRASH times the nodes it has
         * reached, any other answer is better, and on 100,000 nodes it would
         * take minutes to finish. */
        done_cost += p->nodes[d->order[t]].cost;
        if (!rc && *cost > DTR_THRASH * done_cost && *cost > 0)
            rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                           "dtr: thrashing at position %d of %d: its computes cost %g times those of the nodes "
                           "before it (not a proof that no schedule fits)",
                           t, n, DTR_THRASH);
        if (!rc && computes > (long)RM_SCHEDULE_MAX_COMPUTES)
            rc = rm_errorf(e, RM_ERR_INFEASIBLE, "dtr: more than %zu computes (not a proof that no schedule fits)",
                           RM_SCHEDULE_MAX_COMPUTES);
    }
    while (!rc && d->nres > 0) release(d, d->res[d->nres - 1]);
    if (rc) {
        rm_builder_free(&d->b);
        return rc;
    }
    return rm_builder_finish(out, &d->b, e);
}

int rm_dtr_in_order(rm_schedule **out, const rm_problem *p, const int *order, const int *rd_start, double deadline,
                    rm_err *e)
{
    *out = NULL;
    int n = p->n, rc = rm_problem_check_budget(p, "dtr", e); /* p is valid: its readers were counted */
    if (rc) return rc;
    size_t budget = rm_problem_activation_budget(p);
    dtr d;
    memset(&d, 0, sizeof d);
    d.p = p, d.n = n, d.order = order;
    d.budget = budget > (size_t)LLONG_MAX ? LLONG_MAX : (long long)budget;
    size_t nn = (size_t)n;
    int *ident = order ? NULL : malloc(nn * sizeof *ident);
    d.pos = malloc(nn * sizeof *d.pos);
    d.left = malloc(nn * sizeof *d.left);
    d.pins = malloc(nn * sizeof *d.pins);
    d.pinning = malloc(nn);
    d.stamp = malloc(nn * sizeof *d.stamp);
    d.lastj = malloc(nn * sizeof *d.lastj);
    d.start = malloc(nn * sizeof *d.start);
    d.lastread = malloc(nn * sizeof *d.lastread);
    d.touch = malloc(nn * sizeof *d.touch);
    d.slot = malloc(nn * sizeof *d.slot);
    d.res = malloc(nn * sizeof *d.res);
    d.x = malloc(nn * sizeof *d.x);
    d.stack = malloc(nn * sizeof *d.stack);
    d.seen = calloc(nn, sizeof *d.seen);
    d.stack2 = malloc(nn * sizeof *d.stack2);
    if ((!order && !ident) || !d.pos || !d.left || !d.pins || !d.pinning || !d.stamp || !d.lastj || !d.start ||
        !d.lastread || !d.touch || !d.slot || !d.res || !d.x || !d.stack || !d.seen || !d.stack2) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "dtr: out of memory for %d nodes", n);
        goto done;
    }
    if (!order) {
        for (int t = 0; t < n; t++) ident[t] = t;
        d.order = ident;
    }
    rm_order_positions(d.pos, d.order, n);
    /* DTR's h, and h without staleness (the cost of a byte freed), and
     * between: the cheapest wins. Each is milliseconds on a model, and
     * none wins everywhere: on Moccasin's 1000-node graph at 90% they cost
     * +64%, +32% and +1.4%; on ResNet-50 at 70% +0.79%, +0.43% and +0.51%. */
    static const double stales[] = {1, 0.5, 0};
    double best_cost = 0;
    rm_err first = {RM_OK, ""};
    for (size_t i = 0; i < sizeof stales / sizeof stales[0]; i++) {
        rm_schedule *s = NULL;
        double cost;
        rm_err ei = {RM_OK, ""};
        int ri = run(&d, stales[i], &s, &cost, rd_start, deadline, &ei);
        if (ri == RM_ERR_NOMEM) {
            rc = rm_errorf(e, RM_ERR_NOMEM, "%s", ei.msg);
            break;
        }
        if (ri != RM_OK) {
            if (first.code == RM_OK) first = ei;
            if (rm_deadline_passed(deadline)) break;
            continue;
        }
        if (!*out || cost < best_cost) {
            rm_schedule_free(*out);
            *out = s, best_cost = cost;
        } else {
            rm_schedule_free(s);
        }
    }
    if (!rc && !*out) rc = rm_errorf(e, first.code, "%s", first.msg);
    if (!rc && order) {
        int own = 1;
        for (int t = 0; t < n && own; t++) own = order[t] == t;
        if (!own) rc = rm_schedule_set_order(*out, order, e);
    }
    if (rc) {
        rm_schedule_free(*out);
        *out = NULL;
    }
done:
    free(ident);
    free(d.pos);
    free(d.left);
    free(d.pins);
    free(d.pinning);
    free(d.stamp);
    free(d.lastj);
    free(d.start);
    free(d.lastread);
    free(d.touch);
    free(d.slot);
    free(d.res);
    free(d.x);
    free(d.stack);
    free(d.seen);
    free(d.stack2);
    return rc;
}

int rm_dtr_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e)
{
    int *rd_start = NULL, *rd = NULL;
    if (stopped) *stopped = 0;
    int rc = rm_problem_validate(p, e);
    if (rc) return rc;
    if (rm_order_readers(p, &rd_start, &rd)) return rm_errorf(e, RM_ERR_NOMEM, "dtr: out of memory");
    rc = rm_dtr_in_order(out, p, NULL, rd_start, deadline, e);
    if (rc == RM_ERR_INFEASIBLE && stopped) *stopped = rm_deadline_passed(deadline);
    free(rd_start);
    free(rd);
    return rc;
}

int rm_strategy_dtr(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_dtr_until(out, NULL, p, 0, e);
}
