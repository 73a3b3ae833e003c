/* Flatten on the GPU: NCHW already is N x (C*H*W), so both directions are one
 * device-to-device copy (no kernel beats the copy engine at a copy). */
#include "cuda_common.cuh"

extern "C" int rm_flatten_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    RM_CUDA_CHECK(cudaMemcpyAsync(call->out->data, call->in[0]->data, rm_tensor_numel(call->out) * sizeof(float),
                                  cudaMemcpyDeviceToDevice, rm_cuda_stream(call->be)),
                  e, "flatten forward copy");
    return RM_OK;
}

extern "C" int rm_flatten_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    RM_CUDA_CHECK(cudaMemcpyAsync(call->din[0]->data, call->dout->data, rm_tensor_numel(call->dout) * sizeof(float),
                                  cudaMemcpyDeviceToDevice, rm_cuda_stream(call->be)),
                  e, "flatten backward copy");
    return RM_OK;
}
