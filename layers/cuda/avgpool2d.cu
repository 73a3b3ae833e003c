/* Average pooling on the GPU (count_include_pad: every window divides by
 * k*k). Forward: one thread per output. Backward gathers instead of
 * scattering: one thread per input element sums the gradients of the windows
 * that cover it, in the CPU reference's scan order, so no atomics are needed. */
#include "pool_window.cuh"

static __global__ void avgpool2d_forward_kernel(float *y, const float *x, size_t planes, pool_geom g, double inv_area)
{
    size_t out_plane = (size_t)g.ho * g.wo;
    RM_CUDA_FOR(i, planes * out_plane)
    {
        const float *xp = x + (i / out_plane) * (size_t)g.h * g.w;
        int oy = (int)(i % out_plane / g.wo), ox = (int)(i % out_plane % g.wo);
        int ys = oy * g.s - g.p, xs = ox * g.s - g.p;
        int y0 = ys < 0 ? 0 : ys, x0 = xs < 0 ? 0 : xs;
        int y1 = ys + g.k < g.h ? ys + g.k : g.h, x1 = xs + g.k < g.w ? xs + g.k : g.w;
        double sum = 0.0;
        for (int iy = y0; iy < y1; iy++)
            for (int ix = x0; ix < x1; ix++) sum += xp[(size_t)iy * g.w + ix];
        y[i] = (float)(sum * inv_area);
    }
}

static __global__ void avgpool2d_backward_kernel(float *dx, const float *dy, size_t planes, pool_geom g,
                                                 double inv_area)
{
    size_t in_plane = (size_t)g.h * g.w;
    RM_CUDA_FOR(i, planes * in_plane)
    {
        const float *dyp = dy + (i / in_plane) * (size_t)g.ho * g.wo;
        int iy = (int)(i % in_plane / g.w), ix = (int)(i % in_plane % g.w), oy0, oy1, ox0, ox1;
        pool_covering(&oy0, &oy1, iy, g.k, g.s, g.p, g.ho);
        pool_covering(&ox0, &ox1, ix, g.k, g.s, g.p, g.wo);
        double acc = 0.0;
        for (int oy = oy0; oy <= oy1; oy++)
            for (int ox = ox0; ox <= ox1; ox++) acc += (double)dyp[(size_t)oy * g.wo + ox] * inv_area;
        dx[i] = (float)acc;
    }
}

extern "C" int rm_avgpool2d_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    rm_shape s = call->in[0]->shape;
    pool_geom g = pool_geom_of(call->cfg, s, call->out->shape);
    double inv_area = 1.0 / ((double)call->cfg->kernel.h * call->cfg->kernel.h);
    avgpool2d_forward_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->out)), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, call->in[0]->data, (size_t)s.n * s.c, g, inv_area);
    RM_CUDA_LAUNCHED(e, "avgpool2d_forward_kernel");
    return RM_OK;
}

extern "C" int rm_avgpool2d_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    rm_tensor *dx = call->din[0];
    if (!dx || !dx->data) return RM_OK;
    rm_shape s = dx->shape;
    pool_geom g = pool_geom_of(call->cfg, s, call->dout->shape);
    double inv_area = 1.0 / ((double)call->cfg->kernel.h * call->cfg->kernel.h);
    avgpool2d_backward_kernel<<<rm_cuda_blocks(rm_tensor_numel(dx)), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        dx->data, call->dout->data, (size_t)s.n * s.c, g, inv_area);
    RM_CUDA_LAUNCHED(e, "avgpool2d_backward_kernel");
    return RM_OK;
}
