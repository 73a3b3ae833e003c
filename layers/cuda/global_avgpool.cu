/* Global average pooling on the GPU: one block per plane sums it in double
 * with a fixed tree (deterministic); backward spreads dy / (H*W). */
#include "cuda_common.cuh"

static __global__ void global_avgpool_forward_kernel(float *y, const float *x, size_t plane)
{
    const float *xp = x + (size_t)blockIdx.x * plane;
    double s = 0.0;
    for (size_t i = threadIdx.x; i < plane; i += RM_THREADS) s += xp[i];
    s = rm_block_sum(s);
    if (threadIdx.x == 0) y[blockIdx.x] = (float)(s / (double)plane);
}

static __global__ void global_avgpool_backward_kernel(float *dx, const float *dy, size_t planes, size_t plane)
{
    RM_CUDA_FOR(i, planes * plane) dx[i] = (float)((double)dy[i / plane] / (double)plane);
}

extern "C" int rm_global_avgpool_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    rm_shape s = call->in[0]->shape;
    size_t planes = (size_t)s.n * s.c, plane = (size_t)s.h * s.w;
    if (planes > 0x7fffffffu) return rm_errorf(e, RM_ERR_INVALID, "global_avgpool: %zu planes is too many", planes);
    global_avgpool_forward_kernel<<<(unsigned)planes, RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, call->in[0]->data, plane);
    RM_CUDA_LAUNCHED(e, "global_avgpool_forward_kernel");
    return RM_OK;
}

extern "C" int rm_global_avgpool_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    rm_shape s = call->din[0]->shape;
    size_t planes = (size_t)s.n * s.c, plane = (size_t)s.h * s.w;
    global_avgpool_backward_kernel<<<rm_cuda_blocks(planes * plane), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->din[0]->data, call->dout->data, planes, plane);
    RM_CUDA_LAUNCHED(e, "global_avgpool_backward_kernel");
    return RM_OK;
}
