/* Nearest-neighbour upsampling by two on the GPU. Forward: one thread per
 * output pixel. Backward: one thread per input pixel sums its 2x2 block in
 * double in the CPU reference's order. */
#include "cuda_common.cuh"

/* y: planes x 2h x 2w, x: planes x h x w. */
static __global__ void upsample2x_forward_kernel(float *y, const float *x, size_t planes, int h, int w)
{
    size_t ow = 2 * (size_t)w, oplane = 4 * (size_t)h * w;
    RM_CUDA_FOR(i, planes * oplane)
    {
        size_t p = i / oplane, r = i % oplane, oy = r / ow, ox = r % ow;
        y[i] = x[p * (size_t)h * w + (oy / 2) * (size_t)w + ox / 2];
    }
}

static __global__ void upsample2x_backward_kernel(float *dx, const float *dy, size_t planes, int h, int w)
{
    size_t ow = 2 * (size_t)w, plane = (size_t)h * w;
    RM_CUDA_FOR(i, planes * plane)
    {
        size_t p = i / plane, r = i % plane, y = r / (size_t)w, x = r % (size_t)w;
        const float *row0 = dy + p * 4 * plane + 2 * y * ow, *row1 = row0 + ow;
        double s = (double)row0[2 * x] + row0[2 * x + 1] + row1[2 * x] + row1[2 * x + 1];
        dx[i] = (float)s;
    }
}

extern "C" int rm_upsample2x_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    rm_shape s = call->in[0]->shape;
    size_t planes = (size_t)s.n * s.c;
    upsample2x_forward_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->out)), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, call->in[0]->data, planes, s.h, s.w);
    RM_CUDA_LAUNCHED(e, "upsample2x_forward_kernel");
    return RM_OK;
}

extern "C" int rm_upsample2x_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    rm_shape s = call->din[0]->shape;
    size_t planes = (size_t)s.n * s.c;
    upsample2x_backward_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->din[0])), RM_THREADS, 0,
                                 rm_cuda_stream(call->be)>>>(call->din[0]->data, call->dout->data, planes, s.h, s.w);
    RM_CUDA_LAUNCHED(e, "upsample2x_backward_kernel");
    return RM_OK;
}
