/* What the layers' cuBLAS and cuDNN paths share (conv2d, conv_transpose2x2,
 * linear, batchnorm2d): the engine a call runs on, checked SGEMMs in
 * row-major terms, the bias kernels, the workspace rule, and cuDNN
 * convolution plans cached per shape in the backend.
 *
 * Workspace rule. rm_layer_desc.workspace_bytes_cuda has no backend, so it
 * cannot know the engine: for the convolutions it reports one size that every
 * engine fits in, a function of the shapes alone (see rm_conv_gemm_ws and
 * RM_CUDNN_WS_FLOOR). cuDNN algorithms are chosen among those whose workspace
 * fits that same size, so the choice, and the bits, never depend on how much
 * workspace an executor happens to hold. rm_layer_workspace_bytes_device
 * (layer_cuda.h) gives the exact need of a backend's engine. */
#ifndef REMAT_CUDA_ENGINES_CUH
#define REMAT_CUDA_ENGINES_CUH

#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "cuda_common.cuh"

/* Largest im2col / column buffer the cuBLAS convolution path uses: batches
 * of images (or, for one huge image, strips of pixels) are sized to fit. */
#define RM_GEMM_WS_CAP ((size_t)64 << 20)
/* cuDNN algorithms may use at least this much workspace even where the
 * cuBLAS path would need less (small layers). */
#define RM_CUDNN_WS_FLOOR ((size_t)4 << 20)

/* The engine a layer call runs on. */
static inline rm_cuda_engine rm_call_engine(const rm_layer_call *call) { return rm_cuda_engine_of(call->be); }

/* C (m x n) = alpha op(A) op(B) + beta C in cuBLAS's column-major terms,
 * batch times with strides sa, sb, sc (elements; 0 reuses one matrix); one
 * plain SGEMM when batch is 1. Sizes above INT_MAX are RM_ERR_INVALID. */
int rm_sgemm(const rm_backend *be, cublasOperation_t ta, cublasOperation_t tb, size_t m, size_t n, size_t k,
             const float *a, size_t lda, long long sa, const float *b, size_t ldb, long long sb, float beta, float *c,
             size_t ldc, long long sc, size_t batch, const char *what, rm_err *e);

/* y[n][c][p] += b[c] for n images of c planes of `plane` elements. */
int rm_cuda_add_bias(float *y, const float *b, int n, int c, size_t plane, cudaStream_t st, rm_err *e);
/* db[c] = sum over n images and their planes of dy[n][c][:], in double, in a
 * fixed order (one block per channel, fixed-tree sum). */
int rm_cuda_bias_grad(float *db, const float *dy, int n, int c, size_t plane, cudaStream_t st, rm_err *e);

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
typedef enum rm_conv_dir { RM_CONV_FWD = 0, RM_CONV_BWD_DATA, RM_CONV_BWD_FILTER, RM_CONV_DIRS } rm_conv_dir;

/* One forward convolution's cuDNN descriptors (x: n,c,h,w; w: k,c,r,r; y)
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

/* The plan of the forward convolution x (n, c, h, w) -> y (n, k, ho, wo)
 * with an r x r filter, stride s, padding p; tag tells its users apart.
 * From the backend's cache, else created (and cached when there is room:
 * otherwise *owned is set and the caller frees it with rm_cudnn_conv_free
 * after queuing its last use). */
int rm_cudnn_conv_get(rm_cudnn_conv **plan, int *owned, const rm_backend *be, int tag, int n, int c, int h, int w,
                      int k, int r, int s, int p, size_t cap, rm_err *e);
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
#endif

#endif
