/* The problem and schedule file formats: round trips, the documented
 * example, and one malformed file per error, each of which must name the
 * offending line. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_fixture.h"
#include "cost_file.h"
#include "problem_files.h"
#include "random_graphs.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"

/* The example of docs/problem-format.md. */
static const char *example = "# A two-layer training graph (docs/problem-format.md)\n" CF_EXAMPLE_HEADER
                             "# index name tag cost bytes deps\n" CF_EXAMPLE_NODES;

Test(problem_file, reads_documented_example)
{
    char path[64];
    tp_temp_file(path, sizeof path, example);
    rm_problem *p;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(p->n, 7);
    cr_assert_eq(p->fixed_bytes, 4096);
    cr_assert_eq(p->budget, 20000);
    cr_assert_str_eq(p->nodes[5].name, "relu1.grad");
    cr_assert_eq(p->nodes[3].tag, RM_TAG_LOSS);
    cr_assert_eq(p->nodes[6].tag, RM_TAG_BACKWARD);
    cr_assert_float_eq(p->nodes[6].cost, 4096.0, 0);
    cr_assert_eq(p->nodes[6].bytes, 0);
    cr_assert_eq(p->nodes[4].ndeps, 2);
    cr_assert_eq(p->nodes[4].deps[1], 3);
    cr_assert_eq(p->nodes[0].ndeps, 0);
    rm_schedule *s;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    rm_schedule_free(s);
    rm_problem_free(p);
    unlink(path);
}

Test(problem_file, round_trip)
{
    for (uint64_t seed = 1; seed <= 10; seed++) {
        rm_problem *p = tp_round_trip_problem(seed);
        char path[64], path2[64];
        tp_temp_file(path, sizeof path, "");
        tp_temp_file(path2, sizeof path2, "");
        rm_err e = {0};
        cr_assert_eq(rm_problem_write(p, path, &e), RM_OK, "%s", e.msg);
        rm_problem *q;
        cr_assert_eq(rm_problem_read(&q, path, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(q->n, p->n);
        cr_assert_eq(q->fixed_bytes, p->fixed_bytes);
        cr_assert_eq(q->budget, p->budget);
        for (int i = 0; i < p->n; i++) {
            cr_assert_str_eq(q->nodes[i].name, p->nodes[i].name);
            cr_assert_eq(q->nodes[i].tag, p->nodes[i].tag);
            cr_assert(q->nodes[i].cost == p->nodes[i].cost);
            cr_assert_eq(q->nodes[i].bytes, p->nodes[i].bytes);
            cr_assert_eq(q->nodes[i].ndeps, p->nodes[i].ndeps);
            for (int k = 0; k < p->nodes[i].ndeps; k++) cr_assert_eq(q->nodes[i].deps[k], p->nodes[i].deps[k]);
        }
        cr_assert_eq(rm_problem_write(q, path2, &e), RM_OK, "%s", e.msg);
        char *a = cf_text(path), *b = cf_text(path2);
        cr_assert_str_eq(a, b);
        free(a);
        free(b);
        unlink(path);
        unlink(path2);
        rm_problem_free(p);
        rm_problem_free(q);
    }
}

#define HDR "problem 3 0\n"

Test(problem_file, malformed_files_name_the_line)
{
    tp_expect_error("", 1, "empty file");
    tp_expect_error("# nothing\n\n", 3, "empty file");
    tp_expect_error("nodes 3\n", 1, "header");
    tp_expect_error("problem 3 0 0 junk\n", 1, "trailing junk");
    tp_expect_error("problem x 0\n", 1, "not a non-negative integer");
    tp_expect_error("problem 3 -5\n", 1, "negative");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8 2\n2 c forward 1 8 1\n", 3, "later node 2");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8 1\n2 c forward 1 8 1\n", 3, "itself");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8 0\n2 c forward 1 8 9\n", 4, "outside 0..2");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8 -1\n2 c forward 1 8 1\n", 3, "outside 0..2");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8 0,0\n2 c forward 1 8 1\n", 3, "twice");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8 0,\n2 c forward 1 8 1\n", 3, "empty entry");
    /* The message quotes the whole list, not what strtok left of it. */
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8 0\n2 c forward 1 8 0,,1\n", 4, "'0,,1' has an empty entry");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 -8 0\n2 c forward 1 8 1\n", 3, "negative");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8k 0\n2 c forward 1 8 1\n", 3, "not a non-negative integer");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward -2 8 0\n2 c forward 1 8 1\n", 3, "negative");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward abc 8 0\n2 c forward 1 8 1\n", 3, "not a finite number");
    tp_expect_error(HDR "0 a forward nan 8 -\n", 2, "not a finite number");
    tp_expect_error(HDR "0 a forward 1 8 - extra\n", 2, "trailing junk 'extra'");
    tp_expect_error(HDR "0 a forward 1 8\n", 2, "expected 6");
    tp_expect_error(HDR "0 a sideways 1 8 -\n", 2, "unknown tag");
    tp_expect_error(HDR "0 a forward 1 8 -\n0 a forward 1 8 -\n", 3, "defined twice (first at line 2)");
    tp_expect_error(HDR "0 a forward 1 8 -\n2 c forward 1 8 0\n", 3, "expected node 1");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8 0\n", 4, "end of file after 2 node lines");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8 0\n2 c forward 1 8 1\n3 d forward 1 8 2\n", 5,
                    "more node lines than the 3");
    tp_expect_error(HDR "0 a forward 1 8 -\n1 b forward 1 8 0\n2 c forward 1 8 1\n1 b forward 1 8 0\n", 5,
                    "defined twice (first at line 3)");
}

/* Sizes each within range but summing past 2^64 once wrapped around: the
 * no-remat peak came out as 98 bytes and every strategy "fit". */
Test(problem_file, byte_totals_that_would_wrap_are_refused)
{
    tp_expect_error("problem 3 0\n0 a forward 1 9223372036854775807 -\n1 b loss 1 9223372036854775807 0\n"
                    "2 c backward 1 9223372036854775807 0,1\n",
                    2, "more than 2^62 bytes");
    tp_expect_error("problem 3 0\n0 a forward 1 3000000000000000000 -\n1 b loss 1 3000000000000000000 0\n"
                    "2 c backward 1 8 0,1\n",
                    3, "more than 2^62 bytes");
    tp_expect_error("problem 2 4611686018427387000\n0 a forward 1 8 -\n1 b loss 1 4096 0\n", 3, "more than 2^62 bytes");
    /* Every constructor validates: the same bound holds for built problems. */
    rm_problem *p = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_problem_create(&p, 2, &e), RM_OK);
    p->nodes[0].bytes = RM_PROBLEM_MAX_BYTES;
    cr_assert_eq(rm_problem_validate(p, &e), RM_OK, "%s", e.msg);
    p->nodes[1].bytes = 1;
    cr_assert_eq(rm_problem_validate(p, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "node 1"), "%s", e.msg);
    rm_problem_free(p);
}

/* The bound on the sum of the costs, for n nodes (DBL_MAX / n), as printed. */
#define COST_BOUND_2 "8.98847e+307, the largest finite number over the 2 nodes"
#define COST_BOUND_TAIL ": a schedule may compute each node once per stage, and its cost must stay finite"

/* Two costs of 1e308 added up to inf: `plan --out` wrote "cost inf", which
 * its own --check refused, and the MILP called that schedule optimal. Every
 * schedule computes a node at most n times, so n times the sum must be finite. */
Test(problem_file, costs_whose_sum_overflows_are_refused)
{
    tp_expect_error("problem 2 0\n0 a forward 6e307 8 -\n1 b loss 6e307 8 0\n", 3,
                    ": the costs up to node 1 (b) add up to more than " COST_BOUND_2 COST_BOUND_TAIL);
    /* One cost alone over the bound: its own line. */
    tp_expect_error("problem 2 0\n0 - forward 9e307 8 -\n1 b loss 0 8 0\n", 2,
                    ": the costs up to node 0 (?) add up to more than " COST_BOUND_2 COST_BOUND_TAIL);
    /* At the bound the problem is read, and a schedule's cost stays finite. */
    char path[64], text[128];
    snprintf(text, sizeof text, "problem 2 0\n0 a forward %.17g 8 -\n1 b loss 0 8 0\n", DBL_MAX / 2);
    tp_temp_file(path, sizeof path, text);
    rm_problem *p = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    unlink(path);
    rm_schedule *s;
    rm_sim_result r;
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK, "%s", e.msg);
    cr_assert(isfinite(r.cost) && r.cost == DBL_MAX / 2, "%g", r.cost);
    rm_schedule_free(s);
    /* Built problems are held to it too. */
    p->nodes[1].cost = 1e300;
    cr_assert_eq(rm_problem_validate(p, &e), RM_ERR_INVALID);
    cr_assert_str_eq(e.msg, "problem: the costs up to node 1 (b) add up to more than " COST_BOUND_2 COST_BOUND_TAIL);
    rm_problem_free(p);
}

/* A header budget of 2^64 - 1 became "0 B" in the CLI (a size_t through a
 * double); more than any problem holds, it is refused instead. */
Test(problem_file, budget_over_2_62_is_refused)
{
    tp_expect_error("problem 1 0 18446744073709551615\n0 a loss 1 8 -\n", 1,
                    ": the budget 18446744073709551615 is more than 2^62 bytes (4 EiB), more than any problem holds "
                    "(0 means unlimited)");
    tp_expect_error("# c\nproblem 1 0 4611686018427387905\n0 a loss 1 8 -\n", 2,
                    ": the budget 4611686018427387905 is more than 2^62 bytes");
    char path[64];
    tp_temp_file(path, sizeof path, "problem 1 0 4611686018427387904\n0 a loss 1 8 -\n");
    rm_problem *p = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(p->budget, RM_PROBLEM_MAX_BYTES);
    unlink(path);
    p->budget = RM_PROBLEM_MAX_BYTES + 1;
    cr_assert_eq(rm_problem_validate(p, &e), RM_ERR_INVALID);
    cr_assert_str_eq(e.msg, "problem: the budget 4611686018427387905 is more than 2^62 bytes (4 EiB), more than any "
                            "problem holds (0 means unlimited)");
    rm_problem_free(p);
}

/* A temporary file holding n bytes (NULs included) in path[64]. */
static void temp_bytes(char *path, const char *bytes, size_t n)
{
    snprintf(path, 64, "/tmp/remat_test_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, bytes, n), (ssize_t)n);
    close(fd);
}

/* A NUL byte ended the line's fields silently: "0\0,1" read as deps "0". */
Test(problem_file, nul_byte_is_refused)
{
    static const char text[] = "problem 2 0\n0 a forward 1 8 -\n1 b loss 1 8 0\0,5\n";
    char path[64];
    temp_bytes(path, text, sizeof text - 1);
    rm_problem *p = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_ERR_PARSE, "%s", e.msg);
    cr_assert(strstr(e.msg, ":3:") && strstr(e.msg, "NUL"), "%s", e.msg);
    unlink(path);
}

/* An endless line (/dev/zero) made getline grow its buffer until memory ran
 * out; every line-based reader now stops at RM_TEXT_MAX_LINE. */
Test(problem_file, endless_line_is_refused, .timeout = 60)
{
    rm_err e = {0};
    rm_problem *p = NULL;
    cr_assert_eq(rm_problem_read(&p, "/dev/zero", &e), RM_ERR_PARSE, "%s", e.msg);
    cr_assert(strstr(e.msg, "/dev/zero:1: a line longer than"), "%s", e.msg);
    rm_cost_file *c = NULL;
    cr_assert_eq(rm_cost_file_read(&c, "/dev/zero", &e), RM_ERR_PARSE, "%s", e.msg);
    cr_assert(strstr(e.msg, "a line longer than"), "%s", e.msg);
    char path[64];
    tp_temp_file(path, sizeof path, example);
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    rm_schedule *s = NULL;
    cr_assert_eq(rm_schedule_read(&s, p, "/dev/zero", &e), RM_ERR_PARSE, "%s", e.msg);
    cr_assert(strstr(e.msg, "a line longer than"), "%s", e.msg);
    rm_problem_free(p);
    unlink(path);
}

/* A folder opened, and only the first read failed ("read error: Is a
 * directory"); the message says what it is. */
Test(problem_file, folder_instead_of_a_file)
{
    rm_problem *p = (rm_problem *)1;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, "/tmp", &e), RM_ERR_IO);
    cr_assert_null(p);
    cr_assert_str_eq(e.msg, "/tmp: is a directory, not a problem file");
}

/* A UTF-8 byte-order mark, which Windows editors put at the start of a file,
 * was called part of the header ("found '\xEF\xBB\xBFproblem'"). It is
 * skipped there, in text and in JSON; anywhere else it is still an error. */
Test(problem_file, byte_order_mark_at_the_start_is_skipped)
{
    char path[64], plain[64];
    tp_temp_file(path, sizeof path, "\xEF\xBB\xBF" CF_EXAMPLE_HEADER CF_EXAMPLE_NODES);
    tp_temp_file(plain, sizeof plain, CF_EXAMPLE_HEADER CF_EXAMPLE_NODES);
    rm_problem *p = NULL, *q = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_problem_read(&q, plain, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(p->n, q->n);
    cr_assert_eq(p->budget, q->budget);
    for (int i = 0; i < p->n; i++) cr_assert_str_eq(p->nodes[i].name, q->nodes[i].name);
    rm_problem_free(p);
    rm_problem_free(q);
    unlink(path);
    unlink(plain);
    tp_temp_file(path, sizeof path,
                 "\xEF\xBB\xBF{\"nodes\": [{\"id\": 0, \"cost_cpu\": 1, \"cost_ram\": 8, "
                 "\"backward\": false}], \"links\": []}");
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(p->n, 1);
    rm_problem_free(p);
    unlink(path);
    tp_expect_error("problem 1 0\n\xEF\xBB\xBF"
                    "0 a loss 1 8 -\n",
                    2, "U+FEFF, a byte-order mark, allowed only at the start of the file");
}

Test(problem_file, missing_file_is_io_error)
{
    rm_problem *p;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, "/nonexistent/remat.txt", &e), RM_ERR_IO);
    cr_assert(strstr(e.msg, "/nonexistent/remat.txt"));
}

Test(problem_file, write_rejects_unwritable_names)
{
    rm_problem *p = rg_chain_problem(3, 4, 64);
    snprintf(p->nodes[1].name, RM_NAME_LEN, "has space");
    char path[64];
    tp_temp_file(path, sizeof path, "");
    rm_err e = {0};
    cr_assert_eq(rm_problem_write(p, path, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "node 1"), "%s", e.msg);
    unlink(path);
    rm_problem_free(p);
}

static void schedule_round_trip(rm_problem *p, rm_schedule *s)
{
    char path[64];
    tp_temp_file(path, sizeof path, "");
    rm_err e = {0};
    cr_assert_eq(rm_schedule_write(s, p, path, &e), RM_OK, "%s", e.msg);
    rm_schedule *q;
    cr_assert_eq(rm_schedule_read(&q, p, path, &e), RM_OK, "%s", e.msg);
    cr_assert(rm_schedule_equal(q, s));
    rm_schedule_free(q);
    unlink(path);
}

Test(schedule_file, round_trip)
{
    for (uint64_t seed = 1; seed <= 8; seed++) {
        rg_options o = {4 + (int)seed * 2, 0.3, 0.2, 0, 4096};
        rm_problem *p = rg_training_problem(seed, &o);
        rm_schedule *s;
        rm_err e = {0};
        cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK, "%s", e.msg);
        schedule_round_trip(p, s);
        rm_schedule_free(s);
        rm_problem_free(p);
    }
}

/* Writes a checkpoint-all schedule of a small chain, then edits line
 * `line` (1-based) to `replacement` and expects the read to fail at err_line.
 */
/* Replaces line `line` of text with `replacement`, reads the result as a
 * schedule for p and expects code, with `what` in the message and, for
 * parse errors, the file line err_line. */
static void expect_error_in(const rm_problem *p, const char *text, int line, const char *replacement, int err_line,
                            rm_code code, const char *what)
{
    char path[64], out[8192] = "";
    int l = 1;
    for (const char *c = text, *nl; *c; c = nl + 1, l++) {
        nl = strchr(c, '\n');
        if (l == line)
            strcat(out, replacement);
        else
            strncat(out, c, (size_t)(nl - c));
        strcat(out, "\n");
    }
    tp_temp_file(path, sizeof path, out);
    rm_err e = {0};
    rm_schedule *q = (rm_schedule *)1;
    cr_assert_eq(rm_schedule_read(&q, p, path, &e), (int)code, "%s\n%s", e.msg, out);
    cr_assert_null(q);
    char where[96];
    snprintf(where, sizeof where, "%s:%d:", path, err_line);
    if (code == RM_ERR_PARSE) cr_assert(strstr(e.msg, where), "message '%s' should name %s in\n%s", e.msg, where, out);
    cr_assert(strstr(e.msg, what), "message '%s' should say '%s'", e.msg, what);
    unlink(path);
}

/* The same on the file rm_schedule_write makes of checkpoint-all on a chain
 * of 3 forward nodes (input, f1, f2, loss, loss.grad, f2.grad, f1.grad). */
static void expect_schedule_error(int line, const char *replacement, int err_line, rm_code code, const char *what)
{
    rm_problem *p = rg_chain_problem(5, 3, 64);
    rm_schedule *s;
    rm_err e = {0};
    cr_assert_eq(rm_strategy_checkpoint_all(&s, p, &e), RM_OK);
    char path[64];
    tp_temp_file(path, sizeof path, "");
    cr_assert_eq(rm_schedule_write(s, p, path, &e), RM_OK, "%s", e.msg);
    char *text = cf_text(path);
    unlink(path);
    expect_error_in(p, text, line, replacement, err_line, code, what);
    free(text);
    rm_schedule_free(s);
    rm_problem_free(p);
}

Test(schedule_file, tampered_files_are_rejected)
{
    /* Line 1 is a comment, 2 the header, 3-5 comments, 6-10 the S lines (S 0
     * 1-6, S 1 2-5, S 2 3-4, S 4 5, S 5 6: loss.grad does not read the
     * loss), 11 a comment, 12 cost, 13 peak, 14 a comment, 15 ops, 16-29 the
     * operations. */
    expect_schedule_error(2, "schedule 6 sparse", 2, RM_ERR_PARSE, "problem has 7 nodes");
    expect_schedule_error(2, "schedule 7 dense", 2, RM_ERR_PARSE, "expected the header");
    expect_schedule_error(5, "R 3 0-1", 12, RM_ERR_PARSE, "the file says cost"); /* valid, dearer */
    expect_schedule_error(5, "R 3 3", 5, RM_ERR_PARSE, "R lines list only recomputations");
    expect_schedule_error(5, "R 7 0", 5, RM_ERR_PARSE, "with STAGE below 7");
    expect_schedule_error(5, "R 3 1,0", 5, RM_ERR_PARSE, "ranges must ascend");
    expect_schedule_error(5, "R 3 0 1", 5, RM_ERR_PARSE, "expected 'R STAGE NODES'");
    expect_schedule_error(9, "R 2 0", 9, RM_ERR_PARSE, "R lines come before the S lines");
    expect_schedule_error(7, "S 0 1-6", 7, RM_ERR_PARSE, "S lines come one per node");
    expect_schedule_error(6, "S 0 0-6", 6, RM_ERR_PARSE, "S on or above the diagonal");
    expect_schedule_error(6, "S 0 1-7", 6, RM_ERR_PARSE, "7 is out of range");
    expect_schedule_error(6, "S 0 4-6,1-2", 6, RM_ERR_PARSE, "1 comes after 6");
    /* A typo among the S lines is said at its line, not as the validity
     * error of the S lines before it (a learner's 's 2 3-4'). */
    expect_schedule_error(8, "s 2 3-4", 8, RM_ERR_PARSE, "unexpected 's' (R and S lines, then cost, peak, ops)");
    expect_schedule_error(6, "S 0 3-1", 6, RM_ERR_PARSE, "runs backwards");
    expect_schedule_error(6, "S 0 1-x", 6, RM_ERR_PARSE, "expected ranges like 0-4,7");
    expect_schedule_error(6, "S 0 1,", 6, RM_ERR_PARSE, "expected ranges like 0-4,7");
    expect_schedule_error(6, "S 0 1-5", 0, RM_ERR_INVALID, "reads node 0 (input)"); /* gone before f1.grad */
    expect_schedule_error(8, "S 2 4", 0, RM_ERR_INVALID, "S[t+1] <= S[t] + R[t]");
    expect_schedule_error(12, "cost 1", 12, RM_ERR_PARSE, "the file says cost 1");
    expect_schedule_error(13, "peak 1", 13, RM_ERR_PARSE, "the file says peak 1");
    expect_schedule_error(15, "ops 13", 15, RM_ERR_PARSE, "declares 13 operations; R and S give 14");
    expect_schedule_error(16, "0 free 0", 16, RM_ERR_PARSE, "should be '0 compute 0'");
    expect_schedule_error(16, "bogus", 16, RM_ERR_PARSE, "STAGE compute|free NODE");
}

/* The first format (R and S as rows of bits), as remat wrote it before: the
 * example of docs/schedule-format.md's history, a(10) -> b(20) -> c(30) ->
 * d(5) with a skip a -> d, a recomputed in stage 3. */
static const char *dense_text = "# remat schedule (format: docs/schedule-format.md)\n"
                                "schedule 4\n"
                                "stage 0 R 1 S -\n"
                                "stage 1 R 01 S 1\n"
                                "stage 2 R 001 S 01\n"
                                "stage 3 R 1001 S 001\n"
                                "cost 11\n"
                                "peak 50\n"
                                "ops 10\n"
                                "0 compute 0 # a\n1 compute 1 # b\n1 free 0 # a\n2 compute 2 # c\n2 free 1 # b\n"
                                "3 compute 0 # a\n3 compute 3 # d\n3 free 0 # a\n3 free 2 # c\n3 free 3 # d\n";

static rm_problem *skip_problem(void)
{
    static const size_t bytes[] = {10, 20, 30, 5};
    static const double cost[] = {1, 2, 3, 4};
    static const char *const deps[] = {"", "0", "1", "0,2"};
    return rg_problem_make(4, bytes, cost, deps);
}

Test(schedule_file, tampered_dense_files_are_rejected)
{
    rm_problem *p = skip_problem();
    expect_error_in(p, dense_text, 2, "schedule 3", 2, RM_ERR_PARSE, "problem has 4 nodes");
    expect_error_in(p, dense_text, 5, "stage 2 R 101 S 01", 7, RM_ERR_PARSE, "the file says cost 11"); /* valid */
    expect_error_in(p, dense_text, 5, "stage 2 R 010 S 01", 0, RM_ERR_INVALID, "R[t][t]");
    expect_error_in(p, dense_text, 5, "stage 2 R 0011 S 01", 5, RM_ERR_PARSE, "needs 3 R bits");
    expect_error_in(p, dense_text, 5, "stage 2 R 001 S 0x", 5, RM_ERR_PARSE, "not 0 or 1");
    expect_error_in(p, dense_text, 5, "stage 3 R 001 S 01", 5, RM_ERR_PARSE, "expected stage 2");
    expect_error_in(p, dense_text, 7, "cost 1", 7, RM_ERR_PARSE, "the file says cost 1");
    expect_error_in(p, dense_text, 8, "peak 1", 8, RM_ERR_PARSE, "the file says peak 1");
    expect_error_in(p, dense_text, 10, "0 free 0", 10, RM_ERR_PARSE, "should be '0 compute 0'");
    rm_problem_free(p);
}

/* A file in the first format and the one rm_schedule_write makes of it are
 * the same schedule. */
Test(schedule_file, dense_and_sparse_agree)
{
    rm_problem *p = skip_problem();
    char path[64], again[64];
    tp_temp_file(path, sizeof path, dense_text);
    tp_temp_file(again, sizeof again, "");
    rm_schedule *s, *t;
    rm_err e = {0};
    cr_assert_eq(rm_schedule_read(&s, p, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_schedule_write(s, p, again, &e), RM_OK, "%s", e.msg);
    char *text = cf_text(again);
    cr_assert(strstr(text, "schedule 4 sparse\n") && strstr(text, "\nR 3 0\n") && strstr(text, "\nS 0 1\n") &&
                  strstr(text, "\nS 1 2\n") && strstr(text, "\nS 2 3\n") && !strstr(text, "\nS 3"),
              "%s", text);
    free(text);
    cr_assert_eq(rm_schedule_read(&t, p, again, &e), RM_OK, "%s", e.msg);
    cr_assert(rm_schedule_equal(s, t));
    rm_schedule_free(s);
    rm_schedule_free(t);
    rm_problem_free(p);
    unlink(path);
    unlink(again);
}

/* Issue 13, item 10: "0,5\0 garbage" passed as "0,5". */
Test(schedule_file, nul_byte_is_refused)
{
    static const char text[] = "schedule 4 sparse\nR 3 0\0,1\nS 0 1\nS 1 2\nS 2 3\n";
    char path[64];
    temp_bytes(path, text, sizeof text - 1);
    rm_problem *p = skip_problem();
    rm_schedule *s = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_schedule_read(&s, p, path, &e), RM_ERR_PARSE, "%s", e.msg);
    cr_assert(strstr(e.msg, ":2: a NUL byte"), "%s", e.msg);
    cr_assert_null(s);
    rm_problem_free(p);
    unlink(path);
}

/* A folder as a schedule file, and a byte-order mark at its start. */
Test(schedule_file, folder_and_byte_order_mark)
{
    rm_problem *p = skip_problem();
    rm_schedule *s = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_schedule_read(&s, p, "/tmp", &e), RM_ERR_IO);
    cr_assert_str_eq(e.msg, "/tmp: is a directory, not a schedule file");
    char path[64];
    tp_temp_file(path, sizeof path, "\xEF\xBB\xBFschedule 4 sparse\nR 3 0\nS 0 1\nS 1 2\nS 2 3\n");
    cr_assert_eq(rm_schedule_read(&s, p, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_schedule_R(s, 3, 0), 1);
    rm_schedule_free(s);
    unlink(path);
    rm_problem_free(p);
}

/* A few kilobytes of "R t 0-(t-1)" lines ask for n^2 / 2 computes: the
 * reader stops at RM_SCHEDULE_MAX_COMPUTES instead of building them (the
 * fuzzing campaign's note: 40 GB at 100,000 nodes). */
Test(schedule_file, recompute_everything_is_capped)
{
    rm_problem *p = rg_chain_problem(2, 3000, 64);
    cr_assert_not_null(p);
    char path[64];
    tp_temp_file(path, sizeof path, "");
    FILE *f = fopen(path, "w");
    fprintf(f, "schedule %d sparse\n", p->n);
    for (int t = 1; t < p->n; t++) fprintf(f, "R %d 0-%d\n", t, t - 1);
    fclose(f);
    rm_schedule *s = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_schedule_read(&s, p, path, &e), RM_ERR_BUDGET, "%s", e.msg);
    cr_assert_null(s);
    cr_assert(strstr(e.msg, "more than 16777216 computes"), "%s", e.msg);
    unlink(path);
    rm_problem_free(p);
}

Test(schedule_file, reads_documented_example)
{
    static const char *text = "# remat schedule (format: docs/schedule-format.md)\n"
                              "schedule 4 sparse\n"
                              "R 3 0\n"
                              "S 0 1\n"
                              "S 1 2\n"
                              "S 2 3\n"
                              "cost 11\n"
                              "peak 50\n"
                              "ops 10\n"
                              "0 compute 0 # a\n1 compute 1 # b\n1 free 0 # a\n2 compute 2 # c\n2 free 1 # b\n"
                              "3 compute 0 # a\n3 compute 3 # d\n3 free 0 # a\n3 free 2 # c\n3 free 3 # d\n";
    rm_problem *p = skip_problem();
    char path[64];
    tp_temp_file(path, sizeof path, text);
    rm_schedule *s;
    rm_err e = {0};
    cr_assert_eq(rm_schedule_read(&s, p, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_schedule_R(s, 3, 0), 1);
    rm_sim_result r;
    cr_assert_eq(rm_simulate(&r, p, s, &e), RM_OK);
    cr_assert_eq(r.peak_bytes, 50);
    rm_schedule_free(s);
    rm_problem_free(p);
    unlink(path);
}
