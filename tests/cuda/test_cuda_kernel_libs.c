/* The CUDA kernel libraries (handwritten, cublas, cudnn; the suite was
 * cuda_engines before the word "engine" left them) against the CPU
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
 *    are handed to every call) never exceeds the declared CUDA workspace bound;
 *  - no silent fallback to the hand-written kernels.
 * Part of remat_cuda_tests, whose main (test_cuda_layers.c) skips the whole
 * binary without a usable GPU. REMAT_CUDA_REPORT=<file> appends
 * "layer library/case tensor error" lines, as the layer suite does. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "backend_cuda.h"
#include "cli_util.h"
#include "cuda_fixture.h"
#include "layer_cuda.h"
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
static void compare(const float *got, const float *want, size_t n, double tol, const char *layer, const char *lib,
                    const ecase *c, const char *tensor)
{
    size_t worst;
    double err = rel_err(got, want, n, &worst);
    report_line("%s %s/%s %s %.3e", layer, lib, c->name, tensor, err);
    cr_expect(err <= tol, "%s [%s] %s %s: relative error %.3e > %.1e (element %zu: gpu %.9g, cpu %.9g)", layer, lib,
              c->name, tensor, err, tol, worst, n ? (double)got[worst] : 0.0, n ? (double)want[worst] : 0.0);
}

static void expect_same_bits(const float *a, const float *b, size_t n, const char *layer, const char *lib,
                             const ecase *c, const char *tensor)
{
    size_t diff = n;
    for (size_t i = 0; i < n && diff == n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a)) diff = i;
    cr_expect(diff == n, "%s [%s] %s %s: not deterministic: element %zu is %.9g, then %.9g", layer, lib, c->name,
              tensor, diff, diff < n ? (double)a[diff] : 0.0, diff < n ? (double)b[diff] : 0.0);
}

static rm_backend *lib_backend(rm_cuda_kernel_lib lib)
{
    rm_backend *be = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_backend_cuda_create(&be, 0, &e), RM_OK, "cuda backend: %s", e.msg);
    cr_assert_eq(rm_backend_cuda_set_kernels(be, lib, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cuda_set_deterministic(be, 1, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_backend_cuda_set_fast_math(be, 0, &e), RM_OK, "%s", e.msg);
    return be;
}

/* The outputs of one forward + backward pair on the GPU. */
typedef struct gpu_bufs {
    float *out, *dx, *dw, *db;
} gpu_bufs;

/* One case's host data: the inputs both backends get (from one seeded
 * generator) and the CPU reference's results. */
typedef struct ehost {
    const rm_layer_desc *d;
    rm_shape os, ws, bs;
    size_t nx, nw, nb, no, nc;
    int is_bn;
    float *x, *w, *b, *dy, *rmean, *rvar;
    float *cpu_out, *cpu_dx, *cpu_dw, *cpu_db, *cpu_rmean, *cpu_rvar;
} ehost;

/* The GPU side of a case: two runs of the same calls, each into its own
 * buffers pre-filled with different garbage, so that equal bits mean
 * determinism and not a kernel that left its output alone. */
typedef struct egpu {
    devmem m;
    const char *en;
    size_t ws_fwd, ws_bwd;
    float *g_rmean, *g_rvar, *garbage1, *garbage2;
    gpu_bufs run[2];
    float *rm_after[2], *rv_after[2];    /* running statistics after each run's forward */
    float *y[2], *dx[2], *dw[2], *db[2]; /* each run's outputs, downloaded */
} egpu;

static void host_prepare(ehost *h, rm_layer_kind kind, const ecase *c)
{
    memset(h, 0, sizeof *h);
    const rm_layer_desc *d = h->d = rm_layer_desc_of(kind);
    rm_err e = {0};
    cr_assert_eq(d->infer(&h->os, &c->cfg, &c->in, 1, &e), RM_OK, "%s %s: %s", d->name, c->name, e.msg);
    if (d->param_shapes) d->param_shapes(&h->ws, &h->bs, &c->cfg, &c->in, 1);
    rm_rng rng = rm_rng_make(0xe9e1e000u + (uint64_t)kind * 977u + (uint64_t)c->in.h * 31u + (uint64_t)c->in.c);
    h->is_bn = kind == RM_LAYER_BATCHNORM2D;
    h->nx = rm_shape_numel(c->in), h->nw = rm_shape_numel(h->ws), h->nb = rm_shape_numel(h->bs);
    h->no = rm_shape_numel(h->os), h->nc = (size_t)c->in.c;
    /* The draw order fixes every case's data: keep it. */
    h->x = host_random(h->nx, &rng);
    h->w = host_random(h->nw, &rng);
    h->b = host_random(h->nb, &rng);
    h->dy = host_random(h->no, &rng);
    h->rmean = host_random(h->nc, &rng);
    h->rvar = host_random(h->nc, &rng);
    for (size_t i = 0; i < h->nc; i++) h->rvar[i] = 0.5f + fabsf(h->rvar[i]);
}

static void cpu_reference(ehost *h, const ecase *c)
{
    size_t nw = h->nw, nb = h->nb, nc = h->nc;
    rm_err e = {0};
    h->cpu_out = host_fill(h->no, 1e30f), h->cpu_dx = host_fill(h->nx, 1e30f), h->cpu_dw = host_fill(nw, 1e30f);
    h->cpu_db = host_fill(nb, 1e30f);
    h->cpu_rmean = malloc(nc * sizeof(float)), h->cpu_rvar = malloc(nc * sizeof(float));
    memcpy(h->cpu_rmean, h->rmean, nc * sizeof(float));
    memcpy(h->cpu_rvar, h->rvar, nc * sizeof(float));
    rm_tensor tx = rm_tensor_make(c->in, h->x), tout = rm_tensor_make(h->os, h->cpu_out);
    rm_tensor tdy = rm_tensor_make(h->os, h->dy), tdx = rm_tensor_make(c->in, h->cpu_dx);
    rm_layer_params prm;
    memset(&prm, 0, sizeof prm);
    prm.w = rm_tensor_make(h->ws, nw ? h->w : NULL);
    prm.b = rm_tensor_make(h->bs, nb ? h->b : NULL);
    if (h->is_bn) {
        prm.running_mean = rm_tensor_make(rm_shape_make((int)nc, 1, 1, 1), h->cpu_rmean);
        prm.running_var = rm_tensor_make(rm_shape_make((int)nc, 1, 1, 1), h->cpu_rvar);
    }
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &c->cfg, call.params = &prm, call.nin = 1, call.in[0] = &tx, call.out = &tout;
    call.training = c->training, call.update_stats = c->update_stats;
    cr_assert_eq(rm_layer_forward(h->d, &call, &e), RM_OK, "cpu forward: %s", e.msg);
    prm.dw = rm_tensor_make(h->ws, nw ? h->cpu_dw : NULL);
    prm.db = rm_tensor_make(h->bs, nb ? h->cpu_db : NULL);
    call.din[0] = &tdx, call.dout = &tdy;
    cr_assert_eq(rm_layer_backward(h->d, &call, &e), RM_OK, "cpu backward: %s", e.msg);
}

/* The lib's workspace for each direction, checked against the layer's
 * bound; a buffer for the larger one (every call gets exactly its size). */
static void *gpu_workspace(egpu *g, const ehost *h, const ecase *c)
{
    const rm_layer_desc *d = h->d;
    g->ws_fwd = rm_layer_workspace_bytes_device(d, g->m.be, &c->cfg, &c->in, 1, h->os, 0);
    g->ws_bwd = rm_layer_workspace_bytes_device(d, g->m.be, &c->cfg, &c->in, 1, h->os, 1);
    const rm_layer_backend_kernels *decl = rm_layer_backend_of(d, RM_BACKEND_CUDA);
    if (decl->workspace) {
        size_t bound_f = decl->workspace(&c->cfg, &c->in, 1, h->os, 0);
        size_t bound_b = decl->workspace(&c->cfg, &c->in, 1, h->os, 1);
        cr_expect(g->ws_fwd <= bound_f && g->ws_bwd <= bound_b,
                  "%s [%s] %s: lib workspace %zu / %zu exceeds the descriptor's bound %zu / %zu", d->name, g->en,
                  c->name, g->ws_fwd, g->ws_bwd, bound_f, bound_b);
    } else {
        cr_expect(g->ws_fwd == 0 && g->ws_bwd == 0, "%s [%s]: workspace %zu / %zu but no workspace bound", d->name,
                  g->en, g->ws_fwd, g->ws_bwd);
    }
    return dev_upload(&g->m, NULL, (g->ws_fwd > g->ws_bwd ? g->ws_fwd : g->ws_bwd) + 64);
}

/* Forward then backward, twice, on the same inputs; the second forward is a
 * recomputation (no statistics update), as a rematerialising executor does. */
static void gpu_runs(egpu *g, const ehost *h, const ecase *c)
{
    const rm_layer_desc *d = h->d;
    size_t nx = h->nx, nw = h->nw, nb = h->nb, no = h->no, nc = h->nc;
    devmem *m = &g->m;
    rm_err e = {0};
    void *gws = gpu_workspace(g, h, c);
    float *gx = dev_upload(m, h->x, nx * sizeof(float)), *gdy = dev_upload(m, h->dy, no * sizeof(float));
    float *gw = nw ? dev_upload(m, h->w, nw * sizeof(float)) : NULL;
    float *gb = nb ? dev_upload(m, h->b, nb * sizeof(float)) : NULL;
    g->g_rmean = h->is_bn ? dev_upload(m, h->rmean, nc * sizeof(float)) : NULL;
    g->g_rvar = h->is_bn ? dev_upload(m, h->rvar, nc * sizeof(float)) : NULL;
    size_t big = no > nx ? no : nx;
    big = big > nw ? big : nw;
    g->garbage1 = host_fill(big, 1e30f), g->garbage2 = host_fill(big, -7.0f);
    for (int r = 0; r < 2; r++) {
        float *junk = r ? g->garbage2 : g->garbage1;
        g->run[r].out = dev_upload(m, junk, no * sizeof(float));
        g->run[r].dx = dev_upload(m, junk, nx * sizeof(float));
        g->run[r].dw = nw ? dev_upload(m, junk, nw * sizeof(float)) : NULL;
        g->run[r].db = nb ? dev_upload(m, junk, nb * sizeof(float)) : NULL;
    }
    rm_layer_params gprm;
    memset(&gprm, 0, sizeof gprm);
    gprm.w = rm_tensor_make(h->ws, gw);
    gprm.b = rm_tensor_make(h->bs, gb);
    if (h->is_bn) {
        gprm.running_mean = rm_tensor_make(rm_shape_make((int)nc, 1, 1, 1), g->g_rmean);
        gprm.running_var = rm_tensor_make(rm_shape_make((int)nc, 1, 1, 1), g->g_rvar);
    }
    rm_tensor gtx = rm_tensor_make(c->in, gx), gtdy = rm_tensor_make(h->os, gdy), gtout, gtdx;
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &c->cfg, call.params = &gprm, call.be = m->be, call.nin = 1, call.in[0] = &gtx, call.out = &gtout;
    call.training = c->training;
    call.workspace = gws;
    for (int r = 0; r < 2; r++) {
        gtout = rm_tensor_make(h->os, g->run[r].out);
        call.update_stats = r == 0 ? c->update_stats : 0;
        call.dout = NULL, call.din[0] = NULL;
        gprm.dw = rm_tensor_make(h->ws, NULL), gprm.db = rm_tensor_make(h->bs, NULL);
        call.workspace_size = g->ws_fwd;
        cr_assert_eq(rm_layer_forward(d, &call, &e), RM_OK, "%s [%s] %s forward: %s", d->name, g->en, c->name, e.msg);
        cr_assert_eq(m->be->ops->sync(m->be->ctx, &e), RM_OK, "%s [%s] forward: %s", d->name, g->en, e.msg);
        if (h->is_bn) g->rm_after[r] = download(m, g->g_rmean, nc), g->rv_after[r] = download(m, g->g_rvar, nc);
        /* Backward: only x (RM_READS_INPUTS) carries data besides dy. */
        gtout.data = d->backward_reads & RM_READS_OUTPUT ? g->run[r].out : NULL;
        gtdx = rm_tensor_make(c->in, g->run[r].dx);
        call.din[0] = &gtdx, call.dout = &gtdy;
        gprm.dw = rm_tensor_make(h->ws, g->run[r].dw), gprm.db = rm_tensor_make(h->bs, g->run[r].db);
        call.workspace_size = g->ws_bwd;
        cr_assert_eq(rm_layer_backward(d, &call, &e), RM_OK, "%s [%s] %s backward: %s", d->name, g->en, c->name, e.msg);
        cr_assert_eq(m->be->ops->sync(m->be->ctx, &e), RM_OK, "%s [%s] backward: %s", d->name, g->en, e.msg);
    }
}

static void check_runs(egpu *g, const ehost *h, const ecase *c, double tol)
{
    const char *ln = h->d->name, *en = g->en;
    size_t nx = h->nx, nw = h->nw, nb = h->nb, no = h->no, nc = h->nc;
    for (int r = 0; r < 2; r++) {
        g->y[r] = download(&g->m, g->run[r].out, no), g->dx[r] = download(&g->m, g->run[r].dx, nx);
        g->dw[r] = download(&g->m, g->run[r].dw, nw), g->db[r] = download(&g->m, g->run[r].db, nb);
    }
    compare(g->y[0], h->cpu_out, no, tol, ln, en, c, "y");
    compare(g->dx[0], h->cpu_dx, nx, tol, ln, en, c, "dx");
    if (nw) compare(g->dw[0], h->cpu_dw, nw, tol, ln, en, c, "dw");
    if (nb) compare(g->db[0], h->cpu_db, nb, tol, ln, en, c, "db");
    if (h->is_bn && c->training && c->update_stats) {
        compare(g->rm_after[0], h->cpu_rmean, nc, tol, ln, en, c, "running_mean");
        compare(g->rv_after[0], h->cpu_rvar, nc, tol, ln, en, c, "running_var");
    }
    if (h->is_bn) { /* the recomputation left them alone */
        expect_same_bits(g->rm_after[0], g->rm_after[1], nc, ln, en, c, "running_mean (recomputed)");
        expect_same_bits(g->rv_after[0], g->rv_after[1], nc, ln, en, c, "running_var (recomputed)");
    }
    expect_same_bits(g->y[0], g->y[1], no, ln, en, c, "y (twice)");
    expect_same_bits(g->dx[0], g->dx[1], nx, ln, en, c, "dx (twice)");
    if (nw) expect_same_bits(g->dw[0], g->dw[1], nw, ln, en, c, "dw (twice)");
    if (nb) expect_same_bits(g->db[0], g->db[1], nb, ln, en, c, "db (twice)");
    cr_expect_eq(rm_backend_cuda_fallbacks(g->m.be), 0ULL,
                 "%s [%s] %s: %llu call(s) fell back to the hand-written kernels", ln, en, c->name,
                 rm_backend_cuda_fallbacks(g->m.be));
}

static void case_free(egpu *g, ehost *h)
{
    for (int r = 0; r < 2; r++) {
        free(g->y[r]), free(g->dx[r]), free(g->dw[r]), free(g->db[r]);
        free(g->rm_after[r]), free(g->rv_after[r]);
    }
    devmem_free(&g->m);
    rm_backend_free(g->m.be);
    free(g->garbage1), free(g->garbage2);
    free(h->x), free(h->w), free(h->b), free(h->dy), free(h->rmean), free(h->rvar), free(h->cpu_out), free(h->cpu_dx);
    free(h->cpu_dw), free(h->cpu_db), free(h->cpu_rmean), free(h->cpu_rvar);
}

static void run_case(rm_cuda_kernel_lib lib, rm_layer_kind kind, const ecase *c)
{
    ehost h;
    egpu g;
    host_prepare(&h, kind, c);
    cpu_reference(&h, c);
    memset(&g, 0, sizeof g);
    g.m = (devmem){lib_backend(lib), {0}, 0};
    g.en = rm_cuda_kernel_lib_name(lib);
    gpu_runs(&g, &h, c);
    check_runs(&g, &h, c, lib == RM_CUDA_KERNELS_HANDWRITTEN ? TOL_EXACT : TOL_FLOAT);
    case_free(&g, &h);
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
    c.cfg.out_channels = cout, c.cfg.kernel = rm_hw_square(k), c.cfg.stride = rm_hw_square(s),
    c.cfg.pad = rm_hw_square(p), c.cfg.bias = bias;
    return c;
}

/* An odd number in [lo, hi]. */
static int odd_in(rm_rng *rng, int lo, int hi)
{
    int v = lo + (int)(rm_rng_next(rng) % (uint64_t)(hi - lo + 1));
    return v | 1;
}

static void conv_cases(rm_cuda_kernel_lib lib)
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
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) run_case(lib, RM_LAYER_CONV2D, &cs[i]);
    /* grouped (also direct 1x1, and one filter pair per channel), rectangular, dilated, all at once */
    ecase gs[] = {
        conv_case("g4k3s1p1", rm_shape_make(2, 8, 9, 7), 12, 3, 1, 1, 1),
        conv_case("g2k1s1p0", rm_shape_make(3, 6, 5, 4), 4, 1, 1, 0, 0),
        conv_case("g8k3s2p1", rm_shape_make(2, 8, 9, 9), 16, 3, 2, 1, 1),
        conv_case("1x7p0x3", rm_shape_make(2, 3, 8, 11), 4, 1, 1, 0, 1),
        conv_case("g2-3x5s2x1d2", rm_shape_make(2, 4, 13, 12), 6, 3, 2, 2, 1),
    };
    gs[0].cfg.groups = 4, gs[1].cfg.groups = 2, gs[2].cfg.groups = 8;
    gs[3].cfg.kernel = (rm_hw){1, 7}, gs[3].cfg.pad = (rm_hw){0, 3};
    gs[4].cfg.kernel = (rm_hw){3, 5}, gs[4].cfg.stride = (rm_hw){2, 1}, gs[4].cfg.dilation = rm_hw_square(2);
    gs[4].cfg.groups = 2;
    for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) run_case(lib, RM_LAYER_CONV2D, &gs[i]);
    rm_rng rng = rm_rng_make(0xc0417u + (uint64_t)lib);
    int k = odd_in(&rng, 1, 5);
    ecase r = conv_case(
        "random", rm_shape_make(odd_in(&rng, 1, 3), odd_in(&rng, 1, 19), odd_in(&rng, 7, 17), odd_in(&rng, 7, 17)),
        odd_in(&rng, 1, 21), k, 1 + (int)(rm_rng_next(&rng) % 2), k / 2, (int)(rm_rng_next(&rng) % 2));
    snprintf(r.name, sizeof r.name, "random-%dx%dx%dx%d-k%ds%d", r.in.n, r.in.c, r.in.h, r.in.w, k, r.cfg.stride.h);
    run_case(lib, RM_LAYER_CONV2D, &r);
}

static void linear_cases(rm_cuda_kernel_lib lib)
{
    ecase a = make_case("bias", RM_LAYER_LINEAR, rm_shape_make(5, 3, 3, 7));
    a.cfg.out_channels = 11, a.cfg.bias = 1;
    run_case(lib, RM_LAYER_LINEAR, &a);
    ecase b = make_case("nobias", RM_LAYER_LINEAR, rm_shape_make(3, 37, 1, 1));
    b.cfg.out_channels = 13;
    run_case(lib, RM_LAYER_LINEAR, &b);
    rm_rng rng = rm_rng_make(0x11aeu + (uint64_t)lib);
    ecase r = make_case("random", RM_LAYER_LINEAR,
                        rm_shape_make(odd_in(&rng, 1, 9), odd_in(&rng, 1, 65), odd_in(&rng, 1, 5), odd_in(&rng, 1, 5)));
    r.cfg.out_channels = odd_in(&rng, 1, 41), r.cfg.bias = 1;
    run_case(lib, RM_LAYER_LINEAR, &r);
}

static void bn_cases(rm_cuda_kernel_lib lib)
{
    ecase t = make_case("train", RM_LAYER_BATCHNORM2D, rm_shape_make(3, 5, 7, 9));
    t.cfg.eps = 1e-5f, t.cfg.momentum = 0.1f, t.update_stats = 1;
    run_case(lib, RM_LAYER_BATCHNORM2D, &t);
    ecase v = t;
    snprintf(v.name, sizeof v.name, "eval");
    v.training = 0, v.update_stats = 0;
    run_case(lib, RM_LAYER_BATCHNORM2D, &v);
    ecase big = make_case("train-eps1e-3", RM_LAYER_BATCHNORM2D, rm_shape_make(5, 13, 11, 3));
    big.cfg.eps = 1e-3f, big.cfg.momentum = 0.3f, big.update_stats = 1;
    run_case(lib, RM_LAYER_BATCHNORM2D, &big);
    rm_rng rng = rm_rng_make(0xb2du + (uint64_t)lib);
    ecase r =
        make_case("random", RM_LAYER_BATCHNORM2D,
                  rm_shape_make(odd_in(&rng, 1, 5), odd_in(&rng, 1, 17), odd_in(&rng, 3, 13), odd_in(&rng, 3, 13)));
    r.cfg.eps = 1e-5f, r.cfg.momentum = 0.1f, r.update_stats = 1;
    run_case(lib, RM_LAYER_BATCHNORM2D, &r);
}

static void convt_cases(rm_cuda_kernel_lib lib)
{
    ecase a = make_case("bias", RM_LAYER_CONV_TRANSPOSE2X2, rm_shape_make(3, 5, 7, 9));
    a.cfg.out_channels = 3, a.cfg.bias = 1;
    run_case(lib, RM_LAYER_CONV_TRANSPOSE2X2, &a);
    ecase b = make_case("nobias-wide", RM_LAYER_CONV_TRANSPOSE2X2, rm_shape_make(2, 31, 5, 3));
    b.cfg.out_channels = 17;
    run_case(lib, RM_LAYER_CONV_TRANSPOSE2X2, &b);
    rm_rng rng = rm_rng_make(0xc0a7u + (uint64_t)lib);
    ecase r =
        make_case("random", RM_LAYER_CONV_TRANSPOSE2X2,
                  rm_shape_make(odd_in(&rng, 1, 5), odd_in(&rng, 1, 21), odd_in(&rng, 1, 11), odd_in(&rng, 1, 11)));
    r.cfg.out_channels = odd_in(&rng, 1, 21), r.cfg.bias = 1;
    run_case(lib, RM_LAYER_CONV_TRANSPOSE2X2, &r);
}

#define ENGINE_TESTS(lib, tag)                                                                                         \
    Test(cuda_kernel_libs, conv2d_##tag)                                                                               \
    {                                                                                                                  \
        conv_cases(lib);                                                                                               \
    }                                                                                                                  \
    Test(cuda_kernel_libs, linear_##tag)                                                                               \
    {                                                                                                                  \
        linear_cases(lib);                                                                                             \
    }                                                                                                                  \
    Test(cuda_kernel_libs, batchnorm2d_##tag)                                                                          \
    {                                                                                                                  \
        bn_cases(lib);                                                                                                 \
    }                                                                                                                  \
    Test(cuda_kernel_libs, conv_transpose2x2_##tag)                                                                    \
    {                                                                                                                  \
        convt_cases(lib);                                                                                              \
    }

ENGINE_TESTS(RM_CUDA_KERNELS_HANDWRITTEN, handwritten)
ENGINE_TESTS(RM_CUDA_KERNELS_CUBLAS, cublas)

/* The cuBLAS convolutions' chunked paths, which real layers take above 64 MiB
 * of im2col columns (VGG-16's first layers at 224x224): with the cap lowered,
 * the same cases run a few images per chunk (20 KB), then one image in
 * strips of a few pixels (1000 B), whose col2im adds strip after strip. */
Test(cuda_kernel_libs, convolutions_chunked_cublas)
{
    size_t caps[] = {20000, 1000};
    for (int i = 0; i < 2; i++) {
        rm_cuda_set_gemm_ws_cap(caps[i]);
        cr_assert_eq(rm_cuda_gemm_ws_cap(), caps[i]);
        conv_cases(RM_CUDA_KERNELS_CUBLAS);
        convt_cases(RM_CUDA_KERNELS_CUBLAS);
    }
    rm_cuda_set_gemm_ws_cap(0);
}

/* The cudnn lib where this build has it; else selecting it must fail
 * cleanly. */
#define CUDNN_OR_SKIP()                                                                                                \
    do {                                                                                                               \
        if (!rm_backend_cuda_has_cudnn()) cr_skip_test("this build has no cuDNN");                                     \
    } while (0)
Test(cuda_kernel_libs, conv2d_cudnn)
{
    CUDNN_OR_SKIP();
    conv_cases(RM_CUDA_KERNELS_CUDNN);
}
Test(cuda_kernel_libs, linear_cudnn)
{
    CUDNN_OR_SKIP();
    linear_cases(RM_CUDA_KERNELS_CUDNN);
}
Test(cuda_kernel_libs, batchnorm2d_cudnn)
{
    CUDNN_OR_SKIP();
    bn_cases(RM_CUDA_KERNELS_CUDNN);
}
Test(cuda_kernel_libs, conv_transpose2x2_cudnn)
{
    CUDNN_OR_SKIP();
    convt_cases(RM_CUDA_KERNELS_CUDNN);
}

/* Kernel library selection: names, the environment (REMAT_KERNELS, and
 * REMAT_ENGINE, its older name), the API, the defaults. */
Test(cuda_kernel_libs, selection)
{
    rm_err e = {0};
    rm_cuda_kernel_lib eng;
    cr_expect_eq(rm_cuda_kernel_lib_parse(&eng, "cublas", &e), RM_OK);
    cr_expect_eq(eng, RM_CUDA_KERNELS_CUBLAS);
    cr_expect_eq(rm_cuda_kernel_lib_parse(&eng, "tensorrt", &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "tensorrt") != NULL, "message: %s", e.msg);

    rm_backend *be = NULL;
    unsetenv("REMAT_KERNELS"), unsetenv("REMAT_ENGINE"), unsetenv("REMAT_DETERMINISTIC"), unsetenv("REMAT_FAST_MATH");
    cr_assert_eq(rm_backend_cuda_create(&be, 0, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cuda_kernels(be),
                 rm_backend_cuda_has_cudnn() ? RM_CUDA_KERNELS_CUDNN : RM_CUDA_KERNELS_CUBLAS); /* cudnn, or warned */
    cr_expect_eq(rm_backend_cuda_deterministic(be), 1);
    cr_expect_eq(rm_backend_cuda_fast_math(be), 0);
    cr_expect_gt(rm_backend_fixed_bytes(be), 0);
    cr_expect_eq(rm_backend_cuda_set_kernels(be, RM_CUDA_KERNELS_HANDWRITTEN, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cuda_kernels(be), RM_CUDA_KERNELS_HANDWRITTEN);
    if (!rm_backend_cuda_has_cudnn())
        cr_expect_eq(rm_backend_cuda_set_kernels(be, RM_CUDA_KERNELS_CUDNN, &e), RM_ERR_UNSUPPORTED);
    rm_backend_free(be);

    setenv("REMAT_ENGINE", "handwritten", 1);
    setenv("REMAT_FAST_MATH", "1", 1);
    cr_assert_eq(rm_backend_cuda_create(&be, 0, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cuda_kernels(be), RM_CUDA_KERNELS_HANDWRITTEN);
    cr_expect_eq(rm_backend_cuda_fast_math(be), 1);
    rm_backend_free(be);
    setenv("REMAT_KERNELS", "cublas", 1); /* the new name wins over the old */
    cr_assert_eq(rm_backend_cuda_create(&be, 0, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cuda_kernels(be), RM_CUDA_KERNELS_CUBLAS);
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
    cr_expect_eq(rm_backend_cuda_set_kernels(cpu, RM_CUDA_KERNELS_CUBLAS, &e), RM_ERR_INVALID);
    rm_backend_free(cpu);
}

/* --kernels for the CUDA device: the CLI parses the name with the backend
 * --device selects, and the option wins over REMAT_KERNELS (which is then
 * not read, so even a bad value is no error); the variable, and its older
 * name REMAT_ENGINE, still choose the library without the option. */
Test(cuda_kernel_libs, kernels_option_wins_over_the_environment)
{
    rm_err e = {0};
    rm_backend_kind kind;
    char why[256] = "";
    cr_assert_eq(rm_cli_parse_device(&kind, "cuda", why, sizeof why), 0, "%s", why);
    rm_backend_options o;
    cr_assert_eq(rm_cli_parse_backend_options(&o, "handwritten", NULL, NULL, kind, why, sizeof why), 0, "%s", why);
    cr_expect_eq(o.set_kernels, 1);
    cr_expect_eq(o.kernels, RM_CUDA_KERNELS_HANDWRITTEN);
    cr_expect_eq(rm_cli_parse_backend_options(&o, "fast", NULL, NULL, kind, why, sizeof why), -1);
    cr_expect_str_eq(why, "--kernels: unknown cuda kernel library 'fast' (handwritten, cublas or cudnn)");
    cr_expect_eq(rm_cli_parse_backend_options(&o, NULL, "fast", NULL, kind, why, sizeof why), -1);
    cr_expect(strstr(why, "--cpu-kernels is for --device cpu") != NULL, "%s", why);
    cr_expect_eq(rm_cli_parse_backend_options(&o, NULL, NULL, "2", kind, why, sizeof why), -1);
    cr_expect(strstr(why, "--threads is for --device cpu") != NULL, "%s", why);
    cr_assert_eq(rm_cli_parse_backend_options(&o, "handwritten", NULL, NULL, kind, why, sizeof why), 0, "%s", why);

    unsetenv("REMAT_KERNELS"), unsetenv("REMAT_ENGINE");
    rm_backend *be = NULL;
    setenv("REMAT_KERNELS", "cublas", 1);
    cr_assert_eq(rm_backend_create(&be, kind, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_kernels(be), RM_CUDA_KERNELS_CUBLAS, "the variable, without the option");
    rm_backend_free(be);
    cr_assert_eq(rm_backend_create_with(&be, kind, &o, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_cuda_kernels(be), RM_CUDA_KERNELS_HANDWRITTEN, "the option wins");
    char buf[64];
    cr_expect_str_eq(rm_backend_describe(be, buf, sizeof buf), "GPU 0, handwritten kernels");
    rm_backend_free(be);
    setenv("REMAT_KERNELS", "fastest", 1);
    cr_assert_eq(rm_backend_create_with(&be, kind, &o, &e), RM_OK, "a variable the option replaces is not read: %s",
                 e.msg);
    cr_expect_eq(rm_backend_cuda_kernels(be), RM_CUDA_KERNELS_HANDWRITTEN);
    rm_backend_free(be);
    unsetenv("REMAT_KERNELS");
    setenv("REMAT_ENGINE", "cublas", 1);
    cr_assert_eq(rm_backend_create(&be, kind, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_backend_kernels(be), RM_CUDA_KERNELS_CUBLAS, "the older name is still an alias");
    rm_backend_free(be);
    unsetenv("REMAT_ENGINE");
}
