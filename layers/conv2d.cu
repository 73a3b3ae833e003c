/* 2-D convolution on the GPU, direct (no im2col buffer), deterministic:
 * forward and the data gradient give each output element one thread that
 * sums in double in the CPU reference's order (taps ci, ky, kx; for dx, per
 * tap the sum over output channels, then over taps); the weight and bias
 * gradients give each parameter one block whose threads split the (n, pixel)
 * sum and meet in a fixed tree. Simple and exact first: tiling, shared-memory
 * staging and cuDNN/cuBLAS engines are issue 5's performance half. */
#include "cuda_common.cuh"

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
            int ty = iy + g.p - ky;
            if (ty < 0 || ty % g.s) continue;
            int oy = ty / g.s;
            if (oy >= g.ho) continue;
            for (int kx = 0; kx < g.k; kx++) {
                int tx = ix + g.p - kx;
                if (tx < 0 || tx % g.s) continue;
                int ox = tx / g.s;
                if (ox >= g.wo) continue;
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
        acc += (double)dy[(n * g.cout + co) * pdim + pp] *
               (double)x[((n * g.cin + ci) * g.h + iy) * (size_t)g.w + ix];
    }
    acc = rm_block_sum(acc);
    if (threadIdx.x == 0) dw[blockIdx.x] = (float)acc;
}

/* One block per output channel: db = sum_{n,pixel} dy. */
static __global__ void conv2d_backward_bias_kernel(float *db, const float *dy, int n_img, int cout, size_t pdim)
{
    size_t co = blockIdx.x, m = (size_t)n_img * pdim;
    double acc = 0.0;
    for (size_t j = threadIdx.x; j < m; j += RM_THREADS) acc += dy[(j / pdim * cout + co) * pdim + j % pdim];
    acc = rm_block_sum(acc);
    if (threadIdx.x == 0) db[co] = (float)acc;
}

extern "C" int rm_conv2d_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    conv_geom g = conv_geom_of(call->cfg, call->in[0]->shape, call->out->shape);
    conv2d_forward_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->out)), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, call->params->w.data, call->params->b.data, call->in[0]->data, g);
    RM_CUDA_LAUNCHED(e, "conv2d_forward_kernel");
    return RM_OK;
}

extern "C" int rm_conv2d_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    conv_geom g = conv_geom_of(call->cfg, x->shape, dy->shape);
    cudaStream_t st = rm_cuda_stream(call->be);
    if (dx && dx->data) {
        conv2d_backward_data_kernel<<<rm_cuda_blocks(rm_tensor_numel(dx)), RM_THREADS, 0, st>>>(dx->data, prm->w.data,
                                                                                               dy->data, g);
        RM_CUDA_LAUNCHED(e, "conv2d_backward_data_kernel");
    }
    if (prm->dw.data) {
        size_t nw = (size_t)g.cout * g.cin * g.k * g.k;
        if (nw > 0x7fffffffu) return rm_errorf(e, RM_ERR_INVALID, "conv backward: %zu weights is too many", nw);
        conv2d_backward_weight_kernel<<<(unsigned)nw, RM_THREADS, 0, st>>>(prm->dw.data, dy->data, x->data, g);
        RM_CUDA_LAUNCHED(e, "conv2d_backward_weight_kernel");
    }
    if (prm->db.data) {
        conv2d_backward_bias_kernel<<<(unsigned)g.cout, RM_THREADS, 0, st>>>(prm->db.data, dy->data, g.n, g.cout,
                                                                             (size_t)g.ho * g.wo);
        RM_CUDA_LAUNCHED(e, "conv2d_backward_bias_kernel");
    }
    return RM_OK;
}
