/* Fully connected layer on the GPU: one thread per output element, each a
 * dot product summed in double in the CPU reference's order (deterministic,
 * no atomics). Hand-written rather than cuBLAS for now: the backend holds no
 * cuBLAS handle yet, and a per-call handle would allocate every step. */
#include "cuda_common.cuh"

/* y[n][o] = b[o] + sum_i w[o][i] x[n][i]. */
static __global__ void linear_forward_kernel(float *y, const float *w, const float *b, const float *x, size_t nb,
                                             size_t in, size_t out)
{
    RM_CUDA_FOR(k, nb * out)
    {
        size_t n = k / out, o = k % out;
        const float *wr = w + o * in, *xr = x + n * in;
        double acc = b ? (double)b[o] : 0.0;
        for (size_t i = 0; i < in; i++) acc += (double)wr[i] * (double)xr[i];
        y[k] = (float)acc;
    }
}

/* dx[n][i] = sum_o dy[n][o] w[o][i]. */
static __global__ void linear_backward_data_kernel(float *dx, const float *dy, const float *w, size_t nb, size_t in,
                                                   size_t out)
{
    RM_CUDA_FOR(k, nb * in)
    {
        size_t n = k / in, i = k % in;
        double acc = 0.0;
        for (size_t o = 0; o < out; o++) acc += (double)dy[n * out + o] * (double)w[o * in + i];
        dx[k] = (float)acc;
    }
}

/* dw[o][i] = sum_n dy[n][o] x[n][i]. */
static __global__ void linear_backward_weight_kernel(float *dw, const float *dy, const float *x, size_t nb, size_t in,
                                                     size_t out)
{
    RM_CUDA_FOR(k, out * in)
    {
        size_t o = k / in, i = k % in;
        double acc = 0.0;
        for (size_t n = 0; n < nb; n++) acc += (double)dy[n * out + o] * (double)x[n * in + i];
        dw[k] = (float)acc;
    }
}

/* db[o] = sum_n dy[n][o]. */
static __global__ void linear_backward_bias_kernel(float *db, const float *dy, size_t nb, size_t out)
{
    RM_CUDA_FOR(o, out)
    {
        double acc = 0.0;
        for (size_t n = 0; n < nb; n++) acc += dy[n * out + o];
        db[o] = (float)acc;
    }
}

extern "C" int rm_linear_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    size_t nb = (size_t)x->shape.n, in = rm_tensor_numel(x) / nb, out = (size_t)call->cfg->out_channels;
    linear_forward_kernel<<<rm_cuda_blocks(nb * out), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, call->params->w.data, call->params->b.data, x->data, nb, in, out);
    RM_CUDA_LAUNCHED(e, "linear_forward_kernel");
    return RM_OK;
}

extern "C" int rm_linear_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    size_t nb = (size_t)x->shape.n, in = rm_shape_numel(x->shape) / nb, out = (size_t)call->cfg->out_channels;
    cudaStream_t st = rm_cuda_stream(call->be);
    if (dx && dx->data) {
        linear_backward_data_kernel<<<rm_cuda_blocks(nb * in), RM_THREADS, 0, st>>>(dx->data, dy->data, prm->w.data,
                                                                                   nb, in, out);
        RM_CUDA_LAUNCHED(e, "linear_backward_data_kernel");
    }
    if (prm->dw.data) {
        linear_backward_weight_kernel<<<rm_cuda_blocks(out * in), RM_THREADS, 0, st>>>(prm->dw.data, dy->data,
                                                                                      x->data, nb, in, out);
        RM_CUDA_LAUNCHED(e, "linear_backward_weight_kernel");
    }
    if (prm->db.data) {
        linear_backward_bias_kernel<<<rm_cuda_blocks(out), RM_THREADS, 0, st>>>(prm->db.data, dy->data, nb, out);
        RM_CUDA_LAUNCHED(e, "linear_backward_bias_kernel");
    }
    return RM_OK;
}
