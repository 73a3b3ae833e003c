/* What the layers' cuBLAS and cuDNN paths share (conv2d, conv_transpose2x2,
 * linear, batchnorm2d): checked SGEMMs in row-major terms, the bias kernels,
 * the workspace rule, and cuDNN convolution plans cached per shape in the
 * backend. Which kernels a layer runs for a library is its
 * rm_<layer>_cuda_kernels function's choice (declared in layers/kernels.c as
 * rm_layer_backend_kernels.library), made once per backend and library.
 *
 * Workspace rule. The CUDA workspace bound a layer declares
 * (rm_layer_backend_kernels.workspace) has no backend, so it cannot know the
 * kernel library: for the convolutions it reports one size
 * that every library fits in, a function of the shapes alone (see
 * rm_conv_gemm_ws and RM_CUDNN_WS_FLOOR). cuDNN algorithms are chosen among
 * those whose workspace fits that same size, so the choice, and the bits,
 * never depend on how much workspace an executor happens to hold.
 * rm_layer_workspace_bytes_device (layer.h) gives the exact need of a
 * backend's library. */
#ifndef REMAT_CUDA_KERNEL_LIBS_CUH
#define REMAT_CUDA_KERNEL_LIBS_CUH

#include <stdlib.h>
#include <string.h>

#include "backend_cuda.cuh"
#include "cuda_common.cuh"

/* The default of rm_cuda_gemm_ws_cap() (layer_cuda.h): the largest im2col /
 * column buffer of the cuBLAS convolution paths. */
#define RM_GEMM_WS_CAP_DEFAULT ((size_t)64 << 20)
/* cuDNN algorithms may use at least this much workspace even where the
 * cuBLAS path would need less (small layers). */
#define RM_CUDNN_WS_FLOOR ((size_t)4 << 20)

/* C (m x n) = alpha op(A) op(B) + beta C in cuBLAS's column-major terms,
 * batch times with strides sa, sb, sc (elements; 0 reuses one matrix); one
 * plain SGEMM when batch is 1. Sizes above INT_MAX are RM_ERR_INVALID. */
int rm_sgemm(const rm_backend *be, cublasOperation_t ta, cublasOperation_t tb, size_t m, size_t n, size_t k,
             const float *a, size_t lda, long long sa, const float *b, size_t ldb, long long sb, float beta, float *c,
             size_t ldc, long long sc, size_t batch, const char *what, rm_err *e);

/* y[n][c][p] += b[c] for n images of c planes of `plane` elements. */
int rm_cuda_add_bias(float *y, const float *b, int n, int c, size_t plane, cudaStream_t st, rm_err *e);

/* Workspace of the cuBLAS convolution path for a convolution whose im2col
 * matrix has kdim rows per output pixel, cout output channels, pdim pixels
 * per image and n images: ic images at a time (or, when one image is too
 * large, strips of pt pixels of one image), each column kdim + cout floats. */
typedef struct rm_conv_chunk {
    size_t ic; /* images per chunk */
    size_t pt; /* pixels per chunk (pdim unless one image is too large) */
    size_t bytes;
} rm_conv_chunk;
rm_conv_chunk rm_conv_gemm_chunk(size_t n, size_t kdim, size_t cout, size_t pdim);

#ifdef REMAT_HAVE_CUDNN
/* cuDNN answered "not supported" (nothing was done; fall back). cuDNN 9
 * splits that answer into sub-codes (3001 NOT_SUPPORTED_SHAPE, ...) under
 * CUDNN_STATUS_CATEGORY; earlier versions have the one code. */
static inline int rm_cudnn_not_supported(cudnnStatus_t st)
{
#ifdef CUDNN_STATUS_CATEGORY
    return CUDNN_STATUS_CATEGORY((int)st) == CUDNN_STATUS_NOT_SUPPORTED;
#else
    return st == CUDNN_STATUS_NOT_SUPPORTED;
#endif
}

typedef enum rm_conv_dir { RM_CONV_FWD = 0, RM_CONV_BWD_DATA, RM_CONV_BWD_FILTER, RM_CONV_DIRS } rm_conv_dir;

/* One forward convolution's cuDNN descriptors (x: n,c,h,w; w: k,c/groups,kh,kw; y)
 * and, per direction, the algorithm chosen (lazily) and its workspace.
 * state: 0 not chosen yet, 1 chosen, -1 none allowed fits or cuDNN rejected
 * the configuration (the caller runs the hand-written kernels). */
typedef struct rm_cudnn_conv {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t conv;
    int state[RM_CONV_DIRS];
    int algo[RM_CONV_DIRS];
    cudnnMathType_t math[RM_CONV_DIRS];
    size_t ws[RM_CONV_DIRS];
    size_t cap; /* the workspace the algorithms had to fit */
} rm_cudnn_conv;

/* A forward convolution x (n, c, h, w) -> y (n, k, ho, wo) with a kh x kw
 * filter over c / groups channels, stride, padding on each side and
 * dilation per axis. */
typedef struct rm_cudnn_conv_desc {
    int n, c, h, w, k;
    int kh, kw, sh, sw, ph, pw, dh, dw, groups;
} rm_cudnn_conv_desc;

/* The plan of d; tag tells its users apart. From the backend's cache, else
 * created (and cached when there is room: otherwise *owned is set and the
 * caller frees it with rm_cudnn_conv_free after queuing its last use). */
int rm_cudnn_conv_get(rm_cudnn_conv **plan, int *owned, const rm_backend *be, int tag, const rm_cudnn_conv_desc *d,
                      size_t cap, rm_err *e);
void rm_cudnn_conv_free(void *plan);
/* Chooses the algorithm of dir once (fastest allowed by the backend's
 * settings whose workspace fits plan->cap); *ok = 0 when there is none. */
int rm_cudnn_conv_algo(rm_cudnn_conv *plan, const rm_backend *be, rm_conv_dir dir, int *ok, rm_err *e);
/* Runs one direction with beta = 0: FWD y = conv(x, w); BWD_DATA dx from
 * (w, dy); BWD_FILTER dw from (x, dy). *rejected = 1 (and nothing is
 * written, RM_OK) when cuDNN answers CUDNN_STATUS_NOT_SUPPORTED; the plan
 * then remembers it. ws holds at least plan->ws[dir] bytes. */
int rm_cudnn_conv_run(rm_cudnn_conv *plan, const rm_backend *be, rm_conv_dir dir, const float *in0, const float *in1,
                      float *out, void *ws, int *rejected, rm_err *e);

/* What the convolution layers (conv2d, conv_transpose2x2) do with their
 * plan; each frees the plan after its last use when owned_plan is set. */

/* The forward: call->out = direction dir of (in0, in1) in the workspace it
 * needs (what names it), then the bias over n images of c planes of `plane`
 * elements. *done = 0 (RM_OK) when cuDNN has no allowed algorithm or
 * rejected the shape: the caller falls back. */
int rm_cudnn_layer_forward(const rm_layer_call *call, rm_cudnn_conv *plan, int owned_plan, rm_conv_dir dir,
                           const float *in0, const float *in1, int n, int c, size_t plane, cudaStream_t st,
                           const char *what, int *done, rm_err *e);

/* The exact workspace of the forward (direction fwd) or of the backward
 * (the larger of data_dir's and RM_CONV_BWD_FILTER's), over the directions
 * with an allowed algorithm; cap when cuDNN cannot be asked. */
size_t rm_cudnn_layer_workspace(rm_cudnn_conv *plan, int owned_plan, const rm_backend *be, rm_conv_dir fwd,
                                rm_conv_dir data_dir, int backward, size_t cap);

/* A layer's hand-written gradient kernels, the fallbacks of its cuDNN path
 * (G: the layer's geometry). */
template <class G> struct rm_conv_fallbacks {
    int (*data)(const rm_layer_call *, const G &, cudaStream_t, rm_err *);
    int (*weight)(const rm_layer_call *, const G &, cudaStream_t, rm_err *);
    int (*bias)(const rm_layer_call *, const G &, cudaStream_t, rm_err *);
};

/* The backward: dx by direction data_dir of (data_in0, data_in1) and dw by
 * RM_CONV_BWD_FILTER of (filter_in0, filter_in1), in one workspace (what
 * names it), each by the hand-written kernel where cuDNN has no allowed
 * algorithm or rejects it; then the bias gradient by hand. */
template <class G>
static int rm_cudnn_layer_backward(const rm_layer_call *call, rm_cudnn_conv *plan, int owned_plan, rm_conv_dir data_dir,
                                   const float *data_in0, const float *data_in1, const float *filter_in0,
                                   const float *filter_in1, const char *what, const G &g,
                                   const rm_conv_fallbacks<G> &hw, cudaStream_t st, rm_err *e)
{
    rm_tensor *dx = call->din[0];
    float *dw = call->params->dw.data;
    int rc = RM_OK, ok_data = 0, ok_filter = 0;
    if (dx && dx->data) rc = rm_cudnn_conv_algo(plan, call->be, data_dir, &ok_data, e);
    if (!rc && dw) rc = rm_cudnn_conv_algo(plan, call->be, RM_CONV_BWD_FILTER, &ok_filter, e);
    void *ws = NULL, *owned = NULL;
    size_t need = 0;
    if (ok_data) need = plan->ws[data_dir];
    if (ok_filter && plan->ws[RM_CONV_BWD_FILTER] > need) need = plan->ws[RM_CONV_BWD_FILTER];
    if (!rc) rc = rm_cuda_workspace(&ws, &owned, call, need, what, e);
    if (!rc && dx && dx->data) {
        int rejected = 1;
        if (ok_data) rc = rm_cudnn_conv_run(plan, call->be, data_dir, data_in0, data_in1, dx->data, ws, &rejected, e);
        if (!rc && rejected) {
            rm_cuda_note_fallback(call->be);
            rc = hw.data(call, g, st, e);
        }
    }
    if (!rc && dw) {
        int rejected = 1;
        if (ok_filter)
            rc = rm_cudnn_conv_run(plan, call->be, RM_CONV_BWD_FILTER, filter_in0, filter_in1, dw, ws, &rejected, e);
        if (!rc && rejected) {
            rm_cuda_note_fallback(call->be);
            rc = hw.weight(call, g, st, e);
        }
    }
    if (!rc && call->params->db.data) rc = hw.bias(call, g, st, e);
    int rc2 = rm_cuda_workspace_release(owned, call, e);
    if (owned_plan) rm_cudnn_conv_free(plan);
    return rc ? rc : rc2;
}
#endif

#endif
