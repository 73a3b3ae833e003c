/* Depthwise 2-D convolution on the GPU: hand-written, direct, deterministic,
 * and the kernels of every kernel library (no cuDNN/cuBLAS path: a
 * depthwise filter has k*k taps per output, too few for a GEMM to pay).
 *  - forward: one thread per output element, summing its k*k taps in double
 *    in the CPU reference's order (ky, kx);
 *  - data gradient: one thread per input element gathers the taps that
 *    reached it (ky, kx order, as the CPU), so no atomics and no scatter;
 *  - weight and bias gradients: one block per weight (per channel for the
 *    bias) whose threads take strided slices of the (n, pixel) sum and meet
 *    in rm_block_sum's fixed tree.
 * No workspace. */
#include "channel_sum.cuh"
#include "conv_taps.h"
#include "cuda_common.cuh"
#include "dwconv2d.h"

/* y[n][c][oy][ox] = b[c] + sum_{ky,kx} w[c][ky][kx] x[n][c][oy*s-p+ky][ox*s-p+kx]. */
static __global__ void dwconv2d_forward_kernel(float *y, const float *w, const float *b, const float *x, dw_geom g)
{
    size_t pdim = (size_t)g.ho * g.wo, total = (size_t)g.n * g.c * pdim, kk = (size_t)g.k * g.k;
    RM_CUDA_FOR(i, total)
    {
        size_t pp = i % pdim, plane = i / pdim, c = plane % g.c;
        int y0 = (int)(pp / g.wo) * g.s - g.p, x0 = (int)(pp % g.wo) * g.s - g.p;
        const float *wc = w + c * kk, *xp = x + plane * g.h * g.w;
        double acc = b ? (double)b[c] : 0.0;
        for (int ky = 0; ky < g.k; ky++) {
            int iy = y0 + ky;
            if (iy < 0 || iy >= g.h) continue;
            for (int kx = 0; kx < g.k; kx++) {
                int ix = x0 + kx;
                if (ix < 0 || ix >= g.w) continue;
                acc += (double)wc[ky * g.k + kx] * (double)xp[(size_t)iy * g.w + ix];
            }
        }
        y[i] = (float)acc;
    }
}

/* dx[n][c][iy][ix] = sum over the taps (ky, kx) that reach it of w[c][ky][kx] dy[n][c][oy][ox]. */
static __global__ void dwconv2d_backward_data_kernel(float *dx, const float *w, const float *dy, dw_geom g)
{
    size_t hw = (size_t)g.h * g.w, pdim = (size_t)g.ho * g.wo, total = (size_t)g.n * g.c * hw, kk = (size_t)g.k * g.k;
    RM_CUDA_FOR(i, total)
    {
        size_t r = i % hw, plane = i / hw, c = plane % g.c;
        int iy = (int)(r / g.w), ix = (int)(r % g.w);
        const float *wc = w + c * kk, *dyp = dy + plane * pdim;
        double acc = 0.0;
        for (int ky = 0; ky < g.k; ky++) {
            int oy = rm_conv_tap_output(iy, ky, g.p, g.s, g.ho);
            if (oy < 0) continue;
            for (int kx = 0; kx < g.k; kx++) {
                int ox = rm_conv_tap_output(ix, kx, g.p, g.s, g.wo);
                if (ox < 0) continue;
                acc += (double)wc[ky * g.k + kx] * (double)dyp[(size_t)oy * g.wo + ox];
            }
        }
        dx[i] = (float)acc;
    }
}

/* One block per weight (c, ky, kx): dw = sum_{n,pixel} dy x under that tap. */
static __global__ void dwconv2d_backward_weight_kernel(float *dw, const float *dy, const float *x, dw_geom g)
{
    size_t kk = (size_t)g.k * g.k, c = blockIdx.x / kk, tap = blockIdx.x % kk;
    int ky = (int)(tap / g.k), kx = (int)(tap % g.k);
    size_t pdim = (size_t)g.ho * g.wo, m = (size_t)g.n * pdim;
    double acc = 0.0;
    for (size_t j = threadIdx.x; j < m; j += RM_THREADS) {
        size_t n = j / pdim, pp = j % pdim, plane = n * g.c + c;
        int iy = (int)(pp / g.wo) * g.s - g.p + ky, ix = (int)(pp % g.wo) * g.s - g.p + kx;
        if (iy < 0 || iy >= g.h || ix < 0 || ix >= g.w) continue;
        acc += (double)dy[plane * pdim + pp] * (double)x[(plane * g.h + iy) * (size_t)g.w + ix];
    }
    acc = rm_block_sum(acc);
    if (threadIdx.x == 0) dw[blockIdx.x] = (float)acc;
}

extern "C" int rm_dwconv2d_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    dw_geom g = dw_geom_of(call->cfg, call->in[0]->shape, call->out->shape);
    dwconv2d_forward_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->out)), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, call->params->w.data, call->params->b.data, call->in[0]->data, g);
    RM_CUDA_LAUNCHED(e, "dwconv2d_forward_kernel");
    return RM_OK;
}

extern "C" int rm_dwconv2d_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    dw_geom g = dw_geom_of(call->cfg, call->in[0]->shape, call->dout->shape);
    cudaStream_t st = rm_cuda_stream(call->be);
    const rm_layer_params *prm = call->params;
    rm_tensor *dx = call->din[0];
    if (dx && dx->data) {
        dwconv2d_backward_data_kernel<<<rm_cuda_blocks(rm_tensor_numel(dx)), RM_THREADS, 0, st>>>(dx->data, prm->w.data,
                                                                                                  call->dout->data, g);
        RM_CUDA_LAUNCHED(e, "dwconv2d_backward_data_kernel");
    }
    if (prm->dw.data) {
        size_t nw = (size_t)g.c * g.k * g.k;
        if (nw > 0x7fffffffu) return rm_errorf(e, RM_ERR_INVALID, "dwconv backward: %zu weights is too many", nw);
        dwconv2d_backward_weight_kernel<<<(unsigned)nw, RM_THREADS, 0, st>>>(prm->dw.data, call->dout->data,
                                                                             call->in[0]->data, g);
        RM_CUDA_LAUNCHED(e, "dwconv2d_backward_weight_kernel");
    }
    if (prm->db.data) {
        rm_channel_sum_kernel<<<(unsigned)g.c, RM_THREADS, 0, st>>>(prm->db.data, call->dout->data, g.n, g.c,
                                                                    (size_t)g.ho * g.wo);
        RM_CUDA_LAUNCHED(e, "rm_channel_sum_kernel");
    }
    return RM_OK;
}
