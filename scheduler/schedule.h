/* A schedule in Checkmate's form: n stages; stage t (0-based) computes node t
 * and may recompute earlier nodes. R[t][i] = 1: node i is computed in stage t
 * (i <= t, R[t][t] = 1). S[t][i] = 1: node i's output is retained from the end
 * of stage t-1 into stage t (i < t; S[0][*] = 0). Both are n x n, row-major.
 * The operation sequence (compute i / free j, frees right after last use) is
 * derived from R and S by rm_schedule_ops. */
#ifndef REMAT_SCHEDULE_H
#define REMAT_SCHEDULE_H

#include <stdint.h>

#include "plan.h"
#include "problem.h"

typedef struct rm_schedule {
    int n;
    uint8_t *R; /* R[t * n + i] */
    uint8_t *S; /* S[t * n + i] */
} rm_schedule;

int rm_schedule_create(rm_schedule **out, int n, rm_err *e); /* all zero */
void rm_schedule_free(rm_schedule *s);
int rm_schedule_copy(rm_schedule **out, const rm_schedule *s, rm_err *e);

static inline uint8_t *rm_R(rm_schedule *s, int t, int i) { return &s->R[(size_t)t * (size_t)s->n + (size_t)i]; }
static inline uint8_t *rm_S(rm_schedule *s, int t, int i) { return &s->S[(size_t)t * (size_t)s->n + (size_t)i]; }
static inline int rm_R_at(const rm_schedule *s, int t, int i) { return s->R[(size_t)t * (size_t)s->n + (size_t)i]; }
static inline int rm_S_at(const rm_schedule *s, int t, int i) { return s->S[(size_t)t * (size_t)s->n + (size_t)i]; }

/* The operation sequence: compute ops in stage order, each followed by the
 * frees of values whose last use in the stage it was and that are not
 * retained into the next stage. *ops is malloc'ed.
 * Each stage t begins with the frees of values resident at its start (S[t])
 * that the stage neither reads nor retains, and of retained values it
 * recomputes (the new copy supersedes the old one, which nobody reads since
 * every reader comes after the recompute). Invalid schedules (R[t][t] = 0,
 * entries off the lower triangle, retaining what was not there, reading a
 * value that is not resident) give RM_ERR_INVALID naming stage, node and rule. */
int rm_schedule_ops(rm_op **ops, int *nops, const rm_problem *p, const rm_schedule *s, rm_err *e);

/* The arena plan of s (engine/plan.h): its operation sequence placed. With g
 * (the graph p came from) the sizes are g's and every compute's inputs are
 * checked live (rm_plan_from_graph); with g NULL they are p's bytes. */
int rm_schedule_plan(rm_plan **out, const rm_problem *p, const rm_schedule *s, const rm_graph *g, rm_err *e);
/* The plan of g under checkpoint-all: every value kept until its last use,
 * and no longer. On a forward-only graph (inference), the least memory a
 * pass can take; on a training graph, no rematerialization. */
int rm_schedule_plan_all(rm_plan **out, const rm_graph *g, rm_err *e);

/* The schedule file (docs/schedule-format.md): R and S, the simulated cost
 * and peak, and the operation sequence. Writing rejects invalid schedules.
 * Reading is also the check behind `remat plan --check`: the stage count must
 * match the problem, R and S must be valid, and any cost, peak and operation
 * lines must agree with the simulator; errors name the file line. The budget
 * is not checked here (see rm_sim_fits). */
int rm_schedule_write(const rm_schedule *s, const rm_problem *p, const char *path, rm_err *e);
int rm_schedule_read(rm_schedule **out, const rm_problem *p, const char *path, rm_err *e);

#endif
