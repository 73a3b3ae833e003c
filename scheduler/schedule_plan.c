/* A schedule's arena plan: its operation sequence placed by engine/plan.c.
 * The one step from a schedule to what the executor runs. */
#include <stdlib.h>

#include "schedule.h"
#include "strategy.h"

int rm_schedule_plan(rm_plan **out, const rm_problem *p, const rm_schedule *s, const rm_graph *g, rm_err *e)
{
    *out = NULL;
    rm_op *ops = NULL;
    int nops = 0;
    int rc = rm_schedule_ops(&ops, &nops, p, s, e);
    if (!rc) rc = rm_schedule_plan_ops(out, p, ops, nops, g, e);
    free(ops);
    return rc;
}

int rm_schedule_plan_ops(rm_plan **out, const rm_problem *p, const rm_op *ops, int nops, const rm_graph *g, rm_err *e)
{
    *out = NULL;
    int rc = RM_OK;
    if (g) {
        rc = rm_plan_from_graph(out, g, ops, nops, e);
    } else {
        size_t *bytes = malloc((size_t)(p->n ? p->n : 1) * sizeof *bytes);
        if (!bytes) rc = rm_errorf(e, RM_ERR_NOMEM, "plan: out of memory");
        for (int i = 0; !rc && i < p->n; i++) bytes[i] = p->nodes[i].bytes;
        if (!rc) rc = rm_plan_create(out, bytes, p->n, ops, nops, e);
        free(bytes);
    }
    return rc;
}

int rm_schedule_plan_all(rm_plan **out, const rm_graph *g, rm_err *e)
{
    *out = NULL;
    rm_problem *p = NULL;
    rm_schedule *s = NULL;
    int rc = rm_problem_from_graph(&p, g, e);
    if (!rc) rc = rm_strategy_checkpoint_all(&s, p, e);
    if (!rc) rc = rm_schedule_plan(out, p, s, g, e);
    rm_schedule_free(s);
    rm_problem_free(p);
    return rc;
}
