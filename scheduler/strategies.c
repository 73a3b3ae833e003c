/* The table of baseline strategies, so the CLI and benchmarks can list
 * them and pick one by name; plus the public checkpoint-set construction. */
#include <string.h>

#include "baseline.h"
#include "strategy.h"

static const rm_strategy_info strategies[] = {
    {"checkpoint_all", "Checkpoint all", rm_strategy_checkpoint_all},
    {"chen_sqrtn", "Chen et al. sqrt(n)", rm_strategy_chen_sqrtn},
    {"chen_greedy", "Chen et al. greedy", rm_strategy_chen_greedy},
    {"griewank", "Griewank & Walther log(n)", rm_strategy_griewank},
    {"ap_sqrtn", "AP sqrt(n)", rm_strategy_ap_sqrtn},
    {"ap_greedy", "AP greedy", rm_strategy_ap_greedy},
    {"linearized_sqrtn", "Linearized sqrt(n)", rm_strategy_linearized_sqrtn},
    {"linearized_greedy", "Linearized greedy", rm_strategy_linearized_greedy},
    {"ogc", "Feng & Huang optimal checkpointing", rm_strategy_ogc},
};

const rm_strategy_info *rm_strategy_list(int *count)
{
    *count = (int)(sizeof strategies / sizeof strategies[0]);
    return strategies;
}

const rm_strategy_info *rm_strategy_find(const char *name)
{
    for (size_t i = 0; i < sizeof strategies / sizeof strategies[0]; i++)
        if (strcmp(strategies[i].name, name) == 0) return &strategies[i];
    return NULL;
}

int rm_schedule_from_checkpoints(rm_schedule **out, const rm_problem *p, const uint8_t *checkpoint, rm_err *e)
{
    *out = NULL;
    int rc = rm_problem_validate(p, e);
    if (rc) return rc;
    rm_fwd_info fi;
    if ((rc = rm_fwd_info_init(&fi, p, e))) return rc;
    rm_schedule *s;
    if (!(rc = rm_build_from_checkpoints(&s, p, &fi, checkpoint, e))) {
        rm_sim_result r;
        if ((rc = rm_simulate(&r, p, s, e)))
            rm_schedule_free(s);
        else
            *out = s;
    }
    rm_fwd_info_free(&fi);
    return rc;
}
