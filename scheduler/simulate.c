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

static const char *nm(const rm_problem *p, int i)
{
    return p->nodes[i].name[0] ? p->nodes[i].name : "?";
}

/* The replay's check of S: resident[] against S[t] at every stage start,
 * kept as a count of the nodes where the two differ so that each stage costs
 * only its own operations and runs. */
typedef struct replay {
    uint8_t *resident, *in_s;
    long differ;
} replay;

static void set_flag(replay *r, uint8_t *flags, int v, uint8_t val)
{
    r->differ -= r->resident[v] != r->in_s[v];
    flags[v] = val;
    r->differ += r->resident[v] != r->in_s[v];
}

/* Moves S from stage `from` to stage `to` (from < to): runs ending before
 * `to` leave, runs starting by it enter. */
static void advance_s(replay *r, const rm_schedule *s, const rm_run_index *x, int from, int to)
{
    /* S names positions in s's order; the operations name p's nodes. */
    for (int t = from + 1; t <= to; t++) {
        if (t >= 1)
            for (int k = x->end_at[t - 1]; k < x->end_at[t]; k++)
                set_flag(r, r->in_s, rm_schedule_node_at(s, s->ret[x->ends[k]].node), 0);
        for (int k = x->start_at[t]; k < x->start_at[t + 1]; k++)
            set_flag(r, r->in_s, rm_schedule_node_at(s, s->ret[x->starts[k]].node), 1);
    }
}

int rm_simulate_ops(rm_sim_result *out, size_t *mem_after, const rm_problem *p, const rm_schedule *s, const rm_op *ops,
                    int nops, rm_err *e)
{
    memset(out, 0, sizeof *out);
    out->peak_stage = out->peak_node = -1;
    int n = p->n;
    replay rp = {calloc((size_t)n, 1), calloc((size_t)n, 1), 0};
    rm_run_index x = {0};
    int rc =
        rp.resident && rp.in_s ? rm_run_index_init(&x, s, e) : rm_errorf(e, RM_ERR_NOMEM, "simulate: out of memory");
    int stage = -1;
    size_t mem = 0;
    long computes = 0;
    for (int o = 0; o < nops && !rc; o++) {
        const rm_op *op = &ops[o];
        if (op->node < 0 || op->node >= n || op->stage < 0 || op->stage >= n || op->stage < stage) {
            rc = rm_errorf(e, RM_ERR_INVALID, "simulate: operation %d (node %d, stage %d) is out of range or order", o,
                           op->node, op->stage);
            goto done;
        }
        if (op->stage != stage) {
            advance_s(&rp, s, &x, stage, op->stage);
            stage = op->stage;
            if (rp.differ)
                for (int v = 0; v < n; v++)
                    if (rp.resident[v] != rp.in_s[v]) {
                        rc = rm_errorf(e, RM_ERR_INVALID,
                                       "simulate: at the start of stage %d node %d (%s) is %s but S says %d", stage, v,
                                       nm(p, v), rp.resident[v] ? "resident" : "not resident", rp.in_s[v]);
                        goto done;
                    }
        }
        int k = op->node;
        if (op->kind == RM_OP_COMPUTE) {
            const rm_problem_node *nd = &p->nodes[k];
            for (int d = 0; d < nd->ndeps; d++)
                if (!rp.resident[nd->deps[d]]) {
                    rc = rm_errorf(e, RM_ERR_INVALID,
                                   "simulate: stage %d computes node %d (%s) but its input %d (%s) is not resident",
                                   stage, k, nm(p, k), nd->deps[d], nm(p, nd->deps[d]));
                    goto done;
                }
            if (rp.resident[k]) {
                rc = rm_errorf(e, RM_ERR_INVALID, "simulate: stage %d computes node %d (%s), which is already resident",
                               stage, k, nm(p, k));
                goto done;
            }
            set_flag(&rp, rp.resident, k, 1);
            mem += nd->bytes;
            out->cost += nd->cost;
            computes++;
            if (mem > out->peak_bytes || out->peak_node < 0) {
                out->peak_bytes = mem;
                out->peak_stage = stage;
                out->peak_node = k;
            }
        } else if (op->kind == RM_OP_FREE) {
            if (!rp.resident[k]) {
                rc = rm_errorf(e, RM_ERR_INVALID, "simulate: stage %d frees node %d (%s), which is not resident", stage,
                               k, nm(p, k));
                goto done;
            }
            set_flag(&rp, rp.resident, k, 0);
            mem -= p->nodes[k].bytes;
        } else {
            rc = rm_errorf(e, RM_ERR_INVALID, "simulate: operation %d has an unknown kind %d", o, (int)op->kind);
            goto done;
        }
        if (mem_after) mem_after[o] = mem;
    }
    if (!rc && (stage != n - 1 || mem != 0))
        rc = rm_errorf(e, RM_ERR_INVALID, "simulate: the operations end in stage %d with %zu bytes still resident",
                       stage, mem);
    out->recomputations = computes - n;
done:
    free(rp.resident);
    free(rp.in_s);
    rm_run_index_free(&x);
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

int rm_simulate_rs(rm_sim_result *out, const rm_problem *p, const rm_rs *d, rm_err *e)
{
    memset(out, 0, sizeof *out);
    rm_schedule *s;
    int rc = rm_schedule_from_rs(&s, d, e);
    if (rc) return rc;
    rc = rm_simulate(out, p, s, e);
    rm_schedule_free(s);
    return rc;
}

int rm_sim_fits(const rm_problem *p, const rm_sim_result *r)
{
    return r->peak_bytes <= rm_problem_activation_budget(p) && (p->budget == 0 || p->fixed_bytes <= p->budget) &&
           (p->max_cost <= 0 || r->cost <= p->max_cost);
}
