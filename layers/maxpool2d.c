/* 2-D max pooling (square window, stride, padding that acts as -infinity).
 * Backward declares RM_READS_INPUTS only: it recomputes each window's argmax
 * from x (ties go to the first element in scan order, as in the forward), so
 * no index tensor has to live between forward and backward. */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "layers.h"
#include "window.h"

static int maxpool_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    return rm_window_infer(out, "maxpool", cfg, in, nin, e);
}

static double maxpool_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)in, (void)nin;
    /* One comparison per window element; backward repeats the search and adds once per output. */
    double outs = (double)rm_shape_numel(out), cmp = outs * cfg->kernel.h * cfg->kernel.h;
    return backward ? cmp + outs : cmp;
}

/* Index (iy * w + ix) of the maximum of output pixel (oy, ox)'s window in one
 * plane. Strict comparison keeps the first of equal values; a NaN wins and
 * stays, so a diverging network shows up in the output instead of vanishing.
 * Forward and backward both call this, so they agree on every window. */
static size_t maxpool_argmax(const float *plane /* h x w */, int h, int w, const rm_layer_config *cfg, int oy, int ox)
{
    int y0 = oy * cfg->stride.h - cfg->pad.h, x0 = ox * cfg->stride.h - cfg->pad.h;
    int y1 = y0 + cfg->kernel.h < h ? y0 + cfg->kernel.h : h, x1 = x0 + cfg->kernel.h < w ? x0 + cfg->kernel.h : w;
    if (y0 < 0) y0 = 0;
    if (x0 < 0) x0 = 0;
    size_t best = (size_t)y0 * w + x0; /* infer guarantees the window holds a real element */
    for (int iy = y0; iy < y1; iy++)
        for (int ix = x0; ix < x1; ix++) {
            size_t i = (size_t)iy * w + ix;
            float v = plane[i], b = plane[best];
            if (v > b || (isnan(v) && !isnan(b))) best = i;
        }
    return best;
}

/* Outputs a row kernel call handles at once (stack arrays). */
#define MAXPOOL_RUN 64

/* Outputs (oy, ox0 + j), j < n <= MAXPOOL_RUN, of one plane: val[j] =
 * x[maxpool_argmax] and, when idx is not NULL, idx[j] = maxpool_argmax.
 * Windows inside the plane's columns are done together, each output's
 * maximum in its own lane (independent chains, so no add latency and no
 * branch on the data: the one-window search was a coin-toss branch per
 * element and took 3.6 ns each); scanning the window in the same order with
 * a strict > keeps the first of equal values, and its index. A NaN, or a window cut by the
 * plane's left or right edge, goes to maxpool_argmax. */
static void maxpool_run(float *val, size_t *idx, const float *plane, int h, int w, const rm_layer_config *cfg, int oy,
                        int ox0, int n)
{
    int k = cfg->kernel.h, st = cfg->stride.h, p = cfg->pad.h;
    int y0 = oy * st - p, y1 = y0 + k < h ? y0 + k : h;
    if (y0 < 0) y0 = 0;
    float mx[MAXPOOL_RUN];
    unsigned char nan[MAXPOOL_RUN];
    for (int j = 0; j < n; j++) mx[j] = -INFINITY, nan[j] = 0;
    /* Outputs j in [lo, hi) have every window column inside the plane. */
    int lo = 0, hi = n;
    while (lo < n && (ox0 + lo) * st - p < 0) lo++;
    while (hi > lo && (ox0 + hi - 1) * st - p + k > w) hi--;
    size_t at[MAXPOOL_RUN];
    for (int j = lo; j < hi; j++) at[j] = (size_t)y0 * w + (size_t)((ox0 + j) * st - p);
    for (int iy = y0; iy < y1; iy++)
        for (int kx = 0; kx < k; kx++) {
            /* Column of output lo's window, then every st-th. */
            size_t base = (size_t)iy * w + (size_t)((ox0 + lo) * st - p + kx);
            const float *r = plane + base;
            if (idx)
                for (int j = lo; j < hi; j++) {
                    float v = r[(size_t)(j - lo) * st];
                    size_t take = (size_t)0 - (size_t)(v > mx[j]); /* a mask: GCC turns "?:" into a branch */
                    nan[j] |= v != v;
                    mx[j] = v > mx[j] ? v : mx[j];
                    at[j] = (at[j] & ~take) | ((base + (size_t)(j - lo) * st) & take);
                }
            else
                for (int j = lo; j < hi; j++) {
                    float v = r[(size_t)(j - lo) * st];
                    nan[j] |= v != v;
                    mx[j] = v > mx[j] ? v : mx[j];
                }
        }
    for (int j = 0; j < n; j++) {
        if (j >= lo && j < hi && !nan[j]) {
            val[j] = mx[j];
            if (idx) idx[j] = at[j];
        } else {
            size_t i = maxpool_argmax(plane, h, w, cfg, oy, ox0 + j);
            val[j] = plane[i];
            if (idx) idx[j] = i;
        }
    }
}

static int maxpool_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    rm_shape s = call->in[0]->shape, o = call->out->shape;
    size_t in_plane = (size_t)s.h * s.w, out_plane = (size_t)o.h * o.w, planes = (size_t)s.n * s.c;
    int nt = rm_call_threads(call, planes * out_plane);
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t pl = 0; pl < planes; pl++) {
        const float *x = call->in[0]->data + pl * in_plane;
        float *y = call->out->data + pl * out_plane;
        for (int oy = 0; oy < o.h; oy++)
            for (int ox = 0; ox < o.w; ox += MAXPOOL_RUN)
                maxpool_run(y + (size_t)oy * o.w + ox, NULL, x, s.h, s.w, call->cfg, oy, ox,
                            o.w - ox < MAXPOOL_RUN ? o.w - ox : MAXPOOL_RUN);
    }
    return RM_OK;
}

/* Planes a backward call works on at once, each with its own accumulators:
 * as many threads as can help, for a workspace that depends on the shapes
 * alone, never on the thread count. */
#define MAXPOOL_SLOTS 8

static size_t maxpool_slots(rm_shape in)
{
    return (size_t)in.n * in.c < MAXPOOL_SLOTS ? (size_t)in.n * in.c : MAXPOOL_SLOTS;
}

/* Backward only: an input plane of double accumulators per slot. */
static size_t maxpool_workspace_bytes(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                      int backward)
{
    (void)cfg, (void)nin, (void)out;
    return backward ? maxpool_slots(in[0]) * (size_t)in[0].h * (size_t)in[0].w * sizeof(double) : 0;
}

/* The gradient of one plane through the windows' maxima, summed in double
 * in window order (overlapping windows, stride < kernel, can route several
 * gradients to one element). */
static void maxpool_backward_plane(float *dx /* h x w */, double *acc /* h x w */, const float *x /* h x w */,
                                   const float *dy /* ho x wo */, rm_shape s, rm_shape o, const rm_layer_config *cfg)
{
    size_t in_plane = (size_t)s.h * s.w;
    memset(acc, 0, in_plane * sizeof(double));
    float val[MAXPOOL_RUN];
    size_t at[MAXPOOL_RUN];
    for (int oy = 0; oy < o.h; oy++)
        for (int ox = 0; ox < o.w; ox += MAXPOOL_RUN) {
            int n = o.w - ox < MAXPOOL_RUN ? o.w - ox : MAXPOOL_RUN;
            maxpool_run(val, at, x, s.h, s.w, cfg, oy, ox, n);
            for (int j = 0; j < n; j++) acc[at[j]] += dy[(size_t)oy * o.w + ox + j];
        }
    for (size_t i = 0; i < in_plane; i++) dx[i] = (float)acc[i];
}

static int maxpool_backward(const rm_layer_call *call, rm_err *e)
{
    rm_tensor *dx = call->din[0];
    if (!dx || !dx->data) return RM_OK;
    rm_shape s = call->in[0]->shape, o = call->dout->shape;
    size_t in_plane = (size_t)s.h * s.w, out_plane = (size_t)o.h * o.w, planes = (size_t)s.n * s.c;
    size_t slots = maxpool_slots(s);
    void *ws, *owned;
    int rc =
        rm_layer_workspace(&ws, &owned, call, maxpool_workspace_bytes(call->cfg, &s, 1, o, 1), "maxpool backward", e);
    if (rc) return rc;
    double *acc = ws;
    int nt = rm_call_threads(call, planes * in_plane);
    if ((size_t)nt > slots) nt = (int)slots;
    /* slots planes at a time, plane g0 + j in slot j. */
    for (size_t g0 = 0; g0 < planes; g0 += slots) {
        size_t count = planes - g0 < slots ? planes - g0 : slots;
        RM_CPU_PARALLEL_FOR(nt)
        for (size_t j = 0; j < count; j++) {
            size_t pl = g0 + j;
            maxpool_backward_plane(dx->data + pl * in_plane, acc + j * in_plane, call->in[0]->data + pl * in_plane,
                                   call->dout->data + pl * out_plane, s, o, call->cfg);
        }
    }
    free(owned);
    return RM_OK;
}

const rm_layer_desc rm_maxpool2d_desc = {
    .kind = RM_LAYER_MAXPOOL2D,
    .name = "maxpool",
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = maxpool_infer,
    .flops = maxpool_flops,
    .forward_ref = maxpool_forward,
    .backward_ref = maxpool_backward,
    .workspace_bytes = maxpool_workspace_bytes,
    .kernels = rm_maxpool2d_kernels,
};
