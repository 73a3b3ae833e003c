/* Measured node costs: runs training steps of a model under the
 * checkpoint-all plan (every node computed exactly once per step) and times
 * every node's kernels, so that `remat profile` can write a cost file
 * (scheduler/cost_file.h) the scheduler minimises instead of FLOPs.
 *
 * Timing (the method of the device notes): warm-up steps first, so first-use
 * costs (page faults of a fresh arena, CUDA module loading, cuBLAS/cuDNN
 * handle and algorithm setup) stay out of the numbers; then `reps` timed
 * steps, and a node's cost is the median of its times over them, which a
 * stray interruption cannot move. On the CPU a node's time is the monotonic
 * clock around its kernels (CPU kernels are synchronous). On CUDA it is a
 * pair of device events recorded on the backend's stream around the node's
 * launches, read after the step has finished: the GPU time between them,
 * without the host's launch overhead running ahead. Inputs are random, not
 * zeros (zeros can run faster than real data). */
#ifndef REMAT_TRAIN_PROFILE_H
#define REMAT_TRAIN_PROFILE_H

#include <stdint.h>

#include "backend.h"
#include "cost_file.h"
#include "error.h"
#include "graph.h"
#include "model.h"

typedef struct rm_profile_options {
    rm_backend_kind device;     /* the backend (rm_backend_find; 0: the CPU) */
    int batch;                  /* >= 1 */
    int warmup;                 /* untimed steps first (>= 0) */
    int reps;                   /* timed steps (>= 1); each node's cost is the median over them */
    uint64_t seed;              /* parameters and the random batch */
    rm_backend_options backend; /* its kernel library and threads (all 0: its defaults) */
    /* Called before each step (timed = 0 for warm-up) with its 1-based number
     * among its kind; may be NULL. */
    void (*progress)(void *ctx, int timed, int step, int steps);
    void *progress_ctx;
} rm_profile_options;

typedef struct rm_profile {
    rm_graph g;         /* the traced training graph at the batch: names, kinds, FLOPs */
    double *seconds;    /* [g.n] the median time of each node (0 for the input: loaded, not computed) */
    double *lo, *hi;    /* [g.n] the fastest and the slowest of the timed runs: the spread */
    double step_median; /* the whole step, host clock: nodes plus the executor's own work */
    int warmup, reps;
    const char *device; /* the backend's name */
    char settings[256]; /* its settings in words (rm_backend_describe): what was measured */
} rm_profile;

/* Profiles m at o->batch. Errors: RM_ERR_UNSUPPORTED for CUDA in a build
 * without it or without a GPU, RM_ERR_BUDGET when the GPU lacks the memory,
 * the executor's errors otherwise. */
int rm_profile_run(rm_profile **out, const rm_model *m, const rm_profile_options *o, rm_err *e);
void rm_profile_free(rm_profile *p);

/* The cost file of a profile: one entry per graph node, named as the
 * problem's nodes are; model is m's name (rm_cost_model_name). */
int rm_profile_cost_file(rm_cost_file **out, const rm_profile *p, const char *model, rm_err *e);

#endif
