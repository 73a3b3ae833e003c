/* Node-link JSON problems (Checkmate, Moccasin): the documented example
 * reads as its text twin node for node, random problems written as JSON read
 * back unchanged, one malformed file per error (each must name its line),
 * and `remat plan` gives the same plan for the JSON and the text file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_fixture.h"
#include "problem_files.h"

#define EXAMPLE_JSON REMAT_SOURCE_DIR "/docs/examples/checkmate-linear-4.json"
#define EXAMPLE_TEXT REMAT_SOURCE_DIR "/docs/examples/checkmate-linear-4.txt"

static void expect_same(const rm_problem *p, const rm_problem *q)
{
    cr_assert_eq(q->n, p->n);
    cr_assert_eq(q->fixed_bytes, p->fixed_bytes);
    cr_assert_eq(q->budget, p->budget);
    for (int i = 0; i < p->n; i++) {
        const rm_problem_node *a = &p->nodes[i], *b = &q->nodes[i];
        cr_assert_str_eq(b->name, a->name, "node %d", i);
        cr_assert_eq(b->tag, a->tag, "node %d", i);
        cr_assert(b->cost == a->cost, "node %d: cost %.17g, expected %.17g", i, b->cost, a->cost);
        cr_assert_eq(b->bytes, a->bytes, "node %d", i);
        cr_assert_eq(b->ndeps, a->ndeps, "node %d", i);
        for (int k = 0; k < a->ndeps; k++) cr_assert_eq(b->deps[k], a->deps[k], "node %d dep %d", i, k);
    }
}

static rm_problem *read_ok(const char *path)
{
    rm_problem *p = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    return p;
}

Test(problem_json, documented_example_equals_its_text_twin)
{
    rm_problem *p = read_ok(EXAMPLE_TEXT), *q = read_ok(EXAMPLE_JSON);
    expect_same(p, q);
    cr_assert_eq(q->nodes[4].tag, RM_TAG_LOSS); /* the forward node before the first backward one */
    rm_problem_free(p);
    rm_problem_free(q);
}

/* Writes p as node-link JSON; fixed bytes and budget at the top level or
 * inside "graph". Names of the generators need no escapes. */
static void write_json(const rm_problem *p, FILE *fp, int in_graph)
{
    fprintf(fp, "{\"directed\": true, \"multigraph\": false,\n");
    fprintf(fp, "%s\"fixed_bytes\": %zu, \"budget\": %zu%s,\n", in_graph ? "\"graph\": {\"name\": \"g\", " : "",
            p->fixed_bytes, p->budget, in_graph ? "}" : "");
    fprintf(fp, "\"nodes\": [\n");
    for (int i = 0; i < p->n; i++) {
        const rm_problem_node *nd = &p->nodes[i];
        fprintf(fp,
                " {\"id\": %d, \"cost_cpu\": %.17g, \"cost_ram\": %zu, "
                "\"backward\": %s",
                i, nd->cost, nd->bytes, nd->tag == RM_TAG_BACKWARD ? "true" : "false");
        if (nd->name[0]) fprintf(fp, ", \"name\": \"%s\"", nd->name);
        fprintf(fp, "}%s\n", i + 1 < p->n ? "," : "");
    }
    fprintf(fp, "],\n\"links\": [");
    const char *sep = "";
    for (int i = 0; i < p->n; i++)
        for (int k = 0; k < p->nodes[i].ndeps; k++, sep = ",\n")
            fprintf(fp, "%s {\"source\": %d, \"target\": %d}", sep, p->nodes[i].deps[k], i);
    fprintf(fp, "]}\n");
}

Test(problem_json, random_problems_round_trip)
{
    for (uint64_t seed = 1; seed <= 10; seed++) {
        rm_problem *p = tp_round_trip_problem(seed);
        p->fixed_bytes = 1000 * seed;
        if (seed % 3 == 0) p->budget = 0;
        char path[64];
        tp_temp_file(path, sizeof path, "");
        FILE *fp = fopen(path, "w");
        cr_assert_not_null(fp);
        write_json(p, fp, (int)(seed % 2));
        cr_assert_eq(fclose(fp), 0);
        rm_problem *q = read_ok(path);
        expect_same(p, q);
        unlink(path);
        rm_problem_free(p);
        rm_problem_free(q);
    }
}

/* Two nodes on lines 2 and 3, then the links on line 4. */
#define N0                                                                                                             \
    "{\"nodes\": [\n{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, "                                                    \
    "\"backward\": false},\n"
#define N1 "{\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 8, \"backward\": true}],\n"
#define NODE(fields) "{\"nodes\": [\n{" fields "}],\n\"links\": []}"

/* One malformed file per error, each naming its line. JSON itself: */
Test(problem_json, syntax_errors_name_the_line)
{
    tp_expect_error("{", 1, "expected a key in double quotes, found the end of the file");
    tp_expect_error("\n\n {\"nodes\": [}", 3, "expected '{', found '}'");
    tp_expect_error(N0 N1 "\"links\": [{\"source\": 0, \"target\": 1}]\n} x", 5, "trailing data");
    tp_expect_error(N0 N1 "\"links\": [{\"source\": 0 \"target\": 1}]}", 4, "expected ',' or '}'");
    tp_expect_error(N0 N1 "\"links\": [{\"source\": 0, \"target\": 1},]}", 4, "expected '{', found ']'");
    tp_expect_error("{\"graph\": {\"name\": \"a\tb\"}}", 1, "control character 0x09");
    tp_expect_error("{\"graph\": {\"name\": \"a\\qb\"}}", 1, "unknown escape");
    tp_expect_error("{\"graph\": {\"name\": \"\\ud800\"}}", 1, "high surrogate");
    tp_expect_error("{\"graph\": {\"name\": \"abc", 1, "unterminated string");
    tp_expect_error("{\"graph\": {\"x\": "
                    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                    "[[[[[[[[1]]]]]]]]]]]]]]"
                    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}}",
                    1, "nested deeper than 64");
    tp_expect_error("{\"graph\": {\"x\": 01}}", 1, "expected ',' or '}'");
    tp_expect_error("{\"graph\": {\"x\": 1.}}", 1, "digit after its '.'");
    tp_expect_error("{\"graph\": {\"x\": tru}}", 1, "expected a value");
}

Test(problem_json, missing_or_repeated_keys_name_the_line)
{
    tp_expect_error("{\"links\": []\n}", 2, "no 'nodes' array");
    tp_expect_error("{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, "
                    "\"backward\": false}]}",
                    1, "no 'links' (or 'edges')");
    tp_expect_error("{\"nodes\": [], \"links\": []\n}", 2, "at least one node");
    tp_expect_error(N0 N1 "\"links\": [], \"edges\": []}", 4, "'links' or 'edges' is given twice");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": 1, \"backward\": false"), 2, "node 0 has no 'cost_ram'");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, "
                         "\"cost_ram\": 9, \"backward\": false"),
                    2, "'cost_ram' is given twice");
    tp_expect_error("{\"fixed_bytes\": 1, \"graph\": {\n\"fixed_bytes\": 2}, \"nodes\": []}", 2,
                    "'fixed_bytes' is given twice");
    tp_expect_error("{\"directed\": false}", 1, "'directed' must be true");
    tp_expect_error("{\"multigraph\": true}", 1, "'multigraph' must be false");
}

Test(problem_json, wrong_types_and_values_name_the_line)
{
    tp_expect_error(NODE("\"id\": \"0\", \"cost_cpu\": 1, \"cost_ram\": 8, "
                         "\"backward\": false"),
                    2, "expected a number");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, \"backward\": 0"), 2, "true or false");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": NaN, \"cost_ram\": 8, \"backward\": false"), 2, "NaN and Infinity");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": -Infinity, \"cost_ram\": 8, "
                         "\"backward\": false"),
                    2, "NaN and Infinity");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": 1e999, \"cost_ram\": 8, "
                         "\"backward\": false"),
                    2, "not a finite");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": -1, \"cost_ram\": 8, \"backward\": false"), 2,
                    "cost_cpu -1 is negative");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 1.5, \"backward\": false"), 2,
                    "not a whole number");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": -8, \"backward\": false"), 2, "negative");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": "
                         "18446744073709551616, \"backward\": false"),
                    2, "too large");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, "
                         "\"backward\": false, \"name\": 3"),
                    2, "expected a string");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, "
                         "\"backward\": false, \"name\": \"a\\u0000b\""),
                    2, "control character");
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, "
                         "\"backward\": false, \"name\": "
                         "\"01234567890123456789012345678901234567890123456789012"
                         "34567890123\""),
                    2, "longer than 63");
    tp_expect_error("{\"nodes\": [\n{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": "
                    "4611686018427387904, \"backward\": false},\n"
                    "{\"id\": 1, \"cost_cpu\": 1, \"cost_ram\": 1, \"backward\": "
                    "false}], \"links\": []}",
                    3, "more than 2^62 bytes");
    /* The bounds of the text format: the costs' sum, the budget. */
    tp_expect_error(N0 "{\"id\": 1, \"cost_cpu\": 9e307, \"cost_ram\": 8, \"backward\": true}],\n\"links\": []}", 3,
                    ":3:1: the costs up to node 1 (?) add up to more than 8.98847e+307, the largest finite number over "
                    "the 2 nodes");
    tp_expect_error("{\"graph\": {\"budget\":\n 18446744073709551615}, \"nodes\": [], \"links\": []}", 2,
                    ":2:2: the budget 18446744073709551615 is more than 2^62 bytes (4 EiB), more than any problem "
                    "holds (0 means unlimited)");
}

Test(problem_json, bad_ids_and_links_name_the_line)
{
    tp_expect_error(N0 "{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, "
                       "\"backward\": true}],\n\"links\": []}",
                    3, "node id 0 is given twice (first at line 2)");
    tp_expect_error(N0 "{\"id\": 2, \"cost_cpu\": 1, \"cost_ram\": 8, "
                       "\"backward\": true}],\n\"links\": []}",
                    3, "expected node id 1 here, found 2");
    tp_expect_error(N0 N1 "\"links\": [{\"source\": 1, \"target\": 0}]}", 4, "goes to an earlier node");
    tp_expect_error(N0 N1 "\"links\": [{\"source\": 1, \"target\": 1}]}", 4, "depends on itself");
    tp_expect_error(N0 N1 "\"links\": [{\"source\": 0, \"target\": 2}]}", 4, "outside 0..1");
    tp_expect_error(N0 N1 "\"links\": [{\"source\": 0, \"target\": 1},\n "
                          "{\"target\": 1, \"source\": 0}]}",
                    5, "link 0 -> 1 is given twice (first at line 4)");
    tp_expect_error(N0 N1 "\"links\": [{\"source\": 0}]}", 4, "no 'target'");
}

/* The column is named too, and keys the format does not read are skipped
 * whatever they hold; a file's first non-space byte '{' makes it JSON. */
Test(problem_json, columns_and_ignored_keys)
{
    tp_expect_error(NODE("\"id\": 0, \"cost_cpu\": -1, \"cost_ram\": 8, \"backward\": false"), 2, ":2:23: cost_cpu -1");
    char path[64];
    tp_temp_file(path, sizeof path, "");
    FILE *fp = fopen(path, "w");
    cr_assert_not_null(fp);
    fputs("\n\t {\"cost_model\": {\"a\": [1, 2.5e3, -0, null, true, "
          "\"\\u00e9\\ud83d\\ude00\"]},\n"
          " \"nodes\": [{\"id\": 0, \"cost_cpu\": 0.5, \"cost_ram\": 1e3, "
          "\"backward\": false, \"shape\": [1, 2],\n"
          " \"name\": \"caf\\u00e9\"}], \"edges\": [], \"graph\": {\"budget\": "
          "4096}}\n",
          fp);
    cr_assert_eq(fclose(fp), 0);
    rm_problem *p = read_ok(path);
    cr_assert_eq(p->n, 1);
    cr_assert_eq(p->nodes[0].bytes, 1000);
    cr_assert_eq(p->budget, 4096);
    cr_assert_eq(p->nodes[0].tag, RM_TAG_FORWARD); /* no backward node: no loss */
    cr_assert_str_eq(p->nodes[0].name, "caf\xc3\xa9");
    rm_problem_free(p);
    unlink(path);
}

TestSuite(problem_json_cli, .init = cf_setup, .fini = cf_teardown);

/* What `remat plan` prints after the name of the problem file, the solve
 * time masked. */
static char *plan_text(const char *problem)
{
    char *before = cf_text(cf_path("stdout"));
    size_t skip = strlen(before);
    free(before);
    cr_assert_eq(cf_remat("plan", "--problem", problem, "--budget", "40000B", "--strategy", "milp", "--node-limit",
                          "1000", "--out", cf_path("s.txt"), NULL),
                 0, "%s", cf_err);
    char *all = cf_text(cf_path("stdout"));
    char *named = strstr(all + skip, problem);
    cr_assert_not_null(named, "%s", all + skip);
    char *out = strdup(named + strlen(problem));
    free(all);
    cr_assert_not_null(out);
    /* The solve time is all that may differ between two runs. */
    char *t = strstr(out, "optimal in ");
    cr_assert_not_null(t, "%s", out);
    for (t += strlen("optimal in "); *t && *t != ' '; t++) *t = '#';
    return out;
}

Test(problem_json_cli, plan_reads_json_like_its_text_twin)
{
    char *a = plan_text(EXAMPLE_TEXT);
    char *sa = cf_text(cf_path("s.txt"));
    char *b = plan_text(EXAMPLE_JSON);
    char *sb = cf_text(cf_path("s.txt"));
    cr_assert_str_eq(b, a);
    cr_assert_str_eq(sb, sa);
    free(a);
    free(b);
    free(sa);
    free(sb);
}
