/* The problem's and the schedule's reports (see report.h): each fact
 * computed here, once, and rendered by everyone else. */
#include "report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strategy.h"
#include "utf8.h"

/* ---- A problem ---- */

int rm_problem_report_of(rm_problem_report *out, const rm_problem *p, rm_err *e)
{
    memset(out, 0, sizeof *out);
    /* Checkpoint-all's peak and cost do not depend on the budget: simulated
     * as it is, it answers for every budget at once. */
    rm_schedule *s = NULL;
    int rc = rm_checkpoint_all_build(&s, p, e);
    if (!rc) rc = rm_simulate(&out->noremat, p, s, e);
    rm_schedule_free(s);
    if (rc) return rc;
    out->noremat_total = p->fixed_bytes + out->noremat.peak_bytes;
    out->lower_bound = rm_problem_peak_lower_bound_at(p, &out->lb_node);
    out->base_cost = rm_problem_base_cost(p);
    return RM_OK;
}

size_t rm_budget_percent_bytes(double pct, size_t noremat_total)
{
    double v = floor((double)noremat_total * pct / 100.0);
    if (v < 1) return 1;
    if (v >= (double)RM_PROBLEM_MAX_BYTES) return RM_PROBLEM_MAX_BYTES;
    return (size_t)v;
}

rm_budget_verdict rm_budget_verdict_of(const rm_problem *p, const rm_problem_report *r)
{
    if (p->max_cost > 0 && r->base_cost > p->max_cost) return RM_BUDGET_OVER_CAP;
    if (p->budget == 0) return RM_BUDGET_UNLIMITED;
    if (p->fixed_bytes > p->budget || r->lower_bound > p->budget - p->fixed_bytes)
        return p->budget <= p->fixed_bytes ? RM_BUDGET_BELOW_FIXED : RM_BUDGET_BELOW_BOUND;
    /* rm_sim_fits: within the activation budget and the compute cap. */
    if (r->noremat_total && rm_sim_fits(p, &r->noremat)) return RM_BUDGET_FITS;
    return RM_BUDGET_NEEDS_REMAT;
}

static const char *plain_bytes(char *buf, size_t len, double bytes)
{
    snprintf(buf, len, "%.0f bytes", bytes);
    return buf;
}

/* x and y as fmt writes them, each followed by its exact bytes when they
 * would otherwise read the same ("10.00 KiB is below ... 10.00 KiB"). */
static void bytes_pair(char *a, char *b, size_t len, size_t x, size_t y, rm_bytes_fn fmt)
{
    fmt(a, len, (double)x);
    fmt(b, len, (double)y);
    if (x == y || strcmp(a, b)) return;
    size_t n = strlen(a), m = strlen(b);
    snprintf(a + n, len - n, " (%zu bytes)", x);
    snprintf(b + m, len - m, " (%zu bytes)", y);
}

const char *rm_budget_reason(char *buf, size_t len, rm_budget_verdict v, const rm_problem *p,
                             const rm_problem_report *r, rm_bytes_fn fmt)
{
    char x[64], y[64], z[64], w[64], u[64];
    if (!fmt) fmt = plain_bytes;
    size_t budget = p->budget, fixed = p->fixed_bytes, need = fixed + r->lower_bound;
    buf[0] = '\0';
    if (v == RM_BUDGET_OVER_CAP) {
        snprintf(buf, len, "the compute cap %.6g is below %.6g, every node once", p->max_cost, r->base_cost);
    } else if (v == RM_BUDGET_BELOW_FIXED && budget == fixed) {
        snprintf(buf, len,
                 "the budget %s is exactly the fixed bytes (all that training holds besides activations), leaving "
                 "nothing for activations; no schedule exists",
                 fmt(x, sizeof x, (double)budget));
    } else if (v == RM_BUDGET_BELOW_FIXED) {
        bytes_pair(x, y, sizeof x, budget, fixed, fmt);
        snprintf(buf, len,
                 "the budget %s does not even hold the fixed bytes %s (all that training holds besides "
                 "activations); no schedule exists",
                 x, y);
    } else if (v == RM_BUDGET_BELOW_BOUND) {
        bytes_pair(x, y, sizeof x, budget, need, fmt);
        size_t o = (size_t)snprintf(buf, len,
                                    "the budget %s is below the smallest memory any schedule needs (the trivial lower "
                                    "bound), %s = fixed %s + %s for computing '%s' with its inputs resident",
                                    x, y, fmt(z, sizeof z, (double)fixed), fmt(w, sizeof w, (double)r->lower_bound),
                                    rm_name_shown_of(p->nodes[r->lb_node].name).s);
        if (o < len && r->noremat_total)
            o += (size_t)snprintf(buf + o, len - o, " (%.1f%% of the no-remat peak %s)",
                                  100.0 * (double)need / (double)r->noremat_total,
                                  fmt(u, sizeof u, (double)r->noremat_total));
        if (o < len) snprintf(buf + o, len - o, "; no schedule exists");
    }
    return buf;
}

int rm_problem_check_budget_of(const rm_problem *p, const rm_problem_report *r, const char *who, rm_err *e)
{
    rm_problem_report local;
    if (!r) {
        /* The solvers' own check: the bound and the base cost, no simulation. */
        memset(&local, 0, sizeof local);
        local.lower_bound = rm_problem_peak_lower_bound_at(p, &local.lb_node);
        local.base_cost = p->max_cost > 0 ? rm_problem_base_cost(p) : 0;
        r = &local;
    }
    rm_budget_verdict v = rm_budget_verdict_of(p, r);
    if (rm_budget_feasible(v)) return RM_OK;
    char why[RM_ERR_MSG_LEN];
    return rm_errorf(e, RM_ERR_INFEASIBLE, "%s: %s", who, rm_budget_reason(why, sizeof why, v, p, r, NULL));
}

int rm_problem_check_budget(const rm_problem *p, const char *who, rm_err *e)
{
    return rm_problem_check_budget_of(p, NULL, who, e);
}

/* ---- A schedule ---- */

void rm_schedule_report_free(rm_schedule_report *r)
{
    free(r->ops);
    free(r->mem);
    free(r->stage_max);
    free(r->stage_node);
    rm_plan_free(r->arena);
    memset(r, 0, sizeof *r);
    r->peak_op = r->backward_op = -1;
}

rm_plan *rm_schedule_report_take_arena(rm_schedule_report *r)
{
    rm_plan *pl = r->arena;
    r->arena = NULL;
    return pl;
}

int rm_schedule_report_of(rm_schedule_report *out, const rm_problem *p, const rm_schedule *s, const rm_graph *g,
                          unsigned what, rm_err *e)
{
    memset(out, 0, sizeof *out);
    out->peak_op = out->backward_op = -1;
    out->n = p->n;
    int rc = rm_schedule_ops(&out->ops, &out->nops, p, s, e);
    if (rc) return rc;
    if (s->order && !(out->stage_node = malloc((size_t)p->n * sizeof *out->stage_node))) {
        rm_schedule_report_free(out);
        return rm_errorf(e, RM_ERR_NOMEM, "report: out of memory");
    }
    if (s->order) memcpy(out->stage_node, s->order, (size_t)p->n * sizeof *out->stage_node);
    out->mem = malloc((size_t)(out->nops ? out->nops : 1) * sizeof *out->mem);
    out->stage_max = calloc((size_t)(p->n ? p->n : 1), sizeof *out->stage_max);
    if (!out->mem || !out->stage_max) rc = rm_errorf(e, RM_ERR_NOMEM, "report: out of memory");
    if (!rc) rc = rm_simulate_ops(&out->sim, out->mem, p, s, out->ops, out->nops, e);
    if (rc) {
        rm_schedule_report_free(out);
        return rc;
    }
    for (int k = 0; k < out->nops; k++) {
        const rm_op *op = &out->ops[k];
        if (out->mem[k] > out->stage_max[op->stage]) out->stage_max[op->stage] = out->mem[k];
        if (out->backward_op < 0 && p->nodes[rm_report_stage_node(out, op->stage)].tag == RM_TAG_BACKWARD)
            out->backward_op = k;
        if (op->kind != RM_OP_COMPUTE) continue;
        out->ncomputes++;
        out->nrecomputes += rm_op_is_recompute(out, op);
        if (out->peak_op < 0 && out->mem[k] == out->sim.peak_bytes) out->peak_op = k;
    }
    out->recomputed_nodes = rm_schedule_recomputed_nodes(s);
    rm_schedule_report_arena(out, p, g, what);
    return RM_OK;
}

void rm_schedule_report_arena(rm_schedule_report *r, const rm_problem *p, const rm_graph *g, unsigned what)
{
    if (!(what & (RM_REPORT_ARENA | RM_REPORT_ARENA_SHOWN)) || r->arena) return;
    rm_err ae = {RM_OK, ""};
    if (!(what & RM_REPORT_ARENA) && r->ncomputes > RM_REPORT_ARENA_MAX_BUFFERS)
        snprintf(r->arena_note, sizeof r->arena_note, "%d buffers (placing more than %d takes minutes)", r->ncomputes,
                 RM_REPORT_ARENA_MAX_BUFFERS);
    else if ((r->arena_code = rm_schedule_plan_ops(&r->arena, p, r->ops, r->nops, g, &ae)))
        snprintf(r->arena_note, sizeof r->arena_note, "%s", ae.msg);
}
