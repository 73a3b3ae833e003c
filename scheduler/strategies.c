/* The one table of strategies, so the CLI and benchmarks can list them and
 * pick one by name: the baselines first (baseline_table.c), then the solver
 * strategies (LP rounding, the MILP, and "best", the default) through the
 * solver route (route.c);
 * plus rm_strategy_run, which times a strategy and has the simulator judge
 * its answer. The top of scheduler/: nothing below it includes it. */
#include <math.h>
#include <string.h>

#include "baseline.h"
#include "deadline.h"
#include "log.h"
#include "route.h"
#include "strategy.h"

static int lp_round_default(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_route_lp_round(out, NULL, p, NULL, e);
}

static int milp_default(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_route_milp(out, NULL, p, NULL, e);
}

static int anneal_default(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_route_anneal(out, NULL, p, NULL, e);
}

static int best_default(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_route_best(out, NULL, p, NULL, e);
}

/* The baselines come first and are what rm_strategy_list returns. */
static const rm_strategy_info strategies[] = {
    RM_BASELINE_TABLE,
    {"lp_round", "Checkmate LP rounding", lp_round_default, rm_route_lp_round, NULL, 0},
    {"milp", "Checkmate MILP (lp_solve)", milp_default, rm_route_milp, NULL, 0},
    {"anneal", "simulated annealing over orders and recomputations", anneal_default, rm_route_anneal, NULL, 0},
    {"best", "every heuristic, then the anneal and the MILP with the cheapest as incumbent", best_default,
     rm_route_best, NULL, 0},
};
_Static_assert(RM_BASELINE_COUNT < sizeof strategies / sizeof strategies[0], "the solvers follow the baselines");

const rm_strategy_info *rm_strategy_list_all(int *count)
{
    *count = (int)(sizeof strategies / sizeof strategies[0]);
    return strategies;
}

static int same_name(const char *a, const char *b)
{
    for (;; a++, b++) {
        char x = *a == '-' ? '_' : *a, y = *b == '-' ? '_' : *b;
        if (x != y) return 0;
        if (!x) return 1;
    }
}

const rm_strategy_info *rm_strategy_find(const char *name)
{
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++)
        if (same_name(strategies[i].name, name)) return &strategies[i];
    return NULL;
}

/* Every answer of a solver reports a bound: where the LP gave none, the
 * trivial one (each node computed once) still bounds the gap. */
static void trivial_bound(rm_strategy_stats *stats, const rm_problem *p)
{
    double base = rm_problem_base_cost(p);
    stats->has_bound = 1;
    stats->bound_trivial = 1;
    stats->lp_bound = base;
    stats->gap = stats->sim.cost > 0 && stats->sim.cost > base ? (stats->sim.cost - base) / stats->sim.cost : 0;
}

int rm_strategy_run(rm_schedule **out, rm_strategy_stats *stats, const rm_strategy_info *st, const rm_problem *p,
                    const rm_strategy_options *o, rm_err *e)
{
    return rm_strategy_run_report(out, stats, NULL, 0, NULL, st, p, o, e);
}

int rm_strategy_run_report(rm_schedule **out, rm_strategy_stats *stats, rm_schedule_report *report, unsigned what,
                           const rm_graph *g, const rm_strategy_info *st, const rm_problem *p,
                           const rm_strategy_options *o, rm_err *e)
{
    rm_strategy_stats dummy;
    if (report) {
        memset(report, 0, sizeof *report);
        report->peak_op = report->backward_op = -1;
    }
    if (!stats) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    stats->status = RM_STATUS_ERROR;
    *out = NULL;
    double t0 = rm_now();
    if (!rm_strategy_applies(st, p)) {
        stats->status = RM_STATUS_NOT_APPLICABLE;
        return rm_errorf(e, RM_ERR_UNSUPPORTED,
                         "%s needs a training graph's forward/backward split, and this problem has no backward "
                         "nodes: dtr, anneal, milp and best schedule any DAG",
                         st->name);
    }
    /* The one deadline of the call, fixed here and passed down. */
    rm_strategy_options od;
    memset(&od, 0, sizeof od);
    if (o) od = *o;
    if (od.deadline <= 0 && od.time_limit_s > 0) od.deadline = t0 + od.time_limit_s;
    double deadline = od.deadline;
    /* The strategy works to 98% of the time left: the rest is for the judge
     * below and the caller's output. */
    if (od.deadline > 0) od.deadline -= 0.02 * fmax(0, od.deadline - t0);
    int rc;
    if (st->solve_opt)
        rc = st->solve_opt(out, stats, p, o ? &od : NULL, e);
    else if (st->solve_until && od.deadline > 0)
        rc = st->solve_until(out, &stats->stopped, p, od.deadline, e);
    else
        rc = st->solve(out, p, e);
    stats->seconds = rm_now() - t0;
    if (stats->stopped && rc == RM_OK)
        RM_LOG_WARN("%s: stopped at the time limit (%.3g s): the best schedule found by then", st->name, deadline - t0);
    if (rc == RM_OK && !*out) rc = rm_errorf(e, RM_ERR_INVALID, "%s: returned no schedule", st->name);
    /* The judge: one replay, kept as the schedule's report when the caller
     * wants it (what it prints and draws), else only its verdict. */
    if (rc == RM_OK && !report) rc = rm_simulate(&stats->sim, p, *out, e);
    if (rc == RM_OK && report && (rc = rm_schedule_report_of(report, p, *out, NULL, 0, e)) == RM_OK)
        stats->sim = report->sim;
    if (rc == RM_OK && !rm_sim_fits(p, &stats->sim))
        rc = rm_errorf(e, RM_ERR_INVALID, "%s: its schedule peaks at %zu + %zu fixed bytes, over the budget %zu",
                       st->name, stats->sim.peak_bytes, p->fixed_bytes, p->budget);
    if (rc != RM_OK) {
        rm_schedule_free(*out);
        *out = NULL;
        if (report) rm_schedule_report_free(report);
        if (rc == RM_ERR_INFEASIBLE) {
            if (!st->solve_opt && stats->stopped)
                stats->status = RM_STATUS_NO_SOLUTION; /* no proof */
            else if (!st->solve_opt || stats->status != RM_STATUS_NO_SOLUTION)
                stats->status = RM_STATUS_INFEASIBLE;
        } else {
            stats->status = RM_STATUS_ERROR;
        }
        RM_LOG_INFO("strategy %s: %s after %.3f s: %s", st->name, rm_status_name(stats->status), stats->seconds,
                    e ? e->msg : "");
        return rc;
    }
    if (!st->solve_opt || stats->status == RM_STATUS_ERROR) stats->status = RM_STATUS_OK;
    if (!stats->source) stats->source = st->name; /* a baseline's schedule is its own */
    if (st->solve_opt && !stats->has_bound) trivial_bound(stats, p);
    if (stats->has_bound)
        RM_LOG_INFO("strategy %s: %s, cost %.6g, peak %zu + %zu fixed, bound %.6g%s, gap %.2f%%, %.3f s", st->name,
                    rm_status_name(stats->status), stats->sim.cost, stats->sim.peak_bytes, p->fixed_bytes,
                    stats->lp_bound, stats->bound_trivial ? " (trivial)" : "", 100.0 * stats->gap, stats->seconds);
    else
        RM_LOG_INFO("strategy %s: %s, cost %.6g, peak %zu + %zu fixed, %.3f s", st->name, rm_status_name(stats->status),
                    stats->sim.cost, stats->sim.peak_bytes, p->fixed_bytes, stats->seconds);
    /* The arena plan of the answer, from the judge's operations, after the
     * verdict is said (its placement logs what it did). */
    if (report) rm_schedule_report_arena(report, p, g, what);
    return RM_OK;
}
