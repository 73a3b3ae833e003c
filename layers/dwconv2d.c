/* Depthwise 2-D convolution (MobileNet's): one k x k filter per input
 * channel, channel multiplier 1, so the output has the input's channels;
 * square kernel, stride, zero padding, optional bias. The weights are
 * C x 1 x k x k, as PyTorch's Conv2d(C, C, k, groups=C) stores them. The CPU
 * reference and the oracle for the CUDA kernels (dwconv2d.cu), which sum the
 * same terms in the same order per output element.
 *
 * Each output reads only k*k inputs of its own channel, so the kernels are
 * direct loops with no im2col and no workspace: the data gradient gathers
 * (one input element at a time, over the taps that reached it) rather than
 * scatters, and every sum accumulates in double in an order fixed by the
 * code alone, so a recomputed forward or backward is bit-identical. The
 * CPU backend's fast library sums in float, a row at a time, on several
 * threads (cpu/dwconv2d_fast.c). */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "conv_taps.h"
#include "cpu_kernels.h"
#include "dwconv2d.h"
#include "init.h"
#include "layers.h"
#include "window.h"

static int dwconv2d_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    char buf[64];
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "dwconv: takes exactly 1 input, got %d", nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "dwconv: empty input %s", rm_shape_str(x, buf, sizeof buf));
    int rc = rm_window_square("dwconv", cfg, e);
    if (rc) return rc;
    if (cfg->kernel.h < 1) return rm_errorf(e, RM_ERR_SHAPE, "dwconv: kernel must be >= 1, got %d", cfg->kernel.h);
    if (cfg->stride.h < 1) return rm_errorf(e, RM_ERR_SHAPE, "dwconv: stride must be >= 1, got %d", cfg->stride.h);
    if (cfg->pad.h < 0) return rm_errorf(e, RM_ERR_SHAPE, "dwconv: pad must be >= 0, got %d", cfg->pad.h);
    long long ph = (long long)x.h + 2LL * cfg->pad.h, pw = (long long)x.w + 2LL * cfg->pad.h;
    if (ph < cfg->kernel.h || pw < cfg->kernel.h)
        return rm_errorf(e, RM_ERR_SHAPE,
                         "dwconv: kernel %d is larger than the padded input %lldx%lld (input %s, pad %d)",
                         cfg->kernel.h, ph, pw, rm_shape_str(x, buf, sizeof buf), cfg->pad.h);
    long long ho = (ph - cfg->kernel.h) / cfg->stride.h + 1, wo = (pw - cfg->kernel.h) / cfg->stride.h + 1;
    if (ho > INT_MAX || wo > INT_MAX)
        return rm_errorf(e, RM_ERR_SHAPE, "dwconv: output %lldx%lld is too large (pad %d)", ho, wo, cfg->pad.h);
    *out = rm_shape_make(x.n, x.c, (int)ho, (int)wo);
    return RM_OK;
}

static void dwconv2d_param_shapes(rm_shape *w, rm_shape *b, const rm_layer_config *cfg, const rm_shape *in, int nin)
{
    (void)nin;
    *w = rm_shape_make(in[0].c, 1, cfg->kernel.h, cfg->kernel.h);
    *b = cfg->bias ? rm_shape_make(in[0].c, 1, 1, 1) : rm_shape_make(0, 0, 0, 0);
}

static double dwconv2d_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)in, (void)nin;
    double outs = (double)out.n * out.c * out.h * out.w;        /* N*C*Ho*Wo */
    double macs = outs * (double)cfg->kernel.h * cfg->kernel.h; /* one product per tap of the channel's filter */
    double bias = cfg->bias ? outs : 0.0;
    /* backward: dx and dW each cost what the forward product costs, db one add per output. */
    return backward ? 4.0 * macs + bias : 2.0 * macs + bias;
}

static void dwconv2d_init(rm_layer_params *p, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_rng *rng)
{
    (void)nin;
    /* PyTorch's fans for groups = C: a filter sees one channel (fan-in k*k),
     * and the weight's C x 1 x k x k makes fan-out C*k*k. */
    const double taps = (double)cfg->kernel.h * cfg->kernel.h;
    rm_init_weights(p, cfg, taps, in[0].c * taps, rng);
}

/* y[oy][ox] = b + sum_{ky,kx} w[ky][kx] x[oy*s-p+ky][ox*s-p+kx] for one plane
 * (one image, one channel). */
static void dwconv2d_forward_kernel(float *restrict y /* ho x wo */, const float *restrict w /* k x k */, double b,
                                    const float *restrict x /* h x w */, const dw_geom *g)
{
    for (int oy = 0; oy < g->ho; oy++)
        for (int ox = 0; ox < g->wo; ox++) {
            int y0 = oy * g->s - g->p, x0 = ox * g->s - g->p;
            double acc = b;
            for (int ky = 0; ky < g->k; ky++) {
                int iy = y0 + ky;
                if (iy < 0 || iy >= g->h) continue;
                for (int kx = 0; kx < g->k; kx++) {
                    int ix = x0 + kx;
                    if (ix < 0 || ix >= g->w) continue;
                    acc += (double)w[ky * g->k + kx] * (double)x[(size_t)iy * g->w + ix];
                }
            }
            y[(size_t)oy * g->wo + ox] = (float)acc;
        }
}

static int dwconv2d_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_tensor *x = call->in[0];
    dw_geom g = dw_geom_of(call->cfg, x->shape, call->out->shape);
    const float *w = call->params->w.data, *b = call->params->b.data;
    size_t xplane = (size_t)g.h * g.w, yplane = (size_t)g.ho * g.wo, kk = (size_t)g.k * g.k;
    for (int n = 0; n < g.n; n++)
        for (int c = 0; c < g.c; c++) {
            size_t plane = (size_t)n * g.c + c;
            dwconv2d_forward_kernel(call->out->data + plane * yplane, w + c * kk, b ? (double)b[c] : 0.0,
                                    x->data + plane * xplane, &g);
        }
    return RM_OK;
}

/* dx[iy][ix] = sum over the taps (ky, kx) that reach it of w[ky][kx]
 * dy[oy][ox], for one plane: a gather, one input element at a time. */
static void dwconv2d_backward_data_kernel(float *restrict dx /* h x w */, const float *restrict w /* k x k */,
                                          const float *restrict dy /* ho x wo */, const dw_geom *g)
{
    for (int iy = 0; iy < g->h; iy++)
        for (int ix = 0; ix < g->w; ix++) {
            double acc = 0.0;
            for (int ky = 0; ky < g->k; ky++) {
                int oy = rm_conv_tap_output(iy, ky, g->p, g->s, g->ho);
                if (oy < 0) continue;
                for (int kx = 0; kx < g->k; kx++) {
                    int ox = rm_conv_tap_output(ix, kx, g->p, g->s, g->wo);
                    if (ox < 0) continue;
                    acc += (double)w[ky * g->k + kx] * (double)dy[(size_t)oy * g->wo + ox];
                }
            }
            dx[(size_t)iy * g->w + ix] = (float)acc;
        }
}

/* dw[c][ky][kx] = sum over images and output pixels of dy x under that tap,
 * in the order n, oy, ox (the CUDA kernel's threads split the same terms). */
static double dwconv2d_backward_weight_tap(const float *dy /* n x c x ho x wo */, const float *x /* n x c x h x w */,
                                           int c, int ky, int kx, const dw_geom *g)
{
    size_t xplane = (size_t)g->h * g->w, yplane = (size_t)g->ho * g->wo;
    double acc = 0.0;
    for (int n = 0; n < g->n; n++) {
        const float *xp = x + ((size_t)n * g->c + c) * xplane, *dyp = dy + ((size_t)n * g->c + c) * yplane;
        for (int oy = 0; oy < g->ho; oy++) {
            int iy = oy * g->s - g->p + ky;
            if (iy < 0 || iy >= g->h) continue;
            for (int ox = 0; ox < g->wo; ox++) {
                int ix = ox * g->s - g->p + kx;
                if (ix < 0 || ix >= g->w) continue;
                acc += (double)dyp[(size_t)oy * g->wo + ox] * (double)xp[(size_t)iy * g->w + ix];
            }
        }
    }
    return acc;
}

static int dwconv2d_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    dw_geom g = dw_geom_of(call->cfg, x->shape, dy->shape);
    size_t xplane = (size_t)g.h * g.w, yplane = (size_t)g.ho * g.wo, kk = (size_t)g.k * g.k;
    if (dx && dx->data)
        for (int n = 0; n < g.n; n++)
            for (int c = 0; c < g.c; c++) {
                size_t plane = (size_t)n * g.c + c;
                dwconv2d_backward_data_kernel(dx->data + plane * xplane, prm->w.data + c * kk,
                                              dy->data + plane * yplane, &g);
            }
    if (prm->dw.data)
        for (int c = 0; c < g.c; c++)
            for (int ky = 0; ky < g.k; ky++)
                for (int kx = 0; kx < g.k; kx++)
                    prm->dw.data[c * kk + (size_t)ky * g.k + kx] =
                        (float)dwconv2d_backward_weight_tap(dy->data, x->data, c, ky, kx, &g);
    if (prm->db.data)
        rm_cpu_bias_grad(prm->db.data, dy->data, g.n, g.c, yplane, rm_call_threads(call, (size_t)g.n * g.c * yplane));
    return RM_OK;
}

const rm_layer_desc rm_dwconv2d_desc = {
    .kind = RM_LAYER_DWCONV2D,
    .name = "dwconv",
    /* dW needs the input; dx needs only w and dy; the output is never read. */
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = dwconv2d_infer,
    .param_shapes = dwconv2d_param_shapes,
    .flops = dwconv2d_flops,
    .init = dwconv2d_init,
    .forward_ref = dwconv2d_forward,
    .backward_ref = dwconv2d_backward,
    .workspace_bytes = NULL, /* direct loops: no scratch on the CPU or the GPU */
    .kernels = rm_dwconv2d_kernels,
};
