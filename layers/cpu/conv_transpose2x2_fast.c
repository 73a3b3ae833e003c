/* conv_transpose2x2 in the CPU backend's fast kernel library: the
 * per-pixel product through single-precision BLIS (rm_cpu_sgemm). The
 * reference kernels, the layer's definition, are in ../conv_transpose2x2.c. */
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "conv_transpose2x2.h"
#include "cpu_blas.h"
#include "layer_cpu.h"

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
    int rc =
        rm_layer_workspace(&ws, &owned, call, convt_fast_workspace(call->be, call->cfg, &x->shape, 1, dy->shape, 1),
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

rm_layer_kernels rm_conv_transpose2x2_cpu_kernels(int lib)
{
    rm_layer_kernels k = {NULL, NULL, NULL}; /* the reference (conv_transpose2x2.c) */
    if (lib == RM_CPU_KERNELS_FAST)
        k = (rm_layer_kernels){convt_fast_forward, convt_fast_backward, convt_fast_workspace};
    return k;
}
