/* Inverted dropout on the GPU. The mask is rm_uniform_at(seed, stream, j) >= p
 * with the very functions of base/rng.h (compiled for the device), so the
 * GPU drops exactly the elements the CPU reference drops. */
#include <string.h>

#include "cuda_common.cuh"

/* y = mask * x * scale; the backward too, with x = dy and y = dx. Element
 * j's draw is number j / per (drop_path: one per sample, layers/dropout.c). */
static __global__ void dropout_forward_kernel(float *y, const float *x, size_t n, size_t per, float p, float scale,
                                              uint64_t seed, uint64_t stream)
{
    RM_CUDA_FOR(j, n) y[j] = rm_uniform_at(seed, stream, j / per) >= p ? x[j] * scale : 0.0f;
}

static int dropout_run_cuda(float *y, const float *x, size_t n, int batch, const rm_layer_call *call, const char *what,
                            rm_err *e)
{
    float p = call->cfg->p;
    const int path = call->cfg->kind == RM_LAYER_DROP_PATH;
    if (!(p >= 0.0f && p < 1.0f))
        return rm_errorf(e, RM_ERR_SHAPE, "%s: p = %g must lie in [0, 1)", path ? "drop_path" : "dropout", (double)p);
    cudaStream_t st = rm_cuda_stream(call->be);
    if (!call->training || p == 0.0f) {
        if (y != x) RM_CUDA_CHECK(cudaMemcpyAsync(y, x, n * sizeof(float), cudaMemcpyDeviceToDevice, st), e, what);
        return RM_OK;
    }
    float scale = 1.0f / (1.0f - p); /* computed on the host, in float, as the CPU does */
    const size_t per = path ? n / (size_t)batch : 1;
    dropout_forward_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, st>>>(y, x, n, per, p, scale, call->seed,
                                                                     rm_dropout_stream(call->step, call->node_id));
    RM_CUDA_LAUNCHED(e, what);
    return RM_OK;
}

extern "C" int rm_dropout_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    return dropout_run_cuda(call->out->data, call->in[0]->data, rm_tensor_numel(call->out), call->out->shape.n, call,
                            "dropout_forward_kernel", e);
}

/* The Jacobian is the same diagonal mask: the forward kernel applied to dy. */
extern "C" int rm_dropout_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    return dropout_run_cuda(call->din[0]->data, call->dout->data, rm_tensor_numel(call->dout), call->dout->shape.n,
                            call, "dropout_forward_kernel (backward)", e);
}
