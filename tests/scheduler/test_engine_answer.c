/* The CBC engine alone (--milp-engine cbc, and what auto runs on one core)
 * must be judged on CBC's own solution. Until this test, milp.c read CBC's
 * answer from the race's second buffer while step_search judged the first
 * when CBC ran alone: every answer was rejected as over the budget, and
 * the search ended on the incumbent, unproved or wrongly "optimal"
 * (measured by bench/engine_bench.c: Checkmate's 8-layer graph at budget
 * 4, cost 34 "feasible" where the optimum is 26). Here CBC alone must
 * prove lp_solve's optimum on Checkmate's small linear graphs. Node limits
 * only (deterministic); skipped where CBC is not built in. */
#include <criterion/criterion.h>
#include <string.h>

#include "milp.h"
#include "random_graphs.h"
#include "simulate.h"

static rm_milp_result solve_with(const rm_problem *p, rm_milp_engine engine)
{
    rm_milp_options o;
    rm_milp_options_default(&o);
    o.engine = engine;
    o.node_limit = 1000000; /* deterministic; never reached here */
    rm_milp_result info;
    memset(&info, 0, sizeof info);
    rm_schedule *s = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_strategy_milp(&s, &info, p, &o, &e), RM_OK, "%s", e.msg);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    cr_assert_leq(r.peak_bytes, rm_problem_activation_budget(p));
    cr_assert_float_eq(r.cost, info.objective, 1e-9);
    rm_schedule_free(s);
    return info;
}

Test(milp_engine_answer, cbc_alone_proves_lp_solves_optimum)
{
    if (!rm_milp_engine_have_cbc()) cr_skip_test("CBC is not built into this remat");
    /* Checkmate's gen_linear_graph, every size 1: the tightest budgets,
     * where the incumbent is not optimal and CBC must find better. */
    static const struct {
        int layers;
        size_t budget;
        double optimum; /* lp_solve's proved optimum (and HiGHS's, docs/bench/engines.md) */
    } cases[] = {{5, 3, 21}, {6, 3, 28}};
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        rm_problem *p = rg_checkmate_linear(cases[k].layers, 0, 0);
        cr_assert_not_null(p);
        for (int j = 0; j < p->n; j++) p->nodes[j].bytes = 1;
        p->budget = cases[k].budget;
        rm_milp_result lp = solve_with(p, RM_MILP_ENGINE_LPSOLVE);
        cr_assert_eq(lp.status, RM_STATUS_OPTIMAL);
        cr_assert_float_eq(lp.objective, cases[k].optimum, 1e-9);
        rm_milp_result cbc = solve_with(p, RM_MILP_ENGINE_CBC);
        cr_assert_eq(cbc.engine, RM_MILP_ENGINE_CBC);
        cr_assert_eq(cbc.status, RM_STATUS_OPTIMAL, "linear %d at %zu: %s, cost %g", cases[k].layers, cases[k].budget,
                     rm_status_name(cbc.status), cbc.objective);
        cr_assert_float_eq(cbc.objective, cases[k].optimum, 1e-9, "linear %d at %zu: cbc %g", cases[k].layers,
                           cases[k].budget, cbc.objective);
        cr_assert_str_eq(cbc.answered_by ? cbc.answered_by : "(none)", "cbc");
        rm_problem_free(p);
    }
}
