/* The scheduling commands driven like a user would: `remat plan` on a tiny
 * model and on a problem file with every strategy (exit 0, a schedule file
 * the reader and simulator accept within budget), --out/--check round trips
 * and tampering, bad arguments failing fast with a clear message, the SVG
 * figures, `remat explain` and `remat maxbatch`. The MILP runs under node
 * limits only (deterministic), on graphs where it solves in milliseconds. */
#include <criterion/criterion.h>
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend_cuda.h"
#include "builder.h"
#include "cli_fixture.h"
#include "cli_util.h"
#include "commands.h"
#include "cost_file.h"
#include "figures.h"
#include "milp.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"
#include "trace.h"
#include "trainer.h"

#define TINY REMAT_SOURCE_DIR "/models/vgg-tiny.cfg"
#define RESNET_TINY REMAT_SOURCE_DIR "/models/resnet-tiny.cfg"

/* The example of docs/problem-format.md (budget 20000, fixed 4096). */
static const char *example = CF_EXAMPLE_HEADER CF_EXAMPLE_NODES;

/* Everything written to stderr so far. */
static char *err_text(void)
{
    return cf_text(cf_path("stderr"));
}
static char *out_text(void)
{
    return cf_text(cf_path("stdout"));
}

static size_t noremat_total(rm_problem *p)
{
    size_t budget = p->budget;
    p->budget = 0;
    rm_schedule *s;
    rm_sim_result r;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    rm_schedule_free(s);
    p->budget = budget;
    return p->fixed_bytes + r.peak_bytes;
}

/* The schedule file at path is valid for p and fits budget. */
static void expect_valid_schedule(const rm_problem *p, const char *path, size_t budget, const char *what)
{
    rm_schedule *s;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_schedule_read(&s, p, path, &e), RM_OK, "%s: %s", what, e.msg);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s: %s", what, e.msg);
    cr_assert_leq(p->fixed_bytes + r.peak_bytes, budget, "%s: peak %zu + %zu over %zu", what, r.peak_bytes,
                  p->fixed_bytes, budget);
    rm_schedule_free(s);
}

TestSuite(cli_plan, .init = cf_setup, .fini = cf_teardown);
TestSuite(cli_budget, .init = cf_setup, .fini = cf_teardown);
TestSuite(cli_svg, .init = cf_setup, .fini = cf_teardown);
TestSuite(cli_explain, .init = cf_setup, .fini = cf_teardown);
TestSuite(cli_maxbatch, .init = cf_setup, .fini = cf_teardown);

Test(cli_plan, every_strategy_on_a_tiny_model)
{
    rm_problem *p = cf_training_problem(TINY, 2);
    size_t full = noremat_total(p);
    int count;
    const rm_strategy_info *list = rm_strategy_list_all(&count);
    cr_assert_eq(count, 14);
    /* At the no-remat peak everything fits; at 97% recomputation is needed
     * and the solvers (and the searches that cover checkpoint-all) still fit. */
    for (int pct = 100; pct >= 97; pct -= 3) {
        size_t budget = (size_t)((double)full * pct / 100.0);
        char arg[16];
        snprintf(arg, sizeof arg, "%d%%", pct);
        for (int k = 0; k < count; k++) {
            const char *out = cf_path("s.txt");
            unlink(out);
            int rc = cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", arg, "--strategy", list[k].name,
                              "--node-limit", "2000", "--quiet", "--out", out, NULL);
            if (pct == 97 && rc == 1 && !list[k].solve_opt) continue; /* a fixed heuristic may not fit */
            cr_assert_eq(rc, 0, "%s at %s: exit %d: %s", list[k].name, arg, rc, err_text());
            char what[64];
            snprintf(what, sizeof what, "%s at %s", list[k].name, arg);
            expect_valid_schedule(p, out, budget, what);
        }
    }
    rm_problem_free(p);
}

Test(cli_plan, every_strategy_on_a_problem_file)
{
    const char *prob = cf_path("problem.txt");
    cf_write(prob, example);
    rm_problem *p;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_problem_read(&p, prob, &e), RM_OK, "%s", e.msg);
    int count;
    const rm_strategy_info *list = rm_strategy_list_all(&count);
    for (int k = 0; k < count; k++) {
        const char *out = cf_path("s.txt");
        unlink(out);
        /* No --budget: the file's 20000 bytes. */
        int rc = cf_remat("plan", "--problem", prob, "--strategy", list[k].name, "--node-limit", "1000", "--quiet",
                          "--out", out, NULL);
        cr_assert_eq(rc, 0, "%s: exit %d: %s", list[k].name, rc, err_text());
        expect_valid_schedule(p, out, 20000, list[k].name);
    }
    /* '-' spells '_' too. */
    cr_assert_eq(cf_remat("plan", "--problem", prob, "--strategy", "lp-round", "--quiet", NULL), 0, "%s", err_text());
    rm_problem_free(p);
}

Test(cli_plan, strategy_all_compares_every_strategy)
{
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "98%", "--strategy", "all",
                          "--node-limit", "2000", "--quiet", "--out", cf_path("best.txt"), NULL),
                 0, "%s", err_text());
    char *out = out_text();
    int count;
    const rm_strategy_info *list = rm_strategy_list_all(&count);
    for (int k = 0; k < count; k++) cr_assert(strstr(out, list[k].name), "%s missing from the table", list[k].name);
    cr_assert(strstr(out, "LP bound"));
    cr_assert(strstr(out, "cheapest: "));
    free(out);
    rm_problem *p = cf_training_problem(TINY, 2);
    expect_valid_schedule(p, cf_path("best.txt"), (size_t)((double)noremat_total(p) * 0.98), "all");
    rm_problem_free(p);
}

Test(cli_plan, single_strategy_prints_matrices_and_timeline)
{
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "97%", "--strategy", "milp",
                          "--node-limit", "2000", "--quiet", NULL),
                 0, "%s", err_text());
    char *out = out_text();
    cr_assert(strstr(out, "R and S, one row per stage"), "%s", out);
    cr_assert(strstr(out, "Memory timeline"), "%s", out);
    cr_assert(strstr(out, "budget"), "%s", out);
    /* Stage 0 computes the input: its row is a single '#'. */
    cr_assert(strstr(out, "    0 F input"), "%s", out);
    free(out);
}

Test(cli_plan, out_then_check_round_trip)
{
    const char *out = cf_path("s.txt");
    cr_assert_eq(cf_remat("plan", "--model", RESNET_TINY, "--batch", "2", "--budget", "90%", "--strategy",
                          "chen_greedy", "--quiet", "--out", out, NULL),
                 0, "%s", err_text());
    cr_assert_eq(cf_remat("plan", "--check", out, "--model", RESNET_TINY, "--batch", "2", NULL), 0, "%s", err_text());
    cr_assert_eq(cf_remat("plan", "--check", out, "--model", RESNET_TINY, "--batch", "2", "--budget", "90%", NULL), 0,
                 "%s", err_text());
    /* The same file does not fit a much smaller budget... */
    cr_assert_eq(cf_remat("plan", "--check", out, "--model", RESNET_TINY, "--batch", "2", "--budget", "50%", NULL), 1);
    /* ...and is no schedule for another model. */
    cr_assert_eq(cf_remat("plan", "--check", out, "--model", TINY, "--batch", "2", NULL), 1);
}

/* Replaces the first occurrence of from (after the line starting with
 * anchor) by to. */
static void tamper(const char *path, const char *anchor, const char *from, const char *to)
{
    char *text = cf_text(path);
    char *at = strstr(text, anchor);
    cr_assert_not_null(at, "no '%s' in %s", anchor, path);
    char *hit = strstr(at, from);
    cr_assert_not_null(hit);
    size_t n = strlen(text), lf = strlen(from), lt = strlen(to);
    char *res = malloc(n - lf + lt + 1);
    memcpy(res, text, (size_t)(hit - text));
    memcpy(res + (hit - text), to, lt);
    strcpy(res + (hit - text) + lt, hit + lf);
    cf_write(path, res);
    free(res);
    free(text);
}

Test(cli_plan, check_rejects_a_tampered_file)
{
    const char *out = cf_path("s.txt");
    const char *prob = cf_path("problem.txt");
    cf_write(prob, example);
    cr_assert_eq(
        cf_remat("plan", "--problem", prob, "--budget", "12000B", "--strategy", "milp", "--quiet", "--out", out, NULL),
        0, "%s", err_text());
    cr_assert_eq(cf_remat("plan", "--check", out, "--problem", prob, NULL), 0, "%s", err_text());
    char *orig = cf_text(out);

    /* A stated cost that disagrees with the simulator. */
    tamper(out, "\ncost ", "cost ", "cost 1");
    cr_assert_eq(cf_remat("plan", "--check", out, "--problem", prob, NULL), 1);
    char *msg = err_text();
    cr_assert(strstr(msg, "not a valid schedule"), "%s", msg);
    free(msg);

    /* An R line that lists the stage's own node. */
    cf_write(out, orig);
    tamper(out, "\nS ", "\nS ", "\nR 3 3\nS ");
    cr_assert_eq(cf_remat("plan", "--check", out, "--problem", prob, NULL), 1);
    msg = err_text();
    cr_assert(strstr(msg, "R lines list only recomputations"), "%s", msg);
    free(msg);

    /* An S line for a node the problem does not have. */
    cf_write(out, orig);
    tamper(out, "\nS ", "\nS ", "\nS 99 1\nS ");
    cr_assert_eq(cf_remat("plan", "--check", out, "--problem", prob, NULL), 1);
    free(orig);
}

/* Issue 13: two costs of 1e308 made `plan --out` write "cost inf" (which its
 * own --check refused) after the MILP called the schedule optimal at
 * "-nan%". Such costs are refused as the problem is read, before anything
 * is solved or written; the same for profiled seconds on a model. */
Test(cli_plan, costs_that_add_up_past_a_double_are_refused)
{
    const char *prob = cf_path("inf.txt"), *out = cf_path("s.txt");
    cf_write(prob, "problem 7 4096\n0 input forward 0 1024 -\n1 fc1 forward 1e308 2048 0\n2 relu1 forward 512 2048 1\n"
                   "3 loss loss 64 4 2\n4 loss.grad backward 64 2048 2,3\n5 relu1.grad backward 512 2048 2,4\n"
                   "6 fc1.grad backward 1e308 0 0,5\n");
    cr_assert_eq(
        cf_remat("plan", "--problem", prob, "--budget", "1GiB", "--out", out, "--strategy", "milp", "--quiet", NULL),
        1);
    char want[512];
    snprintf(
        want, sizeof want,
        "remat plan: %s:3: the costs up to node 1 (fc1) add up to more than 2.56813e+307, the largest finite "
        "number over the 7 nodes: a schedule may compute each node once per stage, and its cost must stay finite\n",
        prob);
    cr_assert_str_eq(cf_err, want);
    cr_assert_neq(access(out, F_OK), 0, "a schedule was written");

    /* vgg-tiny's nodes at batch 8, node 3 measured at 1e306 s: 23 of those overflow. */
    rm_problem *p = cf_training_problem(TINY, 8);
    rm_err e = {RM_OK, ""};
    rm_cost_file *c;
    cr_assert_eq(rm_cost_file_create(&c, p->n, "vgg-tiny", 8, "cpu", &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < p->n; i++) {
        snprintf(c->nodes[i].name, sizeof c->nodes[i].name, "%s", p->nodes[i].name);
        c->nodes[i].seconds = i == 0 ? 0 : 1e306;
    }
    /* The writer holds its files to what the reader accepts. */
    const char *costs = cf_path("vgg-tiny.costs");
    cr_assert_eq(rm_cost_file_write(c, costs, NULL, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "the largest finite number over the 23 nodes"), "%s", e.msg);
    cf_write(costs, "remat-costs 1 vgg-tiny 8 cpu 23 seconds\n");
    FILE *f = fopen(costs, "a");
    cr_assert_not_null(f);
    for (int i = 0; i < p->n; i++) fprintf(f, "%d %s %s\n", i, p->nodes[i].name, i ? "1e306" : "0");
    fclose(f);
    cr_assert_eq(
        cf_remat("plan", "--model", TINY, "--batch", "8", "--budget", "95%", "--costs", costs, "--quiet", NULL), 1);
    int node = (int)(DBL_MAX / 23 / 1e306); /* nodes 1..node fit, one more does not */
    snprintf(want, sizeof want,
             "remat plan: %s:%d: the costs up to node %d (%s) add up to more than %.6g, the largest finite number "
             "over the 23 nodes",
             costs, node + 3, node + 1, p->nodes[node + 1].name, DBL_MAX / 23);
    cr_assert(!strncmp(cf_err, want, strlen(want)), "%s\nwanted: %s", cf_err, want);
    rm_cost_file_free(c);
    rm_problem_free(p);
}

Test(cli_plan, unknown_strategy_and_bad_usage_fail_fast)
{
    clock_t t0 = clock();
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "80%", "--strategy", "nope", NULL), 1);
    char *msg = err_text();
    cr_assert(strstr(msg, "unknown strategy 'nope'"), "%s", msg);
    cr_assert(strstr(msg, "chen_sqrtn"), "the message lists the strategies: %s", msg);
    /* The synopsis and where the rest is, not the whole help: after 70
     * lines of it the message was off the screen. */
    cr_assert(strstr(msg, "usage: remat plan"), "%s", msg);
    cr_assert(strstr(msg, "`remat plan --help` describes every option."), "%s", msg);
    cr_assert(!strstr(msg, "Solves a rematerialization schedule"), "the whole help follows the error: %s", msg);
    free(msg);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--budget", "80%", "--strategy", "milp", NULL), 1);
    cr_assert_eq(cf_remat("plan", "--batch", "2", "--budget", "80%", "--strategy", "milp", NULL), 1);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--strategy", "milp", NULL), 1);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "80%", NULL), 1);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "0", "--budget", "80%", "--strategy", "milp", NULL), 1);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "80%", "--strategy", "milp",
                          "--time-limit", "soon", NULL),
                 1);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "80%", "--strategy", "milp",
                          "--frobnicate", NULL),
                 1);
    cr_assert_eq(cf_remat("plan", "--check", "x", "--model", TINY, "--batch", "2", "--strategy", "milp", NULL), 1);
    cr_assert_eq(
        cf_remat("plan", "--model", "/nonexistent.cfg", "--batch", "2", "--budget", "80%", "--strategy", "milp", NULL),
        1);
    /* --out and --svg are written after the solve; one that cannot be written is
     * refused before it. */
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "80%", "--strategy", "milp",
                          "--time-limit", "0", "--out", cf_dir, NULL),
                 1);
    msg = err_text();
    cr_assert(strstr(msg, "is a directory"), "%s", msg);
    free(msg);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "80%", "--strategy", "milp",
                          "--time-limit", "0", "--svg", "/nonexistent/dir/fig", NULL),
                 1);
    msg = err_text();
    cr_assert(strstr(msg, "/nonexistent/dir/fig-rs.svg"), "%s", msg);
    free(msg);
    /* A forgotten value: the next option is not taken for it (a file named
     * --quiet written, the flag lost); as --out=--quiet it is a file name. */
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "80%", "--strategy", "milp", "--out",
                          "--quiet", NULL),
                 1);
    msg = err_text();
    cr_assert(strstr(msg, "--out needs a value, not the option --quiet"), "%s", msg);
    free(msg);
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "80%", "--svg", "-q", NULL), 1);
    msg = err_text();
    cr_assert(strstr(msg, "--svg needs a value, not the option --quiet"), "%s", msg);
    free(msg);
    cr_assert_lt((double)(clock() - t0) / CLOCKS_PER_SEC, 1.0);
}

Test(cli_plan, every_strategy_is_in_the_help)
{
    int count;
    const rm_strategy_info *list = rm_strategy_list_all(&count);
    cr_assert_eq(cf_remat("plan", "--help", NULL), 0);
    char *out = out_text();
    for (int k = 0; k < count; k++) cr_assert(strstr(out, list[k].name), "%s is not in `plan --help`", list[k].name);
    free(out);
}

Test(cli_budget, parses_sizes_and_percentages)
{
    struct {
        const char *s;
        int percent;
        double pct;
        size_t bytes;
    } ok[] = {
        {"6GiB", 0, 0, (size_t)6 << 30},
        {"512MiB", 0, 0, (size_t)512 << 20},
        {"512mib", 0, 0, (size_t)512 << 20},
        {"1.5e9", 0, 0, 1500000000},
        {"1500000000B", 0, 0, 1500000000},
        {"16GB", 0, 0, 16000000000},
        {"2KiB", 0, 0, 2048},
        {"3kb", 0, 0, 3000},
        {"1TiB", 0, 0, 1099511627776},
        {"80%", 1, 80, 0},
        {"12.5%", 1, 12.5, 0},
        {"150%", 1, 150, 0},
        {"0.5KiB", 0, 0, 512},
        /* Bytes without a unit from RM_CLI_BARE_BYTES_MIN up; below, with B. */
        {"1000000", 0, 0, 1000000},
        {"80B", 0, 0, 80},
        /* Whole numbers are exact up to 2^62, where a double rounds. */
        {"4611686018427387903", 0, 0, RM_PROBLEM_MAX_BYTES - 1},
        {"4611686018427387904B", 0, 0, RM_PROBLEM_MAX_BYTES},
        {"4194304TiB", 0, 0, RM_PROBLEM_MAX_BYTES},
    };
    for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
        rm_cli_budget b;
        char why[256] = "";
        cr_assert_eq(rm_cli_parse_budget(&b, ok[k].s, why, sizeof why), 0, "%s: %s", ok[k].s, why);
        cr_assert_eq(b.percent, ok[k].percent, "%s", ok[k].s);
        cr_assert_eq(b.pct, ok[k].pct, "%s: %.17g", ok[k].s, b.pct);
        cr_assert_eq(b.bytes, ok[k].bytes, "%s: %zu", ok[k].s, b.bytes);
    }
    rm_cli_budget b = rm_cli_budget_percent(80);
    cr_assert_eq(rm_cli_budget_bytes(&b, 1000), 800);
    /* A percentage past what any problem holds means the same as 2^62. */
    b = rm_cli_budget_percent(100000);
    cr_assert_eq(rm_cli_budget_bytes(&b, RM_PROBLEM_MAX_BYTES / 2), RM_PROBLEM_MAX_BYTES);
    const char *bad[] = {"",     "abc",   "16G",   "6g",    "-5GiB",   "0",   "0%",    "12XB", "80%%",     "nan", "inf",
                         "0x10", " 5GiB", "5 GiB", "1e400", "1e30TiB", "GiB", "5GiBs", "0.1",  "1000001%", "1e",  ".%"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        char why[256] = "";
        cr_assert_eq(rm_cli_parse_budget(&b, bad[k], why, sizeof why), -1, "'%s' was accepted", bad[k]);
        cr_assert_gt(strlen(why), 5, "'%s': no reason", bad[k]);
    }
    /* Never wrapped or converted to 0: more than 2^62 bytes is refused. */
    const char *huge[] = {"1e400",     "18446744073709551615", "1e30", "99999999999999999999999", "4611686018427387905",
                          "4194305TiB"};
    for (size_t k = 0; k < sizeof huge / sizeof huge[0]; k++) {
        char why[256], want[256];
        cr_assert_eq(rm_cli_parse_budget(&b, huge[k], why, sizeof why), -1, "%s", huge[k]);
        snprintf(want, sizeof want,
                 "'%s' is too large: budgets go up to 2^62 bytes (4 EiB), more than any problem holds", huge[k]);
        cr_assert_str_eq(why, want);
    }
    char why[256];
    cr_assert_eq(rm_cli_parse_budget(&b, "16G", why, sizeof why), -1);
    cr_assert_str_eq(why, "'16G' is ambiguous: say 16GiB (powers of 1024) or 16GB (powers of 1000)");
    /* A bare 80 is a forgotten unit far more often than 80 bytes. */
    cr_assert_eq(rm_cli_parse_budget(&b, "80", why, sizeof why), -1);
    cr_assert_str_eq(why, "'80' has no unit: write 80B for 80 bytes, or a size (80GiB, 80GB) or a percentage of the "
                          "no-remat peak (80%); a number without a unit is bytes only from 1000000 up");
    cr_assert_eq(rm_cli_parse_budget(&b, "999999", why, sizeof why), -1);
    cr_assert(strstr(why, "'999999' has no unit"), "%s", why);
    cr_assert_eq(rm_cli_parse_budget(&b, "0.1B", why, sizeof why), -1);
    cr_assert_str_eq(why, "'0.1B' is not a whole number of bytes");
    /* 9.5B was cut to 9 bytes without a word; 1.5KiB is a whole 1536. */
    cr_assert_eq(rm_cli_parse_budget(&b, "9.5B", why, sizeof why), -1);
    cr_assert_str_eq(why, "'9.5B' is not a whole number of bytes");
    cr_assert_eq(rm_cli_parse_budget(&b, "1000000.5", why, sizeof why), -1);
    cr_assert_eq(rm_cli_parse_budget(&b, "1.5KiB", why, sizeof why), 0);
    cr_assert_eq(b.bytes, 1536);
}

Test(cli_budget, bad_budget_strings_exit_1)
{
    const char *bad[] = {"abc", "16G", "-1GiB", "0", "12XB", "80%%", "nan"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", bad[k], "--strategy", "milp", NULL),
                     1, "%s", bad[k]);
        cr_assert_eq(cf_remat("explain", "--model", TINY, "--batch", "2", "--budget", bad[k], NULL), 1, "%s", bad[k]);
        cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", bad[k], NULL), 1, "%s", bad[k]);
    }
    char *msg = err_text();
    cr_assert(strstr(msg, "--budget: "), "%s", msg);
    free(msg);
}

Test(cli_budget, below_the_lower_bound_is_refused_at_once)
{
    rm_problem *p = cf_training_problem(RESNET_TINY, 4);
    size_t need = p->fixed_bytes + rm_problem_peak_lower_bound(p);
    rm_problem_free(p);
    char arg[32];
    snprintf(arg, sizeof arg, "%zuB", need - 1);
    clock_t t0 = clock();
    /* The MILP would otherwise be asked to prove it. */
    cr_assert_eq(cf_remat("plan", "--model", RESNET_TINY, "--batch", "4", "--budget", arg, "--strategy", "milp", NULL),
                 1);
    cr_assert_eq(cf_remat("plan", "--model", RESNET_TINY, "--batch", "4", "--budget", arg, "--strategy", "all", NULL),
                 1);
    cr_assert_eq(cf_remat("explain", "--model", RESNET_TINY, "--batch", "4", "--budget", arg, NULL), 1);
    cr_assert_lt((double)(clock() - t0) / CLOCKS_PER_SEC, 1.0);
    char *msg = err_text();
    cr_assert(strstr(msg, "below the smallest memory any schedule needs"), "%s", msg);
    cr_assert(strstr(msg, "no schedule exists"), "%s", msg);
    free(msg);
    /* At exactly the bound the budget is accepted and handed to the strategy
     * (which may still find nothing: exit 1, but no refusal message). */
    cr_assert_not_null(freopen(cf_path("stderr"), "w", stderr));
    snprintf(arg, sizeof arg, "%zuB", need);
    int rc = cf_remat("plan", "--model", RESNET_TINY, "--batch", "4", "--budget", arg, "--strategy", "chen_greedy",
                      "--quiet", NULL);
    cr_assert(rc == 0 || rc == 1, "exit %d", rc);
    msg = err_text();
    cr_assert_null(strstr(msg, "below the smallest memory"), "%s", msg);
    free(msg);
    /* Not even the fixed bytes. */
    cr_assert_eq(
        cf_remat("plan", "--model", RESNET_TINY, "--batch", "4", "--budget", "1KiB", "--strategy", "milp", NULL), 1);
    msg = err_text();
    cr_assert(strstr(msg, "fixed bytes"), "%s", msg);
    free(msg);
}

/* Issue 13: a problem file's budget of 2^64 - 1 went through a double and
 * came out "0 B"; budgets over 2^62 bytes, more than any problem holds, are
 * refused with the reason, from a file or from --budget, by every command. */
Test(cli_budget, budgets_over_2_62_are_refused_never_zero)
{
    const char *prob = cf_path("huge.txt");
    cf_write(prob, "problem 7 4096 18446744073709551615\n" CF_EXAMPLE_NODES);
    char want[512];
    const char *cmd[] = {"plan", "explain"};
    for (int c = 0; c < 2; c++) {
        snprintf(want, sizeof want,
                 "remat %s: %s:1: the budget 18446744073709551615 is more than 2^62 bytes (4 EiB), more than any "
                 "problem holds (0 means unlimited)\n",
                 cmd[c], prob);
        cr_assert_eq(cf_remat(cmd[c], "--problem", prob, "--quiet", NULL), 1);
        cr_assert_str_eq(cf_err, want);
    }
    const char *huge[] = {"18446744073709551615", "1e30", "99999999999999999999999"};
    for (size_t k = 0; k < sizeof huge / sizeof huge[0]; k++) {
        snprintf(want, sizeof want,
                 "--budget: '%s' is too large: budgets go up to 2^62 bytes (4 EiB), more than any problem holds\n",
                 huge[k]);
        const char *cmds[][12] = {
            {"plan", "--problem", prob, "--budget", huge[k], NULL},
            {"explain", "--problem", prob, "--budget", huge[k], NULL},
            {"maxbatch", "--model", TINY, "--budget", huge[k], NULL},
            {"train", "--model", TINY, "--data", "synthetic", "--budget", huge[k], NULL},
        };
        for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
            cr_assert_eq(cf_remat_args(cmds[c]), 1, "%s %s", cmds[c][0], huge[k]);
            cr_assert(strstr(cf_err, want), "%s: %s", cmds[c][0], cf_err);
        }
    }
    /* 2^62 itself is a budget, exactly, and holds everything. */
    cf_write(prob, CF_EXAMPLE_HEADER CF_EXAMPLE_NODES);
    cr_assert_eq(cf_remat("plan", "--problem", prob, "--budget", "4611686018427387904", "--strategy", "checkpoint_all",
                          "--quiet", NULL),
                 0, "%s", cf_err);
    char *out = out_text();
    cr_assert(strstr(out, "\nbudget       4.00 EiB ("), "%s", out);
    free(out);
}

/* One byte under the lower bound printed "10.00 KiB is below ... 10.00 KiB":
 * figures that round the same are followed by their exact bytes. */
Test(cli_budget, figures_that_round_alike_show_their_bytes)
{
    const char *prob = cf_path("two-layer.txt");
    cf_write(prob, example);
    cr_assert_eq(cf_remat("plan", "--problem", prob, "--budget", "10239B", NULL), 1);
    cr_assert_str_eq(cf_err, "remat plan: the budget 10.00 KiB (10239 bytes) is below the smallest memory any schedule "
                             "needs (the trivial lower bound), 10.00 KiB (10240 bytes) = fixed 4.00 KiB + 6.00 KiB for "
                             "computing 'relu1.grad' "
                             "with its inputs resident (90.9% of the no-remat peak 11.00 KiB); no schedule exists\n");
    cr_assert_eq(cf_remat("explain", "--problem", prob, "--budget", "4095B", NULL), 1);
    cr_assert_str_eq(cf_err, "remat explain: the budget 4.00 KiB (4095 bytes) does not even hold the fixed bytes "
                             "4.00 KiB (4096 bytes) (all that training holds besides activations); no schedule "
                             "exists\n");
    cr_assert_eq(cf_remat("plan", "--problem", prob, "--budget", "4096B", NULL), 1);
    cr_assert_str_eq(cf_err, "remat plan: the budget 4.00 KiB is exactly the fixed bytes (all that training holds "
                             "besides activations), leaving nothing for activations; no schedule exists\n");
    /* Figures that differ once rounded keep their short form. */
    cr_assert_eq(cf_remat("plan", "--problem", prob, "--budget", "3000B", NULL), 1);
    cr_assert_str_eq(cf_err, "remat plan: the budget 2.93 KiB does not even hold the fixed bytes 4.00 KiB (all that "
                             "training holds besides activations); no schedule exists\n");
}

/* Occurrences of needle in hay. */
static int count_of(const char *hay, const char *needle)
{
    int c = 0;
    for (const char *h = strstr(hay, needle); h; h = strstr(h + 1, needle)) c++;
    return c;
}

static void expect_svg(const char *path)
{
    char *svg = cf_text(path);
    size_t n = strlen(svg);
    while (n && (svg[n - 1] == '\n' || svg[n - 1] == ' ')) svg[--n] = '\0';
    cr_assert_eq(strncmp(svg, "<svg", 4), 0, "%s does not start with <svg", path);
    cr_assert(n >= 6 && !strcmp(svg + n - 6, "</svg>"), "%s does not end with </svg>", path);
    cr_assert_eq(count_of(svg, "<svg"), 1);
    /* Every element is closed: as many '<' as '>' (no text contains either). */
    cr_assert_eq(count_of(svg, "<"), count_of(svg, ">"), "%s", path);
    free(svg);
}

Test(cli_svg, plan_writes_well_formed_figures)
{
    const char *prefix = cf_path("fig");
    cr_assert_eq(cf_remat("plan", "--model", TINY, "--batch", "2", "--budget", "97%", "--strategy", "lp_round",
                          "--quiet", "--svg", prefix, NULL),
                 0, "%s", err_text());
    rm_problem *p = cf_training_problem(TINY, 2);
    int n = p->n;
    rm_problem_free(p);
    expect_svg(cf_path("fig-rs.svg"));
    expect_svg(cf_path("fig-memory.svg"));
    char *rs = cf_text(cf_path("fig-rs.svg"));
    /* One rect per R/S cell: R's lower triangle with its diagonal and S's
     * strict lower triangle, n*n together. */
    cr_assert_eq(count_of(rs, "<rect class=\"cell-"), n * n);
    cr_assert_eq(count_of(rs, "class=\"cell-new\""), n, "one first computation per stage");
    cr_assert(strstr(rs, "backward stage"));
    free(rs);
    char *mem = cf_text(cf_path("fig-memory.svg"));
    cr_assert(strstr(mem, "budget"));
    cr_assert(strstr(mem, "fixed"));
    cr_assert(strstr(mem, "<polygon"));
    free(mem);
}

Test(cli_svg, library_figures_count_cells_and_recomputations)
{
    const char *prob = cf_path("problem.txt");
    cf_write(prob, example);
    rm_problem *p;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_problem_read(&p, prob, &e), RM_OK, "%s", e.msg);
    p->budget = 12000;
    rm_schedule *s;
    cr_assert_eq(rm_strategy_milp(&s, NULL, p, NULL, &e), RM_OK, "%s", e.msg);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_figure_rs_svg(cf_path("a.svg"), p, s, "a <title> & more", &e), RM_OK, "%s", e.msg);
    rm_schedule_report rep;
    cr_assert_eq(rm_schedule_report_of(&rep, p, s, NULL, 0, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_figure_memory_svg(cf_path("b.svg"), p, &rep, NULL, &e), RM_OK, "%s", e.msg);
    rm_schedule_report_free(&rep);
    expect_svg(cf_path("a.svg"));
    expect_svg(cf_path("b.svg"));
    char *rs = cf_text(cf_path("a.svg"));
    cr_assert_eq(count_of(rs, "<rect class=\"cell-"), p->n * p->n);
    cr_assert_eq(count_of(rs, "class=\"cell-re\""), (int)r.recomputations);
    cr_assert(strstr(rs, "a &lt;title&gt; &amp; more"), "the title is escaped");
    free(rs);
    /* A path that cannot be written is an error, not a crash. */
    cr_assert_eq(rm_figure_rs_svg("/nonexistent/dir/x.svg", p, s, NULL, &e), RM_ERR_IO);
    rm_schedule_free(s);
    rm_problem_free(p);
}

Test(cli_explain, explains_recomputations_and_the_peak)
{
    cr_assert_eq(cf_remat("explain", "--model", TINY, "--batch", "8", "--budget", "95%", "--strategy", "lp_round",
                          "--quiet", NULL),
                 0, "%s", err_text());
    char *out = out_text();
    cr_assert(strstr(out, "What the budget means"), "%s", out);
    cr_assert(strstr(out, "No schedule can go below"), "%s", out);
    cr_assert(strstr(out, "What is recomputed, and why"), "%s", out);
    cr_assert(strstr(out, "recomputed in stage"), "%s", out);
    cr_assert(strstr(out, "Where the peak is"), "%s", out);
    cr_assert(strstr(out, "Overhead"), "%s", out);
    free(out);
    /* A budget that holds the no-remat peak: nothing to recompute. */
    cr_assert_eq(cf_remat("explain", "--model", TINY, "--batch", "8", "--budget", "100%", "--quiet", NULL), 0, "%s",
                 err_text());
    out = out_text();
    cr_assert(strstr(out, "Nothing: every value is computed once"), "%s", out);
    free(out);
}

/* As `remat plan` does, explain takes a problem file's own budget when no
 * --budget is given (it used to require --budget even then). */
Test(cli_explain, a_problem_files_budget_is_the_default)
{
    const char *prob = cf_path("two-layer.txt");
    FILE *f = fopen(prob, "w");
    cr_assert_not_null(f);
    fputs("problem 7 4096 11000\n" CF_EXAMPLE_NODES, f);
    fclose(f);
    cr_assert_eq(cf_remat("explain", "--problem", prob, "--strategy", "milp", "--quiet", NULL), 0, "%s", err_text());
    char *out = out_text();
    cr_assert(strstr(out, "The device budget is 10.74 KiB."), "%s", out);
    free(out);
    f = fopen(prob, "w");
    cr_assert_not_null(f);
    fputs("problem 7 4096\n" CF_EXAMPLE_NODES, f);
    fclose(f);
    cr_assert_eq(cf_remat("explain", "--problem", prob, "--quiet", NULL), 1);
    cr_assert(strstr(cf_err, "the problem file sets none"), "%s", cf_err);
}

Test(cli_maxbatch, runs_and_refuses_percentages)
{
    cr_assert_eq(
        cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--strategies", "chen_greedy,ogc", "--quiet", NULL),
        0, "%s", err_text());
    char *out = out_text();
    cr_assert(strstr(out, "checkpoint_all"), "checkpoint-all is always measured: %s", out);
    cr_assert(strstr(out, "chen_greedy"));
    cr_assert(strstr(out, "ogc"));
    free(out);
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "80%", NULL), 1);
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--strategies", "chen_greedy,nope", NULL),
                 1);
    /* Not even batch 1 fits. */
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "100KiB", "--quiet", NULL), 1);
}

/* What the last command wrote to stdout (the fixture's file accumulates). */
static char *out_since(size_t before)
{
    char *all = out_text();
    cr_assert_geq(strlen(all), before);
    char *mine = strdup(all + before);
    free(all);
    return mine;
}

static size_t out_len(void)
{
    char *all = out_text();
    size_t n = strlen(all);
    free(all);
    return n;
}

/* The batch in a strategy's row of maxbatch's table (-1: no such row). */
static int row_batch(const char *out, const char *name, double *overhead)
{
    char key[64];
    snprintf(key, sizeof key, "\n%s ", name);
    const char *r = strstr(out, key);
    int batch = -1;
    char ov[32] = "";
    if (!r || sscanf(r + strlen(key), "%d %*s %31s", &batch, ov) < 1) return -1;
    if (overhead) *overhead = ov[0] == '+' ? atof(ov + 1) : -1;
    return batch;
}

/* The overhead cap: 0% leaves every strategy at checkpoint-all's batch; a
 * looser cap never gives a smaller batch; every row's overhead is within
 * the cap the header states. */
Test(cli_maxbatch, the_overhead_cap_orders_the_batches)
{
    const char *caps[] = {"0%", "1fwd", "none"};
    int prev[3] = {0, 0, 0};
    const char *names[] = {"chen_greedy", "ogc", "milp"};
    for (int c = 0; c < 3; c++) {
        size_t before = out_len();
        cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--strategies", "chen_greedy,ogc,milp",
                              "--max-overhead", caps[c], "--quiet", NULL),
                     0, "%s", err_text());
        char *out = out_since(before);
        int all = row_batch(out, "checkpoint_all", NULL);
        cr_assert_gt(all, 0, "%s", out);
        double cap_pct = -1;
        const char *line = strstr(out, "overhead cap ");
        cr_assert_not_null(line, "%s", out);
        const char *plus = strstr(line, "(+");
        if (c == 1) cr_assert(plus && sscanf(plus, "(+%lf%%", &cap_pct) == 1, "%s", line);
        for (int k = 0; k < 3; k++) {
            double ov = -1;
            int b = row_batch(out, names[k], &ov);
            cr_assert_geq(b, 0, "%s: %s", names[k], out);
            if (c == 0 && b > 0) cr_assert_eq(b, all, "0%%: %s fits %d, checkpoint-all %d", names[k], b, all);
            if (c == 1 && b > 0)
                cr_assert_leq(ov, cap_pct + 1e-9, "%s: +%g%% over the cap +%g%%", names[k], ov, cap_pct);
            if (!strcmp(names[k], "milp")) cr_assert_geq(b, all, "the MILP below checkpoint-all");
            cr_assert_geq(b, prev[k], "%s: %d under cap %s, %d under a tighter one", names[k], b, caps[c], prev[k]);
            prev[k] = b;
        }
        free(out);
    }
    const char *bad[] = {"fwd",     "-1%",   "abc",   "0fwd",  "50%%", "1e6%", "nan",  "1e308fwd",
                         "1001fwd", "0x10%", " 1fwd", "+1fwd", "50",   "-0%",  "inf%", "1FWD"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--max-overhead", bad[k], NULL), 1, "%s",
                     bad[k]);
        cr_assert(strstr(cf_err, "--max-overhead must be"), "%s: %s", bad[k], cf_err);
    }
}

/* Checkmate's accounting counts less as fixed (parameters and gradients,
 * not momentum, labels or workspace), so checkpoint-all fits at least as
 * large a batch, and sizes are in powers of 1000. */
Test(cli_maxbatch, checkmate_accounting)
{
    int batch[2];
    const char *acc[] = {"remat", "checkmate"};
    for (int a = 0; a < 2; a++) {
        size_t before = out_len();
        cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MB", "--strategies", "chen_greedy",
                              "--accounting", acc[a], "--quiet", NULL),
                     0, "%s", err_text());
        char *out = out_since(before);
        batch[a] = row_batch(out, "checkpoint_all", NULL);
        cr_assert(strstr(out, a ? " MB " : " MiB "), "%s", out);
        cr_assert(strstr(out, a ? "accounting   checkmate" : "accounting   remat"), "%s", out);
        free(out);
    }
    cr_assert_gt(batch[1], batch[0], "checkmate %d, remat %d", batch[1], batch[0]);
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MB", "--accounting", "paper", NULL), 1);
}

/* --input replaces the config's input size; a size the model cannot take
 * is refused naming the config line and the override. */
Test(cli_maxbatch, input_size_override)
{
    const char *unet = REMAT_SOURCE_DIR "/models/unet-tiny.cfg";
    int batch[2];
    const char *sizes[] = {"32x32", "64x96"};
    for (int k = 0; k < 2; k++) {
        size_t before = out_len();
        cr_assert_eq(cf_remat("maxbatch", "--model", unet, "--budget", "64MiB", "--strategies", "chen_greedy",
                              "--input", sizes[k], "--quiet", NULL),
                     0, "%s", err_text());
        char *out = out_since(before);
        batch[k] = row_batch(out, "checkpoint_all", NULL);
        cr_assert(strstr(out, sizes[k]), "%s", out);
        free(out);
    }
    cr_assert_gt(batch[0], batch[1], "a 6x larger input fits a smaller batch: %d vs %d", batch[0], batch[1]);
    /* A cost file was measured at the config's size: refused with another. */
    cr_assert_eq(cf_remat("maxbatch", "--model", unet, "--budget", "64MiB", "--input", "64x96", "--costs",
                          cf_path("any.costs"), NULL),
                 1);
    cr_assert(strstr(cf_err, "--costs was measured at the config's input size"), "%s", cf_err);
    cr_assert_eq(cf_remat("maxbatch", "--model", unet, "--budget", "64MiB", "--input", "30x30", NULL), 1);
    cr_assert(strstr(cf_err, "at --input 30x30: ") && strstr(cf_err, "unet-tiny.cfg:"), "%s", cf_err);
    const char *bad[] = {"32",     "32x",    "x32",    "0x32", "32x32x3", "-4x4", "4294967328x4294967328",
                         " 32x32", "+32x32", "65537x1"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cr_assert_eq(cf_remat("maxbatch", "--model", unet, "--budget", "64MiB", "--input", bad[k], NULL), 1, "%s",
                     bad[k]);
        cr_assert(strstr(cf_err, "--input must be"), "%s: %s", bad[k], cf_err);
    }
}

/* --device cuda counts the GPU's fixed bytes (the cuBLAS workspace is read
 * off a live backend), so without a GPU, or in a build without CUDA, it
 * refuses plainly before any search; --device cpu is the default. */
Test(cli_maxbatch, device_cuda_without_a_gpu)
{
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--device", "tpu", NULL), 1);
    char *err = err_text();
    cr_assert(strstr(err, "--device must be cpu or cuda, got 'tpu'"), "%s", err);
    free(err);
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--strategies", "chen_greedy", "--device",
                          "cpu", "--quiet", NULL),
                 0);
    rm_err e = {RM_OK, ""};
    rm_backend *be = NULL;
    if (rm_backend_cuda_create(&be, 0, &e) == RM_OK) { /* a GPU here: the GPU suite covers it */
        rm_backend_free(be);
        return;
    }
    char *before = out_text();
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--device", "cuda", "--quiet", NULL), 1);
    err = err_text();
    cr_assert(strstr(err, "remat maxbatch: cannot search on the GPU: "), "%s", err);
    cr_assert(strstr(err, "no CUDA support") || strstr(err, "no usable GPU"), "%s", err);
    free(err);
    char *after = out_text();
    cr_assert_str_eq(after, before, "nothing on stdout without a GPU");
    free(before), free(after);
}

/* Issue 13: maxbatch with a huge budget on a huge model failed with "too
 * large to address" from the first probe past the model's limit. Such a
 * batch does not fit: the answer is the largest batch that works, and the
 * bound line says what stopped it. One input of 2^42 elements here. */
Test(cli_maxbatch, batches_too_large_to_build_do_not_fit)
{
    const char *cfg = cf_path("wide.cfg");
    cf_write(cfg, "[net]\nchannels=16384\nheight=16384\nwidth=16384\n[global_avgpool]\n[linear]\nout=2\n"
                  "[softmax_xent]\n");
    size_t before = out_len();
    cr_assert_eq(cf_remat("maxbatch", "--model", cfg, "--budget", "4611686018427387904", "--strategies", "chen_greedy",
                          "--max-batch", "1073741824", "--quiet", NULL),
                 0, "%s", cf_err);
    char *out = out_since(before);
    int bound = 0;
    const char *line = strstr(out, "\nbound        batch ");
    cr_assert(line && sscanf(line, "\nbound        batch %d:", &bound) == 1, "%s", out);
    cr_assert_gt(bound, 1);
    cr_assert_eq(row_batch(out, "checkpoint_all", NULL), bound, "%s", out);
    cr_assert_eq(row_batch(out, "chen_greedy", NULL), bound, "%s", out);
    /* The reason is the error of building the next batch, word for word. */
    rm_err e = {RM_OK, ""};
    rm_model *m;
    cr_assert_eq(rm_model_load(&m, cfg, &e), RM_OK, "%s", e.msg);
    rm_optim_options sgd = rm_optim_options_default(RM_OPTIM_SGD);
    rm_problem *p = NULL;
    cr_assert_eq(rm_training_problem(&p, NULL, m, bound, &sgd, NULL, NULL, RM_COST_SAME_BATCH, &e), RM_OK, "%s", e.msg);
    rm_problem_free(p);
    cr_assert_neq(rm_training_problem(&p, NULL, m, bound + 1, &sgd, NULL, NULL, RM_COST_SAME_BATCH, &e), RM_OK);
    rm_model_free(m);
    char want[800];
    snprintf(want, sizeof want, "\nbound        batch %d: above it the problem is too large for any device (%s)\n",
             bound, e.msg);
    cr_assert(strstr(out, want), "'%s' not in:\n%s", want, out);
    free(out);
}

/* Issue 13: the batch limits disagreed (maxbatch 2^30, graph 1e9, train
 * 2^24). One limit, RM_MAX_BATCH (2^30), for every command (and cost
 * files). */
Test(cli_plan, one_batch_limit_for_every_command)
{
    char why[128];
    long v = 0;
    cr_assert_eq(rm_cli_parse_batch(&v, "1073741824", why, sizeof why), 0);
    cr_assert_eq(v, RM_MAX_BATCH);
    const char *over = "1073741825";
    const char *cmds[][12] = {
        {"plan", "--model", TINY, "--batch", over, "--budget", "1GiB", NULL},
        {"explain", "--model", TINY, "--batch", over, "--budget", "1GiB", NULL},
        {"profile", "--model", TINY, "--batch", over, NULL},
        {"graph", "--model", TINY, "--batch", over, NULL},
    };
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        char want[160];
        snprintf(want, sizeof want, "remat %s: --batch must be an integer from 1 to 1073741824, got '1073741825'\n",
                 cmds[k][0]);
        cr_assert_eq(cf_remat_args(cmds[k]), 1, "%s", cmds[k][0]);
        cr_assert(!strncmp(cf_err, want, strlen(want)), "%s", cf_err);
    }
    cr_assert_eq(cf_remat("train", "--model", TINY, "--data", "synthetic", "--batch", over, "--budget", "1GiB", NULL),
                 1);
    cr_assert(
        strstr(cf_err, "remat train: --batch must be auto or an integer from 1 to 1073741824, got '1073741825'\n"),
        "%s", cf_err);
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "1GiB", "--max-batch", over, NULL), 1);
    cr_assert(strstr(cf_err, "remat maxbatch: --max-batch must be an integer from 1 to 1073741824, got '1073741825'\n"),
              "%s", cf_err);
    /* Cost files: test_cost_file.c, malformed_files_name_the_line. */
}

/* Issue 13: `--max-overhead 100000%` was shown as applied, though no
 * schedule of a small graph costs that much: the cap line now says so, with
 * the most any schedule costs (node i computed in every stage from i on).
 * A cap that can bind is shown as before. */
Test(cli_maxbatch, a_cap_no_schedule_reaches_is_said_to_rule_nothing_out)
{
    rm_problem *p = cf_training_problem(TINY, 1);
    double all = 0, most = 0;
    for (int i = 0; i < p->n; i++) all += p->nodes[i].cost, most += p->nodes[i].cost * (p->n - i);
    rm_problem_free(p);
    char want[300];
    snprintf(want, sizeof want,
             "\noverhead cap +100000%% of checkpoint-all's compute: no schedule costs that much (at most +%.2f%%, "
             "every node recomputed in every stage), so the cap rules nothing out\n",
             100 * (most / all - 1));
    size_t before = out_len();
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--max-overhead", "100000%", "--strategies",
                          "chen_greedy", "--quiet", NULL),
                 0, "%s", cf_err);
    char *out = out_since(before);
    cr_assert(strstr(out, want), "'%s' not in:\n%s", want, out);
    free(out);
    before = out_len();
    cr_assert_eq(cf_remat("maxbatch", "--model", TINY, "--budget", "4MiB", "--max-overhead", "50%", "--strategies",
                          "chen_greedy", "--quiet", NULL),
                 0, "%s", cf_err);
    out = out_since(before);
    cr_assert(strstr(out, "\noverhead cap +50% of checkpoint-all's compute\n"), "%s", out);
    free(out);
}

/* R and S as SVG grids have n^2 cells: above RM_FIGURE_RS_MAX_NODES only the
 * memory figure is drawn, and the summary says why. */
Test(cli_plan, svg_of_a_large_problem_draws_only_the_memory)
{
    const char *prob = cf_path("wide.txt"), *prefix = cf_path("wide");
    FILE *f = fopen(prob, "w");
    cr_assert_not_null(f);
    int n = RM_FIGURE_RS_MAX_NODES + 1;
    fprintf(f, "problem %d 0 1000000000\n0 n0 forward 1 16 -\n", n);
    for (int i = 1; i < n; i++) fprintf(f, "%d n%d %s 1 16 %d\n", i, i, i < n - 1 ? "forward" : "loss", i - 1);
    fclose(f);
    cr_assert_eq(cf_remat("plan", "--problem", prob, "--strategy", "checkpoint_all", "--svg", prefix, "--quiet", NULL),
                 0, "%s", cf_err);
    char want[160];
    snprintf(want, sizeof want, "(R and S are drawn for at most %d nodes, not %d)", RM_FIGURE_RS_MAX_NODES, n);
    cr_assert(cf_said(0, want) || cf_said(1, want), "%s", cf_err);
    char path[600];
    snprintf(path, sizeof path, "%s-memory.svg", prefix);
    cr_assert_eq(access(path, F_OK), 0);
    snprintf(path, sizeof path, "%s-rs.svg", prefix);
    cr_assert_neq(access(path, F_OK), 0);
}

/* "nan" as a word (NaN, -nan, nan%), case-insensitive: never printed. */
static const char *find_nan(const char *s)
{
    for (const char *q = s; *q; q++)
        if ((q[0] | 32) == 'n' && (q[1] | 32) == 'a' && (q[2] | 32) == 'n' &&
            (q == s || !((q[-1] | 32) >= 'a' && (q[-1] | 32) <= 'z')) && !((q[3] | 32) >= 'a' && (q[3] | 32) <= 'z'))
            return q;
    return NULL;
}

static void expect_no_nan(const char *text, const char *what)
{
    const char *n = find_nan(text);
    cr_assert_null(n, "%s prints a NaN: ...%.60s", what, n ? (n - text > 40 ? n - 40 : text) : "");
}

/* Every node free: checkpoint-all costs 0, and so does every schedule; an
 * overhead over 0 is "+0.00%" (rm_overhead_pct) everywhere it is printed,
 * never 0/0's NaN (issue 24). The budget between the lower bound and the
 * no-remat peak makes the strategies recompute. */
Test(cli_plan, an_all_zero_cost_problem_prints_no_nan)
{
    const char *prob = cf_path("zero.txt"), *page = cf_path("zero.html");
    cf_write(prob, "problem 7 4096 10300\n0 input forward 0 1024 -\n1 fc1 forward 0 2048 0\n"
                   "2 relu1 forward 0 2048 1\n3 loss loss 0 4 2\n4 loss.grad backward 0 2048 2,3\n"
                   "5 relu1.grad backward 0 2048 2,4\n6 fc1.grad backward 0 0 0,5\n");
    /* stdout accumulates: each check reads everything printed so far. */
    const char *formats[] = {"text", "csv", "json"};
    const char *ogc_row[] = {"ogc                ok             +0.00%", "ogc,ok,0,",
                             "\"strategy\": \"ogc\", \"status\": \"ok\", \"overhead_pct\": 0,"};
    for (int k = 0; k < 3; k++) {
        cr_assert_eq(cf_remat("plan", "--problem", prob, "--strategy", "all", "--node-limit", "1000", "--format",
                              formats[k], "--quiet", NULL),
                     0, "%s", cf_err);
        char *out = out_text();
        expect_no_nan(out, formats[k]);
        free(out);
        /* A recomputing heuristic's row; in text, the MILP's LP bound column too. */
        cr_assert(cf_said(0, ogc_row[k]), "%s: no %s", formats[k], ogc_row[k]);
        if (k == 0) cr_assert(cf_said(0, "+0.00%   0.00%"), "the MILP's bound");
    }
    cr_assert_eq(cf_remat("plan", "--problem", prob, "--node-limit", "1000", "--quiet", NULL), 0, "%s", cf_err);
    cr_assert(cf_said(0, "cost         0 = checkpoint-all +0.00% (1 recomputation"));
    cr_assert_eq(cf_remat("explain", "--problem", prob, "--node-limit", "1000", NULL), 0, "%s", cf_err);
    cr_assert(cf_said(0, "Cost 0 = checkpoint-all 0 + 0 of recomputation (+0.00%)."));
    char *out = out_text();
    expect_no_nan(out, "plan and explain");
    free(out);
    cr_assert_eq(
        cf_remat("lesson", "--problem", prob, "--budgets", "2", "--node-limit", "1000", "--out", page, "--quiet", NULL),
        0, "%s", cf_err);
    out = cf_text(page);
    expect_no_nan(out, "lesson");
    cr_assert(strstr(out, "(+0.00%)"), "the lesson's explanation");
    free(out);
}

/* What ran is what is printed: a strategy run alone names the strategy
 * whose schedule it answers with, as --strategy all's footer does for it
 * (on chain-6, best's winner is milp). Before, only the table said so. */
Test(cli_plan, a_single_strategy_names_whose_schedule_it_is)
{
    const char *prob = REMAT_SOURCE_DIR "/docs/examples/chain-6.txt";
    cr_assert_eq(cf_remat("plan", "--problem", prob, "--strategy", "all", "--node-limit", "200", "--time-limit", "0",
                          "--quiet", NULL),
                 0, "%s", err_text());
    char *all = out_text();
    const char *foot = strstr(all, "the schedule another strategy found");
    cr_assert_not_null(foot, "no answer is another strategy's: the test tests nothing\n%s", all);
    const char *names[] = {"lp_round", "milp", "best"};
    int said = 0;
    for (int k = 0; k < 3; k++) {
        char key[32], src[32] = "", want[96];
        snprintf(key, sizeof key, " %s: ", names[k]);
        const char *at = strstr(foot, key);
        if (at) sscanf(at + strlen(key), "%31[a-z_]", src);
        cr_assert_eq(cf_remat("plan", "--problem", prob, "--strategy", names[k], "--node-limit", "200", "--time-limit",
                              "0", "--quiet", NULL),
                     0, "%s", err_text());
        snprintf(want, sizeof want, "(the schedule %s found)", src);
        if (src[0]) {
            cr_expect(cf_said(0, want), "%s alone does not say %s", names[k], want);
            said++;
        } else {
            cr_expect(!cf_said(0, "(the schedule "), "%s alone names a source the table does not", names[k]);
        }
    }
    free(all);
    cr_assert_gt(said, 0);
}
