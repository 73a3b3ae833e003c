/* Checkpoint all: no recomputation. Every value is computed once, in its own
 * stage, and kept exactly until its last reader has run. Its peak is the
 * plain liveness peak, the reference every other strategy trades against. */
#include <stdlib.h>

#include "baseline.h"
#include "strategy.h"

int rm_strategy_checkpoint_all(rm_schedule **out, const rm_problem *p, rm_err *e)
{
    *out = NULL;
    int rc = rm_problem_validate(p, e);
    if (rc) return rc;
    int n = p->n;
    rm_schedule *s;
    if ((rc = rm_schedule_create(&s, n, e))) return rc;
    int *last = malloc((size_t)n * sizeof *last);
    if (!last) {
        rm_schedule_free(s);
        return rm_errorf(e, RM_ERR_NOMEM, "checkpoint_all: out of memory");
    }
    for (int i = 0; i < n; i++) last[i] = i;
    for (int k = 0; k < n; k++)
        for (int d = 0; d < p->nodes[k].ndeps; d++) last[p->nodes[k].deps[d]] = k; /* k ascending: ends at the max */
    for (int t = 0; t < n; t++) {
        *rm_R(s, t, t) = 1;
        for (int i = 0; i < t; i++) *rm_S(s, t, i) = last[i] >= t;
    }
    free(last);
    return rm_baseline_finish(out, NULL, s, p, "checkpoint_all", e);
}
