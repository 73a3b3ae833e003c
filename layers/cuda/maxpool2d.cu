/* Max pooling on the GPU. The argmax rule is the CPU reference's (first of
 * equal values, a NaN wins). Backward recomputes argmaxes from x and gathers:
 * one thread per input element sums dy over the windows that cover it and
 * chose it, in scan order, so no atomics are needed. */
#include "pool_window.cuh"

/* Index (iy * w + ix) of the maximum of output (oy, ox)'s window in one plane. */
__device__ inline size_t maxpool_argmax(const float *plane, const pool_geom &g, int oy, int ox)
{
    int y0 = oy * g.s - g.p, x0 = ox * g.s - g.p;
    int y1 = y0 + g.k < g.h ? y0 + g.k : g.h, x1 = x0 + g.k < g.w ? x0 + g.k : g.w;
    if (y0 < 0) y0 = 0;
    if (x0 < 0) x0 = 0;
    size_t best = (size_t)y0 * g.w + x0;
    for (int iy = y0; iy < y1; iy++)
        for (int ix = x0; ix < x1; ix++) {
            size_t i = (size_t)iy * g.w + ix;
            float v = plane[i], b = plane[best];
            if (v > b || (isnan(v) && !isnan(b))) best = i;
        }
    return best;
}

static __global__ void maxpool2d_forward_kernel(float *y, const float *x, size_t planes, pool_geom g)
{
    size_t out_plane = (size_t)g.ho * g.wo;
    RM_CUDA_FOR(i, planes * out_plane)
    {
        const float *xp = x + (i / out_plane) * (size_t)g.h * g.w;
        y[i] = xp[maxpool_argmax(xp, g, (int)(i % out_plane / g.wo), (int)(i % out_plane % g.wo))];
    }
}

static __global__ void maxpool2d_backward_kernel(float *dx, const float *dy, const float *x, size_t planes, pool_geom g)
{
    size_t in_plane = (size_t)g.h * g.w;
    RM_CUDA_FOR(i, planes * in_plane)
    {
        size_t pl = i / in_plane, me = i % in_plane;
        const float *xp = x + pl * in_plane, *dyp = dy + pl * (size_t)g.ho * g.wo;
        int iy = (int)(me / g.w), ix = (int)(me % g.w), oy0, oy1, ox0, ox1;
        pool_covering(&oy0, &oy1, iy, g.k, g.s, g.p, g.ho);
        pool_covering(&ox0, &ox1, ix, g.k, g.s, g.p, g.wo);
        double acc = 0.0;
        for (int oy = oy0; oy <= oy1; oy++)
            for (int ox = ox0; ox <= ox1; ox++)
                if (maxpool_argmax(xp, g, oy, ox) == me) acc += dyp[(size_t)oy * g.wo + ox];
        dx[i] = (float)acc;
    }
}

extern "C" int rm_maxpool2d_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    rm_shape s = call->in[0]->shape;
    pool_geom g = pool_geom_of(call->cfg, s, call->out->shape);
    maxpool2d_forward_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->out)), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, call->in[0]->data, (size_t)s.n * s.c, g);
    RM_CUDA_LAUNCHED(e, "maxpool2d_forward_kernel");
    return RM_OK;
}

extern "C" int rm_maxpool2d_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    rm_tensor *dx = call->din[0];
    if (!dx || !dx->data) return RM_OK;
    rm_shape s = call->in[0]->shape;
    pool_geom g = pool_geom_of(call->cfg, s, call->dout->shape);
    maxpool2d_backward_kernel<<<rm_cuda_blocks(rm_tensor_numel(dx)), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        dx->data, call->dout->data, call->in[0]->data, (size_t)s.n * s.c, g);
    RM_CUDA_LAUNCHED(e, "maxpool2d_backward_kernel");
    return RM_OK;
}
