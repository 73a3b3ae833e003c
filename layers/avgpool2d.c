/* 2-D average pooling (square window, stride, zero padding), PyTorch's
 * default count_include_pad semantics: every window is divided by k*k, padding
 * included. The map is linear with constant coefficients, so backward reads
 * nothing but the output gradient. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "layers.h"
#include "window.h"

static int avgpool_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    /* An overhanging window's divisor is a choice of its own (PyTorch's counts padding, not the overhang). */
    if (cfg->ceil_mode) return rm_errorf(e, RM_ERR_SHAPE, "avgpool: ceil_mode is not supported (maxpool has it)");
    return rm_window_infer(out, "avgpool", cfg, in, nin, e);
}

static double avgpool_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)in, (void)nin;
    (void)backward;
    /* Forward: k*k adds and one scale per output; backward: one scale per
     * output and one add per window element. */
    double outs = (double)rm_shape_numel(out);
    return outs * cfg->kernel.h * cfg->kernel.h + outs;
}

/* The window of output pixel (oy, ox), clipped to the plane: [y0, y1) x [x0, x1). */
static void avgpool_window(int *y0, int *y1, int *x0, int *x1, const rm_layer_config *cfg, int h, int w, int oy, int ox)
{
    int ys = oy * cfg->stride.h - cfg->pad.h, xs = ox * cfg->stride.h - cfg->pad.h;
    *y0 = ys < 0 ? 0 : ys;
    *x0 = xs < 0 ? 0 : xs;
    *y1 = ys + cfg->kernel.h < h ? ys + cfg->kernel.h : h;
    *x1 = xs + cfg->kernel.h < w ? xs + cfg->kernel.h : w;
}

static int avgpool_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    rm_shape s = call->in[0]->shape, o = call->out->shape;
    size_t in_plane = (size_t)s.h * s.w, out_plane = (size_t)o.h * o.w;
    double inv_area = 1.0 / ((double)call->cfg->kernel.h * call->cfg->kernel.h); /* padding counts */
    size_t planes = (size_t)s.n * s.c;
    int nt = rm_call_threads(call, planes * out_plane);
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t pl = 0; pl < planes; pl++) {
        const float *x = call->in[0]->data + pl * in_plane;
        float *y = call->out->data + pl * out_plane;
        for (int oy = 0; oy < o.h; oy++)
            for (int ox = 0; ox < o.w; ox++) {
                int y0, y1, x0, x1;
                avgpool_window(&y0, &y1, &x0, &x1, call->cfg, s.h, s.w, oy, ox);
                double sum = 0.0;
                for (int iy = y0; iy < y1; iy++)
                    for (int ix = x0; ix < x1; ix++) sum += x[(size_t)iy * s.w + ix];
                y[(size_t)oy * o.w + ox] = (float)(sum * inv_area);
            }
    }
    return RM_OK;
}

/* Backward only: one input plane of double accumulators. */
static size_t avgpool_workspace_bytes(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                      int backward)
{
    (void)cfg, (void)nin, (void)out;
    return backward ? (size_t)in[0].h * (size_t)in[0].w * sizeof(double) : 0;
}

static int avgpool_backward(const rm_layer_call *call, rm_err *e)
{
    rm_tensor *dx = call->din[0];
    if (!dx || !dx->data) return RM_OK;
    rm_shape s = dx->shape, o = call->dout->shape;
    size_t in_plane = (size_t)s.h * s.w, out_plane = (size_t)o.h * o.w;
    double inv_area = 1.0 / ((double)call->cfg->kernel.h * call->cfg->kernel.h);
    /* Overlapping windows (stride < kernel) add several gradients into one element. */
    void *ws, *owned;
    int rc = rm_layer_workspace(&ws, &owned, call, in_plane * sizeof(double), "avgpool backward", e);
    if (rc) return rc;
    double *acc = ws;
    for (size_t pl = 0; pl < (size_t)s.n * s.c; pl++) {
        const float *dy = call->dout->data + pl * out_plane;
        memset(acc, 0, in_plane * sizeof(double));
        for (int oy = 0; oy < o.h; oy++)
            for (int ox = 0; ox < o.w; ox++) {
                int y0, y1, x0, x1;
                avgpool_window(&y0, &y1, &x0, &x1, call->cfg, s.h, s.w, oy, ox);
                double g = (double)dy[(size_t)oy * o.w + ox] * inv_area;
                for (int iy = y0; iy < y1; iy++)
                    for (int ix = x0; ix < x1; ix++) acc[(size_t)iy * s.w + ix] += g;
            }
        float *dxp = dx->data + pl * in_plane;
        for (size_t i = 0; i < in_plane; i++) dxp[i] = (float)acc[i];
    }
    free(owned);
    return RM_OK;
}

const rm_layer_desc rm_avgpool2d_desc = {
    .kind = RM_LAYER_AVGPOOL2D,
    .name = "avgpool",
    .backward_reads = RM_READS_NOTHING,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = avgpool_infer,
    .flops = avgpool_flops,
    .forward_ref = avgpool_forward,
    .backward_ref = avgpool_backward,
    .workspace_bytes = avgpool_workspace_bytes,
    .kernels = rm_avgpool2d_kernels,
};
