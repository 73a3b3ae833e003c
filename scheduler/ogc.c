/* Optimal gradient checkpointing after Feng & Huang ("Optimal Gradient
 * Checkpoint Search for Arbitrary Computation Graphs", CVPR 2021): the
 * checkpoint set whose schedule, with every non-checkpointed segment
 * re-forwarded once, has the lowest activation peak.
 *
 * Feng & Huang, on a general graph. A lower set L of the forward DAG (closed
 * under predecessors) has as boundary its members read by a forward node
 * outside it; a chain of lower sets L_1 < L_2 < ... checkpoints the union of
 * the boundaries, and each difference L_{i+1} \ L_i is a segment re-forwarded
 * once. Their DP runs over the lattice of all lower sets, choosing the
 * execution order along with the chain. Here the order is not ours to
 * choose: Checkmate's model fixes it (stage t computes node t, backward in
 * the problem's order), and a chain's memory splits into per-segment terms
 * only when every segment is contiguous in that order, i.e. when every L_i
 * is a prefix [0..c] of it. A chain with a non-prefix lower set interleaves
 * two segments' forward and backward stages, which then hold their values
 * at the same time, and no pairwise term can price that. So the lattice is
 * the prefixes, one per forward position c, and the boundary of [0..c] is
 * c plus every earlier value a forward node after c reads (a ResNet block's
 * input inside the block, U-Net's skip tensors across the encoder and
 * decoder; c itself is kept even when only the backward pass reads it). On
 * a chain, and at cut points, the boundary is c alone and this is their
 * chain DP. Real models have few other lower sets anyway: U-Net's main path
 * visits every node, so its lower sets are exactly its prefixes, and inside
 * a ResNet-50 downsampling block (8 main-branch nodes, 2 shortcut nodes)
 * 16 of the 27 lower sets are not prefixes; identity blocks have none.
 *
 * The DP. With checkpoints from positions c_1 < ... < c_k and the shared
 * construction of baseline.c (each checkpoint kept from its compute until
 * its last reader, recomputations included; runs of other values between
 * checkpoints recomputed when the backward pass first needs them), every
 * moment of the simulated schedule belongs to one segment (c_i, c_{i+1}]
 * (forward stages by index, backward stages by the highest forward value
 * still to be read) and its memory there is h(c_i, c_{i+1}), measured by
 * simulating the schedule that checkpoints exactly the two boundaries, plus
 * the checkpoints of earlier boundaries that are not in these two and are
 * still resident: own(a, b), a's checkpoints outside b's boundary that are
 * resident when the backward pass starts (they then live through every later
 * segment; otherwise they died inside (a, b], which h counted). Hence
 *   W(a) = min_b max( h(a, b), own(a, b) + W(b) ),  peak = max(W(start), G0)
 * over a virtual start and end, G0 the moments that read no forward value.
 * Recomputation cost (a per-segment sum) breaks ties. Two passes: the cut
 * points (at most OGC_MAX_CUTS, evenly spaced), then every forward position
 * (at most OGC_MAX_POSITIONS); the second only replaces the first where the
 * simulator says it is better, so ogc is never worse than the cut-point
 * optimum it returned before.
 *
 * Cost. A segment's values that the backward pass reads are recomputed and
 * held at once when their run opens, a lower bound on h monotone in b: above
 * the best simulated peak so far (every cut point, every sqrt(K)-th, pass 1's
 * answer) a segment cannot be in an optimum and is not simulated. The pairs
 * left, K positions times S spans, are simulated in batches of pairs that do
 * not overlap (see simulate_batch: each pair's h is exactly what simulating
 * it alone gives), about S^2 / 2 simulations of O(n^2) each, plus O(K S^2)
 * for the bounds. CPU time (user + sys) with no budget: ResNet-50 at batch
 * 32 (175 forward nodes) 0.9 s, was 0.1 s with cut points only; U-Net at
 * batch 8 0.06 s; ResNet-101 at batch 32 (345) 7 s, was 1.1 s.
 *
 * Where it is exact. Over its family, every union of prefix boundaries at any
 * set of forward positions, on training graphs whose backward nodes read
 * only their own layer's inputs and outputs and run in reverse layer order
 * (what the tracer emits): tests/scheduler/test_ogc.c checks it against
 * exhaustive search over all 2^(forward nodes) position sets on 160 random
 * DAGs with branches and skips, and against every subset of forward values on
 * chains. Limits: (1) h(a, b) is simulated with only a's checkpoints below
 * a. A checkpoint carried past a that no backward node reads after (a, b]
 * stays resident through it only if a recomputation below a reads it, which
 * depends on the checkpoints the chain puts below a; where that differs the
 * prediction can be off (not seen on the test graphs; the answer is always
 * simulated, valid, and no worse than pass 1). (2) Checkpoint sets outside
 * the family can be lower: keeping a branch's value instead of a skip input
 * (a non-prefix boundary), or a skip tensor without the rest of its prefix
 * boundary. On the random test DAGs some other subset of forward values has
 * a lower peak on 13 of 160 graphs; reaching them needs the order-changing
 * DP above, or a search over arbitrary subsets, which is exponential. (3)
 * Above OGC_MAX_POSITIONS forward nodes the positions are evenly spaced and
 * the answer is exact over those. (4) On problem files that break the shape
 * above the decomposition can be off; the result is still simulated and
 * valid, only not proven optimal. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "deadline.h"
#include "log.h"
#include "strategy.h"

/* Cut points considered by the first pass (evenly spaced above it), and
 * positions by the second; each costs up to one simulation per pair that
 * the lower bound does not prune. */
#define OGC_MAX_CUTS 64
#define OGC_MAX_POSITIONS 1024
#define OGC_INF (LLONG_MAX / 4)
/* The most work one DP may do (RM_OGC_MAX_WORK, in nodes and edges visited
 * by its batch simulations): 3 to 8 seconds on one core of the machine it
 * was tuned on, 80 to 250 ns each, by graph size. Beyond it the positions
 * are thinned. */
#define OGC_MAX_WORK RM_OGC_MAX_WORK

typedef struct ogc_val {
    long long peak; /* -1: no segment */
    double cost;
    int next;
} ogc_val;

/* Simulates the checkpoint set pins with the shared construction; per
 * stage, the largest memory after a compute and the cost of its
 * recomputations. With keep, the schedule is handed back (R and S tell who
 * is resident when); otherwise freed. */
static int stage_profile(long long *stage_max, double *stage_rc, rm_schedule **keep, size_t *peak, const rm_problem *p,
                         const rm_fwd_info *fi, const uint8_t *pins, rm_err *e)
{
    rm_schedule *s;
    int rc = rm_build_from_checkpoints(&s, p, fi, pins, 0, e);
    if (rc) return rc;
    rm_op *ops = NULL;
    int nops = 0;
    size_t *mem = NULL;
    rm_sim_result r;
    if (!(rc = rm_schedule_ops(&ops, &nops, p, s, e))) {
        mem = malloc(((size_t)nops + 1) * sizeof *mem);
        if (!mem)
            rc = rm_errorf(e, RM_ERR_NOMEM, "ogc: out of memory");
        else
            rc = rm_simulate_ops(&r, mem, p, s, ops, nops, e);
    }
    if (!rc) {
        for (int t = 0; t < p->n; t++) {
            stage_max[t] = 0;
            stage_rc[t] = 0;
        }
        for (int o = 0; o < nops; o++)
            if (ops[o].kind == RM_OP_COMPUTE) {
                int t = ops[o].stage;
                if ((long long)mem[o] > stage_max[t]) stage_max[t] = (long long)mem[o];
                if (ops[o].node != t) stage_rc[t] += p->nodes[ops[o].node].cost;
            }
        *peak = r.peak_bytes;
    }
    free(ops);
    free(mem);
    if (!rc && keep)
        *keep = s;
    else
        rm_schedule_free(s);
    return rc;
}

/* Workspace of one DP: pos[0..K) the ascending candidate positions. */
typedef struct ogc_dp {
    const rm_problem *p;
    const rm_fwd_info *fi;
    int K;
    const int *pos;
    long long g0; /* moments that read no forward value: the same in every schedule */
    long long *h, *own;
    double *hc;
    ogc_val *W;
    int *span;         /* span[a]: the longest b - a not pruned */
    int *batch;        /* the a of each pair in the batch being simulated, ascending */
    int *ostart, *ord; /* the stages of each pair of the batch (simulate_batch) */
    int *owner;        /* forward index -> the batch's pair whose segment holds it (-1: none) */
    long long *stage_max;
    double *stage_rc;
    uint8_t *pins, *pins_batch; /* pins_batch: the checkpoints of the batch being formed */
    int *bstart, *bmem;         /* boundary a's checkpoints: bmem[bstart[a] .. bstart[a+1]), ascending */
    long long *fen;             /* a Fenwick tree over the stages (simulate_batch) */
    int *by_lastfwd, *lf_start; /* the forward values bucketed by lastfwd */
    int simulations;            /* batches simulated by the last DP */
    double work;                /* its work estimate */
    double deadline;            /* deadline.h; 0 = none */
    int stopped;                /* the deadline stopped a DP (OGC_STOPPED) */
} ogc_dp;

/* A DP stopped by its deadline (an rc below every rm_err code). */
#define OGC_STOPPED (-1)

/* Boundary index a in 0..K+1: 0 the virtual start (the empty prefix), 1..K
 * position pos[a-1], K+1 the virtual end (the whole forward region, nothing
 * to keep); AT(a) is the last forward index of the prefix. */
#define AT(d, a) ((a) == 0 ? -1 : (a) == (d)->K + 1 ? (d)->fi->b0 - 1 : (d)->pos[(a)-1])
#define IDX(d, a, b) ((size_t)(a) * ((size_t)(d)->K + 2) + (size_t)(b))

/* The checkpoints of every boundary a in 1..K: pos[a-1] itself and every
 * earlier value a forward node after it reads (for a cut point, itself
 * alone). A sweep over the forward values keeps the values still read
 * ahead in a list in index order: each enters once, leaves once, and each
 * boundary copies the list, so the work is the size of the boundaries, where
 * scanning every earlier value at every boundary was quadratic. */
static int boundary_index(ogc_dp *d, rm_err *e)
{
    const rm_fwd_info *fi = d->fi;
    int b0 = fi->b0, K = d->K;
    int *prev = malloc(((size_t)b0 + 2) * sizeof(int)), *next = malloc(((size_t)b0 + 2) * sizeof(int));
    free(d->bstart);
    free(d->bmem);
    d->bmem = NULL;
    d->bstart = calloc((size_t)K + 2, sizeof(int));
    if (!prev || !next || !d->bstart) goto nomem;
    /* Two passes: the sizes, then the members. head is b0, a sentinel. */
    for (int pass = 0; pass < 2; pass++) {
        int head = b0, k = 0, total = 0;
        prev[head] = next[head] = head;
        for (int c = 0; c < b0 && k < K; c++) {
            /* Values whose last forward reader is c leave: not read after c. */
            for (int x = d->lf_start[c]; x < d->lf_start[c + 1]; x++) {
                int v = d->by_lastfwd[x];
                if (v < c) next[prev[v]] = next[v], prev[next[v]] = prev[v];
            }
            if (c == d->pos[k]) {
                if (pass) {
                    int m = d->bstart[k + 1];
                    for (int v = next[head]; v != head; v = next[v]) d->bmem[m++] = v;
                    d->bmem[m] = c;
                } else {
                    int m = 1;
                    for (int v = next[head]; v != head; v = next[v]) m++;
                    d->bstart[k + 2] = m;
                }
                k++;
            }
            if (fi->lastfwd[c] > c) { /* c is read after itself: it joins, at the end */
                prev[c] = prev[head], next[c] = head;
                next[prev[head]] = c, prev[head] = c;
            }
        }
        if (!pass) {
            for (int a = 1; a <= K; a++) total = d->bstart[a + 1] += d->bstart[a];
            if (!(d->bmem = malloc(((size_t)total + 1) * sizeof(int)))) goto nomem;
        }
    }
    free(prev);
    free(next);
    return RM_OK;
nomem:
    free(prev);
    free(next);
    return rm_errorf(e, RM_ERR_NOMEM, "ogc: out of memory");
}

/* Marks (val 1) or unmarks (0) the checkpoints of boundary a (none for the
 * virtual start and end). */
static void mark_boundary(uint8_t *pins, const ogc_dp *d, int a, uint8_t val)
{
    if (a < 1 || a > d->K) return;
    for (int x = d->bstart[a]; x < d->bstart[a + 1]; x++) pins[d->bmem[x]] = val;
}

/* A Fenwick tree over the stages 0..n-1: add to a range, read a point. */
static void fen_add(long long *f, int n, int i, long long v)
{
    for (i++; i <= n; i += i & -i) f[i] += v;
}

static void fen_range(long long *f, int n, int lo, int hi, long long v)
{
    if (lo > hi) return;
    fen_add(f, n, lo, v);
    if (hi + 1 < n) fen_add(f, n, hi + 1, -v);
}

static long long fen_at(const long long *f, int i)
{
    long long s = 0;
    for (i++; i > 0; i -= i & -i) s += f[i];
    return s;
}

/* Adds (sign 1) or removes (-1) checkpoint v's bytes at every stage t where
 * s keeps it resident through the whole stage (S[t][v] and S[t+1][v]). */
static void add_resident(ogc_dp *d, const rm_schedule *s, int v, int sign)
{
    int n = d->p->n;
    for (int k = s->ret_start[v]; k < s->ret_start[v + 1]; k++)
        fen_range(d->fen, n, s->ret[k].from, s->ret[k].to - 1, sign * (long long)d->p->nodes[v].bytes);
}

/* One simulation for several pairs (a, a + L) whose segments do not overlap
 * (batch[0..nb), ascending). Segment j = (lo_j, hi_j] only sees its own
 * boundaries' checkpoints and those of the pairs below it: the pairs above
 * are all computed after its forward stages and dead before its backward
 * stages, because their values are read only by nodes after hi_j (or they
 * would be checkpoints of b_j). A lower pair's checkpoint that is not one of
 * j's is never read during j's moments (a reader after lo_j would make it a
 * checkpoint of a_j), so where it is resident it is resident throughout the
 * stage, and subtracting it leaves exactly what the simulation of a_j and b_j
 * alone measures. */
static int simulate_batch(ogc_dp *d, int nb, int L, rm_err *e)
{
    const rm_problem *p = d->p;
    const rm_fwd_info *fi = d->fi;
    int n = p->n, b0 = fi->b0, rc;
    memset(d->pins, 0, (size_t)n);
    for (int v = 0; v < b0; v++) d->owner[v] = -1;
    for (int j = 0; j < nb; j++) {
        int a = d->batch[j], b = a + L, lo = AT(d, a), hi = AT(d, b);
        mark_boundary(d->pins, d, a, 1);
        mark_boundary(d->pins, d, b, 1);
        for (int v = lo + 1; v <= hi; v++) d->owner[v] = j;
    }
    rm_schedule *s;
    size_t pk;
    if ((rc = stage_profile(d->stage_max, d->stage_rc, &s, &pk, p, fi, d->pins, e))) return rc;
    d->simulations++;
    /* Each pair's moments: the stages by owner (a counting sort). */
    int *at = d->ostart;
    memset(at, 0, ((size_t)nb + 2) * sizeof *at);
    for (int t = 0; t < n; t++) {
        int o = t < b0 ? t : fi->pos[t];
        if (o >= 0 && d->owner[o] >= 0) at[d->owner[o] + 2]++;
    }
    for (int j = 0; j < nb; j++) at[j + 2] += at[j + 1];
    for (int t = 0; t < n; t++) {
        int o = t < b0 ? t : fi->pos[t];
        if (o >= 0 && d->owner[o] >= 0) d->ord[at[d->owner[o] + 1]++] = t;
    }
    /* The lower pairs' checkpoints that are not a's: those whose forward
     * readers all come by lo, except lo itself (a's by definition). Pairs
     * ascend, so the set only grows: a Fenwick tree over the stages holds
     * their resident bytes, each checkpoint added once. */
    memset(d->fen, 0, ((size_t)n + 1) * sizeof *d->fen);
    int next_lf = 0;
    for (int j = 0; j < nb; j++) {
        int a = d->batch[j], b = a + L, lo = AT(d, a), hi = AT(d, b);
        for (; next_lf <= lo; next_lf++)
            for (int x = d->lf_start[next_lf]; x < d->lf_start[next_lf + 1]; x++)
                if (d->pins[d->by_lastfwd[x]]) add_resident(d, s, d->by_lastfwd[x], 1);
        int self = lo >= 0 && d->pins[lo] && fi->lastfwd[lo] <= lo;
        if (self) add_resident(d, s, lo, -1);
        long long hv = 0;
        double cv = 0;
        for (int x = at[j]; x < at[j + 1]; x++) {
            int t = d->ord[x];
            long long extra = fen_at(d->fen, t);
            if (d->stage_max[t] - extra > hv) hv = d->stage_max[t] - extra;
            cv += d->stage_rc[t];
        }
        if (self) add_resident(d, s, lo, 1);
        /* A checkpoint of a that is not one of b stays resident through
         * every later segment exactly when it is still resident as the
         * backward pass starts (read by the backward pass, or by a
         * recomputation); otherwise it died within the forward stages of
         * (lo, hi], which h already counted. Those a shares with b (read
         * after hi) are b's to count. */
        long long ov = 0;
        for (int x = a >= 1 && a <= d->K ? d->bstart[a] : 0; a >= 1 && a <= d->K && x < d->bstart[a + 1]; x++) {
            int v = d->bmem[x];
            if (!(b <= d->K && fi->lastfwd[v] > hi) && b0 < n && rm_schedule_S(s, b0, v))
                ov += (long long)p->nodes[v].bytes;
        }
        d->h[IDX(d, a, b)] = hv;
        d->hc[IDX(d, a, b)] = cv;
        d->own[IDX(d, a, b)] = ov;
    }
    rm_schedule_free(s);
    return RM_OK;
}

/* Lower bound on h(a, b): the values strictly inside (lo, hi) that are not
 * checkpoints fall into runs between checkpoints; when the backward pass
 * first reads a run it recomputes every member it still reads and holds them
 * at once. The checkpoints inside are the values read after hi, fewer as hi
 * grows, so the runs only merge and grow: the bound is monotone in b. */
static long long segment_lb(const ogc_dp *d, int lo, int hi)
{
    const rm_fwd_info *fi = d->fi;
    long long lb = 0, run = 0;
    for (int v = lo + 1; v < hi; v++) {
        if (fi->lastfwd[v] > hi) {
            run = 0;
            continue;
        }
        if (fi->lastuse[v] >= fi->b0) run += (long long)d->p->nodes[v].bytes;
        if (run > lb) lb = run;
    }
    return lb;
}

/* The lowest checkpoint of boundary a (its position for the virtual ends). */
static int lowest_checkpoint(const ogc_dp *d, int a)
{
    return a >= 1 && a <= d->K ? d->bmem[d->bstart[a]] : AT(d, a);
}

/* Before each batch simulation (a whole-graph simulation: the DP's unit of
 * work): OGC_STOPPED once the deadline has passed. */
static int deadline_check(ogc_dp *d)
{
    if (!rm_deadline_passed(d->deadline)) return RM_OK;
    d->stopped = 1;
    return OGC_STOPPED;
}

/* Every pair (a, a + L) not pruned, in batches of pairs that do not
 * overlap: a = r, r + L, r + 2L, ... for each residue r. About maxspan^2 / 2
 * simulations instead of one per pair. With count, the batches are only
 * counted (*count), not simulated. */
static int run_batches(ogc_dp *d, int maxspan, int *count, rm_err *e)
{
    int n = d->p->n, K = d->K, rc;
    if (count) *count = 0;
    for (int L = 1; L <= maxspan; L++)
        for (int r = 0; r < L; r++) {
            int nb = 0, top = -1; /* the highest position of the batch so far */
            for (int a = r; a + L <= K + 1; a += L) {
                if (L > d->span[a]) continue;
                /* Safe to share a simulation only when the lower pairs add no
                 * checkpoint between a's lowest checkpoint and a: there they
                 * could change which readers of a's carried checkpoints are
                 * recomputed, and so how long those stay resident. */
                int lo = AT(d, a), low = lowest_checkpoint(d, a);
                int clash = 0;
                for (int v = low + 1; v <= top && v < lo && !clash; v++) clash = d->pins_batch[v];
                if (clash) {
                    if (count)
                        ++*count;
                    else if ((rc = deadline_check(d)) || (rc = simulate_batch(d, nb, L, e)))
                        return rc;
                    nb = 0;
                    top = -1;
                    memset(d->pins_batch, 0, (size_t)n);
                }
                d->batch[nb++] = a;
                mark_boundary(d->pins_batch, d, a, 1);
                mark_boundary(d->pins_batch, d, a + L, 1);
                top = AT(d, a + L);
            }
            if (nb) {
                if (count)
                    ++*count;
                else if ((rc = deadline_check(d)) || (rc = simulate_batch(d, nb, L, e)))
                    return rc;
            }
            memset(d->pins_batch, 0, (size_t)n);
        }
    return RM_OK;
}

/* The chain DP over prefixes at the positions: fills pinned with the union
 * of the chosen boundaries and *predicted with the peak the decomposition
 * predicts. ub: a simulated peak some schedule of the family reaches (a
 * segment whose lower bound exceeds it cannot be in an optimum).
 * RM_ERR_BUDGET, before any simulation, when the pairs left after pruning
 * would take more than max_work steps (see OGC_MAX_WORK). */
static int ogc_chain_dp(ogc_dp *d, size_t ub, double max_work, uint8_t *pinned, size_t *predicted, rm_err *e)
{
    const rm_problem *p = d->p;
    int n = p->n, K = d->K, rc, maxspan = 0;
    if ((rc = boundary_index(d, e))) return rc;
    /* span[a]: the longest b - a whose lower bound is within ub, found by
     * bisection since the bound is monotone in b. */
    for (int a = 0; a <= K; a++) {
        int lo = AT(d, a), good = a, bad = K + 2; /* lb(a, good) <= ub (vacuously at a), lb(a, bad) > ub */
        while (bad - good > 1) {
            int mid = good + (bad - good) / 2;
            if (segment_lb(d, lo, AT(d, mid)) > (long long)ub)
                bad = mid;
            else
                good = mid;
        }
        d->span[a] = good - a;
        for (int b = bad; b <= K + 1; b++) d->h[IDX(d, a, b)] = OGC_INF;
        if (d->span[a] > maxspan) maxspan = d->span[a];
    }
    /* The work: each batch simulates the whole problem. Counted exactly by
     * forming the batches without simulating them (clashes split batches:
     * on a wide fan-in every pair is one). */
    double edges = 0;
    for (int i = 0; i < n; i++) edges += p->nodes[i].ndeps;
    /* First a lower bound, cheaply: for each L, one batch per residue class
     * of the pairs of that length (ostart marks the residues seen). */
    double batches = 0;
    for (int L = 1; L <= maxspan && batches * (n + edges) <= max_work; L++) {
        memset(d->ostart, 0, (size_t)L * sizeof *d->ostart); /* L <= K + 1 */
        for (int a = 0; a + L <= K + 1; a++)
            if (L <= d->span[a] && !d->ostart[a % L]) d->ostart[a % L] = 1, batches++;
    }
    if (batches * (n + edges) <= max_work) {
        int exact = 0;
        if ((rc = run_batches(d, maxspan, &exact, e))) return rc;
        batches = exact;
    }
    double work = (double)batches * (n + edges);
    RM_LOG_DEBUG("ogc: %d positions, longest span %d, %.0f batches, work %.3g (cap %.3g)", K, maxspan, batches, work,
                 max_work);
    if (work > max_work) return rm_errorf(e, RM_ERR_BUDGET, "ogc: %d positions would take %.3g steps", K, work);
    d->work = work;
    d->simulations = 0;
    if ((rc = run_batches(d, maxspan, NULL, e))) return rc;
    /* W over boundaries, right to left: what follows b sees a's own
     * checkpoints on top of its own memory. */
    d->W[K + 1] = (ogc_val){-1, 0, -1};
    for (int a = K; a >= 0; a--) {
        d->W[a] = (ogc_val){-1, 0, -1};
        for (int b = a + 1; b <= a + d->span[a]; b++) {
            if (b <= K && d->W[b].next < 0) continue;
            long long best_pk = d->h[IDX(d, a, b)];
            if (d->W[b].peak >= 0 && d->own[IDX(d, a, b)] + d->W[b].peak > best_pk)
                best_pk = d->own[IDX(d, a, b)] + d->W[b].peak;
            double c = d->hc[IDX(d, a, b)] + d->W[b].cost;
            if (d->W[a].next < 0 || best_pk < d->W[a].peak || (best_pk == d->W[a].peak && c < d->W[a].cost))
                d->W[a] = (ogc_val){best_pk, c, b};
        }
    }
    memset(pinned, 0, (size_t)n);
    if (d->W[0].next < 0) { /* everything pruned: ub was below every segment (not for a valid ub) */
        *predicted = SIZE_MAX;
        return RM_OK;
    }
    for (int a = d->W[0].next; a >= 1 && a <= K; a = d->W[a].next) mark_boundary(pinned, d, a, 1);
    *predicted = (size_t)(d->W[0].peak > d->g0 ? d->W[0].peak : d->g0);
    return RM_OK;
}
#undef AT
#undef IDX

/* The simulated peak and cost of a checkpoint set. */
static int judge(size_t *peak, double *cost, const rm_problem *p, const rm_fwd_info *fi, const uint8_t *pins, rm_err *e)
{
    rm_schedule *s;
    int rc = rm_build_from_checkpoints(&s, p, fi, pins, 0, e);
    if (rc) return rc;
    rm_sim_result r;
    if (!(rc = rm_simulate(&r, p, s, e))) {
        *peak = r.peak_bytes;
        *cost = r.cost;
    }
    rm_schedule_free(s);
    return rc;
}

/* K of the m candidates, evenly spaced (all of them when K >= m); cand
 * NULL: the candidates are 0 .. m-1. */
static int spread(int *out, int K, const int *cand, int m)
{
    if (K > m) K = m;
    for (int k = 0; k < K; k++) {
        int i = K == m ? k : (int)((long long)k * (m - 1) / (K - 1));
        out[k] = cand ? cand[i] : i;
    }
    return K;
}

/* One DP over at most Kmax of the candidates, fewer while the pairs left
 * after pruning would take more than OGC_MAX_WORK steps (positions thinned
 * by 30% at a time: a wide fan-in keeps every pair, K^2 / 2 simulations).
 * *K_used: the positions the DP ran with. */
static int run_pass(ogc_dp *d, int *pos, const int *cand, int m, int Kmax, size_t ub, uint8_t *pinned,
                    size_t *predicted, int *K_used, rm_err *e)
{
    for (int K = Kmax < m ? Kmax : m;; K = K * 7 / 10) {
        if (K < 2) K = m < 2 ? m : 2;
        d->K = spread(pos, K, cand, m);
        d->pos = pos;
        rm_err pe = {RM_OK, ""};
        int rc = ogc_chain_dp(d, ub, K <= 2 ? INFINITY : OGC_MAX_WORK, pinned, predicted, &pe);
        *K_used = d->K;
        if (rc != RM_ERR_BUDGET) {
            if (rc && e) *e = pe;
            return rc;
        }
    }
}

int rm_ogc_plan(uint8_t *pinned, size_t *predicted_peak, rm_ogc_stats *stats, const rm_problem *p,
                const rm_fwd_info *fi, rm_err *e)
{
    return rm_ogc_plan_until(pinned, predicted_peak, stats, NULL, p, fi, 0, e);
}

int rm_ogc_plan_until(uint8_t *pinned, size_t *predicted_peak, rm_ogc_stats *stats, int *stopped, const rm_problem *p,
                      const rm_fwd_info *fi, double deadline, rm_err *e)
{
    int n = p->n, b0 = fi->b0;
    memset(pinned, 0, (size_t)n);
    *predicted_peak = 0;
    int KC = fi->ncuts < OGC_MAX_CUTS ? fi->ncuts : OGC_MAX_CUTS;
    int KP = b0 < OGC_MAX_POSITIONS ? b0 : OGC_MAX_POSITIONS;
    int Kmax = KC > KP ? KC : KP;
    ogc_dp d = {0};
    d.p = p;
    d.fi = fi;
    d.deadline = deadline;
    if (stopped) *stopped = 0;
    int *pos = malloc(((size_t)Kmax + 1) * sizeof(int));
    size_t cells = ((size_t)Kmax + 2) * ((size_t)Kmax + 2);
    d.h = malloc(cells * sizeof(long long));
    d.own = malloc(cells * sizeof(long long));
    d.hc = malloc(cells * sizeof(double));
    d.W = malloc(((size_t)Kmax + 2) * sizeof *d.W);
    d.stage_max = malloc((size_t)n * sizeof(long long));
    d.stage_rc = malloc((size_t)n * sizeof(double));
    d.pins = calloc((size_t)n, 1);
    d.span = malloc(((size_t)Kmax + 2) * sizeof(int));
    d.batch = malloc(((size_t)Kmax + 2) * sizeof(int));
    d.ostart = malloc(((size_t)Kmax + 3) * sizeof(int));
    d.ord = malloc((size_t)n * sizeof(int));
    d.fen = malloc(((size_t)n + 1) * sizeof(long long));
    d.owner = malloc((size_t)n * sizeof(int));
    d.pins_batch = calloc((size_t)n, 1);
    d.by_lastfwd = malloc(((size_t)b0 + 1) * sizeof(int));
    d.lf_start = calloc((size_t)b0 + 2, sizeof(int));
    uint8_t *second = calloc((size_t)n, 1);
    int rc = RM_OK, K1 = 0, K2 = 0, pass = 1;
    if (!pos || !d.h || !d.own || !d.hc || !d.W || !d.stage_max || !d.stage_rc || !d.pins || !d.span || !d.batch ||
        !d.ostart || !d.ord || !d.fen || !d.owner || !d.pins_batch || !d.by_lastfwd || !d.lf_start || !second) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "ogc: out of memory");
        goto done;
    }
    /* The forward values by their last forward reader (a counting sort). */
    for (int v = 0; v < b0; v++) d.lf_start[fi->lastfwd[v] + 1]++;
    for (int c = 0; c < b0; c++) d.lf_start[c + 1] += d.lf_start[c];
    for (int v = 0; v < b0; v++) d.by_lastfwd[d.lf_start[fi->lastfwd[v]]++] = v;
    for (int c = b0; c > 0; c--) d.lf_start[c] = d.lf_start[c - 1];
    d.lf_start[0] = 0;
    /* g0 and a first upper bound: every cut point, every sqrt(K)-th. */
    size_t ub = 0, pk, pk2;
    double cost, cost2;
    KC = spread(pos, KC, fi->cuts, fi->ncuts);
    for (int k = 0; k < KC; k++) d.pins[pos[k]] = 1;
    double t_profile = rm_now();
    if ((rc = stage_profile(d.stage_max, d.stage_rc, NULL, &ub, p, fi, d.pins, e))) goto done;
    /* After the DP its answer is built and simulated a few times (judged
     * here, built by the caller, simulated by it and by the strategy's
     * judge): kept back from the deadline, measured on this simulation. */
    if (deadline > 0) d.deadline = deadline - 4 * (rm_now() - t_profile);
    for (int t = b0; t < n; t++)
        if (fi->pos[t] < 0 && d.stage_max[t] > d.g0) d.g0 = d.stage_max[t];
    /* The lower of these two seeds is the answer when the deadline stops
     * pass 1 (its peak simulated, so "predicted" exactly). */
    memcpy(pinned, d.pins, (size_t)n);
    *predicted_peak = ub;
    memset(d.pins, 0, (size_t)n);
    int step = (int)sqrt((double)KC) > 1 ? (int)sqrt((double)KC) : 1;
    for (int k = step - 1; k < KC; k += step) d.pins[pos[k]] = 1;
    if ((rc = stage_profile(d.stage_max, d.stage_rc, NULL, &pk, p, fi, d.pins, e))) goto done;
    if (pk < ub) {
        ub = pk;
        memcpy(pinned, d.pins, (size_t)n);
        *predicted_peak = pk;
    }
    /* Pass 1, cut points: segments never share values, cheap, and its
     * simulated answer bounds pass 2 tightly. */
    size_t pred1, pred2;
    if ((rc = run_pass(&d, pos, fi->cuts, fi->ncuts, OGC_MAX_CUTS, ub, second, &pred1, &K1, e))) goto done;
    memcpy(pinned, second, (size_t)n);
    if (stats) {
        memset(stats, 0, sizeof *stats);
        stats->positions[0] = K1;
        stats->simulations[0] = d.simulations;
        stats->work = d.work;
    }
    if ((rc = judge(&pk, &cost, p, fi, pinned, e))) goto done;
    *predicted_peak = pred1;
    if (pk < ub) ub = pk;
    /* Pass 2, every forward position: prefixes of the stage order whose
     * boundaries carry skips. Its family contains pass 1's (uncapped), so
     * it only replaces pass 1 when the simulator says it is better. */
    if (KP > K1) {
        pass = 2;
        if ((rc = run_pass(&d, pos, NULL, b0, OGC_MAX_POSITIONS, ub, second, &pred2, &K2, e))) goto done;
        if (stats) {
            stats->positions[1] = K2;
            stats->simulations[1] = d.simulations;
            if (d.work > stats->work) stats->work = d.work;
        }
        if (pred2 != SIZE_MAX) {
            if ((rc = judge(&pk2, &cost2, p, fi, second, e))) goto done;
            if (pk2 < pk || (pk2 == pk && cost2 < cost)) {
                memcpy(pinned, second, (size_t)n);
                *predicted_peak = pred2;
            }
        }
    }
    RM_LOG_DEBUG("ogc: %d cut points, then %d positions", K1, K2);
done:
    if (rc == OGC_STOPPED) {
        /* The best set so far stands: pass 1's, or the seeds'. */
        RM_LOG_INFO("ogc: stopped at the deadline in pass %d of 2: %s", pass,
                    pass == 1 ? "the better of its seed checkpoint sets stands" : "pass 1's answer stands");
        rc = RM_OK;
    }
    if (stopped) *stopped = d.stopped;
    free(pos);
    free(d.h);
    free(d.own);
    free(d.hc);
    free(d.W);
    free(d.stage_max);
    free(d.stage_rc);
    free(d.pins);
    free(d.span);
    free(d.batch);
    free(d.ostart);
    free(d.ord);
    free(d.fen);
    free(d.owner);
    free(d.pins_batch);
    free(d.by_lastfwd);
    free(d.lf_start);
    free(d.bstart);
    free(d.bmem);
    free(second);
    return rc;
}

int rm_strategy_ogc(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_ogc_until(out, NULL, p, 0, e);
}

int rm_ogc_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e)
{
    *out = NULL;
    if (stopped) *stopped = 0;
    int rc = rm_baseline_precheck(p, "ogc", e);
    if (rc) return rc;
    rm_fwd_info fi;
    if ((rc = rm_fwd_info_init(&fi, p, e))) return rc;
    uint8_t *pins = malloc((size_t)p->n);
    if (!pins) {
        rm_fwd_info_free(&fi);
        return rm_errorf(e, RM_ERR_NOMEM, "ogc: out of memory");
    }
    size_t predicted;
    rm_schedule *s;
    int cut = 0;
    if (!(rc = rm_ogc_plan_until(pins, &predicted, NULL, &cut, p, &fi, deadline, e)) &&
        !(rc = rm_build_from_checkpoints(&s, p, &fi, pins, 0, e)))
        rc = rm_baseline_finish(out, NULL, s, p, "ogc", e);
    if (stopped) *stopped = cut;
    if (rc == RM_ERR_INFEASIBLE && cut) {
        /* The set the deadline left over the budget says nothing of what
         * the whole search finds: said as a stop, as the other searches do. */
        char why[sizeof e->msg];
        snprintf(why, sizeof why, "%s", e ? e->msg : "over the budget");
        rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                       "ogc: the time limit stopped the search before a checkpoint set that fits was found (the "
                       "best so far: %.300s): not proof that nothing fits",
                       why);
    }
    free(pins);
    rm_fwd_info_free(&fi);
    return rc;
}
