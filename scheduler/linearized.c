/* The linearized generalizations of Chen's heuristics (Checkmate, Section 6:
 * "Linearized sqrt(n)", "Linearized greedy"): the forward graph is read as
 * the chain of its topological order, and a checkpoint at a position stores
 * the chain's state there, that is the node and every earlier value a
 * forward edge carries past it. Segments are then independent as on a
 * chain. chen_* instead store the node alone and recompute carried values
 * from earlier checkpoints; the two agree on chains. */
#include "baseline.h"
#include "strategy.h"

int rm_strategy_linearized_sqrtn(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_chen_sqrtn_run(out, NULL, p, 0, 1, "linearized_sqrtn", 0, e);
}

int rm_strategy_linearized_greedy(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_linearized_greedy_until(out, NULL, p, 0, e);
}

int rm_linearized_greedy_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e)
{
    return rm_chen_greedy_search(out, stopped, p, NULL, 0, 1, "linearized_greedy", deadline, e);
}
