/* Device backends. A backend owns device memory and the handles kernels need
 * (a CUDA stream, cuBLAS/cuDNN handles); layers dispatch on its kind. The CPU
 * backend is the reference every other backend is tested against. */
#ifndef REMAT_BACKEND_H
#define REMAT_BACKEND_H

#include <stddef.h>

#include "error.h"

typedef enum rm_backend_kind { RM_BACKEND_CPU = 0, RM_BACKEND_CUDA, RM_BACKEND_KIND_COUNT } rm_backend_kind;

typedef struct rm_backend rm_backend;

typedef struct rm_backend_ops {
    int (*alloc)(void *ctx, void **ptr, size_t bytes, rm_err *e);
    void (*release)(void *ctx, void *ptr);
    /* Host <-> device copies; on the CPU backend both are memcpy. */
    int (*upload)(void *ctx, void *dst_dev, const void *src_host, size_t bytes, rm_err *e);
    int (*download)(void *ctx, void *dst_host, const void *src_dev, size_t bytes, rm_err *e);
    int (*copy)(void *ctx, void *dst_dev, const void *src_dev, size_t bytes, rm_err *e);
    int (*zero)(void *ctx, void *dst_dev, size_t bytes, rm_err *e);
    int (*sync)(void *ctx, rm_err *e);
    void (*destroy)(void *ctx);
} rm_backend_ops;

struct rm_backend {
    rm_backend_kind kind;
    const char *name;
    const rm_backend_ops *ops;
    void *ctx;
};

int rm_backend_cpu_create(rm_backend **out, rm_err *e);
/* Fails with RM_ERR_UNSUPPORTED when built without CUDA or with no device. */
int rm_backend_cuda_create(rm_backend **out, int device, rm_err *e);
void rm_backend_free(rm_backend *be);
/* The cudaStream_t every kernel of a CUDA backend runs on (as void *, so C
 * callers need no CUDA headers); NULL for other backends. */
void *rm_backend_cuda_stream(const rm_backend *be);
/* Free and total device memory (cudaMemGetInfo), so a budget larger than the
 * device can hold is refused with a clear error before anything is allocated.
 * RM_ERR_UNSUPPORTED for non-CUDA backends. */
int rm_backend_cuda_mem_info(const rm_backend *be, size_t *free_bytes, size_t *total_bytes, rm_err *e);

/* Kernel engines of the CUDA backend, chosen in one place (the backend) and
 * read by every layer's CUDA entry point:
 *   handwritten  the hand-written kernels alone (exact: double accumulation);
 *   cublas       hand-written kernels, plus cuBLAS SGEMM for linear and for
 *                convolution (im2col / col2im around the product);
 *   cudnn        cuDNN convolution (conv, conv_transpose2x2) and batch norm,
 *                cuBLAS for linear, hand-written for the rest.
 * A configuration an engine rejects runs on the hand-written kernels
 * (rm_backend_cuda_fallbacks counts those calls). Default: cudnn when this
 * build has cuDNN, else cublas; the environment variable REMAT_ENGINE
 * (handwritten|cublas|cudnn) overrides it when a backend is created. */
typedef enum rm_cuda_engine {
    RM_ENGINE_HANDWRITTEN = 0,
    RM_ENGINE_CUBLAS,
    RM_ENGINE_CUDNN,
    RM_ENGINE_COUNT
} rm_cuda_engine;

const char *rm_cuda_engine_name(rm_cuda_engine engine);
/* "handwritten", "cublas" or "cudnn"; RM_ERR_INVALID naming the value otherwise. */
int rm_cuda_engine_parse(rm_cuda_engine *out, const char *name, rm_err *e);
/* 1 when this build has the cuDNN engine (cudnn.h and libcudnn were found). */
int rm_backend_cuda_has_cudnn(void);

/* Engine and numerics of a CUDA backend. Change them between steps, never
 * inside one: cached algorithm choices are dropped. set_* answer
 * RM_ERR_INVALID for a non-CUDA backend, RM_ERR_UNSUPPORTED for the cudnn
 * engine in a build without cuDNN.
 *   deterministic (default 1; REMAT_DETERMINISTIC=0|1): every kernel of every
 *     engine gives the same bits for the same inputs: cuDNN algorithms are
 *     restricted to CUDNN_DETERMINISTIC ones, cuBLAS runs with
 *     CUBLAS_ATOMICS_NOT_ALLOWED on one stream and a fixed workspace.
 *   fast_math (default 0; REMAT_FAST_MATH=0|1): allows TF32 tensor-core math
 *     in cuBLAS and cuDNN and cuDNN's Winograd and FFT algorithms. Off, every
 *     engine stays within float32 rounding of the CPU reference. */
int rm_backend_cuda_set_engine(rm_backend *be, rm_cuda_engine engine, rm_err *e);
rm_cuda_engine rm_backend_cuda_engine(const rm_backend *be);
int rm_backend_cuda_set_deterministic(rm_backend *be, int on, rm_err *e);
int rm_backend_cuda_deterministic(const rm_backend *be);
int rm_backend_cuda_set_fast_math(rm_backend *be, int on, rm_err *e);
int rm_backend_cuda_fast_math(const rm_backend *be);
/* Layer calls that fell back from the chosen engine to the hand-written
 * kernels (cuDNN rejected the configuration, or no algorithm fit the
 * workspace) since the backend was created. */
unsigned long long rm_backend_cuda_fallbacks(const rm_backend *be);
/* Device memory the backend itself holds outside any arena (the cuBLAS
 * workspace), so a memory budget can count it. 0 for other backends. */
size_t rm_backend_cuda_fixed_bytes(const rm_backend *be);

static inline int rm_backend_alloc(rm_backend *be, void **ptr, size_t bytes, rm_err *e)
{
    return be->ops->alloc(be->ctx, ptr, bytes, e);
}
static inline void rm_backend_release(rm_backend *be, void *ptr) { be->ops->release(be->ctx, ptr); }

#endif
