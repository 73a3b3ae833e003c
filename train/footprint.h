/* The footprint: the fixed memory of training a model, computed in one place
 * for every command (graph, plan, explain, maxbatch, train), so that the
 * peaks they print and the budgets they solve for agree.
 *
 * Fixed memory is what stays resident for the whole run, outside the
 * activation arena the schedule governs: the weights, their gradients, the
 * optimizer's state, the batchnorm running statistics, the labels of a batch
 * (and the executor's loss slot), the layers' scratch workspace, and memory
 * the backend itself holds (the cuBLAS workspace on a GPU). Each part is
 * rounded up to RM_ARENA_ALIGN as it is allocated. The executor allocates
 * all of it but the optimizer's state and the backend's own; a test checks
 * that what they allocate is what this says. */
#ifndef REMAT_TRAIN_FOOTPRINT_H
#define REMAT_TRAIN_FOOTPRINT_H

#include <stddef.h>

#include "backend.h"
#include "cost_file.h"
#include "error.h"
#include "model.h"
#include "optim.h"
#include "problem.h"

typedef struct rm_footprint {
    size_t weights, grads, optim, buffers;
    size_t labels;    /* the batch's labels and the executor's loss slot */
    size_t workspace; /* the layers' scratch (the largest call's) */
    size_t backend;   /* held by the backend outside any arena (cuBLAS workspace) */
    size_t grad_sum;  /* the micro-batches' gradient sum (train --accum > 1; grad_reduce.h); 0 otherwise */
    size_t total;     /* the sum of the above */
} rm_footprint;

/* The footprint of training m at a batch size with optimizer o on backend be
 * (NULL: the CPU's). */
int rm_footprint_of(rm_footprint *f, const rm_model *m, int batch, const rm_optim_options *o, const rm_backend *be,
                    rm_err *e);

/* With accum > 1 micro-batches per step the trainer also keeps their
 * gradients' sum (train/grad_reduce.h): f->grad_sum, f->total and, when p
 * is not NULL, p's fixed bytes grow by it. */
int rm_footprint_add_grad_sum(rm_footprint *f, rm_problem *p, const rm_model *m, int accum, rm_err *e);

/* The rematerialization problem training solves, the one `plan`, `explain`,
 * `maxbatch`, `graph` and `train` all use: the traced graph with every node's
 * bytes rounded up to RM_ARENA_ALIGN (so the simulator's peak is exactly the
 * plan's live peak), fixed_bytes the footprint's total (f, if not NULL, gets
 * its parts), budget 0. costs NULL keeps the FLOPs as node costs; else
 * rm_cost_file_apply checks that the file is this model's at this batch, or
 * scales it to this batch when mode is RM_COST_SCALE_BATCH. */
int rm_training_problem(rm_problem **out, rm_footprint *f, const rm_model *m, int batch, const rm_optim_options *o,
                        const rm_backend *be, const rm_cost_file *costs, rm_cost_batch mode, rm_err *e);
/* The same from g, m traced at its batch already (the trainer and `remat
 * graph` keep the graph: one trace, not two). */
int rm_training_problem_of(rm_problem **out, rm_footprint *f, const rm_model *m, const rm_graph *g,
                           const rm_optim_options *o, const rm_backend *be, const rm_cost_file *costs,
                           rm_cost_batch mode, rm_err *e);

#endif
