/* Checkpoint all: no recomputation. Every value is computed once, in its own
 * stage, and kept exactly until its last reader has run. Its peak is the
 * plain liveness peak, the reference every other strategy trades against. */
#include <string.h>

#include "baseline.h"
#include "strategy.h"

void rm_checkpoint_all_fill(rm_schedule *s, const rm_problem *p)
{
    int n = p->n;
    memset(s->R, 0, (size_t)n * (size_t)n);
    memset(s->S, 0, (size_t)n * (size_t)n);
    for (int k = 0; k < n; k++) {
        *rm_R(s, k, k) = 1;
        const rm_problem_node *nd = &p->nodes[k];
        for (int d = 0; d < nd->ndeps; d++)
            for (int t = nd->deps[d] + 1; t <= k; t++) *rm_S(s, t, nd->deps[d]) = 1; /* until its last reader */
    }
}

int rm_checkpoint_all_fit(rm_schedule **out, rm_sim_result *r, const rm_problem *p, rm_err *e)
{
    *out = NULL;
    rm_schedule *s;
    int rc = rm_schedule_create(&s, p->n, e);
    if (rc) return rc;
    rm_checkpoint_all_fill(s, p);
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
    if ((rc = rm_schedule_create(&s, p->n, e))) return rc;
    rm_checkpoint_all_fill(s, p);
    return rm_baseline_finish(out, NULL, s, p, "checkpoint_all", e);
}
