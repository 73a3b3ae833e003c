/* linear in the CPU backend's fast kernel library: single-precision BLIS
 * products (rm_cpu_sgemm), no workspace. The reference kernels, the
 * layer's definition, are in ../linear.c. */
#include "backend_cpu.h"
#include "cpu_blas.h"
#include "cpu_kernels.h"
#include "layer_cpu.h"

/* y = x . w^T + b. */
static int linear_fast_forward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    const float *w = call->params->w.data, *b = call->params->b.data;
    size_t nb = (size_t)x->shape.n, in = rm_tensor_numel(x) / nb, out = (size_t)call->cfg->out_channels;
    float *y = call->out->data;
    int rc = rm_cpu_sgemm(call->be, 0, 1, nb, out, in, x->data, in, w, in, 0.0f, y, out, "linear forward", e);
    if (rc || !b) return rc;
    for (size_t n = 0; n < nb; n++)
        for (size_t o = 0; o < out; o++) y[n * out + o] += b[o];
    return RM_OK;
}

/* dx = dy . w, dw = dy^T . x, db as the reference. */
static int linear_fast_backward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    size_t nb = (size_t)x->shape.n, in = rm_tensor_numel(x) / nb, out = (size_t)call->cfg->out_channels;
    int rc = RM_OK;
    if (dx && dx->data)
        rc = rm_cpu_sgemm(call->be, 0, 0, nb, in, out, dy->data, out, prm->w.data, in, 0.0f, dx->data, in,
                          "linear backward (data)", e);
    if (!rc && prm->dw.data)
        rc = rm_cpu_sgemm(call->be, 1, 0, out, in, nb, dy->data, out, x->data, in, 0.0f, prm->dw.data, in,
                          "linear backward (weights)", e);
    if (!rc && prm->db.data)
        rm_cpu_bias_grad(prm->db.data, dy->data, (int)nb, (int)out, 1, rm_call_threads(call, nb * out));
    return rc;
}

rm_layer_kernels rm_linear_cpu_kernels(int lib)
{
    rm_layer_kernels k = {NULL, NULL, NULL}; /* the reference (linear.c) */
    if (lib == RM_CPU_KERNELS_FAST) k = (rm_layer_kernels){linear_fast_forward, linear_fast_backward, NULL};
    return k;
}
