/* The solver route explains itself: with REMAT_LOG=info it names each
 * decision (the shortcuts, the incumbent and its strategy, the solver's
 * answer with status, bound and gap); with REMAT_LOG=debug also each
 * baseline's answer, the LP's size and lp_solve's return codes; at the
 * default level it says nothing. stderr is captured into a file around
 * each call (rm_log reads REMAT_LOG on every call). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "random_graphs.h"
#include "simulate.h"
#include "strategy.h"

static char logbuf[1 << 16];

/* Runs strategy name on p with REMAT_LOG=level (NULL: unset) and returns
 * what it wrote to stderr (in logbuf). */
static const char *run_logged(const char *level, const char *name, rm_problem *p, int expect_rc)
{
    if (level)
        setenv("REMAT_LOG", level, 1);
    else
        unsetenv("REMAT_LOG");
    fflush(stderr);
    FILE *tmp = tmpfile();
    cr_assert_not_null(tmp);
    int saved = dup(2);
    cr_assert(saved >= 0);
    dup2(fileno(tmp), 2);
    rm_strategy_options o = {.node_limit = 100};
    rm_strategy_stats st;
    rm_schedule *s = NULL;
    rm_err e = {0};
    int rc = rm_strategy_run(&s, &st, rm_strategy_find(name), p, &o, &e);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    unsetenv("REMAT_LOG");
    rm_schedule_free(s);
    cr_assert_eq(rc, expect_rc, "%s: rc %d: %s", name, rc, e.msg);
    rewind(tmp);
    size_t got = fread(logbuf, 1, sizeof logbuf - 1, tmp);
    logbuf[got] = 0;
    fclose(tmp);
    return logbuf;
}

static rm_problem *mid_budget_problem(void)
{
    rg_options go = {8, 0.3, 0.2, 0, 4096};
    rm_problem *p = rg_training_problem(3, &go);
    cr_assert_not_null(p);
    rm_schedule *s = NULL;
    rm_err e = {0};
    rm_sim_result r;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK);
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK);
    rm_schedule_free(s);
    size_t lo = rm_problem_peak_lower_bound(p);
    p->budget = p->fixed_bytes + lo + (r.peak_bytes - lo) / 2;
    return p;
}

static void expect_line(const char *log, const char *what)
{
    cr_expect(strstr(log, what), "no \"%s\" in the log:\n%s", what, log);
}

Test(route, info_names_each_decision)
{
    rm_problem *p = mid_budget_problem();
    const char *log = run_logged("info", "milp", p, RM_OK);
    expect_line(log, "remat info: route milp: ");
    expect_line(log, "checkpoint-all (peak ");
    expect_line(log, ") does not fit: solving");
    expect_line(log, "remat info: route milp: incumbent: ");
    expect_line(log, ", bound ");
    expect_line(log, "gap ");
    expect_line(log, "LP bound ");
    expect_line(log, "remat info: strategy milp: ");
    cr_expect(!strstr(log, "remat debug:"), "debug lines at info:\n%s", log);

    log = run_logged("info", "lp_round", p, RM_OK);
    expect_line(log, "route lp_round: rounded cost ");
    expect_line(log, "LP bound ");

    size_t budget = p->budget;
    p->budget = p->fixed_bytes + rm_problem_peak_lower_bound(p) - 1;
    log = run_logged("info", "lp_round", p, RM_ERR_INFEASIBLE);
    expect_line(log, "route lp_round: below the trivial bound: infeasible, nothing to solve");
    expect_line(log, "strategy lp_round: infeasible");

    p->budget = 0;
    log = run_logged("info", "milp", p, RM_OK);
    expect_line(log, "): optimal, nothing to solve");
    expect_line(log, "strategy milp: optimal");
    p->budget = budget;
    rm_problem_free(p);
}

Test(route, debug_adds_baselines_lp_sizes_and_codes)
{
    rm_problem *p = mid_budget_problem();
    const char *log = run_logged("debug", "milp", p, RM_OK);
    expect_line(log, "remat info: route milp: ");
    expect_line(log, "remat debug: baseline chen_sqrtn: ");
    expect_line(log, "remat debug: lp model: ");
    expect_line(log, " rows, ");
    expect_line(log, " columns (");
    expect_line(log, "remat debug: lp_solve solve(): ");
    rm_problem_free(p);
}

Test(route, quiet_by_default)
{
    rm_problem *p = mid_budget_problem();
    const char *log = run_logged(NULL, "milp", p, RM_OK);
    cr_expect(!strstr(log, "remat info:") && !strstr(log, "remat debug:"), "%s", log);
    rm_problem_free(p);
}

/* A value it does not know is said once, not silently ignored; the level
 * names are case-insensitive. */
Test(route, unknown_level_is_reported_and_case_is_ignored)
{
    rm_problem *p = mid_budget_problem();
    const char *log = run_logged("verbose", "milp", p, RM_OK);
    expect_line(log, "remat warn: REMAT_LOG='verbose' is not error, warn, info or debug");
    cr_expect(!strstr(log, "remat info:"), "%s", log);
    const char *first = strstr(log, "REMAT_LOG='verbose'");
    cr_expect(first && !strstr(first + 1, "REMAT_LOG='verbose'"), "said once: %s", log);
    log = run_logged("INFO", "milp", p, RM_OK);
    expect_line(log, "remat info: route milp: ");
    rm_problem_free(p);
}
