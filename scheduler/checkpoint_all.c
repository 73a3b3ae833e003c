/* Checkpoint all: no recomputation. Every value is computed once, in its own
 * stage, and kept exactly until its last reader has run. Its peak is the
 * plain liveness peak, the reference every other strategy trades against. */
#include "baseline.h"
#include "strategy.h"

int rm_checkpoint_all_build(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    *out = NULL;
    rm_schedule_builder b;
    int rc = rm_builder_init(&b, p->n, e);
    if (rc) return rc;
    for (int k = 0; k < p->n; k++) {
        rm_builder_compute(&b, k, k);
        const rm_problem_node *nd = &p->nodes[k];
        for (int d = 0; d < nd->ndeps; d++)
            rm_builder_retain(&b, nd->deps[d], nd->deps[d] + 1, k); /* until its last reader */
    }
    return rm_builder_finish(out, &b, e);
}

int rm_checkpoint_all_fit(rm_schedule **out, rm_sim_result *r, const rm_problem *p, rm_err *e)
{
    *out = NULL;
    rm_schedule *s;
    int rc = rm_checkpoint_all_build(&s, p, e);
    if (rc) return rc;
    if ((rc = rm_simulate(r, p, s, e)) || !rm_sim_fits(p, r)) {
        rm_schedule_free(s);
        return rc;
    }
    *out = s;
    return RM_OK;
}

int rm_strategy_checkpoint_all(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    *out = NULL;
    int rc = rm_problem_validate(p, e);
    if (rc) return rc;
    rm_schedule *s;
    if ((rc = rm_checkpoint_all_build(&s, p, e))) return rc;
    return rm_baseline_finish(out, NULL, s, p, "checkpoint_all", e);
}
