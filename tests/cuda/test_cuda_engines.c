/* The CUDA kernel libraries (handwritten, cublas, cudnn; "engines" in the
 * suite's older name, kept so that filters still match) against the CPU
 * reference, for the four layers that have library paths: conv2d, linear,
 * batchnorm2d, conv_transpose2x2. Odd shapes (a fixed list plus one drawn
 * from a seeded generator per layer), random non-zero data, forward and
 * backward, in the default deterministic, precise mode. Checked for each:
 *  - every output within tolerance of the CPU reference (the measure of
 *    test_cuda_layers.c): 1e-5 for handwritten, which sums in double like the
 *    reference; 2e-4 for cublas / cudnn, which sum in float32 (error grows
 *    with the reduction length, a few hundred terms here);
 *  - determinism: the same call twice gives the same bits; for batchnorm a
 *    recomputed forward (update_stats = 0) gives the first forward's bits
 *    and leaves the running statistics alone;
 *  - the workspace: rm_layer_workspace_bytes_device (exactly that many bytes
 *    are handed to every call) never exceeds desc.workspace_bytes_cuda;
 *  - no silent fallback to the hand-written kernels.
 * Part of remat_cuda_tests, whose main (test_cuda_layers.c) skips the whole
 * binary without a usable GPU. REMAT_CUDA_REPORT=<file> appends
 * "layer library/case tensor error" lines, as the layer suite does. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_fixture.h"
#include "layers.h"

#define TOL_EXACT 1e-5
#define TOL_FLOAT 2e-4

typedef struct ecase {
    char name[48];
    rm_layer_config cfg;
    rm_shape in;
    int training, update_stats;
} ecase;

/* n floats of dev in a new host buffer. */
static float *download(devmem *m, const void *dev, size_t n)
{
    float *h = malloc((n ? n : 1) * sizeof *h);
    cr_assert_not_null(h);
    dev_download(m, h, dev, n * sizeof *h);
    return h;
}

/* got against want by the suite's measure (rel_err), reported and expected within tol. */
static void compare(const float *got, const float *want, size_t n, double tol, const char *layer, const char *engine,
                    const ecase *c, const char *tensor)
{
    size_t worst;
    double err = rel_err(got, want, n, &worst);
    report_line("%s %s/%s %s %.3e", layer, engine, c->name, tensor, err);
    cr_expect(err <= tol, "%s [%s] %s %s: relative error %.3e > %.1e (element %zu: gpu %.9g, cpu %.9g)", layer, engine,
              c->name, tensor, err, tol, worst, n ? (double)got[worst] : 0.0, n ? (double)want[worst] : 0.0);
}

static void expect_same_bits(const float *a, const float *b, size_t n, const char *layer, const char *engine,
                             const ecase *c, const char *tensor)
{
    size_t diff = n;
    for (size_t i = 0; i < n && diff == n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a)) diff = i;
    cr_expect(diff == n, "%s [%s] %s %s: not deterministic: element %zu is %.9g, then %.9g", layer, engine, c->name,
              tensor, diff, diff < n ? (double)a[diff] : 0.0, diff < n ? (double)b[diff] : 0.0);
}

static rm_backend *engine_backend(rm_kernel_lib engine)
{
    rm_backend *be = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_backend_cuda_create(&be, 0, &e), RM_OK, "cuda backend: %s", e.msg);
    cr_assert_eq(rm_backend_cuda_set_kernels(be, engine, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cuda_set_deterministic(be, 1, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cuda_set_fast_math(be, 0, &e), RM_OK, "%s", e.msg);
    return be;
}

/* One layer call pair on the GPU: forward then backward, writing into the
 * buffers given; the workspace is exactly what the engine reports. */
typedef struct gpu_bufs {
    float *out, *dx, *dw, *db;
} gpu_bufs;

static void run_case(rm_kernel_lib engine, rm_layer_kind kind, const ecase *c)
{
    const rm_layer_desc *d = rm_layer_desc_of(kind);
    const char *en = rm_kernel_lib_name(engine);
    double tol = engine == RM_KERNELS_HANDWRITTEN ? TOL_EXACT : TOL_FLOAT;
    rm_err e = {0};
    rm_shape os;
    cr_assert_eq(d->infer(&os, &c->cfg, &c->in, 1, &e), RM_OK, "%s %s: %s", d->name, c->name, e.msg);
    rm_shape ws = {0, 0, 0, 0}, bs = {0, 0, 0, 0};
    if (d->param_shapes) d->param_shapes(&ws, &bs, &c->cfg, &c->in, 1);
    rm_rng rng = rm_rng_make(0xe9e1e000u + (uint64_t)kind * 977u + (uint64_t)c->in.h * 31u + (uint64_t)c->in.c);
    int is_bn = kind == RM_LAYER_BATCHNORM2D;
    size_t nx = rm_shape_numel(c->in), nw = rm_shape_numel(ws), nb = rm_shape_numel(bs), no = rm_shape_numel(os);
    size_t nc = (size_t)c->in.c;
    float *x = host_random(nx, &rng), *w = host_random(nw, &rng), *b = host_random(nb, &rng);
    float *dy = host_random(no, &rng), *rmean = host_random(nc, &rng), *rvar = host_random(nc, &rng);
    for (size_t i = 0; i < nc; i++) rvar[i] = 0.5f + fabsf(rvar[i]);

    /* CPU reference. */
    float *cpu_out = host_fill(no, 1e30f), *cpu_dx = host_fill(nx, 1e30f), *cpu_dw = host_fill(nw, 1e30f);
    float *cpu_db = host_fill(nb, 1e30f), *cpu_rmean = malloc(nc * sizeof(float)), *cpu_rvar = malloc(nc * sizeof(float));
    memcpy(cpu_rmean, rmean, nc * sizeof(float));
    memcpy(cpu_rvar, rvar, nc * sizeof(float));
    rm_tensor tx = rm_tensor_make(c->in, x), tout = rm_tensor_make(os, cpu_out), tdy = rm_tensor_make(os, dy);
    rm_tensor tdx = rm_tensor_make(c->in, cpu_dx);
    rm_layer_params prm;
    memset(&prm, 0, sizeof prm);
    prm.w = rm_tensor_make(ws, nw ? w : NULL);
    prm.b = rm_tensor_make(bs, nb ? b : NULL);
    if (is_bn) {
        prm.running_mean = rm_tensor_make(rm_shape_make((int)nc, 1, 1, 1), cpu_rmean);
        prm.running_var = rm_tensor_make(rm_shape_make((int)nc, 1, 1, 1), cpu_rvar);
    }
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &c->cfg, call.params = &prm, call.nin = 1, call.in[0] = &tx, call.out = &tout;
    call.training = c->training, call.update_stats = c->update_stats;
    cr_assert_eq(rm_layer_forward(d, &call, &e), RM_OK, "cpu forward: %s", e.msg);
    prm.dw = rm_tensor_make(ws, nw ? cpu_dw : NULL);
    prm.db = rm_tensor_make(bs, nb ? cpu_db : NULL);
    call.din[0] = &tdx, call.dout = &tdy;
    cr_assert_eq(rm_layer_backward(d, &call, &e), RM_OK, "cpu backward: %s", e.msg);

    /* GPU. */
    devmem m = {engine_backend(engine), {0}, 0};
    size_t ws_fwd = rm_layer_workspace_bytes_device(d, m.be, &c->cfg, &c->in, 1, os, 0);
    size_t ws_bwd = rm_layer_workspace_bytes_device(d, m.be, &c->cfg, &c->in, 1, os, 1);
    if (d->workspace_bytes_cuda) {
        size_t bound_f = d->workspace_bytes_cuda(&c->cfg, &c->in, 1, os, 0);
        size_t bound_b = d->workspace_bytes_cuda(&c->cfg, &c->in, 1, os, 1);
        cr_expect(ws_fwd <= bound_f && ws_bwd <= bound_b,
                  "%s [%s] %s: engine workspace %zu / %zu exceeds the descriptor's bound %zu / %zu", d->name, en,
                  c->name, ws_fwd, ws_bwd, bound_f, bound_b);
    } else {
        cr_expect(ws_fwd == 0 && ws_bwd == 0, "%s [%s]: workspace %zu / %zu but no workspace_bytes_cuda", d->name, en,
                  ws_fwd, ws_bwd);
    }
    void *gws = dev_upload(&m, NULL, (ws_fwd > ws_bwd ? ws_fwd : ws_bwd) + 64);
    float *gx = dev_upload(&m, x, nx * sizeof(float)), *gdy = dev_upload(&m, dy, no * sizeof(float));
    float *gw = nw ? dev_upload(&m, w, nw * sizeof(float)) : NULL, *gb = nb ? dev_upload(&m, b, nb * sizeof(float)) : NULL;
    float *g_rmean = is_bn ? dev_upload(&m, rmean, nc * sizeof(float)) : NULL;
    float *g_rvar = is_bn ? dev_upload(&m, rvar, nc * sizeof(float)) : NULL;
    size_t big = no > nx ? no : nx;
    big = big > nw ? big : nw;
    float *garbage1 = host_fill(big, 1e30f), *garbage2 = host_fill(big, -7.0f);
    gpu_bufs run[2];
    for (int r = 0; r < 2; r++) {
        float *g = r ? garbage2 : garbage1;
        run[r].out = dev_upload(&m, g, no * sizeof(float));
        run[r].dx = dev_upload(&m, g, nx * sizeof(float));
        run[r].dw = nw ? dev_upload(&m, g, nw * sizeof(float)) : NULL;
        run[r].db = nb ? dev_upload(&m, g, nb * sizeof(float)) : NULL;
    }
    rm_layer_params gprm;
    memset(&gprm, 0, sizeof gprm);
    gprm.w = rm_tensor_make(ws, gw);
    gprm.b = rm_tensor_make(bs, gb);
    if (is_bn) {
        gprm.running_mean = rm_tensor_make(rm_shape_make((int)nc, 1, 1, 1), g_rmean);
        gprm.running_var = rm_tensor_make(rm_shape_make((int)nc, 1, 1, 1), g_rvar);
    }
    rm_tensor gtx = rm_tensor_make(c->in, gx), gtdy = rm_tensor_make(os, gdy), gtout, gtdx;
    rm_layer_call g;
    memset(&g, 0, sizeof g);
    g.cfg = &c->cfg, g.params = &gprm, g.be = m.be, g.nin = 1, g.in[0] = &gtx, g.out = &gtout;
    g.training = c->training;
    g.workspace = gws;

    float *rm_after[2] = {NULL, NULL}, *rv_after[2] = {NULL, NULL};
    for (int r = 0; r < 2; r++) {
        /* Forward; the second one is a recomputation: no statistics update. */
        gtout = rm_tensor_make(os, run[r].out);
        g.update_stats = r == 0 ? c->update_stats : 0;
        g.dout = NULL, g.din[0] = NULL;
        gprm.dw = rm_tensor_make(ws, NULL), gprm.db = rm_tensor_make(bs, NULL);
        g.workspace_size = ws_fwd;
        cr_assert_eq(rm_layer_forward(d, &g, &e), RM_OK, "%s [%s] %s forward: %s", d->name, en, c->name, e.msg);
        cr_assert_eq(m.be->ops->sync(m.be->ctx, &e), RM_OK, "%s [%s] forward: %s", d->name, en, e.msg);
        if (is_bn) rm_after[r] = download(&m, g_rmean, nc), rv_after[r] = download(&m, g_rvar, nc);
        /* Backward: only x (RM_READS_INPUTS) carries data besides dy. */
        gtout.data = d->backward_reads & RM_READS_OUTPUT ? run[r].out : NULL;
        gtdx = rm_tensor_make(c->in, run[r].dx);
        g.din[0] = &gtdx, g.dout = &gtdy;
        gprm.dw = rm_tensor_make(ws, run[r].dw), gprm.db = rm_tensor_make(bs, run[r].db);
        g.workspace_size = ws_bwd;
        cr_assert_eq(rm_layer_backward(d, &g, &e), RM_OK, "%s [%s] %s backward: %s", d->name, en, c->name, e.msg);
        cr_assert_eq(m.be->ops->sync(m.be->ctx, &e), RM_OK, "%s [%s] backward: %s", d->name, en, e.msg);
    }

    float *y[2], *dx[2], *dw[2], *db[2];
    for (int r = 0; r < 2; r++) {
        y[r] = download(&m, run[r].out, no), dx[r] = download(&m, run[r].dx, nx);
        dw[r] = download(&m, run[r].dw, nw), db[r] = download(&m, run[r].db, nb);
    }
    compare(y[0], cpu_out, no, tol, d->name, en, c, "y");
    compare(dx[0], cpu_dx, nx, tol, d->name, en, c, "dx");
    if (nw) compare(dw[0], cpu_dw, nw, tol, d->name, en, c, "dw");
    if (nb) compare(db[0], cpu_db, nb, tol, d->name, en, c, "db");
    if (is_bn && c->training && c->update_stats) {
        compare(rm_after[0], cpu_rmean, nc, tol, d->name, en, c, "running_mean");
        compare(rv_after[0], cpu_rvar, nc, tol, d->name, en, c, "running_var");
    }
    if (is_bn) { /* the recomputation left them alone */
        expect_same_bits(rm_after[0], rm_after[1], nc, d->name, en, c, "running_mean (recomputed)");
        expect_same_bits(rv_after[0], rv_after[1], nc, d->name, en, c, "running_var (recomputed)");
    }
    expect_same_bits(y[0], y[1], no, d->name, en, c, "y (twice)");
    expect_same_bits(dx[0], dx[1], nx, d->name, en, c, "dx (twice)");
    if (nw) expect_same_bits(dw[0], dw[1], nw, d->name, en, c, "dw (twice)");
    if (nb) expect_same_bits(db[0], db[1], nb, d->name, en, c, "db (twice)");
    cr_expect_eq(rm_backend_cuda_fallbacks(m.be), 0ULL, "%s [%s] %s: %llu call(s) fell back to the hand-written kernels",
                 d->name, en, c->name, rm_backend_cuda_fallbacks(m.be));

    for (int r = 0; r < 2; r++) free(y[r]), free(dx[r]), free(dw[r]), free(db[r]), free(rm_after[r]), free(rv_after[r]);
    devmem_free(&m);
    rm_backend_free(m.be);
    free(x), free(w), free(b), free(dy), free(rmean), free(rvar), free(cpu_out), free(cpu_dx), free(cpu_dw);
    free(cpu_db), free(cpu_rmean), free(cpu_rvar), free(garbage1), free(garbage2);
}

static ecase make_case(const char *name, rm_layer_kind kind, rm_shape in)
{
    ecase c;
    memset(&c, 0, sizeof c);
    snprintf(c.name, sizeof c.name, "%s", name);
    c.cfg.kind = kind;
    c.in = in;
    c.training = 1;
    return c;
}

static ecase conv_case(const char *name, rm_shape in, int cout, int k, int s, int p, int bias)
{
    ecase c = make_case(name, RM_LAYER_CONV2D, in);
    c.cfg.out_channels = cout, c.cfg.kernel = k, c.cfg.stride = s, c.cfg.pad = p, c.cfg.bias = bias;
    return c;
}

/* An odd number in [lo, hi]. */
static int odd_in(rm_rng *rng, int lo, int hi)
{
    int v = lo + (int)(rm_rng_next(rng) % (uint64_t)(hi - lo + 1));
    return v | 1;
}

static void conv_cases(rm_kernel_lib engine)
{
    ecase cs[] = {
        conv_case("k3s2p1", rm_shape_make(3, 5, 11, 13), 7, 3, 2, 1, 1),
        conv_case("k1s1p0", rm_shape_make(3, 17, 7, 5), 9, 1, 1, 0, 0),
        conv_case("k5s1p2", rm_shape_make(1, 3, 9, 7), 5, 5, 1, 2, 1),
        conv_case("k3s3p0", rm_shape_make(3, 3, 13, 11), 9, 3, 3, 0, 1),
        conv_case("k7s2p3", rm_shape_make(2, 3, 23, 21), 11, 7, 2, 3, 0),
        conv_case("k3s1p1-wide", rm_shape_make(2, 33, 15, 17), 25, 3, 1, 1, 0),
        conv_case("k1s2p0", rm_shape_make(3, 13, 9, 11), 15, 1, 2, 0, 0),
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_case(engine, RM_LAYER_CONV2D, &cs[i]);
    rm_rng rng = rm_rng_make(0xc0417u + (uint64_t)engine);
    int k = odd_in(&rng, 1, 5);
    ecase r = conv_case("random", rm_shape_make(odd_in(&rng, 1, 3), odd_in(&rng, 1, 19), odd_in(&rng, 7, 17),
                                                odd_in(&rng, 7, 17)),
                        odd_in(&rng, 1, 21), k, 1 + (int)(rm_rng_next(&rng) % 2), k / 2, (int)(rm_rng_next(&rng) % 2));
    snprintf(r.name, sizeof r.name, "random-%dx%dx%dx%d-k%ds%d", r.in.n, r.in.c, r.in.h, r.in.w, k, r.cfg.stride);
    run_case(engine, RM_LAYER_CONV2D, &r);
}

static void linear_cases(rm_kernel_lib engine)
{
    ecase a = make_case("bias", RM_LAYER_LINEAR, rm_shape_make(5, 3, 3, 7));
    a.cfg.out_channels = 11, a.cfg.bias = 1;
    run_case(engine, RM_LAYER_LINEAR, &a);
    ecase b = make_case("nobias", RM_LAYER_LINEAR, rm_shape_make(3, 37, 1, 1));
    b.cfg.out_channels = 13;
    run_case(engine, RM_LAYER_LINEAR, &b);
    rm_rng rng = rm_rng_make(0x11aeu + (uint64_t)engine);
    ecase r = make_case("random", RM_LAYER_LINEAR,
                        rm_shape_make(odd_in(&rng, 1, 9), odd_in(&rng, 1, 65), odd_in(&rng, 1, 5), odd_in(&rng, 1, 5)));
    r.cfg.out_channels = odd_in(&rng, 1, 41), r.cfg.bias = 1;
    run_case(engine, RM_LAYER_LINEAR, &r);
}

static void bn_cases(rm_kernel_lib engine)
{
    ecase t = make_case("train", RM_LAYER_BATCHNORM2D, rm_shape_make(3, 5, 7, 9));
    t.cfg.eps = 1e-5f, t.cfg.momentum = 0.1f, t.update_stats = 1;
    run_case(engine, RM_LAYER_BATCHNORM2D, &t);
    ecase v = t;
    snprintf(v.name, sizeof v.name, "eval");
    v.training = 0, v.update_stats = 0;
    run_case(engine, RM_LAYER_BATCHNORM2D, &v);
    ecase big = make_case("train-eps1e-3", RM_LAYER_BATCHNORM2D, rm_shape_make(5, 13, 11, 3));
    big.cfg.eps = 1e-3f, big.cfg.momentum = 0.3f, big.update_stats = 1;
    run_case(engine, RM_LAYER_BATCHNORM2D, &big);
    rm_rng rng = rm_rng_make(0xb2du + (uint64_t)engine);
    ecase r = make_case("random", RM_LAYER_BATCHNORM2D,
                        rm_shape_make(odd_in(&rng, 1, 5), odd_in(&rng, 1, 17), odd_in(&rng, 3, 13), odd_in(&rng, 3, 13)));
    r.cfg.eps = 1e-5f, r.cfg.momentum = 0.1f, r.update_stats = 1;
    run_case(engine, RM_LAYER_BATCHNORM2D, &r);
}

static void convt_cases(rm_kernel_lib engine)
{
    ecase a = make_case("bias", RM_LAYER_CONV_TRANSPOSE2X2, rm_shape_make(3, 5, 7, 9));
    a.cfg.out_channels = 3, a.cfg.bias = 1;
    run_case(engine, RM_LAYER_CONV_TRANSPOSE2X2, &a);
    ecase b = make_case("nobias-wide", RM_LAYER_CONV_TRANSPOSE2X2, rm_shape_make(2, 31, 5, 3));
    b.cfg.out_channels = 17;
    run_case(engine, RM_LAYER_CONV_TRANSPOSE2X2, &b);
    rm_rng rng = rm_rng_make(0xc0a7u + (uint64_t)engine);
    ecase r = make_case("random", RM_LAYER_CONV_TRANSPOSE2X2,
                        rm_shape_make(odd_in(&rng, 1, 5), odd_in(&rng, 1, 21), odd_in(&rng, 1, 11), odd_in(&rng, 1, 11)));
    r.cfg.out_channels = odd_in(&rng, 1, 21), r.cfg.bias = 1;
    run_case(engine, RM_LAYER_CONV_TRANSPOSE2X2, &r);
}

#define ENGINE_TESTS(engine, tag)                                                                                     \
    Test(cuda_engines, conv2d_##tag) { conv_cases(engine); }                                                           \
    Test(cuda_engines, linear_##tag) { linear_cases(engine); }                                                         \
    Test(cuda_engines, batchnorm2d_##tag) { bn_cases(engine); }                                                        \
    Test(cuda_engines, conv_transpose2x2_##tag) { convt_cases(engine); }

ENGINE_TESTS(RM_KERNELS_HANDWRITTEN, handwritten)
ENGINE_TESTS(RM_KERNELS_CUBLAS, cublas)

/* The cuBLAS convolutions' chunked paths, which real layers take above 64 MiB
 * of im2col columns (VGG-16's first layers at 224x224): with the cap lowered,
 * the same cases run a few images per chunk (20 KB), then one image in
 * strips of a few pixels (1000 B), whose col2im adds strip after strip. */
Test(cuda_engines, convolutions_chunked_cublas)
{
    size_t caps[] = {20000, 1000};
    for (int i = 0; i < 2; i++) {
        rm_cuda_set_gemm_ws_cap(caps[i]);
        cr_assert_eq(rm_cuda_gemm_ws_cap(), caps[i]);
        conv_cases(RM_KERNELS_CUBLAS);
        convt_cases(RM_KERNELS_CUBLAS);
    }
    rm_cuda_set_gemm_ws_cap(0);
}

/* The cudnn engine where this build has it; else selecting it must fail
 * cleanly. */
#define CUDNN_OR_SKIP()                                                                                                \
    do {                                                                                                               \
        if (!rm_backend_cuda_has_cudnn()) cr_skip_test("this build has no cuDNN");                                     \
    } while (0)
Test(cuda_engines, conv2d_cudnn) { CUDNN_OR_SKIP(); conv_cases(RM_KERNELS_CUDNN); }
Test(cuda_engines, linear_cudnn) { CUDNN_OR_SKIP(); linear_cases(RM_KERNELS_CUDNN); }
Test(cuda_engines, batchnorm2d_cudnn) { CUDNN_OR_SKIP(); bn_cases(RM_KERNELS_CUDNN); }
Test(cuda_engines, conv_transpose2x2_cudnn) { CUDNN_OR_SKIP(); convt_cases(RM_KERNELS_CUDNN); }

/* Kernel library selection: names, the environment (REMAT_KERNELS, and
 * REMAT_ENGINE, its older name), the API, the defaults. */
Test(cuda_engines, selection)
{
    rm_err e = {0};
    rm_kernel_lib eng;
    cr_expect_eq(rm_kernel_lib_parse(&eng, "cublas", &e), RM_OK);
    cr_expect_eq(eng, RM_KERNELS_CUBLAS);
    cr_expect_eq(rm_kernel_lib_parse(&eng, "tensorrt", &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "tensorrt") != NULL, "message: %s", e.msg);

    rm_backend *be = NULL;
    unsetenv("REMAT_KERNELS"), unsetenv("REMAT_ENGINE"), unsetenv("REMAT_DETERMINISTIC"), unsetenv("REMAT_FAST_MATH");
    cr_assert_eq(rm_backend_cuda_create(&be, 0, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cuda_kernels(be),
                 rm_backend_cuda_has_cudnn() ? RM_KERNELS_CUDNN : RM_KERNELS_CUBLAS); /* cudnn, or warned */
    cr_expect_eq(rm_backend_cuda_deterministic(be), 1);
    cr_expect_eq(rm_backend_cuda_fast_math(be), 0);
    cr_expect_gt(rm_backend_cuda_fixed_bytes(be), 0);
    cr_expect_eq(rm_backend_cuda_set_kernels(be, RM_KERNELS_HANDWRITTEN, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cuda_kernels(be), RM_KERNELS_HANDWRITTEN);
    if (!rm_backend_cuda_has_cudnn()) cr_expect_eq(rm_backend_cuda_set_kernels(be, RM_KERNELS_CUDNN, &e), RM_ERR_UNSUPPORTED);
    rm_backend_free(be);

    setenv("REMAT_ENGINE", "handwritten", 1);
    setenv("REMAT_FAST_MATH", "1", 1);
    cr_assert_eq(rm_backend_cuda_create(&be, 0, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cuda_kernels(be), RM_KERNELS_HANDWRITTEN);
    cr_expect_eq(rm_backend_cuda_fast_math(be), 1);
    rm_backend_free(be);
    setenv("REMAT_KERNELS", "cublas", 1); /* the new name wins over the old */
    cr_assert_eq(rm_backend_cuda_create(&be, 0, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cuda_kernels(be), RM_KERNELS_CUBLAS);
    rm_backend_free(be);
    setenv("REMAT_KERNELS", "fastest", 1);
    cr_expect_eq(rm_backend_cuda_create(&be, 0, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "REMAT_KERNELS") != NULL, "message: %s", e.msg);
    unsetenv("REMAT_KERNELS");
    setenv("REMAT_ENGINE", "fastest", 1);
    cr_expect_eq(rm_backend_cuda_create(&be, 0, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "REMAT_ENGINE") != NULL, "message: %s", e.msg);
    setenv("REMAT_ENGINE", "cublas", 1);
    setenv("REMAT_DETERMINISTIC", "yes", 1);
    cr_expect_eq(rm_backend_cuda_create(&be, 0, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "REMAT_DETERMINISTIC") != NULL, "message: %s", e.msg);
    unsetenv("REMAT_KERNELS"), unsetenv("REMAT_ENGINE"), unsetenv("REMAT_DETERMINISTIC"), unsetenv("REMAT_FAST_MATH");

    rm_backend *cpu = NULL;
    cr_assert_eq(rm_backend_cpu_create(&cpu, &e), RM_OK);
    cr_expect_eq(rm_backend_cuda_set_kernels(cpu, RM_KERNELS_CUBLAS, &e), RM_ERR_INVALID);
    rm_backend_free(cpu);
}
