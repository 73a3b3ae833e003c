/* Channel scaling on the GPU (layers/scale.c): one thread per element for y
 * and dx; one thread per channel of a sample for its factor's gradient, the
 * plane summed in double in order, as the CPU reference. */
#include "cuda_common.cuh"

static __global__ void scale_forward_kernel(float *y, const float *x, const float *f, size_t n, size_t plane)
{
    RM_CUDA_FOR(i, n) y[i] = x[i] * f[i / plane];
}

static __global__ void scale_dx_kernel(float *dx, const float *dy, const float *f, size_t n, size_t plane)
{
    RM_CUDA_FOR(i, n) dx[i] = dy[i] * f[i / plane];
}

static __global__ void scale_df_kernel(float *df, const float *dy, const float *x, size_t planes, size_t plane)
{
    RM_CUDA_FOR(p, planes)
    {
        double acc = 0;
        for (size_t i = 0; i < plane; i++) acc += (double)dy[p * plane + i] * (double)x[p * plane + i];
        df[p] = (float)acc;
    }
}

extern "C" int rm_scale_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_shape s = call->out->shape;
    const size_t n = rm_tensor_numel(call->out), plane = (size_t)s.h * s.w;
    scale_forward_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, call->in[0]->data, call->in[1]->data, n, plane);
    RM_CUDA_LAUNCHED(e, "scale_forward_kernel");
    return RM_OK;
}

extern "C" int rm_scale_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_shape s = call->dout->shape;
    const size_t n = rm_tensor_numel(call->dout), plane = (size_t)s.h * s.w, planes = (size_t)s.n * s.c;
    if (call->din[0] && call->din[0]->data) {
        scale_dx_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
            call->din[0]->data, call->dout->data, call->in[1]->data, n, plane);
        RM_CUDA_LAUNCHED(e, "scale_dx_kernel");
    }
    if (call->din[1] && call->din[1]->data) {
        scale_df_kernel<<<rm_cuda_blocks(planes), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
            call->din[1]->data, call->dout->data, call->in[0]->data, planes, plane);
        RM_CUDA_LAUNCHED(e, "scale_df_kernel");
    }
    return RM_OK;
}
