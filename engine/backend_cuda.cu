/* The CUDA backend: device memory and one stream. Every CUDA call is checked.
 * Kernels for the layers live beside each layer (layers/<name>.cu). */
#include <cuda_runtime.h>
#include <stdlib.h>

extern "C" {
#include "backend.h"
}

typedef struct cuda_ctx {
    int device;
    cudaStream_t stream;
} cuda_ctx;

#define CUDA_CHECK(call, e, what)                                                                    \
    do {                                                                                             \
        cudaError_t st_ = (call);                                                                    \
        if (st_ != cudaSuccess)                                                                      \
            return rm_errorf((e), RM_ERR_DEVICE, "cuda: %s failed: %s", (what), cudaGetErrorString(st_)); \
    } while (0)

static int cuda_alloc(void *ctx, void **ptr, size_t bytes, rm_err *e)
{
    (void)ctx;
    *ptr = NULL;
    if (!bytes) return RM_OK;
    cudaError_t st = cudaMalloc(ptr, bytes);
    if (st != cudaSuccess)
        return rm_errorf(e, RM_ERR_NOMEM, "cuda: cannot allocate %zu bytes: %s", bytes, cudaGetErrorString(st));
    return RM_OK;
}

static void cuda_release(void *ctx, void *ptr)
{
    (void)ctx;
    if (ptr) cudaFree(ptr); /* nothing useful to do with a failure while releasing */
}

static int cuda_upload(void *ctx, void *dst, const void *src, size_t bytes, rm_err *e)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream), e, "upload");
    return RM_OK;
}

static int cuda_download(void *ctx, void *dst, const void *src, size_t bytes, rm_err *e)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream), e, "download");
    CUDA_CHECK(cudaStreamSynchronize(c->stream), e, "download sync");
    return RM_OK;
}

static int cuda_copy(void *ctx, void *dst, const void *src, size_t bytes, rm_err *e)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream), e, "copy");
    return RM_OK;
}

static int cuda_zero(void *ctx, void *dst, size_t bytes, rm_err *e)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, c->stream), e, "memset");
    return RM_OK;
}

static int cuda_sync(void *ctx, rm_err *e)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    CUDA_CHECK(cudaStreamSynchronize(c->stream), e, "stream sync");
    return RM_OK;
}

static void cuda_destroy(void *ctx)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    if (!c) return;
    cudaStreamDestroy(c->stream);
    free(c);
}

static const rm_backend_ops cuda_ops = {
    cuda_alloc, cuda_release, cuda_upload, cuda_download, cuda_copy, cuda_zero, cuda_sync, cuda_destroy,
};

extern "C" void *rm_backend_cuda_stream(const rm_backend *be)
{
    if (!be || be->kind != RM_BACKEND_CUDA) return NULL;
    return (void *)((const cuda_ctx *)be->ctx)->stream;
}

extern "C" int rm_backend_cuda_mem_info(const rm_backend *be, size_t *free_bytes, size_t *total_bytes, rm_err *e)
{
    if (!be || be->kind != RM_BACKEND_CUDA)
        return rm_errorf(e, RM_ERR_UNSUPPORTED, "device memory: not a CUDA backend");
    CUDA_CHECK(cudaSetDevice(((const cuda_ctx *)be->ctx)->device), e, "cudaSetDevice");
    CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes), e, "cudaMemGetInfo");
    return RM_OK;
}

extern "C" int rm_backend_cuda_create(rm_backend **out, int device, rm_err *e)
{
    int count = 0;
    cudaError_t st = cudaGetDeviceCount(&count);
    if (st != cudaSuccess || count == 0)
        return rm_errorf(e, RM_ERR_UNSUPPORTED, "cuda: no usable GPU (%s)",
                         st == cudaSuccess ? "no device" : cudaGetErrorString(st));
    if (device < 0 || device >= count)
        return rm_errorf(e, RM_ERR_INVALID, "cuda: device %d does not exist (%d found)", device, count);
    CUDA_CHECK(cudaSetDevice(device), e, "cudaSetDevice");
    cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
    rm_backend *be = (rm_backend *)calloc(1, sizeof *be);
    if (!c || !be) {
        free(c);
        free(be);
        return rm_errorf(e, RM_ERR_NOMEM, "cuda backend: out of memory");
    }
    c->device = device;
    st = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (st != cudaSuccess) {
        free(c);
        free(be);
        return rm_errorf(e, RM_ERR_DEVICE, "cuda: cudaStreamCreate failed: %s", cudaGetErrorString(st));
    }
    be->kind = RM_BACKEND_CUDA;
    be->name = "cuda";
    be->ops = &cuda_ops;
    be->ctx = c;
    *out = be;
    return RM_OK;
}
