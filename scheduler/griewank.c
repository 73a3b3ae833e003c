/* Griewank & Walther's revolve (binomial checkpointing, "Algorithm 799",
 * 2000) as a Checkmate schedule. Revolve reverses a chain of M unit steps
 * with s snapshot slots (plus the stored initial state) using the fewest
 * forward re-evaluations; the recursion ("treeverse") stores the state at
 * a split point m, reverses (m, b] with s-1 slots, frees m and reverses
 * (a, m] with s slots.
 *
 * The chain here is that of the cut points c_0 < ... < c_M of the forward
 * graph (every forward node of a chain; Checkmate's "AP log n" on other
 * graphs), and step i is the block of forward nodes (c_{i-1}, c_i]. The
 * splits come from the unit-cost recurrence
 *   F(l, 0) = l(l-1)/2,  F(1, s) = 0,
 *   F(l, s) = min_{0<j<l} j + F(l-j, s-1) + F(j, s)
 * (Griewank's optimum: binomial in l and s). Each treeverse split becomes a
 * snapshot in the shared construction: stored when the reversal of its
 * interval begins (in the forward pass for the first path of the recursion,
 * otherwise at the first backward stage that reads a value of the interval)
 * and kept until the backward pass is done with the blocks to its right
 * and with the value itself. Everything else is recomputed on demand from
 * the nearest resident state, which is what revolve's advances do; a block
 * is recomputed once when first needed and kept until its last reader.
 * The initial state (node 0, the input) is always kept.
 *
 * Departures: revolve assumes unit step costs and sizes; on real graphs the
 * splits stay those of unit steps (sizes and costs only enter through the
 * simulator that picks the best s). Slots are swept from 0 to min(M-1, 40);
 * 40 slots reverse up to C(42, 2) = 861 steps with at most two
 * recomputations each, so larger s cannot help much. The sweep also offers
 * the schedule that keeps every forward value (revolve with unlimited slots
 * and step tapes), so that with memory to spare it recomputes nothing even
 * where blocks have interiors. Slot counts whose unit-cost reversal would
 * recompute more than 2^24 blocks are not tried (0 and 1 slots on chains of
 * tens of thousands of blocks). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "deadline.h"
#include "log.h"
#include "strategy.h"

#define MAX_SLOTS 40
#define GRIEWANK_MAX_RECOMPUTES (1 << 24)

typedef struct revolve {
    const rm_fwd_info *fi;
    int M, S;
    double *F; /* F[l * (S + 1) + s] */
    int *split;
    int *first, *last; /* per block 1..M: first/last backward stage reading one of its values */
    rm_snapshot *snaps;
    int nsnaps;
} revolve;

static void treeverse(revolve *r, int a, int b, int s, int in_forward)
{
    if (b - a <= 1 || s <= 0) return;
    int m = a + r->split[(b - a) * (r->S + 1) + s];
    int node = r->fi->cuts[m];
    int take = INT_MAX, free_at = r->fi->lastuse[node];
    for (int i = a + 1; i <= b; i++)
        if (r->first[i] < take) take = r->first[i];
    for (int i = m + 1; i <= b; i++)
        if (r->last[i] > free_at) free_at = r->last[i];
    if (in_forward) take = node;
    if (take != INT_MAX && take < free_at) r->snaps[r->nsnaps++] = (rm_snapshot){node, take, free_at};
    treeverse(r, m, b, s - 1, in_forward);
    treeverse(r, a, m, s, 0);
}

void rm_revolve_splits(double *F, int *split, int M, int S)
{
    /* F(., s) is convex in l (piecewise linear with slopes 1, 2, 3, ...,
     * Griewank's binomial form; l(l-1)/2 for s = 0), so the cost of a split
     * j, j + F(l - j, s - 1) + F(j, s), is convex in j, and its least
     * minimiser never decreases as l grows (an infimal convolution of convex
     * functions). Each l resumes the scan where l - 1 stopped: O(M S) where
     * trying every j took O(M^2 S), 10^11 steps for 50,000 blocks. */
    for (int s = 0; s <= S; s++) {
        int j = 1;
        for (int l = 1; l <= M; l++) {
            double *f = &F[l * (S + 1) + s];
            if (l == 1) {
                *f = 0;
            } else if (s == 0) {
                *f = 0.5 * l * (l - 1);
            } else {
#define SPLIT_COST(j) ((j) + F[(l - (j)) * (S + 1) + s - 1] + F[(j) * (S + 1) + s])
                if (j >= l) j = l - 1;
                while (j + 1 < l && SPLIT_COST(j + 1) < SPLIT_COST(j)) j++;
                *f = SPLIT_COST(j);
                split[l * (S + 1) + s] = j;
#undef SPLIT_COST
            }
        }
    }
}

static int cmp_snap(const void *x, const void *y)
{
    const rm_snapshot *a = x, *b = y;
    return (a->take > b->take) - (a->take < b->take);
}

int rm_strategy_griewank(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_griewank_until(out, NULL, p, 0, e);
}

int rm_griewank_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e)
{
    static const char *name = "griewank";
    *out = NULL;
    if (stopped) *stopped = 0;
    int rc = rm_baseline_precheck(p, name, e);
    if (rc) return rc;
    rm_fwd_info fi;
    if ((rc = rm_fwd_info_init(&fi, p, e))) return rc;
    int n = p->n, b0 = fi.b0, M = fi.ncuts - 1;
    revolve r = {0};
    r.fi = &fi;
    r.M = M;
    r.S = M - 1 < MAX_SLOTS ? M - 1 : MAX_SLOTS;
    if (r.S < 0) r.S = 0;
    size_t cells = ((size_t)M + 1) * ((size_t)r.S + 1);
    r.F = malloc((cells + 1) * sizeof *r.F);
    r.split = calloc(cells + 1, sizeof *r.split);
    r.first = malloc(((size_t)M + 2) * sizeof(int));
    r.last = malloc(((size_t)M + 2) * sizeof(int));
    r.snaps = malloc(((size_t)M + 2) * sizeof *r.snaps);
    int *seg = malloc(((size_t)n + 1) * sizeof(int));
    int *block = malloc(((size_t)n + 1) * sizeof(int));
    uint8_t *pinned = calloc((size_t)n, 1);
    rm_best best = {0};
    if (!r.F || !r.split || !r.first || !r.last || !r.snaps || !seg || !block || !pinned) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", name);
        goto done;
    }
    if (M < 1) { /* no forward chain to reverse */
        rm_schedule *sch;
        if (!(rc = rm_build_schedule(&sch, p, &fi, NULL, NULL, NULL, 0, 0, e))) rc = rm_best_offer(&best, sch, p, e);
        if (!rc) rc = rm_best_finish(out, stopped, &best, p, name, e);
        goto done;
    }
    /* Blocks: node 0 (c_0) is the stored initial state; block i holds
     * (c_{i-1}, c_i]. */
    pinned[0] = 1;
    block[0] = 0;
    seg[0] = -1;
    for (int i = 1, v = 1; i <= M; i++)
        for (; v <= fi.cuts[i]; v++) {
            block[v] = i;
            seg[v] = i - 1;
        }
    for (int i = 0; i <= M + 1; i++) {
        r.first[i] = INT_MAX;
        r.last[i] = -1;
    }
    for (int t = b0; t < n; t++)
        for (int d = 0; d < p->nodes[t].ndeps; d++) {
            int u = p->nodes[t].deps[d];
            if (u >= b0 || block[u] == 0) continue;
            if (t < r.first[block[u]]) r.first[block[u]] = t;
            if (t > r.last[block[u]]) r.last[block[u]] = t;
        }
    rm_revolve_splits(r.F, r.split, M, r.S);
    {
        /* The top of the memory range first: every forward value kept, where
         * revolve ends up when slots (and the steps' tapes) are unlimited.
         * One linear construction, so that a sweep stopped by its deadline
         * still has the schedule that fits any budget checkpoint-all fits. */
        uint8_t *all = malloc((size_t)n);
        rm_schedule *sch;
        if (!all) {
            rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", name);
            goto done;
        }
        for (int v = 0; v < n; v++) all[v] = v < b0;
        rc = rm_build_from_checkpoints(&sch, p, &fi, all, 0, e);
        free(all);
        if (rc || (rc = rm_best_offer(&best, sch, p, e))) goto done;
    }
    /* Many slots first: the cheap schedules, which fit the looser budgets,
     * come before the recomputation-heavy ones when a deadline stops the
     * sweep (and a build dearer than the best so far is given up early). */
    fi.deadline = deadline; /* a slot count in progress at the deadline is given up (RM_ERR_BUDGET) */
    for (int s = r.S; s >= 0 && !rm_best_stop(&best, deadline); s--) {
        /* Few slots on a long chain recompute quadratically: 0 slots and
         * 50,000 blocks is 1.25 billion recomputations, a schedule of tens
         * of gigabytes. Such slot counts are skipped (the schedule that
         * keeps every forward value is offered below in any case). */
        if (r.F[M * (r.S + 1) + s] > GRIEWANK_MAX_RECOMPUTES) continue;
        r.nsnaps = 0;
        treeverse(&r, 0, M, s, 1);
        qsort(r.snaps, (size_t)r.nsnaps, sizeof *r.snaps, cmp_snap);
        rm_schedule *sch;
        /* One dearer than the best so far is given up unbuilt. */
        rc = rm_build_schedule(&sch, p, &fi, pinned, seg, r.snaps, r.nsnaps, best.s ? best.r.cost : 0, e);
        if (rc == RM_ERR_BUDGET && rm_deadline_passed(deadline)) { /* given up at the deadline */
            best.stopped = 1;
            break;
        }
        if (rc == RM_ERR_BUDGET) continue;
        if (rc) goto done;
        if ((rc = rm_best_offer(&best, sch, p, e))) {
            rm_err_context(e, "%s", name);
            goto done;
        }
    }
    if (best.stopped) RM_LOG_INFO("%s: stopped at the deadline after %d of %d candidates", name, best.tried, r.S + 2);
    rc = rm_best_finish(out, stopped, &best, p, name, e);
done:
    rm_schedule_free(best.s);
    free(r.F);
    free(r.split);
    free(r.first);
    free(r.last);
    free(r.snaps);
    free(seg);
    free(block);
    free(pinned);
    rm_fwd_info_free(&fi);
    return rc;
}
