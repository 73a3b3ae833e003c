/* The text of `remat explain` (see explain.h), written to any stream so
 * that `remat explain` prints it and `remat lesson` embeds it in its page
 * from the same code. */
#include "explain.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "simulate.h"
#include "strategy.h"
#include "utf8.h"

/* Lines of recomputation detail before the rest is summarised. */
#define MAX_EVENTS 30

typedef struct explain_ctx {
    FILE *f; /* where the text goes */
    const rm_cli_problem *cp;
    const rm_problem *p;
    const rm_schedule *s;
    const rm_schedule_report *r; /* s's: its operations, timeline, peak operation */
} explain_ctx;

/* Node i's name as printed (base/utf8.h): a problem file's or an ONNX
 * model's names are shown escaped, never raw. Valid until the end of the
 * full expression: nm(p, i).s inside one fprintf. */
static rm_name_shown nm(const rm_problem *p, int i)
{
    return rm_name_shown_of(p->nodes[i].name[0] ? p->nodes[i].name : "?");
}

static int reads(const rm_problem *p, int k, int i)
{
    for (int d = 0; d < p->nodes[k].ndeps; d++)
        if (p->nodes[k].deps[d] == i) return 1;
    return 0;
}

/* One recomputation: value i computed again in stage t (not its own). */
static void explain_event(const explain_ctx *x, int i, int t, int compute_op)
{
    const rm_problem *p = x->p;
    const rm_schedule *s = x->s;
    char a[32], b[32], c[32], cost[32];
    size_t act = rm_problem_activation_budget(p);

    /* The consumers this stage recomputes it for. */
    char users[256] = "";
    size_t ul = 0;
    int nusers = 0;
    for (int k = i + 1; k <= t; k++) {
        if (!rm_schedule_R(s, t, k) || !reads(p, k, i)) continue;
        if (nusers < 3)
            ul += (size_t)snprintf(users + ul, ul < sizeof users ? sizeof users - ul : 0, "%s%s", nusers ? ", " : "",
                                   nm(p, k).s);
        nusers++;
    }
    if (nusers > 3 && ul < sizeof users) snprintf(users + ul, sizeof users - ul, " and %d more", nusers - 3);

    /* Where it was last in memory before: the free that dropped it. */
    int free_op = -1;
    for (int k = compute_op - 1; k >= 0; k--)
        if (x->r->ops[k].node == i && x->r->ops[k].kind == RM_OP_FREE) {
            free_op = k;
            break;
        }
    int dropped = free_op >= 0 ? x->r->ops[free_op].stage : -1;

    fprintf(x->f, "  %s (%s) ", nm(p, i).s, rm_cli_bytes(a, sizeof a, (double)p->nodes[i].bytes));
    if (dropped >= 0)
        fprintf(x->f, "is dropped in stage %d and recomputed in stage %d", dropped, t);
    else
        fprintf(x->f, "is recomputed in stage %d", t);
    fprintf(x->f, " for %s", nusers ? users : nm(p, t).s);
    if (p->nodes[i].cost == 0)
        fprintf(x->f, ", at no cost (its cost is 0)");
    else
        fprintf(x->f, ", for %s", rm_cli_cost(cost, sizeof cost, p->nodes[i].cost, x->cp->flops));
    if (free_op < 0 || compute_op - free_op <= 1) {
        fprintf(x->f, ".\n");
        return;
    }
    /* Keeping it would add its bytes to every point in between. */
    int busiest = free_op + 1;
    for (int k = free_op + 1; k < compute_op; k++)
        if (x->r->mem[k] > x->r->mem[busiest]) busiest = k;
    size_t with = x->r->mem[busiest] + p->nodes[i].bytes;
    fprintf(x->f,
            ".\n      Kept instead, it would add %s to every point in between; the busiest, computing '%s'\n"
            "      in stage %d, would reach %s",
            a, nm(p, x->r->ops[busiest].node).s, x->r->ops[busiest].stage, rm_cli_bytes(b, sizeof b, (double)with));
    if (act == SIZE_MAX)
        fprintf(x->f, ".\n");
    else if (with > act)
        fprintf(x->f, ", over the activation budget %s: the drop is forced.\n", rm_cli_bytes(c, sizeof c, (double)act));
    else
        fprintf(x->f,
                ", within the activation budget %s:\n"
                "      alone it would fit; it is dropped to make room together with the others%s.\n",
                rm_cli_bytes(c, sizeof c, (double)act), p->nodes[i].cost == 0 ? " (and costs nothing)" : "");
}

static void explain_recomputations(const explain_ctx *x)
{
    const rm_problem *p = x->p;
    fprintf(x->f, "\nWhat is recomputed, and why\n");
    if (x->r->sim.recomputations == 0) {
        fprintf(x->f, "  Nothing: every value is computed once and kept until its last use, as without\n"
                      "  rematerialization; the budget holds the no-remat peak.\n");
        return;
    }
    int shown = 0;
    long extra_events = 0;
    for (int k = 0; k < x->r->nops; k++) {
        const rm_op *op = &x->r->ops[k];
        if (!rm_op_is_recompute(x->r, op)) continue;
        if (shown < MAX_EVENTS) {
            explain_event(x, op->node, op->stage, k);
            shown++;
        } else {
            extra_events++;
        }
    }
    if (extra_events)
        fprintf(x->f, "  ... and %ld more recomputations (`remat plan --svg` draws them all).\n", extra_events);

    /* Per node: how often, and what it costs. */
    fprintf(x->f, "\n  In total, per value (times recomputed, extra cost):\n");
    int n = p->n, lines = 0, more = 0;
    int *counts = malloc((size_t)n * sizeof *counts);
    if (!counts) {
        fprintf(x->f, "    (out of memory)\n");
        return;
    }
    rm_schedule_compute_counts(x->s, counts);
    for (int i = 0; i < n; i++) {
        int times = counts[i] - 1;
        if (!times) continue;
        if (lines++ >= 40) {
            more++;
            continue;
        }
        char a[32], b[32];
        fprintf(x->f, "    %-28s %2dx  %s  (%s each)\n", nm(p, i).s, times,
                rm_cli_cost(a, sizeof a, times * p->nodes[i].cost, x->cp->flops),
                rm_cli_bytes(b, sizeof b, (double)p->nodes[i].bytes));
    }
    if (more) fprintf(x->f, "    ... and %d more values\n", more);
    free(counts);
}

static void explain_peak(const explain_ctx *x)
{
    const rm_problem *p = x->p;
    int n = p->n;
    int kp = x->r->peak_op;
    if (kp < 0) return;
    /* The resident set at the peak: replay up to it. */
    unsigned char *res = calloc((size_t)n, 1);
    int *order = malloc((size_t)n * sizeof *order);
    if (!res || !order) {
        free(res);
        free(order);
        return;
    }
    for (int k = 0; k <= kp; k++) res[x->r->ops[k].node] = x->r->ops[k].kind == RM_OP_COMPUTE;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (res[i]) order[m++] = i;
    for (int a = 1; a < m; a++) /* by bytes, largest first (m is small) */
        for (int b = a; b > 0 && p->nodes[order[b]].bytes > p->nodes[order[b - 1]].bytes; b--) {
            int tmp = order[b];
            order[b] = order[b - 1];
            order[b - 1] = tmp;
        }
    int st = x->r->ops[kp].stage;
    char a[32], b[32], c[32];
    fprintf(x->f, "\nWhere the peak is\n");
    fprintf(x->f, "  %s = fixed %s + %s of activations,\n",
            rm_cli_bytes(a, sizeof a, (double)(p->fixed_bytes + x->r->sim.peak_bytes)),
            rm_cli_bytes(b, sizeof b, (double)p->fixed_bytes), rm_cli_bytes(c, sizeof c, (double)x->r->sim.peak_bytes));
    if (x->r->ops[kp].node == st)
        fprintf(x->f, "  reached while stage %d computes '%s'.\n", st, nm(p, st).s);
    else
        fprintf(x->f, "  reached while stage %d ('%s') recomputes '%s'.\n", st, nm(p, st).s,
                nm(p, x->r->ops[kp].node).s);
    fprintf(x->f, "  Resident at that moment (%d values):\n", m);
    for (int j = 0; j < m && j < 8; j++) {
        int i = order[j];
        const char *why = i == x->r->ops[kp].node                 ? "just computed"
                          : rm_schedule_S(x->s, st, i)            ? "kept from an earlier stage"
                          : rm_schedule_R(x->s, st, i) && i != st ? "recomputed in this stage"
                                                                  : "computed in this stage";
        fprintf(x->f, "    %-28s %12s  %s\n", nm(p, i).s, rm_cli_bytes(a, sizeof a, (double)p->nodes[i].bytes), why);
    }
    if (m > 8) {
        size_t rest = 0;
        for (int j = 8; j < m; j++) rest += p->nodes[order[j]].bytes;
        fprintf(x->f, "    ... and %d smaller values, %s together\n", m - 8, rm_cli_bytes(a, sizeof a, (double)rest));
    }
    free(res);
    free(order);
}

/* What a schedule with its own order (order, n entries) moved, and what
 * the order alone saved: the no-remat peak in it against the problem's.
 * sh: the schedule shown in its order (the problem renumbered in it). */
static void explain_order(FILE *f, const rm_cli_problem *cp, const rm_cli_shown *sh, const int *order)
{
    const rm_problem *p = cp->p;
    char a[32], b[32];
    fprintf(f, "\nOrder\n");
    fprintf(f,
            "  This schedule computes the nodes in its own order (any order in which every node comes after its\n"
            "  inputs is valid): %d of the %d nodes are first computed at another stage than in the problem's\n"
            "  order. Below, stage t is the t-th node of that order.\n",
            sh->moved, p->n);
    rm_sim_result r;
    rm_schedule *all = NULL;
    rm_err e = {RM_OK, ""};
    size_t before = cp->facts.noremat.peak_bytes;
    if (!rm_checkpoint_all_build(&all, sh->p, &e) && !rm_simulate(&r, sh->p, all, &e)) {
        fprintf(f, "  Without rematerialization this order peaks at %s of activations, the problem's at %s",
                rm_cli_bytes(a, sizeof a, (double)r.peak_bytes), rm_cli_bytes(b, sizeof b, (double)before));
        if (r.peak_bytes < before)
            fprintf(f, ":\n  the order alone saves %s (%.1f%%).\n",
                    rm_cli_bytes(a, sizeof a, (double)(before - r.peak_bytes)),
                    100.0 * (double)(before - r.peak_bytes) / (double)before);
        else
            fprintf(f, ".\n");
    }
    rm_schedule_free(all);
    /* The nodes that moved furthest (the first of equals), five at most:
     * five passes over the order. */
    int last = -1, lastd = p->n + 1;
    for (int j = 0; j < 5; j++) {
        int at = -1, d = 0;
        for (int t = 0; t < p->n; t++) {
            int dt = abs(t - order[t]);
            if (dt > 0 && (dt < lastd || (dt == lastd && t > last)) && dt > d) at = t, d = dt;
        }
        if (at < 0) break;
        fprintf(f, "    %-28s stage %d (the problem's order: %d)\n", rm_name_shown_of(p->nodes[order[at]].name).s, at,
                order[at]);
        last = at, lastd = d;
    }
}

void rm_explain_write_schedule(FILE *f, const rm_cli_problem *cp, const rm_schedule *s0, const rm_schedule_report *r0,
                               const rm_strategy_info *st, const rm_strategy_stats *stats)
{
    rm_cli_shown sh; /* in the schedule's own order, where it has one */
    rm_err se = {RM_OK, ""};
    if (rm_cli_shown_of(&sh, cp->p, s0, r0, 0, &se)) {
        fprintf(f, "\n(the schedule could not be explained: %s)\n", se.msg);
        return;
    }
    const rm_problem *p = sh.p;
    const rm_schedule *s = sh.s;
    const rm_schedule_report *r = sh.rep;
    explain_ctx x = {f, cp, p, s, r};
    char a[32], b[32], c[32];
    fprintf(f, "\nThe schedule: %s (%s), %s in %.1f s\n", st->name, st->title, rm_status_name(stats->status),
            stats->seconds);
    if (stats->source && strcmp(stats->source, st->name))
        fprintf(f, "It is the schedule %s found: %s found nothing cheaper.\n", stats->source, st->name);
    int nf = 0, nb = 0;
    for (int i = 0; i < p->n; i++) nf += p->nodes[i].tag == RM_TAG_FORWARD, nb += p->nodes[i].tag == RM_TAG_BACKWARD;
    fprintf(f,
            "  The step runs in %d stages; stage t computes node t (%d forward, then the loss, then %d backward),\n"
            "  and may first recompute earlier values from what it kept in memory.\n",
            p->n, nf, nb);
    double extra = r->sim.cost - cp->facts.base_cost;
    fprintf(f, "  Cost %s = checkpoint-all %s + %s of recomputation (%+.2f%%).\n",
            rm_cli_cost(a, sizeof a, r->sim.cost, cp->flops), rm_cli_cost(b, sizeof b, cp->facts.base_cost, cp->flops),
            rm_cli_cost(c, sizeof c, extra, cp->flops), rm_overhead_pct(r->sim.cost, cp->facts.base_cost));
    if (stats->has_bound && stats->bound_trivial && s0->order) {
        /* best may have solved the LP relaxation, but of the problem's order. */
        fprintf(f,
                "  No LP bound holds in this schedule's own order (an LP relaxation bounds the problem's order\n"
                "  only); no schedule costs less than checkpoint-all (every node once), so the optimum is at most\n"
                "  %.2f%% of this cost below it (the gap).\n",
                100.0 * stats->gap);
    } else if (stats->has_bound && stats->bound_trivial) {
        fprintf(f,
                "  The LP relaxation was not solved here; no schedule costs less than checkpoint-all (every\n"
                "  node once), so the optimum is at most %.2f%% of this cost below it (the gap).\n",
                100.0 * stats->gap);
    } else if (stats->has_bound) {
        fprintf(f, "  The LP bound proves no schedule costs less than checkpoint-all %+.2f%%",
                rm_overhead_pct(stats->lp_bound, cp->facts.base_cost));
        if (stats->status == RM_STATUS_OPTIMAL)
            fprintf(f, ";\n  this one is optimal.\n");
        else
            fprintf(f,
                    ";\n  the optimum is at most %.2f%% of this cost below it (the gap: cost minus the proved\n"
                    "  bound, over the cost; docs/formulation.md).\n",
                    100.0 * stats->gap);
    }
    if (s0->order) explain_order(f, cp, &sh, s0->order);
    explain_recomputations(&x);
    explain_peak(&x);
    fprintf(f, "\nOverhead\n");
    char d[32];
    if (r->sim.recomputations == 0)
        fprintf(f, "  None: the step costs what it costs without rematerialization, and peaks at %s.\n",
                rm_cli_bytes(a, sizeof a, (double)(p->fixed_bytes + r->sim.peak_bytes)));
    else
        fprintf(f,
                "  %ld recomputation%s add%s %s to the %s every training step needs anyway:\n"
                "  %.2f%% more compute, for a peak of %s instead of %s (%.1f%% of it).\n",
                r->sim.recomputations, r->sim.recomputations == 1 ? "" : "s", r->sim.recomputations == 1 ? "s" : "",
                rm_cli_cost(a, sizeof a, extra, cp->flops), rm_cli_cost(b, sizeof b, cp->facts.base_cost, cp->flops),
                rm_overhead_pct(r->sim.cost, cp->facts.base_cost),
                rm_cli_bytes(c, sizeof c, (double)(p->fixed_bytes + r->sim.peak_bytes)),
                rm_cli_bytes(d, sizeof d, (double)cp->facts.noremat_total),
                100.0 * (double)(p->fixed_bytes + r->sim.peak_bytes) / (double)cp->facts.noremat_total);
    rm_cli_shown_free(&sh);
}

void rm_explain_write_budget(FILE *f, const rm_cli_problem *cp, const rm_cli_budget *bud)
{
    const rm_problem *p = cp->p;
    char a[32], b[32], c[32];
    double ref = (double)cp->facts.noremat_total;
    size_t lbt = p->fixed_bytes + cp->facts.lower_bound;
    fprintf(f, "remat explain: %s\n\n", cp->what);
    fprintf(f, "What the budget means\n");
    fprintf(f, "  The device budget is %s", rm_cli_bytes(a, sizeof a, (double)p->budget));
    char pct[160];
    if (bud->percent) fprintf(f, " (%s)", rm_cli_budget_pct(pct, sizeof pct, bud, p->budget, cp->facts.noremat_total));
    fprintf(f,
            ".\n  %s of it is fixed: it stays resident the whole step, outside the activations. That leaves\n"
            "  %s for activations.\n",
            rm_cli_bytes(b, sizeof b, (double)p->fixed_bytes),
            rm_cli_bytes(c, sizeof c, (double)(p->budget - p->fixed_bytes)));
    if (cp->has_footprint) {
        fprintf(f, "  ");
        rm_cli_print_footprint(f, &cp->fp, &cp->optim);
    }
    fprintf(f,
            "  Without rematerialization (every value kept until its last use) the step peaks at %s =\n"
            "  fixed + %s",
            rm_cli_bytes(a, sizeof a, ref), rm_cli_bytes(b, sizeof b, (double)cp->facts.noremat.peak_bytes));
    if (cp->facts.noremat.peak_node >= 0 && cp->facts.noremat.peak_node == cp->facts.noremat.peak_stage)
        fprintf(f, ", computing '%s' (stage %d)", nm(p, cp->facts.noremat.peak_node).s, cp->facts.noremat.peak_stage);
    else if (cp->facts.noremat.peak_node >= 0)
        fprintf(f, ", while stage %d ('%s') computes '%s'", cp->facts.noremat.peak_stage,
                nm(p, cp->facts.noremat.peak_stage).s, nm(p, cp->facts.noremat.peak_node).s);
    fprintf(f, ".\n");
    if (rm_budget_verdict_of(p, &cp->facts) == RM_BUDGET_FITS)
        fprintf(f, "  The budget holds that peak (%.1f%% of the budget): nothing needs recomputing.\n",
                100.0 * ref / (double)p->budget);
    else
        fprintf(f, "  The budget is %.1f%% of it: %s of activations must be freed at the peak and recomputed later.\n",
                100.0 * (double)p->budget / ref,
                rm_cli_bytes(a, sizeof a, (double)(cp->facts.noremat_total - p->budget)));
    const rm_problem_node *nd = &p->nodes[cp->facts.lb_node];
    fprintf(f,
            "  No schedule can go below %s (%.1f%% of the no-remat peak): computing '%s' needs its\n"
            "  output (%s) and its %d input%s resident at once, %s of activations.\n",
            rm_cli_bytes(a, sizeof a, (double)lbt), 100.0 * (double)lbt / ref, nm(p, cp->facts.lb_node).s,
            rm_cli_bytes(b, sizeof b, (double)nd->bytes), nd->ndeps, nd->ndeps == 1 ? "" : "s",
            rm_cli_bytes(c, sizeof c, (double)cp->facts.lower_bound));
}
