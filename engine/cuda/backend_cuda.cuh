/* What the CUDA backend gives CUDA C++ sources (the layers' .cu files and
 * the backend's own; C callers use backend.h and backend_cuda.h and never see
 * a CUDA header): its cuBLAS and cuDNN handles, both bound to the backend's
 * stream, the kernel-library settings, status strings for error messages, a
 * per-backend cache of per-shape plans (cuDNN descriptors and algorithm
 * choices), so a training step creates nothing, the checks and launch
 * geometry every kernel uses, and the backend's own kernels
 * (backend_cuda_kernels.cu). */
#ifndef REMAT_BACKEND_CUDA_CUH
#define REMAT_BACKEND_CUDA_CUH

#ifndef __cplusplus
#error "backend_cuda.cuh is for CUDA C++ sources; C code uses backend.h and backend_cuda.h"
#endif

#include <cublas_v2.h>
#include <cuda_runtime.h>
#ifdef REMAT_HAVE_CUDNN
#include <cudnn.h>
#endif

extern "C" {
#include "backend_cuda.h"
}

/* The handle of a CUDA backend (NULL for any other backend). */
cublasHandle_t rm_cuda_cublas(const rm_backend *be);
#ifdef REMAT_HAVE_CUDNN
cudnnHandle_t rm_cuda_cudnn(const rm_backend *be);
const char *rm_cudnn_status_str(cudnnStatus_t st);
#endif
const char *rm_cublas_status_str(cublasStatus_t st);

int rm_cuda_is_deterministic(const rm_backend *be);
int rm_cuda_is_fast_math(const rm_backend *be);
/* Counts one layer call that fell back to the hand-written kernels. */
void rm_cuda_note_fallback(const rm_backend *be);

/* Plan cache. A key is a kind tag (which layer and what the plan is for) and
 * up to 15 ints (shapes, hyper-parameters); unused ints must be 0. The cache
 * is dropped whenever the kernel library or numerics settings change, and when the
 * backend is freed. */
typedef struct rm_cuda_plan_key {
    int kind;
    int v[16];
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

/* Checks a CUDA runtime call; returns RM_ERR_DEVICE naming it on failure. */
#define RM_CUDA_CHECK(call, e, what)                                                                                   \
    do {                                                                                                               \
        cudaError_t st_ = (call);                                                                                      \
        if (st_ != cudaSuccess)                                                                                        \
            return rm_errorf((e), RM_ERR_DEVICE, "cuda: %s failed: %s", (what), cudaGetErrorString(st_));              \
    } while (0)

/* After a <<<...>>> launch: a bad configuration shows up here. */
#define RM_CUDA_LAUNCHED(e, what) RM_CUDA_CHECK(cudaGetLastError(), e, what)

/* Threads per block everywhere (a power of two: rm_block_sum relies on it). */
#define RM_THREADS 256

/* One thread per element of [0, n), in grid-stride loops so huge tensors need
 * no huge grids. */
#define RM_CUDA_FOR(i, n)                                                                                              \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

static inline unsigned rm_cuda_blocks(size_t n)
{
    size_t b = (n + RM_THREADS - 1) / RM_THREADS;
    if (b < 1) b = 1;
    return b > (1u << 20) ? (1u << 20) : (unsigned)b;
}

/* ---- the backend's own kernels and timers (backend_cuda_kernels.cu) ----
 * Each kernel mirrors a loop of backend_cpu_compute.c operation for
 * operation, written with _rn intrinsics so that nvcc cannot contract a
 * multiply and an add into an FMA: the GPU computes the same bits as the CPU
 * reference. One thread per element, no atomics. Work is queued on st;
 * nothing waits. */

/* Most sources one gradient sum takes: their pointers travel as one kernel
 * argument (rm_backend.max_grad_sum). */
#define RM_CUDA_GRAD_SUM_MAX 32

int rm_cuda_poison(cudaStream_t st, void *dst, size_t bytes, rm_err *e);
int rm_cuda_grad_sum(cudaStream_t st, float *out, const float *const *src, int nsrc, size_t count, rm_err *e);
int rm_cuda_scale(cudaStream_t st, float *x, size_t count, float a, rm_err *e);
int rm_cuda_sgd_update(cudaStream_t st, float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
                       int nesterov, rm_err *e);
int rm_cuda_adam_update(cudaStream_t st, float *w, const float *dw, float *m, float *v, size_t n,
                        const rm_adam_scalars *k, rm_err *e);
/* nevents cudaEvents (default flags: they keep timing) recorded on st. */
int rm_cuda_timer_create(rm_backend_timer **out, cudaStream_t st, int nevents, rm_err *e);
int rm_cuda_timer_record(rm_backend_timer *t, int k, rm_err *e);
int rm_cuda_timer_elapsed(rm_backend_timer *t, int a, int b, double *seconds, rm_err *e);
void rm_cuda_timer_free(rm_backend_timer *t);

#ifdef REMAT_HAVE_NCCL
/* The nccl communicator (comm_nccl.cu) over host's ranks, for buffers of
 * the backend on device whose stream is compute (the device_comm op). */
int rm_comm_nccl_create(struct rm_comm **out, struct rm_comm *host, int device, cudaStream_t compute, rm_err *e);
#endif

#endif
