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
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "log.h"
#include "strategy.h"

/* Cut points considered by the first pass (evenly spaced above it), and
 * positions by the second; each costs up to one simulation per pair that
 * the lower bound does not prune. */
#define OGC_MAX_CUTS 64
#define OGC_MAX_POSITIONS 1024
#define OGC_INF (LLONG_MAX / 4)

typedef struct ogc_val {
    long long peak; /* -1: no segment */
    double cost;
    int next;
} ogc_val;

/* Marks (val 1) or unmarks (0) the checkpoints of position c: c itself and
 * the boundary of the prefix [0..c], every earlier value a forward node
 * after c reads. For a cut point that is c alone. */
static void mark_boundary(uint8_t *pins, const rm_fwd_info *fi, int c, uint8_t val)
{
    pins[c] = val;
    for (int v = 0; v < c; v++)
        if (fi->lastfwd[v] > c) pins[v] = val;
}

/* Simulates the checkpoint set pins with the shared construction; per
 * stage, the largest memory after a compute and the cost of its
 * recomputations. With keep, the schedule is handed back (R and S tell who
 * is resident when); otherwise freed. */
static int stage_profile(long long *stage_max, double *stage_rc, rm_schedule **keep, size_t *peak, const rm_problem *p,
                         const rm_fwd_info *fi, const uint8_t *pins, rm_err *e)
{
    rm_schedule *s;
    int rc = rm_build_from_checkpoints(&s, p, fi, pins, e);
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
    int *span;  /* span[a]: the longest b - a not pruned */
    int *batch; /* the a of each pair in the batch being simulated, ascending */
    int *owner; /* forward index -> the batch's pair whose segment holds it (-1: none) */
    long long *stage_max;
    double *stage_rc;
    uint8_t *pins, *pins_batch; /* pins_batch: the checkpoints of the batch being formed */
} ogc_dp;

/* Boundary index a in 0..K+1: 0 the virtual start (the empty prefix), 1..K
 * position pos[a-1], K+1 the virtual end (the whole forward region, nothing
 * to keep); AT(a) is the last forward index of the prefix. */
#define AT(d, a) ((a) == 0 ? -1 : (a) == (d)->K + 1 ? (d)->fi->b0 - 1 : (d)->pos[(a)-1])
#define IDX(d, a, b) ((size_t)(a) * ((size_t)(d)->K + 2) + (size_t)(b))

/* v is a checkpoint of boundary a (at forward index lo): lo itself or a
 * value a forward node after lo reads. */
static int in_boundary(const ogc_dp *d, int a, int lo, int v)
{
    return a > 0 && a <= d->K && v <= lo && (v == lo || d->fi->lastfwd[v] > lo);
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
    int n = p->n, b0 = fi->b0, K = d->K, rc;
    memset(d->pins, 0, (size_t)n);
    for (int v = 0; v < b0; v++) d->owner[v] = -1;
    for (int j = 0; j < nb; j++) {
        int a = d->batch[j], b = a + L, lo = AT(d, a), hi = AT(d, b);
        if (a > 0) mark_boundary(d->pins, fi, lo, 1);
        if (b <= K) mark_boundary(d->pins, fi, hi, 1);
        for (int v = lo + 1; v <= hi; v++) d->owner[v] = j;
    }
    rm_schedule *s;
    size_t pk;
    if ((rc = stage_profile(d->stage_max, d->stage_rc, &s, &pk, p, fi, d->pins, e))) return rc;
    for (int j = 0; j < nb; j++) {
        int a = d->batch[j], b = a + L, lo = AT(d, a), hi = AT(d, b);
        long long hv = 0;
        double cv = 0;
        for (int t = 0; t < n; t++) {
            int o = t < b0 ? t : fi->pos[t];
            if (o < 0 || d->owner[o] != j) continue;
            long long extra = 0;
            for (int v = 0; v <= lo && j > 0; v++)
                if (d->pins[v] && !in_boundary(d, a, lo, v) && t + 1 < n && rm_schedule_S(s, t, v) &&
                    rm_schedule_S(s, t + 1, v))
                    extra += (long long)p->nodes[v].bytes;
            if (d->stage_max[t] - extra > hv) hv = d->stage_max[t] - extra;
            cv += d->stage_rc[t];
        }
        /* A checkpoint of a that is not one of b stays resident through
         * every later segment exactly when it is still resident as the
         * backward pass starts (read by the backward pass, or by a
         * recomputation); otherwise it died within the forward stages of
         * (lo, hi], which h already counted. Those a shares with b are b's
         * to count. */
        long long ov = 0;
        for (int v = 0; v <= lo; v++)
            if (in_boundary(d, a, lo, v) && !in_boundary(d, b, hi, v) && b0 < n && rm_schedule_S(s, b0, v))
                ov += (long long)p->nodes[v].bytes;
        d->h[IDX(d, a, b)] = hv;
        d->hc[IDX(d, a, b)] = cv;
        d->own[IDX(d, a, b)] = ov;
    }
    rm_schedule_free(s);
    return RM_OK;
}

/* The chain DP over prefixes at the positions: fills pinned with the union
 * of the chosen boundaries and *predicted with the peak the decomposition
 * predicts. ub: a simulated peak some schedule of the family reaches (a
 * segment whose lower bound exceeds it cannot be in an optimum). */
static int ogc_chain_dp(ogc_dp *d, size_t ub, uint8_t *pinned, size_t *predicted, rm_err *e)
{
    const rm_problem *p = d->p;
    const rm_fwd_info *fi = d->fi;
    int n = p->n, b0 = fi->b0, K = d->K, rc, maxspan = 0;
    for (int a = 0; a <= K; a++) {
        int lo = AT(d, a);
        d->span[a] = K + 1 - a;
        for (int b = a + 1; b <= K + 1; b++) {
            int hi = AT(d, b);
            /* Lower bound on h(a, b): the values strictly inside (lo, hi)
             * that are not checkpoints fall into runs between
             * checkpoints; when the backward pass first reads a run it
             * recomputes every member it still reads and holds them at
             * once. The checkpoints inside are the values read after hi,
             * fewer as hi grows, so the runs only merge and grow: the bound
             * is monotone in b and the scan over b can stop. */
            long long lb = 0, run = 0;
            for (int v = lo + 1; v < hi; v++) {
                if (fi->lastfwd[v] > hi) {
                    run = 0;
                    continue;
                }
                if (fi->lastuse[v] >= b0) run += (long long)p->nodes[v].bytes;
                if (run > lb) lb = run;
            }
            if (lb > (long long)ub) {
                d->span[a] = b - a - 1;
                for (; b <= K + 1; b++) d->h[IDX(d, a, b)] = OGC_INF;
                break;
            }
        }
        if (d->span[a] > maxspan) maxspan = d->span[a];
    }
    RM_LOG_DEBUG("ogc: %d positions, longest span %d", K, maxspan);
    /* Every pair (a, a + L) not pruned, in batches of pairs that do not
     * overlap: a = r, r + L, r + 2L, ... for each residue r. About maxspan^2
     * / 2 simulations instead of one per pair. */
    for (int L = 1; L <= maxspan; L++)
        for (int r = 0; r < L; r++) {
            int nb = 0, top = -1; /* the highest position of the batch so far */
            for (int a = r; a + L <= K + 1; a += L) {
                if (L > d->span[a]) continue;
                /* Safe to share a simulation only when the lower pairs add no
                 * checkpoint between a's lowest checkpoint and a: there they
                 * could change which readers of a's carried checkpoints are
                 * recomputed, and so how long those stay resident. */
                int lo = AT(d, a), low = lo;
                for (int v = 0; v < lo && a > 0; v++)
                    if (d->fi->lastfwd[v] > lo) {
                        low = v;
                        break;
                    }
                int clash = 0;
                for (int v = low + 1; v <= top && v < lo && !clash; v++) clash = d->pins_batch[v];
                if (clash) {
                    if ((rc = simulate_batch(d, nb, L, e))) return rc;
                    nb = 0;
                    top = -1;
                    memset(d->pins_batch, 0, (size_t)n);
                }
                d->batch[nb++] = a;
                if (a > 0) mark_boundary(d->pins_batch, d->fi, lo, 1);
                if (a + L <= K) mark_boundary(d->pins_batch, d->fi, AT(d, a + L), 1);
                top = AT(d, a + L);
            }
            if (nb && (rc = simulate_batch(d, nb, L, e))) return rc;
            memset(d->pins_batch, 0, (size_t)n);
        }
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
    for (int a = d->W[0].next; a >= 1 && a <= K; a = d->W[a].next) mark_boundary(pinned, fi, d->pos[a - 1], 1);
    *predicted = (size_t)(d->W[0].peak > d->g0 ? d->W[0].peak : d->g0);
    return RM_OK;
}
#undef AT
#undef IDX

/* The simulated peak and cost of a checkpoint set. */
static int judge(size_t *peak, double *cost, const rm_problem *p, const rm_fwd_info *fi, const uint8_t *pins,
                 rm_err *e)
{
    rm_schedule *s;
    int rc = rm_build_from_checkpoints(&s, p, fi, pins, e);
    if (rc) return rc;
    rm_sim_result r;
    if (!(rc = rm_simulate(&r, p, s, e))) {
        *peak = r.peak_bytes;
        *cost = r.cost;
    }
    rm_schedule_free(s);
    return rc;
}

int rm_ogc_plan(uint8_t *pinned, size_t *predicted_peak, const rm_problem *p, const rm_fwd_info *fi, rm_err *e)
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
    int *cuts = malloc(((size_t)KC + 1) * sizeof(int)), *all = malloc(((size_t)KP + 1) * sizeof(int));
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
    d.owner = malloc((size_t)n * sizeof(int));
    d.pins_batch = calloc((size_t)n, 1);
    uint8_t *second = calloc((size_t)n, 1);
    int rc = RM_OK;
    if (!cuts || !all || !d.h || !d.own || !d.hc || !d.W || !d.stage_max || !d.stage_rc || !d.pins || !d.span ||
        !d.batch || !d.owner || !d.pins_batch || !second) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "ogc: out of memory");
        goto done;
    }
    for (int k = 0; k < KC; k++) /* evenly spaced when there are too many */
        cuts[k] = fi->cuts[KC == fi->ncuts ? k : (int)((long long)k * (fi->ncuts - 1) / (KC - 1))];
    for (int k = 0; k < KP; k++) all[k] = KP == b0 ? k : (int)((long long)k * (b0 - 1) / (KP - 1));
    /* g0 and a first upper bound: every cut point, every sqrt(K)-th. */
    size_t ub = 0, pk, pk2;
    double cost, cost2;
    for (int k = 0; k < KC; k++) d.pins[cuts[k]] = 1;
    if ((rc = stage_profile(d.stage_max, d.stage_rc, NULL, &ub, p, fi, d.pins, e))) goto done;
    for (int t = b0; t < n; t++)
        if (fi->pos[t] < 0 && d.stage_max[t] > d.g0) d.g0 = d.stage_max[t];
    memset(d.pins, 0, (size_t)n);
    int step = (int)sqrt((double)KC) > 1 ? (int)sqrt((double)KC) : 1;
    for (int k = step - 1; k < KC; k += step) d.pins[cuts[k]] = 1;
    if ((rc = stage_profile(d.stage_max, d.stage_rc, NULL, &pk, p, fi, d.pins, e))) goto done;
    if (pk < ub) ub = pk;
    /* Pass 1, cut points: segments never share values, cheap, and its
     * simulated answer bounds pass 2 tightly. */
    d.K = KC;
    d.pos = cuts;
    size_t pred1, pred2;
    if ((rc = ogc_chain_dp(&d, ub, pinned, &pred1, e))) goto done;
    if ((rc = judge(&pk, &cost, p, fi, pinned, e))) goto done;
    *predicted_peak = pred1;
    if (pk < ub) ub = pk;
    /* Pass 2, every forward position: prefixes of the stage order whose
     * boundaries carry skips. Its family contains pass 1's (uncapped), so
     * it only replaces pass 1 when the simulator says it is better. */
    if (KP > KC) {
        d.K = KP;
        d.pos = all;
        if ((rc = ogc_chain_dp(&d, ub, second, &pred2, e))) goto done;
        if (pred2 != SIZE_MAX) {
            if ((rc = judge(&pk2, &cost2, p, fi, second, e))) goto done;
            if (pk2 < pk || (pk2 == pk && cost2 < cost)) {
                memcpy(pinned, second, (size_t)n);
                *predicted_peak = pred2;
            }
        }
    }
done:
    free(cuts);
    free(all);
    free(d.h);
    free(d.own);
    free(d.hc);
    free(d.W);
    free(d.stage_max);
    free(d.stage_rc);
    free(d.pins);
    free(d.span);
    free(d.batch);
    free(d.owner);
    free(d.pins_batch);
    free(second);
    return rc;
}

int rm_strategy_ogc(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    *out = NULL;
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
    if (!(rc = rm_ogc_plan(pins, &predicted, p, &fi, e)) && !(rc = rm_build_from_checkpoints(&s, p, &fi, pins, e)))
        rc = rm_baseline_finish(out, NULL, s, p, "ogc", e);
    free(pins);
    rm_fwd_info_free(&fi);
    return rc;
}
