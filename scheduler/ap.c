/* The articulation-point generalizations of Chen's heuristics (Checkmate,
 * Section 6: "AP sqrt(n)", "AP greedy"): checkpoint candidates are the cut
 * points of the forward graph, so every segment is recomputed from its own
 * checkpoint alone. On a chain every node is a cut point and these equal
 * chen_sqrtn / chen_greedy; on a U-Net the long skips leave few cut points
 * and the segments become large. */
#include "baseline.h"
#include "strategy.h"

int rm_strategy_ap_sqrtn(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_chen_sqrtn_run(out, NULL, p, 1, 0, "ap_sqrtn", 0, e);
}

int rm_strategy_ap_greedy(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    return rm_ap_greedy_until(out, NULL, p, 0, e);
}

int rm_ap_greedy_until(rm_schedule **out, int *stopped, const rm_problem *p, double deadline, rm_err *e)
{
    return rm_chen_greedy_search(out, stopped, p, NULL, 1, 0, "ap_greedy", deadline, e);
}
