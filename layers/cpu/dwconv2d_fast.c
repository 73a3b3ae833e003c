/* dwconv in the CPU backend's fast kernel library: the reference's sums
 * (../dwconv2d.c) in float, a row at a time, the planes (one image, one
 * channel) split between threads. Each output row gathers k x k shifted
 * input rows (a multiply-add over a contiguous run of outputs, which GCC
 * vectorises for stride 1), so nothing is checked per tap but the run's
 * ends. Every value is summed by one thread in an order fixed by the code,
 * so the bits do not depend on the thread count. */
#include "backend_cpu.h"
#include "cpu_kernels.h"
#include "dwconv2d.h"
#include "layer_cpu.h"

/* The outputs lo..hi-1 of a row whose tap k reads inside the input row:
 * 0 <= o s - p + k < len. */
static void tap_run(int *lo, int *hi, int k, const dw_geom *g, int len, int outs)
{
    int first = g->p - k; /* o s >= first */
    *lo = first <= 0 ? 0 : (first + g->s - 1) / g->s;
    int last = len - 1 + g->p - k; /* o s <= last */
    *hi = last < 0 ? 0 : last / g->s + 1;
    if (*hi > outs) *hi = outs;
    if (*lo > *hi) *lo = *hi;
}

/* y = b + the k x k taps of x, one plane. */
static void forward_plane(float *restrict y, const float *restrict w, float b, const float *restrict x,
                          const dw_geom *g)
{
    for (int oy = 0; oy < g->ho; oy++) {
        float *restrict yr = y + (size_t)oy * g->wo;
        for (int ox = 0; ox < g->wo; ox++) yr[ox] = b;
        for (int ky = 0; ky < g->k; ky++) {
            int iy = oy * g->s - g->p + ky;
            if (iy < 0 || iy >= g->h) continue;
            const float *restrict xr = x + (size_t)iy * g->w;
            for (int kx = 0; kx < g->k; kx++) {
                int lo, hi, off = kx - g->p;
                float wv = w[ky * g->k + kx];
                tap_run(&lo, &hi, kx, g, g->w, g->wo);
                if (g->s == 1)
                    for (int ox = lo; ox < hi; ox++) yr[ox] += wv * xr[ox + off];
                else
                    for (int ox = lo; ox < hi; ox++) yr[ox] += wv * xr[ox * g->s + off];
            }
        }
    }
}

/* dx = the taps of dy scattered back, one plane: each row of dy adds its
 * k x k weighted copies to the input rows it read. */
static void backward_data_plane(float *restrict dx, const float *restrict w, const float *restrict dy, const dw_geom *g)
{
    for (size_t i = 0; i < (size_t)g->h * g->w; i++) dx[i] = 0.0f;
    for (int oy = 0; oy < g->ho; oy++) {
        const float *restrict dyr = dy + (size_t)oy * g->wo;
        for (int ky = 0; ky < g->k; ky++) {
            int iy = oy * g->s - g->p + ky;
            if (iy < 0 || iy >= g->h) continue;
            float *restrict dxr = dx + (size_t)iy * g->w;
            for (int kx = 0; kx < g->k; kx++) {
                int lo, hi, off = kx - g->p;
                float wv = w[ky * g->k + kx];
                tap_run(&lo, &hi, kx, g, g->w, g->wo);
                if (g->s == 1)
                    for (int ox = lo; ox < hi; ox++) dxr[ox + off] += wv * dyr[ox];
                else
                    for (int ox = lo; ox < hi; ox++) dxr[ox * g->s + off] += wv * dyr[ox];
            }
        }
    }
}

/* The float dot product of dy's run lo..hi-1 with the input under tap off,
 * in 8 lanes (a fixed order, vectorised) then their sum. */
static float tap_dot(const float *restrict dyr, const float *restrict xr, int lo, int hi, int s, int off)
{
    float lane[8] = {0};
    int ox = lo;
    if (s == 1)
        for (; ox + 8 <= hi; ox += 8)
            for (int j = 0; j < 8; j++) lane[j] += dyr[ox + j] * xr[ox + j + off];
    for (; ox < hi; ox++) lane[0] += dyr[ox] * xr[ox * s + off];
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

/* dw of channel c: per tap, each row's float dot added in double; the taps
 * in chunks whose sums fit on the stack (one chunk up to 11 x 11). */
static void backward_weight_channel(float *dw, const float *dy, const float *x, int c, const dw_geom *g)
{
    enum { CHUNK = 121 };
    const int taps = g->k * g->k;
    const size_t xplane = (size_t)g->h * g->w, yplane = (size_t)g->ho * g->wo;
    for (int t0 = 0; t0 < taps; t0 += CHUNK) {
        double acc[CHUNK] = {0};
        for (int n = 0; n < g->n; n++) {
            const float *xp = x + ((size_t)n * g->c + c) * xplane, *dyp = dy + ((size_t)n * g->c + c) * yplane;
            for (int oy = 0; oy < g->ho; oy++)
                for (int ky = 0; ky < g->k; ky++) {
                    int iy = oy * g->s - g->p + ky;
                    if (iy < 0 || iy >= g->h) continue;
                    for (int kx = 0; kx < g->k; kx++) {
                        int t = ky * g->k + kx - t0, lo, hi;
                        if (t < 0 || t >= CHUNK) continue;
                        tap_run(&lo, &hi, kx, g, g->w, g->wo);
                        acc[t] += tap_dot(dyp + (size_t)oy * g->wo, xp + (size_t)iy * g->w, lo, hi, g->s, kx - g->p);
                    }
                }
        }
        for (int t = 0; t < CHUNK && t0 + t < taps; t++) dw[t0 + t] = (float)acc[t];
    }
}

static int dwconv2d_fast_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_tensor *x = call->in[0];
    dw_geom g = dw_geom_of(call->cfg, x->shape, call->out->shape);
    const float *w = call->params->w.data, *b = call->params->b.data;
    const size_t xplane = (size_t)g.h * g.w, yplane = (size_t)g.ho * g.wo, kk = (size_t)g.k * g.k;
    const int planes = g.n * g.c, nt = rm_call_threads(call, (size_t)planes * yplane * kk);
    RM_CPU_PARALLEL_FOR(nt)
    for (int pl = 0; pl < planes; pl++) {
        int c = pl % g.c;
        forward_plane(call->out->data + (size_t)pl * yplane, w + c * kk, b ? b[c] : 0.0f, x->data + (size_t)pl * xplane,
                      &g);
    }
    return RM_OK;
}

static int dwconv2d_fast_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    dw_geom g = dw_geom_of(call->cfg, x->shape, dy->shape);
    const size_t xplane = (size_t)g.h * g.w, yplane = (size_t)g.ho * g.wo, kk = (size_t)g.k * g.k;
    const int planes = g.n * g.c, nt = rm_call_threads(call, (size_t)planes * yplane * kk);
    if (dx && dx->data) {
        RM_CPU_PARALLEL_FOR(nt)
        for (int pl = 0; pl < planes; pl++)
            backward_data_plane(dx->data + (size_t)pl * xplane, prm->w.data + (pl % g.c) * kk,
                                dy->data + (size_t)pl * yplane, &g);
    }
    if (prm->dw.data) {
        RM_CPU_PARALLEL_FOR(nt)
        for (int c = 0; c < g.c; c++) backward_weight_channel(prm->dw.data + c * kk, dy->data, x->data, c, &g);
    }
    if (prm->db.data)
        rm_cpu_bias_grad(prm->db.data, dy->data, g.n, g.c, yplane, rm_call_threads(call, (size_t)planes * yplane));
    return RM_OK;
}

rm_layer_kernels rm_dwconv2d_cpu_kernels(int lib)
{
    rm_layer_kernels k = {NULL, NULL, NULL}; /* the reference (dwconv2d.c) */
    if (lib == RM_CPU_KERNELS_FAST) k = (rm_layer_kernels){dwconv2d_fast_forward, dwconv2d_fast_backward, NULL};
    return k;
}
