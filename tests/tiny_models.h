/* A tiny model traced into its training problem, with schedules of it that
 * the tests run: the executor's on the CPU (tests/engine/test_executor.c)
 * and the GPU suite's against it (tests/cuda/test_cuda_train.c), which hold
 * the same schedules to the same answers. */
#ifndef REMAT_TEST_TINY_MODELS_H
#define REMAT_TEST_TINY_MODELS_H

#include <stddef.h>

#include "graph.h"
#include "model.h"
#include "problem.h"
#include "schedule.h"

#define TM_MAX_SCHEDS 16

/* Which schedules tm_load makes; checkpoint-all always comes first. */
enum {
    TM_BASELINES = 1 << 0,      /* every other baseline at the lowest of eight budgets between the trivial
                                   lower bound and just under checkpoint-all's peak that it fits (so each
                                   recomputes) */
    TM_LP_ROUND = 1 << 1,       /* LP rounding, halfway between the lower bound and that peak */
    TM_MILP = 1 << 2,           /* the MILP there, under 20 branch-and-bound nodes (deterministic) */
    TM_ANNEAL = 1 << 3,         /* the anneal there (4,000 moves, seed 1), which may choose its own order */
    TM_NO_CHECKPOINTS = 1 << 4, /* last: the checkpoint construction with none (everything recomputed) */
    TM_DISTINCT = 1 << 5,       /* a schedule equal to an earlier one is left out (said in the log) */
};

typedef struct tm_tiny {
    rm_model *m;
    rm_graph g;
    rm_problem *p, *pa; /* pa: node bytes aligned as the plan places them (budget 0) */
    int n;
    rm_schedule *s[TM_MAX_SCHEDS];
    char name[TM_MAX_SCHEDS][48]; /* STRATEGY@LEVEL/8 */
    size_t budget[TM_MAX_SCHEDS]; /* the budget it was solved for (0: none) */
} tm_tiny;

/* The checkout the models are read from: REMAT_SOURCE_DIR from the
 * environment (the device machine runs a copy of the tree elsewhere, so
 * scripts/gpu-check sets it), else the one this binary was built from. */
const char *tm_source_dir(void);

/* The same problem with every node's bytes rounded up to RM_ARENA_ALIGN. */
rm_problem *tm_aligned_problem(const rm_problem *p);

/* models/CFG (or tests/models/onnx/CFG for a .onnx name, with its own
 * weights) at batch, and the schedules what asks for (TM_*). */
void tm_load(tm_tiny *t, const char *cfg, int batch, unsigned what);
void tm_free(tm_tiny *t);

#endif
