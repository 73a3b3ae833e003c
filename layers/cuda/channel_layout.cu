/* Channel shuffle and slice on the GPU (layers/channel_layout.c): one thread
 * per output element, forward and backward (slice's backward zeroes the
 * input gradient first). */
#include "cuda_common.cuh" /* first: it declares the C headers extern "C" */

#include "channel_layout.h"

/* y[n][j][i] = x[n][source(j)][i] */
static __global__ void channel_gather_kernel(float *y, const float *x, channel_map m, int n, int cy, int cx,
                                             size_t plane)
{
    RM_CUDA_FOR(k, (size_t)n * cy * plane)
    {
        size_t i = k % plane, j = k / plane % (size_t)cy, s = k / plane / (size_t)cy;
        y[k] = x[(s * cx + (size_t)channel_source(&m, (int)j)) * plane + i];
    }
}

/* dx[n][source(j)][i] = dy[n][j][i] */
static __global__ void channel_scatter_kernel(float *dx, const float *dy, channel_map m, int n, int cy, int cx,
                                              size_t plane)
{
    RM_CUDA_FOR(k, (size_t)n * cy * plane)
    {
        size_t i = k % plane, j = k / plane % (size_t)cy, s = k / plane / (size_t)cy;
        dx[(s * cx + (size_t)channel_source(&m, (int)j)) * plane + i] = dy[k];
    }
}

extern "C" int rm_channel_layout_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_shape x = call->in[0]->shape, y = call->out->shape;
    channel_map m = channel_map_of(call->cfg, x.c);
    channel_gather_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->out)), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, call->in[0]->data, m, y.n, y.c, x.c, (size_t)x.h * x.w);
    RM_CUDA_LAUNCHED(e, "channel_gather_kernel");
    return RM_OK;
}

extern "C" int rm_channel_layout_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    const rm_shape x = call->din[0]->shape, y = call->dout->shape;
    channel_map m = channel_map_of(call->cfg, x.c);
    cudaStream_t st = rm_cuda_stream(call->be);
    if (!m.shuffle)
        RM_CUDA_CHECK(cudaMemsetAsync(call->din[0]->data, 0, rm_tensor_numel(call->din[0]) * sizeof(float), st), e,
                      "cudaMemsetAsync");
    channel_scatter_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->dout)), RM_THREADS, 0, st>>>(
        call->din[0]->data, call->dout->data, m, y.n, y.c, x.c, (size_t)x.h * x.w);
    RM_CUDA_LAUNCHED(e, "channel_scatter_kernel");
    return RM_OK;
}
