/* Shared machinery of the baseline strategies; see baseline.h for what the
 * construction does. It is written once so that every baseline (Chen, AP,
 * linearized, Griewank, OGC) differs only in which values it retains, and so
 * that the cost of a checkpoint set is the same whoever chose it. */
#include "baseline.h"

#include "deadline.h"
#include "log.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- problem analysis ----------------------------------------------------- */

void rm_fwd_info_free(rm_fwd_info *fi)
{
    if (!fi) return;
    free(fi->lastuse);
    free(fi->lastfwd);
    free(fi->pos);
    free(fi->cut);
    free(fi->cuts);
    memset(fi, 0, sizeof *fi);
}

int rm_fwd_info_init(rm_fwd_info *fi, const rm_problem *p, rm_err *e)
{
    memset(fi, 0, sizeof *fi);
    int n = p->n;
    if (n < 1) return rm_errorf(e, RM_ERR_INVALID, "baseline: empty problem");
    fi->n = n;
    fi->b0 = n;
    for (int i = 0; i < n; i++)
        if (p->nodes[i].tag == RM_TAG_BACKWARD) {
            fi->b0 = i;
            break;
        }
    int b0 = fi->b0;
    fi->lastuse = malloc((size_t)n * sizeof(int));
    fi->lastfwd = malloc((size_t)n * sizeof(int));
    fi->pos = malloc((size_t)n * sizeof(int));
    fi->cut = calloc((size_t)n, 1);
    fi->cuts = malloc((size_t)n * sizeof(int));
    int *cover = calloc((size_t)n + 1, sizeof(int));
    if (!fi->lastuse || !fi->lastfwd || !fi->pos || !fi->cut || !fi->cuts || !cover) {
        free(cover);
        rm_fwd_info_free(fi);
        return rm_errorf(e, RM_ERR_NOMEM, "baseline: out of memory");
    }
    for (int v = 0; v < n; v++) fi->lastuse[v] = fi->lastfwd[v] = v;
    for (int k = 0; k < n; k++)
        for (int d = 0; d < p->nodes[k].ndeps; d++) {
            int u = p->nodes[k].deps[d];
            fi->lastuse[u] = k; /* k ascending: ends at the last reader */
            if (k < b0) {
                fi->lastfwd[u] = k;
                if (k - u >= 2) {
                    cover[u + 1]++;
                    cover[k]--;
                }
            }
        }
    int run = 0;
    for (int v = 0; v < b0; v++) {
        run += cover[v];
        fi->cut[v] = run == 0;
        if (fi->cut[v]) fi->cuts[fi->ncuts++] = v;
    }
    free(cover);
    /* pos: suffix maximum of the forward values read by backward-phase nodes. */
    int best = -1;
    for (int t = n - 1; t >= 0; t--) {
        if (t >= b0)
            for (int d = 0; d < p->nodes[t].ndeps; d++) {
                int u = p->nodes[t].deps[d];
                if (u < b0 && u > best) best = u;
            }
        fi->pos[t] = t >= b0 ? best : -1;
    }
    return RM_OK;
}

/* ---- the construction ------------------------------------------------------ */

/* The construction walks the backward stages in order, so what it asks of
 * the schedule so far ("is v resident in stage t?") only needs, per value,
 * the end of its longest retention and its latest compute: every retention
 * added at stage t starts after t (or is the one-stage zero gap at t) and is
 * for a value already resident at t, and every earlier one starts by b0. */
typedef struct builder {
    const rm_problem *p;
    const rm_fwd_info *fi;
    rm_schedule_builder sb;
    double cost;  /* of the computes so far */
    int *until;   /* the last stage v is retained into so far (-1: none) */
    int *comp_at; /* the last stage that computes v */
    const uint8_t *pinned;
    const int *seg;
    int *last_need;
    uint8_t *open;
    int *head, *next; /* segment member lists, ascending */
    int *stack;
} builder;

static int is_resident(const builder *b, int v, int t)
{
    return (b->pinned && b->pinned[v]) || b->until[v] >= t || b->comp_at[v] == t;
}

static void note_use(builder *b, int v, int t)
{
    if (b->pinned && b->pinned[v] && b->last_need[v] < t) b->last_need[v] = t;
}

static void compute(builder *b, int v, int t)
{
    rm_builder_compute(&b->sb, t, v);
    b->comp_at[v] = t;
    b->cost += b->p->nodes[v].cost;
}

/* Keeps v over stages from+1 .. to (clamped to the last stage). */
static void retain(builder *b, int v, int from, int to)
{
    if (to > b->p->n - 1) to = b->p->n - 1;
    if (to <= from) return;
    rm_builder_retain(&b->sb, v, from + 1, to);
    if (to > b->until[v]) b->until[v] = to;
}

/* Resident in stage t-1 and read by that stage's own node: keeping it one
 * stage longer costs nothing at any compute of stage t-1. Asked only of a
 * value not resident at t, whose retention so far ends before t. */
static int zero_gap(const builder *b, int x, int t)
{
    if (t < 1 || !(b->until[x] == t - 1 || b->comp_at[x] == t - 1)) return 0;
    if (x == t - 1) return 1;
    const rm_problem_node *nd = &b->p->nodes[t - 1];
    for (int d = 0; d < nd->ndeps; d++)
        if (nd->deps[d] == x) return 1;
    return 0;
}

/* Makes v available in stage t, recomputing what is missing. */
static void need(builder *b, int v, int t)
{
    int sp = 0;
    b->stack[sp++] = v;
    while (sp) {
        int x = b->stack[--sp];
        if (is_resident(b, x, t)) {
            note_use(b, x, t);
            continue;
        }
        if (zero_gap(b, x, t)) {
            retain(b, x, t - 1, t);
            continue;
        }
        compute(b, x, t);
        const rm_problem_node *nd = &b->p->nodes[x];
        for (int d = 0; d < nd->ndeps; d++) {
            int u = nd->deps[d];
            if (is_resident(b, u, t))
                note_use(b, u, t);
            else
                b->stack[sp++] = u;
        }
    }
}

static void open_segment(builder *b, int k, int t)
{
    b->open[k] = 1;
    for (int v = b->head[k]; v >= 0; v = b->next[v]) {
        if (b->fi->lastuse[v] < t || (b->pinned && b->pinned[v])) continue;
        need(b, v, t);
        retain(b, v, t, b->fi->lastuse[v]);
    }
}

static void demand(builder *b, int j, int t)
{
    if (is_resident(b, j, t)) {
        note_use(b, j, t);
        return;
    }
    if (b->seg && b->seg[j] >= 0 && !b->open[b->seg[j]]) {
        open_segment(b, b->seg[j], t);
        if (is_resident(b, j, t)) return;
    }
    need(b, j, t);
}

int rm_build_schedule(rm_schedule **out, const rm_problem *p, const rm_fwd_info *fi, const uint8_t *pinned,
                      const int *seg, const rm_snapshot *snaps, int nsnaps, double max_cost, rm_err *e)
{
    *out = NULL;
    int n = p->n, b0 = fi->b0, rc;
    size_t edges = 0;
    for (int i = 0; i < n; i++) edges += (size_t)p->nodes[i].ndeps;
    builder b = {0};
    b.p = p;
    b.fi = fi;
    b.pinned = pinned;
    b.seg = seg;
    if ((rc = rm_builder_init(&b.sb, n, e))) return rc;
    int nseg = 0;
    if (seg)
        for (int v = 0; v < b0; v++)
            if (seg[v] + 1 > nseg) nseg = seg[v] + 1;
    b.until = malloc((size_t)n * sizeof(int));
    b.comp_at = malloc((size_t)n * sizeof(int));
    b.last_need = malloc((size_t)n * sizeof(int));
    b.open = calloc((size_t)nseg + 1, 1);
    b.head = malloc(((size_t)nseg + 1) * sizeof(int));
    b.next = malloc((size_t)n * sizeof(int));
    b.stack = malloc((edges + (size_t)n + 1) * sizeof(int));
    if (!b.until || !b.comp_at || !b.last_need || !b.open || !b.head || !b.next || !b.stack) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "baseline: out of memory");
        goto done;
    }
    for (int k = 0; k < nseg; k++) b.head[k] = -1;
    if (seg)
        for (int v = b0 - 1; v >= 0; v--)
            if (seg[v] >= 0) {
                b.next[v] = b.head[seg[v]];
                b.head[seg[v]] = v;
            }
    for (int t = 0; t < n; t++) {
        b.until[t] = -1;
        compute(&b, t, t);
        b.last_need[t] = fi->lastuse[t];
        if (t >= b0)
            retain(&b, t, t, fi->lastuse[t]);
        else if (!(pinned && pinned[t]))
            retain(&b, t, t, fi->lastfwd[t]);
    }
    int k = 0;
    for (; k < nsnaps && snaps[k].take < b0; k++) retain(&b, snaps[k].node, snaps[k].node, snaps[k].free);
    for (int t = b0; t < n; t++) {
        for (; k < nsnaps && snaps[k].take <= t; k++) {
            need(&b, snaps[k].node, t);
            retain(&b, snaps[k].node, t, snaps[k].free);
        }
        const rm_problem_node *nd = &p->nodes[t];
        for (int d = 0; d < nd->ndeps; d++)
            if (nd->deps[d] < b0) demand(&b, nd->deps[d], t);
        if (max_cost > 0 && b.cost > max_cost + 1e-12 * fmax(1.0, max_cost)) {
            rc = rm_errorf(e, RM_ERR_BUDGET, "baseline: the schedule costs more than %.17g by stage %d", max_cost, t);
            goto done;
        }
        if (fi->deadline > 0 && (t & 255) == 0 && rm_deadline_passed(fi->deadline)) {
            rc = rm_errorf(e, RM_ERR_BUDGET, "baseline: the deadline passed at stage %d of %d", t, n);
            goto done;
        }
        if (b.sb.failed) break; /* reported by rm_builder_finish */
    }
    if (pinned)
        for (int v = 0; v < b0; v++)
            if (pinned[v]) retain(&b, v, v, b.last_need[v]);
done:
    free(b.until);
    free(b.comp_at);
    free(b.last_need);
    free(b.open);
    free(b.head);
    free(b.next);
    free(b.stack);
    if (rc) {
        rm_builder_free(&b.sb);
        return rc;
    }
    return rm_builder_finish(out, &b.sb, e);
}

int rm_build_from_checkpoints(rm_schedule **out, const rm_problem *p, const rm_fwd_info *fi, const uint8_t *pinned,
                              double max_cost, rm_err *e)
{
    int *seg = malloc(((size_t)fi->b0 + 1) * sizeof(int));
    uint8_t *pins = calloc((size_t)p->n, 1); /* only forward values can be checkpoints */
    if (!seg || !pins) {
        free(seg);
        free(pins);
        return rm_errorf(e, RM_ERR_NOMEM, "baseline: out of memory");
    }
    int cur = 0, any = 0;
    for (int v = 0; v < fi->b0; v++) {
        pins[v] = pinned[v] != 0;
        if (pins[v]) {
            cur += any;
            any = 0;
            seg[v] = -1;
        } else {
            seg[v] = cur;
            any = 1;
        }
    }
    int rc = rm_build_schedule(out, p, fi, pins, seg, NULL, 0, max_cost, e);
    free(seg);
    free(pins);
    return rc;
}

/* ---- search bookkeeping ----------------------------------------------------- */

int rm_best_offer(rm_best *b, rm_schedule *s, const rm_problem *p, rm_err *e)
{
    rm_sim_result r;
    int rc = rm_simulate(&r, p, s, e);
    if (rc) {
        rm_schedule_free(s);
        return rc;
    }
    if (b->tried == 0 || r.peak_bytes < b->min_peak) b->min_peak = r.peak_bytes;
    b->tried++;
    int better = 0;
    if (rm_sim_fits(p, &r)) {
        if (!b->s)
            better = 1;
        else {
            double tol = 1e-12 * fmax(1.0, fabs(b->r.cost));
            better = r.cost < b->r.cost - tol || (fabs(r.cost - b->r.cost) <= tol && r.peak_bytes < b->r.peak_bytes);
        }
    }
    if (better) {
        rm_schedule_free(b->s);
        b->s = s;
        b->r = r;
    } else {
        rm_schedule_free(s);
    }
    return RM_OK;
}

int rm_best_stop(rm_best *b, double deadline)
{
    if (b->tried == 0 || !rm_deadline_passed(deadline)) return 0;
    b->stopped = 1;
    return 1;
}

int rm_best_finish(rm_schedule **out, int *stopped, rm_best *b, const rm_problem *p, const char *name, rm_err *e)
{
    *out = NULL;
    if (stopped) *stopped = b->stopped;
    if (!b->s && b->stopped)
        return rm_errorf(e, RM_ERR_INFEASIBLE,
                         "%s: the time limit stopped the search after %d candidate%s, none of which fits (lowest "
                         "peak %zu bytes, plus %zu fixed, over a budget of %zu): not proof that nothing fits",
                         name, b->tried, b->tried == 1 ? "" : "s", b->min_peak, p->fixed_bytes, p->budget);
    if (!b->s)
        return rm_errorf(e, RM_ERR_INFEASIBLE,
                         "%s: no schedule fits: its lowest peak is %zu bytes, plus %zu fixed, over a budget of %zu",
                         name, b->min_peak, p->fixed_bytes, p->budget);
    *out = b->s;
    b->s = NULL;
    return RM_OK;
}

int rm_baseline_precheck(const rm_problem *p, const char *name, rm_err *e)
{
    int rc = rm_problem_validate(p, e);
    if (rc) return rm_err_context(e, "%s", name);
    return rm_problem_check_budget(p, name, e);
}

int rm_baseline_finish(rm_schedule **out, rm_sim_result *res, rm_schedule *s, const rm_problem *p, const char *name,
                       rm_err *e)
{
    *out = NULL;
    rm_sim_result r;
    int rc = rm_simulate(&r, p, s, e);
    if (rc) {
        rm_err_context(e, "%s", name);
        rm_schedule_free(s);
        return rc;
    }
    if (!rm_sim_fits(p, &r)) {
        rm_schedule_free(s);
        return rm_errorf(e, RM_ERR_INFEASIBLE, "%s: peak %zu + fixed %zu bytes exceeds the budget of %zu bytes", name,
                         r.peak_bytes, p->fixed_bytes, p->budget);
    }
    if (res) *res = r;
    *out = s;
    return RM_OK;
}

/* ---- Chen et al.'s checkpoint selections ----------------------------------- */

/* With cut_state, a checkpoint at c keeps the whole cut state at c: c and
 * every earlier value a forward edge carries past c (u < c < lastfwd[u]).
 * One pass from the right with the nearest checkpoint after u, where pinning
 * each checkpoint's state by scanning every earlier value was quadratic
 * (92 s for linearized_greedy on a 100,000-node chain). */
static void add_cut_states(uint8_t *pinned, const rm_fwd_info *fi)
{
    int next = INT_MAX; /* the nearest checkpoint after u */
    for (int u = fi->b0 - 1; u >= 0; u--) {
        int checkpoint = pinned[u];
        if (next < fi->lastfwd[u]) pinned[u] = 1;
        if (checkpoint) next = u;
    }
}

void rm_chen_greedy_pins(uint8_t *pinned, const rm_problem *p, const rm_fwd_info *fi, const uint8_t *candidate,
                         int cut_state, double seg_bytes)
{
    memset(pinned, 0, (size_t)p->n);
    double temp = 0;
    for (int v = 0; v < fi->b0; v++) {
        temp += (double)p->nodes[v].bytes;
        if (candidate[v] && temp > seg_bytes) {
            pinned[v] = 1;
            temp = 0;
        }
    }
    if (cut_state) add_cut_states(pinned, fi);
}

void rm_chen_sqrtn_pins(uint8_t *pinned, const rm_problem *p, const rm_fwd_info *fi, const uint8_t *candidate,
                        int cut_state)
{
    memset(pinned, 0, (size_t)p->n);
    int count = 0;
    for (int v = 0; v < fi->b0; v++) count += candidate[v] != 0;
    int k = (int)floor(sqrt((double)count));
    if (k < 1) k = 1;
    int idx = 0;
    for (int v = 0; v < fi->b0; v++)
        if (candidate[v] && (++idx) % k == 0) pinned[v] = 1;
    if (cut_state) add_cut_states(pinned, fi);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int rm_chen_greedy_search(rm_schedule **out, int *stopped, const rm_problem *p, const uint8_t *candidate_or_null,
                          int use_cuts, int cut_state, const char *name, double deadline, rm_err *e)
{
    *out = NULL;
    if (stopped) *stopped = 0;
    int rc = rm_baseline_precheck(p, name, e);
    if (rc) return rc;
    rm_fwd_info fi;
    if ((rc = rm_fwd_info_init(&fi, p, e))) return rc;
    fi.deadline = deadline;
    int n = p->n;
    uint8_t *cand = malloc((size_t)n), *pins = malloc((size_t)n), *prev = calloc((size_t)n, 1);
    enum { LINEAR = 32, GEOMETRIC = 160 };
    double grid[1 + LINEAR + GEOMETRIC];
    rm_best best = {0};
    if (!cand || !pins || !prev) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", name);
        goto done;
    }
    for (int v = 0; v < n; v++)
        cand[v] = v < fi.b0 && (candidate_or_null ? candidate_or_null[v] : use_cuts ? fi.cut[v] : 1);
    /* Chen's segment budget: a sweep from "every candidate" (-1) to one
     * segment, linear for the large budgets, geometric (ratio 1.15, from half
     * the smallest node up) for the small ones where the checkpoint set
     * changes fastest. Identical checkpoint sets are simulated once. */
    double total = 0, smallest = 0;
    for (int v = 0; v < fi.b0; v++) {
        double bytes = (double)p->nodes[v].bytes;
        total += bytes;
        if (bytes > 0 && (smallest == 0 || bytes < smallest)) smallest = bytes;
    }
    int ng = 0;
    grid[ng++] = -1;
    for (int i = 1; i <= LINEAR; i++) grid[ng++] = total * i / LINEAR;
    for (double g = smallest / 2; g < total && ng < 1 + LINEAR + GEOMETRIC; g *= 1.15) grid[ng++] = g;
    qsort(grid, (size_t)ng, sizeof *grid, cmp_double);
    /* From the largest segment budget down: few checkpoints and long
     * segments first, which on graphs with skips are the cheap schedules
     * that fit, so that the recomputation-heavy middle of the sweep (25
     * million computes on a 100,000-node DAG) is given up early, as dearer
     * than the best so far. */
    for (int g = ng - 1; g >= 0 && !rm_best_stop(&best, deadline); g--) {
        rm_chen_greedy_pins(pins, p, &fi, cand, cut_state, grid[g]);
        if (g < ng - 1 && memcmp(pins, prev, (size_t)n) == 0) continue;
        memcpy(prev, pins, (size_t)n);
        rm_schedule *s;
        /* The first candidate is built to its end whatever the deadline
         * (docs/reliability.md: each search tries at least one; its
         * construction is the margin's unit of work in progress), so that a
         * tiny limit still answers, or says what the lowest peak was. */
        fi.deadline = best.tried ? deadline : 0;
        /* One dearer than the best so far is given up unbuilt. */
        rc = rm_build_from_checkpoints(&s, p, &fi, pins, best.s ? best.r.cost : 0, e);
        if (rc == RM_ERR_BUDGET && rm_deadline_passed(deadline)) { /* given up at the deadline */
            best.stopped = 1;
            break;
        }
        if (rc == RM_ERR_BUDGET) continue;
        if (rc) goto done;
        long nc = rm_schedule_ncomputes(s);
        if ((rc = rm_best_offer(&best, s, p, e))) {
            rm_err_context(e, "%s", name);
            goto done;
        }
        RM_LOG_DEBUG("%s: budget %d of %d, %ld computes, best cost %.6g", name, g, ng, nc, best.s ? best.r.cost : -1.0);
    }
    if (best.stopped) RM_LOG_INFO("%s: stopped at the deadline after %d of %d segment budgets", name, best.tried, ng);
    rc = rm_best_finish(out, stopped, &best, p, name, e);
done:
    rm_schedule_free(best.s);
    free(cand);
    free(pins);
    free(prev);
    rm_fwd_info_free(&fi);
    return rc;
}

int rm_chen_sqrtn_run(rm_schedule **out, int *stopped, const rm_problem *p, int use_cuts, int cut_state,
                      const char *name, double deadline, rm_err *e)
{
    *out = NULL;
    if (stopped) *stopped = 0;
    int rc = rm_baseline_precheck(p, name, e);
    if (rc) return rc;
    rm_fwd_info fi;
    if ((rc = rm_fwd_info_init(&fi, p, e))) return rc;
    fi.deadline = deadline;
    uint8_t *cand = malloc((size_t)p->n), *pins = malloc((size_t)p->n);
    if (!cand || !pins) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", name);
    } else {
        for (int v = 0; v < p->n; v++) cand[v] = v < fi.b0 && (use_cuts ? fi.cut[v] : 1);
        rm_chen_sqrtn_pins(pins, p, &fi, cand, cut_state);
        rm_schedule *s;
        if (!(rc = rm_build_from_checkpoints(&s, p, &fi, pins, 0, e)))
            rc = rm_baseline_finish(out, NULL, s, p, name, e);
        if (rc == RM_ERR_BUDGET && rm_deadline_passed(deadline)) {
            if (stopped) *stopped = 1;
            rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                           "%s: the time limit stopped its construction: not proof that nothing fits", name);
        }
    }
    free(cand);
    free(pins);
    rm_fwd_info_free(&fi);
    return rc;
}
