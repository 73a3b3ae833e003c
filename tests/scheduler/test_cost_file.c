/* Profiled cost files (scheduler/cost_file.c): an exact round trip, every
 * kind of malformed file refused with its line named, the checks that a file
 * belongs to a problem, and that measured costs change what the MILP
 * recomputes in the way the exact DP predicts. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_fixture.h"
#include "cost_file.h"
#include "exact_dp.h"
#include "milp.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"

TestSuite(cost_file, .init = cf_setup, .fini = cf_teardown);

Test(cost_file, round_trip_is_exact)
{
    rm_err e = {RM_OK, ""};
    rm_cost_file *c;
    cr_assert_eq(rm_cost_file_create(&c, 4, "vgg-tiny", 8, "cpu", &e), RM_OK, "%s", e.msg);
    const char *names[] = {"input", "conv1", "", "conv1.grad"};
    const double secs[] = {0, 1.0 / 3.0, 5e-320, 12345.678901234567};
    for (int i = 0; i < 4; i++) {
        snprintf(c->nodes[i].name, sizeof c->nodes[i].name, "%s", names[i]);
        c->nodes[i].seconds = secs[i];
    }
    const char *p = cf_path("a.costs");
    cr_assert_eq(rm_cost_file_write(c, p, "two lines\nof comment", &e), RM_OK, "%s", e.msg);
    rm_cost_file *d;
    cr_assert_eq(rm_cost_file_read(&d, p, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(d->model, "vgg-tiny");
    cr_assert_str_eq(d->device, "cpu");
    cr_assert_eq(d->batch, 8);
    cr_assert_eq(d->n, 4);
    for (int i = 0; i < 4; i++) {
        cr_assert_str_eq(d->nodes[i].name, names[i]);
        cr_assert(!memcmp(&d->nodes[i].seconds, &secs[i], sizeof secs[i]), "node %d: %.17g != %.17g", i,
                  d->nodes[i].seconds, secs[i]);
        cr_assert_gt(d->nodes[i].line, d->header_line);
    }
    /* Written again, the same bytes. */
    const char *q = cf_path("b.costs");
    cr_assert_eq(rm_cost_file_write(d, q, "two lines\nof comment", &e), RM_OK, "%s", e.msg);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", p, q);
    cr_assert_eq(system(cmd), 0, "a rewritten cost file differs");
    rm_cost_file_free(c);
    rm_cost_file_free(d);
}

Test(cost_file, model_name_of_a_config_path)
{
    char b[RM_NAME_LEN];
    rm_cost_model_name(b, sizeof b, "models/vgg-tiny.cfg");
    cr_assert_str_eq(b, "vgg-tiny");
    rm_cost_model_name(b, sizeof b, "./a/b/resnet50.cfg");
    cr_assert_str_eq(b, "resnet50");
    rm_cost_model_name(b, sizeof b, "my model.txt");
    cr_assert_str_eq(b, "my_model.txt");
}

/* Each malformed file is refused as a parse error naming the file, the line
 * and what is wrong. */
Test(cost_file, malformed_files_name_the_line)
{
    static const struct {
        const char *text, *line, *what;
    } cases[] = {
        {"", ":1:", "empty file"},
        {"# only a comment\n", ":2:", "empty file"},
        {"costs 1 m 8 cpu 1 seconds\n0 a 1\n", ":1:", "expected the header"},
        {"remat-costs 2 m 8 cpu 1 seconds\n0 a 1\n", ":1:", "version"},
        {"remat-costs 1 m 8 cpu 1\n0 a 1\n", ":1:", "expected 7"},
        {"remat-costs 1 m 8 cpu 1 seconds extra\n0 a 1\n", ":1:", "trailing junk"},
        {"remat-costs 1 m 0 cpu 1 seconds\n0 a 1\n", ":1:", "batch '0'"},
        /* One batch limit, RM_MAX_BATCH, for cost files and every command. */
        {"remat-costs 1 m 1073741825 cpu 1 seconds\n0 a 0\n",
         ":1:", ": batch '1073741825' is not an integer from 1 to 1073741824"},
        {"remat-costs 1 m 8 cpu x seconds\n0 a 1\n", ":1:", "node count 'x'"},
        {"remat-costs 1 m 8 cpu 1 flops\n0 a 1\n", ":1:", "unknown unit 'flops'"},
        {"remat-costs 1 m 8 cpu 9999 seconds\n0 a 1\n", ":1:", "declares 9999 nodes"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n\n1 b abc\n", ":4:", "'abc' is not a number"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b -1e-3\n", ":3:", "negative"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b nan\n", ":3:", "not a number"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b inf\n", ":3:", "not a number"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b 1e999\n", ":3:", "not finite"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b 0x10\n", ":3:", "not a number"},
        {"remat-costs 1 m 8 cpu 3 seconds\n0 a 0\n0 a 1\n2 b 1\n", ":3:", "node 0 is listed twice (first at line 2)"},
        {"remat-costs 1 m 8 cpu 3 seconds\n0 a 0\n2 b 1\n1 b 1\n", ":3:", "node 1 is missing"},
        {"remat-costs 1 m 8 cpu 3 seconds\n0 a 0\n1 b 1\n", ":4:", "node 2 is missing"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b 1\n1 b 1\n", ":4:", "node 1 is listed twice (first at line 3)"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b 1\n2 c 1\n", ":4:", "more node lines"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b 1 2\n", ":3:", "trailing junk '2'"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b\n", ":3:", "expected 3"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\nx b 1\n", ":3:", "node index 'x'"},
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n5 b 1\n", ":3:", "outside 0..1"},
        /* Seconds held to a problem's bound on the costs' sum (DBL_MAX / n). */
        {"remat-costs 1 m 8 cpu 2 seconds\n0 a 6e307\n1 b 6e307\n", ":3:",
         ": the costs up to node 1 (b) add up to more than 8.98847e+307, the largest finite number over the 2 "
         "nodes: a schedule may compute each node once per stage, and its cost must stay finite"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        char p[128]; /* a path per case, not a cf_path slot each */
        snprintf(p, sizeof p, "%s/bad%zu.costs", cf_dir, k);
        cf_write(p, cases[k].text);
        rm_err e = {RM_OK, ""};
        rm_cost_file *c = (rm_cost_file *)1;
        int rc = rm_cost_file_read(&c, p, &e);
        cr_assert_eq(rc, RM_ERR_PARSE, "case %zu accepted (rc %d): %s", k, rc, cases[k].text);
        cr_assert_null(c, "case %zu left a result", k);
        char want[200];
        snprintf(want, sizeof want, "%s%s", p, cases[k].line);
        cr_assert(strstr(e.msg, want), "case %zu: '%s' does not name %s", k, e.msg, want);
        cr_assert(strstr(e.msg, cases[k].what), "case %zu: '%s' does not say '%s'", k, e.msg, cases[k].what);
    }
    rm_err e = {RM_OK, ""};
    rm_cost_file *c;
    cr_assert_eq(rm_cost_file_read(&c, cf_path("missing.costs"), &e), RM_ERR_IO);
    cr_assert(strstr(e.msg, "missing.costs"));
}

/* The chain of the schedule test below: input, a, b, c, loss and their
 * backward nodes, 100 bytes each (the loss 4). Costs: a 10, b 20, c 10. */
static rm_problem *chain(void)
{
    static const struct {
        const char *name;
        rm_node_tag tag;
        double cost;
        size_t bytes;
        int ndeps, deps[2];
    } nodes[] = {
        {"input", RM_TAG_FORWARD, 0, 100, 0, {0}},
        {"a", RM_TAG_FORWARD, 10, 100, 1, {0}},
        {"b", RM_TAG_FORWARD, 20, 100, 1, {1}},
        {"c", RM_TAG_FORWARD, 10, 100, 1, {2}},
        {"loss", RM_TAG_LOSS, 1, 4, 1, {3}},
        {"loss.grad", RM_TAG_BACKWARD, 1, 100, 2, {3, 4}},
        {"c.grad", RM_TAG_BACKWARD, 10, 100, 2, {2, 5}},
        {"b.grad", RM_TAG_BACKWARD, 10, 100, 2, {1, 6}},
        {"a.grad", RM_TAG_BACKWARD, 10, 100, 2, {0, 7}},
    };
    rm_err e = {RM_OK, ""};
    rm_problem *p;
    int n = (int)(sizeof nodes / sizeof nodes[0]);
    cr_assert_eq(rm_problem_create(&p, n, &e), RM_OK);
    for (int i = 0; i < n; i++) {
        snprintf(p->nodes[i].name, sizeof p->nodes[i].name, "%s", nodes[i].name);
        p->nodes[i].tag = nodes[i].tag;
        p->nodes[i].cost = nodes[i].cost;
        p->nodes[i].bytes = nodes[i].bytes;
        cr_assert_eq(rm_problem_set_deps(p, i, nodes[i].deps, nodes[i].ndeps, &e), RM_OK);
    }
    cr_assert_eq(rm_problem_validate(p, &e), RM_OK, "%s", e.msg);
    return p;
}

/* A cost file for p with p's names and the given seconds. */
static rm_cost_file *costs_for(const rm_problem *p, const double *secs, int batch)
{
    rm_err e = {RM_OK, ""};
    rm_cost_file *c;
    cr_assert_eq(rm_cost_file_create(&c, p->n, "chain", batch, "cpu", &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < p->n; i++) {
        snprintf(c->nodes[i].name, sizeof c->nodes[i].name, "%s", p->nodes[i].name);
        c->nodes[i].seconds = secs[i];
    }
    return c;
}

static const double chain_secs[] = {0, 1e-3, 2e-3, 1e-3, 1e-4, 1e-4, 1e-3, 1e-3, 1e-3};

/* A folder opens but cannot be read: the message said only "read error". */
Test(cost_file, folder_instead_of_a_file)
{
    rm_cost_file *c = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_cost_file_read(&c, "/tmp", &e), RM_ERR_IO);
    cr_assert_null(c);
    cr_assert_str_eq(e.msg, "/tmp: is a directory, not a cost file");
}

/* Issue 13: a NUL byte and an endless line (--costs /dev/zero once said
 * "empty file" after reading until memory ran out) are refused as the
 * problem reader refuses them; a byte-order mark at the start is skipped. */
Test(cost_file, nul_endless_lines_and_byte_order_marks)
{
    static const char text[] = "remat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b 1\0.5\n";
    const char *path = cf_path("nul.costs");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(text, 1, sizeof text - 1, f), sizeof text - 1);
    fclose(f);
    rm_cost_file *c = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_cost_file_read(&c, path, &e), RM_ERR_PARSE);
    char want[300];
    snprintf(want, sizeof want, "%s:3: a NUL byte inside the line (not a text file?)", path);
    cr_assert_str_eq(e.msg, want);
    cr_assert_eq(rm_cost_file_read(&c, "/dev/zero", &e), RM_ERR_PARSE);
    cr_assert_str_eq(e.msg, "/dev/zero:1: a line longer than 67108864 bytes (not a cost file?)");
    cf_write(path, "\xEF\xBB\xBFremat-costs 1 m 8 cpu 2 seconds\n0 a 0\n1 b 0.5\n");
    cr_assert_eq(rm_cost_file_read(&c, path, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(c->model, "m");
    cr_assert_eq(c->nodes[1].seconds, 0.5);
    rm_cost_file_free(c);
    /* Through the CLI: the same message, exit 1. */
    cr_assert_eq(cf_remat("plan", "--model", REMAT_SOURCE_DIR "/models/vgg-tiny.cfg", "--batch", "8", "--budget", "95%",
                          "--costs", "/dev/zero", NULL),
                 1);
    cr_assert_str_eq(cf_err, "remat plan: /dev/zero:1: a line longer than 67108864 bytes (not a cost file?)\n");
}

Test(cost_file, apply_checks_that_the_file_is_the_problems)
{
    rm_problem *p = chain();
    rm_err e = {RM_OK, ""};
    /* Read back from disk, so the errors can name lines. */
    rm_cost_file *mem = costs_for(p, chain_secs, 8);
    const char *path = cf_path("chain.costs");
    cr_assert_eq(rm_cost_file_write(mem, path, NULL, &e), RM_OK, "%s", e.msg);
    rm_cost_file_free(mem);
    rm_cost_file *c;
    cr_assert_eq(rm_cost_file_read(&c, path, &e), RM_OK, "%s", e.msg);

    cr_assert_eq(rm_cost_file_apply(p, c, "chain", 8, RM_COST_SAME_BATCH, &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < p->n; i++) cr_assert_eq(p->nodes[i].cost, chain_secs[i]);

    /* Another model, another batch: refused, and nothing changes. */
    p->nodes[1].cost = 42;
    cr_assert_eq(rm_cost_file_apply(p, c, "vgg16", 8, RM_COST_SAME_BATCH, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "profiled for model 'chain', not 'vgg16'"), "%s", e.msg);
    cr_assert(strstr(e.msg, ":3:"), "the header line: %s", e.msg);
    cr_assert_eq(rm_cost_file_apply(p, c, "chain", 16, RM_COST_SAME_BATCH, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "profiled at batch 8, not 16"), "%s", e.msg);
    cr_assert_eq(p->nodes[1].cost, 42);
    /* Scaling is linear in the batch. */
    cr_assert_eq(rm_cost_file_apply(p, c, "chain", 16, RM_COST_SCALE_BATCH, &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < p->n; i++) cr_assert_float_eq(p->nodes[i].cost, 2 * chain_secs[i], 1e-18);
    /* A problem file (no model, no batch): names alone are checked. */
    cr_assert_eq(rm_cost_file_apply(p, c, NULL, 0, RM_COST_SAME_BATCH, &e), RM_OK, "%s", e.msg);

    /* A renamed node: its line is named. Node 2 is on line 6 (3 comment
     * lines, the header, then one line per node from node 0 at line 5,
     * after the column comment). */
    snprintf(p->nodes[2].name, sizeof p->nodes[2].name, "bee");
    cr_assert_eq(rm_cost_file_apply(p, c, NULL, 0, RM_COST_SAME_BATCH, &e), RM_ERR_INVALID);
    char want[200];
    snprintf(want, sizeof want, "%s:%d: node 2 is 'b' in the cost file but 'bee'", path, c->nodes[2].line);
    cr_assert(strstr(e.msg, want), "'%s' lacks '%s'", e.msg, want);
    snprintf(p->nodes[2].name, sizeof p->nodes[2].name, "b");

    /* An input's time is its measured load (the upload a schedule that
     * drops it repeats), taken as given like any other node's. */
    c->nodes[0].seconds = 1e-3;
    cr_assert_eq(rm_cost_file_apply(p, c, NULL, 0, RM_COST_SAME_BATCH, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(p->nodes[0].cost, 1e-3);
    c->nodes[0].seconds = 0;

    /* A node count that differs. */
    rm_problem *q;
    cr_assert_eq(rm_problem_create(&q, 3, &e), RM_OK);
    cr_assert_eq(rm_cost_file_apply(q, c, NULL, 0, RM_COST_SAME_BATCH, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "costs for 9 nodes but the problem has 3"), "%s", e.msg);
    rm_problem_free(q);
    rm_cost_file_free(c);
    rm_problem_free(p);
}

/* Seconds scaled to another batch (maxbatch, train --batch auto) are held
 * to the bound on the sum of a problem's costs as read ones are, naming the
 * node's line and the batch; nothing changes. */
Test(cost_file, scaled_seconds_whose_sum_overflows_are_refused)
{
    rm_problem *p = chain();
    double secs[9] = {0, 1e307};
    rm_cost_file *mem = costs_for(p, secs, 1);
    rm_err e = {RM_OK, ""};
    const char *path = cf_path("big.costs");
    cr_assert_eq(rm_cost_file_write(mem, path, NULL, &e), RM_OK, "%s", e.msg);
    rm_cost_file_free(mem);
    rm_cost_file *c;
    cr_assert_eq(rm_cost_file_read(&c, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_cost_file_apply(p, c, "chain", 16, RM_COST_SCALE_BATCH, &e), RM_ERR_INVALID);
    char want[400];
    snprintf(want, sizeof want,
             "%s:%d: scaled to batch 16: the costs up to node 1 (a) add up to more than %.6g, the largest finite "
             "number over the 9 nodes: a schedule may compute each node once per stage, and its cost must stay finite",
             path, c->nodes[1].line, DBL_MAX / 9);
    cr_assert_str_eq(e.msg, want);
    cr_assert_eq(p->nodes[1].cost, 10);
    cr_assert_eq(rm_cost_file_apply(p, c, "chain", 1, RM_COST_SCALE_BATCH, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(p->nodes[1].cost, 1e307);
    rm_cost_file_free(c);
    rm_problem_free(p);
}

/* Which forward nodes (1..3) the schedule recomputes in a later stage. */
static unsigned recomputed(const rm_schedule *s)
{
    unsigned mask = 0;
    for (int i = 1; i <= 3; i++)
        for (int t = i + 1; t < s->n; t++)
            if (rm_schedule_R(s, t, i)) mask |= 1u << i;
    return mask;
}

static double solve(rm_schedule **s, const rm_problem *p)
{
    rm_err e = {RM_OK, ""};
    rm_strategy_options o;
    memset(&o, 0, sizeof o);
    o.node_limit = 10000;
    rm_strategy_stats st;
    cr_assert_eq(rm_strategy_run(s, &st, rm_strategy_find("milp"), p, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(st.status, RM_STATUS_OPTIMAL);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, *s, &e), RM_OK, "%s", e.msg);
    cr_assert_leq(r.peak_bytes, rm_problem_activation_budget(p));
    return r.cost;
}

/* At 400 bytes the chain must drop one of a, b, c and recompute it (and the
 * free input). By FLOPs a (10) is the cheapest to recompute; measured, a
 * takes 100x longer than b, so the optimum recomputes b instead. Both optima
 * are checked against the exact DP, which knows nothing of cost files. */
Test(cost_file, measured_costs_change_what_is_recomputed)
{
    rm_problem *p = chain();
    p->budget = 400;
    size_t act = 400;
    double best;
    rm_schedule *s;
    double cost = solve(&s, p);
    cr_assert_eq(exact_dp_solve(&best, p, &act, 1, 1), 0);
    cr_assert_float_eq(cost, best, 1e-9);
    cr_assert_float_eq(cost, 72 + 10, 1e-9, "FLOPs: checkpoint-all 72 plus a once more");
    cr_assert_eq(recomputed(s), 1u << 1, "FLOPs: a recomputed (mask %x)", recomputed(s));
    rm_schedule_free(s);

    double secs[9];
    memcpy(secs, chain_secs, sizeof secs);
    secs[1] = 0.2; /* a: 200 ms, b: 2 ms */
    rm_cost_file *c = costs_for(p, secs, 8);
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_cost_file_apply(p, c, "chain", 8, RM_COST_SAME_BATCH, &e), RM_OK, "%s", e.msg);
    cost = solve(&s, p);
    cr_assert_eq(exact_dp_solve(&best, p, &act, 1, 1), 0);
    cr_assert_float_eq(cost, best, 1e-12);
    double all = 0;
    for (int i = 0; i < 9; i++) all += secs[i];
    cr_assert_float_eq(cost, all + secs[2], 1e-12, "profiled: checkpoint-all plus b once more");
    cr_assert_eq(recomputed(s), 1u << 2, "profiled: b recomputed, not a (mask %x)", recomputed(s));
    rm_schedule_free(s);
    rm_cost_file_free(c);
    rm_problem_free(p);
}
