/* conv2d in the CPU backend's fast kernel library: im2col / col2im around
 * single-precision BLIS products (rm_cpu_sgemm) on the backend's threads.
 * The reference kernels, the layer's definition, are in ../conv2d.c. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "conv2d.h"
#include "cpu_blas.h"
#include "layer_cpu.h"

/* The im2col matrix is built (and its gradient scattered back) a block at a
 * time, the block's matrices no larger than the reference kernels' own
 * workspace for the layer (the larger of its directions: the backward's
 * double accumulators, at least two columns of the matrix) nor than 16 MiB.
 * So the fast library never needs more workspace than the reference, and
 * the fixed memory every command plans with is the same whichever library
 * trains.
 *
 * A block is either part of one image's pixels (a large image: in
 * ResNet-18 at 224 x 224 the stem and layer1 take 4 blocks per image,
 * layer2 2) or several whole images side by side: a product over one
 * image's 7 x 7 or 14 x 14 pixels is too narrow for the BLAS to run at
 * speed (ResNet's layer4 products ran at 60% of layer1's), so images whose
 * columns number fewer than CONV_WIDE share one product, their outputs
 * going through a cout-row buffer after the columns. */
#define CONV_COL_BLOCK_MAX ((size_t)16 << 20)
#define CONV_WIDE 2048

typedef struct conv_blocking {
    size_t pixels; /* output pixels per block of one image (all of them when imgs > 1) */
    int imgs;      /* whole images per block; 1: blocks of pixels, no output buffer */
} conv_blocking;

static conv_blocking conv_fast_blocking(const conv_geom *g)
{
    size_t fwd = conv_ref_workspace(g, 0), bwd = conv_ref_workspace(g, 1), cap = fwd > bwd ? fwd : bwd;
    if (cap > CONV_COL_BLOCK_MAX) cap = CONV_COL_BLOCK_MAX;
    size_t fit = cap / (g->krows * sizeof(float));
    if (fit < 1) fit = 1;
    conv_blocking b = {g->pdim < fit ? g->pdim : fit, 1};
    if (g->pdim < CONV_WIDE && g->n > 1) {
        size_t by_width = (CONV_WIDE + g->pdim - 1) / g->pdim,
               by_room = cap / (((size_t)g->krows + (size_t)g->cout) * g->pdim * sizeof(float));
        size_t imgs = by_width < by_room ? by_width : by_room;
        if (imgs > (size_t)g->n) imgs = (size_t)g->n;
        if (imgs > 1) b.pixels = g->pdim, b.imgs = (int)imgs;
    }
    return b;
}

/* Blocks of pixels: one of im2col columns (none when direct: the image is
 * the matrix). Blocks of images: their columns and their outputs. */
static size_t conv2d_fast_workspace(const rm_backend *be, const rm_layer_config *cfg, const rm_shape *in, int nin,
                                    rm_shape out, int backward)
{
    (void)be, (void)nin, (void)backward;
    conv_geom g = conv_geom_of(cfg, in[0], out);
    conv_blocking b = conv_fast_blocking(&g);
    if (b.imgs > 1) return ((size_t)g.krows + (size_t)g.cout) * g.pdim * (size_t)b.imgs * sizeof(float);
    return conv_direct(&g) ? 0 : g.krows * b.pixels * sizeof(float);
}

/* The output columns [lo, hi) of a row whose tap, tx columns from the
 * pixel's (conv_tap_x), reads inside the input (ix = ox * sw + tx in [0, w)). */
static void conv_valid_cols(int *lo, int *hi, int tx, const conv_geom *g)
{
    int a = -tx; /* ox * sw >= a */
    *lo = a > 0 ? (a + g->sw - 1) / g->sw : 0;
    int b = g->w - 1 - tx; /* ox * sw <= b */
    *hi = b < 0 ? 0 : b / g->sw + 1;
    if (*hi > g->wo) *hi = g->wo;
    if (*lo > *hi) *lo = *hi;
}

/* The run of output row oy inside the pixels [p, end): columns [ox0, ox1). */
static void conv_row_run(int *oy, int *ox0, int *ox1, size_t p, size_t end, const conv_geom *g)
{
    size_t wo = (size_t)g->wo, row = p / wo, row_end = (row + 1) * wo < end ? (row + 1) * wo : end;
    *oy = (int)row, *ox0 = (int)(p - row * wo), *ox1 = (int)(row_end - row * wo);
}

/* A stride-1 convolution whose output is the input's size (padding
 * (k - 1) / 2, as every 3x3 of VGG, ResNet and U-Net): tap (ky, kx) of
 * output pixel q reads input element q + ty * w + tx (the tap's offsets,
 * conv_tap_y/x), one constant offset, so a tap's row of the im2col matrix
 * is one copy of the input plane, then zeros where the tap falls in the
 * padding. */
static int conv_same_size(const conv_geom *g)
{
    return g->sh == 1 && g->sw == 1 && g->ho == g->h && g->wo == g->w;
}

/* Tap (ky, kx) of a same-size convolution over the pixels [p0, end): the
 * offset from a pixel to the input element it reads, and the pixels [a, b)
 * whose element lies in the plane. */
static void conv_same_range(ptrdiff_t *off, size_t *a, size_t *b, const conv_geom *g, int ky, int kx, size_t p0,
                            size_t end)
{
    size_t plane = (size_t)g->h * g->w;
    *off = (ptrdiff_t)conv_tap_y(g, ky) * (ptrdiff_t)g->w + conv_tap_x(g, kx);
    /* A tap reaching a whole plane or more away (padding or dilation at least the
     * input's height) reads nothing: no pixel's element is in the plane. */
    *a = *off < 0 ? (size_t) - *off : 0;
    *b = *off > 0 ? ((size_t)*off >= plane ? 0 : plane - (size_t)*off) : plane;
    if (*a < p0) *a = p0;
    if (*a > end) *a = end; /* a block that ends inside the top padding */
    if (*b > end) *b = end;
    if (*b < *a) *b = *a;
}

/* o[q - p0] = 0 for the pixels q in [a, b) whose tap column kx falls outside
 * the input row: their offset element is a neighbouring row's (or, in the
 * first and last rows, lies where the padding is above and below). */
static void conv_same_zero_cols(float *o, size_t p0, size_t a, size_t b, int kx, const conv_geom *g)
{
    size_t w = (size_t)g->w;
    int lo, hi;
    conv_valid_cols(&lo, &hi, conv_tap_x(g, kx), g);
    for (size_t r = a / w * w; r < b; r += w) {
        for (size_t q = r; q < r + (size_t)lo; q++)
            if (q >= a && q < b) o[q - p0] = 0.0f;
        for (size_t q = r + (size_t)hi; q < r + w; q++)
            if (q >= a && q < b) o[q - p0] = 0.0f;
    }
}

static void conv_im2col_same(float *restrict col /* krows x ld */, size_t ld, const float *restrict x,
                             const conv_geom *g, size_t p0, size_t pn, int nt)
{
    const size_t taps = (size_t)g->kh * g->kw, plane = (size_t)g->h * g->w, end = p0 + pn;
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t kk = 0; kk < g->krows; kk++) {
        int ky = (int)(kk % taps) / g->kw, kx = (int)(kk % taps) % g->kw;
        const float *in = x + kk / taps * plane;
        float *o = col + kk * ld; /* o[q - p0]: pixel q */
        ptrdiff_t off;
        size_t a, b;
        conv_same_range(&off, &a, &b, g, ky, kx, p0, end);
        memset(o, 0, (a - p0) * sizeof(float));
        memcpy(o + (a - p0), in + (ptrdiff_t)a + off, (b - a) * sizeof(float));
        memset(o + (b - p0), 0, (end - b) * sizeof(float));
        conv_same_zero_cols(o, p0, a, b, kx, g);
    }
}

/* col2im of a same-size convolution: each tap's row of dcol, its padding
 * columns zeroed first (dcol is the kernel's own scratch), is added to the
 * plane in one contiguous run. Adding those zeros to a neighbouring row
 * leaves every sum's value as it was (x + 0 = x), and each element still
 * receives its taps in order. */
static void conv_col2im_same(float *restrict dx /* cin x h x w */, float *restrict dcol /* krows x ld */, size_t ld,
                             const conv_geom *g, size_t p0, size_t pn, int nt)
{
    const size_t taps = (size_t)g->kh * g->kw, plane = (size_t)g->h * g->w, end = p0 + pn;
    RM_CPU_PARALLEL_FOR(nt)
    for (int ci = 0; ci < g->cin; ci++) {
        float *out = dx + (size_t)ci * plane;
        for (size_t t = 0; t < taps; t++) {
            int ky = (int)t / g->kw, kx = (int)t % g->kw;
            float *d = dcol + ((size_t)ci * taps + t) * ld; /* d[q - p0]: pixel q */
            ptrdiff_t off;
            size_t a, b;
            conv_same_range(&off, &a, &b, g, ky, kx, p0, end);
            conv_same_zero_cols(d, p0, a, b, kx, g);
            float *o = out + (ptrdiff_t)a + off;
            const float *q = d + (a - p0);
            RM_CPU_SIMD
            for (size_t j = 0; j < b - a; j++) o[j] += q[j];
        }
    }
}

/* col[kk][j] (rows ld apart) for the pixels p0 .. p0+pn of one image, a
 * row of pixels at a time (the input row and the valid columns found once
 * per row); the tap rows kk are independent, split between nt threads. */
static void conv_im2col_block(float *restrict col /* krows x ld */, size_t ld,
                              const float *restrict x /* cin x h x w */, const conv_geom *g, size_t p0, size_t pn,
                              int nt)
{
    const size_t taps = (size_t)g->kh * g->kw;
    if (conv_same_size(g)) {
        conv_im2col_same(col, ld, x, g, p0, pn, nt);
        return;
    }
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t kk = 0; kk < g->krows; kk++) {
        int ty = conv_tap_y(g, (int)(kk % taps) / g->kw), tx = conv_tap_x(g, (int)(kk % taps) % g->kw), lo, hi;
        const float *plane = x + kk / taps * g->h * g->w;
        float *o = col + kk * ld; /* o[j]: pixel p0 + j */
        conv_valid_cols(&lo, &hi, tx, g);
        for (size_t p = p0; p < p0 + pn;) {
            int oy, ox0, ox1;
            conv_row_run(&oy, &ox0, &ox1, p, p0 + pn, g);
            float *r = o + (p - p0); /* r[ox - ox0] */
            int iy = oy * g->sh + ty, a = ox0 > lo ? ox0 : lo, b = ox1 < hi ? ox1 : hi;
            if (iy < 0 || iy >= g->h) a = b = ox1; /* all padding */
            if (b < a) b = a;
            const float *in = plane + (size_t)(iy < 0 ? 0 : iy) * g->w;
            for (int ox = ox0; ox < a; ox++) r[ox - ox0] = 0.0f;
            if (g->sw == 1 && b > a) /* a contiguous run of the input row */
                memcpy(r + (a - ox0), in + (a + tx), (size_t)(b - a) * sizeof(float));
            else
                for (int ox = a; ox < b; ox++) r[ox - ox0] = in[ox * g->sw + tx];
            for (int ox = b; ox < ox1; ox++) r[ox - ox0] = 0.0f;
            p += (size_t)(ox1 - ox0);
        }
    }
}

/* dx += the columns of dcol (rows ld apart) for the pixels p0 .. p0+pn,
 * scattered back onto the image (col2im; dcol is scratch, which the
 * same-size path writes). Every input channel is one thread's and its taps
 * arrive in a fixed order, so the sums do not depend on nt. */
static void conv_col2im_block(float *restrict dx /* cin x h x w */, float *restrict dcol /* krows x ld */, size_t ld,
                              const conv_geom *g, size_t p0, size_t pn, int nt)
{
    const size_t taps = (size_t)g->kh * g->kw;
    if (conv_same_size(g)) {
        conv_col2im_same(dx, dcol, ld, g, p0, pn, nt);
        return;
    }
    RM_CPU_PARALLEL_FOR(nt)
    for (int ci = 0; ci < g->cin; ci++) {
        float *plane = dx + (size_t)ci * g->h * g->w;
        for (size_t t = 0; t < taps; t++) {
            int ty = conv_tap_y(g, (int)t / g->kw), tx = conv_tap_x(g, (int)t % g->kw), lo, hi;
            const float *d = dcol + ((size_t)ci * taps + t) * ld;
            conv_valid_cols(&lo, &hi, tx, g);
            for (size_t p = p0; p < p0 + pn;) {
                int oy, ox0, ox1;
                conv_row_run(&oy, &ox0, &ox1, p, p0 + pn, g);
                const float *r = d + (p - p0); /* r[ox - ox0] */
                int iy = oy * g->sh + ty, a = ox0 > lo ? ox0 : lo, b = ox1 < hi ? ox1 : hi;
                if (iy >= 0 && iy < g->h) {
                    float *out = plane + (size_t)iy * g->w;
                    if (g->sw == 1) { /* contiguous: vectorised, each element still one add per tap */
                        float *o = out + (a + tx);
                        const float *q = r + (a - ox0);
#pragma omp simd
                        for (int j = 0; j < b - a; j++) o[j] += q[j];
                    } else {
                        for (int ox = a; ox < b; ox++) out[ox * g->sw + tx] += r[ox - ox0];
                    }
                }
                p += (size_t)(ox1 - ox0);
            }
        }
    }
}

/* rows x pn floats from src (rows sld apart) to dst (rows dld apart): an
 * image's part of a block of images, in or out. */
static void conv_copy_rows(float *dst, size_t dld, const float *src, size_t sld, size_t rows, size_t pn, int nt)
{
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t r = 0; r < rows; r++) memcpy(dst + r * dld, src + r * sld, pn * sizeof(float));
}

/* The columns of images n0 .. n0+imgs (whole images, pdim each) side by
 * side in col (krows x imgs*pdim): im2col, or the images' rows when direct. */
static void conv_gather_cols(float *col, const float *x, const conv_geom *g, int n0, int imgs,
                             const rm_layer_call *call)
{
    size_t xsize = (size_t)g->cin * g->h * g->w, ld = (size_t)imgs * g->pdim;
    int nt = rm_call_threads(call, g->krows * g->pdim);
    for (int i = 0; i < imgs; i++) {
        const float *xn = x + (size_t)(n0 + i) * xsize;
        if (conv_direct(g))
            conv_copy_rows(col + (size_t)i * g->pdim, ld, xn, g->pdim, g->krows, g->pdim, nt);
        else
            conv_im2col_block(col + (size_t)i * g->pdim, ld, xn, g, 0, g->pdim, nt);
    }
}

static void conv_add_bias(float *yn /* cout x pdim */, const float *b, const conv_geom *g, int nt)
{
    RM_CPU_PARALLEL_FOR(nt)
    for (int co = 0; co < g->cout; co++)
        for (size_t i = 0; i < g->pdim; i++) yn[(size_t)co * g->pdim + i] += b[co];
}

/* One product per group of channels, c_g = op(a_g) op(b_g) + beta c_g
 * (m, n, k: one group's), each operand's group gi starting gi * its step
 * floats after its first: the groups' rows of the weights, of the im2col
 * matrix and of the outputs are consecutive (conv_geom.h). One group is
 * one product. */
static int conv_sgemm(const rm_backend *be, const conv_geom *g, int ta, int tb, size_t m, size_t n, size_t k,
                      const float *a, size_t lda, size_t a_step, const float *b, size_t ldb, size_t b_step, float beta,
                      float *c, size_t ldc, size_t c_step, const char *what, rm_err *e)
{
    int rc = RM_OK;
    for (size_t gi = 0; !rc && gi < (size_t)g->groups; gi++)
        rc = rm_cpu_sgemm(be, ta, tb, m, n, k, a + gi * a_step, lda, b + gi * b_step, ldb, beta, c + gi * c_step, ldc,
                          what, e);
    return rc;
}

/* y of image n, `block` pixels at a time through col (krows x block floats),
 * on gemm_be's threads (NULL: one) and nt threads for the loops. */
static int conv_fast_forward_image(const rm_layer_call *call, const conv_geom *g, float *col, size_t block, int n,
                                   const rm_backend *gemm_be, int nt, rm_err *e)
{
    const float *w = call->params->w.data, *b = call->params->b.data;
    const float *xn = call->in[0]->data + (size_t)n * g->cin * g->h * g->w;
    float *yn = call->out->data + (size_t)n * g->cout * g->pdim;
    int rc = RM_OK;
    for (size_t p0 = 0; !rc && p0 < g->pdim; p0 += block) {
        size_t pn = g->pdim - p0 < block ? g->pdim - p0 : block;
        const float *c = xn + p0;
        size_t ldc = g->pdim;
        if (!conv_direct(g)) {
            conv_im2col_block(col, pn, xn, g, p0, pn, nt);
            c = col, ldc = pn;
        }
        size_t cog = (size_t)g->cog;
        rc = conv_sgemm(gemm_be, g, 0, 0, cog, pn, g->kdim, w, g->kdim, cog * g->kdim, c, ldc, g->kdim * ldc, 0.0f,
                        yn + p0, g->pdim, cog * g->pdim, "conv forward", e);
    }
    if (!rc && b) conv_add_bias(yn, b, g, nt);
    return rc;
}

/* Blocks of pixels on nt > 1 threads: the images split between the threads
 * (images [t * per, (t + 1) * per) to thread t), each with its share of the
 * workspace and one-thread products. Each core then reads the columns it
 * built itself, from its own cache, where a product on both threads reads
 * columns half built by the other core; and no thread waits for the other
 * between blocks. The bits are those of one thread: an image's products do
 * not depend on how their columns are blocked. *done = 0 (nothing computed)
 * when the images or the workspace are too few to share. */
static int conv_fast_forward_split(int *done, const rm_layer_call *call, const conv_geom *g, float *ws, size_t block,
                                   rm_err *e)
{
    int nt = rm_backend_threads(call->be);
    *done = 0;
    if (nt < 2 || g->n < 2 || block < 2 * (size_t)nt) return RM_OK;
    int tn = nt < g->n ? nt : g->n, per = (g->n + tn - 1) / tn, rc = RM_OK;
    size_t share = block / (size_t)tn;
    rm_err first = {RM_OK, ""};
    RM_CPU_PARALLEL_FOR(tn)
    for (int t = 0; t < tn; t++) {
        rm_err mine = {RM_OK, ""};
        int r = RM_OK;
        for (int n = t * per; !r && n < g->n && n < (t + 1) * per; n++)
            r = conv_fast_forward_image(call, g, ws + (size_t)t * g->krows * share, share, n, NULL, 1, &mine);
        if (r) {
            RM_CPU_PRAGMA(omp critical(conv_fast_forward_split))
            if (!rc) rc = r, first = mine;
        }
    }
    if (rc) *e = first;
    *done = 1;
    return rc;
}

/* y = w . col + b, a block at a time. */
static int conv2d_fast_forward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    const float *w = call->params->w.data, *b = call->params->b.data;
    conv_geom g = conv_geom_of(call->cfg, x->shape, call->out->shape);
    void *ws, *owned;
    int rc = rm_layer_workspace(&ws, &owned, call,
                                conv2d_fast_workspace(call->be, call->cfg, &x->shape, 1, call->out->shape, 0),
                                "conv forward", e);
    if (rc) return rc;
    size_t ysize = (size_t)g.cout * g.pdim;
    conv_blocking bl = conv_fast_blocking(&g);
    if (bl.imgs == 1 && !conv_direct(&g)) {
        int done;
        rc = conv_fast_forward_split(&done, call, &g, ws, bl.pixels, e);
        if (done) {
            free(owned);
            return rc;
        }
    }
    for (int n = 0; !rc && n < g.n; n += bl.imgs) {
        if (bl.imgs > 1) { /* whole images: product into the buffer after the columns */
            int imgs = g.n - n < bl.imgs ? g.n - n : bl.imgs;
            size_t cols = (size_t)imgs * g.pdim;
            float *col = ws, *out = col + g.krows * cols;
            size_t cog = (size_t)g.cog;
            conv_gather_cols(col, x->data, &g, n, imgs, call);
            rc = conv_sgemm(call->be, &g, 0, 0, cog, cols, g.kdim, w, g.kdim, cog * g.kdim, col, cols, g.kdim * cols,
                            0.0f, out, cols, cog * cols, "conv forward", e);
            for (int i = 0; !rc && i < imgs; i++) {
                float *yn = call->out->data + (size_t)(n + i) * ysize;
                conv_copy_rows(yn, g.pdim, out + (size_t)i * g.pdim, cols, (size_t)g.cout, g.pdim,
                               rm_call_threads(call, ysize));
                if (b) conv_add_bias(yn, b, &g, rm_call_threads(call, ysize));
            }
            continue;
        }
        rc = conv_fast_forward_image(call, &g, ws, bl.pixels, n, call->be, rm_call_threads(call, g.krows * bl.pixels),
                                     e);
    }
    free(owned);
    return rc;
}

/* One block of whole images n0 .. n0+imgs: their output gradients side by
 * side in a buffer; dw (+)= dy . col^T, then dcol = w^T . dy in the columns'
 * place, scattered back image by image. */
static int conv_fast_backward_images(const rm_layer_call *call, const conv_geom *g, float *ws, int n0, int imgs,
                                     rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    size_t xsize = (size_t)g->cin * g->h * g->w, ysize = (size_t)g->cout * g->pdim, cols = (size_t)imgs * g->pdim;
    size_t cog = (size_t)g->cog, kdim = g->kdim;
    float *col = ws, *dyb = col + g->krows * cols;
    int nt = rm_call_threads(call, ysize), rc = RM_OK;
    for (int i = 0; i < imgs; i++)
        conv_copy_rows(dyb + (size_t)i * g->pdim, cols, dy->data + (size_t)(n0 + i) * ysize, g->pdim, (size_t)g->cout,
                       g->pdim, nt);
    if (prm->dw.data) {
        conv_gather_cols(col, x->data, g, n0, imgs, call);
        rc = conv_sgemm(call->be, g, 0, 1, cog, kdim, cols, dyb, cols, cog * cols, col, cols, kdim * cols,
                        n0 == 0 ? 0.0f : 1.0f, prm->dw.data, kdim, cog * kdim, "conv backward (weights)", e);
    }
    if (rc || !dx || !dx->data) return rc;
    rc = conv_sgemm(call->be, g, 1, 0, kdim, cols, cog, prm->w.data, kdim, cog * kdim, dyb, cols, cog * cols, 0.0f, col,
                    cols, kdim * cols, "conv backward (data)", e);
    nt = rm_call_threads(call, g->krows * g->pdim);
    for (int i = 0; !rc && i < imgs; i++) {
        float *dxn = dx->data + (size_t)(n0 + i) * xsize;
        if (conv_direct(g)) {
            conv_copy_rows(dxn, g->pdim, col + (size_t)i * g->pdim, cols, g->krows, g->pdim, nt);
        } else {
            memset(dxn, 0, xsize * sizeof(float));
            conv_col2im_block(dxn, col + (size_t)i * g->pdim, cols, g, 0, g->pdim, nt);
        }
    }
    return rc;
}

/* dw = sum over images of dy . col^T (in image order, one float sum), then
 * dx = col2im(w^T . dy), both through the same block of workspace; db as
 * the reference. */
static int conv2d_fast_backward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_layer_params *prm = call->params;
    conv_geom g = conv_geom_of(call->cfg, x->shape, dy->shape);
    int want_dx = dx && dx->data, direct = conv_direct(&g);
    size_t xsize = (size_t)g.cin * g.h * g.w, ysize = (size_t)g.cout * g.pdim;
    conv_blocking bl = conv_fast_blocking(&g);
    void *ws, *owned;
    int rc = rm_layer_workspace(
        &ws, &owned, call, conv2d_fast_workspace(call->be, call->cfg, &x->shape, 1, dy->shape, 1), "conv backward", e);
    if (rc) return rc;
    const float *w = prm->w.data;
    const size_t cog = (size_t)g.cog, kdim = g.kdim;
    for (int n = 0; !rc && n < g.n; n += bl.imgs) {
        if (bl.imgs > 1) {
            rc = conv_fast_backward_images(call, &g, ws, n, g.n - n < bl.imgs ? g.n - n : bl.imgs, e);
            continue;
        }
        const float *xn = x->data + n * xsize, *dyn = dy->data + n * ysize;
        float *dxn = want_dx ? dx->data + n * xsize : NULL;
        if (dxn && !direct) memset(dxn, 0, xsize * sizeof(float));
        for (size_t p0 = 0; !rc && p0 < g.pdim; p0 += bl.pixels) {
            size_t pn = g.pdim - p0 < bl.pixels ? g.pdim - p0 : bl.pixels;
            int first = n == 0 && p0 == 0, nt = rm_call_threads(call, g.krows * pn);
            if (prm->dw.data) {
                const float *col = xn + p0;
                size_t ldcol = g.pdim;
                if (!direct) {
                    conv_im2col_block(ws, pn, xn, &g, p0, pn, nt);
                    col = ws, ldcol = pn;
                }
                rc = conv_sgemm(call->be, &g, 0, 1, cog, kdim, pn, dyn + p0, g.pdim, cog * g.pdim, col, ldcol,
                                kdim * ldcol, first ? 0.0f : 1.0f, prm->dw.data, kdim, cog * kdim,
                                "conv backward (weights)", e);
            }
            if (rc || !dxn) continue;
            if (direct) { /* the column gradient is the input gradient */
                rc = conv_sgemm(call->be, &g, 1, 0, kdim, pn, cog, w, kdim, cog * kdim, dyn + p0, g.pdim, cog * g.pdim,
                                0.0f, dxn + p0, g.pdim, kdim * g.pdim, "conv backward (data)", e);
                continue;
            }
            rc = conv_sgemm(call->be, &g, 1, 0, kdim, pn, cog, w, kdim, cog * kdim, dyn + p0, g.pdim, cog * g.pdim,
                            0.0f, ws, pn, kdim * pn, "conv backward (data)", e);
            if (!rc) conv_col2im_block(dxn, ws, pn, &g, p0, pn, nt);
        }
    }
    if (!rc && prm->db.data)
        rm_cpu_bias_grad(prm->db.data, dy->data, g.n, g.cout, g.pdim, rm_call_threads(call, g.n * ysize));
    free(owned);
    return rc;
}

rm_layer_kernels rm_conv2d_cpu_kernels(int lib)
{
    rm_layer_kernels k = {NULL, NULL, NULL}; /* the reference (conv2d.c) */
    if (lib == RM_CPU_KERNELS_FAST)
        k = (rm_layer_kernels){conv2d_fast_forward, conv2d_fast_backward, conv2d_fast_workspace};
    return k;
}
