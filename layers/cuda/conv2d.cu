/* 2-D convolution on the GPU, three kernel libraries (backend_cuda.h), all deterministic:
 *  - hand-written, direct (no im2col buffer): forward and the data gradient
 *    give each output element one thread that sums in double in the CPU
 *    reference's order (taps ci, ky, kx; for dx, per tap the sum over output
 *    channels, then over taps); the weight and bias gradients give each
 *    parameter one block whose threads split the (n, pixel) sum and meet in a
 *    fixed tree. Exact, and the fallback of the other two.
 *  - cublas: im2col into the workspace and one strided-batched SGEMM per
 *    chunk of images (forward, data gradient + a col2im gather), and for the
 *    weight gradient one SGEMM per chunk over (image, pixel) columns,
 *    accumulated chunk after chunk in a fixed order.
 *  - cudnn: cuDNN's forward / backward-data / backward-filter with the
 *    algorithms rm_cudnn_conv_algo chooses (deterministic ones by default).
 * Bias and bias gradient are hand-written kernels in every kernel library. */
#include "channel_sum.cuh"
#include "conv_taps.h"
#include "cuda_kernel_libs.cuh"

typedef struct conv_geom {
    int n, cin, h, w;  /* input */
    int cout, k, s, p; /* layer */
    int ho, wo;        /* output */
} conv_geom;

static conv_geom conv_geom_of(const rm_layer_config *cfg, rm_shape x, rm_shape y)
{
    conv_geom g = {x.n, x.c, x.h, x.w, cfg->out_channels, cfg->kernel, cfg->stride, cfg->pad, y.h, y.w};
    return g;
}

/* y[n][co][oy][ox] = b[co] + sum_{ci,ky,kx} w[co][ci][ky][kx] x[n][ci][oy*s-p+ky][ox*s-p+kx]. */
static __global__ void conv2d_forward_kernel(float *y, const float *w, const float *b, const float *x, conv_geom g)
{
    size_t pdim = (size_t)g.ho * g.wo, total = (size_t)g.n * g.cout * pdim, kdim = (size_t)g.cin * g.k * g.k;
    RM_CUDA_FOR(i, total)
    {
        size_t pp = i % pdim, co = i / pdim % g.cout, n = i / pdim / g.cout;
        int y0 = (int)(pp / g.wo) * g.s - g.p, x0 = (int)(pp % g.wo) * g.s - g.p;
        const float *wr = w + co * kdim;
        double acc = b ? (double)b[co] : 0.0;
        for (int ci = 0; ci < g.cin; ci++) {
            const float *plane = x + ((size_t)n * g.cin + ci) * g.h * g.w;
            for (int ky = 0; ky < g.k; ky++) {
                int iy = y0 + ky;
                if (iy < 0 || iy >= g.h) continue;
                for (int kx = 0; kx < g.k; kx++) {
                    int ix = x0 + kx;
                    if (ix < 0 || ix >= g.w) continue;
                    acc += (double)wr[((size_t)ci * g.k + ky) * g.k + kx] * (double)plane[(size_t)iy * g.w + ix];
                }
            }
        }
        y[i] = (float)acc;
    }
}

/* dx[n][ci][iy][ix] = sum over the taps (ky, kx) that reach it of
 * (sum_co w[co][ci][ky][kx] dy[n][co][oy][ox]). */
static __global__ void conv2d_backward_data_kernel(float *dx, const float *w, const float *dy, conv_geom g)
{
    size_t hw = (size_t)g.h * g.w, pdim = (size_t)g.ho * g.wo, total = (size_t)g.n * g.cin * hw;
    size_t kdim = (size_t)g.cin * g.k * g.k;
    RM_CUDA_FOR(i, total)
    {
        size_t r = i % hw, ci = i / hw % g.cin, n = i / hw / g.cin;
        int iy = (int)(r / g.w), ix = (int)(r % g.w);
        const float *dyn = dy + (size_t)n * g.cout * pdim;
        double acc = 0.0;
        for (int ky = 0; ky < g.k; ky++) {
            int oy = rm_conv_tap_output(iy, ky, g.p, g.s, g.ho);
            if (oy < 0) continue;
            for (int kx = 0; kx < g.k; kx++) {
                int ox = rm_conv_tap_output(ix, kx, g.p, g.s, g.wo);
                if (ox < 0) continue;
                size_t kk = (ci * g.k + ky) * g.k + kx, pp = (size_t)oy * g.wo + ox;
                double row = 0.0;
                for (int co = 0; co < g.cout; co++) row += (double)w[co * kdim + kk] * (double)dyn[co * pdim + pp];
                acc += row;
            }
        }
        dx[i] = (float)acc;
    }
}

/* One block per weight (co, ci, ky, kx): dw = sum_{n,pixel} dy x. */
static __global__ void conv2d_backward_weight_kernel(float *dw, const float *dy, const float *x, conv_geom g)
{
    size_t taps = (size_t)g.k * g.k, kk = blockIdx.x % ((size_t)g.cin * taps), co = blockIdx.x / ((size_t)g.cin * taps);
    int ci = (int)(kk / taps), ky = (int)(kk % taps / g.k), kx = (int)(kk % g.k);
    size_t pdim = (size_t)g.ho * g.wo, m = (size_t)g.n * pdim;
    double acc = 0.0;
    for (size_t j = threadIdx.x; j < m; j += RM_THREADS) {
        size_t n = j / pdim, pp = j % pdim;
        int iy = (int)(pp / g.wo) * g.s - g.p + ky, ix = (int)(pp % g.wo) * g.s - g.p + kx;
        if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
        acc += (double)dy[(n * g.cout + co) * pdim + pp] * (double)x[((n * g.cin + ci) * g.h + iy) * (size_t)g.w + ix];
    }
    acc = rm_block_sum(acc);
    if (threadIdx.x == 0) dw[blockIdx.x] = (float)acc;
}

/* The hand-written path, one piece at a time so a kernel library can fall back per
 * direction. */
static int hw_forward(const rm_layer_call *call, const conv_geom &g, cudaStream_t st, rm_err *e)
{
    conv2d_forward_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->out)), RM_THREADS, 0, st>>>(
        call->out->data, call->params->w.data, call->params->b.data, call->in[0]->data, g);
    RM_CUDA_LAUNCHED(e, "conv2d_forward_kernel");
    return RM_OK;
}

static int hw_backward_data(const rm_layer_call *call, const conv_geom &g, cudaStream_t st, rm_err *e)
{
    rm_tensor *dx = call->din[0];
    conv2d_backward_data_kernel<<<rm_cuda_blocks(rm_tensor_numel(dx)), RM_THREADS, 0, st>>>(
        dx->data, call->params->w.data, call->dout->data, g);
    RM_CUDA_LAUNCHED(e, "conv2d_backward_data_kernel");
    return RM_OK;
}

static int hw_backward_weight(const rm_layer_call *call, const conv_geom &g, cudaStream_t st, rm_err *e)
{
    size_t nw = (size_t)g.cout * g.cin * g.k * g.k;
    if (nw > 0x7fffffffu) return rm_errorf(e, RM_ERR_INVALID, "conv backward: %zu weights is too many", nw);
    conv2d_backward_weight_kernel<<<(unsigned)nw, RM_THREADS, 0, st>>>(call->params->dw.data, call->dout->data,
                                                                       call->in[0]->data, g);
    RM_CUDA_LAUNCHED(e, "conv2d_backward_weight_kernel");
    return RM_OK;
}

static int hw_backward_bias(const rm_layer_call *call, const conv_geom &g, cudaStream_t st, rm_err *e)
{
    rm_channel_sum_kernel<<<(unsigned)g.cout, RM_THREADS, 0, st>>>(call->params->db.data, call->dout->data, g.n, g.cout,
                                                                   (size_t)g.ho * g.wo);
    RM_CUDA_LAUNCHED(e, "rm_channel_sum_kernel");
    return RM_OK;
}

/* ---- cuBLAS: im2col + SGEMM ----
 * The im2col matrix of one image has a row per tap kk = (ci, ky, kx) and a
 * column per output pixel; a chunk holds images img0 .. img0+nimg and, of
 * each, pixels p0 .. p0+pn. */

static __device__ inline float conv_tap(const float *x, const conv_geom &g, size_t img, size_t kk, size_t pp)
{
    int taps = g.k * g.k, ci = (int)(kk / taps), ky = (int)(kk % taps) / g.k, kx = (int)(kk % taps) % g.k;
    int iy = (int)(pp / g.wo) * g.s - g.p + ky, ix = (int)(pp % g.wo) * g.s - g.p + kx;
    if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) return 0.0f;
    return x[((img * g.cin + ci) * g.h + iy) * (size_t)g.w + ix];
}

/* col[il][kk][q]: per image, kdim x pn (the forward's A operand). */
static __global__ void conv2d_im2col_kernel(float *col, const float *x, conv_geom g, size_t img0, size_t nimg,
                                            size_t p0, size_t pn)
{
    size_t kdim = (size_t)g.cin * g.k * g.k;
    RM_CUDA_FOR(i, nimg * kdim * pn)
    {
        size_t q = i % pn, kk = i / pn % kdim, il = i / pn / kdim;
        col[i] = conv_tap(x, g, img0 + il, kk, p0 + q);
    }
}

/* colw[kk][il * pn + q]: kdim x (nimg * pn), the weight gradient's columns. */
static __global__ void conv2d_im2col_wide_kernel(float *colw, const float *x, conv_geom g, size_t img0, size_t nimg,
                                                 size_t p0, size_t pn)
{
    size_t kdim = (size_t)g.cin * g.k * g.k, cols = nimg * pn;
    RM_CUDA_FOR(i, kdim * cols)
    {
        size_t j = i % cols, kk = i / cols;
        colw[i] = conv_tap(x, g, img0 + j / pn, kk, p0 + j % pn);
    }
}

/* dyw[co][il * pn + q] = dy[img0 + il][co][p0 + q]. */
static __global__ void conv2d_dy_wide_kernel(float *dyw, const float *dy, conv_geom g, size_t img0, size_t nimg,
                                             size_t p0, size_t pn)
{
    size_t pdim = (size_t)g.ho * g.wo, cols = nimg * pn;
    RM_CUDA_FOR(i, (size_t)g.cout * cols)
    {
        size_t j = i % cols, co = i / cols;
        dyw[i] = dy[((img0 + j / pn) * g.cout + co) * pdim + p0 + j % pn];
    }
}

/* col2im as a gather (no atomics): each input element of images img0 ..
 * img0+nimg sums, in tap order, the dcol entries of the taps that read it
 * from pixels p0 .. p0+pn; it overwrites dx, or adds to it (later strips of
 * one image). */
static __global__ void conv2d_col2im_kernel(float *dx, const float *dcol, conv_geom g, size_t img0, size_t nimg,
                                            size_t p0, size_t pn, int accumulate)
{
    size_t hw = (size_t)g.h * g.w, kdim = (size_t)g.cin * g.k * g.k;
    RM_CUDA_FOR(i, nimg * g.cin * hw)
    {
        size_t r = i % hw, ci = i / hw % g.cin, il = i / hw / g.cin;
        int iy = (int)(r / g.w), ix = (int)(r % g.w);
        float acc = 0.0f;
        for (int ky = 0; ky < g.k; ky++) {
            int oy = rm_conv_tap_output(iy, ky, g.p, g.s, g.ho);
            if (oy < 0) continue;
            for (int kx = 0; kx < g.k; kx++) {
                int ox = rm_conv_tap_output(ix, kx, g.p, g.s, g.wo);
                if (ox < 0) continue;
                size_t pp = (size_t)oy * g.wo + ox;
                if (pp < p0 || pp >= p0 + pn) continue;
                size_t kk = (ci * g.k + ky) * g.k + kx;
                acc += dcol[(il * kdim + kk) * pn + (pp - p0)];
            }
        }
        float *d = dx + img0 * g.cin * hw + i;
        *d = accumulate ? *d + acc : acc;
    }
}

static int conv_direct(const conv_geom &g)
{
    return g.k == 1 && g.s == 1 && g.p == 0;
}

static size_t conv_kdim(const conv_geom &g)
{
    return (size_t)g.cin * g.k * g.k;
}

static rm_conv_chunk conv_chunk(const conv_geom &g)
{
    return rm_conv_gemm_chunk((size_t)g.n, conv_kdim(g), (size_t)g.cout, (size_t)g.ho * g.wo);
}

/* The library-independent bound (cuda_kernel_libs.cuh): the cuBLAS path's column
 * buffer, and at least RM_CUDNN_WS_FLOOR for cuDNN's algorithms. */
extern "C" size_t rm_conv2d_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                           int backward)
{
    (void)nin, (void)backward;
    size_t gemm = conv_chunk(conv_geom_of(cfg, in[0], out)).bytes;
    return gemm > RM_CUDNN_WS_FLOOR ? gemm : RM_CUDNN_WS_FLOOR;
}

static int gemm_forward(const rm_layer_call *call, const conv_geom &g, cudaStream_t st, rm_err *e)
{
    size_t kdim = conv_kdim(g), pdim = (size_t)g.ho * g.wo, n = (size_t)g.n;
    const float *x = call->in[0]->data, *w = call->params->w.data;
    float *y = call->out->data;
    if (conv_direct(g)) { /* the image is its own im2col matrix */
        int rc =
            rm_sgemm(call->be, CUBLAS_OP_N, CUBLAS_OP_N, pdim, (size_t)g.cout, kdim, x, pdim, (long long)(kdim * pdim),
                     w, kdim, 0, 0.0f, y, pdim, (long long)((size_t)g.cout * pdim), n, "conv forward sgemm", e);
        if (rc) return rc;
        return rm_cuda_add_bias(y, call->params->b.data, g.n, g.cout, pdim, st, e);
    }
    rm_conv_chunk ch = conv_chunk(g);
    void *ws, *owned;
    int rc = rm_cuda_workspace(&ws, &owned, call, ch.bytes, "conv forward (cublas)", e);
    if (rc) return rc;
    float *col = (float *)ws;
    for (size_t img0 = 0; img0 < n && !rc; img0 += ch.ic) {
        size_t nimg = n - img0 < ch.ic ? n - img0 : ch.ic;
        for (size_t p0 = 0; p0 < pdim && !rc; p0 += ch.pt) {
            size_t pn = pdim - p0 < ch.pt ? pdim - p0 : ch.pt;
            conv2d_im2col_kernel<<<rm_cuda_blocks(nimg * kdim * pn), RM_THREADS, 0, st>>>(col, x, g, img0, nimg, p0,
                                                                                          pn);
            cudaError_t cst = cudaGetLastError();
            if (cst != cudaSuccess)
                rc = rm_errorf(e, RM_ERR_DEVICE, "cuda: conv2d_im2col_kernel failed: %s", cudaGetErrorString(cst));
            else
                /* y[img][co][p0 + q] = sum_kk w[co][kk] col[il][kk][q] */
                rc = rm_sgemm(call->be, CUBLAS_OP_N, CUBLAS_OP_N, pn, (size_t)g.cout, kdim, col, pn,
                              (long long)(kdim * pn), w, kdim, 0, 0.0f, y + img0 * g.cout * pdim + p0, pdim,
                              (long long)((size_t)g.cout * pdim), nimg, "conv forward sgemm", e);
        }
    }
    if (!rc) rc = rm_cuda_add_bias(y, call->params->b.data, g.n, g.cout, pdim, st, e);
    int rc2 = rm_cuda_workspace_release(owned, call, e);
    return rc ? rc : rc2;
}

static int gemm_backward(const rm_layer_call *call, const conv_geom &g, cudaStream_t st, rm_err *e)
{
    size_t kdim = conv_kdim(g), pdim = (size_t)g.ho * g.wo, n = (size_t)g.n, cout = (size_t)g.cout;
    const float *x = call->in[0]->data, *w = call->params->w.data, *dy = call->dout->data;
    rm_tensor *dx = call->din[0];
    float *dw = call->params->dw.data;
    int want_dx = dx && dx->data;
    rm_conv_chunk ch = conv_chunk(g);
    void *ws, *owned;
    int rc = rm_cuda_workspace(&ws, &owned, call, (want_dx && !conv_direct(g)) || dw ? ch.bytes : 0,
                               "conv backward (cublas)", e);
    if (rc) return rc;
    float *buf = (float *)ws;
    if (want_dx && conv_direct(g)) /* dx[img][ci][p] = sum_co w[co][ci] dy[img][co][p] */
        rc = rm_sgemm(call->be, CUBLAS_OP_N, CUBLAS_OP_T, pdim, kdim, cout, dy, pdim, (long long)(cout * pdim), w, kdim,
                      0, 0.0f, dx->data, pdim, (long long)(kdim * pdim), n, "conv backward-data sgemm", e);
    else if (want_dx)
        for (size_t img0 = 0; img0 < n && !rc; img0 += ch.ic) {
            size_t nimg = n - img0 < ch.ic ? n - img0 : ch.ic;
            for (size_t p0 = 0; p0 < pdim && !rc; p0 += ch.pt) {
                size_t pn = pdim - p0 < ch.pt ? pdim - p0 : ch.pt;
                /* dcol[il][kk][q] = sum_co w[co][kk] dy[img][co][p0 + q] */
                rc = rm_sgemm(call->be, CUBLAS_OP_N, CUBLAS_OP_T, pn, kdim, cout, dy + img0 * cout * pdim + p0, pdim,
                              (long long)(cout * pdim), w, kdim, 0, 0.0f, buf, pn, (long long)(kdim * pn), nimg,
                              "conv backward-data sgemm", e);
                if (rc) break;
                conv2d_col2im_kernel<<<rm_cuda_blocks(nimg * g.cin * (size_t)g.h * g.w), RM_THREADS, 0, st>>>(
                    dx->data, buf, g, img0, nimg, p0, pn, p0 > 0);
                cudaError_t cst = cudaGetLastError();
                if (cst != cudaSuccess)
                    rc = rm_errorf(e, RM_ERR_DEVICE, "cuda: conv2d_col2im_kernel failed: %s", cudaGetErrorString(cst));
            }
        }
    if (dw) {
        int first = 1;
        for (size_t img0 = 0; img0 < n && !rc; img0 += ch.ic) {
            size_t nimg = n - img0 < ch.ic ? n - img0 : ch.ic;
            for (size_t p0 = 0; p0 < pdim && !rc; p0 += ch.pt) {
                size_t pn = pdim - p0 < ch.pt ? pdim - p0 : ch.pt, cols = nimg * pn;
                float *colw = buf, *dyw = buf + kdim * cols;
                conv2d_im2col_wide_kernel<<<rm_cuda_blocks(kdim * cols), RM_THREADS, 0, st>>>(colw, x, g, img0, nimg,
                                                                                              p0, pn);
                conv2d_dy_wide_kernel<<<rm_cuda_blocks(cout * cols), RM_THREADS, 0, st>>>(dyw, dy, g, img0, nimg, p0,
                                                                                          pn);
                cudaError_t cst = cudaGetLastError();
                if (cst != cudaSuccess) {
                    rc = rm_errorf(e, RM_ERR_DEVICE, "cuda: conv2d im2col (weight gradient) failed: %s",
                                   cudaGetErrorString(cst));
                    break;
                }
                /* dw[co][kk] (+)= sum_j colw[kk][j] dyw[co][j], chunk after chunk */
                rc = rm_sgemm(call->be, CUBLAS_OP_T, CUBLAS_OP_N, kdim, cout, cols, colw, cols, 0, dyw, cols, 0,
                              first ? 0.0f : 1.0f, dw, kdim, 0, 1, "conv backward-filter sgemm", e);
                first = 0;
            }
        }
    }
    if (!rc && call->params->db.data) rc = hw_backward_bias(call, g, st, e);
    int rc2 = rm_cuda_workspace_release(owned, call, e);
    return rc ? rc : rc2;
}

/* ---- cuDNN ---- */
#ifdef REMAT_HAVE_CUDNN
enum { CONV2D_PLAN_TAG = 0x434f4e56 }; /* "CONV" */

static int conv_plan(rm_cudnn_conv **plan, int *owned, const rm_backend *be, const rm_layer_config *cfg,
                     const conv_geom &g, rm_err *e)
{
    rm_shape xs = rm_shape_make(g.n, g.cin, g.h, g.w), ys = rm_shape_make(g.n, g.cout, g.ho, g.wo);
    size_t cap = rm_conv2d_workspace_cuda(cfg, &xs, 1, ys, 0);
    return rm_cudnn_conv_get(plan, owned, be, CONV2D_PLAN_TAG, g.n, g.cin, g.h, g.w, g.cout, g.k, g.s, g.p, cap, e);
}

/* *done = 0: cuDNN has no allowed algorithm or rejected the shape; the
 * caller falls back. */
static int cudnn_forward(const rm_layer_call *call, const conv_geom &g, cudaStream_t st, int *done, rm_err *e)
{
    *done = 0;
    rm_cudnn_conv *plan;
    int owned_plan;
    int rc = conv_plan(&plan, &owned_plan, call->be, call->cfg, g, e);
    if (rc) return rc;
    return rm_cudnn_layer_forward(call, plan, owned_plan, RM_CONV_FWD, call->in[0]->data, call->params->w.data, g.n,
                                  g.cout, (size_t)g.ho * g.wo, st, "conv forward (cudnn)", done, e);
}

/* Each of dx and dw by cuDNN where it can, else by the hand-written kernel. */
static int cudnn_backward(const rm_layer_call *call, const conv_geom &g, cudaStream_t st, rm_err *e)
{
    static const rm_conv_fallbacks<conv_geom> hw = {hw_backward_data, hw_backward_weight, hw_backward_bias};
    rm_cudnn_conv *plan;
    int owned_plan;
    int rc = conv_plan(&plan, &owned_plan, call->be, call->cfg, g, e);
    if (rc) return rc;
    /* dx from (w, dy); dw from (x, dy) */
    return rm_cudnn_layer_backward(call, plan, owned_plan, RM_CONV_BWD_DATA, call->params->w.data, call->dout->data,
                                   call->in[0]->data, call->dout->data, "conv backward (cudnn)", g, hw, st, e);
}
#endif

/* ---- the kernels of each library (rm_conv2d_cuda_kernels chooses) ---- */

static size_t hw_workspace(const rm_backend *, const rm_layer_config *, const rm_shape *, int, rm_shape, int)
{
    return 0; /* the direct kernels need no scratch */
}

static size_t gemm_workspace(const rm_backend *, const rm_layer_config *cfg, const rm_shape *in, int, rm_shape out,
                             int backward)
{
    conv_geom g = conv_geom_of(cfg, in[0], out);
    if (!backward && conv_direct(g)) return 0;
    return conv_chunk(g).bytes;
}

/* The hand-written kernels: every library's default, and the fallback. */
extern "C" int rm_conv2d_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    conv_geom g = conv_geom_of(call->cfg, call->in[0]->shape, call->out->shape);
    return hw_forward(call, g, rm_cuda_stream(call->be), e);
}

extern "C" int rm_conv2d_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    conv_geom g = conv_geom_of(call->cfg, call->in[0]->shape, call->dout->shape);
    cudaStream_t st = rm_cuda_stream(call->be);
    rm_tensor *dx = call->din[0];
    int rc = RM_OK;
    if (dx && dx->data) rc = hw_backward_data(call, g, st, e);
    if (!rc && call->params->dw.data) rc = hw_backward_weight(call, g, st, e);
    if (!rc && call->params->db.data) rc = hw_backward_bias(call, g, st, e);
    return rc;
}

static int gemm_forward_call(const rm_layer_call *call, rm_err *e)
{
    conv_geom g = conv_geom_of(call->cfg, call->in[0]->shape, call->out->shape);
    return gemm_forward(call, g, rm_cuda_stream(call->be), e);
}

static int gemm_backward_call(const rm_layer_call *call, rm_err *e)
{
    conv_geom g = conv_geom_of(call->cfg, call->in[0]->shape, call->dout->shape);
    return gemm_backward(call, g, rm_cuda_stream(call->be), e);
}

#ifdef REMAT_HAVE_CUDNN
static size_t cudnn_workspace(const rm_backend *be, const rm_layer_config *cfg, const rm_shape *in, int nin,
                              rm_shape out, int backward)
{
    conv_geom g = conv_geom_of(cfg, in[0], out);
    rm_cudnn_conv *plan;
    int owned_plan;
    rm_err e{};
    size_t cap = rm_conv2d_workspace_cuda(cfg, in, nin, out, 0);
    /* cannot ask cuDNN: the bound is always enough */
    if (conv_plan(&plan, &owned_plan, be, cfg, g, &e)) return cap;
    return rm_cudnn_layer_workspace(plan, owned_plan, be, RM_CONV_FWD, RM_CONV_BWD_DATA, backward, cap);
}

static int cudnn_forward_call(const rm_layer_call *call, rm_err *e)
{
    conv_geom g = conv_geom_of(call->cfg, call->in[0]->shape, call->out->shape);
    cudaStream_t st = rm_cuda_stream(call->be);
    int done = 0, rc = cudnn_forward(call, g, st, &done, e);
    if (rc || done) return rc;
    rm_cuda_note_fallback(call->be);
    return hw_forward(call, g, st, e);
}

static int cudnn_backward_call(const rm_layer_call *call, rm_err *e)
{
    conv_geom g = conv_geom_of(call->cfg, call->in[0]->shape, call->dout->shape);
    return cudnn_backward(call, g, rm_cuda_stream(call->be), e);
}
#endif

extern "C" rm_layer_kernels rm_conv2d_cuda_kernels(int lib)
{
    rm_layer_kernels k = {rm_conv2d_forward_cuda, rm_conv2d_backward_cuda, hw_workspace};
    if (lib == RM_CUDA_KERNELS_CUBLAS) k = {gemm_forward_call, gemm_backward_call, gemm_workspace};
#ifdef REMAT_HAVE_CUDNN
    if (lib == RM_CUDA_KERNELS_CUDNN) k = {cudnn_forward_call, cudnn_backward_call, cudnn_workspace};
#endif
    return k;
}
