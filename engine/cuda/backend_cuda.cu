/* The CUDA backend: device memory, one stream, and the kernel libraries the
 * layer kernels run on: a cuBLAS handle and (when built with cuDNN) a cuDNN
 * handle, both created once and bound to the stream, the library choice and
 * its numerics settings, the kernel table (each layer's kernels for the
 * library, resolved once), and a cache of per-shape plans. Every CUDA,
 * cuBLAS and cuDNN call is checked. The layers' kernels for it live in
 * layers/cuda/<name>.cu (each layer declares them in layers/kernels.c); the
 * backend's own in backend_cuda_kernels.cu. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.cuh"
#include "cublas_lazy.h"

extern "C" {
#include "comm.h"
#include "launcher.h"
#include "layer.h"
#include "log.h"
}

/* Plans one backend caches (distinct layer shapes of a model: ResNet-152 has
 * a few dozen); beyond this a plan is built per call. */
#define PLAN_CACHE_SIZE 512

typedef struct plan_entry {
    rm_cuda_plan_key key;
    void *plan;
    void (*destroy)(void *);
} plan_entry;

typedef struct cuda_ctx {
    int device;
    cudaStream_t stream;
    cublasHandle_t cublas;
    /* cuBLAS's workspace, ours so that cuBLAS never allocates inside a step
     * (and stays reproducible: a fixed workspace on one stream). */
    void *cublas_ws;
    size_t cublas_ws_bytes;
#ifdef REMAT_HAVE_CUDNN
    cudnnHandle_t cudnn;
#endif
    rm_backend *self; /* the backend this is the context of: layer kernels take it */
    rm_cuda_kernel_lib lib;
    int lib_asked; /* 1: lib was asked for (an option or the environment), not the default */
    /* Each layer kind's kernels for lib, resolved at its first call after
     * the library is set (the one place the choice is made), then reused. */
    rm_layer_kernels kernels[RM_LAYER_KIND_COUNT];
    unsigned char resolved[RM_LAYER_KIND_COUNT];
    int deterministic, fast_math;
    unsigned long long fallbacks;
    plan_entry *plans;
    int nplans;
} cuda_ctx;

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
    RM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, c->stream), e, "upload");
    return RM_OK;
}

static int cuda_download(void *ctx, void *dst, const void *src, size_t bytes, rm_err *e)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    RM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, c->stream), e, "download");
    RM_CUDA_CHECK(cudaStreamSynchronize(c->stream), e, "download sync");
    return RM_OK;
}

static int cuda_copy(void *ctx, void *dst, const void *src, size_t bytes, rm_err *e)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    RM_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, c->stream), e, "copy");
    return RM_OK;
}

static int cuda_zero(void *ctx, void *dst, size_t bytes, rm_err *e)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    RM_CUDA_CHECK(cudaMemsetAsync(dst, 0, bytes, c->stream), e, "memset");
    return RM_OK;
}

static int cuda_sync(void *ctx, rm_err *e)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    RM_CUDA_CHECK(cudaStreamSynchronize(c->stream), e, "stream sync");
    return RM_OK;
}

static void plans_drop(cuda_ctx *c)
{
    for (int i = 0; i < c->nplans; i++)
        if (c->plans[i].destroy) c->plans[i].destroy(c->plans[i].plan);
    c->nplans = 0;
}

/* Everything create made, in reverse; safe on a partly built context. */
static void cuda_destroy(void *ctx)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    if (!c) return;
    /* Queued work may still use the workspace and the plans' descriptors. */
    if (c->stream) cudaStreamSynchronize(c->stream);
    if (c->plans) plans_drop(c);
    free(c->plans);
#ifdef REMAT_HAVE_CUDNN
    if (c->cudnn) cudnnDestroy(c->cudnn);
#endif
    if (c->cublas) cublasDestroy(c->cublas);
    if (c->cublas_ws) cudaFree(c->cublas_ws);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

extern "C" void *rm_backend_cuda_stream(const rm_backend *be)
{
    if (!be || be->kind != RM_BACKEND_CUDA) return NULL;
    return (void *)((const cuda_ctx *)be->ctx)->stream;
}

static int cuda_mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes, rm_err *e)
{
    RM_CUDA_CHECK(cudaSetDevice(((const cuda_ctx *)ctx)->device), e, "cudaSetDevice");
    RM_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes), e, "cudaMemGetInfo");
    return RM_OK;
}

/* ---- layers: the kernel table ---- */

/* Layer d's kernels for the backend's library: resolved at the first call
 * after the library was set (what the layer declares for the library, or
 * its hand-written kernels when it has no others), then taken from the
 * table. */
static const rm_layer_kernels *kernels_of(cuda_ctx *c, const rm_layer_desc *d)
{
    rm_layer_kernels *k = &c->kernels[d->kind];
    if (!c->resolved[d->kind]) {
        const rm_layer_backend_kernels *b = rm_layer_backend_of(d, RM_BACKEND_CUDA);
        if (b->library) {
            *k = b->library((int)c->lib);
        } else {
            k->forward = b->forward;
            k->backward = b->backward;
            k->workspace = NULL;
        }
        c->resolved[d->kind] = 1;
    }
    return k;
}

static int cuda_layer_forward(void *ctx, const rm_layer_desc *d, const rm_layer_call *call, rm_err *e)
{
    const rm_layer_kernels *k = kernels_of((cuda_ctx *)ctx, d);
    if (!k->forward) return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: no forward kernel for backend cuda", d->name);
    return k->forward(call, e);
}

static int cuda_layer_backward(void *ctx, const rm_layer_desc *d, const rm_layer_call *call, rm_err *e)
{
    const rm_layer_kernels *k = kernels_of((cuda_ctx *)ctx, d);
    if (!k->backward) return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: no backward kernel for backend cuda", d->name);
    return k->backward(call, e);
}

/* The exact need of the library's kernels; the bound every library fits in
 * (the declaration's workspace) for layers whose kernels need the same
 * everywhere. */
static size_t cuda_layer_workspace(void *ctx, const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in,
                                   int nin, rm_shape out, int backward)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    const rm_layer_kernels *k = kernels_of(c, d);
    if (k->workspace) return k->workspace(c->self, cfg, in, nin, out, backward);
    const rm_layer_backend_kernels *b = rm_layer_backend_of(d, RM_BACKEND_CUDA);
    return b->workspace ? b->workspace(cfg, in, nin, out, backward) : 0;
}

/* ---- the executor's and the optimizer's kernels, on the stream ---- */

static int cuda_poison(void *ctx, void *dst, size_t bytes, rm_err *e)
{
    return rm_cuda_poison(((cuda_ctx *)ctx)->stream, dst, bytes, e);
}

static int cuda_grad_sum(void *ctx, float *out, const float *const *src, int nsrc, size_t count, rm_err *e)
{
    return rm_cuda_grad_sum(((cuda_ctx *)ctx)->stream, out, src, nsrc, count, e);
}

static int cuda_scale(void *ctx, float *x, size_t count, float a, rm_err *e)
{
    return rm_cuda_scale(((cuda_ctx *)ctx)->stream, x, count, a, e);
}

static int cuda_sgd_update(void *ctx, float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
                           int nesterov, rm_err *e)
{
    return rm_cuda_sgd_update(((cuda_ctx *)ctx)->stream, w, dw, v, n, lr, wd, mu, nesterov, e);
}

static int cuda_adam_update(void *ctx, float *w, const float *dw, float *m, float *v, size_t n,
                            const rm_adam_scalars *k, rm_err *e)
{
    return rm_cuda_adam_update(((cuda_ctx *)ctx)->stream, w, dw, m, v, n, k, e);
}

static int cuda_timer_create(void *ctx, rm_backend_timer **out, int nevents, rm_err *e)
{
    return rm_cuda_timer_create(out, ((cuda_ctx *)ctx)->stream, nevents, e);
}

static int cuda_timer_record(void *ctx, rm_backend_timer *t, int k, rm_err *e)
{
    (void)ctx;
    return rm_cuda_timer_record(t, k, e);
}

static int cuda_timer_elapsed(void *ctx, rm_backend_timer *t, int a, int b, double *seconds, rm_err *e)
{
    (void)ctx;
    return rm_cuda_timer_elapsed(t, a, b, seconds, e);
}

static void cuda_timer_free(void *ctx, rm_backend_timer *t)
{
    (void)ctx;
    rm_cuda_timer_free(t);
}

/* cuBLAS's workspace: held by the backend outside any arena. */
static size_t cuda_fixed_bytes(void *ctx)
{
    return ((const cuda_ctx *)ctx)->cublas_ws_bytes;
}

static int cuda_set_kernels_op(void *ctx, int lib, rm_err *e);
static int cuda_kernels_op(void *ctx)
{
    return (int)((const cuda_ctx *)ctx)->lib;
}
static void cuda_describe(void *ctx, char *buf, size_t len);

/* NCCL where this build has it; else none, and the ranks' sums go through host memory. */
static int cuda_device_comm(void *ctx, rm_comm *host, rm_comm **out, rm_err *e)
{
    *out = NULL;
#ifdef REMAT_HAVE_NCCL
    const cuda_ctx *c = (const cuda_ctx *)ctx;
    return rm_comm_nccl_create(out, host, c->device, c->stream, e);
#else
    (void)ctx, (void)host, (void)e;
    return RM_OK;
#endif
}

static rm_backend_ops make_cuda_ops(void)
{
    rm_backend_ops o;
    memset(&o, 0, sizeof o);
    o.alloc = cuda_alloc, o.release = cuda_release, o.upload = cuda_upload, o.download = cuda_download;
    o.copy = cuda_copy, o.zero = cuda_zero, o.sync = cuda_sync, o.destroy = cuda_destroy;
    o.mem_info = cuda_mem_info, o.fixed_bytes = cuda_fixed_bytes;
    /* No host threads: set_threads and threads stay NULL (N/A). */
    o.set_kernels = cuda_set_kernels_op, o.kernels = cuda_kernels_op, o.describe = cuda_describe;
    o.layer_forward = cuda_layer_forward, o.layer_backward = cuda_layer_backward;
    o.layer_workspace = cuda_layer_workspace;
    o.poison = cuda_poison, o.grad_sum = cuda_grad_sum, o.scale = cuda_scale;
    o.sgd_update = cuda_sgd_update, o.adam_update = cuda_adam_update;
    o.timer_create = cuda_timer_create, o.timer_record = cuda_timer_record;
    o.timer_elapsed = cuda_timer_elapsed, o.timer_free = cuda_timer_free;
    o.device_comm = cuda_device_comm;
    return o;
}

/* C++ has no designated initialisers in C++17: filled once, by name. */
static const rm_backend_ops cuda_ops = make_cuda_ops();

const char *rm_cublas_status_str(cublasStatus_t st)
{
    switch (st) {
    case CUBLAS_STATUS_SUCCESS:
        return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
        return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
        return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
        return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
        return "CUBLAS_STATUS_LICENSE_ERROR";
    default:
        return "unknown cuBLAS status";
    }
}

#ifdef REMAT_HAVE_CUDNN
const char *rm_cudnn_status_str(cudnnStatus_t st)
{
    return cudnnGetErrorString(st);
}
#endif

static cuda_ctx *ctx_of(const rm_backend *be)
{
    return be && be->kind == RM_BACKEND_CUDA ? (cuda_ctx *)be->ctx : NULL;
}

cublasHandle_t rm_cuda_cublas(const rm_backend *be)
{
    cuda_ctx *c = ctx_of(be);
    return c ? c->cublas : NULL;
}

#ifdef REMAT_HAVE_CUDNN
cudnnHandle_t rm_cuda_cudnn(const rm_backend *be)
{
    cuda_ctx *c = ctx_of(be);
    return c ? c->cudnn : NULL;
}
#endif

int rm_cuda_is_deterministic(const rm_backend *be)
{
    cuda_ctx *c = ctx_of(be);
    return c ? c->deterministic : 1;
}

int rm_cuda_is_fast_math(const rm_backend *be)
{
    cuda_ctx *c = ctx_of(be);
    return c ? c->fast_math : 0;
}

void rm_cuda_note_fallback(const rm_backend *be)
{
    cuda_ctx *c = ctx_of(be);
    if (c) c->fallbacks++;
}

void *rm_cuda_plan_find(const rm_backend *be, const rm_cuda_plan_key *key)
{
    cuda_ctx *c = ctx_of(be);
    if (!c) return NULL;
    for (int i = 0; i < c->nplans; i++)
        if (memcmp(&c->plans[i].key, key, sizeof *key) == 0) return c->plans[i].plan;
    return NULL;
}

int rm_cuda_plan_put(const rm_backend *be, const rm_cuda_plan_key *key, void *plan, void (*destroy)(void *))
{
    cuda_ctx *c = ctx_of(be);
    if (!c || c->nplans >= PLAN_CACHE_SIZE) return 0;
    plan_entry *p = &c->plans[c->nplans++];
    p->key = *key;
    p->plan = plan;
    p->destroy = destroy;
    return 1;
}

/* cuBLAS numerics for the settings: atomics never (reproducible results);
 * TF32 tensor cores only with fast_math, else plain float32. */
static int cublas_apply(cuda_ctx *c, rm_err *e)
{
    RM_CUBLAS_CHECK(cublasSetAtomicsMode(c->cublas, CUBLAS_ATOMICS_NOT_ALLOWED), e, "cublasSetAtomicsMode");
    cublasMath_t mode = c->fast_math
                            ? CUBLAS_TF32_TENSOR_OP_MATH
                            : (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    RM_CUBLAS_CHECK(cublasSetMathMode(c->cublas, mode), e, "cublasSetMathMode");
    return RM_OK;
}

extern "C" int rm_backend_cuda_has_cudnn(void)
{
#ifdef REMAT_HAVE_CUDNN
    return 1;
#else
    return 0;
#endif
}

static int settings_ctx(cuda_ctx **c, const rm_backend *be, const char *what, rm_err *e)
{
    if (!(*c = ctx_of(be))) return rm_errorf(e, RM_ERR_INVALID, "%s: not a CUDA backend", what);
    return RM_OK;
}

/* A new library: the plans and the kernel table were made for the old one. */
static void lib_set(cuda_ctx *c, rm_cuda_kernel_lib lib)
{
    plans_drop(c);
    c->lib = lib;
    memset(c->resolved, 0, sizeof c->resolved);
}

/* The library's number checked, and cudnn refused in a build without it.
 * Not RM_ERR_UNSUPPORTED: that code means "no GPU" to callers that skip,
 * and this is a request that cannot be honoured. */
static int lib_check(int lib, const char *who, rm_err *e)
{
    if (lib < 0 || lib >= RM_CUDA_KERNELS_COUNT)
        return rm_errorf(e, RM_ERR_INVALID, "%s: no kernel library %d", who, lib);
    if (lib == RM_CUDA_KERNELS_CUDNN && !rm_backend_cuda_has_cudnn())
        return rm_errorf(e, RM_ERR_INVALID,
                         "%s: the cudnn kernel library, but this build has no cuDNN (cudnn.h / libcudnn were not "
                         "found when it was configured); use handwritten or cublas",
                         who);
    return RM_OK;
}

static int cuda_set_kernels_op(void *ctx, int lib, rm_err *e)
{
    cuda_ctx *c = (cuda_ctx *)ctx;
    if (lib < 0 || lib >= RM_CUDA_KERNELS_COUNT)
        return rm_errorf(e, RM_ERR_INVALID, "set kernel library: no library %d", lib);
#ifndef REMAT_HAVE_CUDNN
    if (lib == RM_CUDA_KERNELS_CUDNN)
        return rm_errorf(e, RM_ERR_UNSUPPORTED,
                         "the cudnn kernel library: this build has no cuDNN (cudnn.h / libcudnn were not found when "
                         "it was configured); use handwritten or cublas");
#endif
    RM_CUDA_CHECK(cudaStreamSynchronize(c->stream), e, "stream sync before a kernel library change");
    lib_set(c, (rm_cuda_kernel_lib)lib);
    return RM_OK;
}

static void cuda_describe(void *ctx, char *buf, size_t len)
{
    const cuda_ctx *c = (const cuda_ctx *)ctx;
    snprintf(buf, len, "GPU %d, %s kernels", c->device, rm_cuda_kernel_lib_name(c->lib));
}

extern "C" int rm_backend_cuda_set_kernels(rm_backend *be, rm_cuda_kernel_lib lib, rm_err *e)
{
    cuda_ctx *c;
    int rc = settings_ctx(&c, be, "set kernel library", e);
    return rc ? rc : cuda_set_kernels_op(c, (int)lib, e);
}

extern "C" rm_cuda_kernel_lib rm_backend_cuda_kernels(const rm_backend *be)
{
    cuda_ctx *c = ctx_of(be);
    return c ? c->lib : RM_CUDA_KERNELS_HANDWRITTEN;
}

extern "C" int rm_backend_cuda_set_deterministic(rm_backend *be, int on, rm_err *e)
{
    cuda_ctx *c;
    int rc = settings_ctx(&c, be, "set deterministic", e);
    if (rc) return rc;
    RM_CUDA_CHECK(cudaStreamSynchronize(c->stream), e, "stream sync before a settings change");
    plans_drop(c);
    c->deterministic = on != 0;
    return cublas_apply(c, e);
}

extern "C" int rm_backend_cuda_deterministic(const rm_backend *be)
{
    return rm_cuda_is_deterministic(be);
}

extern "C" int rm_backend_cuda_set_fast_math(rm_backend *be, int on, rm_err *e)
{
    cuda_ctx *c;
    int rc = settings_ctx(&c, be, "set fast math", e);
    if (rc) return rc;
    RM_CUDA_CHECK(cudaStreamSynchronize(c->stream), e, "stream sync before a settings change");
    plans_drop(c);
    c->fast_math = on != 0;
    return cublas_apply(c, e);
}

extern "C" int rm_backend_cuda_fast_math(const rm_backend *be)
{
    return rm_cuda_is_fast_math(be);
}

extern "C" unsigned long long rm_backend_cuda_fallbacks(const rm_backend *be)
{
    cuda_ctx *c = ctx_of(be);
    return c ? c->fallbacks : 0;
}

/* A 0/1 environment switch; *out unchanged when the variable is unset. */
static int env_flag(int *out, const char *name, rm_err *e)
{
    const char *v = getenv(name);
    if (!v || !*v) return RM_OK;
    if (strcmp(v, "0") && strcmp(v, "1"))
        return rm_errorf(e, RM_ERR_INVALID, "cuda backend: %s=%s: expected 0 or 1", name, v);
    *out = v[0] == '1';
    return RM_OK;
}

/* The kernel library the environment asks for: REMAT_KERNELS, or its older
 * name REMAT_ENGINE; NULL when neither is set. *var names the one used. */
static const char *env_kernels(const char **var)
{
    static const char *const vars[] = {"REMAT_KERNELS", "REMAT_ENGINE"};
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) {
            *var = vars[i];
            return v;
        }
    }
    return NULL;
}

/* Kernel library and numerics from the options, else the environment, else
 * the defaults: --kernels wins over REMAT_KERNELS, which is then not read. */
static int settings_from(cuda_ctx *c, const rm_backend_options *o, rm_err *e)
{
    c->lib = rm_backend_cuda_has_cudnn() ? RM_CUDA_KERNELS_CUDNN : RM_CUDA_KERNELS_CUBLAS;
    c->deterministic = 1;
    c->fast_math = 0;
    const char *var = NULL, *v = env_kernels(&var);
    if (o && o->threads) return rm_errorf(e, RM_ERR_INVALID, "cuda backend: no host thread count to set");
    if (o && o->set_kernels) {
        int rc = lib_check(o->kernels, "cuda backend: --kernels", e);
        if (rc) return rc;
        c->lib = (rm_cuda_kernel_lib)o->kernels;
        c->lib_asked = 1;
    } else if (v) {
        rm_cuda_kernel_lib lib;
        if (rm_cuda_kernel_lib_parse(&lib, v, e)) return rm_err_context(e, "cuda backend: %s: ", var);
        char who[64];
        snprintf(who, sizeof who, "cuda backend: %s=%s", var, v);
        int rc = lib_check((int)lib, who, e);
        if (rc) return rc;
        c->lib = lib;
        c->lib_asked = 1;
    }
    int rc = env_flag(&c->deterministic, "REMAT_DETERMINISTIC", e);
    if (!rc) rc = env_flag(&c->fast_math, "REMAT_FAST_MATH", e);
    return rc;
}

/* Everything after the stream: handles bound to it, cuBLAS's own workspace. */
static int libraries_create(cuda_ctx *c, rm_err *e)
{
    int major = 0;
    RM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, c->device), e,
                  "cudaDeviceGetAttribute(compute capability)");
#ifdef REMAT_CUBLAS_LAZY
    int lrc = rm_cublas_load(e);
    if (lrc) return lrc;
#endif
    RM_CUBLAS_CHECK(cublasCreate(&c->cublas), e, "cublasCreate");
    /* cublasSetStream resets the workspace to cuBLAS's pool: stream first.
     * 32 MiB is what cuBLAS itself reserves on Hopper, 4 MiB elsewhere. */
    RM_CUBLAS_CHECK(cublasSetStream(c->cublas, c->stream), e, "cublasSetStream");
    c->cublas_ws_bytes = (size_t)(major >= 9 ? 32 : 4) << 20;
    cudaError_t st = cudaMalloc(&c->cublas_ws, c->cublas_ws_bytes);
    if (st != cudaSuccess) {
        c->cublas_ws = NULL;
        return rm_errorf(e, RM_ERR_NOMEM, "cuda: cannot allocate the %zu-byte cuBLAS workspace: %s", c->cublas_ws_bytes,
                         cudaGetErrorString(st));
    }
    RM_CUBLAS_CHECK(cublasSetWorkspace(c->cublas, c->cublas_ws, c->cublas_ws_bytes), e, "cublasSetWorkspace");
    RM_CUBLAS_CHECK(cublasSetPointerMode(c->cublas, CUBLAS_POINTER_MODE_HOST), e, "cublasSetPointerMode");
    int rc = cublas_apply(c, e);
    if (rc) return rc;
#ifdef REMAT_HAVE_CUDNN
    cudnnStatus_t dst = cudnnCreate(&c->cudnn);
    if (dst != CUDNN_STATUS_SUCCESS) {
        c->cudnn = NULL;
        char detail[256] = "";
        cudnnGetLastErrorString(detail, sizeof detail);
        if (c->lib == RM_CUDA_KERNELS_CUDNN && c->lib_asked)
            return rm_errorf(e, RM_ERR_DEVICE, "cudnn: cudnnCreate failed: %s (%s)", cudnnGetErrorString(dst), detail);
        /* cuDNN was only the default: say so and run without it. */
        RM_LOG_WARN("cudnn: cudnnCreate failed: %s (%s); the cuda backend uses the cublas kernels",
                    cudnnGetErrorString(dst), detail);
        if (c->lib == RM_CUDA_KERNELS_CUDNN) c->lib = RM_CUDA_KERNELS_CUBLAS;
        return RM_OK;
    }
    RM_CUDNN_CHECK(cudnnSetStream(c->cudnn, c->stream), e, "cudnnSetStream");
#endif
    return RM_OK;
}

extern "C" int rm_backend_cuda_create_with(rm_backend **out, int device, const rm_backend_options *o, rm_err *e)
{
    *out = NULL;
    int count = 0;
    cudaError_t st = cudaGetDeviceCount(&count);
    if (st != cudaSuccess || count == 0)
        return rm_errorf(e, RM_ERR_UNSUPPORTED, "cuda: no usable GPU (%s)",
                         st == cudaSuccess ? "no device" : cudaGetErrorString(st));
    /* -1: this process's GPU, by its rank on this machine (one GPU a rank under mpirun). */
    if (device == -1) device = rm_launched_local_rank() % count;
    if (device < 0 || device >= count)
        return rm_errorf(e, RM_ERR_INVALID, "cuda: device %d does not exist (%d found)", device, count);
    RM_CUDA_CHECK(cudaSetDevice(device), e, "cudaSetDevice");
    cuda_ctx *c = (cuda_ctx *)calloc(1, sizeof *c);
    rm_backend *be = (rm_backend *)calloc(1, sizeof *be);
    plan_entry *plans = (plan_entry *)calloc(PLAN_CACHE_SIZE, sizeof *plans);
    if (!c || !be || !plans) {
        free(c);
        free(be);
        free(plans);
        return rm_errorf(e, RM_ERR_NOMEM, "cuda backend: out of memory");
    }
    c->device = device;
    c->plans = plans;
    int rc = settings_from(c, o, e);
    if (rc) {
        cuda_destroy(c);
        free(be);
        return rc;
    }
    st = cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking);
    if (st != cudaSuccess) {
        c->stream = NULL;
        cuda_destroy(c);
        free(be);
        return rm_errorf(e, RM_ERR_DEVICE, "cuda: cudaStreamCreate failed: %s", cudaGetErrorString(st));
    }
    if ((rc = libraries_create(c, e))) {
        cuda_destroy(c);
        free(be);
        return rc;
    }
    be->kind = RM_BACKEND_CUDA;
    be->name = "cuda";
    be->ops = &cuda_ops;
    be->ctx = c;
    be->max_grad_sum = RM_CUDA_GRAD_SUM_MAX;
    be->queued = 1;
    be->host_memory = 0;
    c->self = be;
    *out = be;
    return RM_OK;
}

extern "C" int rm_backend_cuda_create(rm_backend **out, int device, rm_err *e)
{
    return rm_backend_cuda_create_with(out, device, NULL, e);
}
