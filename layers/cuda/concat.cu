/* Channel concatenation on the GPU: input k of every sample is a contiguous
 * block of len = C_k*H*W floats at offset off inside the output's sample, so
 * one kernel per input moves it (forward) or slices it back (backward). */
#include "cuda_common.cuh"

/* y[n][off + r] = x[n][r] for r < len; n < count / len. */
static __global__ void concat_forward_kernel(float *y, const float *x, size_t count, size_t len, size_t out_sample,
                                             size_t off)
{
    RM_CUDA_FOR(i, count) y[(i / len) * out_sample + off + i % len] = x[i];
}

static __global__ void concat_backward_kernel(float *dx, const float *dy, size_t count, size_t len, size_t out_sample,
                                              size_t off)
{
    RM_CUDA_FOR(i, count) dx[i] = dy[(i / len) * out_sample + off + i % len];
}

extern "C" int rm_concat_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    rm_shape os = call->out->shape;
    size_t plane = (size_t)os.h * os.w, out_sample = (size_t)os.c * plane, off = 0;
    for (int k = 0; k < call->nin; k++) {
        size_t len = (size_t)call->in[k]->shape.c * plane, count = len * (size_t)os.n;
        concat_forward_kernel<<<rm_cuda_blocks(count), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
            call->out->data, call->in[k]->data, count, len, out_sample, off);
        RM_CUDA_LAUNCHED(e, "concat_forward_kernel");
        off += len;
    }
    return RM_OK;
}

extern "C" int rm_concat_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    rm_shape os = call->dout->shape;
    size_t plane = (size_t)os.h * os.w, out_sample = (size_t)os.c * plane, off = 0;
    for (int k = 0; k < call->nin; k++) {
        size_t len = (size_t)call->in[k]->shape.c * plane, count = len * (size_t)os.n; /* shapes are always valid */
        if (call->din[k] && call->din[k]->data) {
            concat_backward_kernel<<<rm_cuda_blocks(count), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
                call->din[k]->data, call->dout->data, count, len, out_sample, off);
            RM_CUDA_LAUNCHED(e, "concat_backward_kernel");
        }
        off += len;
    }
    return RM_OK;
}
