/* The activations of layers/activation.c on the GPU: one thread per
 * element, the definitions of activation.h compiled as device code, in
 * double like the CPU reference; backward reads what the layer declares
 * (its output or its input). */
#include "cuda_common.cuh" /* layer.h and layers.h, as C */

#include "activation.h" /* static inline, host and device */

static __global__ void act_forward_kernel(rm_layer_kind kind, float *y, const float *x, size_t n)
{
    RM_CUDA_FOR(i, n) y[i] = (float)rm_act_forward(kind, (double)x[i]);
}

static __global__ void act_backward_kernel(rm_layer_kind kind, float *dx, const float *dy, const float *v, size_t n)
{
    RM_CUDA_FOR(i, n) dx[i] = (float)((double)dy[i] * rm_act_derivative(kind, (double)v[i]));
}

extern "C" int rm_activation_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    size_t n = rm_tensor_numel(call->out);
    act_forward_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(call->cfg->kind, call->out->data,
                                                                                       call->in[0]->data, n);
    RM_CUDA_LAUNCHED(e, "act_forward_kernel");
    return RM_OK;
}

extern "C" int rm_activation_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    size_t n = rm_tensor_numel(call->out);
    const float *v =
        rm_layer_desc_of(call->cfg->kind)->backward_reads & RM_READS_OUTPUT ? call->out->data : call->in[0]->data;
    act_backward_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->cfg->kind, call->din[0]->data, call->dout->data, v, n);
    RM_CUDA_LAUNCHED(e, "act_backward_kernel");
    return RM_OK;
}
