/* The max-batch search (see maxbatch.h): a galloping-then-binary search
 * on a feasibility predicate, the predicate "this strategy's schedule fits
 * the budget and the overhead cap at this batch", and the trivial-bound
 * ceiling that caps every strategy's search. Probes ask for the first
 * schedule that fits, not the cheapest: whether one exists is the question,
 * and for the MILP the difference is minutes. */
#include "maxbatch.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "deadline.h"

/* One round of galloping from *lo (known to fit): *lo + 1, + 2, + 4, ... up
 * to *hi - 1, until a batch does not fit (it becomes *hi) or *hi - 1 fits.
 * *count counts the probes. */
static int gallop_round(int *lo, int *hi, int *count, rm_maxbatch_feasible_fn feasible, void *ctx, rm_err *e)
{
    const int base = *lo;
    for (int step = 1;; step = step > INT_MAX / 2 ? INT_MAX : 2 * step) {
        int b = step > *hi - 1 - base ? *hi - 1 : base + step, ok = 0, rc;
        (*count)++;
        if ((rc = feasible(&ok, ctx, b, e))) return rc;
        if (!ok) {
            *hi = b;
            return RM_OK;
        }
        *lo = b;
        if (b == *hi - 1) return RM_OK;
    }
}

/* The two searches: one round, then bisection (restart = 0), or rounds
 * until the range closes (restart = 1). */
static int search(int *best, int *probes, rm_maxbatch_feasible_fn feasible, void *ctx, int lo, int hi, int restart,
                  rm_err *e)
{
    int count = 0, rc = RM_OK;
    *best = lo;
    if (lo < 0 || hi <= lo) return rm_errorf(e, RM_ERR_INVALID, "maxbatch: the range (%d, %d) is empty", lo, hi);
    /* Invariant: lo fits (0 trivially), hi does not (or is past the cap). */
    if (hi - lo > 1) rc = gallop_round(&lo, &hi, &count, feasible, ctx, e);
    while (rc == RM_OK && hi - lo > 1) {
        if (restart) {
            rc = gallop_round(&lo, &hi, &count, feasible, ctx, e);
            continue;
        }
        int mid = lo + (hi - lo) / 2, ok = 0;
        count++;
        if ((rc = feasible(&ok, ctx, mid, e))) break;
        if (ok)
            lo = mid;
        else
            hi = mid;
    }
    if (rc == RM_OK) *best = lo;
    if (probes) *probes = count;
    return rc;
}

int rm_maxbatch_bisect(int *best, int *probes, rm_maxbatch_feasible_fn feasible, void *ctx, int lo, int hi, rm_err *e)
{
    return search(best, probes, feasible, ctx, lo, hi, 0, e);
}

int rm_maxbatch_gallop(int *best, int *probes, rm_maxbatch_feasible_fn feasible, void *ctx, int lo, int hi, rm_err *e)
{
    return search(best, probes, feasible, ctx, lo, hi, 1, e);
}

typedef struct bound_ctx {
    rm_maxbatch_problem_fn build;
    void *ctx;
    size_t budget;
    int built;     /* the largest batch whose problem was built */
    int too_large; /* the smallest batch whose problem could not be (0: none) */
    char *why;     /* its error, when the caller asked */
    size_t len;
} bound_ctx;

static int bound_fits(int *feasible, void *vctx, int batch, rm_err *e)
{
    bound_ctx *c = vctx;
    rm_problem *p = NULL;
    rm_err be = {RM_OK, ""};
    int rc = c->build(&p, c->ctx, batch, &be);
    /* Only sizes grow with the batch: a problem that was built at a smaller
     * batch but cannot be at this one (tensors too large to address, more
     * than 2^62 bytes in all) is too large for any budget. That batch does
     * not fit; it is no reason to end the search. */
    if (rc && rc != RM_ERR_NOMEM && c->built > 0 && batch > c->built) {
        if (!c->too_large || batch < c->too_large) {
            c->too_large = batch;
            if (c->why) snprintf(c->why, c->len, "%s", be.msg);
        }
        *feasible = 0;
        return RM_OK;
    }
    if (rc) {
        if (e) *e = be;
        return rc;
    }
    if (batch > c->built) c->built = batch;
    size_t lb = rm_problem_peak_lower_bound(p);
    *feasible = p->fixed_bytes <= c->budget && lb <= c->budget - p->fixed_bytes;
    rm_problem_free(p);
    return RM_OK;
}

int rm_maxbatch_bound_why(int *out, char *why, size_t len, rm_maxbatch_problem_fn build, void *ctx, size_t budget,
                          int cap, rm_err *e)
{
    bound_ctx c = {build, ctx, budget, 0, 0, why, len};
    if (why && len) why[0] = '\0';
    int rc = rm_maxbatch_bisect(out, NULL, bound_fits, &c, 0, cap + 1, e);
    /* A failure above the answer only: below it every batch was built. */
    if (why && len && (rc || c.too_large != *out + 1)) why[0] = '\0';
    return rc;
}

int rm_maxbatch_bound(int *out, rm_maxbatch_problem_fn build, void *ctx, size_t budget, int cap, rm_err *e)
{
    return rm_maxbatch_bound_why(out, NULL, 0, build, ctx, budget, cap, e);
}

typedef struct probe_ctx {
    const rm_strategy_info *st;
    rm_maxbatch_problem_fn build;
    void *ctx;
    const rm_maxbatch_options *o;
    rm_maxbatch_result *res;
} probe_ctx;

double rm_overhead_cap_cost(const rm_overhead_cap *c, const rm_problem *p)
{
    double all = rm_problem_base_cost(p), fwd = 0;
    for (int i = 0; i < p->n; i++)
        if (p->nodes[i].tag == RM_TAG_FORWARD) fwd += p->nodes[i].cost;
    switch (c->kind) {
    case RM_CAP_FORWARDS:
        return all + c->value * fwd;
    case RM_CAP_FRACTION:
        return all * (1 + c->value);
    default:
        return 0;
    }
}

static int strategy_fits(int *feasible, void *vctx, int batch, rm_err *e)
{
    probe_ctx *c = vctx;
    const rm_maxbatch_options *o = c->o;
    rm_problem *p = NULL;
    int rc = c->build(&p, c->ctx, batch, e);
    if (rc) return rc;
    p->budget = o->budget;
    p->max_cost = rm_overhead_cap_cost(&o->cap, p);
    if (o->progress) o->progress(o->progress_ctx, c->st->name, batch, -1, 0);
    rm_schedule *s = NULL;
    rm_strategy_stats stats;
    rm_err se = {RM_OK, ""};
    rm_strategy_options so = o->solver;
    so.first_fit = 1; /* a probe asks whether anything fits */
    if (batch == o->start_batch && o->start_schedule) so.incumbent = o->start_schedule;
    rc = rm_strategy_run(&s, &stats, c->st, p, &so, &se);
    c->res->probes++;
    if (rc == RM_OK) {
        *feasible = 1;
        /* lo only grows, so the latest fit is the answer's. */
        c->res->cost = stats.sim.cost;
        c->res->base_cost = rm_problem_base_cost(p);
        c->res->peak_bytes = stats.sim.peak_bytes;
        c->res->fixed_bytes = p->fixed_bytes;
        c->res->stats = stats;
        rm_schedule_free(c->res->schedule);
        c->res->schedule = s, s = NULL;
    } else if (rc == RM_ERR_INFEASIBLE) {
        *feasible = 0;
        if (stats.status == RM_STATUS_NO_SOLUTION) c->res->unproved = 1;
        rc = RM_OK;
    } else if (e) {
        *e = se;
        rm_err_context(e, "%s at batch %d", c->st->name, batch);
    }
    if (o->progress && rc == RM_OK) o->progress(o->progress_ctx, c->st->name, batch, *feasible, stats.seconds);
    rm_schedule_free(s);
    rm_problem_free(p);
    return rc;
}

int rm_maxbatch_search(rm_maxbatch_result *out, const rm_strategy_info *st, rm_maxbatch_problem_fn build, void *ctx,
                       const rm_maxbatch_options *o, rm_err *e)
{
    double t0 = rm_now();
    memset(out, 0, sizeof *out);
    if (!o || o->budget == 0) return rm_errorf(e, RM_ERR_INVALID, "maxbatch: a budget is required");
    int cap = o->max_batch > 0 ? o->max_batch : 1 << 20;
    int rc;
    out->bound_batch = o->bound_batch;
    if (out->bound_batch <= 0 && (rc = rm_maxbatch_bound(&out->bound_batch, build, ctx, o->budget, cap, e))) return rc;
    if (out->bound_batch > cap) out->bound_batch = cap;
    /* No strategy goes below the trivial bound, so batches above it are
     * known not to fit and never solved: for the MILP those would be the
     * slowest probes of all. */
    probe_ctx c = {st, build, ctx, o, out};
    int lo = 0, hi = out->bound_batch + 1, fits;
    if (o->fail_batch > o->start_batch && o->fail_batch < hi) hi = o->fail_batch;
    if (o->start_batch > 0 && o->start_batch < hi - 1 && o->start_batch >= 0.9 * (hi - 1)) {
        /* Near the top of the range, the top first: where it fits, nothing
         * larger can (the trivial bound), and one probe ends the search;
         * VGG's frontier is often the bound itself. */
        if ((rc = strategy_fits(&fits, &c, hi - 1, e))) goto fail;
        if (fits)
            lo = out->max_batch = hi - 1;
        else
            hi = hi - 1;
    }
    if (o->start_batch > 0 && o->start_batch < hi && lo == 0) {
        /* Known to fit (another strategy's answer): verified, then the
         * search gallops up from it, so a solver is run only near the
         * frontier. */
        if ((rc = strategy_fits(&fits, &c, o->start_batch, e))) goto fail;
        if (fits)
            lo = out->max_batch = o->start_batch;
        else
            hi = o->start_batch;
    }
    /* A solver's "no" is dear (its time limit, where nothing is proved),
     * its "yes" cheap: it gallops, a heuristic bisects. */
    if (hi - lo > 1 && (rc = (st->solve_opt ? rm_maxbatch_gallop : rm_maxbatch_bisect)(&out->max_batch, NULL,
                                                                                       strategy_fits, &c, lo, hi, e)))
        goto fail;
    /* Below the bound the search ends on a batch that did not fit (or was
     * given as one). */
    out->fail_batch = out->max_batch < out->bound_batch ? out->max_batch + 1 : 0;
    out->capped = out->max_batch == cap;
    out->search_s = rm_now() - t0;
    return RM_OK;
fail:
    rm_schedule_free(out->schedule);
    out->schedule = NULL;
    return rc;
}
