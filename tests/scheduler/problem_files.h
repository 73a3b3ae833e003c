/* What the problem-reader suites (test_problem_file.c for the text format,
 * test_problem_json.c for node-link JSON) share: temporary files, "this file
 * is refused with RM_ERR_PARSE, naming this line", and the random problems
 * their round trips write and read back. */
#ifndef REMAT_TEST_PROBLEM_FILES_H
#define REMAT_TEST_PROBLEM_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "problem.h"

/* A fresh temporary file holding text (tests run in parallel). */
void tp_temp_file(char *path, size_t len, const char *text);

/* Reads text as a problem file and expects a parse error whose message names
 * "path:line:" and contains what; the file is removed. */
void tp_expect_error(const char *text, int line, const char *what);

/* A random training problem (random_graphs.h) of 5 + 3 * seed forward nodes
 * with what a writer must get right: a cost that needs 17 digits (node 1)
 * and a node without a name (node 2). Budget 123456789 * seed. */
rm_problem *tp_round_trip_problem(uint64_t seed);

#endif
