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

static inline int rm_backend_alloc(rm_backend *be, void **ptr, size_t bytes, rm_err *e)
{
    return be->ops->alloc(be->ctx, ptr, bytes, e);
}
static inline void rm_backend_release(rm_backend *be, void *ptr) { be->ops->release(be->ctx, ptr); }

#endif
