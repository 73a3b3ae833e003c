#include "tiny_models.h"

#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "milp.h"
#include "onnx.h"
#include "plan.h"
#include "simulate.h"
#include "strategy.h"
#include "trace.h"

const char *tm_source_dir(void)
{
    const char *d = getenv("REMAT_SOURCE_DIR");
    return d && *d ? d : REMAT_SOURCE_DIR;
}

rm_problem *tm_aligned_problem(const rm_problem *p)
{
    rm_problem *q;
    rm_err e = {0};
    cr_assert_eq(rm_problem_create(&q, p->n, &e), RM_OK, "%s", e.msg);
    q->fixed_bytes = p->fixed_bytes;
    for (int i = 0; i < p->n; i++) {
        q->nodes[i].tag = p->nodes[i].tag;
        q->nodes[i].cost = p->nodes[i].cost;
        q->nodes[i].bytes = rm_align_up(p->nodes[i].bytes);
        memcpy(q->nodes[i].name, p->nodes[i].name, RM_NAME_LEN);
        cr_assert_eq(rm_problem_set_deps(q, i, p->nodes[i].deps, p->nodes[i].ndeps, &e), RM_OK, "%s", e.msg);
    }
    return q;
}

static size_t peak_of(const rm_problem *p, const rm_schedule *s)
{
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    return r.peak_bytes;
}

/* Takes s as the next schedule, solved for the problem's budget now; with
 * TM_DISTINCT, drops it where an earlier one is the same: the executor
 * would check nothing new, and each run costs seconds under the emulator. */
static void add(tm_tiny *t, unsigned what, rm_schedule *s, const char *name)
{
    if (what & TM_DISTINCT)
        for (int i = 0; i < t->n; i++)
            if (rm_schedule_equal(t->s[i], s)) {
                cr_log_info("%s: the same schedule as %s", name, t->name[i]);
                rm_schedule_free(s);
                return;
            }
    cr_assert_lt(t->n, TM_MAX_SCHEDS);
    t->s[t->n] = s;
    t->budget[t->n] = t->p->budget;
    snprintf(t->name[t->n], sizeof t->name[0], "%s", name);
    t->n++;
}

static void schedules(tm_tiny *t, unsigned what)
{
    rm_problem *p = t->p;
    rm_err e = {0};
    p->budget = 0;
    rm_schedule *s = NULL;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    add(t, what, s, "checkpoint_all");
    size_t top = peak_of(p, t->s[0]), lb = rm_problem_peak_lower_bound(p);
    int count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    for (int k = 0; (what & TM_BASELINES) && k < count && t->n < TM_MAX_SCHEDS - 4; k++) {
        if (list[k].solve == rm_strategy_checkpoint_all) continue;
        for (int level = 1; level <= 8; level++) {
            p->budget = p->fixed_bytes + lb + (top - lb) * (size_t)level / 8 - (level == 8);
            s = NULL;
            int rc = list[k].solve(&s, p, &e);
            if (rc == RM_ERR_INFEASIBLE) continue;
            cr_assert_eq(rc, RM_OK, "%s: %s", list[k].name, e.msg);
            char name[48];
            snprintf(name, sizeof name, "%s@%d/8", list[k].name, level);
            add(t, what, s, name);
            break;
        }
    }
    /* The solvers, halfway between the lower bound and checkpoint-all, under
     * deterministic limits (their schedules are as valid as any). */
    p->budget = p->fixed_bytes + lb + (top - lb) / 2;
    if (what & TM_LP_ROUND) {
        s = NULL;
        int rc = rm_strategy_lp_round(&s, NULL, p, NULL, &e);
        cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "lp_round: %s", e.msg);
        if (rc == RM_OK) add(t, what, s, "lp_round@4/8");
    }
    if (what & TM_MILP) {
        rm_milp_options mo;
        rm_milp_options_default(&mo);
        mo.node_limit = 20;
        s = NULL;
        cr_assert_eq(rm_strategy_milp(&s, NULL, p, &mo, &e), RM_OK, "milp: %s", e.msg);
        add(t, what, s, "milp@4/8");
    }
    if (what & TM_ANNEAL) {
        rm_strategy_options ao = {.moves = 4000, .seed = 1};
        s = NULL;
        cr_assert_eq(rm_strategy_anneal(&s, NULL, p, &ao, &e), RM_OK, "anneal: %s", e.msg);
        add(t, what, s, s->order ? "anneal@4/8 (its own order)" : "anneal@4/8");
    }
    p->budget = 0;
    if (what & TM_NO_CHECKPOINTS) {
        uint8_t *none = calloc((size_t)p->n, 1);
        cr_assert_not_null(none);
        s = NULL;
        cr_assert_eq(rm_schedule_from_checkpoints(&s, p, none, &e), RM_OK, "%s", e.msg);
        free(none);
        add(t, what, s, "no_checkpoints");
    }
}

void tm_load(tm_tiny *t, const char *cfg, int batch, unsigned what)
{
    memset(t, 0, sizeof *t);
    char path[512];
    rm_err e = {0};
    size_t len = strlen(cfg);
    if (len > 5 && !strcmp(cfg + len - 5, ".onnx")) {
        snprintf(path, sizeof path, "%s/tests/models/onnx/%s", tm_source_dir(), cfg);
        rm_onnx_options o;
        rm_onnx_options_default(&o);
        o.loss = RM_ONNX_LOSS_AUTO;
        cr_assert_eq(rm_onnx_load(&t->m, NULL, path, &o, &e), RM_OK, "%s", e.msg);
    } else {
        snprintf(path, sizeof path, "%s/models/%s", tm_source_dir(), cfg);
        cr_assert_eq(rm_model_load(&t->m, path, &e), RM_OK, "%s", e.msg);
    }
    cr_assert_eq(rm_model_trace(&t->g, t->m, batch, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_problem_from_graph(&t->p, &t->g, &e), RM_OK, "%s", e.msg);
    t->pa = tm_aligned_problem(t->p);
    schedules(t, what);
}

void tm_free(tm_tiny *t)
{
    for (int i = 0; i < t->n; i++) rm_schedule_free(t->s[i]);
    rm_problem_free(t->p);
    rm_problem_free(t->pa);
    rm_graph_free(&t->g);
    rm_model_free(t->m);
}
