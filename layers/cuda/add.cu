/* Element-wise sum on the GPU. Forward sums the inputs in double in input
 * order, as the CPU reference does; backward is a device copy per input. */
#include "cuda_common.cuh"

/* The input pointers travel by value in the launch. */
typedef struct add_inputs {
    const float *x[RM_MAX_INPUTS];
    int nin;
} add_inputs;

static __global__ void add_forward_kernel(float *y, add_inputs in, size_t n)
{
    RM_CUDA_FOR(i, n)
    {
        double s = in.x[0][i];
        for (int k = 1; k < in.nin; k++) s += in.x[k][i];
        y[i] = (float)s;
    }
}

extern "C" int rm_add_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    add_inputs in;
    in.nin = call->nin;
    for (int k = 0; k < RM_MAX_INPUTS; k++) in.x[k] = k < call->nin ? call->in[k]->data : NULL;
    size_t n = rm_tensor_numel(call->out);
    add_forward_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(call->out->data, in, n);
    RM_CUDA_LAUNCHED(e, "add_forward_kernel");
    return RM_OK;
}

/* The gradient of a sum is the output gradient, for every input. */
extern "C" int rm_add_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    size_t bytes = rm_tensor_numel(call->dout) * sizeof(float);
    for (int k = 0; k < call->nin; k++)
        if (call->din[k] && call->din[k]->data)
            RM_CUDA_CHECK(cudaMemcpyAsync(call->din[k]->data, call->dout->data, bytes, cudaMemcpyDeviceToDevice,
                                          rm_cuda_stream(call->be)),
                          e, "add backward copy");
    return RM_OK;
}
