/* `remat lesson` driven like a user would: the page it writes is one
 * self-contained file (no network reference of any kind), embeds the data of
 * exactly K budgets from the no-remat peak down to the lower bound with every
 * strategy's answer (values checked on the two-layer example, where they are
 * known by hand), carries explain's text byte for byte as `remat explain`
 * prints it, leaves the R/S grids out above 400 nodes, and bad arguments fail
 * at once without writing anything. (tests/scripts/test_lesson_page.py opens
 * the page in a browser.) */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_fixture.h"
#include "random_graphs.h"

TestSuite(cli_lesson, .init = cf_setup, .fini = cf_teardown);

/* The README's two-layer example: no-remat peak 11264, lower bound 10240; the
 * input costs 100 to load again. */
static const char *two_layer(void)
{
    return REMAT_SOURCE_DIR "/docs/examples/two-layer.txt";
}

static int count(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what)) n++;
    return n;
}

/* The JSON the page embeds: from its script element to the one after. */
static char *page_data(const char *page)
{
    const char *open = "<script type=\"application/json\" id=\"lesson-data\">";
    const char *a = strstr(page, open);
    cr_assert_not_null(a, "the page has no data script");
    a += strlen(open);
    const char *b = strstr(a, "</script>");
    cr_assert_not_null(b);
    return strndup(a, (size_t)(b - a));
}

/* The JSON string at *p (at its opening quote), decoded; *p moves past it.
 * Only the escapes the writer uses (cli/table.c): \" \\ and \u00XX. */
static char *json_string(const char **p)
{
    const char *s = *p;
    cr_assert_eq(*s, '"', "no string at '%.20s'", s);
    char *out = malloc(strlen(s) + 1), *o = out;
    cr_assert_not_null(out);
    for (s++; *s != '"'; s++) {
        cr_assert_neq(*s, '\0', "unterminated string");
        if (*s != '\\') {
            *o++ = *s;
        } else if (s[1] == 'u') {
            unsigned v;
            cr_assert_eq(sscanf(s + 2, "%4x", &v), 1);
            *o++ = (char)v;
            s += 5;
        } else {
            *o++ = *++s;
        }
    }
    *o = '\0';
    *p = s + 1;
    return out;
}

/* The value of the k-th (0-based) "key": string after from. */
static char *nth_string(const char *from, const char *key, int k)
{
    const char *p = from;
    for (int i = 0; i <= k; i++) {
        p = strstr(p, key);
        cr_assert_not_null(p, "no %d-th %s", k, key);
        p += strlen(key);
    }
    return json_string(&p);
}

/* "optimal in 0.0 s": the solve time is the one thing that may differ from run to run. */
static void drop_seconds(char *s)
{
    for (char *p = strstr(s, " in "); p; p = strstr(p + 1, " in "))
        for (char *q = p + 4; *q && strchr("0123456789.", *q); q++) *q = '#';
}

Test(cli_lesson, writes_a_self_contained_page_with_every_budget)
{
    const char *prob = two_layer(), *out = cf_path("lesson.html");
    cr_assert_eq(cf_remat("lesson", "--problem", prob, "--out", out, "--budgets", "5", "--quiet", NULL), 0, "%s",
                 cf_err);
    cr_assert(cf_said(0, "5 budgets x 8 strategies"));
    char *page = cf_text(out);
    cr_assert(!strncmp(page, "<!DOCTYPE html>", 15));
    cr_assert(strstr(page, "</html>\n") && !strstr(page, "@LESSON_DATA@"));
    /* Nothing from the network: no address at all, no script, style, font or image loaded from anywhere;
     * a url() only to something in the page (url(#id)). */
    const char *external[] = {"http:", "https:", "<script src", " src=", " href=", "<link", "@import", "@font-face"};
    for (size_t k = 0; k < sizeof external / sizeof external[0]; k++) {
        const char *hit = strstr(page, external[k]);
        cr_assert_null(hit, "the page holds '%s': '%.60s'", external[k], hit);
    }
    for (const char *u = strstr(page, "url("); u; u = strstr(u + 1, "url("))
        cr_assert_eq(u[4], '#', "a url() outside the page: '%.40s'", u);

    char *data = page_data(page);
    /* 5 budgets evenly from the no-remat peak 11264 down to the lower bound 10240, 8 strategies each. */
    cr_assert(strstr(data, "\"noremat\":11264,") && strstr(data, "\"lower\":10240,") && strstr(data, "\"rs\":true"));
    cr_assert_eq(count(data, "{\"bytes\":"), 5);
    const char *bytes[] = {"{\"bytes\":11264,", "{\"bytes\":11008,", "{\"bytes\":10752,", "{\"bytes\":10496,",
                           "{\"bytes\":10240,"};
    const char *prev = data;
    for (int k = 0; k < 5; k++) {
        const char *b = strstr(prev, bytes[k]);
        cr_assert_not_null(b, "no budget %s in order", bytes[k]);
        prev = b;
    }
    cr_assert_eq(count(data, "\"status\":"), 40);
    /* At the peak checkpoint-all fits (the MILP proves it optimal); below it, it and griewank find nothing
     * and say so, while the MILP drops the input and loads it again in stage 6: R[6][0], for 100 more. */
    cr_assert_eq(count(data, "\"status\":\"infeasible\",\"ok\":false"), 8);
    cr_assert_eq(count(data, "\"status\":\"optimal\""), 5);
    /* Budget 0: all but chen_sqrtn and ogc (not budget-driven: they recompute anyway) pay every node once;
     * below it, the 6 strategies that fit (DTR among them) all pay 100 more. */
    cr_assert_eq(count(data, "\"cost\":7396,"), 6);
    cr_assert_eq(count(data, "\"cost\":7496,"), 2 + 4 * 6);
    cr_assert_eq(count(data, "\"re\":[6,0]"), 2 + 4 * 6);
    cr_assert_eq(count(data, "\"re\":[]"), 6);
    cr_assert_eq(count(data, "\"recomputed\":[0,2]"), 2 + 4 * 6); /* node 0, computed twice */
    const char *last = strstr(data, bytes[4]);
    cr_assert(strstr(last, "\"status\":\"optimal\",\"ok\":true"));
    free(data);
    free(page);
}

/* A DAG without backward nodes: the checkpointing heuristics have nothing to choose, so the page leaves them
 * out and says so (it used to fail on the first of them); named alone, they are an error that names the
 * strategies that do schedule it. */
Test(cli_lesson, a_dag_without_backward_nodes_leaves_the_checkpointing_heuristics_out)
{
    const char *prob = cf_path("dag.txt"), *out = cf_path("lesson.html");
    cf_write(prob, "problem 4 0 0\n0 a forward 1 100 -\n1 b forward 1 10 0\n2 c forward 1 10 0\n"
                   "3 d forward 1 10 1,2\n");
    cr_assert_eq(cf_remat("lesson", "--problem", prob, "--out", out, "--budgets", "3", NULL), 0, "%s", cf_err);
    cr_assert(cf_said(1, "left out chen_sqrtn, chen_greedy, griewank, ogc: they need a training graph's"), "%s",
              cf_err);
    cr_assert(cf_said(0, "3 budgets x 4 strategies"));
    char *page = cf_text(out), *data = page_data(page);
    cr_assert_eq(count(data, "\"status\":"), 12, "%s", data);
    cr_assert_null(strstr(data, "\"chen_sqrtn\""));
    cr_assert_not_null(strstr(data, "[\"dtr\","));
    free(data);
    free(page);
    cr_assert_eq(cf_remat("lesson", "--problem", prob, "--out", out, "--strategies", "chen_sqrtn,ogc", NULL), 2);
    cr_assert(cf_said(1, "chen_sqrtn, ogc need a training graph's forward/backward split"), "%s", cf_err);
}

/* The page's words are explain's: the lowest budget's text and the MILP's, as `remat explain` prints them. */
Test(cli_lesson, embeds_explains_text)
{
    const char *prob = two_layer(), *out = cf_path("lesson.html");
    cr_assert_eq(cf_remat("lesson", "--problem", prob, "--out", out, "--budgets", "3", "--strategies", "ogc,milp",
                          "--quiet", NULL),
                 0, "%s", cf_err);
    char *page = cf_text(out), *data = page_data(page);
    const char *last = strstr(data, "{\"bytes\":10240,");
    cr_assert_not_null(last);
    char *budget = nth_string(last, "\"explain\":", 0), *ogc = nth_string(last, "\"explain\":", 1),
         *milp = nth_string(last, "\"explain\":", 2);
    cr_assert(strstr(ogc, "The schedule: ogc ("), "%s", ogc);
    /* Explain's text says whose schedule the MILP's is (it found nothing cheaper than its incumbent), in
     * the page as `remat explain` says it. */
    cr_assert(strstr(milp, "It is the schedule chen_sqrtn found: milp found nothing cheaper.\n"), "%s", milp);

    cr_assert_eq(cf_remat("explain", "--problem", prob, "--budget", "10240B", "--strategy", "milp", "--quiet", NULL), 0,
                 "%s", cf_err);
    char *said = cf_text(cf_path("stdout"));
    char *start = strstr(said, "remat explain: ");
    cr_assert_not_null(start);
    size_t n = strlen(budget) + strlen(milp);
    char *want = malloc(n + 1);
    cr_assert_not_null(want);
    snprintf(want, n + 1, "%s%s", budget, milp);
    drop_seconds(want);
    drop_seconds(start);
    cr_assert_str_eq(start, want);
    cr_assert(strstr(want, "input (1.00 KiB) is dropped in stage 1 and recomputed in stage 6 for fc1.grad, for 100."),
              "%s", want);
    free(want);
    free(said);
    free(budget);
    free(ogc);
    free(milp);
    free(data);
    free(page);
}

/* Above 400 nodes the page carries no R and S (n^2 cells), and says why. */
Test(cli_lesson, leaves_out_the_grids_of_a_large_graph)
{
    rm_problem *p = rg_checkmate_linear(225, 0, 0); /* 451 nodes */
    cr_assert_not_null(p);
    p->fixed_bytes = 1000;
    rm_err e = {RM_OK, ""};
    const char *prob = cf_path("linear.txt"), *out = cf_path("lesson.html");
    cr_assert_eq(rm_problem_write(p, prob, &e), RM_OK, "%s", e.msg);
    rm_problem_free(p);
    cr_assert_eq(cf_remat("lesson", "--problem", prob, "--out", out, "--budgets", "2", "--strategies",
                          "checkpoint_all,chen_sqrtn", "--quiet", NULL),
                 0, "%s", cf_err);
    cr_assert(cf_said(0, "(no R and S grids: more than 400 nodes)"));
    char *page = cf_text(out), *data = page_data(page);
    cr_assert(strstr(data, "\"n\":451,") && strstr(data, "\"rs\":false"));
    cr_assert_null(strstr(data, "\"re\":"));
    cr_assert_null(strstr(data, "\"S\":"));
    /* The memory timelines stay, one per schedule. */
    cr_assert_gt(count(data, "\"ok\":true"), 0);
    cr_assert_eq(count(data, "\"mem\":["), count(data, "\"ok\":true"));
    cr_assert_eq(count(data, "\"recomputed\":["), count(data, "\"ok\":true"));
    free(data);
    free(page);
}

Test(cli_lesson, bad_arguments_fail_at_once_and_write_nothing)
{
    const char *prob = two_layer(), *out = cf_path("lesson.html");
    struct {
        const char *args[12], *says;
    } bad[] = {
        {{"lesson", "--problem", prob, NULL}, "--out FILE.html is required"},
        {{"lesson", "--out", out, NULL}, "--model FILE --batch N or --problem FILE is required"},
        {{"lesson", "--problem", prob, "--model", CF_MODEL("resnet-tiny.cfg"), "--out", out, NULL}, "not both"},
        {{"lesson", "--model", CF_MODEL("resnet-tiny.cfg"), "--out", out, NULL}, "--batch N is required"},
        {{"lesson", "--problem", prob, "--out", out, "--budgets", "1", NULL}, "--budgets must be a whole number"},
        {{"lesson", "--problem", prob, "--out", out, "--budgets", "201", NULL}, "from 2 to 200, got '201'"},
        {{"lesson", "--problem", prob, "--out", out, "--budgets", "ten", NULL}, "got 'ten'"},
        {{"lesson", "--problem", prob, "--out", out, "--strategies", "chen_sqrtn,nope", NULL},
         "unknown strategy 'nope'"},
        {{"lesson", "--problem", prob, "--out", out, "--time-limit", "soon", NULL}, "--time-limit must be"},
        {{"lesson", "--problem", prob, "--out", out, "--node-limit", "-1", NULL}, "--node-limit must be"},
        {{"lesson", "--problem", prob, "--out", out, "--frobnicate", NULL}, "unknown argument '--frobnicate'"},
        {{"lesson", "--problem", prob, "--out", cf_dir, NULL}, "is a directory"},
        {{"lesson", "--problem", prob, "--out", "/nonexistent/dir/page.html", NULL}, "/nonexistent/dir/page.html"},
        {{"lesson", "--problem", "/nonexistent.txt", "--out", out, NULL}, "/nonexistent.txt"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        cr_assert_eq(cf_remat_args(bad[k].args), 1, "case %zu: %s", k, cf_err);
        cr_assert(strstr(cf_err, bad[k].says), "case %zu: want '%s' in: %s", k, bad[k].says, cf_err);
        cr_assert_neq(access(out, F_OK), 0, "case %zu wrote the page", k);
    }
    cr_assert_eq(cf_temporaries(cf_dir), 0);
    /* `remat lesson --help` is there, and `remat --help` lists the command. */
    cr_assert_eq(cf_remat("lesson", "--help", NULL), 0);
    cr_assert(cf_said(0, "--budgets K"));
    cr_assert(cf_said(0, "--exhaustive        every strategy at every budget"));
    cr_assert_eq(cf_remat("--help", NULL), 0);
    cr_assert(cf_said(0, "  lesson "));
}

/* The costs of every answer of a page, in the page's order (budgets, then strategies); HUGE_VAL where a
 * strategy has no schedule. *n: how many. */
static double *run_costs(const char *data, int *n)
{
    int cap = count(data, "{\"status\":");
    double *c = malloc((size_t)(cap ? cap : 1) * sizeof *c);
    cr_assert_not_null(c);
    *n = 0;
    for (const char *r = strstr(data, "{\"status\":"); r; r = strstr(r + 1, "{\"status\":")) {
        const char *next = strstr(r + 1, "{\"status\":"), *ok = strstr(r, "\"ok\":true"),
                   *cost = strstr(r, "\"cost\":");
        c[(*n)++] = ok && (!next || ok < next) ? strtod(cost + 7, NULL) : HUGE_VAL;
    }
    return c;
}

static char *lesson_data(const char *prob, const char *mode, const char *budgets)
{
    const char *out = cf_path("lesson.html");
    const char *args[] = {"lesson",       "--problem", prob,           "--out", out,       "--budgets", budgets,
                          "--time-limit", "0",         "--node-limit", "100",   "--quiet", mode,        NULL};
    cr_assert_eq(cf_remat_args(args), 0, "%s %s: %s", prob, mode ? mode : "", cf_err);
    char *page = cf_text(out), *data = page_data(page);
    free(page);
    return data;
}

/* By default the budgets share their work: the answers of the examples, with node limits (deterministic),
 * cost never more than --exhaustive's, each strategy at each budget, and no strategy loses a schedule. */
Test(cli_lesson, shared_work_is_never_dearer_than_exhaustive)
{
    const char *probs[] = {"two-layer.txt", "chain-6.txt", "checkmate-linear-4.txt", "unet-skip.txt"};
    for (size_t k = 0; k < sizeof probs / sizeof probs[0]; k++) {
        char prob[512];
        snprintf(prob, sizeof prob, "%s/docs/examples/%s", REMAT_SOURCE_DIR, probs[k]);
        char *fast = lesson_data(prob, NULL, "10"), *slow = lesson_data(prob, "--exhaustive", "10");
        cr_assert(strstr(fast, "\"exhaustive\":false,") && strstr(slow, "\"exhaustive\":true,"));
        cr_assert_null(strstr(slow, "not_run"), "%s: --exhaustive runs every strategy at every budget", probs[k]);
        int nf, ns;
        double *cf = run_costs(fast, &nf), *cs = run_costs(slow, &ns);
        cr_assert_eq(nf, 80, "%s: %d answers", probs[k], nf);
        cr_assert_eq(ns, nf);
        for (int i = 0; i < nf; i++)
            cr_expect_leq(cf[i], cs[i], "%s: budget %d, strategy %d: %g by default, %g with --exhaustive", probs[k],
                          i / 8, i % 8, cf[i], cs[i]);
        free(cf);
        free(cs);
        free(fast);
        free(slow);
    }
}

/* A diamond with a backward pass: a (100 bytes) read by b and c (10 each), both read by d, holds 120 bytes
 * in every order, above the lower bound of 110. At 4 budgets (120, 117, 114, 110 bytes) nothing fits at
 * 117, so below it neither LP rounding nor the MILP (which proved it there) is run, and each says so, in no
 * time. And unet-skip at 20 budgets: where LP rounding's LP bound proves the MILP's incumbent optimal, the
 * MILP is not run either. */
Test(cli_lesson, solvers_not_run_where_a_larger_budget_or_the_bound_answers)
{
    const char *diamond = cf_path("diamond.txt");
    cf_write(diamond, "problem 6 0 0\n0 a forward 1 100 -\n1 b forward 1 10 0\n2 c forward 1 10 0\n"
                      "3 d forward 1 10 1,2\n4 loss loss 1 1 3\n5 d.grad backward 1 1 1,2,4\n");
    char *data = lesson_data(diamond, NULL, "4");
    cr_assert(strstr(data, "\"exhaustive\":false,") && strstr(data, "\"page_seconds\":0,"));
    cr_assert_eq(count(data, "\"seconds\":0,\"not_run\":\"below\""), 4, "%s", data);
    cr_assert_eq(count(data, "lp_round was not run here: at 117 B, a larger budget, it and every heuristic found no "
                             "schedule"),
                 2, "%s", data);
    cr_assert_eq(count(data, "no schedule fits: at 117 B, a larger budget, milp proved that none fits"), 2, "%s", data);
    free(data);

    char prob[512];
    snprintf(prob, sizeof prob, "%s/docs/examples/unet-skip.txt", REMAT_SOURCE_DIR);
    data = lesson_data(prob, NULL, "20");
    /* The MILP not run where the bound proves its incumbent optimal: a schedule, optimal, in no time. */
    int proved = count(data, "\"status\":\"optimal\",\"ok\":true,\"seconds\":0,");
    cr_assert_eq(count(data, "\"not_run\":\"bound\""), proved);
    cr_assert_geq(proved, 10, "%s", data);
    cr_assert_eq(count(data, "milp was not run at this budget: the LP bound ("), proved);
    free(data);
}
