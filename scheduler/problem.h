/* A rematerialization problem (Checkmate's setting): nodes in topological
 * order, each with a compute cost, output bytes, dependencies and a
 * forward/loss/backward tag; plus fixed bytes and a memory budget. Built from
 * a traced training graph or read from a plain-text problem file, so the
 * scheduler never needs layers/. */
#ifndef REMAT_PROBLEM_H
#define REMAT_PROBLEM_H

#include <stddef.h>

#include "error.h"
#include "graph.h"

typedef struct rm_problem_node {
    char name[RM_NAME_LEN];
    rm_node_tag tag;
    double cost;  /* compute cost (FLOPs by default, or profiled seconds) */
    size_t bytes; /* output bytes */
    int ndeps;
    int *deps;    /* earlier node indices, no duplicates */
} rm_problem_node;

typedef struct rm_problem {
    int n;
    rm_problem_node *nodes;
    size_t fixed_bytes; /* parameters, gradients, optimizer state: always resident */
    size_t budget;      /* total device budget in bytes, fixed bytes included; 0 = unlimited */
} rm_problem;

/* Costs are node FLOPs; budget = 0 (set it before solving). */
int rm_problem_from_graph(rm_problem **out, const rm_graph *g, rm_err *e);
/* The documented problem-file format (see docs/problem-format.md). Errors name the line. */
int rm_problem_read(rm_problem **out, const char *path, rm_err *e);
int rm_problem_write(const rm_problem *p, const char *path, rm_err *e);
void rm_problem_free(rm_problem *p);

/* Activation budget: budget - fixed_bytes (0 if the fixed bytes do not fit). */
size_t rm_problem_activation_budget(const rm_problem *p);

#endif
