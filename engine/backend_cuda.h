/* What the CUDA backend gives the layers' .cu files (C++ only: C callers use
 * backend.h and never see a CUDA header): its cuBLAS and cuDNN handles, both
 * bound to the backend's stream, the engine settings, status strings for
 * error messages, and a per-backend cache of per-shape plans (cuDNN
 * descriptors and algorithm choices), so a training step creates nothing. */
#ifndef REMAT_BACKEND_CUDA_H
#define REMAT_BACKEND_CUDA_H

#ifndef __cplusplus
#error "backend_cuda.h is for CUDA C++ sources; C code uses backend.h"
#endif

#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef REMAT_HAVE_CUDNN
#include <cudnn.h>
#endif

extern "C" {
#include "backend.h"
}

/* The handle of a CUDA backend (NULL for any other backend). */
cublasHandle_t rm_cuda_cublas(const rm_backend *be);
#ifdef REMAT_HAVE_CUDNN
cudnnHandle_t rm_cuda_cudnn(const rm_backend *be);
const char *rm_cudnn_status_str(cudnnStatus_t st);
#endif
const char *rm_cublas_status_str(cublasStatus_t st);

/* The engine a layer call should use: the backend's, or handwritten for a
 * backend that is not CUDA. */
rm_cuda_engine rm_cuda_engine_of(const rm_backend *be);
int rm_cuda_is_deterministic(const rm_backend *be);
int rm_cuda_is_fast_math(const rm_backend *be);
/* Counts one layer call that fell back to the hand-written kernels. */
void rm_cuda_note_fallback(const rm_backend *be);

/* Plan cache. A key is a kind tag (which layer and what the plan is for) and
 * up to 15 ints (shapes, hyper-parameters); unused ints must be 0. The cache
 * is dropped whenever the engine or numerics settings change, and when the
 * backend is freed. */
typedef struct rm_cuda_plan_key {
    int kind;
    int v[15];
} rm_cuda_plan_key;

/* The cached plan of key, or NULL. */
void *rm_cuda_plan_find(const rm_backend *be, const rm_cuda_plan_key *key);
/* Hands plan to the cache, which destroys it with destroy(plan) when it is
 * dropped. Returns 1 when cached; 0 when the cache is full, and then the
 * caller still owns plan and must destroy it after use. */
int rm_cuda_plan_put(const rm_backend *be, const rm_cuda_plan_key *key, void *plan, void (*destroy)(void *plan));

/* Checks a cuBLAS / cuDNN call; returns RM_ERR_DEVICE naming the call. */
#define RM_CUBLAS_CHECK(call, e, what)                                                                                 \
    do {                                                                                                               \
        cublasStatus_t cst_ = (call);                                                                                  \
        if (cst_ != CUBLAS_STATUS_SUCCESS)                                                                             \
            return rm_errorf((e), RM_ERR_DEVICE, "cublas: %s failed: %s", (what), rm_cublas_status_str(cst_));         \
    } while (0)

#ifdef REMAT_HAVE_CUDNN
#define RM_CUDNN_CHECK(call, e, what)                                                                                  \
    do {                                                                                                               \
        cudnnStatus_t dst_ = (call);                                                                                   \
        if (dst_ != CUDNN_STATUS_SUCCESS)                                                                              \
            return rm_errorf((e), RM_ERR_DEVICE, "cudnn: %s failed: %s", (what), rm_cudnn_status_str(dst_));           \
    } while (0)
#endif

#endif
