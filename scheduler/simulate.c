/* The exact simulator: replays rm_schedule_ops, exactly as the executor will,
 * and measures cost and activation peak. The rules (what is freed when) live
 * only in rm_schedule_ops; the replay re-checks the physical invariants an
 * executor would trip over (reading a value that is not resident, allocating
 * one twice, the resident set at each stage start differing from S), so a
 * bug in the op generator cannot hide behind a plausible peak. */
#include "simulate.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *nm(const rm_problem *p, int i) { return p->nodes[i].name[0] ? p->nodes[i].name : "?"; }

int rm_simulate_ops(rm_sim_result *out, size_t *mem_after, const rm_problem *p, const rm_schedule *s, const rm_op *ops,
                    int nops, rm_err *e)
{
    memset(out, 0, sizeof *out);
    out->peak_stage = out->peak_node = -1;
    int n = p->n;
    uint8_t *resident = calloc((size_t)n, 1);
    if (!resident) return rm_errorf(e, RM_ERR_NOMEM, "simulate: out of memory");
    int rc = RM_OK, stage = -1;
    size_t mem = 0;
    long computes = 0;
    for (int o = 0; o < nops; o++) {
        const rm_op *op = &ops[o];
        if (op->node < 0 || op->node >= n || op->stage < 0 || op->stage >= n || op->stage < stage) {
            rc = rm_errorf(e, RM_ERR_INVALID, "simulate: operation %d (node %d, stage %d) is out of range or order", o,
                           op->node, op->stage);
            goto done;
        }
        if (op->stage != stage) {
            stage = op->stage;
            const uint8_t *S = &s->S[(size_t)stage * (size_t)n];
            if (memcmp(resident, S, (size_t)n) != 0)
                for (int v = 0; v < n; v++)
                    if (resident[v] != S[v]) {
                        rc = rm_errorf(e, RM_ERR_INVALID,
                                       "simulate: at the start of stage %d node %d (%s) is %s but S says %d", stage, v,
                                       nm(p, v), resident[v] ? "resident" : "not resident", S[v]);
                        goto done;
                    }
        }
        int k = op->node;
        if (op->kind == RM_OP_COMPUTE) {
            const rm_problem_node *nd = &p->nodes[k];
            for (int d = 0; d < nd->ndeps; d++)
                if (!resident[nd->deps[d]]) {
                    rc = rm_errorf(e, RM_ERR_INVALID,
                                   "simulate: stage %d computes node %d (%s) but its input %d (%s) is not resident",
                                   stage, k, nm(p, k), nd->deps[d], nm(p, nd->deps[d]));
                    goto done;
                }
            if (resident[k]) {
                rc = rm_errorf(e, RM_ERR_INVALID, "simulate: stage %d computes node %d (%s), which is already resident",
                               stage, k, nm(p, k));
                goto done;
            }
            resident[k] = 1;
            mem += nd->bytes;
            out->cost += nd->cost;
            computes++;
            if (mem > out->peak_bytes || out->peak_node < 0) {
                out->peak_bytes = mem;
                out->peak_stage = stage;
                out->peak_node = k;
            }
        } else if (op->kind == RM_OP_FREE) {
            if (!resident[k]) {
                rc = rm_errorf(e, RM_ERR_INVALID, "simulate: stage %d frees node %d (%s), which is not resident", stage,
                               k, nm(p, k));
                goto done;
            }
            resident[k] = 0;
            mem -= p->nodes[k].bytes;
        } else {
            rc = rm_errorf(e, RM_ERR_INVALID, "simulate: operation %d has an unknown kind %d", o, (int)op->kind);
            goto done;
        }
        if (mem_after) mem_after[o] = mem;
    }
    if (stage != n - 1 || mem != 0)
        rc = rm_errorf(e, RM_ERR_INVALID, "simulate: the operations end in stage %d with %zu bytes still resident",
                       stage, mem);
    out->recomputations = computes - n;
done:
    free(resident);
    return rc;
}

int rm_simulate(rm_sim_result *out, const rm_problem *p, const rm_schedule *s, rm_err *e)
{
    memset(out, 0, sizeof *out);
    rm_op *ops;
    int nops;
    int rc = rm_schedule_ops(&ops, &nops, p, s, e);
    if (rc) return rc;
    rc = rm_simulate_ops(out, NULL, p, s, ops, nops, e);
    free(ops);
    return rc;
}

int rm_sim_fits(const rm_problem *p, const rm_sim_result *r)
{
    return r->peak_bytes <= rm_problem_activation_budget(p) && (p->budget == 0 || p->fixed_bytes <= p->budget) &&
           (p->max_cost <= 0 || r->cost <= p->max_cost);
}
