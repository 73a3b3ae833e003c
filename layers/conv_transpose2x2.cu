/* Transposed 2x2, stride-2 convolution on the GPU. Every output pixel comes
 * from exactly one input pixel, so forward and the data gradient are one
 * thread per output element summing in double in the CPU reference's order
 * (ci, resp. q = (co, a, b)); the weight and bias gradients are one block per
 * parameter with a fixed-tree sum. Weight layout (Cin, Cout, 2, 2). */
#include "cuda_common.cuh"

typedef struct convt_geom {
    int n, cin, h, w, cout;
} convt_geom;

/* y[n][co][2i+a][2j+b] = b[co] + sum_ci w[ci][co][a][b] x[n][ci][i][j]. */
static __global__ void conv_transpose2x2_forward_kernel(float *y, const float *w, const float *bias, const float *x,
                                                        convt_geom g)
{
    size_t hw = (size_t)g.h * g.w, ow = 2 * (size_t)g.w, oplane = 4 * hw, qdim = 4 * (size_t)g.cout;
    RM_CUDA_FOR(o, (size_t)g.n * g.cout * oplane)
    {
        size_t r = o % oplane, co = o / oplane % g.cout, n = o / oplane / g.cout;
        size_t oy = r / ow, ox = r % ow, q = co * 4 + (oy % 2) * 2 + ox % 2, ij = (oy / 2) * g.w + ox / 2;
        const float *xn = x + n * g.cin * hw;
        double acc = bias ? (double)bias[co] : 0.0;
        for (int ci = 0; ci < g.cin; ci++) acc += (double)w[ci * qdim + q] * (double)xn[ci * hw + ij];
        y[o] = (float)acc;
    }
}

/* dx[n][ci][i][j] = sum_q w[ci][q] dy[n][co][2i+a][2j+b], q = (co, a, b) ascending. */
static __global__ void conv_transpose2x2_backward_data_kernel(float *dx, const float *w, const float *dy,
                                                              convt_geom g)
{
    size_t hw = (size_t)g.h * g.w, ow = 2 * (size_t)g.w, qdim = 4 * (size_t)g.cout;
    RM_CUDA_FOR(o, (size_t)g.n * g.cin * hw)
    {
        size_t ij = o % hw, ci = o / hw % g.cin, n = o / hw / g.cin, i = ij / g.w, j = ij % g.w;
        const float *dyn = dy + n * qdim * hw;
        double acc = 0.0;
        for (size_t q = 0; q < qdim; q++) {
            size_t co = q / 4, a = q / 2 % 2, b = q % 2;
            acc += (double)w[ci * qdim + q] * (double)dyn[(co * 2 * g.h + 2 * i + a) * ow + 2 * j + b];
        }
        dx[o] = (float)acc;
    }
}

/* One block per weight (ci, q): dw = sum_{n, ij} x[n][ci][ij] dy[n][q at ij]. */
static __global__ void conv_transpose2x2_backward_weight_kernel(float *dw, const float *x, const float *dy,
                                                                convt_geom g)
{
    size_t hw = (size_t)g.h * g.w, ow = 2 * (size_t)g.w, qdim = 4 * (size_t)g.cout;
    size_t ci = blockIdx.x / qdim, q = blockIdx.x % qdim, co = q / 4, a = q / 2 % 2, b = q % 2;
    double acc = 0.0;
    for (size_t m = threadIdx.x; m < (size_t)g.n * hw; m += RM_THREADS) {
        size_t n = m / hw, ij = m % hw, i = ij / g.w, j = ij % g.w;
        acc += (double)x[(n * g.cin + ci) * hw + ij] *
               (double)dy[n * qdim * hw + (co * 2 * g.h + 2 * i + a) * ow + 2 * j + b];
    }
    acc = rm_block_sum(acc);
    if (threadIdx.x == 0) dw[blockIdx.x] = (float)acc;
}

/* One block per output channel: db = sum of its 2h x 2w planes over the batch. */
static __global__ void conv_transpose2x2_backward_bias_kernel(float *db, const float *dy, convt_geom g)
{
    size_t oplane = 4 * (size_t)g.h * g.w, co = blockIdx.x;
    double acc = 0.0;
    for (size_t m = threadIdx.x; m < (size_t)g.n * oplane; m += RM_THREADS)
        acc += dy[(m / oplane * g.cout + co) * oplane + m % oplane];
    acc = rm_block_sum(acc);
    if (threadIdx.x == 0) db[co] = (float)acc;
}

static convt_geom convt_geom_of(const rm_layer_config *cfg, rm_shape x)
{
    convt_geom g = {x.n, x.c, x.h, x.w, cfg->out_channels};
    return g;
}

extern "C" int rm_conv_transpose2x2_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    convt_geom g = convt_geom_of(call->cfg, call->in[0]->shape);
    conv_transpose2x2_forward_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->out)), RM_THREADS, 0,
                                       rm_cuda_stream(call->be)>>>(call->out->data, call->params->w.data,
                                                                   call->params->b.data, call->in[0]->data, g);
    RM_CUDA_LAUNCHED(e, "conv_transpose2x2_forward_kernel");
    return RM_OK;
}

extern "C" int rm_conv_transpose2x2_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    convt_geom g = convt_geom_of(call->cfg, x->shape);
    cudaStream_t st = rm_cuda_stream(call->be);
    if (dx && dx->data) {
        conv_transpose2x2_backward_data_kernel<<<rm_cuda_blocks(rm_tensor_numel(dx)), RM_THREADS, 0, st>>>(
            dx->data, prm->w.data, dy->data, g);
        RM_CUDA_LAUNCHED(e, "conv_transpose2x2_backward_data_kernel");
    }
    if (prm->dw.data) {
        size_t nw = (size_t)g.cin * 4 * g.cout;
        if (nw > 0x7fffffffu) return rm_errorf(e, RM_ERR_INVALID, "conv_transpose backward: %zu weights", nw);
        conv_transpose2x2_backward_weight_kernel<<<(unsigned)nw, RM_THREADS, 0, st>>>(prm->dw.data, x->data,
                                                                                      dy->data, g);
        RM_CUDA_LAUNCHED(e, "conv_transpose2x2_backward_weight_kernel");
    }
    if (prm->db.data) {
        conv_transpose2x2_backward_bias_kernel<<<(unsigned)g.cout, RM_THREADS, 0, st>>>(prm->db.data, dy->data, g);
        RM_CUDA_LAUNCHED(e, "conv_transpose2x2_backward_bias_kernel");
    }
    return RM_OK;
}
