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

#include "cpu_blas.h"
#include "cpu_kernels.h"
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

/* Sizes of one call. q = (co, a, b) indexes the Cout*4 weight taps of an input channel. */
typedef struct convt_geom {
    int n, cin, h, w, cout;
    size_t hw;   /* input pixels per plane */
    size_t qdim; /* cout * 4 */
} convt_geom;

static convt_geom convt_geom_of(const rm_layer_config *cfg, rm_shape x)
{
    convt_geom g;
    g.n = x.n, g.cin = x.c, g.h = x.h, g.w = x.w, g.cout = cfg->out_channels;
    g.hw = (size_t)g.h * g.w;
    g.qdim = (size_t)g.cout * 4;
    return g;
}

/* Backward only: the dw accumulator (doubles, first, so every part stays
 * aligned), then one image of dy in each of two layouts. */
static size_t convt_workspace_bytes(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                    int backward)
{
    (void)nin, (void)out;
    if (!backward) return 0;
    convt_geom g = convt_geom_of(cfg, in[0]);
    return (size_t)g.cin * g.qdim * sizeof(double) + 2 * g.qdim * g.hw * sizeof(float);
}

/* Output pixel (2i+a, 2j+b) of channel co, as an offset into one image of y. */
static size_t convt_out_index(const convt_geom *g, size_t q, size_t ij)
{
    size_t co = q / 4, a = (q / 2) % 2, b = q % 2, i = ij / (size_t)g->w, j = ij % (size_t)g->w;
    return (co * 2 * g->h + 2 * i + a) * 2 * (size_t)g->w + 2 * j + b;
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

/* ---- the fast library: the per-pixel product through BLIS ---- */

/* buf[q][ij] = y[convt_out_index(q, ij)] (gather, to_buf) or the other way
 * round (scatter, adding the bias), for one image; the taps q are
 * independent, split between nt threads. */
static void convt_shuffle(float *buf /* qdim x hw */, float *y /* cout x 2h x 2w */, const float *bias,
                          const convt_geom *g, int to_buf, int nt)
{
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t q = 0; q < g->qdim; q++) {
        size_t a = (q / 2) % 2, b = q % 2, w2 = 2 * (size_t)g->w;
        float *plane = y + q / 4 * 4 * g->hw, bq = bias ? bias[q / 4] : 0.0f;
        for (int i = 0; i < g->h; i++) { /* convt_out_index, a row of ij at a time */
            float *out = plane + (2 * (size_t)i + a) * w2 + b, *r = buf + q * g->hw + (size_t)i * g->w;
            if (to_buf)
                for (int j = 0; j < g->w; j++) r[j] = out[2 * (size_t)j];
            else
                for (int j = 0; j < g->w; j++) out[2 * (size_t)j] = r[j] + bq;
        }
    }
}

/* One image of taps: qdim x hw floats (the reference's backward holds two). */
static size_t convt_fast_workspace(const rm_backend *be, const rm_layer_config *cfg, const rm_shape *in, int nin,
                                   rm_shape out, int backward)
{
    (void)be, (void)nin, (void)out, (void)backward;
    convt_geom g = convt_geom_of(cfg, in[0]);
    return g.qdim * g.hw * sizeof(float);
}

/* Per image: buf = w^T . x (qdim x hw), scattered onto y with the bias. */
static int convt_fast_forward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    convt_geom g = convt_geom_of(call->cfg, x->shape);
    void *ws, *owned;
    int rc = rm_layer_workspace(&ws, &owned, call,
                                convt_fast_workspace(call->be, call->cfg, &x->shape, 1, call->out->shape, 0),
                                "conv_transpose forward", e);
    if (rc) return rc;
    size_t xsize = (size_t)g.cin * g.hw, ysize = g.qdim * g.hw;
    for (int n = 0; !rc && n < g.n; n++) {
        rc = rm_cpu_sgemm(call->be, 1, 0, g.qdim, g.hw, (size_t)g.cin, call->params->w.data, g.qdim,
                          x->data + n * xsize, g.hw, 0.0f, ws, g.hw, "conv_transpose forward", e);
        if (!rc)
            convt_shuffle(ws, call->out->data + n * ysize, call->params->b.data, &g, 0, rm_call_threads(call, ysize));
    }
    free(owned);
    return rc;
}

/* Per image: dy gathered into taps (qdim x hw); dx = w . taps, dw (+)= x .
 * taps^T (images in order, one float sum); db as the reference. */
static int convt_fast_backward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    convt_geom g = convt_geom_of(call->cfg, x->shape);
    int want_dx = dx && dx->data;
    size_t xsize = (size_t)g.cin * g.hw, ysize = g.qdim * g.hw;
    void *ws, *owned;
    int rc = rm_layer_workspace(&ws, &owned, call, convt_fast_workspace(call->be, call->cfg, &x->shape, 1, dy->shape, 1),
                                "conv_transpose backward", e);
    if (rc) return rc;
    for (int n = 0; !rc && n < g.n && (want_dx || prm->dw.data); n++) {
        convt_shuffle(ws, dy->data + n * ysize, NULL, &g, 1, rm_call_threads(call, ysize));
        if (want_dx)
            rc = rm_cpu_sgemm(call->be, 0, 0, (size_t)g.cin, g.hw, g.qdim, prm->w.data, g.qdim, ws, g.hw, 0.0f,
                              dx->data + n * xsize, g.hw, "conv_transpose backward (data)", e);
        if (!rc && prm->dw.data)
            rc = rm_cpu_sgemm(call->be, 0, 1, (size_t)g.cin, g.qdim, g.hw, x->data + n * xsize, g.hw, ws, g.hw,
                              n == 0 ? 0.0f : 1.0f, prm->dw.data, g.qdim, "conv_transpose backward (weights)", e);
    }
    if (!rc && prm->db.data)
        rm_cpu_bias_grad(prm->db.data, dy->data, g.n, g.cout, 4 * g.hw, rm_call_threads(call, g.n * ysize));
    free(owned);
    return rc;
}

static rm_layer_kernels convt_cpu_kernels(rm_cpu_kernels lib)
{
    rm_layer_kernels k = {convt_forward, convt_backward, NULL};
    if (lib == RM_CPU_KERNELS_FAST) k = (rm_layer_kernels){convt_fast_forward, convt_fast_backward, convt_fast_workspace};
    return k;
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
    .forward_cpu = convt_forward,
    .backward_cpu = convt_backward,
    .workspace_bytes = convt_workspace_bytes,
    .cpu_kernels = convt_cpu_kernels,
    .forward_cuda = RM_CUDA_FN(rm_conv_transpose2x2_forward_cuda),
    .backward_cuda = RM_CUDA_FN(rm_conv_transpose2x2_backward_cuda),
    .cuda_kernels = RM_CUDA_FN(rm_conv_transpose2x2_cuda_kernels),
    .workspace_bytes_cuda = RM_CUDA_FN(rm_conv_transpose2x2_workspace_cuda),
};
