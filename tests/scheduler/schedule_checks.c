/* What every answer of a strategy must be (schedule_checks.h). */
#include "schedule_checks.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <unistd.h>

#include "exact_dp.h"
#include "order.h"
#include "plan.h"
#include "strategy.h"

rm_sim_result sc_simulate(const rm_problem *p, const rm_schedule *s)
{
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    return r;
}

/* p with every output rounded up to the arena's alignment: the sizes the
 * arena plan places, whose simulated peak its live peak must equal. */
static rm_problem *aligned(const rm_problem *p)
{
    rm_problem *q;
    rm_err e = {0};
    int *id = malloc((size_t)p->n * sizeof *id);
    for (int i = 0; i < p->n; i++) id[i] = i;
    cr_assert_eq(rm_problem_reorder(&q, p, id, &e), RM_OK, "%s", e.msg); /* a copy */
    free(id);
    for (int i = 0; i < q->n; i++)
        q->nodes[i].bytes = (q->nodes[i].bytes + RM_ARENA_ALIGN - 1) / RM_ARENA_ALIGN * RM_ARENA_ALIGN;
    return q;
}

rm_sim_result sc_check_answer(const rm_problem *p, const rm_schedule *s, const char *what)
{
    rm_err e = {0};
    rm_sim_result r = sc_simulate(p, s);
    cr_assert(rm_sim_fits(p, &r), "%s: peak %zu over the budget %zu", what, r.peak_bytes, p->budget);
    /* The independent replay, on the problem in the schedule's order. */
    if (p->n <= EXACT_DP_MAX_N) {
        rm_problem *q = NULL;
        rm_schedule *plain = NULL;
        if (s->order) {
            cr_assert_eq(rm_problem_reorder(&q, p, s->order, &e), RM_OK, "%s: %s", what, e.msg);
            cr_assert_eq(rm_schedule_copy(&plain, s, &e), RM_OK);
            cr_assert_eq(rm_schedule_set_order(plain, NULL, &e), RM_OK);
        }
        double cost;
        size_t peak;
        char msg[256];
        cr_assert_eq(exact_replay(&cost, &peak, q ? q : p, plain ? plain : s, msg, sizeof msg), 0, "%s: %s", what, msg);
        cr_assert_eq(peak, r.peak_bytes, "%s: the exact replay peaks at %zu, the simulator at %zu", what, peak,
                     r.peak_bytes);
        cr_assert_float_eq(cost, r.cost, 1e-9 * cost, "%s", what);
        rm_problem_free(q);
        rm_schedule_free(plain);
    }
    /* The arena: its live peak is the simulated peak (sizes aligned). */
    rm_problem *pa = aligned(p);
    rm_plan *pl;
    cr_assert_eq(rm_schedule_plan(&pl, pa, s, NULL, &e), RM_OK, "%s: %s", what, e.msg);
    cr_assert_eq(pl->live_peak, sc_simulate(pa, s).peak_bytes, "%s: plan live peak %zu", what, pl->live_peak);
    rm_plan_free(pl);
    rm_problem_free(pa);
    /* The schedule file. */
    char path[] = "/tmp/remat-answer-XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    rm_schedule *back;
    cr_assert_eq(rm_schedule_write(s, p, path, &e), RM_OK, "%s: %s", what, e.msg);
    cr_assert_eq(rm_schedule_read(&back, p, path, &e), RM_OK, "%s: %s", what, e.msg);
    cr_assert(rm_schedule_equal(back, s), "%s: the schedule read back differs", what);
    rm_schedule_free(back);
    unlink(path);
    return r;
}

size_t sc_noremat_peak(const rm_problem *p)
{
    rm_schedule *s;
    rm_err e = {0};
    cr_assert_eq(rm_checkpoint_all_build(&s, p, &e), RM_OK);
    size_t peak = sc_simulate(p, s).peak_bytes;
    rm_schedule_free(s);
    return peak;
}
