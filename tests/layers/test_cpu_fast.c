/* The fast CPU kernel library (engine/cpu/backend_cpu.h) against two oracles:
 * a naive direct convolution (the seven loops of the definition, in double)
 * and the reference kernels, on odd shapes (stride 2 and 3, padding, 1x1
 * direct and strided, 5x5, 7x7, channel counts that divide nothing, batch 1
 * and 3, an image whose im2col matrix is split into blocks), forward and
 * both backward passes, at 1, 2 and 3 threads (the same bits at each);
 * linear and the 2x2 transposed convolution likewise. Then what the
 * threads must not change: the bits of a fast call run twice, of a product
 * split between threads, and of every threaded loop of the other layers at
 * 1 and 2 threads; the workspace the fast kernels declare; how a library
 * and a thread count are chosen; and the thread governor, on a simulated
 * machine whose cores another process takes and gives back.
 *
 * Tolerance. A float sum of K products a_i b_i, in any order, is within
 * K u sum |a_i b_i| of the exact value (u = 2^-24): the fast kernels must be
 * within (K + 2) u of sum |terms| of the naive result, output by output, K
 * the terms of that output. The reference accumulates in double and rounds
 * once: within 2 u of sum |terms|. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "backend_cpu_internal.h"
#include "cores.h"
#include "cpu_blas.h"
#include "layers.h"

#define U (1.0 / 16777216.0) /* 2^-24: float's unit roundoff */

static rm_backend *cpu(rm_cpu_kernel_lib lib, int threads)
{
    rm_backend *be = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cpu_set_kernels(be, lib, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cpu_set_threads(be, threads, &e), RM_OK, "%s", e.msg);
    return be;
}

static void *must(void *p)
{
    cr_assert_not_null(p, "out of memory");
    return p;
}

static float *uniform(size_t n, uint64_t seed)
{
    float *p = must(malloc((n + 1) * sizeof(float)));
    rm_rng r = rm_rng_make(seed);
    for (size_t i = 0; i < n; i++) p[i] = (float)rm_rng_range(&r, -1, 1);
    return p;
}

static double *zeros(size_t n)
{
    return must(calloc(n + 1, sizeof(double)));
}

/* ---- the naive oracle ------------------------------------------------------ */

/* One convolution problem and its exact answers: y, dx, dw, db in double,
 * each with the sum of the magnitudes of its terms (for the tolerance). */
typedef struct conv_case {
    char name[40]; /* an array: Criterion copies parameters into another process */
    rm_shape x;
    int cout, k, s, p, bias;
    int kw, sw, pw;  /* a rectangular window's width (k, s, p its height); 0: as the height */
    int dil, groups; /* 0: 1 */
    int depthwise;   /* the dwconv layer (groups and cout the channels, square, not dilated) */
} conv_case;

/* The case's window, each 0 read as the struct says. */
typedef struct conv_win {
    int kh, kw, sh, sw, ph, pw, dil, groups;
} conv_win;

static conv_win conv_win_of(const conv_case *c)
{
    conv_win v = {c->k,
                  c->kw ? c->kw : c->k,
                  c->s,
                  c->sw ? c->sw : c->s,
                  c->p,
                  c->kw || c->sw ? c->pw : c->p,
                  c->dil ? c->dil : 1,
                  c->groups ? c->groups : 1};
    return v;
}

static rm_layer_config conv_case_cfg(const conv_case *c)
{
    conv_win v = conv_win_of(c);
    if (c->depthwise)
        return (rm_layer_config){.kind = RM_LAYER_DWCONV2D,
                                 .kernel = {v.kh, v.kw},
                                 .stride = {v.sh, v.sw},
                                 .pad = {v.ph, v.pw},
                                 .bias = c->bias};
    return (rm_layer_config){.kind = RM_LAYER_CONV2D,
                             .out_channels = c->cout,
                             .kernel = {v.kh, v.kw},
                             .stride = {v.sh, v.sw},
                             .pad = {v.ph, v.pw},
                             .dilation = {v.dil, v.dil},
                             .groups = v.groups,
                             .bias = c->bias};
}

typedef struct conv_exact {
    rm_shape y;
    double *y_, *dx, *dw, *db;    /* exact values */
    double *ya, *dxa, *dwa, *dba; /* sum of |terms| */
} conv_exact;

/* The input element under tap (ky, kx) of output pixel (oy, ox), or -1 in
 * the padding. */
static long tap_index(const conv_case *c, int ci, int oy, int ox, int ky, int kx)
{
    conv_win v = conv_win_of(c);
    int iy = oy * v.sh - v.ph + ky * v.dil, ix = ox * v.sw - v.pw + kx * v.dil;
    if (iy < 0 || iy >= c->x.h || ix < 0 || ix >= c->x.w) return -1;
    return ((long)ci * c->x.h + iy) * c->x.w + ix;
}

/* The seven loops, forward (n, co, oy, ox, ci, ky, kx: ci over co's group)
 * and, with the same index arithmetic, the two gradients, every product in
 * double. */
static void naive_conv(conv_exact *r, const conv_case *c, const float *x, const float *w, const float *b,
                       const float *dy)
{
    const rm_shape X = c->x, Y = r->y;
    const conv_win v = conv_win_of(c);
    const int cig = X.c / v.groups, cog = c->cout / v.groups;
    const size_t xs = (size_t)X.c * X.h * X.w, ys = (size_t)Y.c * Y.h * Y.w, kk = (size_t)cig * v.kh * v.kw;
    for (int n = 0; n < X.n; n++)
        for (int co = 0; co < c->cout; co++)
            for (int oy = 0; oy < Y.h; oy++)
                for (int ox = 0; ox < Y.w; ox++) {
                    size_t yi = n * ys + ((size_t)co * Y.h + oy) * Y.w + ox;
                    double g = dy[yi];
                    r->y_[yi] = b ? b[co] : 0.0;
                    r->ya[yi] = b ? fabs(b[co]) : 0.0;
                    if (b) r->db[co] += g, r->dba[co] += fabs(g);
                    for (int cl = 0; cl < cig; cl++)
                        for (int ky = 0; ky < v.kh; ky++)
                            for (int kx = 0; kx < v.kw; kx++) {
                                long xi = tap_index(c, co / cog * cig + cl, oy, ox, ky, kx);
                                if (xi < 0) continue;
                                size_t wi = co * kk + ((size_t)cl * v.kh + ky) * v.kw + kx;
                                double xv = x[n * xs + (size_t)xi], wv = w[wi];
                                r->y_[yi] += wv * xv, r->ya[yi] += fabs(wv * xv);
                                r->dx[n * xs + (size_t)xi] += wv * g, r->dxa[n * xs + (size_t)xi] += fabs(wv * g);
                                r->dw[wi] += g * xv, r->dwa[wi] += fabs(g * xv);
                            }
                }
}

/* Terms per output: y sums cin/groups kh kw products (+ the bias), dx at
 * most cout/groups kh kw, dw n ho wo, db n ho wo. */
static void expect_close(const char *what, const char *who, const float *got, const double *exact, const double *mag,
                         size_t n, double terms, double rel)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double err = fabs((double)got[i] - exact[i]), bound = rel * (terms + 2) * mag[i] + 1e-30;
        cr_assert_leq(err, bound, "%s %s[%zu]: %.9g, exact %.9g (bound %.3g)", who, what, i, (double)got[i], exact[i],
                      bound);
        if (mag[i] > 0 && err / mag[i] > worst) worst = err / mag[i];
    }
    cr_log_info("%-28s %-3s worst error / sum|terms| = %.3g (bound %.3g)", who, what, worst, rel * (terms + 2));
}

/* One conv call on be: y, dx, dw, db (db NULL without a bias). */
/* A one-input layer's call: forward writes ty, backward reads tdy and writes
 * tdx and the parameters' gradients. */
static rm_layer_call one_input_call(const rm_layer_config *cfg, rm_layer_params *prm, rm_backend *be, rm_tensor *tx,
                                    rm_tensor *ty, rm_tensor *tdy, rm_tensor *tdx)
{
    return (rm_layer_call){
        .cfg = cfg, .params = prm, .be = be, .nin = 1, .in = {tx}, .out = ty, .dout = tdy, .din = {tdx}, .training = 1};
}

static void run_conv(float *y, float *dx, float *dw, float *db, const conv_case *c, rm_shape ys, const float *x,
                     float *w, float *b, const float *dy, rm_backend *be)
{
    rm_layer_config cfg = conv_case_cfg(c);
    const rm_layer_desc *desc = c->depthwise ? &rm_dwconv2d_desc : &rm_conv2d_desc;
    rm_shape ws, bs;
    desc->param_shapes(&ws, &bs, &cfg, &c->x, 1);
    rm_layer_params prm = {.w = rm_tensor_make(ws, w), .dw = rm_tensor_make(ws, dw)};
    if (c->bias) prm.b = rm_tensor_make(bs, b), prm.db = rm_tensor_make(bs, db);
    rm_tensor tx = rm_tensor_make(c->x, (float *)x), ty = rm_tensor_make(ys, y), tdy = rm_tensor_make(ys, (float *)dy),
              tdx = rm_tensor_make(c->x, dx);
    rm_layer_call call = one_input_call(&cfg, &prm, be, &tx, &ty, &tdy, &tdx);
    rm_err e = {0};
    cr_assert_eq(rm_layer_forward(desc, &call, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_layer_backward(desc, &call, &e), RM_OK, "%s", e.msg);
}

/* On one thread: keeps y, dx, dw and db (db_n 0: none) in one; on more:
 * asserts the same bits. */
static void expect_same_as_one_thread(float *one, int threads, const char *who, const float *y, size_t ny,
                                      const float *dx, size_t nx, const float *dw, size_t nw, const float *db,
                                      size_t nb)
{
    const struct {
        const char *name;
        const float *v;
        size_t n;
    } part[] = {{"y", y, ny}, {"dx", dx, nx}, {"dw", dw, nw}, {"db", db, nb}};
    float *at = one;
    for (size_t i = 0; i < sizeof part / sizeof part[0]; i++) {
        if (!part[i].n) continue; /* no db: its pointer may be NULL */
        if (threads == 1)
            memcpy(at, part[i].v, part[i].n * sizeof(float));
        else
            for (size_t j = 0; j < part[i].n; j++)
                cr_assert_eq(memcmp(&at[j], &part[i].v[j], sizeof(float)), 0, "%s: %s[%zu] is %.9g, on one thread %.9g",
                             who, part[i].name, j, (double)part[i].v[j], (double)at[j]);
        at += part[i].n;
    }
}

static void expect_conv(const conv_case *c)
{
    rm_layer_config cfg = conv_case_cfg(c);
    conv_win v = conv_win_of(c);
    rm_err e = {0};
    conv_exact r;
    memset(&r, 0, sizeof r);
    cr_assert_eq((c->depthwise ? &rm_dwconv2d_desc : &rm_conv2d_desc)->infer(&r.y, &cfg, &c->x, 1, &e), RM_OK, "%s",
                 e.msg);
    size_t nx = rm_shape_numel(c->x), ny = rm_shape_numel(r.y), nw = (size_t)c->cout * c->x.c / v.groups * v.kh * v.kw,
           nb = (size_t)c->cout;
    float *x = uniform(nx, 1), *w = uniform(nw, 2), *b = c->bias ? uniform(nb, 3) : NULL, *dy = uniform(ny, 4);
    r.y_ = zeros(ny), r.ya = zeros(ny), r.dx = zeros(nx), r.dxa = zeros(nx), r.dw = zeros(nw), r.dwa = zeros(nw);
    r.db = zeros(nb), r.dba = zeros(nb);
    naive_conv(&r, c, x, w, b, dy);
    double t_y = (double)c->x.c / v.groups * v.kh * v.kw + 1, t_dx = (double)c->cout / v.groups * v.kh * v.kw,
           t_dw = (double)c->x.n * r.y.h * r.y.w;
    struct {
        rm_cpu_kernel_lib lib;
        int threads;
    } runs[] = {
        {RM_CPU_KERNELS_REFERENCE, 1}, {RM_CPU_KERNELS_FAST, 1}, {RM_CPU_KERNELS_FAST, 2}, {RM_CPU_KERNELS_FAST, 3}};
    float *y = malloc(ny * sizeof *y), *dx = malloc(nx * sizeof *dx), *dw = malloc(nw * sizeof *dw),
          *db = malloc(nb * sizeof *db), *again = malloc((ny + nx + nw) * sizeof *again),
          *fast1 = malloc((ny + nx + nw + nb) * sizeof *fast1);
    for (size_t k = 0; k < sizeof runs / sizeof runs[0]; k++) {
        rm_backend *be = cpu(runs[k].lib, runs[k].threads);
        char who[64];
        snprintf(who, sizeof who, "%s %s/%d", c->name, rm_cpu_kernel_lib_name(runs[k].lib), runs[k].threads);
        run_conv(y, dx, dw, db, c, r.y, x, w, b, dy, be);
        int fast = runs[k].lib == RM_CPU_KERNELS_FAST;
        /* The reference rounds a double sum once; the fast kernels sum in float. */
        expect_close("y", who, y, r.y_, r.ya, ny, fast ? t_y : 0, U);
        expect_close("dx", who, dx, r.dx, r.dxa, nx, fast ? t_dx : 0, U);
        expect_close("dw", who, dw, r.dw, r.dwa, nw, fast ? t_dw : 0, U);
        if (c->bias) expect_close("db", who, db, r.db, r.dba, nb, 0, U);
        /* The same call again: the same bits (no order depends on timing). */
        memcpy(again, y, ny * sizeof *y), memcpy(again + ny, dx, nx * sizeof *dx);
        memcpy(again + ny + nx, dw, nw * sizeof *dw);
        run_conv(y, dx, dw, db, c, r.y, x, w, b, dy, be);
        cr_assert_eq(memcmp(again, y, ny * sizeof *y), 0, "%s: y differs run to run", who);
        cr_assert_eq(memcmp(again + ny, dx, nx * sizeof *dx), 0, "%s: dx differs run to run", who);
        cr_assert_eq(memcmp(again + ny + nx, dw, nw * sizeof *dw), 0, "%s: dw differs run to run", who);
        /* No bit depends on the thread count (so the thread governor may
         * change it at any layer call): no product's inner dimension is
         * split, BLIS's small-matrix path (whose blocking follows the
         * shapes) is off, and on several threads the forward's images are
         * shared out whole (conv_fast_forward_split). */
        if (fast) expect_same_as_one_thread(fast1, runs[k].threads, who, y, ny, dx, nx, dw, nw, db, c->bias ? nb : 0);
        rm_backend_free(be);
    }
    free(y), free(dx), free(dw), free(db), free(again), free(fast1);
    free(x), free(w), free(b), free(dy);
    free(r.y_), free(r.ya), free(r.dx), free(r.dxa), free(r.dw), free(r.dwa), free(r.db), free(r.dba);
}

/* Stride 2 and 3, padding, 1x1 (direct, and strided), 5x5 and 7x7, channel
 * counts that divide nothing, batch 1 and 3; one large enough that im2col
 * and col2im run on both threads (81 x 1020 elements, past RM_LOOP_MIN),
 * and one whose products (4 blocks of 147 x 8091 im2col columns against 4
 * filters, past 4e6 multiply-adds) run on both threads. The stem-like 7x7
 * and the 5x5 cases are done in blocks of pixels too: their im2col matrix
 * is larger than the reference's workspace, which bounds the block. The
 * direct 1x1 case (2 images, then 1) and the last two (many filters over
 * few pixels) put several whole images in one product. The 7x7 over a
 * 5 x 40 image is done in blocks of 83 pixels (41 on each of 2 threads),
 * shorter than the 123 pixels a corner tap reads from the top padding. */
static conv_case conv_cases[] = {
    {"k3 s2 p1", {3, 5, 11, 9}, 7, 3, 2, 1, 1, 0, 0, 0, 0, 0, 0},
    {"k7 s2 p3 (stem)", {1, 3, 23, 21}, 13, 7, 2, 3, 0, 0, 0, 0, 0, 0, 0},
    {"k1 s1 p0 (direct)", {3, 6, 7, 5}, 5, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0},
    {"k1 s2 p0", {1, 7, 9, 10}, 3, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0},
    {"k5 s1 p2", {3, 3, 8, 8}, 4, 5, 1, 2, 1, 0, 0, 0, 0, 0, 0},
    {"k3 s3 p1", {1, 2, 6, 7}, 3, 3, 3, 1, 1, 0, 0, 0, 0, 0, 0},
    {"k3 s1 p1 (threaded)", {3, 9, 34, 30}, 17, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0},
    {"k7 s2 p3 (large)", {1, 3, 338, 338}, 4, 7, 2, 3, 1, 0, 0, 0, 0, 0, 0},
    {"k3 s1 p1 (3 images, one product)", {3, 4, 3, 3}, 32, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0},
    {"k7 s1 p3 (small blocks)", {2, 1, 5, 40}, 1, 7, 1, 3, 1, 0, 0, 0, 0, 0, 0},
    {"k3 s2 p1 (images 2 + 2 + 1)", {5, 3, 7, 7}, 24, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0},
    /* grouped (ResNeXt, RegNet), rectangular (Inception's 1x7 and 7x1), dilated, and all at once; one grouped
     * case large enough for blocks of pixels, and one of several images per product */
    {"g4 k3 s1 p1", {2, 8, 9, 7}, 12, 3, 1, 1, 1, 0, 0, 0, 0, 4, 0},
    {"g2 k1 (direct, grouped)", {3, 6, 5, 4}, 4, 1, 1, 0, 0, 0, 0, 0, 0, 2, 0},
    {"g3 k3 s2 p1 (images per product)", {5, 6, 6, 6}, 9, 3, 2, 1, 1, 0, 0, 0, 0, 3, 0},
    {"g8 k3 s1 p1 (multiplier 2)", {2, 8, 9, 9}, 16, 3, 1, 1, 1, 0, 0, 0, 0, 8, 0},
    {"1x7 p0x3", {2, 3, 8, 11}, 4, 1, 1, 0, 1, 7, 1, 3, 0, 0, 0},
    {"7x1 p3x0 (same size)", {2, 3, 11, 8}, 4, 7, 1, 3, 0, 1, 1, 0, 0, 0, 0},
    {"3x5 s2x1 p1x2", {2, 3, 9, 10}, 5, 3, 2, 1, 1, 5, 1, 2, 0, 0, 0},
    {"k3 d2 p2 (same size)", {2, 3, 9, 8}, 4, 3, 1, 2, 1, 0, 0, 0, 2, 0, 0},
    {"k3 d3 s2 p1", {1, 4, 13, 12}, 3, 3, 2, 1, 0, 0, 0, 0, 3, 0, 0},
    {"g2 1x3 s1x2 d2 (everything)", {2, 4, 7, 12}, 6, 1, 1, 0, 1, 3, 2, 2, 2, 2, 0},
    {"g4 k3 s1 p1 (large, blocks)", {1, 8, 300, 300}, 8, 3, 1, 1, 1, 0, 0, 0, 0, 4, 0},
    /* same-size convolutions whose taps reach a whole plane away: one row, and padding and dilation past the
     * input (an ASPP branch on a small map) */
    {"k3 p1 one row (same size)", {2, 2, 1, 4}, 3, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0},
    {"k3 d6 p6 (same size, reach > plane)", {2, 2, 5, 5}, 3, 3, 1, 6, 1, 0, 0, 0, 6, 0, 0},
    /* the depthwise layer (MobileNet's 3x3 s1 and s2, EfficientNet's 5x5, ConvNeXt's 7x7, a layer scale's 1x1),
     * on rows long and short against its 8-lane dot products, and a kernel past one chunk of taps (13 x 13) */
    {"dw k3 s1 p1", {3, 5, 13, 19}, 5, 3, 1, 1, 1, 0, 0, 0, 0, 5, 1},
    {"dw k3 s2 p1", {2, 4, 11, 10}, 4, 3, 2, 1, 0, 0, 0, 0, 0, 4, 1},
    {"dw k5 s2 p2", {2, 3, 9, 17}, 3, 5, 2, 2, 1, 0, 0, 0, 0, 3, 1},
    {"dw k7 s1 p3 (wider than the input)", {2, 3, 5, 4}, 3, 7, 1, 3, 1, 0, 0, 0, 0, 3, 1},
    {"dw k1 (a layer scale)", {2, 6, 3, 9}, 6, 1, 1, 0, 0, 0, 0, 0, 0, 6, 1},
    {"dw k13 s1 p6 (two chunks of taps)", {1, 2, 15, 14}, 2, 13, 1, 6, 1, 0, 0, 0, 0, 2, 1},
    {"dw k3 s1 p1 (threaded)", {4, 16, 40, 40}, 16, 3, 1, 1, 1, 0, 0, 0, 0, 16, 1},
};

/* attention's BLIS products against the reference's double sums, at 1 and
 * 2 threads (the same bits), on 5 heads of 3 channels over 11 x 3 tokens:
 * within 1e-5 of the largest value of each tensor. */
Test(cpu_fast, attention_against_reference)
{
    const rm_shape xs = rm_shape_make(2, 45, 11, 3), ys = rm_shape_make(2, 15, 11, 3);
    const size_t nx = rm_shape_numel(xs), ny = rm_shape_numel(ys);
    float *x = uniform(nx, 11), *dy = uniform(ny, 12);
    for (size_t i = 0; i < nx; i++) x[i] *= 2.0f; /* scores of a few units: peaked softmax rows too */
    float *y[3], *dx[3];
    rm_layer_config cfg = {.kind = RM_LAYER_ATTENTION, .heads = 5};
    const struct {
        rm_cpu_kernel_lib lib;
        int threads;
    } runs[3] = {{RM_CPU_KERNELS_REFERENCE, 1}, {RM_CPU_KERNELS_FAST, 1}, {RM_CPU_KERNELS_FAST, 2}};
    for (int r = 0; r < 3; r++) {
        rm_backend *be = cpu(runs[r].lib, runs[r].threads);
        y[r] = must(malloc(ny * sizeof(float))), dx[r] = must(malloc(nx * sizeof(float)));
        rm_layer_params prm = {0};
        rm_tensor tx = rm_tensor_make(xs, x), ty = rm_tensor_make(ys, y[r]), tdy = rm_tensor_make(ys, dy),
                  tdx = rm_tensor_make(xs, dx[r]);
        rm_layer_call call = one_input_call(&cfg, &prm, be, &tx, &ty, &tdy, &tdx);
        rm_err e = {0};
        cr_assert_eq(rm_layer_forward(&rm_attention_desc, &call, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_layer_backward(&rm_attention_desc, &call, &e), RM_OK, "%s", e.msg);
        rm_backend_free(be);
    }
    const struct {
        const char *name;
        float **v;
        size_t n;
    } parts[2] = {{"y", y, ny}, {"dx", dx, nx}};
    for (int k = 0; k < 2; k++) {
        double big = 0, worst = 0;
        for (size_t i = 0; i < parts[k].n; i++) big = fmax(big, fabs(parts[k].v[0][i]));
        for (size_t i = 0; i < parts[k].n; i++) {
            worst = fmax(worst, fabs(parts[k].v[1][i] - parts[k].v[0][i]));
            cr_assert_eq(memcmp(&parts[k].v[1][i], &parts[k].v[2][i], sizeof(float)), 0,
                         "%s[%zu]: 1 and 2 threads differ", parts[k].name, i);
        }
        cr_log_info("attention fast %-2s worst |fast - reference| = %.3g of max %.3g", parts[k].name, worst, big);
        cr_assert_leq(worst, 1e-5 * big, "attention %s: fast and reference differ by %g (max %g)", parts[k].name, worst,
                      big);
    }
    for (int r = 0; r < 3; r++) free(y[r]), free(dx[r]);
    free(x), free(dy);
}

ParameterizedTestParameters(cpu_fast, conv_against_naive_and_reference)
{
    return cr_make_param_array(conv_case, conv_cases, sizeof conv_cases / sizeof conv_cases[0]);
}

ParameterizedTest(conv_case *c, cpu_fast, conv_against_naive_and_reference, .timeout = 120)
{
    expect_conv(c);
}

/* ---- one-input layers with weights, against double sums --------------------- */

/* The exact y, dx and dw of a layer call (double sums), the sums of the
 * magnitudes of their terms, and how many terms each output adds. */
typedef struct exact_grads {
    const double *y, *ya, *dx, *dxa, *dw, *dwa;
    double ky, kdx, kdw;
} exact_grads;

/* One forward and backward of d (cfg, input xs, output ys) on the fast
 * library at 1, 2 and 3 threads: y, dx and dw within the float bound of r
 * and the same bits at each count, and the workspace each direction asks
 * within the reference's largest (what the fixed memory counts). `name` labels the log lines. */
static void expect_fast_layer(const char *name, const rm_layer_desc *d, const rm_layer_config *cfg, rm_shape xs,
                              rm_shape ys, float *x, float *w, float *b, float *dy, const exact_grads *r)
{
    rm_shape wsh, bsh;
    d->param_shapes(&wsh, &bsh, cfg, &xs, 1);
    size_t nx = rm_shape_numel(xs), ny = rm_shape_numel(ys), nw = rm_shape_numel(wsh);
    float *y = must(malloc(ny * sizeof *y)), *dx = must(malloc(nx * sizeof *dx)), *dw = must(malloc(nw * sizeof *dw)),
          *db = must(malloc(((size_t)cfg->out_channels + 1) * sizeof *db)),
          *one = must(malloc((ny + nx + nw + 1) * sizeof *one));
    rm_layer_params prm = {.w = rm_tensor_make(wsh, w), .dw = rm_tensor_make(wsh, dw)};
    if (b) prm.b = rm_tensor_make(bsh, b), prm.db = rm_tensor_make(bsh, db);
    rm_tensor tx = rm_tensor_make(xs, x), ty = rm_tensor_make(ys, y), tdy = rm_tensor_make(ys, dy),
              tdx = rm_tensor_make(xs, dx);
    for (int threads = 1; threads <= 3; threads++) {
        rm_backend *be = cpu(RM_CPU_KERNELS_FAST, threads);
        rm_layer_call call = one_input_call(cfg, &prm, be, &tx, &ty, &tdy, &tdx);
        rm_err e = {0};
        cr_assert_eq(rm_layer_forward(d, &call, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_layer_backward(d, &call, &e), RM_OK, "%s", e.msg);
        char who[64];
        snprintf(who, sizeof who, "%s fast/%d", name, threads);
        expect_close("y", who, y, r->y, r->ya, ny, r->ky, U);
        expect_close("dx", who, dx, r->dx, r->dxa, nx, r->kdx, U);
        expect_close("dw", who, dw, r->dw, r->dwa, nw, r->kdw, U);
        expect_same_as_one_thread(one, threads, who, y, ny, dx, nx, dw, nw, NULL, 0);
        size_t ref = d->workspace_bytes(cfg, &xs, 1, ys, 0), ref_back = d->workspace_bytes(cfg, &xs, 1, ys, 1);
        if (ref_back > ref) ref = ref_back;
        for (int back = 0; back < 2; back++)
            cr_assert_leq(rm_layer_workspace_bytes_device(d, be, cfg, &xs, 1, ys, back), ref,
                          "%s: more workspace than the reference's", who);
        rm_backend_free(be);
    }
    free(y), free(dx), free(dw), free(db), free(one);
}

/* ---- linear ------------------------------------------------------------------ */

/* y = x w^T + b, dx = dy w, dw = dy^T x, db, against double sums. */
static void expect_linear(int n, rm_shape x_in, int out, int bias)
{
    rm_shape xs = x_in;
    xs.n = n;
    size_t in = rm_shape_numel(xs) / (size_t)n, nx = (size_t)n * in, ny = (size_t)n * out, nw = (size_t)out * in;
    float *x = uniform(nx, 5), *w = uniform(nw, 6), *b = bias ? uniform((size_t)out, 7) : NULL, *dy = uniform(ny, 8);
    double *y_ = zeros(ny), *ya = zeros(ny), *dx_ = zeros(nx), *dxa = zeros(nx), *dw_ = zeros(nw), *dwa = zeros(nw);
    for (int i = 0; i < n; i++)
        for (int o = 0; o < out; o++) {
            size_t yi = (size_t)i * out + o;
            y_[yi] = b ? b[o] : 0.0, ya[yi] = b ? fabs(b[o]) : 0.0;
            for (size_t j = 0; j < in; j++) {
                double xv = x[i * in + j], wv = w[o * in + j], g = dy[yi];
                y_[yi] += wv * xv, ya[yi] += fabs(wv * xv);
                dx_[i * in + j] += g * wv, dxa[i * in + j] += fabs(g * wv);
                dw_[o * in + j] += g * xv, dwa[o * in + j] += fabs(g * xv);
            }
        }
    rm_layer_config cfg = {.kind = RM_LAYER_LINEAR, .out_channels = out, .bias = bias};
    exact_grads r = {y_, ya, dx_, dxa, dw_, dwa, (double)in + 1, out, n};
    char name[48];
    snprintf(name, sizeof name, "linear %d x %zu -> %d", n, in, out);
    expect_fast_layer(name, &rm_linear_desc, &cfg, xs, rm_shape_make(n, out, 1, 1), x, w, b, dy, &r);
    free(x), free(w), free(b), free(dy);
    free(y_), free(ya), free(dx_), free(dxa), free(dw_), free(dwa);
}

Test(cpu_fast, linear_batch1_and_3)
{
    expect_linear(1, rm_shape_make(1, 7, 3, 5), 11, 1);
    expect_linear(3, rm_shape_make(1, 37, 1, 1), 10, 0);
    expect_linear(3, rm_shape_make(1, 512, 1, 1), 1000, 1); /* ResNet's classifier */
}

/* ---- transposed convolution, 2x2 stride 2 ---------------------------------- */

/* y[co][2i+a][2j+b] = b[co] + sum_ci w[ci][co][a][b] x[ci][i][j], and its
 * gradients, against double sums; the fast library at 1, 2 and 3 threads
 * (products past 4e6 multiply-adds, shuffles past RM_LOOP_MIN, run on
 * both in the large case). */
static void expect_convt(rm_shape xs, int cout, int bias)
{
    int n = xs.n, cin = xs.c, h = xs.h, w = xs.w;
    size_t hw = (size_t)h * w, nx = rm_shape_numel(xs), ny = (size_t)n * cout * 4 * hw, nw = (size_t)cin * cout * 4;
    float *x = uniform(nx, 9), *wt = uniform(nw, 10), *b = bias ? uniform((size_t)cout, 11) : NULL,
          *dy = uniform(ny, 12);
    double *y_ = zeros(ny), *ya = zeros(ny), *dx_ = zeros(nx), *dxa = zeros(nx), *dw_ = zeros(nw), *dwa = zeros(nw);
    for (int i = 0; i < n; i++)
        for (int co = 0; co < cout; co++)
            for (int q = 0; q < 4; q++)
                for (size_t ij = 0; ij < hw; ij++) {
                    size_t yi = (((size_t)i * cout + co) * 2 * h + 2 * (ij / w) + q / 2) * 2 * w + 2 * (ij % w) + q % 2;
                    y_[yi] = b ? b[co] : 0.0, ya[yi] = b ? fabs(b[co]) : 0.0;
                    for (int ci = 0; ci < cin; ci++) {
                        size_t xi = ((size_t)i * cin + ci) * hw + ij, wi = ((size_t)ci * cout + co) * 4 + q;
                        double xv = x[xi], wv = wt[wi], g = dy[yi];
                        y_[yi] += wv * xv, ya[yi] += fabs(wv * xv);
                        dx_[xi] += g * wv, dxa[xi] += fabs(g * wv);
                        dw_[wi] += g * xv, dwa[wi] += fabs(g * xv);
                    }
                }
    rm_layer_config cfg = {.kind = RM_LAYER_CONV_TRANSPOSE2X2, .out_channels = cout, .bias = bias};
    exact_grads r = {y_, ya, dx_, dxa, dw_, dwa, (double)cin + 1, (double)cout * 4, (double)n * hw};
    char name[48];
    snprintf(name, sizeof name, "convt %dx%dx%dx%d -> %d", n, cin, h, w, cout);
    expect_fast_layer(name, &rm_conv_transpose2x2_desc, &cfg, xs, rm_shape_make(n, cout, 2 * h, 2 * w), x, wt, b, dy,
                      &r);
    free(x), free(wt), free(b), free(dy);
    free(y_), free(ya), free(dx_), free(dxa), free(dw_), free(dwa);
}

Test(cpu_fast, conv_transpose_against_naive)
{
    expect_convt(rm_shape_make(1, 3, 5, 7), 2, 1);
    expect_convt(rm_shape_make(3, 5, 4, 3), 7, 0);
    expect_convt(rm_shape_make(2, 64, 24, 24), 48, 1); /* threaded */
}

/* ---- what the thread count must not change ---------------------------------- */

/* Every output of one forward and backward of d on be, concatenated: the
 * output, the input gradients, dw, db and the running statistics. The
 * inputs, parameters and output gradient come from the seed. */
typedef struct layer_run {
    float *v;
    size_t n;
} layer_run;

static layer_run run_layer(const rm_layer_desc *d, rm_layer_config cfg, const rm_shape *in, int nin, rm_backend *be)
{
    rm_err e = {0};
    rm_shape ys, ws = {0, 0, 0, 0}, bs = {0, 0, 0, 0};
    cr_assert_eq(d->infer(&ys, &cfg, in, nin, &e), RM_OK, "%s", e.msg);
    if (d->param_shapes) d->param_shapes(&ws, &bs, &cfg, in, nin);
    size_t nin_total = 0, ny = rm_shape_numel(ys), nw = rm_shape_numel(ws), nb = rm_shape_numel(bs);
    for (int i = 0; i < nin; i++) nin_total += rm_shape_numel(in[i]);
    size_t nstats = cfg.kind == RM_LAYER_BATCHNORM2D ? 2 * (size_t)in[0].c : 0;
    layer_run r = {.n = ny + nin_total + nw + nb + nstats};
    r.v = calloc(r.n + 1, sizeof(float));
    float *x = uniform(nin_total, 9), *dy = uniform(ny, 10), *w = uniform(nw, 11), *b = uniform(nb, 12);
    float *out = r.v, *dx = out + ny, *dw = dx + nin_total, *db = dw + nw, *stats = db + nb;
    rm_layer_params prm;
    memset(&prm, 0, sizeof prm);
    if (nw) prm.w = rm_tensor_make(ws, w), prm.dw = rm_tensor_make(ws, dw);
    if (nb) prm.b = rm_tensor_make(bs, b), prm.db = rm_tensor_make(bs, db);
    if (nstats) {
        rm_shape cs = rm_shape_make(in[0].c, 1, 1, 1);
        prm.running_mean = rm_tensor_make(cs, stats), prm.running_var = rm_tensor_make(cs, stats + in[0].c);
    }
    rm_tensor tx[RM_MAX_INPUTS], tdx[RM_MAX_INPUTS], ty = rm_tensor_make(ys, out), tdy = rm_tensor_make(ys, dy);
    /* Loss layers: a class per sample (or per pixel), from the seed. */
    size_t nlabels = cfg.kind == RM_LAYER_PIXEL_SOFTMAX_XENT ? (size_t)in[0].n * in[0].h * in[0].w : (size_t)in[0].n;
    int32_t *labels = must(malloc(nlabels * sizeof *labels));
    rm_rng lr = rm_rng_make(13);
    for (size_t i = 0; i < nlabels; i++) labels[i] = (int32_t)(rm_rng_next(&lr) % (uint64_t)in[0].c);
    rm_layer_call call = {.cfg = &cfg,
                          .params = &prm,
                          .be = be,
                          .nin = nin,
                          .out = &ty,
                          .dout = &tdy,
                          .labels = labels,
                          .training = 1,
                          .update_stats = 1};
    size_t at = 0;
    for (int i = 0; i < nin; i++) {
        tx[i] = rm_tensor_make(in[i], x + at), tdx[i] = rm_tensor_make(in[i], dx + at);
        call.in[i] = &tx[i], call.din[i] = &tdx[i];
        at += rm_shape_numel(in[i]);
    }
    cr_assert_eq(rm_layer_forward(d, &call, &e), RM_OK, "%s: %s", d->name, e.msg);
    cr_assert_eq(rm_layer_backward(d, &call, &e), RM_OK, "%s: %s", d->name, e.msg);
    free(x), free(dy), free(w), free(b), free(labels);
    return r;
}

/* The reference loops split outputs, never a sum, between threads: the same
 * bits at 1 and 2 threads, and the fast library runs the same kernels for
 * every layer but conv2d, linear and dwconv (their fast kernels are tested
 * against the naive oracle above). Shapes past RM_LOOP_MIN outputs, so
 * that the loops do run on two threads. */
static void expect_thread_invariant(const rm_layer_desc *d, rm_layer_config cfg, const rm_shape *in, int nin)
{
    cr_assert_geq(rm_shape_numel(in[0]), (size_t)RM_LOOP_MIN);
    rm_backend *one = cpu(RM_CPU_KERNELS_REFERENCE, 1), *two = cpu(RM_CPU_KERNELS_REFERENCE, 2),
               *fast = cpu(RM_CPU_KERNELS_FAST, 2);
    layer_run a = run_layer(d, cfg, in, nin, one), b = run_layer(d, cfg, in, nin, two),
              c = run_layer(d, cfg, in, nin, fast);
    cr_assert_eq(memcmp(a.v, b.v, a.n * sizeof(float)), 0, "%s: 1 and 2 threads differ", d->name);
    if (d->kind != RM_LAYER_CONV2D && d->kind != RM_LAYER_LINEAR && d->kind != RM_LAYER_DWCONV2D)
        cr_assert_eq(memcmp(a.v, c.v, a.n * sizeof(float)), 0, "%s: the fast library differs", d->name);
    free(a.v), free(b.v), free(c.v);
    rm_backend_free(one), rm_backend_free(two), rm_backend_free(fast);
}

Test(cpu_fast, threaded_loops_give_the_same_bits)
{
    rm_shape x = rm_shape_make(4, 8, 96, 96), two[2] = {x, x}; /* pooled: still 73728 outputs */
    expect_thread_invariant(&rm_relu_desc, (rm_layer_config){.kind = RM_LAYER_RELU}, &x, 1);
    expect_thread_invariant(&rm_add_desc, (rm_layer_config){.kind = RM_LAYER_ADD}, two, 2);
    expect_thread_invariant(&rm_batchnorm2d_desc,
                            (rm_layer_config){.kind = RM_LAYER_BATCHNORM2D, .eps = 1e-5f, .momentum = 0.1f}, &x, 1);
    expect_thread_invariant(&rm_layernorm_desc, (rm_layer_config){.kind = RM_LAYER_LAYERNORM, .eps = 1e-5f}, &x, 1);
    rm_layer_config pool = {.kind = RM_LAYER_MAXPOOL2D, .kernel = {3, 3}, .stride = {2, 2}, .pad = {1, 1}};
    expect_thread_invariant(&rm_maxpool2d_desc, pool, &x, 1);
    pool.kind = RM_LAYER_AVGPOOL2D;
    expect_thread_invariant(&rm_avgpool2d_desc, pool, &x, 1);
    expect_thread_invariant(&rm_global_avgpool_desc, (rm_layer_config){.kind = RM_LAYER_GLOBAL_AVGPOOL}, &x, 1);
    rm_shape logits = rm_shape_make(70, 1000, 1, 1), pixels = rm_shape_make(2, 3, 120, 120);
    expect_thread_invariant(&rm_softmax_xent_desc, (rm_layer_config){.kind = RM_LAYER_SOFTMAX_XENT}, &logits, 1);
    expect_thread_invariant(&rm_pixel_softmax_xent_desc, (rm_layer_config){.kind = RM_LAYER_PIXEL_SOFTMAX_XENT},
                            &pixels, 1);
    /* The bias gradients of the reference convolutions. */
    expect_thread_invariant(
        &rm_conv2d_desc,
        (rm_layer_config){
            .kind = RM_LAYER_CONV2D, .out_channels = 5, .kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1}, .bias = 1},
        &x, 1);
    expect_thread_invariant(
        &rm_dwconv2d_desc,
        (rm_layer_config){.kind = RM_LAYER_DWCONV2D, .kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1}, .bias = 1}, &x,
        1);
}

/* The backend's own loops: gradient sum and the optimizer steps. */
Test(cpu_fast, backend_loops_give_the_same_bits)
{
    const size_t n = 100003;
    rm_backend *one = cpu(RM_CPU_KERNELS_REFERENCE, 1), *two = cpu(RM_CPU_KERNELS_FAST, 2);
    float *a = uniform(n, 13), *b = uniform(n, 14), *out1 = malloc(n * sizeof(float)),
          *out2 = malloc(n * sizeof(float));
    const float *src[2] = {a, b};
    rm_err e = {0};
    cr_assert_eq(one->ops->grad_sum(one->ctx, out1, src, 2, n, &e), RM_OK);
    cr_assert_eq(two->ops->grad_sum(two->ctx, out2, src, 2, n, &e), RM_OK);
    cr_assert_eq(memcmp(out1, out2, n * sizeof(float)), 0, "grad_sum differs");
    float *w1 = uniform(n, 15), *w2 = uniform(n, 15), *v1 = uniform(n, 16), *v2 = uniform(n, 16);
    cr_assert_eq(one->ops->sgd_update(one->ctx, w1, a, v1, n, 0.1f, 1e-4f, 0.9f, 1, &e), RM_OK);
    cr_assert_eq(two->ops->sgd_update(two->ctx, w2, a, v2, n, 0.1f, 1e-4f, 0.9f, 1, &e), RM_OK);
    cr_assert_eq(memcmp(w1, w2, n * sizeof(float)), 0, "sgd differs");
    rm_adam_scalars k = {0.9f, 0.1f, 0.999f, 0.001f, 1e-8f, 1e-3f, 0.03f, 0.0f, 1.0f};
    cr_assert_eq(one->ops->adam_update(one->ctx, w1, a, v1, out1, n, &k, &e), RM_OK);
    cr_assert_eq(two->ops->adam_update(two->ctx, w2, a, v2, out2, n, &k, &e), RM_OK);
    cr_assert_eq(memcmp(w1, w2, n * sizeof(float)), 0, "adam differs");
    free(a), free(b), free(out1), free(out2), free(w1), free(w2), free(v1), free(v2);
    rm_backend_free(one), rm_backend_free(two);
}

/* ---- workspace ------------------------------------------------------------------ */

/* The fast kernels in a workspace of exactly the size they declare (stale
 * contents, NaN) compute what they compute with their own, refuse one byte
 * less, fit the CPU kind's bound the executor allocates, and never need
 * more than the reference (so the fixed memory does not depend on the
 * library). */
Test(cpu_fast, conv_workspace_is_exact_and_bounded)
{
    const conv_case c = {"ws", rm_shape_make(2, 3, 9, 7), 5, 3, 2, 1, 1, 0, 0, 0, 0, 0, 0};
    rm_layer_config cfg = {
        .kind = RM_LAYER_CONV2D, .out_channels = 5, .kernel = {3, 3}, .stride = {2, 2}, .pad = {1, 1}, .bias = 1};
    rm_backend *be = cpu(RM_CPU_KERNELS_FAST, 2);
    rm_shape ys;
    rm_err e = {0};
    cr_assert_eq(rm_conv2d_desc.infer(&ys, &cfg, &c.x, 1, &e), RM_OK, "%s", e.msg);
    size_t need = 0;
    for (int back = 0; back < 2; back++) {
        size_t n = rm_layer_workspace_bytes_device(&rm_conv2d_desc, be, &cfg, &c.x, 1, ys, back);
        cr_assert_leq(n, rm_backend_kind_layer_workspace(RM_BACKEND_CPU, &rm_conv2d_desc, &cfg, &c.x, 1, ys, back));
        cr_assert_leq(n, rm_conv2d_desc.workspace_bytes(&cfg, &c.x, 1, ys, 1), "more than the reference's");
        if (n > need) need = n;
    }
    cr_assert_eq(need, (size_t)3 * 9 * 5 * 4 * sizeof(float), "one image's im2col: 27 taps x 20 pixels");
    size_t nx = rm_shape_numel(c.x), ny = rm_shape_numel(ys), nw = 5 * 27;
    float *x = uniform(nx, 1), *w = uniform(nw, 2), *b = uniform(5, 3), *dy = uniform(ny, 4);
    float *own = malloc((ny + nx + nw + 5) * sizeof(float)), *given = malloc((ny + nx + nw + 5) * sizeof(float));
    run_conv(own, own + ny, own + ny + nx, own + ny + nx + nw, &c, ys, x, w, b, dy, be);
    float *scratch = malloc(need);
    for (size_t i = 0; i < need / sizeof(float); i++) scratch[i] = NAN;
    rm_shape wsh, bsh;
    rm_conv2d_desc.param_shapes(&wsh, &bsh, &cfg, &c.x, 1);
    float *y = given, *dx = y + ny, *dw = dx + nx, *db = dw + nw;
    rm_layer_params prm = {.w = rm_tensor_make(wsh, w),
                           .b = rm_tensor_make(bsh, b),
                           .dw = rm_tensor_make(wsh, dw),
                           .db = rm_tensor_make(bsh, db)};
    rm_tensor tx = rm_tensor_make(c.x, x), ty = rm_tensor_make(ys, y), tdy = rm_tensor_make(ys, dy),
              tdx = rm_tensor_make(c.x, dx);
    rm_layer_call call = one_input_call(&cfg, &prm, be, &tx, &ty, &tdy, &tdx);
    call.workspace = scratch, call.workspace_size = need;
    cr_assert_eq(rm_layer_forward(&rm_conv2d_desc, &call, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_layer_backward(&rm_conv2d_desc, &call, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(memcmp(own, given, (ny + nx + nw + 5) * sizeof(float)), 0, "a given workspace changes the result");
    call.workspace_size = need - 1;
    cr_assert_eq(rm_layer_forward(&rm_conv2d_desc, &call, &e), RM_ERR_INVALID);
    cr_assert_eq(rm_layer_backward(&rm_conv2d_desc, &call, &e), RM_ERR_INVALID);
    /* A 1x1 stride-1 convolution of one image reads its input in place: no
     * workspace. Two such small images share one product: their columns and
     * outputs side by side, still within the reference's workspace. */
    rm_layer_config one = {.kind = RM_LAYER_CONV2D, .out_channels = 4, .kernel = {1, 1}, .stride = {1, 1}};
    rm_shape x1 = rm_shape_make(1, 3, 9, 7);
    cr_assert_eq(rm_layer_workspace_bytes_device(&rm_conv2d_desc, be, &one, &x1, 1, rm_shape_make(1, 4, 9, 7), 1), 0);
    cr_assert_eq(rm_layer_workspace_bytes_device(&rm_conv2d_desc, be, &one, &c.x, 1, rm_shape_make(2, 4, 9, 7), 1),
                 (size_t)(3 + 4) * 63 * 2 * sizeof(float));
    cr_assert_leq(rm_layer_workspace_bytes_device(&rm_conv2d_desc, be, &one, &c.x, 1, rm_shape_make(2, 4, 9, 7), 1),
                  rm_conv2d_desc.workspace_bytes(&one, &c.x, 1, rm_shape_make(2, 4, 9, 7), 1));
    free(x), free(w), free(b), free(dy), free(own), free(given), free(scratch);
    rm_backend_free(be);
}

/* ---- choosing a library and threads ---------------------------------------------- */

Test(cpu_fast, names_environment_and_settings)
{
    rm_err e = {0};
    rm_cpu_kernel_lib lib;
    cr_expect_eq(rm_cpu_kernel_lib_parse(&lib, "reference", &e), RM_OK);
    cr_expect_eq(lib, RM_CPU_KERNELS_REFERENCE);
    cr_expect_eq(rm_cpu_kernel_lib_parse(&lib, "fast", &e), RM_OK);
    cr_expect_eq(lib, RM_CPU_KERNELS_FAST);
    cr_expect_eq(rm_cpu_kernel_lib_parse(&lib, "blas", &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "'blas' (reference or fast)") != NULL, "%s", e.msg);
    cr_expect_str_eq(rm_cpu_kernel_lib_name(RM_CPU_KERNELS_FAST), "fast");
    int n = 0;
    cr_expect_eq(rm_backend_threads_parse(&n, "3", &e), RM_OK);
    cr_expect_eq(n, 3);
    cr_expect_eq(rm_backend_threads_parse(&n, "0", &e), RM_ERR_INVALID);
    cr_expect_eq(rm_backend_threads_parse(&n, "2x", &e), RM_ERR_INVALID);
    cr_expect_eq(rm_backend_threads_parse(&n, "100000", &e), RM_ERR_INVALID);

    /* Defaults: fast on every core; the environment overrides both. */
    unsetenv("REMAT_CPU_KERNELS"), unsetenv("REMAT_THREADS");
    rm_backend *be = NULL;
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cpu_kernels(be), RM_CPU_KERNELS_FAST);
    cr_expect_eq(rm_backend_cpu_threads(be), rm_usable_cores());
    rm_backend_free(be);
    setenv("REMAT_CPU_KERNELS", "reference", 1), setenv("REMAT_THREADS", "3", 1);
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cpu_kernels(be), RM_CPU_KERNELS_REFERENCE);
    cr_expect_eq(rm_backend_cpu_threads(be), 3);
    char buf[160];
    cr_expect_str_eq(rm_backend_describe(be, buf, sizeof buf), "reference kernels, 3 threads");
    rm_backend_free(be);
    setenv("REMAT_THREADS", "lots", 1);
    cr_expect_eq(rm_backend_cpu_create(&be, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "REMAT_THREADS") != NULL, "%s", e.msg);
    setenv("REMAT_THREADS", "1", 1), setenv("REMAT_CPU_KERNELS", "fastest", 1);
    cr_expect_eq(rm_backend_cpu_create(&be, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "REMAT_CPU_KERNELS") != NULL, "%s", e.msg);
    unsetenv("REMAT_CPU_KERNELS"), unsetenv("REMAT_THREADS");

    /* Settings: the host backend is the reference on one thread, fixed. */
    cr_expect_eq(rm_backend_cpu_kernels(rm_backend_host()), RM_CPU_KERNELS_REFERENCE);
    cr_expect_eq(rm_backend_cpu_threads(NULL), 1);
    cr_expect_eq(rm_backend_cpu_set_threads(rm_backend_host(), 2, &e), RM_ERR_INVALID);
    be = cpu(RM_CPU_KERNELS_FAST, 2);
    cr_expect_eq(rm_backend_cpu_set_threads(be, 0, &e), RM_ERR_INVALID);
    cr_expect_eq(rm_backend_cpu_set_kernels(be, RM_CPU_KERNELS_COUNT, &e), RM_ERR_INVALID);
    rm_backend_options o = {.set_kernels = 1, .kernels = RM_CPU_KERNELS_REFERENCE, .threads = 1};
    cr_expect_eq(rm_backend_apply(be, &o, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cpu_kernels(be), RM_CPU_KERNELS_REFERENCE);
    cr_expect_eq(rm_backend_cpu_threads(be), 1);
    cr_expect(strstr(rm_cpu_blas_describe(buf, sizeof buf), "BLIS") != NULL, "%s", buf);
    rm_backend_free(be);
}

/* ---- products split between threads ---------------------------------------------- */

/* rm_cpu_sgemm splits the longer side of a product between the threads,
 * each thread one BLIS call: every transposition, beta 0 and 1, taller and
 * wider than long, at 2, 3 and 5 threads, the same bits as one thread. */
Test(cpu_fast, sgemm_bits_do_not_depend_on_threads)
{
    const struct {
        size_t m, n, k;
    } shapes[] = {{64, 3001, 75}, {700, 90, 131}, {33, 250, 600}};
    rm_backend *one = cpu(RM_CPU_KERNELS_FAST, 1);
    rm_err e = {0};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        size_t m = shapes[s].m, n = shapes[s].n, k = shapes[s].k;
        cr_assert_geq((double)m * n * k, 4e6, "a product large enough to be split");
        float *a = uniform(m * k, 21), *b = uniform(k * n, 22), *c0 = uniform(m * n, 23);
        float *want = must(malloc(m * n * sizeof(float))), *got = must(malloc(m * n * sizeof(float)));
        for (int tr = 0; tr < 4; tr++)
            for (int beta = 0; beta < 2; beta++) {
                int ta = tr & 1, tb = tr >> 1;
                size_t lda = ta ? m : k, ldb = tb ? k : n;
                memcpy(want, c0, m * n * sizeof(float));
                cr_assert_eq(rm_cpu_sgemm(one, ta, tb, m, n, k, a, lda, b, ldb, (float)beta, want, n, "test", &e),
                             RM_OK, "%s", e.msg);
                for (int threads = 2; threads <= 5; threads += threads == 3 ? 2 : 1) {
                    rm_backend *be = cpu(RM_CPU_KERNELS_FAST, threads);
                    memcpy(got, c0, m * n * sizeof(float));
                    cr_assert_eq(rm_cpu_sgemm(be, ta, tb, m, n, k, a, lda, b, ldb, (float)beta, got, n, "test", &e),
                                 RM_OK, "%s", e.msg);
                    for (size_t i = 0; i < m * n; i++)
                        cr_assert_eq(memcmp(&got[i], &want[i], sizeof(float)), 0,
                                     "%zu x %zu x %zu, trans %d %d, beta %d, %d threads: c[%zu] is %.9g, on one thread "
                                     "%.9g",
                                     m, n, k, ta, tb, beta, threads, i, (double)got[i], (double)want[i]);
                    rm_backend_free(be);
                }
            }
        free(a), free(b), free(c0), free(want), free(got);
    }
    rm_backend_free(one);
}

/* ---- the thread governor ------------------------------------------------------------ */

/* A simulated machine of 2 cores for the governor's readings: each reading
 * is 0.2 s later. While `busy` another process keeps a core: our threads
 * wait for a CPU a third of their time (three runnable threads on two
 * cores) and no core is idle. Otherwise our threads never wait, and a core
 * is idle whenever we run on one thread. */
typedef struct sim_machine {
    rm_backend *be;
    int busy, fail, readings;
    rm_cpu_load now;
} sim_machine;

static int sim_read(void *ctx, rm_cpu_load *out)
{
    sim_machine *m = ctx;
    if (m->fail) return -1;
    int nt = rm_backend_cpu_threads(m->be);
    m->now.wall_s += 0.2;
    if (m->busy)
        m->now.wait_s += 0.2 * nt / 3.0;
    else
        m->now.idle_s += 0.2 * (2 - nt);
    m->readings++;
    *out = m->now;
    return 0;
}

/* The decisions alone: a third of two threads' time waiting, two windows
 * in a row, drops to one; after the hold, one thread that does not wait
 * itself tries two again (at once when a core stood idle); a trial undone
 * at once makes the hold 4 times longer, one that lasts resets it. */
Test(cpu_threads, governor_decisions)
{
    rm_cpu_governor g;
    rm_cpu_governor_start(&g, 2, sim_read, NULL, 0.2);
    cr_assert(g.on);
    cr_expect_eq(rm_cpu_governor_decide(&g, 2, 0.2, 0.01, 0.0), 2, "an idle machine's background");
    cr_expect_eq(rm_cpu_governor_decide(&g, 2, 0.2, 0.133, 0.0), 2, "one window: perhaps a burst");
    cr_expect_eq(rm_cpu_governor_decide(&g, 2, 0.2, 0.133, 0.0), 1, "one busy process on two cores");
    cr_expect_eq(rm_cpu_governor_decide(&g, 1, 0.2, 0.1, 0.0), 1, "even one thread waits: no trial");
    cr_expect_eq(rm_cpu_governor_decide(&g, 1, 0.2, 0.0, 0.0), 1, "held one window after the drop");
    cr_expect_eq(rm_cpu_governor_decide(&g, 1, 0.2, 0.0, 0.0), 2, "then a trial of two");
    cr_expect_eq(rm_cpu_governor_decide(&g, 2, 0.2, 0.133, 0.0), 1, "busy again at once: no second strike");
    for (int i = 0; i < 4; i++) cr_expect_eq(rm_cpu_governor_decide(&g, 1, 0.2, 0.0, 0.0), 1, "held 4 windows");
    cr_expect_eq(rm_cpu_governor_decide(&g, 1, 0.2, 0.0, 0.0), 2);
    for (int i = 0; i < 5; i++) cr_expect_eq(rm_cpu_governor_decide(&g, 2, 0.2, 0.0, 0.0), 2, "the rise held");
    cr_expect_eq(rm_cpu_governor_decide(&g, 2, 0.2, 0.2, 0.0), 2);
    cr_expect_eq(rm_cpu_governor_decide(&g, 2, 0.2, 0.2, 0.0), 1);
    cr_expect_eq(rm_cpu_governor_decide(&g, 1, 0.2, 0.0, 0.2), 2, "a core stood idle: no hold");
    cr_expect_eq(g.drops, 3);
    /* Many busy processes: the count drops by the cores' worth of waiting. */
    rm_cpu_governor_start(&g, 8, sim_read, NULL, 0.2);
    cr_expect_eq(rm_cpu_governor_decide(&g, 8, 0.2, 0.2 * 3, 0.0), 8);
    cr_expect_eq(rm_cpu_governor_decide(&g, 8, 0.2, 0.2 * 3, 0.0), 5);
    cr_expect_eq(rm_cpu_governor_decide(&g, 5, 0.2, 0.2 * 9, 0.0), 5);
    cr_expect_eq(rm_cpu_governor_decide(&g, 5, 0.2, 0.2 * 9, 0.0), 1);
    cr_expect_eq(rm_cpu_governor_decide(&g, 1, 0.0, 0.0, 0.0), 1, "no time passed: no decision");
    rm_cpu_governor_start(&g, 1, sim_read, NULL, 0.2);
    cr_expect_not(g.on, "one core: nothing to govern");
}

/* A backend left to choose its threads, on a simulated machine: another
 * process takes a core (the count drops to 1 within a layer call's
 * readings and stays there while the core is busy), then gives it back
 * (the count returns to 2); and every call's results are the bits of a
 * fixed one-thread backend, whatever the count did meanwhile. Before the
 * governor the count stayed at 2 on a busy machine. */
Test(cpu_threads, busy_core_drops_to_one_thread_and_back_with_the_same_bits, .timeout = 120)
{
    const conv_case c = {"threaded", rm_shape_make(3, 9, 34, 30), 17, 3, 1, 1, 1, 0, 0, 0, 0, 0, 0};
    rm_layer_config cfg = {
        .kind = RM_LAYER_CONV2D, .out_channels = 17, .kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1}, .bias = 1};
    rm_shape ys;
    rm_err e = {0};
    cr_assert_eq(rm_conv2d_desc.infer(&ys, &cfg, &c.x, 1, &e), RM_OK, "%s", e.msg);
    size_t nx = rm_shape_numel(c.x), ny = rm_shape_numel(ys), nw = 17 * 9 * 9, nall = ny + nx + nw + 17;
    float *x = uniform(nx, 1), *w = uniform(nw, 2), *b = uniform(17, 3), *dy = uniform(ny, 4);
    float *want = must(malloc(nall * sizeof(float))), *got = must(malloc(nall * sizeof(float)));
    rm_backend *one = cpu(RM_CPU_KERNELS_FAST, 1);
    run_conv(want, want + ny, want + ny + nx, want + ny + nx + nw, &c, ys, x, w, b, dy, one);

    rm_backend *be = cpu(RM_CPU_KERNELS_FAST, 2);
    cr_expect_not(rm_backend_cpu_adaptive(be), "a count that was set stays");
    sim_machine m = {.be = be};
    cr_assert_eq(rm_backend_cpu_govern(be, sim_read, &m, 0, &e), RM_OK, "%s", e.msg);
    cr_assert(rm_backend_cpu_adaptive(be));
    cr_assert_eq(rm_backend_cpu_max_threads(be), 2);
    /* Each run_conv is two layer calls (a reading each); the first reading
     * only starts the clock. */
    const struct {
        int busy, threads_after;
    } phase[] = {{0, 2}, {0, 2}, {1, 1}, {1, 1}, {1, 1}, {0, 2}, {0, 2}, {0, 2}, {1, 1}};
    for (size_t i = 0; i < sizeof phase / sizeof phase[0]; i++) {
        m.busy = phase[i].busy;
        memset(got, 0, nall * sizeof(float));
        run_conv(got, got + ny, got + ny + nx, got + ny + nx + nw, &c, ys, x, w, b, dy, be);
        cr_expect_eq(rm_backend_cpu_threads(be), phase[i].threads_after, "phase %zu (%s): %d threads", i,
                     m.busy ? "busy" : "free", rm_backend_cpu_threads(be));
        cr_assert_eq(memcmp(got, want, nall * sizeof(float)), 0, "phase %zu: not the one-thread bits", i);
    }
    cr_expect_eq(m.readings, 2 * (int)(sizeof phase / sizeof phase[0]));
    /* A machine that cannot be read: the governor stops, the count stays. */
    m.fail = 1;
    run_conv(got, got + ny, got + ny + nx, got + ny + nx + nw, &c, ys, x, w, b, dy, be);
    cr_expect_not(rm_backend_cpu_adaptive(be));
    cr_expect_eq(rm_backend_cpu_threads(be), 1);
    /* No reader fixes the count where it is; so does setting it. */
    m.fail = 0;
    cr_assert_eq(rm_backend_cpu_set_threads(be, 2, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cpu_govern(be, sim_read, &m, 0, &e), RM_OK, "%s", e.msg);
    cr_assert(rm_backend_cpu_adaptive(be));
    m.busy = 1;
    for (int i = 0; i < 2; i++) run_conv(got, got + ny, got + ny + nx, got + ny + nx + nw, &c, ys, x, w, b, dy, be);
    cr_assert_eq(rm_backend_cpu_threads(be), 1);
    cr_assert_eq(rm_backend_cpu_govern(be, NULL, NULL, 0, &e), RM_OK, "%s", e.msg);
    cr_expect_not(rm_backend_cpu_adaptive(be));
    cr_expect_eq(rm_backend_cpu_threads(be), 1, "the count stays where the governor left it");
    cr_assert_eq(rm_backend_cpu_govern(be, sim_read, &m, 0, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cpu_set_threads(be, 2, &e), RM_OK, "%s", e.msg);
    cr_expect_not(rm_backend_cpu_adaptive(be));
    cr_expect_eq(rm_backend_cpu_govern(rm_backend_host(), sim_read, &m, 0, &e), RM_ERR_INVALID);
    free(x), free(w), free(b), free(dy), free(want), free(got);
    rm_backend_free(one), rm_backend_free(be);
}

/* The default: a backend created without REMAT_THREADS follows the load on
 * a machine of several cores, with /proc's readings (which this Linux
 * gives: the clock and the waiting only grow); REMAT_THREADS fixes the
 * count. */
Test(cpu_threads, default_follows_the_load_unless_the_count_is_given)
{
    rm_err e = {0};
    unsetenv("REMAT_THREADS");
    rm_backend *be = NULL;
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cpu_adaptive(be), rm_usable_cores() > 1);
    cr_expect_eq(rm_backend_cpu_max_threads(be), rm_usable_cores());
    rm_backend_free(be);
    setenv("REMAT_THREADS", "2", 1);
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK, "%s", e.msg);
    cr_expect_not(rm_backend_cpu_adaptive(be));
    cr_expect_eq(rm_backend_cpu_threads(be), 2);
    rm_backend_free(be);
    unsetenv("REMAT_THREADS");
    rm_cpu_load a, b;
    cr_assert_eq(rm_cpu_load_read_proc(NULL, &a), 0, "/proc/self/task/*/schedstat and /proc/stat");
    volatile double sink = 0;
    for (int i = 0; i < 2000000; i++) sink += i;
    cr_assert_eq(rm_cpu_load_read_proc(NULL, &b), 0);
    cr_expect_gt(b.wall_s, a.wall_s);
    cr_expect_geq(b.wait_s, a.wait_s);
    cr_expect_geq(b.idle_s, a.idle_s);
}

/* BLIS 0.9 reads BLIS_ARCH_TYPE with atoi: an empty or named value chose its
 * AVX-512 kernels, and a CPU without AVX-512 died of SIGILL in the first
 * product. An empty value is now unset, a value that is not an id is
 * refused, and so is an AVX-512 configuration on a CPU without it. (Each
 * test runs in a process of its own, so BLIS is not yet initialised.) */
Test(cpu_fast, blis_arch_type_empty_means_unset)
{
    setenv("BLIS_ARCH_TYPE", "", 1);
    rm_backend *be = cpu(RM_CPU_KERNELS_FAST, 1);
    rm_err e = {0};
    float a[4] = {1, 2, 3, 4}, b[4] = {5, 6, 7, 8}, c[4] = {0};
    cr_assert_eq(rm_cpu_sgemm(be, 0, 0, 2, 2, 2, a, 2, b, 2, 0.0f, c, 2, "test", &e), RM_OK, "%s", e.msg);
    cr_assert(c[0] == 19 && c[1] == 22 && c[2] == 43 && c[3] == 50, "%g %g %g %g", c[0], c[1], c[2], c[3]);
    rm_backend_free(be);
}

Test(cpu_fast, blis_arch_type_blis_cannot_run_is_refused)
{
    setenv("BLIS_ARCH_TYPE", "haswell", 1);
    rm_err e = {0};
    cr_assert_neq(rm_cpu_blas_init(&e), RM_OK);
    cr_assert(strstr(e.msg, "BLIS_ARCH_TYPE='haswell' is not one of"), "%s", e.msg);
}
