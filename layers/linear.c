/* Fully connected layer: N x C x H x W is read as N x (C*H*W) features and
 * mapped to N x out x 1 x 1 by y = W x + b, weight (out, in, 1, 1) as in
 * PyTorch's nn.Linear. The CPU reference, whose reductions accumulate in
 * double; the fast library's kernels (cpu/linear_fast.c) are single-precision
 * BLIS products. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "init.h"
#include "layers.h"

static int linear_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    char buf[64];
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "linear: takes exactly 1 input, got %d", nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "linear: empty input %s", rm_shape_str(x, buf, sizeof buf));
    if (cfg->out_channels < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "linear: out_channels (output features) must be >= 1, got %d",
                         cfg->out_channels);
    if ((long long)x.c * x.h * x.w > INT_MAX)
        return rm_errorf(e, RM_ERR_SHAPE, "linear: input %s has too many features", rm_shape_str(x, buf, sizeof buf));
    *out = rm_shape_make(x.n, cfg->out_channels, 1, 1);
    return RM_OK;
}

static void linear_param_shapes(rm_shape *w, rm_shape *b, const rm_layer_config *cfg, const rm_shape *in, int nin)
{
    (void)nin;
    *w = rm_shape_make(cfg->out_channels, in[0].c * in[0].h * in[0].w, 1, 1);
    *b = cfg->bias ? rm_shape_make(cfg->out_channels, 1, 1, 1) : rm_shape_make(0, 0, 0, 0);
}

static double linear_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)nin;
    double outs = (double)out.n * out.c;
    double macs = outs * in[0].c * (double)in[0].h * in[0].w;
    double bias = cfg->bias ? outs : 0.0;
    return backward ? 4.0 * macs + bias : 2.0 * macs + bias;
}

static void linear_init(rm_layer_params *p, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_rng *rng)
{
    (void)nin;
    rm_init_weights(p, cfg, (double)in[0].c * in[0].h * in[0].w, cfg->out_channels, rng);
}

/* Forward only: the input transposed to features x batch. */
static size_t linear_workspace_bytes(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                     int backward)
{
    (void)cfg, (void)nin, (void)out;
    return backward ? 0 : rm_shape_numel(in[0]) * sizeof(float);
}

static int linear_forward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    const float *w = call->params->w.data, *b = call->params->b.data;
    size_t nb = (size_t)x->shape.n, in = rm_tensor_numel(x) / nb, out = (size_t)call->cfg->out_channels;
    /* y[n][o] = b[o] + sum_i w[o][i] x[n][i], tiled over the batch: x is
     * transposed to xt[i][n] so that a tile reads rows (transposing w instead
     * would copy the whole weight matrix every call). */
    void *ws, *owned;
    int rc = rm_layer_workspace(&ws, &owned, call, linear_workspace_bytes(call->cfg, &x->shape, 1, call->out->shape, 0),
                                "linear forward", e);
    if (rc) return rc;
    float *xt = ws;
    for (size_t n = 0; n < nb; n++)
        for (size_t i = 0; i < in; i++) xt[i * nb + n] = x->data[n * in + i];
    double acc[RM_TILE];
    for (size_t n0 = 0; n0 < nb; n0 += RM_TILE) {
        size_t nn = nb - n0 < RM_TILE ? nb - n0 : RM_TILE;
        for (size_t o = 0; o < out; o++) {
            double bias = b ? (double)b[o] : 0.0;
            for (size_t j = 0; j < nn; j++) acc[j] = bias;
            rm_madd_tile(acc, nn, w + o * in, 1, xt + n0, nb, in);
            for (size_t j = 0; j < nn; j++) call->out->data[(n0 + j) * out + o] = (float)acc[j];
        }
    }
    free(owned);
    return RM_OK;
}

static int linear_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    size_t nb = (size_t)x->shape.n, in = rm_shape_numel(x->shape) / nb, out = (size_t)call->cfg->out_channels;
    double acc[RM_TILE];
    for (size_t i0 = 0; i0 < in; i0 += RM_TILE) {
        size_t ni = in - i0 < RM_TILE ? in - i0 : RM_TILE;
        if (dx && dx->data) /* dx[n][i] = sum_o dy[n][o] w[o][i] */
            for (size_t n = 0; n < nb; n++) {
                memset(acc, 0, sizeof acc);
                rm_madd_tile(acc, ni, dy->data + n * out, 1, prm->w.data + i0, in, out);
                for (size_t j = 0; j < ni; j++) dx->data[n * in + i0 + j] = (float)acc[j];
            }
        if (prm->dw.data) /* dw[o][i] = sum_n dy[n][o] x[n][i] */
            for (size_t o = 0; o < out; o++) {
                memset(acc, 0, sizeof acc);
                rm_madd_tile(acc, ni, dy->data + o, out, x->data + i0, in, nb);
                for (size_t j = 0; j < ni; j++) prm->dw.data[o * in + i0 + j] = (float)acc[j];
            }
    }
    if (prm->db.data) rm_cpu_bias_grad(prm->db.data, dy->data, (int)nb, (int)out, 1, rm_call_threads(call, nb * out));
    return RM_OK;
}

const rm_layer_desc rm_linear_desc = {
    .kind = RM_LAYER_LINEAR,
    .name = "linear",
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = linear_infer,
    .param_shapes = linear_param_shapes,
    .flops = linear_flops,
    .init = linear_init,
    .forward_ref = linear_forward,
    .backward_ref = linear_backward,
    .workspace_bytes = linear_workspace_bytes,
    .kernels = rm_linear_kernels,
};
