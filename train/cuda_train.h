/* The few device kernels training needs beyond the layers' own: the poison
 * fill and the gradient sum of the executor, and the SGD and Adam updates of
 * the optimizer (train/cuda_train.cu; train/cuda_train_none.c in a build
 * without CUDA, where every function answers RM_ERR_UNSUPPORTED).
 *
 * Every pointer argument is DEVICE memory of be (a CUDA backend); the work is
 * queued on be's stream (rm_backend_cuda_stream) and nothing synchronises:
 * a launch error is returned at once, an execution error at the next
 * synchronisation (a download, rm_backend sync). Deterministic: one thread
 * per element, no atomics, so the same inputs give the same bits, and each
 * kernel evaluates exactly the float (or double) operations of its CPU
 * counterpart in the same order with no FMA contraction (explicit _rn
 * intrinsics), so results are bit-identical to the CPU reference. */
#ifndef REMAT_TRAIN_CUDA_TRAIN_H
#define REMAT_TRAIN_CUDA_TRAIN_H

#include <stddef.h>

#include "backend.h"
#include "error.h"

/* Most sources one gradient sum takes (the executor checks graphs against
 * it at creation): their pointers travel as one kernel argument. */
#define RM_CUDA_GRAD_SUM_MAX 32

/* Fills bytes at dev with 0xFF bytes: every float there reads as a NaN. */
int rm_cuda_fill_nan(rm_backend *be, void *dev, size_t bytes, rm_err *e);

/* out[i] = (float)(sum over d in order of (double)src[d][i]), i < count:
 * the executor's grad-sum node, bit-identical to its CPU loop. */
int rm_cuda_grad_sum(rm_backend *be, float *out, const float *const *src, int nsrc, size_t count, rm_err *e);

/* SGD as train/optim.c's sgd_update: v NULL means no momentum. */
int rm_cuda_sgd_update(rm_backend *be, float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
                       int nesterov, rm_err *e);

/* Adam's per-step constants, computed on the host as train/optim.c does. */
typedef struct rm_cuda_adam_scalars {
    float b1, one_minus_b1, b2, one_minus_b2, eps;
    float step_size; /* lr / (1 - b1^t) */
    float bc2_sqrt;  /* sqrt(1 - b2^t) */
    float l2;        /* wd added to the gradient (Adam) */
    float shrink;    /* 1 - lr*wd applied to w first (AdamW), else 1 */
} rm_cuda_adam_scalars;

/* Adam (or AdamW) as train/optim.c's adam_update. */
int rm_cuda_adam_update(rm_backend *be, float *w, const float *dw, float *m, float *v, size_t n,
                        const rm_cuda_adam_scalars *k, rm_err *e);

#endif
