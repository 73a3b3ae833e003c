/* `remat explain`: solves a schedule and explains it in words, as a
 * teaching report: what the budget means next to the no-remat peak and the
 * lower bound, which values are dropped and recomputed, when and why (what
 * keeping each would have cost in memory), where the peak is and what is
 * resident there, and what the recomputations cost in total. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "commands.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"

#define EXPLAIN_USAGE                                                                                                  \
    "usage: remat explain (--model FILE --batch N | --problem FILE) --budget B [--strategy NAME]\n"                    \
    "                     [--costs FILE] [--time-limit S] [--node-limit N] [--quiet]\n"                                                 \
    "\n"                                                                                                               \
    "Solves a rematerialization schedule for the budget and explains it: what the budget means next to\n"              \
    "the peak of training without rematerialization and the smallest memory any schedule needs; which\n"               \
    "values are dropped after which stage and recomputed in which stage, for which consumer, and why\n"                \
    "(how high memory would have gone had each been kept); where the peak is and what is resident\n"                   \
    "there; and the total compute overhead.\n"                                                                         \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --model FILE     model config (models/*.cfg), traced at --batch N (1 to 2^30)\n"                                \
    "  --problem FILE   a problem file instead (docs/problem-format.md); its budget is the default\n"                  \
    "  --budget B       TOTAL device memory, fixed bytes included: 6GiB, 512MiB, 1.5e9, 16GB, 12000B, or a\n"          \
    "                   percentage of the no-remat peak (80%); a number without a unit is bytes, at least\n"           \
    "                   1000000; see `remat plan --help`\n"                                                            \
    "  --strategy NAME  any of `remat plan`'s strategies; default: best (every heuristic, then the MILP)\n"            \
    "  --costs FILE     node costs in profiled seconds (`remat profile`, docs/cost-format.md)\n"                       \
    "  --time-limit S   seconds for the best / lp_round / milp solve (default 60; 0 = none)\n"                        \
    "  --node-limit N   branch-and-bound nodes for best / milp (deterministic; default none)\n"                        \
    "  --quiet          no progress on stderr\n"                                                                       \
    "\n"                                                                                                               \
    "example: remat explain --model models/vgg16.cfg --batch 32 --budget 80%"

#define usage_error(...) rm_cli_usage_error("explain", EXPLAIN_USAGE, __VA_ARGS__)

/* Lines of recomputation detail before the rest is summarised. */
#define MAX_EVENTS 30

typedef struct explain_ctx {
    const rm_cli_problem *cp;
    const rm_problem *p;
    const rm_schedule *s;
    rm_op *ops;
    int nops;
    size_t *mem;
    rm_sim_result sim;
} explain_ctx;

static const char *nm(const rm_problem *p, int i) { return p->nodes[i].name[0] ? p->nodes[i].name : "?"; }

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
                                   nm(p, k));
        nusers++;
    }
    if (nusers > 3 && ul < sizeof users) snprintf(users + ul, sizeof users - ul, " and %d more", nusers - 3);

    /* Where it was last in memory before: the free that dropped it. */
    int free_op = -1;
    for (int k = compute_op - 1; k >= 0; k--)
        if (x->ops[k].node == i && x->ops[k].kind == RM_OP_FREE) {
            free_op = k;
            break;
        }
    int dropped = free_op >= 0 ? x->ops[free_op].stage : -1;

    printf("  %s (%s) ", nm(p, i), rm_cli_bytes(a, sizeof a, (double)p->nodes[i].bytes));
    if (dropped >= 0)
        printf("is dropped in stage %d and recomputed in stage %d", dropped, t);
    else
        printf("is recomputed in stage %d", t);
    printf(" for %s", nusers ? users : nm(p, t));
    if (p->nodes[i].cost == 0)
        printf(", at no cost (its cost is 0)");
    else
        printf(", for %s", rm_cli_cost(cost, sizeof cost, p->nodes[i].cost, x->cp->flops));
    if (free_op < 0 || compute_op - free_op <= 1) {
        printf(".\n");
        return;
    }
    /* Keeping it would add its bytes to every point in between. */
    int busiest = free_op + 1;
    for (int k = free_op + 1; k < compute_op; k++)
        if (x->mem[k] > x->mem[busiest]) busiest = k;
    size_t with = x->mem[busiest] + p->nodes[i].bytes;
    printf(".\n      Kept instead, it would add %s to every point in between; the busiest, computing '%s'\n"
           "      in stage %d, would reach %s",
           a, nm(p, x->ops[busiest].node), x->ops[busiest].stage, rm_cli_bytes(b, sizeof b, (double)with));
    if (act == SIZE_MAX)
        printf(".\n");
    else if (with > act)
        printf(", over the activation budget %s: the drop is forced.\n", rm_cli_bytes(c, sizeof c, (double)act));
    else
        printf(", within the activation budget %s:\n"
               "      alone it would fit; it is dropped to make room together with the others%s.\n",
               rm_cli_bytes(c, sizeof c, (double)act), p->nodes[i].cost == 0 ? " (and costs nothing)" : "");
}

static void explain_recomputations(const explain_ctx *x)
{
    const rm_problem *p = x->p;
    printf("\nWhat is recomputed, and why\n");
    if (x->sim.recomputations == 0) {
        printf("  Nothing: every value is computed once and kept until its last use, as without\n"
               "  rematerialization; the budget holds the no-remat peak.\n");
        return;
    }
    int shown = 0;
    long extra_events = 0;
    for (int k = 0; k < x->nops; k++) {
        const rm_op *op = &x->ops[k];
        if (op->kind != RM_OP_COMPUTE || op->node == op->stage) continue;
        if (shown < MAX_EVENTS) {
            explain_event(x, op->node, op->stage, k);
            shown++;
        } else {
            extra_events++;
        }
    }
    if (extra_events) printf("  ... and %ld more recomputations (`remat plan --svg` draws them all).\n", extra_events);

    /* Per node: how often, and what it costs. */
    printf("\n  In total, per value (times recomputed, extra cost):\n");
    int n = p->n, lines = 0, more = 0;
    int *counts = malloc((size_t)n * sizeof *counts);
    if (!counts) {
        printf("    (out of memory)\n");
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
        printf("    %-28s %2dx  %s  (%s each)\n", nm(p, i), times,
               rm_cli_cost(a, sizeof a, times * p->nodes[i].cost, x->cp->flops),
               rm_cli_bytes(b, sizeof b, (double)p->nodes[i].bytes));
    }
    if (more) printf("    ... and %d more values\n", more);
    free(counts);
}

static void explain_peak(const explain_ctx *x)
{
    const rm_problem *p = x->p;
    int n = p->n;
    int kp = -1;
    for (int k = 0; k < x->nops; k++)
        if (x->ops[k].kind == RM_OP_COMPUTE && x->mem[k] == x->sim.peak_bytes) {
            kp = k;
            break;
        }
    if (kp < 0) return;
    /* The resident set at the peak: replay up to it. */
    unsigned char *res = calloc((size_t)n, 1);
    int *order = malloc((size_t)n * sizeof *order);
    if (!res || !order) {
        free(res);
        free(order);
        return;
    }
    for (int k = 0; k <= kp; k++) res[x->ops[k].node] = x->ops[k].kind == RM_OP_COMPUTE;
    int m = 0;
    for (int i = 0; i < n; i++)
        if (res[i]) order[m++] = i;
    for (int a = 1; a < m; a++) /* by bytes, largest first (m is small) */
        for (int b = a; b > 0 && p->nodes[order[b]].bytes > p->nodes[order[b - 1]].bytes; b--) {
            int tmp = order[b];
            order[b] = order[b - 1];
            order[b - 1] = tmp;
        }
    int st = x->ops[kp].stage;
    char a[32], b[32], c[32];
    printf("\nWhere the peak is\n");
    printf("  %s = fixed %s + %s of activations,\n",
           rm_cli_bytes(a, sizeof a, (double)(p->fixed_bytes + x->sim.peak_bytes)),
           rm_cli_bytes(b, sizeof b, (double)p->fixed_bytes), rm_cli_bytes(c, sizeof c, (double)x->sim.peak_bytes));
    if (x->ops[kp].node == st)
        printf("  reached while stage %d computes '%s'.\n", st, nm(p, st));
    else
        printf("  reached while stage %d ('%s') recomputes '%s'.\n", st, nm(p, st), nm(p, x->ops[kp].node));
    printf("  Resident at that moment (%d values):\n", m);
    for (int j = 0; j < m && j < 8; j++) {
        int i = order[j];
        const char *why = i == x->ops[kp].node              ? "just computed"
                          : rm_schedule_S(x->s, st, i)            ? "kept from an earlier stage"
                          : rm_schedule_R(x->s, st, i) && i != st ? "recomputed in this stage"
                                                            : "computed in this stage";
        printf("    %-28s %12s  %s\n", nm(p, i), rm_cli_bytes(a, sizeof a, (double)p->nodes[i].bytes), why);
    }
    if (m > 8) {
        size_t rest = 0;
        for (int j = 8; j < m; j++) rest += p->nodes[order[j]].bytes;
        printf("    ... and %d smaller values, %s together\n", m - 8, rm_cli_bytes(a, sizeof a, (double)rest));
    }
    free(res);
    free(order);
}

static int explain_schedule(const rm_cli_problem *cp, const rm_schedule *s, const rm_strategy_info *st,
                            const rm_strategy_stats *stats)
{
    const rm_problem *p = cp->p;
    explain_ctx x = {cp, p, s, NULL, 0, NULL, stats->sim};
    rm_err e = {RM_OK, ""};
    if (rm_schedule_ops(&x.ops, &x.nops, p, s, &e)) {
        fprintf(stderr, "remat explain: %s\n", e.msg);
        return 2;
    }
    x.mem = malloc((size_t)(x.nops ? x.nops : 1) * sizeof *x.mem);
    if (!x.mem || rm_simulate_ops(&x.sim, x.mem, p, s, x.ops, x.nops, &e)) {
        fprintf(stderr, "remat explain: %s\n", x.mem ? e.msg : "out of memory");
        free(x.ops);
        free(x.mem);
        return 2;
    }
    char a[32], b[32], c[32];
    printf("\nThe schedule: %s (%s), %s in %.1f s\n", st->name, st->title, rm_status_name(stats->status),
           stats->seconds);
    int nf = 0, nb = 0;
    for (int i = 0; i < p->n; i++) nf += p->nodes[i].tag == RM_TAG_FORWARD, nb += p->nodes[i].tag == RM_TAG_BACKWARD;
    printf("  The step runs in %d stages; stage t computes node t (%d forward, then the loss, then %d backward),\n"
           "  and may first recompute earlier values from what it kept in memory.\n",
           p->n, nf, nb);
    double extra = x.sim.cost - cp->base_cost;
    printf("  Cost %s = checkpoint-all %s + %s of recomputation (%+.2f%%).\n",
           rm_cli_cost(a, sizeof a, x.sim.cost, cp->flops), rm_cli_cost(b, sizeof b, cp->base_cost, cp->flops),
           rm_cli_cost(c, sizeof c, extra, cp->flops), cp->base_cost > 0 ? 100.0 * extra / cp->base_cost : 0.0);
    if (stats->has_bound && stats->bound_trivial) {
        printf("  The LP relaxation was not solved here; no schedule costs less than checkpoint-all (every\n"
               "  node once), so this one is at most %.2f%% above the optimum.\n", 100.0 * stats->gap);
    } else if (stats->has_bound) {
        printf("  The LP relaxation proves no schedule costs less than checkpoint-all %+.2f%%",
               cp->base_cost > 0 ? 100.0 * (stats->lp_bound / cp->base_cost - 1) : 0.0);
        if (stats->status == RM_STATUS_OPTIMAL)
            printf(";\n  this one is optimal.\n");
        else
            printf(";\n  this one is at most %.2f%% above the optimum (the gap).\n", 100.0 * stats->gap);
    }
    explain_recomputations(&x);
    explain_peak(&x);
    printf("\nOverhead\n");
    char d[32];
    if (x.sim.recomputations == 0)
        printf("  None: the step costs what it costs without rematerialization, and peaks at %s.\n",
               rm_cli_bytes(a, sizeof a, (double)(p->fixed_bytes + x.sim.peak_bytes)));
    else
        printf("  %ld recomputation%s add%s %s to the %s every training step needs anyway:\n"
               "  %.2f%% more compute, for a peak of %s instead of %s (%.1f%% of it).\n",
               x.sim.recomputations, x.sim.recomputations == 1 ? "" : "s", x.sim.recomputations == 1 ? "s" : "",
               rm_cli_cost(a, sizeof a, extra, cp->flops), rm_cli_cost(b, sizeof b, cp->base_cost, cp->flops),
               cp->base_cost > 0 ? 100.0 * extra / cp->base_cost : 0.0,
               rm_cli_bytes(c, sizeof c, (double)(p->fixed_bytes + x.sim.peak_bytes)),
               rm_cli_bytes(d, sizeof d, (double)cp->noremat_total),
               100.0 * (double)(p->fixed_bytes + x.sim.peak_bytes) / (double)cp->noremat_total);
    free(x.ops);
    free(x.mem);
    return 0;
}

static void explain_budget(const rm_cli_problem *cp, const rm_cli_budget *bud)
{
    const rm_problem *p = cp->p;
    char a[32], b[32], c[32];
    double ref = (double)cp->noremat_total;
    size_t lbt = p->fixed_bytes + cp->lower_bound;
    printf("What the budget means\n");
    printf("  The device budget is %s", rm_cli_bytes(a, sizeof a, (double)p->budget));
    if (bud->percent) printf(" (%g%% of the no-remat peak)", bud->pct);
    printf(".\n  %s of it is fixed: it stays resident the whole step, outside the activations. That leaves\n"
           "  %s for activations.\n",
           rm_cli_bytes(b, sizeof b, (double)p->fixed_bytes),
           rm_cli_bytes(c, sizeof c, (double)(p->budget - p->fixed_bytes)));
    if (cp->has_footprint) {
        printf("  ");
        rm_cli_print_footprint(&cp->fp, &cp->optim);
    }
    printf("  Without rematerialization (every value kept until its last use) the step peaks at %s =\n"
           "  fixed + %s",
           rm_cli_bytes(a, sizeof a, ref), rm_cli_bytes(b, sizeof b, (double)cp->noremat.peak_bytes));
    if (cp->noremat.peak_node >= 0 && cp->noremat.peak_node == cp->noremat.peak_stage)
        printf(", computing '%s' (stage %d)", nm(p, cp->noremat.peak_node), cp->noremat.peak_stage);
    else if (cp->noremat.peak_node >= 0)
        printf(", while stage %d ('%s') computes '%s'", cp->noremat.peak_stage, nm(p, cp->noremat.peak_stage),
               nm(p, cp->noremat.peak_node));
    printf(".\n");
    if (p->budget >= cp->noremat_total)
        printf("  The budget holds that peak (%.1f%% of the budget): nothing needs recomputing.\n",
               100.0 * ref / (double)p->budget);
    else
        printf("  The budget is %.1f%% of it: %s of activations must be freed at the peak and recomputed later.\n",
               100.0 * (double)p->budget / ref, rm_cli_bytes(a, sizeof a, (double)(cp->noremat_total - p->budget)));
    const rm_problem_node *nd = &p->nodes[cp->lb_node];
    printf("  No schedule can go below %s (%.1f%% of the no-remat peak): computing '%s' needs its\n"
           "  output (%s) and its %d input%s resident at once, %s of activations.\n",
           rm_cli_bytes(a, sizeof a, (double)lbt), 100.0 * (double)lbt / ref, nm(p, cp->lb_node),
           rm_cli_bytes(b, sizeof b, (double)nd->bytes), nd->ndeps, nd->ndeps == 1 ? "" : "s",
           rm_cli_bytes(c, sizeof c, (double)cp->lower_bound));
}

static int explain_run(int argc, char **argv)
{
    const char *model = NULL, *batch = NULL, *problem = NULL, *budget = NULL, *strategy = NULL, *time_limit = NULL,
               *node_limit = NULL, *costs = NULL;
    int quiet = 0;
    const rm_cli_opt opts[] = {
        RM_CLI_FLAG("--quiet", "-q", &quiet),
        RM_CLI_VALUE("--model", &model),
        RM_CLI_VALUE("--batch", &batch),
        RM_CLI_VALUE("--problem", &problem),
        RM_CLI_VALUE("--budget", &budget),
        RM_CLI_VALUE("--strategy", &strategy),
        RM_CLI_VALUE("--time-limit", &time_limit),
        RM_CLI_VALUE("--node-limit", &node_limit),
        RM_CLI_VALUE("--costs", &costs),
    };
    if (rm_cli_parse_options(opts, sizeof opts / sizeof opts[0], argc, argv, "explain", EXPLAIN_USAGE)) return 1;
    if (model && problem) return usage_error("give --model or --problem, not both");
    if (!model && !problem) return usage_error("--model FILE --batch N or --problem FILE is required");
    if (model && !batch) return usage_error("--batch N is required with --model");
    if (problem && batch) return usage_error("--batch goes with --model, not --problem");
    long batch_n = 0;
    char why[256];
    if (batch && rm_cli_parse_batch(&batch_n, batch, why, sizeof why)) return usage_error("%s", why);
    /* As in `remat plan`: a problem file's own budget is the default. */
    if (!budget && !problem) return usage_error("--budget B is required");
    rm_cli_budget bud = rm_cli_budget_of(0);
    if (budget && rm_cli_parse_budget(&bud, budget, why, sizeof why)) return usage_error("--budget: %s", why);
    double limit = 60;
    if (time_limit && rm_cli_parse_seconds(&limit, time_limit))
        return usage_error("--time-limit must be a number of seconds >= 0, got '%s'", time_limit);
    long nodes = 0;
    if (node_limit && rm_cli_parse_long(&nodes, node_limit, 0, 1000000000000L))
        return usage_error("--node-limit must be a whole number >= 0, got '%s'", node_limit);
    const rm_strategy_info *st = rm_strategy_find(strategy ? strategy : "best");
    if (!st) return usage_error("unknown strategy '%s' (see `remat plan --help`)", strategy);

    rm_cli_problem cp;
    int rc = rm_cli_problem_load_costs(&cp, "explain", model, batch_n, problem, costs);
    if (rc) return rc;
    if (!budget) {
        if (!cp.file_budget) {
            rm_cli_problem_free(&cp);
            return usage_error("--budget B is required (the problem file sets none)");
        }
        bud = rm_cli_budget_of(cp.file_budget);
    }
    if ((rc = rm_cli_problem_set_budget(&cp, "explain", &bud))) {
        rm_cli_problem_free(&cp);
        return rc;
    }
    printf("remat explain: %s\n\n", cp.what);
    explain_budget(&cp, &bud);
    fflush(stdout);

    rm_strategy_options o;
    memset(&o, 0, sizeof o);
    o.time_limit_s = limit;
    o.node_limit = nodes;
    rm_cli_progress pr = {st->name, rm_cli_now()};
    if (!quiet) {
        o.log = rm_cli_progress_log;
        o.log_ctx = &pr;
        if (st->solve_opt) fprintf(stderr, "remat explain: solving with %s (time limit %g s) ...\n", st->name, limit);
    }
    rm_schedule *s = NULL;
    rm_strategy_stats stats;
    rm_err e = {RM_OK, ""};
    rc = rm_strategy_run(&s, &stats, st, cp.p, &o, &e);
    if (rc) {
        if (rc == RM_ERR_INFEASIBLE)
            fprintf(stderr, "remat explain: %s found no schedule within the budget: %s\n", st->name, e.msg);
        else
            fprintf(stderr, "remat explain: %s failed: %s\n", st->name, e.msg);
        rm_cli_problem_free(&cp);
        return rc == RM_ERR_INFEASIBLE ? 1 : 2;
    }
    rc = explain_schedule(&cp, s, st, &stats);
    rm_schedule_free(s);
    rm_cli_problem_free(&cp);
    return rc;
}

const rm_command rm_cmd_explain = {
    .name = "explain",
    .summary = "solve a schedule and explain it: what is recomputed, where and why, where the peak is",
    .usage = EXPLAIN_USAGE,
    .run = explain_run,
};
