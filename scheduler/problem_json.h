/* The node-link JSON reader (problem_json.c): the format in which Checkmate
 * and Moccasin publish their training graphs. Private to the scheduler:
 * callers use rm_problem_read, which hands it every file whose first
 * non-white-space byte is '{'. */
#ifndef REMAT_PROBLEM_JSON_H
#define REMAT_PROBLEM_JSON_H

#include <stdio.h>

#include "problem.h"

/* Reads the node-link JSON problem of docs/problem-format.md from fp, which
 * must be at the start of the file. Malformed input is RM_ERR_PARSE with a
 * message "FILE:LINE:COLUMN: what". */
int rm_problem_read_json(rm_problem **out, FILE *fp, const char *path, rm_err *e);

#endif
