/* lp_solve failing, and budgets too small for the fixed memory.
 *
 * lp_solve's solve() is wrapped (inject.h) to answer NUMFAILURE, NOMEMORY,
 * INFEASIBLE, TIMEOUT or SUBOPTIMAL, either without solving (the model then
 * holds no solution) or after a solve stopped at once, on the LP relaxation
 * or on the branch and bound. The designed answers (scheduler/milp.c):
 *  - a numerical failure or lp_solve running out of memory is an error
 *    (RM_ERR_SOLVER / RM_ERR_NOMEM) naming lp_solve's code, even with an
 *    incumbent at hand: a solver that fails is reported, not papered over;
 *  - INFEASIBLE is RM_ERR_INFEASIBLE where nothing contradicts it, and
 *    RM_ERR_SOLVER where an incumbent schedule that fits proves it wrong;
 *  - a limit (TIMEOUT, SUBOPTIMAL without an improved solution) returns the
 *    incumbent with status "feasible", or RM_ERR_INFEASIBLE "no solution"
 *    (not proved infeasible) when there is none; LP rounding, too, answers
 *    with its incumbent (the cheapest fitting baseline) when it has nothing
 *    cheaper to round.
 * Every schedule returned is checked by the simulator, and the CLI exits
 * non-zero exactly where no schedule results. */
#include <criterion/criterion.h>
#include <lp_lib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_fixture.h"
#include "faults/inject.h"
#include "milp.h"
#include "problem.h"
#include "schedule.h"
#include "scheduler/random_graphs.h"
#include "simulate.h"
#include "strategy.h"

#define VGG_TINY CF_MODEL("vgg-tiny.cfg")

TestSuite(solver_faults, .init = cf_setup, .fini = cf_teardown);

/* A training graph at the budget of the cheapest-peak baseline that
 * recomputes: checkpoint-all does not fit, a baseline incumbent does, and
 * the MILP still searches (the incumbent is not provably optimal: on 8
 * forward layers DTR's incumbent is the optimum, proved at once). */
static rm_problem *problem(void)
{
    rg_options o = {.forward = 9, .skip_prob = 0.3, .branch_prob = 0.2, .max_skip = 0, .max_bytes = 512};
    rm_problem *p = rg_training_problem(5, &o);
    cr_assert_not_null(p);
    rm_err e = {RM_OK, ""};
    int count;
    const rm_strategy_info *list = rm_strategy_list(&count);
    size_t all = 0, best = 0;
    for (int k = 0; k < count; k++) {
        rm_schedule *s;
        rm_sim_result r;
        cr_assert_eq(list[k].solve(&s, p, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
        rm_schedule_free(s);
        if (k == 0)
            all = r.peak_bytes;
        else if (r.peak_bytes < all && (!best || r.peak_bytes < best))
            best = r.peak_bytes;
    }
    cr_assert_gt(best, 0, "no baseline saves memory on the test graph");
    p->budget = p->fixed_bytes + best;
    return p;
}

/* solve() calls of an unarmed MILP: the relaxation first, the branch and
 * bound last (LP rounding's relaxations in between). */
static long milp_solves(rm_problem *p);

typedef struct outcome {
    int rc;
    rm_err e;
    rm_strategy_stats stats;
    long solves;
} outcome;

/* Runs strategy name on p with solve() armed; checks any schedule returned. */
static outcome run(const char *name, rm_problem *p, long nth, int code, fi_solve_mode mode, int sticky)
{
    outcome o;
    memset(&o, 0, sizeof o);
    rm_strategy_options opt = {.node_limit = 200};
    rm_schedule *s = NULL;
    fi_solve_fail(nth, code, mode, sticky);
    o.rc = rm_strategy_run(&s, &o.stats, rm_strategy_find(name), p, &opt, &o.e);
    o.solves = fi_solve_calls();
    fi_solve_fail(-1, 0, FI_SOLVE_FAKE, 0);
    if (o.rc == RM_OK) {
        rm_sim_result r;
        rm_err e = {RM_OK, ""};
        cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s: %s", name, e.msg);
        cr_assert(rm_sim_fits(p, &r), "%s: the schedule returned is over the budget", name);
    } else {
        cr_assert_null(s);
        cr_assert(o.e.msg[0], "%s: error %d without a message", name, o.rc);
    }
    rm_schedule_free(s);
    return o;
}

static long milp_solves(rm_problem *p)
{
    outcome o = run("milp", p, -1, 0, FI_SOLVE_FAKE, 0);
    cr_assert_eq(o.rc, RM_OK, "%s", o.e.msg);
    cr_assert_geq(o.solves, 2, "the test problem must reach the branch and bound (%ld solves)", o.solves);
    cr_assert_neq(o.stats.status, RM_STATUS_OPTIMAL, "the search must stop at the node limit, not prove optimality");
    return o.solves;
}

Test(solver_faults, the_unarmed_milp_reaches_the_branch_and_bound)
{
    rm_problem *p = problem();
    milp_solves(p);
    rm_problem_free(p);
}

/* A failed branch and bound (an engine's failure) degrades to the schedule
 * the MILP had, its incumbent, unproved: never an error where a schedule
 * exists (milp.c, step_search). */
static void expect_degraded(const outcome *o, const char *what)
{
    cr_expect_eq(o->rc, RM_OK, "%s in the branch and bound: %d %s", what, o->rc, o->e.msg);
    cr_expect_eq(o->stats.status, RM_STATUS_FEASIBLE, "%s in the branch and bound: status %s", what,
                 rm_status_name(o->stats.status));
    cr_expect(o->stats.source && strcmp(o->stats.source, "milp"), "%s: the incumbent is returned, not 'milp' (%s)",
              what, o->stats.source ? o->stats.source : "(none)");
}

Test(solver_faults, numerical_failure_fails_the_relaxation_and_degrades_the_search)
{
    rm_problem *p = problem();
    long bb = milp_solves(p) - 1;
    outcome o0 = run("milp", p, 0, NUMFAILURE, FI_SOLVE_FAKE, 0);
    cr_expect_eq(o0.rc, RM_ERR_SOLVER, "%d %s", o0.rc, o0.e.msg);
    cr_expect(strstr(o0.e.msg, "NUMFAILURE"), "%s", o0.e.msg);
    cr_expect(strstr(o0.e.msg, "LP relaxation"), "%s", o0.e.msg);
    cr_expect_eq(o0.stats.status, RM_STATUS_ERROR);
    outcome ob = run("milp", p, bb, NUMFAILURE, FI_SOLVE_FAKE, 0);
    expect_degraded(&ob, "NUMFAILURE");
    outcome o = run("lp_round", p, 0, NUMFAILURE, FI_SOLVE_FAKE, 0);
    cr_expect_eq(o.rc, RM_ERR_SOLVER, "%d %s", o.rc, o.e.msg);
    cr_expect(strstr(o.e.msg, "NUMFAILURE"), "%s", o.e.msg);
    rm_problem_free(p);
}

Test(solver_faults, lp_solve_out_of_memory_fails_the_relaxation_and_degrades_the_search)
{
    rm_problem *p = problem();
    long bb = milp_solves(p) - 1;
    outcome o = run("milp", p, 0, NOMEMORY, FI_SOLVE_FAKE, 0);
    cr_expect_eq(o.rc, RM_ERR_NOMEM, "%d %s", o.rc, o.e.msg);
    cr_expect(strstr(o.e.msg, "lp_solve ran out of memory"), "%s", o.e.msg);
    outcome ob = run("milp", p, bb, NOMEMORY, FI_SOLVE_FAKE, 0);
    expect_degraded(&ob, "NOMEMORY");
    rm_problem_free(p);
}

Test(solver_faults, infeasible_contradicted_by_an_incumbent_is_an_error)
{
    rm_problem *p = problem();
    /* The relaxation "infeasible" while the baselines' incumbent fits. */
    outcome o = run("milp", p, 0, INFEASIBLE, FI_SOLVE_FAKE, 0);
    cr_expect_eq(o.rc, RM_ERR_SOLVER, "%d %s", o.rc, o.e.msg);
    cr_expect(strstr(o.e.msg, "infeasible") && strstr(o.e.msg, "fits"), "%s", o.e.msg);
    /* Without an incumbent nothing contradicts lp_solve. */
    rm_milp_options mo;
    rm_milp_options_default(&mo);
    mo.node_limit = 200;
    mo.levers &= ~(unsigned)RM_MILP_INCUMBENT;
    rm_milp_result info;
    rm_schedule *s = NULL;
    rm_err e = {RM_OK, ""};
    fi_solve_fail(0, INFEASIBLE, FI_SOLVE_FAKE, 0);
    int rc = rm_strategy_milp(&s, &info, p, &mo, &e);
    cr_expect_eq(rc, RM_ERR_INFEASIBLE, "%d %s", rc, e.msg);
    cr_expect_eq(info.status, RM_STATUS_INFEASIBLE);
    cr_expect_null(s);
    /* The branch and bound's INFEASIBLE under the incumbent's cutoff means
     * "nothing cheaper": the incumbent is optimal. */
    o = run("milp", p, milp_solves(p) - 1, INFEASIBLE, FI_SOLVE_FAKE, 0);
    cr_expect_eq(o.rc, RM_OK, "%s", o.e.msg);
    cr_expect_eq(o.stats.status, RM_STATUS_OPTIMAL);
    rm_problem_free(p);
}

Test(solver_faults, a_limit_falls_back_to_the_incumbent)
{
    rm_problem *p = problem();
    /* The relaxation stopped by the time limit: no bound, the incumbent. */
    outcome o = run("milp", p, 0, TIMEOUT, FI_SOLVE_FAKE, 0);
    cr_expect_eq(o.rc, RM_OK, "%s", o.e.msg);
    cr_expect_eq(o.stats.status, RM_STATUS_FEASIBLE);
    /* The branch and bound stopped before finding anything, as lp_solve
     * answers a time limit: TIMEOUT, or SUBOPTIMAL with no improved solution. */
    int codes[] = {TIMEOUT, SUBOPTIMAL, USERABORT};
    long bb = milp_solves(p) - 1;
    for (int k = 0; k < 3; k++) {
        o = run("milp", p, bb, codes[k], FI_SOLVE_ABORTED, 0);
        cr_expect_eq(o.rc, RM_OK, "code %d: %s", codes[k], o.e.msg);
        cr_expect_eq(o.stats.status, RM_STATUS_FEASIBLE, "code %d", codes[k]);
        cr_expect(o.stats.has_bound && o.stats.gap > 0, "code %d: a gap is reported", codes[k]);
    }
    rm_problem_free(p);
}

Test(solver_faults, a_limit_without_incumbent_is_no_solution)
{
    rm_problem *p = problem();
    /* Without the incumbent lever the MILP solves twice: relaxation, then
     * branch and bound. */
    rm_milp_options mo;
    rm_milp_options_default(&mo);
    mo.node_limit = 200;
    mo.levers &= ~(unsigned)RM_MILP_INCUMBENT;
    int cases[][3] = {{0, TIMEOUT, FI_SOLVE_FAKE}, {1, TIMEOUT, FI_SOLVE_ABORTED}, {1, SUBOPTIMAL, FI_SOLVE_ABORTED}};
    for (int k = 0; k < 3; k++) {
        rm_milp_result info;
        rm_schedule *s = NULL;
        rm_err e = {RM_OK, ""};
        fi_solve_fail(cases[k][0], cases[k][1], (fi_solve_mode)cases[k][2], 0);
        int rc = rm_strategy_milp(&s, &info, p, &mo, &e);
        fi_solve_fail(-1, 0, FI_SOLVE_FAKE, 0);
        cr_expect_eq(rc, RM_ERR_INFEASIBLE, "case %d: %d %s", k, rc, e.msg);
        cr_expect_eq(info.status, RM_STATUS_NO_SOLUTION, "case %d", k);
        cr_expect(strstr(e.msg, "not proved infeasible"), "case %d: %s", k, e.msg);
        cr_expect_null(s);
    }
    /* lp_round with its relaxation stopped: nothing to round, and the
     * cheapest baseline (which fits this budget) is its answer. */
    outcome o = run("lp_round", p, 0, TIMEOUT, FI_SOLVE_FAKE, 0);
    cr_expect_eq(o.rc, RM_OK, "%d %s", o.rc, o.e.msg);
    rm_sim_result hr;
    rm_schedule *h = rm_best_baseline(p, 0, 0, NULL, &hr);
    cr_assert_not_null(h);
    cr_expect_eq(o.stats.sim.cost, hr.cost, "lp_round %g, the cheapest baseline %g", o.stats.sim.cost, hr.cost);
    rm_schedule_free(h);
    rm_problem_free(p);
}

/* ---- the CLI ------------------------------------------------------------------------------- */

Test(solver_faults, cli_exits_non_zero_where_no_schedule_results)
{
    /* 99%: checkpoint-all does not fit, so the MILP really solves. */
    fi_solve_fail(0, NUMFAILURE, FI_SOLVE_FAKE, 1);
    int rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "99%", "--strategy", "milp",
                      "--node-limit", "50", "--quiet", "--out", cf_path("s.txt"), NULL);
    /* Exit 2: the solver failed (1 is for "no schedule within the budget"). */
    cr_expect_eq(rc, 2, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, "NUMFAILURE"), "%s", cf_err);
    cr_expect_eq(cf_read(cf_path("s.txt"), &(size_t){0}), NULL, "no schedule file is written");
    /* With every strategy, the others still give a schedule: exit 0, milp an error row. */
    fi_solve_fail(0, NUMFAILURE, FI_SOLVE_FAKE, 1);
    rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "99%", "--strategy", "all", "--node-limit",
                  "50", "--quiet", NULL);
    cr_expect_eq(rc, 0, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, "milp failed") && strstr(cf_err, "lp_round failed"), "%s", cf_err);
    /* Training with the MILP. */
    fi_solve_fail(0, NUMFAILURE, FI_SOLVE_FAKE, 1);
    rc = cf_remat("train", "--model", VGG_TINY, "--data", "synthetic", "--batch", "2", "--budget", "99%", "--strategy",
                  "milp", "--node-limit", "50", "--steps", "1", "--samples", "4", "--quiet", NULL);
    cr_expect_eq(rc, 2, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, "NUMFAILURE"), "%s", cf_err);
    /* A limit with the incumbent: a schedule results, exit 0. */
    fi_solve_fail(0, TIMEOUT, FI_SOLVE_FAKE, 1);
    rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "99%", "--strategy", "milp", "--node-limit",
                  "50", "--quiet", "--out", cf_path("t.txt"), NULL);
    cr_expect_eq(rc, 0, "exit %d: %s", rc, cf_err);
    size_t n = 0;
    unsigned char *text = cf_read(cf_path("t.txt"), &n);
    cr_expect(text && n > 0, "the incumbent is written");
    free(text);
}

/* ---- budgets too small for the fixed memory ----------------------------------------------- */

/* test_cli.c checks plan with milp and all below the lower bound and with
 * 1KiB; test_trainer.c checks train with 1KiB. Here: every strategy alone,
 * maxbatch, explain, and train --batch auto, each with a budget that does
 * not hold the fixed bytes. */
Test(solver_faults, budget_below_the_fixed_memory)
{
    int count;
    const rm_strategy_info *list = rm_strategy_list_all(&count);
    for (int k = 0; k < count; k++) {
        int rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "4KiB", "--strategy", list[k].name,
                          "--quiet", NULL);
        cr_expect_eq(rc, 1, "%s: exit %d: %s", list[k].name, rc, cf_err);
        cr_expect(strstr(cf_err, "fixed"), "%s: %s", list[k].name, cf_err);
    }
    /* maxbatch too, on stderr like every other refusal. */
    int rc = cf_remat("maxbatch", "--model", VGG_TINY, "--budget", "4KiB", NULL);
    cr_expect_eq(rc, 1, "maxbatch: exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, "not even batch 1 fits: the budget 4.00 KiB does not even hold the fixed bytes"),
              "maxbatch: %s", cf_err);
    rc = cf_remat("explain", "--model", VGG_TINY, "--batch", "2", "--budget", "4KiB", NULL);
    cr_expect_eq(rc, 1, "explain: exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, "fixed"), "explain: %s", cf_err);
    rc = cf_remat("train", "--model", VGG_TINY, "--data", "synthetic", "--batch", "auto", "--budget", "4KiB", "--quiet",
                  NULL);
    cr_expect_eq(rc, 1, "train --batch auto: exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, "fixed") || strstr(cf_err, "batch 1"), "train --batch auto: %s", cf_err);
}
