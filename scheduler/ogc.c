/* Optimal gradient checkpointing after Feng & Huang ("Optimal Gradient
 * Checkpoint Search for Arbitrary Computation Graphs", CVPR 2021): the
 * checkpoint set whose schedule, with every non-checkpointed segment
 * re-forwarded once, has the lowest activation peak.
 *
 * What is implemented. Candidates are the cut points of the forward graph
 * (all forward nodes of a chain). With checkpoints c_1 < ... < c_k taken
 * from them, the shared construction of baseline.c keeps each checkpoint
 * from its compute until its last reader (recomputations included), and a segment
 * (c_i, c_{i+1}] touches nothing outside itself. So every moment of the
 * simulated schedule belongs to one segment (forward stages by index,
 * backward stages by the highest forward value still to be read), and its
 * memory there is the bytes of the earlier checkpoints that are still
 * alive plus a term h(c_i, c_{i+1}) that depends on the segment alone. A
 * checkpoint a followed by b is alive through every later segment when the
 * backward pass reads it or recomputes (a, b) from it (own(a, b) =
 * bytes(a)); otherwise it dies inside (a, b] (own = 0). Moments that read
 * no forward value at all do not depend on the checkpoints. Hence
 *   W(a) = min_b max( h(a, b), own(a, b) + W(b) ),  peak = max(W(start), G0)
 * over a virtual start and end, which is Feng & Huang's chain DP with their
 * analytic segment cost replaced by the simulator's: h(a, b) is measured by
 * simulating the schedule that checkpoints exactly a and b and taking the
 * largest memory over the moments that belong to (a, b]. Recomputation cost
 * (also a per-segment sum) breaks ties. A segment whose members read by
 * the backward pass alone outweigh a known peak (that of checkpointing every
 * candidate, or every sqrt(K)-th) cannot be in an optimum and is not
 * simulated, which keeps the pairs near linear in K on long chains.
 *
 * Where it is exact: the minimum peak over all subsets of the candidates,
 * for training graphs whose backward nodes read only their own layer's
 * inputs and outputs and run in reverse layer order (what the tracer
 * emits); tests/scheduler/test_baselines.c checks it against exhaustive
 * search. Limits: (1) on DAGs it searches checkpoint sets of cut points
 * only; Feng & Huang's general-graph algorithm also splits inside
 * multi-branch regions, which is not implemented. (2) It costs one
 * simulation per pair of candidates not pruned, so above OGC_MAX_CANDIDATES
 * cut points it keeps that many, evenly spaced, and is exact over those. (3) On
 * problem files that break the shape above the decomposition can be off;
 * the result is still simulated and valid, only not proven optimal. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "strategy.h"

#define OGC_MAX_CANDIDATES 64

typedef struct ogc_val {
    long long peak; /* -1: no segment */
    double cost;
    int next;
} ogc_val;

/* Simulates the checkpoint set pins; per stage, the largest memory after a
 * compute and the cost of its recomputations. */
static int stage_profile(long long *stage_max, double *stage_rc, size_t *peak, const rm_problem *p,
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
    rm_schedule_free(s);
    return rc;
}

int rm_ogc_plan(uint8_t *pinned, size_t *predicted_peak, const rm_problem *p, const rm_fwd_info *fi, rm_err *e)
{
    int n = p->n, b0 = fi->b0;
    memset(pinned, 0, (size_t)n);
    *predicted_peak = 0;
    int K = fi->ncuts < OGC_MAX_CANDIDATES ? fi->ncuts : OGC_MAX_CANDIDATES;
    int *cand = malloc(((size_t)K + 1) * sizeof(int));
    long long *h = malloc(((size_t)K + 2) * ((size_t)K + 2) * sizeof(long long));
    double *hc = malloc(((size_t)K + 2) * ((size_t)K + 2) * sizeof(double));
    ogc_val *W = malloc(((size_t)K + 2) * sizeof *W);
    long long *stage_max = malloc((size_t)n * sizeof(long long));
    double *stage_rc = malloc((size_t)n * sizeof(double));
    uint8_t *pins = calloc((size_t)n, 1);
    int rc = RM_OK;
    long long g0 = 0;
    if (!cand || !h || !hc || !W || !stage_max || !stage_rc || !pins) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "ogc: out of memory");
        goto done;
    }
    for (int k = 0; k < K; k++) /* evenly spaced when there are too many */
        cand[k] = fi->cuts[K == fi->ncuts ? k : (int)((long long)k * (fi->ncuts - 1) / (K - 1))];
    /* Moments that read no forward value are the same in every schedule. */
    size_t ub = 0, pk;
    for (int k = 0; k < K; k++) pins[cand[k]] = 1;
    if ((rc = stage_profile(stage_max, stage_rc, &ub, p, fi, pins, e))) goto done;
    for (int t = b0; t < n; t++)
        if (fi->pos[t] < 0 && stage_max[t] > g0) g0 = stage_max[t];
    /* An upper bound on the optimum (every candidate; every sqrt(K)-th) lets
     * the pair loop skip segments that cannot be part of it. */
    memset(pins, 0, (size_t)n);
    int step = (int)sqrt((double)K) > 1 ? (int)sqrt((double)K) : 1;
    for (int k = step - 1; k < K; k += step) pins[cand[k]] = 1;
    if ((rc = stage_profile(stage_max, stage_rc, &pk, p, fi, pins, e))) goto done;
    if (pk < ub) ub = pk;
    memset(pins, 0, (size_t)n);
    /* Boundary index a in 0..K+1: 0 the virtual start, 1..K candidate a-1,
     * K+1 the virtual end; AT(a) is its forward index. */
#define AT(a) ((a) == 0 ? -1 : (a) == K + 1 ? b0 - 1 : cand[(a)-1])
#define IDX(a, b) ((size_t)(a) * ((size_t)K + 2) + (size_t)(b))
    for (int a = 0; a <= K; a++) {
        /* The members of (a, b) that the backward pass reads are all
         * recomputed and held at once when the segment opens: a lower bound
         * on h(a, b) that only grows with b. */
        long long lb = 0;
        int scanned = AT(a);
        for (int b = a + 1; b <= K + 1; b++) {
            int end = b == K + 1 ? b0 : AT(b);
            for (int v = scanned + 1; v < end; v++)
                if (fi->lastuse[v] >= b0) lb += (long long)p->nodes[v].bytes;
            scanned = end - 1;
            if (lb > (long long)ub) {
                for (; b <= K + 1; b++) {
                    h[IDX(a, b)] = LLONG_MAX / 4;
                    hc[IDX(a, b)] = 0;
                }
                break;
            }
            if (a > 0) pins[cand[a - 1]] = 1;
            if (b <= K) pins[cand[b - 1]] = 1;
            rc = stage_profile(stage_max, stage_rc, &pk, p, fi, pins, e);
            if (a > 0) pins[cand[a - 1]] = 0;
            if (b <= K) pins[cand[b - 1]] = 0;
            if (rc) goto done;
            long long hv = 0;
            double cv = 0;
            int lo = AT(a), hi = AT(b);
            for (int t = 0; t < n; t++) {
                int owner = t < b0 ? t : fi->pos[t];
                if (owner > lo && owner <= hi) {
                    if (stage_max[t] > hv) hv = stage_max[t];
                    cv += stage_rc[t];
                }
            }
            h[IDX(a, b)] = hv;
            hc[IDX(a, b)] = cv;
        }
    }
    /* W over boundaries, right to left: what follows b sees checkpoint a on
     * top of its own memory. */
    W[K + 1] = (ogc_val){-1, 0, -1};
    for (int a = K; a >= 0; a--) {
        W[a] = (ogc_val){-1, 0, -1};
        for (int b = a + 1; b <= K + 1; b++) {
            /* Checkpoint a stays resident through the later segments when the
             * backward pass reads it or recomputes (a, b) from it; otherwise
             * it dies within (a, b] and h(a, b) has already counted it. */
            long long own = 0;
            if (a > 0) {
                int c = cand[a - 1], end = b == K + 1 ? b0 : cand[b - 1];
                int useful = fi->lastuse[c] >= b0;
                for (int v = c + 1; v < end && !useful; v++) useful = fi->lastuse[v] >= b0;
                if (useful) own = (long long)p->nodes[c].bytes;
            }
            long long best_pk = h[IDX(a, b)];
            if (W[b].peak >= 0 && own + W[b].peak > best_pk) best_pk = own + W[b].peak;
            double c = hc[IDX(a, b)] + W[b].cost;
            if (W[a].next < 0 || best_pk < W[a].peak || (best_pk == W[a].peak && c < W[a].cost))
                W[a] = (ogc_val){best_pk, c, b};
        }
    }
    for (int a = W[0].next; a >= 1 && a <= K; a = W[a].next) pinned[cand[a - 1]] = 1;
    *predicted_peak = (size_t)(W[0].peak > g0 ? W[0].peak : g0);
#undef AT
#undef IDX
done:
    free(cand);
    free(h);
    free(hc);
    free(W);
    free(stage_max);
    free(stage_rc);
    free(pins);
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
