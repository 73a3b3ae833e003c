/* Fully connected layer on the GPU. Hand-written kernel library: one thread per
 * output element, each a dot product summed in double in the CPU reference's
 * order (deterministic, no atomics). cublas and cudnn kernel libraries: one SGEMM per
 * product (y, dx, dw) through the backend's cuBLAS handle, which runs without
 * atomics on one stream with a fixed workspace, so it is deterministic too;
 * the bias and its gradient stay hand-written. No workspace in any kernel library. */
#include "cuda_kernel_libs.cuh"

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

/* y[n][o] = b[o]: the forward's SGEMM then adds W x (beta = 1). */
static __global__ void linear_bias_fill_kernel(float *y, const float *b, size_t nb, size_t out)
{
    RM_CUDA_FOR(k, nb * out) y[k] = b[k % out];
}

/* Row-major y (nb x out) is column-major y^T (out x nb) = W (out x in) x^T,
 * with W^T (in x out, ld in) and x^T (in x nb, ld in) as cuBLAS sees them. */
static int gemm_forward(const rm_layer_call *call, size_t nb, size_t in, size_t out, rm_err *e)
{
    const float *b = call->params->b.data;
    if (b) {
        linear_bias_fill_kernel<<<rm_cuda_blocks(nb * out), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(call->out->data,
                                                                                                       b, nb, out);
        RM_CUDA_LAUNCHED(e, "linear_bias_fill_kernel");
    }
    return rm_sgemm(call->be, CUBLAS_OP_T, CUBLAS_OP_N, out, nb, in, call->params->w.data, in, 0, call->in[0]->data, in,
                    0, b ? 1.0f : 0.0f, call->out->data, out, 0, 1, "linear forward sgemm", e);
}

static int gemm_backward(const rm_layer_call *call, size_t nb, size_t in, size_t out, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    int rc = RM_OK;
    if (dx && dx->data) /* dx^T (in x nb) = W^T (in x out) dy^T (out x nb) */
        rc = rm_sgemm(call->be, CUBLAS_OP_N, CUBLAS_OP_N, in, nb, out, prm->w.data, in, 0, dy->data, out, 0, 0.0f,
                      dx->data, in, 0, 1, "linear backward-data sgemm", e);
    if (!rc && prm->dw.data) /* dW^T (in x out) = x^T (in x nb) dy (nb x out) */
        rc = rm_sgemm(call->be, CUBLAS_OP_N, CUBLAS_OP_T, in, out, nb, x->data, in, 0, dy->data, out, 0, 0.0f,
                      prm->dw.data, in, 0, 1, "linear backward-filter sgemm", e);
    if (!rc && prm->db.data) {
        linear_backward_bias_kernel<<<rm_cuda_blocks(out), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
            prm->db.data, dy->data, nb, out);
        RM_CUDA_LAUNCHED(e, "linear_backward_bias_kernel");
    }
    return rc;
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
        linear_backward_data_kernel<<<rm_cuda_blocks(nb * in), RM_THREADS, 0, st>>>(dx->data, dy->data, prm->w.data, nb,
                                                                                    in, out);
        RM_CUDA_LAUNCHED(e, "linear_backward_data_kernel");
    }
    if (prm->dw.data) {
        linear_backward_weight_kernel<<<rm_cuda_blocks(out * in), RM_THREADS, 0, st>>>(prm->dw.data, dy->data, x->data,
                                                                                       nb, in, out);
        RM_CUDA_LAUNCHED(e, "linear_backward_weight_kernel");
    }
    if (prm->db.data) {
        linear_backward_bias_kernel<<<rm_cuda_blocks(out), RM_THREADS, 0, st>>>(prm->db.data, dy->data, nb, out);
        RM_CUDA_LAUNCHED(e, "linear_backward_bias_kernel");
    }
    return RM_OK;
}

static int gemm_forward_call(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    size_t nb = (size_t)x->shape.n, in = rm_tensor_numel(x) / nb, out = (size_t)call->cfg->out_channels;
    return gemm_forward(call, nb, in, out, e);
}

static int gemm_backward_call(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    size_t nb = (size_t)x->shape.n, in = rm_shape_numel(x->shape) / nb, out = (size_t)call->cfg->out_channels;
    return gemm_backward(call, nb, in, out, e);
}

/* cublas and cudnn: one SGEMM per product (cuDNN has no better one). No
 * workspace in any library. */
extern "C" rm_layer_kernels rm_linear_cuda_kernels(int lib)
{
    if (lib == RM_CUDA_KERNELS_HANDWRITTEN) return {rm_linear_forward_cuda, rm_linear_backward_cuda, NULL};
    return {gemm_forward_call, gemm_backward_call, NULL};
}
