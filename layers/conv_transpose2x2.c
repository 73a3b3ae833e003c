/* Transposed 2-D convolution with kernel 2 and stride 2: the U-Net up path,
 * N x Cin x H x W -> N x Cout x 2H x 2W. Weight (Cin, Cout, 2, 2) as in
 * PyTorch's ConvTranspose2d. Kernel and stride are equal, so every output
 * pixel comes from exactly one input pixel and the layer is a per-pixel matrix
 * product Y[q][ij] = sum_ci W[ci][q] X[ci][ij] with q = (co, a, b); the CPU
 * reference below computes it that way, accumulating in double. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv_transpose2x2.h"
#include "layers.h"

static int convt_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    char buf[64];
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "conv_transpose: takes exactly 1 input, got %d", nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "conv_transpose: empty input %s", rm_shape_str(x, buf, sizeof buf));
    if (cfg->out_channels < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "conv_transpose: out_channels must be >= 1, got %d", cfg->out_channels);
    if (x.h > INT_MAX / 2 || x.w > INT_MAX / 2)
        return rm_errorf(e, RM_ERR_SHAPE, "conv_transpose: input %s is too large to double",
                         rm_shape_str(x, buf, sizeof buf));
    *out = rm_shape_make(x.n, cfg->out_channels, 2 * x.h, 2 * x.w);
    return RM_OK;
}

static void convt_param_shapes(rm_shape *w, rm_shape *b, const rm_layer_config *cfg, const rm_shape *in, int nin)
{
    (void)nin;
    *w = rm_shape_make(in[0].c, cfg->out_channels, 2, 2);
    *b = cfg->bias ? rm_shape_make(cfg->out_channels, 1, 1, 1) : rm_shape_make(0, 0, 0, 0);
}

static double convt_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)nin;
    double outs = (double)out.n * out.c * out.h * out.w; /* each output pixel: Cin products */
    double macs = outs * in[0].c;
    double bias = cfg->bias ? outs : 0.0;
    return backward ? 4.0 * macs + bias : 2.0 * macs + bias;
}

static void convt_init(rm_layer_params *p, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_rng *rng)
{
    (void)cfg, (void)nin;
    /* He normal with the true fan-in: each output pixel sums Cin products
     * (stride = kernel, so windows never overlap). */
    double std = sqrt(2.0 / (double)in[0].c);
    if (p->w.data)
        for (size_t i = 0; i < rm_tensor_numel(&p->w); i++) p->w.data[i] = (float)(std * rm_rng_normal(rng));
    if (p->b.data) memset(p->b.data, 0, rm_tensor_numel(&p->b) * sizeof(float));
}

/* Backward only: the dw accumulator (doubles, first, so every part stays
 * aligned), then one image of dy in each of two layouts. */
static size_t convt_workspace_bytes(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)nin, (void)out;
    if (!backward) return 0;
    convt_geom g = convt_geom_of(cfg, in[0]);
    return (size_t)g.cin * g.qdim * sizeof(double) + 2 * g.qdim * g.hw * sizeof(float);
}

/* y[co][2i+a][2j+b] = b[co] + sum_ci w[ci][q] x[ci][ij] for one image. */
static void convt_forward_kernel(float *restrict y /* cout x 2h x 2w */, const float *restrict w /* cin x qdim */,
                                 const float *restrict bias, const float *restrict x /* cin x hw */,
                                 const convt_geom *g)
{
    double acc[RM_TILE];
    for (size_t p0 = 0; p0 < g->hw; p0 += RM_TILE) {
        size_t pn = g->hw - p0 < RM_TILE ? g->hw - p0 : RM_TILE;
        for (size_t q = 0; q < g->qdim; q++) {
            double b0 = bias ? (double)bias[q / 4] : 0.0;
            for (size_t j = 0; j < pn; j++) acc[j] = b0;
            rm_madd_tile(acc, pn, w + q, g->qdim, x + p0, g->hw, (size_t)g->cin);
            for (size_t j = 0; j < pn; j++) y[convt_out_index(g, q, p0 + j)] = (float)acc[j];
        }
    }
}

static int convt_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_tensor *x = call->in[0];
    convt_geom g = convt_geom_of(call->cfg, x->shape);
    for (int n = 0; n < g.n; n++)
        convt_forward_kernel(call->out->data + (size_t)n * g.qdim * g.hw, call->params->w.data, call->params->b.data,
                             x->data + (size_t)n * g.cin * g.hw, &g);
    return RM_OK;
}

static int convt_backward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    convt_geom g = convt_geom_of(call->cfg, x->shape);
    int want_dx = dx && dx->data, want_dw = prm->dw.data != NULL, want_db = prm->db.data != NULL;
    size_t xsize = (size_t)g.cin * g.hw, ysize = g.qdim * g.hw;

    /* dy of one image in two layouts: tap-major dyq[q][ij] for dx,
     * pixel-major dyp[ij][q] for dw, so both products read rows. */
    void *ws, *owned;
    int rc = rm_layer_workspace(&ws, &owned, call, convt_workspace_bytes(call->cfg, &x->shape, 1, dy->shape, 1),
                                "conv_transpose backward", e);
    if (rc) return rc;
    double *dw_acc = want_dw ? ws : NULL, acc[RM_TILE];
    float *dyq = want_dx ? (float *)((double *)ws + (size_t)g.cin * g.qdim) : NULL;
    float *dyp = want_dw ? (float *)((double *)ws + (size_t)g.cin * g.qdim) + ysize : NULL;
    if (want_dw) memset(dw_acc, 0, (size_t)g.cin * g.qdim * sizeof(double));
    for (int n = 0; n < g.n && (want_dx || want_dw); n++) {
        const float *dyn = dy->data + n * ysize;
        for (size_t q = 0; q < g.qdim; q++)
            for (size_t ij = 0; ij < g.hw; ij++) {
                float v = dyn[convt_out_index(&g, q, ij)];
                if (dyq) dyq[q * g.hw + ij] = v;
                if (dyp) dyp[ij * g.qdim + q] = v;
            }
        if (want_dx) /* dx[ci][ij] = sum_q w[ci][q] dyq[q][ij] */
            for (size_t p0 = 0; p0 < g.hw; p0 += RM_TILE) {
                size_t pn = g.hw - p0 < RM_TILE ? g.hw - p0 : RM_TILE;
                for (int ci = 0; ci < g.cin; ci++) {
                    memset(acc, 0, sizeof acc);
                    rm_madd_tile(acc, pn, prm->w.data + (size_t)ci * g.qdim, 1, dyq + p0, g.hw, g.qdim);
                    float *dxrow = dx->data + n * xsize + (size_t)ci * g.hw + p0;
                    for (size_t j = 0; j < pn; j++) dxrow[j] = (float)acc[j];
                }
            }
        if (want_dw) /* dw[ci][q] += sum_ij x[ci][ij] dyp[ij][q] */
            for (size_t q0 = 0; q0 < g.qdim; q0 += RM_TILE) {
                size_t qn = g.qdim - q0 < RM_TILE ? g.qdim - q0 : RM_TILE;
                for (int ci = 0; ci < g.cin; ci++)
                    rm_madd_tile(dw_acc + (size_t)ci * g.qdim + q0, qn, x->data + n * xsize + (size_t)ci * g.hw, 1,
                                 dyp + q0, g.qdim, g.hw);
            }
    }
    if (want_dw)
        for (size_t i = 0; i < (size_t)g.cin * g.qdim; i++) prm->dw.data[i] = (float)dw_acc[i];
    if (want_db) rm_cpu_bias_grad(prm->db.data, dy->data, g.n, g.cout, 4 * g.hw, rm_call_threads(call, g.n * ysize));
    free(owned);
    return RM_OK;
}

const rm_layer_desc rm_conv_transpose2x2_desc = {
    .kind = RM_LAYER_CONV_TRANSPOSE2X2,
    .name = "conv_transpose",
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = convt_infer,
    .param_shapes = convt_param_shapes,
    .flops = convt_flops,
    .init = convt_init,
    .forward_ref = convt_forward,
    .backward_ref = convt_backward,
    .workspace_bytes = convt_workspace_bytes,
    .kernels = rm_conv_transpose2x2_kernels,
};
