/* ReLU on the GPU: one thread per element; backward reads the output only. */
#include "cuda_common.cuh"

static __global__ void relu_forward_kernel(float *y, const float *x, size_t n)
{
    RM_CUDA_FOR(i, n) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static __global__ void relu_backward_kernel(float *dx, const float *dy, const float *y, size_t n)
{
    RM_CUDA_FOR(i, n) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

extern "C" int rm_relu_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    size_t n = rm_tensor_numel(call->out);
    relu_forward_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(call->out->data,
                                                                                        call->in[0]->data, n);
    RM_CUDA_LAUNCHED(e, "relu_forward_kernel");
    return RM_OK;
}

extern "C" int rm_relu_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    size_t n = rm_tensor_numel(call->out);
    relu_backward_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->din[0]->data, call->dout->data, call->out->data, n);
    RM_CUDA_LAUNCHED(e, "relu_backward_kernel");
    return RM_OK;
}
