/* A vision transformer's token bookkeeping on the GPU (layers/tokens.c),
 * both layers by call->cfg->kind: one thread per element moved (or added
 * to), and one per position embedding element for the parameters'
 * gradients, summed over the batch in double in the reference's order. */
#include "cuda_common.cuh"

/* dst[r ds + i] = src[r ss + i] for rows r and i < len: each plane's tokens
 * but the class token (tokens' dx), or one token of each plane (token). */
static __global__ void token_rows_kernel(float *dst, size_t ds, const float *src, size_t ss, size_t rows, size_t len)
{
    RM_CUDA_FOR(k, rows * len)
    {
        const size_t r = k / len, i = k % len;
        dst[r * ds + i] = src[r * ss + i];
    }
}

/* y[n][c][0] = cls[c] + pos[c][0], y[n][c][1 + i] = x[n][c][i] + pos[c][1 + i]. */
static __global__ void tokens_forward_kernel(float *y, const float *x, const float *pos, const float *cls, int c,
                                             size_t t, size_t count)
{
    RM_CUDA_FOR(k, count)
    {
        const size_t i = k % (t + 1), plane = k / (t + 1), ch = plane % (size_t)c;
        const float p = pos[ch * (t + 1) + i];
        y[k] = i ? x[plane * t + i - 1] + p : cls[ch] + p;
    }
}

/* dpos[c][i] = sum over n of dy[n][c][i]; dcls[c] = dpos[c][0]. Either may be NULL. */
static __global__ void tokens_dparams_kernel(float *dpos, float *dcls, const float *dy, int n, int c, size_t t)
{
    RM_CUDA_FOR(k, (size_t)c * (t + 1))
    {
        const size_t i = k % (t + 1), ch = k / (t + 1);
        double sum = 0;
        for (int s = 0; s < n; s++) sum += dy[((size_t)s * c + ch) * (t + 1) + i];
        if (dpos) dpos[k] = (float)sum;
        if (i == 0 && dcls) dcls[ch] = (float)sum;
    }
}

extern "C" int rm_tokens_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_shape x = call->in[0]->shape;
    const size_t t = (size_t)x.h * x.w, planes = (size_t)x.n * x.c, count = rm_tensor_numel(call->out);
    cudaStream_t st = rm_cuda_stream(call->be);
    if (call->cfg->kind == RM_LAYER_TOKEN)
        token_rows_kernel<<<rm_cuda_blocks(planes), RM_THREADS, 0, st>>>(
            call->out->data, 1, call->in[0]->data + call->cfg->start, t, planes, 1);
    else
        tokens_forward_kernel<<<rm_cuda_blocks(count), RM_THREADS, 0, st>>>(
            call->out->data, call->in[0]->data, call->params->w.data, call->params->b.data, x.c, t, count);
    RM_CUDA_LAUNCHED(e, "tokens forward kernel");
    return RM_OK;
}

extern "C" int rm_tokens_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_shape x = call->din[0] ? call->din[0]->shape : call->in[0]->shape;
    const size_t t = (size_t)x.h * x.w, planes = (size_t)x.n * x.c;
    float *dx = call->din[0] ? call->din[0]->data : NULL;
    const float *dy = call->dout->data;
    cudaStream_t st = rm_cuda_stream(call->be);
    if (call->cfg->kind == RM_LAYER_TOKEN) {
        if (!dx) return RM_OK;
        RM_CUDA_CHECK(cudaMemsetAsync(dx, 0, rm_tensor_numel(call->din[0]) * sizeof(float), st), e, "cudaMemsetAsync");
        token_rows_kernel<<<rm_cuda_blocks(planes), RM_THREADS, 0, st>>>(dx + call->cfg->start, t, dy, 1, planes, 1);
        RM_CUDA_LAUNCHED(e, "token_rows_kernel");
        return RM_OK;
    }
    if (dx) token_rows_kernel<<<rm_cuda_blocks(planes * t), RM_THREADS, 0, st>>>(dx, t, dy + 1, t + 1, planes, t);
    float *dpos = call->params->dw.data, *dcls = call->params->db.data;
    if (dpos || dcls)
        tokens_dparams_kernel<<<rm_cuda_blocks((size_t)x.c * (t + 1)), RM_THREADS, 0, st>>>(dpos, dcls, dy, x.n, x.c,
                                                                                            t);
    RM_CUDA_LAUNCHED(e, "tokens backward kernels");
    return RM_OK;
}
