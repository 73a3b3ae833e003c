/* `remat graph`'s outputs (issue 14): FLOPs in a readable unit, the
 * Graphviz file's legend (checked by Graphviz itself: `dot` must be
 * installed, scripts/setup installs it), --schedule colouring each node by
 * what a schedule written by `plan --out` does with it (and refusing one for
 * another graph), and --problem-out writing the very problem `plan --model`
 * solves, so that `plan --problem` gives the same schedule. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"
#include "cli_fixture.h"
#include "cli_util.h"
#include "schedule.h"
#include "trace.h"

#define RESNET_TINY CF_MODEL("resnet-tiny.cfg")
#define VGG_TINY CF_MODEL("vgg-tiny.cfg")

TestSuite(graph_cli, .init = cf_setup, .fini = cf_teardown);

static rm_graph traced_graph(const char *cfg, int batch)
{
    rm_err e = {RM_OK, ""};
    rm_model *m;
    cr_assert_eq(rm_model_load(&m, cfg, &e), RM_OK, "%s", e.msg);
    rm_graph g;
    cr_assert_eq(rm_model_trace(&g, m, batch, &e), RM_OK, "%s", e.msg);
    rm_model_free(m);
    return g;
}

/* Graphviz reads path without an error or a warning. Missing Graphviz is a
 * failure, not a skip: the check is the point. */
static void expect_dot_parses(const char *path)
{
    cr_assert_eq(system("command -v dot >/dev/null 2>&1"), 0,
                 "Graphviz's dot is not installed (scripts/setup installs the graphviz package)");
    char cmd[800], svg[300], err[300];
    snprintf(svg, sizeof svg, "%s.svg", path);
    snprintf(err, sizeof err, "%s.err", path);
    snprintf(cmd, sizeof cmd, "dot -Tsvg '%s' -o '%s' 2>'%s'", path, svg, err);
    int rc = system(cmd);
    char *msg = cf_text(err);
    cr_assert_eq(rc, 0, "dot -Tsvg %s failed: %s", path, msg);
    cr_assert_str_eq(msg, "", "dot warns about %s", path);
    free(msg);
    char *out = cf_text(svg);
    cr_assert(strstr(out, "<svg") && strstr(out, "</svg>"));
    free(out);
}

/* The line of node n<i> in a dot file's text. */
static const char *node_line(const char *dot, int i, char *buf, size_t len)
{
    char key[32];
    snprintf(key, sizeof key, "\n  n%d [label=", i);
    const char *a = strstr(dot, key);
    cr_assert_not_null(a, "node n%d is missing", i);
    a++;
    const char *z = strchr(a, '\n');
    size_t n = (size_t)(z - a) < len - 1 ? (size_t)(z - a) : len - 1;
    memcpy(buf, a, n);
    buf[n] = '\0';
    return buf;
}

Test(graph_cli, flops_read_in_a_unit)
{
    static const struct {
        double flops;
        const char *want;
    } cases[] = {
        {0, "0 FLOPs"},          {512, "512 FLOPs"},        {1.5, "1.50 FLOPs"},     {999, "999 FLOPs"},
        {1000, "1.00 KFLOPs"},   {12345, "12.3 KFLOPs"},    {9996, "10.0 KFLOPs"},   {99960, "100 KFLOPs"},
        {19.9e6, "19.9 MFLOPs"}, {999.96e6, "1.00 GFLOPs"}, {265.1e9, "265 GFLOPs"}, {8.47e12, "8.47 TFLOPs"},
        {2.5e15, "2500 TFLOPs"},
    };
    char buf[32];
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        cr_expect_str_eq(rm_cli_flops(buf, sizeof buf, cases[k].flops), cases[k].want, "%g", cases[k].flops);
    /* A tiny model said "forward 0.00 GFLOPs". */
    rm_graph g = traced_graph(VGG_TINY, 2);
    cr_assert_lt(g.forward_flops, 5e6);
    cr_assert_eq(cf_remat("graph", "--model", VGG_TINY, "--batch", "2", NULL), 0, "%s", cf_err);
    char want[96];
    snprintf(want, sizeof want, "\nforward      %s\nbackward     %s\n", rm_cli_flops(buf, sizeof buf, g.forward_flops),
             rm_cli_flops(buf + 16, 16, g.backward_flops));
    cr_assert(cf_said(0, want), "%s", want);
    cr_assert(!cf_said(0, "0.00 GFLOPs"));
    rm_graph_free(&g);
}

/* The legend explains the kinds and the [k] labels; every gradient slice is
 * labelled with its consumer's input position. */
Test(graph_cli, dot_has_a_legend_and_parses)
{
    const char *dot = cf_path("g.dot");
    cr_assert_eq(cf_remat("graph", "--model", RESNET_TINY, "--batch", "4", "--dot", dot, NULL), 0, "%s", cf_err);
    expect_dot_parses(dot);
    char *text = cf_text(dot);
    cr_assert(strstr(text, "subgraph cluster_legend {"));
    cr_assert(strstr(text, "legend_gradsum [label=\"gradient sum"));
    cr_assert(strstr(text, "An edge A -> B labelled [k]"));
    cr_assert(!strstr(text, "legend_recomputed"), "no schedule, no schedule colours");
    rm_graph g = traced_graph(RESNET_TINY, 4);
    int slices = 0;
    for (int i = 0; i < g.n; i++)
        for (int k = 0; k < g.nodes[i].ndeps; k++)
            if (g.nodes[i].dep_slot[k] >= 0) {
                char edge[64];
                snprintf(edge, sizeof edge, "  n%d -> n%d [label=\"[%d]\"];\n", g.nodes[i].deps[k], i,
                         g.nodes[i].dep_slot[k]);
                cr_assert(strstr(text, edge), "%s", edge);
                slices++;
            }
    int labelled = 0;
    for (const char *h = strstr(text, "[label=\"["); h; h = strstr(h + 1, "[label=\"[")) labelled++;
    cr_assert_eq(labelled, slices);
    cr_assert(strstr(text, "[1]"), "resnet-tiny's adds take the shortcut as input 1");
    free(text);
    rm_graph_free(&g);
}

Test(graph_cli, schedule_colours_the_nodes)
{
    const char *sched = cf_path("s.txt"), *dot = cf_path("s.dot");
    cr_assert_eq(cf_remat("plan", "--model", RESNET_TINY, "--batch", "4", "--budget", "80%", "--strategy",
                          "chen_greedy", "--out", sched, "--quiet", NULL),
                 0, "%s", cf_err);
    cr_assert_eq(cf_remat("graph", "--model", RESNET_TINY, "--batch", "4", "--dot", dot, "--schedule", sched, NULL), 0,
                 "%s", cf_err);
    char said[600];
    snprintf(said, sizeof said, "dot          %s, coloured by %s\n", dot, sched);
    cr_assert(cf_said(0, said), "%s", said);
    expect_dot_parses(dot);
    rm_problem *p = cf_training_problem(RESNET_TINY, 4);
    rm_schedule *s;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_schedule_read(&s, p, sched, &e), RM_OK, "%s", e.msg);
    int *counts = malloc((size_t)p->n * sizeof *counts);
    cr_assert_not_null(counts);
    rm_schedule_compute_counts(s, counts);
    char *text = cf_text(dot);
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < p->n; i++) {
        char line[512], want[64];
        node_line(text, i, line, sizeof line);
        int kept = s->ret_start[i] < s->ret_start[i + 1];
        const char *fill = counts[i] > 1 ? "#f6b26b" : kept ? "#93c47d" : "#eeeeee";
        seen[counts[i] > 1 ? 0 : kept ? 1 : 2]++;
        snprintf(want, sizeof want, "fillcolor=\"%s\"", fill);
        cr_expect(strstr(line, want), "node %d (computed %d times, kept %d): %s", i, counts[i], kept, line);
        snprintf(want, sizeof want, "\\nrecomputed %dx\"", counts[i] - 1);
        cr_expect_eq(strstr(line, want) != NULL, counts[i] > 1, "node %d: %s", i, line);
    }
    /* chen_greedy at 80% recomputes 10 nodes once each on resnet-tiny. */
    cr_assert_eq(seen[0], rm_schedule_recomputed_nodes(s));
    cr_assert_gt(seen[0], 0);
    cr_assert_gt(seen[1], 0);
    cr_assert(strstr(text, "legend_recomputed"));
    free(text);
    free(counts);
    rm_schedule_free(s);
    rm_problem_free(p);
}

/* A missing file, a schedule for another model, for another batch (same
 * stages, other costs), or --schedule without --dot: a clear error, exit 1,
 * and no dot file. */
Test(graph_cli, bad_schedules_are_refused)
{
    const char *at2 = cf_path("b2.txt"), *vgg = cf_path("vgg.txt"), *dot = cf_path("x.dot");
    cr_assert_eq(cf_remat("plan", "--model", RESNET_TINY, "--batch", "2", "--budget", "100%", "--strategy",
                          "checkpoint_all", "--out", at2, "--quiet", NULL),
                 0, "%s", cf_err);
    cr_assert_eq(cf_remat("plan", "--model", VGG_TINY, "--batch", "4", "--budget", "100%", "--strategy",
                          "checkpoint_all", "--out", vgg, "--quiet", NULL),
                 0, "%s", cf_err);
    const char *cases[][2] = {
        {cf_path("missing.txt"), "cannot open"},
        {vgg, "stages"},
        {at2, "cost"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        int rc =
            cf_remat("graph", "--model", RESNET_TINY, "--batch", "4", "--dot", dot, "--schedule", cases[k][0], NULL);
        cr_expect_eq(rc, 1, "%s: exit %d", cases[k][0], rc);
        char want[400];
        snprintf(want, sizeof want, "remat graph: %s is not a schedule for %s at batch 4: ", cases[k][0], RESNET_TINY);
        cr_expect(strstr(cf_err, want), "%s", cf_err);
        cr_expect(strstr(cf_err, cases[k][1]), "'%s' in: %s", cases[k][1], cf_err);
        cr_expect_neq(access(dot, F_OK), 0, "a dot file was written");
    }
    cr_assert_eq(cf_remat("graph", "--model", RESNET_TINY, "--batch", "4", "--schedule", at2, NULL), 1);
    cr_assert(strstr(cf_err, "--schedule colours the --dot graph: give --dot FILE too"), "%s", cf_err);
    cr_assert_eq(cf_remat("graph", "--model", RESNET_TINY, "--batch", "4", "--problem-out", "/nonexistent/p.txt", NULL),
                 1);
    cr_assert(strstr(cf_err, "/nonexistent/p.txt"), "%s", cf_err);
}

/* --problem-out is the problem `plan --model` solves: it reads back equal to
 * it, and `plan --problem` on it writes the very same schedule file (R, S,
 * cost, peak and operations) as `plan --model`. */
Test(graph_cli, problem_out_is_the_problem_plan_solves)
{
    const char *prob = cf_path("rt.txt");
    cr_assert_eq(cf_remat("graph", "--model", RESNET_TINY, "--batch", "4", "--problem-out", prob, NULL), 0, "%s",
                 cf_err);
    char said[300];
    snprintf(said, sizeof said, "\nproblem      %s\n", prob);
    cr_assert(cf_said(0, said));
    rm_problem *p = cf_training_problem(RESNET_TINY, 4), *q;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_problem_read(&q, prob, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(q->n, p->n);
    cr_assert_eq(q->fixed_bytes, p->fixed_bytes);
    cr_assert_eq(q->budget, 0);
    for (int i = 0; i < p->n; i++) {
        cr_assert_str_eq(q->nodes[i].name, p->nodes[i].name);
        cr_assert_eq(q->nodes[i].tag, p->nodes[i].tag);
        cr_assert(q->nodes[i].cost == p->nodes[i].cost, "node %d: cost %.17g, not %.17g", i, q->nodes[i].cost,
                  p->nodes[i].cost);
        cr_assert_eq(q->nodes[i].bytes, p->nodes[i].bytes);
        cr_assert_eq(q->nodes[i].ndeps, p->nodes[i].ndeps);
        for (int k = 0; k < p->nodes[i].ndeps; k++) cr_assert_eq(q->nodes[i].deps[k], p->nodes[i].deps[k]);
    }
    rm_problem_free(q);
    rm_problem_free(p);
    static const char *const strategies[] = {"chen_greedy", "ogc", "linearized_greedy"};
    for (size_t k = 0; k < sizeof strategies / sizeof strategies[0]; k++) {
        const char *a = cf_path("a.txt"), *b = cf_path("b.txt");
        cr_assert_eq(cf_remat("plan", "--model", RESNET_TINY, "--batch", "4", "--budget", "75%", "--strategy",
                              strategies[k], "--time-limit", "0", "--out", a, "--quiet", NULL),
                     0, "%s", cf_err);
        cr_assert_eq(cf_remat("plan", "--problem", prob, "--budget", "75%", "--strategy", strategies[k], "--time-limit",
                              "0", "--out", b, "--quiet", NULL),
                     0, "%s", cf_err);
        char *x = cf_text(a), *y = cf_text(b);
        cr_assert(strstr(x, "\ncost "), "%s", x);
        cr_assert_str_eq(x, y, "%s: plan --model and plan --problem disagree", strategies[k]);
        free(x);
        free(y);
    }
}
