/* Shared by the problem-reader suites; see problem_files.h. */
#include "problem_files.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "random_graphs.h"

void tp_temp_file(char *path, size_t len, const char *text)
{
    snprintf(path, len, "/tmp/remat_test_XXXXXX");
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    size_t n = strlen(text);
    cr_assert_eq(write(fd, text, n), (ssize_t)n);
    close(fd);
}

void tp_expect_error(const char *text, int line, const char *what)
{
    char path[64], where[96];
    tp_temp_file(path, sizeof path, text);
    rm_problem *p = (rm_problem *)1;
    rm_err e = {0};
    cr_assert_eq(rm_problem_read(&p, path, &e), RM_ERR_PARSE, "expected a parse error for:\n%s\ngot: %s", text, e.msg);
    cr_assert_null(p);
    snprintf(where, sizeof where, "%s:%d:", path, line);
    cr_assert(strstr(e.msg, where), "message '%s' should name %s", e.msg, where);
    cr_assert(strstr(e.msg, what), "message '%s' should say '%s'", e.msg, what);
    unlink(path);
}

rm_problem *tp_round_trip_problem(uint64_t seed)
{
    rg_options o = {5 + (int)seed * 3, 0.3, 0.2, 0, 1 << 20};
    rm_problem *p = rg_training_problem(seed, &o);
    cr_assert_not_null(p);
    p->budget = 123456789 * seed;
    p->nodes[1].cost = 1.0 / 3.0;
    p->nodes[2].name[0] = '\0';
    return p;
}
