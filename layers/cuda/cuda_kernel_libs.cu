/* The layers' shared cuBLAS and cuDNN helpers (see cuda_kernel_libs.cuh). */
#include <limits.h>
#include <string.h>

#include "cuda_kernel_libs.cuh"

int rm_sgemm(const rm_backend *be, cublasOperation_t ta, cublasOperation_t tb, size_t m, size_t n, size_t k,
             const float *a, size_t lda, long long sa, const float *b, size_t ldb, long long sb, float beta, float *c,
             size_t ldc, long long sc, size_t batch, const char *what, rm_err *e)
{
    if (m > INT_MAX || n > INT_MAX || k > INT_MAX || lda > INT_MAX || ldb > INT_MAX || ldc > INT_MAX || batch > INT_MAX)
        return rm_errorf(e, RM_ERR_INVALID, "%s: matrix product %zu x %zu x %zu (batch %zu) is too large for cuBLAS",
                         what, m, n, k, batch);
    if (!m || !n || !batch) return RM_OK;
    cublasHandle_t h = rm_cuda_cublas(be);
    if (!h) return rm_errorf(e, RM_ERR_INVALID, "%s: the backend has no cuBLAS handle", what);
    const float one = 1.0f; /* alpha and beta live on the host (CUBLAS_POINTER_MODE_HOST) */
    if (batch == 1)
        RM_CUBLAS_CHECK(
            cublasSgemm(h, ta, tb, (int)m, (int)n, (int)k, &one, a, (int)lda, b, (int)ldb, &beta, c, (int)ldc), e,
            what);
    else
        RM_CUBLAS_CHECK(cublasSgemmStridedBatched(h, ta, tb, (int)m, (int)n, (int)k, &one, a, (int)lda, sa, b, (int)ldb,
                                                  sb, &beta, c, (int)ldc, sc, (int)batch),
                        e, what);
    return RM_OK;
}

static __global__ void add_bias_kernel(float *y, const float *b, int c, size_t plane, size_t total)
{
    RM_CUDA_FOR(i, total) y[i] += b[i / plane % (size_t)c];
}

int rm_cuda_add_bias(float *y, const float *b, int n, int c, size_t plane, cudaStream_t st, rm_err *e)
{
    size_t total = (size_t)n * (size_t)c * plane;
    if (!b || !total) return RM_OK;
    add_bias_kernel<<<rm_cuda_blocks(total), RM_THREADS, 0, st>>>(y, b, c, plane, total);
    RM_CUDA_LAUNCHED(e, "add_bias_kernel");
    return RM_OK;
}

static size_t gemm_ws_cap = RM_GEMM_WS_CAP_DEFAULT;

size_t rm_cuda_gemm_ws_cap(void)
{
    return gemm_ws_cap;
}

void rm_cuda_set_gemm_ws_cap(size_t bytes)
{
    gemm_ws_cap = bytes ? bytes : RM_GEMM_WS_CAP_DEFAULT;
}

rm_conv_chunk rm_conv_gemm_chunk(size_t n, size_t kdim, size_t cout, size_t pdim)
{
    rm_conv_chunk ch;
    size_t col = (kdim + cout) * sizeof(float), image = col * pdim, cap = rm_cuda_gemm_ws_cap();
    if (n * image <= cap) {
        ch.ic = n, ch.pt = pdim;
    } else if (image <= cap) {
        ch.ic = cap / image, ch.pt = pdim;
    } else {
        ch.ic = 1, ch.pt = cap / col;
        if (ch.pt < 1) ch.pt = 1;
    }
    ch.bytes = ch.ic * ch.pt * col;
    return ch;
}

#ifdef REMAT_HAVE_CUDNN

void rm_cudnn_conv_free(void *p)
{
    rm_cudnn_conv *plan = (rm_cudnn_conv *)p;
    if (!plan) return;
    if (plan->conv) cudnnDestroyConvolutionDescriptor(plan->conv);
    if (plan->w) cudnnDestroyFilterDescriptor(plan->w);
    if (plan->y) cudnnDestroyTensorDescriptor(plan->y);
    if (plan->x) cudnnDestroyTensorDescriptor(plan->x);
    free(plan);
}

/* Descriptors only: creating them allocates host memory, never device memory. */
static int conv_plan_create(rm_cudnn_conv *plan, const rm_cudnn_conv_desc *d, rm_err *e)
{
    RM_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->x), e, "cudnnCreateTensorDescriptor(x)");
    RM_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->y), e, "cudnnCreateTensorDescriptor(y)");
    RM_CUDNN_CHECK(cudnnCreateFilterDescriptor(&plan->w), e, "cudnnCreateFilterDescriptor");
    RM_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&plan->conv), e, "cudnnCreateConvolutionDescriptor");
    RM_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, d->n, d->c, d->h, d->w), e,
                   "cudnnSetTensor4dDescriptor(x)");
    RM_CUDNN_CHECK(
        cudnnSetFilter4dDescriptor(plan->w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, d->k, d->c / d->groups, d->kh, d->kw),
        e, "cudnnSetFilter4dDescriptor");
    /* Cross-correlation, as the CPU reference computes (no kernel flip). */
    RM_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(plan->conv, d->ph, d->pw, d->sh, d->sw, d->dh, d->dw,
                                                   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
                   e, "cudnnSetConvolution2dDescriptor");
    if (d->groups > 1)
        RM_CUDNN_CHECK(cudnnSetConvolutionGroupCount(plan->conv, d->groups), e, "cudnnSetConvolutionGroupCount");
    int on = 0, oc = 0, oh = 0, ow = 0;
    RM_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(plan->conv, plan->x, plan->w, &on, &oc, &oh, &ow), e,
                   "cudnnGetConvolution2dForwardOutputDim");
    RM_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, on, oc, oh, ow), e,
                   "cudnnSetTensor4dDescriptor(y)");
    return RM_OK;
}

int rm_cudnn_conv_get(rm_cudnn_conv **out, int *owned, const rm_backend *be, int tag, const rm_cudnn_conv_desc *d,
                      size_t cap, rm_err *e)
{
    *out = NULL;
    *owned = 0;
    rm_cuda_plan_key key;
    memset(&key, 0, sizeof key);
    key.kind = tag;
    int v[] = {d->n,
               d->c,
               d->h,
               d->w,
               d->k,
               d->kh,
               d->kw,
               d->sh,
               d->sw,
               d->ph,
               d->pw,
               d->dh,
               d->dw,
               d->groups,
               (int)(cap >> 20),
               (int)(cap & 0xfffff)};
    static_assert(sizeof v == sizeof key.v, "the plan key holds the whole description");
    memcpy(key.v, v, sizeof v);
    rm_cudnn_conv *plan = (rm_cudnn_conv *)rm_cuda_plan_find(be, &key);
    if (plan) {
        *out = plan;
        return RM_OK;
    }
    if (!rm_cuda_cudnn(be)) return rm_errorf(e, RM_ERR_INVALID, "cudnn convolution: the backend has no cuDNN handle");
    plan = (rm_cudnn_conv *)calloc(1, sizeof *plan);
    if (!plan) return rm_errorf(e, RM_ERR_NOMEM, "cudnn convolution: out of memory");
    plan->cap = cap;
    int rc = conv_plan_create(plan, d, e);
    if (rc) {
        rm_cudnn_conv_free(plan);
        return rc;
    }
    if (!rm_cuda_plan_put(be, &key, plan, rm_cudnn_conv_free)) *owned = 1;
    *out = plan;
    return RM_OK;
}

/* Winograd and FFT trade accuracy for speed: only with fast_math. */
static int fwd_precise(cudnnConvolutionFwdAlgo_t a)
{
    return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
           a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD && a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
static int bwd_data_precise(cudnnConvolutionBwdDataAlgo_t a)
{
    return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
           a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
static int bwd_filter_precise(cudnnConvolutionBwdFilterAlgo_t a)
{
    return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING &&
           a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}
/* Without fast_math no tensor-core (TF32) math either. */
static int math_allowed(cudnnMathType_t m, int fast)
{
    return fast || m == CUDNN_DEFAULT_MATH || m == CUDNN_FMA_MATH;
}

/* Each direction's workspace query with the descriptors in the order its
 * cuDNN call takes them. */
static cudnnStatus_t fwd_ws(cudnnHandle_t h, const rm_cudnn_conv *plan, cudnnConvolutionFwdAlgo_t a, size_t *ws)
{
    return cudnnGetConvolutionForwardWorkspaceSize(h, plan->x, plan->w, plan->conv, plan->y, a, ws);
}
static cudnnStatus_t bwd_data_ws(cudnnHandle_t h, const rm_cudnn_conv *plan, cudnnConvolutionBwdDataAlgo_t a,
                                 size_t *ws)
{
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, plan->w, plan->y, plan->conv, plan->x, a, ws);
}
static cudnnStatus_t bwd_filter_ws(cudnnHandle_t h, const rm_cudnn_conv *plan, cudnnConvolutionBwdFilterAlgo_t a,
                                   size_t *ws)
{
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(h, plan->x, plan->y, plan->conv, plan->w, a, ws);
}

/* Direction dir's choice from cuDNN's ranking perf[0..got) and, when the
 * ranking offers none, from fallback[0..nfallback), whatever the type of
 * the direction's algorithms (Algo) and ranking entries (Perf). */
template <class Perf, class Algo>
static void choose_algo(rm_cudnn_conv *plan, rm_conv_dir dir, cudnnHandle_t h, int det, int fast, const Perf *perf,
                        int got, int (*precise)(Algo),
                        cudnnStatus_t (*ws_of)(cudnnHandle_t, const rm_cudnn_conv *, Algo, size_t *),
                        const Algo *fallback, int nfallback)
{
    size_t ws = 0;
    for (int i = 0; i < got && plan->state[dir] < 0; i++) {
        const Perf *q = &perf[i];
        if (q->status != CUDNN_STATUS_SUCCESS || (det && q->determinism != CUDNN_DETERMINISTIC) ||
            (!fast && !precise(q->algo)) || !math_allowed(q->mathType, fast))
            continue;
        if (ws_of(h, plan, q->algo, &ws) != CUDNN_STATUS_SUCCESS || ws > plan->cap) continue;
        plan->state[dir] = 1, plan->algo[dir] = q->algo, plan->ws[dir] = ws;
        plan->math[dir] = fast ? q->mathType : CUDNN_FMA_MATH;
    }
    for (int i = 0; i < nfallback && plan->state[dir] < 0; i++)
        if (ws_of(h, plan, fallback[i], &ws) == CUDNN_STATUS_SUCCESS && ws <= plan->cap)
            plan->state[dir] = 1, plan->algo[dir] = fallback[i], plan->ws[dir] = ws,
            plan->math[dir] = fast ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
}

/* The first entry of cuDNN's heuristic ranking (fastest first) that the
 * settings allow and whose workspace fits; then the documented
 * deterministic fallbacks (implicit GEMM; BWD_DATA_ALGO_1, BWD_FILTER_ALGO_1)
 * when the ranking offers none. */
int rm_cudnn_conv_algo(rm_cudnn_conv *plan, const rm_backend *be, rm_conv_dir dir, int *ok, rm_err *e)
{
    *ok = plan->state[dir] == 1;
    if (plan->state[dir]) return RM_OK;
    cudnnHandle_t h = rm_cuda_cudnn(be);
    int det = rm_cuda_is_deterministic(be), fast = rm_cuda_is_fast_math(be), got = 0;
    /* The math the ranking is asked for: FMA (plain float32) unless fast. */
    RM_CUDNN_CHECK(cudnnSetConvolutionMathType(plan->conv, fast ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH), e,
                   "cudnnSetConvolutionMathType");
    plan->state[dir] = -1;
    if (dir == RM_CONV_FWD) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        RM_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(h, plan->x, plan->w, plan->conv, plan->y,
                                                              CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &got, perf),
                       e, "cudnnGetConvolutionForwardAlgorithm_v7");
        static const cudnnConvolutionFwdAlgo_t fallback[] = {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
                                                             CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM};
        choose_algo(plan, dir, h, det, fast, perf, got, fwd_precise, fwd_ws, fallback, 2);
    } else if (dir == RM_CONV_BWD_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        RM_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, plan->w, plan->y, plan->conv, plan->x,
                                                                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &got, perf),
                       e, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        static const cudnnConvolutionBwdDataAlgo_t fallback[] = {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1};
        choose_algo(plan, dir, h, det, fast, perf, got, bwd_data_precise, bwd_data_ws, fallback, 1);
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
        RM_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, plan->x, plan->y, plan->conv, plan->w,
                                                                     CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &got,
                                                                     perf),
                       e, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
        static const cudnnConvolutionBwdFilterAlgo_t fallback[] = {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1};
        choose_algo(plan, dir, h, det, fast, perf, got, bwd_filter_precise, bwd_filter_ws, fallback, 1);
    }
    *ok = plan->state[dir] == 1;
    return RM_OK;
}

int rm_cudnn_conv_run(rm_cudnn_conv *plan, const rm_backend *be, rm_conv_dir dir, const float *in0, const float *in1,
                      float *out, void *ws, int *rejected, rm_err *e)
{
    *rejected = 0;
    cudnnHandle_t h = rm_cuda_cudnn(be);
    const float one = 1.0f, zero = 0.0f; /* host scaling factors */
    RM_CUDNN_CHECK(cudnnSetConvolutionMathType(plan->conv, plan->math[dir]), e, "cudnnSetConvolutionMathType");
    cudnnStatus_t st;
    const char *what;
    if (dir == RM_CONV_FWD) {
        what = "cudnnConvolutionForward";
        st =
            cudnnConvolutionForward(h, &one, plan->x, in0, plan->w, in1, plan->conv,
                                    (cudnnConvolutionFwdAlgo_t)plan->algo[dir], ws, plan->ws[dir], &zero, plan->y, out);
    } else if (dir == RM_CONV_BWD_DATA) {
        what = "cudnnConvolutionBackwardData";
        st = cudnnConvolutionBackwardData(h, &one, plan->w, in0, plan->y, in1, plan->conv,
                                          (cudnnConvolutionBwdDataAlgo_t)plan->algo[dir], ws, plan->ws[dir], &zero,
                                          plan->x, out);
    } else {
        what = "cudnnConvolutionBackwardFilter";
        st = cudnnConvolutionBackwardFilter(h, &one, plan->x, in0, plan->y, in1, plan->conv,
                                            (cudnnConvolutionBwdFilterAlgo_t)plan->algo[dir], ws, plan->ws[dir], &zero,
                                            plan->w, out);
    }
    if (rm_cudnn_not_supported(st)) {
        plan->state[dir] = -1;
        *rejected = 1;
        return RM_OK;
    }
    if (st != CUDNN_STATUS_SUCCESS) {
        char detail[256] = "";
        cudnnGetLastErrorString(detail, sizeof detail);
        return rm_errorf(e, RM_ERR_DEVICE, "cudnn: %s (algorithm %d) failed: %s%s%s", what, plan->algo[dir],
                         cudnnGetErrorString(st), detail[0] ? ": " : "", detail);
    }
    return RM_OK;
}

int rm_cudnn_layer_forward(const rm_layer_call *call, rm_cudnn_conv *plan, int owned_plan, rm_conv_dir dir,
                           const float *in0, const float *in1, int n, int c, size_t plane, cudaStream_t st,
                           const char *what, int *done, rm_err *e)
{
    *done = 0;
    int ok = 0, rejected = 0, rc;
    if (!(rc = rm_cudnn_conv_algo(plan, call->be, dir, &ok, e)) && ok) {
        void *ws, *owned;
        if (!(rc = rm_cuda_workspace(&ws, &owned, call, plan->ws[dir], what, e))) {
            rc = rm_cudnn_conv_run(plan, call->be, dir, in0, in1, call->out->data, ws, &rejected, e);
            if (!rc && !rejected) rc = rm_cuda_add_bias(call->out->data, call->params->b.data, n, c, plane, st, e);
            int rc2 = rm_cuda_workspace_release(owned, call, e);
            if (!rc) rc = rc2;
            *done = !rc && !rejected;
        }
    }
    if (owned_plan) rm_cudnn_conv_free(plan);
    return rc;
}

size_t rm_cudnn_layer_workspace(rm_cudnn_conv *plan, int owned_plan, const rm_backend *be, rm_conv_dir fwd,
                                rm_conv_dir data_dir, int backward, size_t cap)
{
    int ok = 0;
    rm_err e{};
    size_t need = 0;
    rm_conv_dir dirs[2] = {backward ? data_dir : fwd, RM_CONV_BWD_FILTER};
    for (int i = 0; i < (backward ? 2 : 1); i++) {
        if (rm_cudnn_conv_algo(plan, be, dirs[i], &ok, &e)) {
            need = cap;
            break;
        }
        if (ok && plan->ws[dirs[i]] > need) need = plan->ws[dirs[i]];
    }
    if (owned_plan) rm_cudnn_conv_free(plan);
    return need;
}

#endif /* REMAT_HAVE_CUDNN */
