/* 2-D convolution (rectangular kernel, stride, zero padding and dilation,
 * channel groups, optional bias): the CPU reference and the oracle for the CUDA kernels. Lowered to im2col and a
 * register-tiled matrix product; the im2col matrix is never stored whole,
 * only the 16-wide strip the next tile reads (small workspace, hot in cache).
 * Its reductions accumulate in double, in an order fixed by the code alone,
 * so a recomputed forward is bit-identical. The CPU backend's default
 * library, fast (cpu/conv2d_fast.c), multiplies in single precision through
 * BLIS instead: also bit-identical run to run and at any thread count, but
 * not the same bits as this reference. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv2d.h"
#include "init.h"
#include "layers.h"

static int conv2d_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    char buf[64];
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "conv: takes exactly 1 input, got %d", nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "conv: empty input %s", rm_shape_str(x, buf, sizeof buf));
    if (cfg->out_channels < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "conv: out_channels must be >= 1, got %d", cfg->out_channels);
    const struct {
        const char *what;
        rm_hw v;
        int lo, shown; /* the least value taken, and the least a user means (a zero dilation reads as 1) */
    } axes[] = {{"kernel", cfg->kernel, 1, 1},
                {"stride", cfg->stride, 1, 1},
                {"pad", cfg->pad, 0, 0},
                {"dilation", cfg->dilation, 0, 1}};
    for (int i = 0; i < 4; i++)
        if (axes[i].v.h < axes[i].lo || axes[i].v.w < axes[i].lo)
            return rm_errorf(e, RM_ERR_SHAPE, "conv: %s must be >= %d, got %dx%d", axes[i].what, axes[i].shown,
                             axes[i].v.h, axes[i].v.w);
    if (cfg->groups < 0) return rm_errorf(e, RM_ERR_SHAPE, "conv: groups must be >= 1, got %d", cfg->groups);
    conv_geom g = conv_geom_of(cfg, x, x);
    if (x.c % g.groups || cfg->out_channels % g.groups)
        return rm_errorf(e, RM_ERR_SHAPE, "conv: %d groups do not divide %d input and %d output channels", g.groups,
                         x.c, cfg->out_channels);
    /* the kernel's extent, its taps dil apart */
    long long eh = (long long)(g.kh - 1) * g.dil_h + 1, ew = (long long)(g.kw - 1) * g.dil_w + 1;
    long long ph = (long long)x.h + 2LL * g.ph, pw = (long long)x.w + 2LL * g.pw;
    if (ph < eh || pw < ew)
        return rm_errorf(e, RM_ERR_SHAPE, "conv: kernel %lldx%lld is larger than the padded input %lldx%lld (input %s)",
                         eh, ew, ph, pw, rm_shape_str(x, buf, sizeof buf));
    long long ho = (ph - eh) / g.sh + 1, wo = (pw - ew) / g.sw + 1;
    if (ho > INT_MAX || wo > INT_MAX) return rm_errorf(e, RM_ERR_SHAPE, "conv: output %lldx%lld is too large", ho, wo);
    *out = rm_shape_make(x.n, cfg->out_channels, (int)ho, (int)wo);
    return RM_OK;
}

static void conv2d_param_shapes(rm_shape *w, rm_shape *b, const rm_layer_config *cfg, const rm_shape *in, int nin)
{
    (void)nin;
    conv_geom g = conv_geom_of(cfg, in[0], in[0]);
    *w = rm_shape_make(cfg->out_channels, g.cig, g.kh, g.kw);
    *b = cfg->bias ? rm_shape_make(cfg->out_channels, 1, 1, 1) : rm_shape_make(0, 0, 0, 0);
}

static double conv2d_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)nin;
    conv_geom g = conv_geom_of(cfg, in[0], out);
    double outs = (double)out.n * out.c * out.h * out.w; /* N*Cout*Ho*Wo */
    double macs = outs * (double)g.kdim;                 /* one product per weight tap of the group */
    double bias = cfg->bias ? outs : 0.0;
    /* backward: dx and dW each cost what the forward product costs, db one add per output. */
    return backward ? 4.0 * macs + bias : 2.0 * macs + bias;
}

/* PyTorch's fans: the weights' dims 1 and 0 times the kernel's area. */
static void conv2d_init(rm_layer_params *p, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_rng *rng)
{
    (void)nin;
    conv_geom g = conv_geom_of(cfg, in[0], in[0]);
    const double taps = (double)g.kh * g.kw;
    rm_init_weights(p, cfg, g.cig * taps, cfg->out_channels * taps, rng);
}

static size_t conv2d_workspace_bytes(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                     int backward)
{
    (void)nin;
    conv_geom g = conv_geom_of(cfg, in[0], out);
    return conv_ref_workspace(&g, backward);
}

/* The kernels below see one group (conv_group_geom: cin = cig, cout = cog)
 * and pointers to its channels. The im2col matrix has one row per kernel
 * tap kk = (ci, ky, kx) and one column per output pixel pp = (oy, ox);
 * element (kk, pp) is the input under tap kk when the kernel sits on pixel
 * pp, 0 in the padding. */

/* Columns p0 .. p0+pn (pn <= RM_TILE), tap-major: strip[kk * RM_TILE + j]. */
static void im2col_pixels(float *restrict strip /* kdim x RM_TILE */, size_t p0, size_t pn,
                          const float *restrict x /* cin x h x w */, const conv_geom *g)
{
    int y0[RM_TILE], x0[RM_TILE]; /* each pixel's first row and column of the input */
    for (size_t j = 0; j < pn; j++) {
        y0[j] = (int)((p0 + j) / (size_t)g->wo) * g->sh;
        x0[j] = (int)((p0 + j) % (size_t)g->wo) * g->sw;
    }
    float *out = strip;
    for (int ci = 0; ci < g->cin; ci++) {
        const float *plane = x + (size_t)ci * g->h * g->w;
        for (int ky = 0; ky < g->kh; ky++)
            for (int kx = 0; kx < g->kw; kx++, out += RM_TILE)
                for (size_t j = 0; j < pn; j++) {
                    int iy = y0[j] + conv_tap_y(g, ky), ix = x0[j] + conv_tap_x(g, kx);
                    out[j] = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w ? plane[(size_t)iy * g->w + ix] : 0.0f;
                }
    }
}

/* Rows k0 .. k0+kn (kn <= RM_TILE), pixel-major: strip[pp * RM_TILE + j]. */
static void im2col_taps(float *restrict strip /* pdim x RM_TILE */, size_t k0, size_t kn,
                        const float *restrict x /* cin x h x w */, const conv_geom *g)
{
    int ty[RM_TILE], tx[RM_TILE]; /* each tap's offset from the pixel's first row and column */
    const float *plane[RM_TILE];
    for (size_t j = 0; j < kn; j++) {
        size_t kk = k0 + j, taps = (size_t)g->kh * g->kw;
        plane[j] = x + kk / taps * g->h * g->w;
        ty[j] = conv_tap_y(g, (int)(kk % taps) / g->kw);
        tx[j] = conv_tap_x(g, (int)(kk % taps) % g->kw);
    }
    float *out = strip;
    for (int oy = 0; oy < g->ho; oy++)
        for (int ox = 0; ox < g->wo; ox++, out += RM_TILE)
            for (size_t j = 0; j < kn; j++) {
                int iy = oy * g->sh + ty[j], ix = ox * g->sw + tx[j];
                out[j] = iy >= 0 && iy < g->h && ix >= 0 && ix < g->w ? plane[j][(size_t)iy * g->w + ix] : 0.0f;
            }
}

/* y[co][pp] = b[co] + sum_kk w[co][kk] col[kk][pp] for one image, one pixel
 * strip at a time, every output channel reading the strip while it is hot.
 * A 1x1, stride-1, unpadded convolution's im2col matrix is the image itself
 * and is read in place (strip == NULL). */
static void conv2d_forward_kernel(float *restrict y /* cout x pdim */, float *restrict strip /* kdim x RM_TILE */,
                                  const float *restrict w /* cout x kdim */, const float *restrict b /* cout or NULL */,
                                  const float *restrict x /* cin x h x w */, const conv_geom *g)
{
    double acc[RM_TILE];
    for (size_t p0 = 0; p0 < g->pdim; p0 += RM_TILE) {
        size_t pn = g->pdim - p0 < RM_TILE ? g->pdim - p0 : RM_TILE;
        const float *cols = x + p0;
        size_t cols_stride = g->pdim;
        if (strip) {
            im2col_pixels(strip, p0, pn, x, g);
            cols = strip, cols_stride = RM_TILE;
        }
        for (int co = 0; co < g->cout; co++) {
            double bias = b ? (double)b[co] : 0.0;
            for (size_t j = 0; j < pn; j++) acc[j] = bias;
            rm_madd_tile(acc, pn, w + (size_t)co * g->kdim, 1, cols, cols_stride, g->kdim);
            float *yrow = y + (size_t)co * g->pdim + p0;
            for (size_t j = 0; j < pn; j++) yrow[j] = (float)acc[j];
        }
    }
}

static int conv2d_forward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    conv_geom g = conv_geom_of(call->cfg, x->shape, call->out->shape), gg = conv_group_geom(&g);
    void *ws, *owned;
    size_t ws_bytes = conv2d_workspace_bytes(call->cfg, &x->shape, 1, call->out->shape, 0);
    int rc = rm_layer_workspace(&ws, &owned, call, ws_bytes, "conv forward", e);
    if (rc) return rc;
    float *strip = ws; /* NULL when direct */
    size_t xsize = (size_t)g.cin * g.h * g.w, ysize = (size_t)g.cout * g.pdim, xg = (size_t)g.cig * g.h * g.w;
    const float *w = call->params->w.data, *b = call->params->b.data;
    for (int n = 0; n < g.n; n++)
        for (int gi = 0; gi < g.groups; gi++) {
            size_t co0 = (size_t)gi * g.cog;
            conv2d_forward_kernel(call->out->data + n * ysize + co0 * g.pdim, strip, w + co0 * g.kdim,
                                  b ? b + co0 : NULL, x->data + n * xsize + gi * xg, &gg);
        }
    free(owned);
    return RM_OK;
}

/* dx for one image: each im2col row's gradient dcol[kk][:] = sum_co w[co][kk]
 * dy[co][:] is formed in double and scattered straight back onto the image
 * (col2im), so the full dcol matrix never exists. */
static void conv2d_backward_data_kernel(double *restrict dx_acc /* cin x h x w */, double *restrict row /* pdim */,
                                        const float *restrict w /* cout x kdim */,
                                        const float *restrict dy /* cout x pdim */, const conv_geom *g)
{
    memset(dx_acc, 0, (size_t)g->cin * g->h * g->w * sizeof(double));
    for (int ci = 0; ci < g->cin; ci++)
        for (int ky = 0; ky < g->kh; ky++)
            for (int kx = 0; kx < g->kw; kx++) {
                size_t kk = ((size_t)ci * g->kh + ky) * g->kw + kx;
                memset(row, 0, g->pdim * sizeof(double));
                for (size_t p0 = 0; p0 < g->pdim; p0 += RM_TILE) {
                    size_t pn = g->pdim - p0 < RM_TILE ? g->pdim - p0 : RM_TILE;
                    rm_madd_tile(row + p0, pn, w + kk, g->kdim, dy + p0, g->pdim, (size_t)g->cout);
                }
                for (int oy = 0; oy < g->ho; oy++) {
                    int iy = oy * g->sh + conv_tap_y(g, ky);
                    if (iy < 0 || iy >= g->h) continue;
                    double *dxrow = dx_acc + ((size_t)ci * g->h + iy) * g->w;
                    for (int ox = 0; ox < g->wo; ox++) {
                        int ix = ox * g->sw + conv_tap_x(g, kx);
                        if (ix >= 0 && ix < g->w) dxrow[ix] += row[(size_t)oy * g->wo + ox];
                    }
                }
            }
}

/* dw_acc[co][kk] += sum_pp dy[co][pp] col[kk][pp] for one image, one strip
 * of taps at a time, every output channel reading the strip while it is hot. */
static void conv2d_backward_weight_kernel(double *restrict dw_acc /* cout x kdim */,
                                          float *restrict strip /* pdim x RM_TILE */,
                                          const float *restrict dy /* cout x pdim */,
                                          const float *restrict x /* cin x h x w */, const conv_geom *g)
{
    for (size_t k0 = 0; k0 < g->kdim; k0 += RM_TILE) {
        size_t kn = g->kdim - k0 < RM_TILE ? g->kdim - k0 : RM_TILE;
        im2col_taps(strip, k0, kn, x, g);
        for (int co = 0; co < g->cout; co++)
            rm_madd_tile(dw_acc + (size_t)co * g->kdim + k0, kn, dy + (size_t)co * g->pdim, 1, strip, RM_TILE, g->pdim);
    }
}

static int conv2d_backward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    conv_geom g = conv_geom_of(call->cfg, x->shape, dy->shape), gg = conv_group_geom(&g);
    int want_dw = prm->dw.data != NULL, want_db = prm->db.data != NULL, want_dx = dx && dx->data;
    size_t xsize = (size_t)g.cin * g.h * g.w, ysize = (size_t)g.cout * g.pdim, xg = (size_t)g.cig * g.h * g.w;

    void *ws, *owned;
    size_t ws_bytes = conv2d_workspace_bytes(call->cfg, &x->shape, 1, dy->shape, 1);
    int rc = rm_layer_workspace(&ws, &owned, call, ws_bytes, "conv backward", e);
    if (rc) return rc;
    double *dx_acc = ws, *row = dx_acc + xsize, *dw_acc = row + g.pdim;
    float *strip = (float *)(dw_acc + (size_t)g.cout * g.kdim);
    if (want_dw) memset(dw_acc, 0, (size_t)g.cout * g.kdim * sizeof(double));
    for (int n = 0; n < g.n; n++) {
        const float *dyn = dy->data + n * ysize;
        for (int gi = 0; gi < g.groups; gi++) {
            size_t co0 = (size_t)gi * g.cog;
            if (want_dx)
                conv2d_backward_data_kernel(dx_acc + gi * xg, row, prm->w.data + co0 * g.kdim, dyn + co0 * g.pdim, &gg);
            if (want_dw)
                conv2d_backward_weight_kernel(dw_acc + co0 * g.kdim, strip, dyn + co0 * g.pdim,
                                              x->data + n * xsize + gi * xg, &gg);
        }
        if (want_dx) {
            float *dxn = dx->data + n * xsize;
            for (size_t i = 0; i < xsize; i++) dxn[i] = (float)dx_acc[i];
        }
    }
    if (want_dw)
        for (size_t i = 0; i < (size_t)g.cout * g.kdim; i++) prm->dw.data[i] = (float)dw_acc[i];
    if (want_db) rm_cpu_bias_grad(prm->db.data, dy->data, g.n, g.cout, g.pdim, rm_call_threads(call, g.n * ysize));
    free(owned);
    return RM_OK;
}

const rm_layer_desc rm_conv2d_desc = {
    .kind = RM_LAYER_CONV2D,
    .name = "conv",
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = conv2d_infer,
    .param_shapes = conv2d_param_shapes,
    .flops = conv2d_flops,
    .init = conv2d_init,
    .forward_ref = conv2d_forward,
    .backward_ref = conv2d_backward,
    .workspace_bytes = conv2d_workspace_bytes,
    .kernels = rm_conv2d_kernels,
};
