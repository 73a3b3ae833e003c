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
#include "conv_geom.h"
#include "cuda_kernel_libs.cuh"

/* y[n][co][oy][ox] = b[co] + sum over the taps (ci, ky, kx) of co's group
 * of w[co][ci][ky][kx] x[n][gi*cig + ci][oy*sh + ty][ox*sw + tx]. */
static __global__ void conv2d_forward_kernel(float *y, const float *w, const float *b, const float *x, conv_geom g)
{
    size_t total = (size_t)g.n * g.cout * g.pdim;
    RM_CUDA_FOR(i, total)
    {
        size_t pp = i % g.pdim, co = i / g.pdim % g.cout, n = i / g.pdim / g.cout;
        int y0 = (int)(pp / g.wo) * g.sh, x0 = (int)(pp % g.wo) * g.sw;
        const float *wr = w + co * g.kdim;
        const float *xg = x + ((size_t)n * g.cin + co / g.cog * g.cig) * g.h * g.w;
        double acc = b ? (double)b[co] : 0.0;
        for (int ci = 0; ci < g.cig; ci++) {
            const float *plane = xg + (size_t)ci * g.h * g.w;
            for (int ky = 0; ky < g.kh; ky++) {
                int iy = y0 + conv_tap_y(&g, ky);
                if (iy < 0 || iy >= g.h) continue;
                for (int kx = 0; kx < g.kw; kx++) {
                    int ix = x0 + conv_tap_x(&g, kx);
                    if (ix < 0 || ix >= g.w) continue;
                    acc += (double)wr[((size_t)ci * g.kh + ky) * g.kw + kx] * (double)plane[(size_t)iy * g.w + ix];
                }
            }
        }
        y[i] = (float)acc;
    }
}

/* dx[n][ci][iy][ix] = sum over the taps (ky, kx) that reach it of
 * (sum over the outputs co of ci's group of w[co][ci % cig][ky][kx] dy[n][co][oy][ox]). */
static __global__ void conv2d_backward_data_kernel(float *dx, const float *w, const float *dy, conv_geom g)
{
    size_t hw = (size_t)g.h * g.w, total = (size_t)g.n * g.cin * hw;
    RM_CUDA_FOR(i, total)
    {
        size_t r = i % hw, ci = i / hw % g.cin, n = i / hw / g.cin;
        size_t co0 = ci / g.cig * g.cog, cl = ci % g.cig;
        int iy = (int)(r / g.w), ix = (int)(r % g.w);
        const float *dyn = dy + ((size_t)n * g.cout + co0) * g.pdim;
        const float *wg = w + co0 * g.kdim;
        double acc = 0.0;
        for (int ky = 0; ky < g.kh; ky++) {
            int oy = rm_conv_tap_output(iy, ky * g.dil_h, g.ph, g.sh, g.ho);
            if (oy < 0) continue;
            for (int kx = 0; kx < g.kw; kx++) {
                int ox = rm_conv_tap_output(ix, kx * g.dil_w, g.pw, g.sw, g.wo);
                if (ox < 0) continue;
                size_t kk = (cl * g.kh + ky) * g.kw + kx, pp = (size_t)oy * g.wo + ox;
                double row = 0.0;
                for (int co = 0; co < g.cog; co++) row += (double)wg[co * g.kdim + kk] * (double)dyn[co * g.pdim + pp];
                acc += row;
            }
        }
        dx[i] = (float)acc;
    }
}

/* One block per weight (co, ci, ky, kx) of co's group: dw = sum_{n,pixel} dy x. */
static __global__ void conv2d_backward_weight_kernel(float *dw, const float *dy, const float *x, conv_geom g)
{
    size_t taps = (size_t)g.kh * g.kw, kk = blockIdx.x % g.kdim, co = blockIdx.x / g.kdim;
    size_t ci = co / g.cog * g.cig + kk / taps;
    int ty = conv_tap_y(&g, (int)(kk % taps / g.kw)), tx = conv_tap_x(&g, (int)(kk % g.kw));
    size_t m = (size_t)g.n * g.pdim;
    double acc = 0.0;
    for (size_t j = threadIdx.x; j < m; j += RM_THREADS) {
        size_t n = j / g.pdim, pp = j % g.pdim;
        int iy = (int)(pp / g.wo) * g.sh + ty, ix = (int)(pp % g.wo) * g.sw + tx;
        if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
        acc +=
            (double)dy[(n * g.cout + co) * g.pdim + pp] * (double)x[((n * g.cin + ci) * g.h + iy) * (size_t)g.w + ix];
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
    size_t nw = (size_t)g.cout * g.kdim;
    if (nw > 0x7fffffffu) return rm_errorf(e, RM_ERR_INVALID, "conv backward: %zu weights is too many", nw);
    conv2d_backward_weight_kernel<<<(unsigned)nw, RM_THREADS, 0, st>>>(call->params->dw.data, call->dout->data,
                                                                       call->in[0]->data, g);
    RM_CUDA_LAUNCHED(e, "conv2d_backward_weight_kernel");
    return RM_OK;
}

static int hw_backward_bias(const rm_layer_call *call, const conv_geom &g, cudaStream_t st, rm_err *e)
{
    rm_channel_sum_kernel<<<(unsigned)g.cout, RM_THREADS, 0, st>>>(call->params->db.data, call->dout->data, g.n, g.cout,
                                                                   g.pdim);
    RM_CUDA_LAUNCHED(e, "rm_channel_sum_kernel");
    return RM_OK;
}

/* ---- cuBLAS: im2col + SGEMM ----
 * The im2col matrix of one image has a row per tap kk = (ci, ky, kx) of
 * every input channel (krows) and a column per output pixel; a chunk holds
 * images img0 .. img0+nimg and, of each, pixels p0 .. p0+pn. Each group's
 * product reads its own kdim rows (conv_geom.h). */

static __device__ inline float conv_tap(const float *x, const conv_geom &g, size_t img, size_t kk, size_t pp)
{
    int taps = g.kh * g.kw, ci = (int)(kk / taps), ky = (int)(kk % taps) / g.kw, kx = (int)(kk % taps) % g.kw;
    int iy = (int)(pp / g.wo) * g.sh + conv_tap_y(&g, ky), ix = (int)(pp % g.wo) * g.sw + conv_tap_x(&g, kx);
    if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) return 0.0f;
    return x[((img * g.cin + ci) * g.h + iy) * (size_t)g.w + ix];
}

/* col[il][kk][q]: per image, krows x pn (the forward's A operand). */
static __global__ void conv2d_im2col_kernel(float *col, const float *x, conv_geom g, size_t img0, size_t nimg,
                                            size_t p0, size_t pn)
{
    RM_CUDA_FOR(i, nimg * g.krows * pn)
    {
        size_t q = i % pn, kk = i / pn % g.krows, il = i / pn / g.krows;
        col[i] = conv_tap(x, g, img0 + il, kk, p0 + q);
    }
}

/* colw[kk][il * pn + q]: krows x (nimg * pn), the weight gradient's columns. */
static __global__ void conv2d_im2col_wide_kernel(float *colw, const float *x, conv_geom g, size_t img0, size_t nimg,
                                                 size_t p0, size_t pn)
{
    size_t cols = nimg * pn;
    RM_CUDA_FOR(i, g.krows * cols)
    {
        size_t j = i % cols, kk = i / cols;
        colw[i] = conv_tap(x, g, img0 + j / pn, kk, p0 + j % pn);
    }
}

/* dyw[co][il * pn + q] = dy[img0 + il][co][p0 + q]. */
static __global__ void conv2d_dy_wide_kernel(float *dyw, const float *dy, conv_geom g, size_t img0, size_t nimg,
                                             size_t p0, size_t pn)
{
    size_t cols = nimg * pn;
    RM_CUDA_FOR(i, (size_t)g.cout * cols)
    {
        size_t j = i % cols, co = i / cols;
        dyw[i] = dy[((img0 + j / pn) * g.cout + co) * g.pdim + p0 + j % pn];
    }
}

/* col2im as a gather (no atomics): each input element of images img0 ..
 * img0+nimg sums, in tap order, the dcol entries of the taps that read it
 * from pixels p0 .. p0+pn; it overwrites dx, or adds to it (later strips of
 * one image). */
static __global__ void conv2d_col2im_kernel(float *dx, const float *dcol, conv_geom g, size_t img0, size_t nimg,
                                            size_t p0, size_t pn, int accumulate)
{
    size_t hw = (size_t)g.h * g.w;
    RM_CUDA_FOR(i, nimg * g.cin * hw)
    {
        size_t r = i % hw, ci = i / hw % g.cin, il = i / hw / g.cin;
        int iy = (int)(r / g.w), ix = (int)(r % g.w);
        float acc = 0.0f;
        for (int ky = 0; ky < g.kh; ky++) {
            int oy = rm_conv_tap_output(iy, ky * g.dil_h, g.ph, g.sh, g.ho);
            if (oy < 0) continue;
            for (int kx = 0; kx < g.kw; kx++) {
                int ox = rm_conv_tap_output(ix, kx * g.dil_w, g.pw, g.sw, g.wo);
                if (ox < 0) continue;
                size_t pp = (size_t)oy * g.wo + ox;
                if (pp < p0 || pp >= p0 + pn) continue;
                size_t kk = (ci * g.kh + ky) * g.kw + kx;
                acc += dcol[(il * g.krows + kk) * pn + (pp - p0)];
            }
        }
        float *d = dx + img0 * g.cin * hw + i;
        *d = accumulate ? *d + acc : acc;
    }
}

static rm_conv_chunk conv_chunk(const conv_geom &g)
{
    return rm_conv_gemm_chunk((size_t)g.n, g.krows, (size_t)g.cout, g.pdim);
}

/* One strided-batched SGEMM per group of channels (column-major, as
 * rm_sgemm): group gi's operands start gi * their step floats after the
 * first's. m, n, k are one group's. */
static int conv_sgemm(const rm_backend *be, const conv_geom &g, cublasOperation_t ta, cublasOperation_t tb, size_t m,
                      size_t n, size_t k, const float *a, size_t lda, long long sa, size_t a_step, const float *b,
                      size_t ldb, long long sb, size_t b_step, float beta, float *c, size_t ldc, long long sc,
                      size_t c_step, size_t batch, const char *what, rm_err *e)
{
    int rc = RM_OK;
    for (size_t gi = 0; !rc && gi < (size_t)g.groups; gi++)
        rc = rm_sgemm(be, ta, tb, m, n, k, a + gi * a_step, lda, sa, b + gi * b_step, ldb, sb, beta, c + gi * c_step,
                      ldc, sc, batch, what, e);
    return rc;
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
    size_t kdim = g.kdim, krows = g.krows, pdim = g.pdim, n = (size_t)g.n, cog = (size_t)g.cog;
    size_t cout = (size_t)g.cout;
    const float *x = call->in[0]->data, *w = call->params->w.data;
    float *y = call->out->data;
    if (conv_direct(&g)) { /* the image is its own im2col matrix */
        int rc = conv_sgemm(call->be, g, CUBLAS_OP_N, CUBLAS_OP_N, pdim, cog, kdim, x, pdim, (long long)(krows * pdim),
                            kdim * pdim, w, kdim, 0, cog * kdim, 0.0f, y, pdim, (long long)(cout * pdim), cog * pdim, n,
                            "conv forward sgemm", e);
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
            conv2d_im2col_kernel<<<rm_cuda_blocks(nimg * krows * pn), RM_THREADS, 0, st>>>(col, x, g, img0, nimg, p0,
                                                                                           pn);
            cudaError_t cst = cudaGetLastError();
            if (cst != cudaSuccess)
                rc = rm_errorf(e, RM_ERR_DEVICE, "cuda: conv2d_im2col_kernel failed: %s", cudaGetErrorString(cst));
            else
                /* y[img][co][p0 + q] = sum_kk w[co][kk] col[il][kk][q], kk over co's group's rows */
                rc = conv_sgemm(call->be, g, CUBLAS_OP_N, CUBLAS_OP_N, pn, cog, kdim, col, pn, (long long)(krows * pn),
                                kdim * pn, w, kdim, 0, cog * kdim, 0.0f, y + img0 * cout * pdim + p0, pdim,
                                (long long)(cout * pdim), cog * pdim, nimg, "conv forward sgemm", e);
        }
    }
    if (!rc) rc = rm_cuda_add_bias(y, call->params->b.data, g.n, g.cout, pdim, st, e);
    int rc2 = rm_cuda_workspace_release(owned, call, e);
    return rc ? rc : rc2;
}

static int gemm_backward(const rm_layer_call *call, const conv_geom &g, cudaStream_t st, rm_err *e)
{
    size_t kdim = g.kdim, krows = g.krows, pdim = g.pdim, n = (size_t)g.n, cout = (size_t)g.cout;
    size_t cog = (size_t)g.cog;
    const float *x = call->in[0]->data, *w = call->params->w.data, *dy = call->dout->data;
    rm_tensor *dx = call->din[0];
    float *dw = call->params->dw.data;
    int want_dx = dx && dx->data;
    rm_conv_chunk ch = conv_chunk(g);
    void *ws, *owned;
    int rc = rm_cuda_workspace(&ws, &owned, call, (want_dx && !conv_direct(&g)) || dw ? ch.bytes : 0,
                               "conv backward (cublas)", e);
    if (rc) return rc;
    float *buf = (float *)ws;
    if (want_dx && conv_direct(&g)) /* dx[img][ci][p] = sum_co w[co][ci] dy[img][co][p], co over ci's group */
        rc = conv_sgemm(call->be, g, CUBLAS_OP_N, CUBLAS_OP_T, pdim, kdim, cog, dy, pdim, (long long)(cout * pdim),
                        cog * pdim, w, kdim, 0, cog * kdim, 0.0f, dx->data, pdim, (long long)(krows * pdim),
                        kdim * pdim, n, "conv backward-data sgemm", e);
    else if (want_dx)
        for (size_t img0 = 0; img0 < n && !rc; img0 += ch.ic) {
            size_t nimg = n - img0 < ch.ic ? n - img0 : ch.ic;
            for (size_t p0 = 0; p0 < pdim && !rc; p0 += ch.pt) {
                size_t pn = pdim - p0 < ch.pt ? pdim - p0 : ch.pt;
                /* dcol[il][kk][q] = sum_co w[co][kk] dy[img][co][p0 + q], co over kk's group */
                rc = conv_sgemm(call->be, g, CUBLAS_OP_N, CUBLAS_OP_T, pn, kdim, cog, dy + img0 * cout * pdim + p0,
                                pdim, (long long)(cout * pdim), cog * pdim, w, kdim, 0, cog * kdim, 0.0f, buf, pn,
                                (long long)(krows * pn), kdim * pn, nimg, "conv backward-data sgemm", e);
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
                float *colw = buf, *dyw = buf + krows * cols;
                conv2d_im2col_wide_kernel<<<rm_cuda_blocks(krows * cols), RM_THREADS, 0, st>>>(colw, x, g, img0, nimg,
                                                                                               p0, pn);
                conv2d_dy_wide_kernel<<<rm_cuda_blocks(cout * cols), RM_THREADS, 0, st>>>(dyw, dy, g, img0, nimg, p0,
                                                                                          pn);
                cudaError_t cst = cudaGetLastError();
                if (cst != cudaSuccess) {
                    rc = rm_errorf(e, RM_ERR_DEVICE, "cuda: conv2d im2col (weight gradient) failed: %s",
                                   cudaGetErrorString(cst));
                    break;
                }
                /* dw[co][kk] (+)= sum_j colw[kk][j] dyw[co][j], kk over co's group's rows, chunk after chunk */
                rc = conv_sgemm(call->be, g, CUBLAS_OP_T, CUBLAS_OP_N, kdim, cog, cols, colw, cols, 0, kdim * cols, dyw,
                                cols, 0, cog * cols, first ? 0.0f : 1.0f, dw, kdim, 0, cog * kdim, 1,
                                "conv backward-filter sgemm", e);
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
    const rm_cudnn_conv_desc d = {g.n,  g.cin, g.h,  g.w,  g.cout,  g.kh,    g.kw,
                                  g.sh, g.sw,  g.ph, g.pw, g.dil_h, g.dil_w, g.groups};
    return rm_cudnn_conv_get(plan, owned, be, CONV2D_PLAN_TAG, &d, cap, e);
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
                                  g.cout, g.pdim, st, "conv forward (cudnn)", done, e);
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
    if (!backward && conv_direct(&g)) return 0;
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
