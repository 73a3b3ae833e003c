/* Chen et al. 2016 ("Training Deep Nets with Sublinear Memory Cost"),
 * sqrt(n) and greedy checkpointing on the linearized graph: any forward
 * node may be a checkpoint, and the schedule is the shared construction of
 * baseline.c. On a graph with skips a checkpoint does not cut the graph, so
 * a value carried past it is recomputed from earlier checkpoints when a
 * segment needs it; that is what "linearized" costs Chen's heuristics on
 * ResNets and U-Nets, and why Checkmate compares against it. */
#include "baseline.h"
#include "strategy.h"

int rm_strategy_chen_sqrtn(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_chen_sqrtn_run(out, NULL, p, 0, 0, "chen_sqrtn", 0, e);
}

int rm_chen_sqrtn_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e)
{
    return rm_chen_sqrtn_run(out, stopped, p, 0, 0, "chen_sqrtn", deadline, e);
}

int rm_strategy_chen_greedy(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_chen_greedy_until(out, NULL, p, 0, e);
}

int rm_chen_greedy_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e)
{
    return rm_chen_greedy_search(out, stopped, p, NULL, 0, 0, "chen_greedy", deadline, e);
}
