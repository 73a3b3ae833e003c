/* CPU reference vs CUDA kernels, every layer, forward and backward: random
 * odd shapes, random non-zero inputs, the same call on both backends, and
 * every output compared. Tolerance (float32): for each tensor,
 *   max_i |gpu_i - cpu_i| / max(|cpu_i|, 1e-2 * max_j |cpu_j|) <= 1e-5,
 * about 80 float ulps: both sides accumulate in double, so only the order of
 * double sums and FMA contraction differ (expected error: 1 ulp or less).
 * The GPU outputs are pre-filled with garbage, so a kernel that accumulates
 * instead of overwriting fails, and backward gets NULL data for every forward
 * tensor the layer does not declare in backward_reads.
 *
 * Built only with CUDA, as its own binary (remat_cuda_tests). Without a usable
 * GPU it prints "no GPU: skipped" and exits 0, unless REMAT_CUDA_TESTS_REQUIRE=1
 * is set (scripts/test sets it for the emulated suite): then no GPU is a
 * failure, exit 1, not a pass with 0 tests run. REMAT_CUDA_REPORT=<file> makes
 * every comparison append "layer case tensor error" to that file
 * (scripts/gpu-check prints it as a table). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend_cuda.h"
#include "cuda_fixture.h"
#include "layers.h"

#define TOL 1e-5

typedef struct lcase {
    const char *name;
    rm_layer_config cfg;
    rm_shape in[RM_MAX_INPUTS];
    int nin;
    int training, update_stats;
} lcase;

/* Downloads n floats from dev and compares them with want. */
static void compare(devmem *m, const float *dev, const float *want, size_t n, const char *layer, const lcase *c,
                    const char *tensor)
{
    float *got = malloc((n ? n : 1) * sizeof *got);
    cr_assert_not_null(got);
    dev_download(m, got, dev, n * sizeof *got);
    size_t worst;
    double err = rel_err(got, want, n, &worst);
    report_line("%s %s %s %.3e", layer, c->name, tensor, err);
    cr_expect(err <= TOL, "%s %s %s: relative error %.3e > %.1e (element %zu: gpu %.9g, cpu %.9g)", layer, c->name,
              tensor, err, TOL, worst, n ? (double)got[worst] : 0.0, n ? (double)want[worst] : 0.0);
    free(got);
}

static rm_backend *cuda_backend(void)
{
    rm_backend *be = NULL;
    rm_err e = {0};
    int rc = rm_backend_cuda_create(&be, 0, &e);
    cr_assert_eq(rc, RM_OK, "cuda backend: %s", e.msg);
    /* This suite checks the hand-written kernels (double accumulation, 1e-5);
     * the cuBLAS/cuDNN kernel libraries have their own suite (test_cuda_kernel_libs.c). */
    cr_assert_eq(rm_backend_cuda_set_kernels(be, RM_CUDA_KERNELS_HANDWRITTEN, &e), RM_OK, "%s", e.msg);
    return be;
}

/* One case's host data: the inputs both backends get (from one seeded
 * generator) and the CPU reference's results. */
typedef struct lhost {
    const rm_layer_desc *d;
    rm_shape os, ws, bs;
    size_t nw, nb, no, nc, nlabels;
    int is_bn, is_loss;
    float *x[RM_MAX_INPUTS], *w, *b, *dy, *rmean, *rvar;
    int32_t *labels;
    float *cpu_out, *cpu_out_fwd, *cpu_din[RM_MAX_INPUTS], *cpu_dw, *cpu_db, *cpu_rmean, *cpu_rvar;
} lhost;

/* The GPU side of a case. The call points into this struct, so it stays put
 * (on run_case's stack) from the forward to the backward pass. */
typedef struct lgpu {
    devmem m;
    rm_layer_params prm;
    rm_tensor in[RM_MAX_INPUTS], out, dy, din[RM_MAX_INPUTS];
    rm_layer_call call;
    float *garbage;
} lgpu;

/* The call fields both backends share; dropout's mask depends on the seed,
 * step and node id, so they must match for the outputs to. */
static rm_layer_call base_call(const lcase *c)
{
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &c->cfg;
    call.nin = c->nin;
    call.training = c->training;
    call.update_stats = c->update_stats;
    call.seed = 1234567, call.step = 42, call.node_id = 7;
    return call;
}

static void host_prepare(lhost *h, rm_layer_kind kind, const lcase *c)
{
    memset(h, 0, sizeof *h);
    const rm_layer_desc *d = h->d = rm_layer_desc_of(kind);
    cr_assert_not_null(rm_layer_backend_of(d, RM_BACKEND_CUDA)->forward, "%s: no CUDA forward", d->name);
    cr_assert_not_null(rm_layer_backend_of(d, RM_BACKEND_CUDA)->backward, "%s: no CUDA backward", d->name);
    rm_err e = {0};
    cr_assert_eq(d->infer(&h->os, &c->cfg, c->in, c->nin, &e), RM_OK, "%s", e.msg);
    if (d->param_shapes) d->param_shapes(&h->ws, &h->bs, &c->cfg, c->in, c->nin);
    rm_rng rng = rm_rng_make(0x5eed0000u + (uint64_t)kind * 131u + (uint64_t)c->in[0].h);
    h->is_bn = kind == RM_LAYER_BATCHNORM2D;
    h->is_loss = kind == RM_LAYER_SOFTMAX_XENT || kind == RM_LAYER_PIXEL_SOFTMAX_XENT;
    h->nw = rm_shape_numel(h->ws), h->nb = rm_shape_numel(h->bs), h->no = rm_shape_numel(h->os);
    h->nc = (size_t)c->in[0].c;

    /* The draw order fixes every case's data: keep it. */
    h->w = host_random(h->nw, &rng);
    h->b = host_random(h->nb, &rng);
    h->dy = host_random(h->no, &rng);
    for (int k = 0; k < c->nin; k++) h->x[k] = host_random(rm_shape_numel(c->in[k]), &rng);
    h->rmean = host_random(h->nc, &rng);
    h->rvar = host_random(h->nc, &rng);
    for (size_t i = 0; i < h->nc; i++) h->rvar[i] = 0.5f + fabsf(h->rvar[i]);
    h->nlabels = h->is_loss ? (size_t)c->in[0].n * c->in[0].h * c->in[0].w : 0;
    h->labels = malloc((h->nlabels ? h->nlabels : 1) * sizeof *h->labels);
    for (size_t i = 0; i < h->nlabels; i++) h->labels[i] = (int32_t)(rm_rng_next(&rng) % (uint64_t)c->in[0].c);
}

static void cpu_reference(lhost *h, const lcase *c)
{
    size_t nw = h->nw, nb = h->nb, no = h->no, nc = h->nc;
    rm_err e = {0};
    h->cpu_out = host_fill(no, 1e30f);
    h->cpu_dw = host_fill(nw, 1e30f), h->cpu_db = host_fill(nb, 1e30f);
    h->cpu_rmean = malloc(nc * sizeof(float)), h->cpu_rvar = malloc(nc * sizeof(float));
    memcpy(h->cpu_rmean, h->rmean, nc * sizeof(float));
    memcpy(h->cpu_rvar, h->rvar, nc * sizeof(float));
    rm_tensor tin[RM_MAX_INPUTS], tout = rm_tensor_make(h->os, h->cpu_out), tdy = rm_tensor_make(h->os, h->dy);
    rm_tensor tdin[RM_MAX_INPUTS];
    rm_layer_params prm;
    memset(&prm, 0, sizeof prm);
    prm.w = rm_tensor_make(h->ws, nw ? h->w : NULL);
    prm.b = rm_tensor_make(h->bs, nb ? h->b : NULL);
    if (h->is_bn) {
        prm.running_mean = rm_tensor_make(rm_shape_make((int)nc, 1, 1, 1), h->cpu_rmean);
        prm.running_var = rm_tensor_make(rm_shape_make((int)nc, 1, 1, 1), h->cpu_rvar);
    }
    rm_layer_call call = base_call(c);
    call.params = &prm;
    call.out = &tout;
    call.labels = h->labels;
    for (int k = 0; k < c->nin; k++) {
        tin[k] = rm_tensor_make(c->in[k], h->x[k]);
        call.in[k] = &tin[k];
    }
    cr_assert_eq(rm_layer_forward(h->d, &call, &e), RM_OK, "cpu forward: %s", e.msg);
    h->cpu_out_fwd = malloc((no ? no : 1) * sizeof(float));
    memcpy(h->cpu_out_fwd, h->cpu_out, no * sizeof(float));
    for (int k = 0; k < c->nin; k++) {
        h->cpu_din[k] = host_fill(rm_shape_numel(c->in[k]), 1e30f);
        tdin[k] = rm_tensor_make(c->in[k], h->cpu_din[k]);
        call.din[k] = &tdin[k];
    }
    prm.dw = rm_tensor_make(h->ws, nw ? h->cpu_dw : NULL);
    prm.db = rm_tensor_make(h->bs, nb ? h->cpu_db : NULL);
    call.dout = h->is_loss ? NULL : &tdy;
    cr_assert_eq(rm_layer_backward(h->d, &call, &e), RM_OK, "cpu backward: %s", e.msg);
}

static void gpu_forward(lgpu *g, const lhost *h, const lcase *c)
{
    size_t nw = h->nw, nb = h->nb, no = h->no, nc = h->nc;
    rm_err e = {0};
    g->m = (devmem){cuda_backend(), {0}, 0};
    devmem *m = &g->m;
    float *gx[RM_MAX_INPUTS];
    for (int k = 0; k < c->nin; k++) gx[k] = dev_upload(m, h->x[k], rm_shape_numel(c->in[k]) * sizeof(float));
    float *gw = nw ? dev_upload(m, h->w, nw * sizeof(float)) : NULL;
    float *gb = nb ? dev_upload(m, h->b, nb * sizeof(float)) : NULL;
    g->garbage = host_fill(no > nw + nb ? no : nw + nb, 1e30f);
    float *gout = dev_upload(m, g->garbage, no * sizeof(float)), *gdy = dev_upload(m, h->dy, no * sizeof(float));
    int32_t *glabels = (int32_t *)dev_upload(m, h->labels, h->nlabels * sizeof(int32_t));
    memset(&g->prm, 0, sizeof g->prm);
    g->prm.w = rm_tensor_make(h->ws, gw);
    g->prm.b = rm_tensor_make(h->bs, gb);
    if (h->is_bn) {
        rm_shape sc = rm_shape_make((int)nc, 1, 1, 1);
        g->prm.running_mean = rm_tensor_make(sc, dev_upload(m, h->rmean, nc * sizeof(float)));
        g->prm.running_var = rm_tensor_make(sc, dev_upload(m, h->rvar, nc * sizeof(float)));
    }
    g->out = rm_tensor_make(h->os, gout), g->dy = rm_tensor_make(h->os, gdy);
    g->call = base_call(c);
    g->call.be = m->be;
    g->call.params = &g->prm;
    g->call.out = &g->out;
    g->call.labels = glabels;
    for (int k = 0; k < c->nin; k++) {
        g->in[k] = rm_tensor_make(c->in[k], gx[k]);
        g->call.in[k] = &g->in[k];
    }
    cr_assert_eq(rm_layer_forward(h->d, &g->call, &e), RM_OK, "cuda forward: %s", e.msg);
    cr_assert_eq(m->be->ops->sync(m->be->ctx, &e), RM_OK, "cuda forward: %s", e.msg);
    compare(m, gout, h->cpu_out_fwd, no, h->d->name, c, "y");
    if (h->is_bn && c->training && c->update_stats) {
        compare(m, g->prm.running_mean.data, h->cpu_rmean, nc, h->d->name, c, "running_mean");
        compare(m, g->prm.running_var.data, h->cpu_rvar, nc, h->d->name, c, "running_var");
    }
}

/* Only the forward tensors the layer declares in backward_reads carry data,
 * so a kernel that reads any other one fails here instead of in an executor
 * that has freed it. */
static void gpu_backward(lgpu *g, const lhost *h, const lcase *c)
{
    const rm_layer_desc *d = h->d;
    size_t nw = h->nw, nb = h->nb;
    devmem *m = &g->m;
    rm_err e = {0};
    float *gdin[RM_MAX_INPUTS];
    for (int k = 0; k < c->nin; k++) {
        size_t nx = rm_shape_numel(c->in[k]);
        gdin[k] = dev_upload(m, NULL, nx * sizeof(float));
        float *junk = host_fill(nx, 1e30f);
        rm_err e2 = {0};
        cr_assert_eq(m->be->ops->upload(m->be->ctx, gdin[k], junk, nx * sizeof(float), &e2), RM_OK);
        free(junk);
        g->din[k] = rm_tensor_make(c->in[k], gdin[k]);
        g->call.din[k] = &g->din[k];
        if (!(d->backward_reads & RM_READS_INPUTS)) g->in[k].data = NULL;
    }
    if (!(d->backward_reads & RM_READS_OUTPUT)) g->out.data = NULL;
    g->prm.dw = rm_tensor_make(h->ws, nw ? dev_upload(m, g->garbage, nw * sizeof(float)) : NULL);
    g->prm.db = rm_tensor_make(h->bs, nb ? dev_upload(m, g->garbage, nb * sizeof(float)) : NULL);
    g->call.dout = h->is_loss ? NULL : &g->dy;
    cr_assert_eq(rm_layer_backward(d, &g->call, &e), RM_OK, "cuda backward: %s", e.msg);
    cr_assert_eq(m->be->ops->sync(m->be->ctx, &e), RM_OK, "cuda backward: %s", e.msg);
    for (int k = 0; k < c->nin; k++) {
        char dname[16];
        snprintf(dname, sizeof dname, "dx%d", k);
        compare(m, gdin[k], h->cpu_din[k], rm_shape_numel(c->in[k]), d->name, c, dname);
    }
    if (nw) compare(m, g->prm.dw.data, h->cpu_dw, nw, d->name, c, "dw");
    if (nb) compare(m, g->prm.db.data, h->cpu_db, nb, d->name, c, "db");
}

static void case_free(lgpu *g, lhost *h, const lcase *c)
{
    devmem_free(&g->m);
    rm_backend_free(g->m.be);
    free(g->garbage);
    for (int k = 0; k < c->nin; k++) free(h->x[k]), free(h->cpu_din[k]);
    free(h->w), free(h->b), free(h->dy), free(h->rmean), free(h->rvar), free(h->labels), free(h->cpu_out);
    free(h->cpu_out_fwd), free(h->cpu_dw), free(h->cpu_db), free(h->cpu_rmean), free(h->cpu_rvar);
}

static void run_case(rm_layer_kind kind, const lcase *c)
{
    lhost h;
    lgpu g;
    host_prepare(&h, kind, c);
    cpu_reference(&h, c);
    gpu_forward(&g, &h, c);
    gpu_backward(&g, &h, c);
    case_free(&g, &h, c);
}

static rm_layer_config cfg_of(rm_layer_kind kind)
{
    rm_layer_config c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    return c;
}

#define SHAPE(n, c, h, w) rm_shape_make(n, c, h, w)

Test(cuda_layers, conv2d)
{
    lcase c = {"k3s2p1", cfg_of(RM_LAYER_CONV2D), {SHAPE(3, 5, 11, 13)}, 1, 1, 0};
    c.cfg.out_channels = 7, c.cfg.kernel = rm_hw_square(3), c.cfg.stride = rm_hw_square(2), c.cfg.pad = rm_hw_square(1),
    c.cfg.bias = 1;
    run_case(RM_LAYER_CONV2D, &c);
    lcase c1 = {"k1s1p0", cfg_of(RM_LAYER_CONV2D), {SHAPE(2, 3, 7, 5)}, 1, 1, 0};
    c1.cfg.out_channels = 5, c1.cfg.kernel = rm_hw_square(1), c1.cfg.stride = rm_hw_square(1);
    run_case(RM_LAYER_CONV2D, &c1);
    lcase c5 = {"k5s1p2", cfg_of(RM_LAYER_CONV2D), {SHAPE(1, 2, 9, 7)}, 1, 1, 0};
    c5.cfg.out_channels = 3, c5.cfg.kernel = rm_hw_square(5), c5.cfg.stride = rm_hw_square(1),
    c5.cfg.pad = rm_hw_square(2), c5.cfg.bias = 1;
    run_case(RM_LAYER_CONV2D, &c5);
    lcase c3 = {"k3s3p0", cfg_of(RM_LAYER_CONV2D), {SHAPE(3, 3, 13, 11)}, 1, 1, 0};
    c3.cfg.out_channels = 9, c3.cfg.kernel = rm_hw_square(3), c3.cfg.stride = rm_hw_square(3), c3.cfg.bias = 1;
    run_case(RM_LAYER_CONV2D, &c3);
    /* grouped (two filters per group of 2 channels), rectangular with per-axis padding, dilated */
    lcase g = {"g3k3s1p1", cfg_of(RM_LAYER_CONV2D), {SHAPE(2, 6, 7, 9)}, 1, 1, 0};
    g.cfg.out_channels = 9, g.cfg.kernel = rm_hw_square(3), g.cfg.stride = rm_hw_square(1), g.cfg.pad = rm_hw_square(1);
    g.cfg.groups = 3, g.cfg.bias = 1;
    run_case(RM_LAYER_CONV2D, &g);
    lcase r = {"1x7s2x1p0x3", cfg_of(RM_LAYER_CONV2D), {SHAPE(2, 3, 9, 11)}, 1, 1, 0};
    r.cfg.out_channels = 4, r.cfg.kernel = (rm_hw){1, 7}, r.cfg.stride = (rm_hw){2, 1}, r.cfg.pad = (rm_hw){0, 3};
    run_case(RM_LAYER_CONV2D, &r);
    lcase d = {"g2k3d2p2", cfg_of(RM_LAYER_CONV2D), {SHAPE(1, 4, 10, 9)}, 1, 1, 0};
    d.cfg.out_channels = 6, d.cfg.kernel = rm_hw_square(3), d.cfg.stride = rm_hw_square(1), d.cfg.pad = rm_hw_square(2);
    d.cfg.dilation = rm_hw_square(2), d.cfg.groups = 2, d.cfg.bias = 1;
    run_case(RM_LAYER_CONV2D, &d);
}

/* Depthwise: stride 2 with and without padding, 1x1 and 5x5 filters,
 * non-square planes, batch > 1, with and without bias. */
Test(cuda_layers, dwconv2d)
{
    lcase c = {"k3s2p1", cfg_of(RM_LAYER_DWCONV2D), {SHAPE(3, 5, 11, 13)}, 1, 1, 0};
    c.cfg.kernel = rm_hw_square(3), c.cfg.stride = rm_hw_square(2), c.cfg.pad = rm_hw_square(1), c.cfg.bias = 1;
    run_case(RM_LAYER_DWCONV2D, &c);
    lcase c0 = {"k3s2p0", cfg_of(RM_LAYER_DWCONV2D), {SHAPE(2, 4, 9, 6)}, 1, 1, 0};
    c0.cfg.kernel = rm_hw_square(3), c0.cfg.stride = rm_hw_square(2), c0.cfg.pad = rm_hw_square(0), c0.cfg.bias = 0;
    run_case(RM_LAYER_DWCONV2D, &c0);
    lcase c1 = {"k1s1p0", cfg_of(RM_LAYER_DWCONV2D), {SHAPE(2, 3, 7, 5)}, 1, 1, 0};
    c1.cfg.kernel = rm_hw_square(1), c1.cfg.stride = rm_hw_square(1), c1.cfg.bias = 1;
    run_case(RM_LAYER_DWCONV2D, &c1);
    lcase c5 = {"k5s1p2", cfg_of(RM_LAYER_DWCONV2D), {SHAPE(2, 3, 8, 10)}, 1, 1, 0};
    c5.cfg.kernel = rm_hw_square(5), c5.cfg.stride = rm_hw_square(1), c5.cfg.pad = rm_hw_square(2), c5.cfg.bias = 0;
    run_case(RM_LAYER_DWCONV2D, &c5);
}

Test(cuda_layers, batchnorm2d)
{
    lcase t = {"train", cfg_of(RM_LAYER_BATCHNORM2D), {SHAPE(3, 5, 7, 9)}, 1, 1, 1};
    t.cfg.eps = 1e-5f, t.cfg.momentum = 0.1f;
    run_case(RM_LAYER_BATCHNORM2D, &t);
    lcase v = t;
    v.name = "eval", v.training = 0, v.update_stats = 0;
    run_case(RM_LAYER_BATCHNORM2D, &v);
}

/* The activations of layers/activation.c (one kernel pair, by kind). */
/* Squeeze-and-excitation's product: a tensor times its channels' factors. */
Test(cuda_layers, scale)
{
    lcase c = {"odd", cfg_of(RM_LAYER_SCALE), {SHAPE(3, 5, 7, 9), SHAPE(3, 5, 1, 1)}, 2, 1, 0};
    run_case(RM_LAYER_SCALE, &c);
}

Test(cuda_layers, activations)
{
    static const rm_layer_kind kinds[] = {RM_LAYER_RELU6,       RM_LAYER_SIGMOID,   RM_LAYER_TANH, RM_LAYER_SILU,
                                          RM_LAYER_HARDSIGMOID, RM_LAYER_HARDSWISH, RM_LAYER_GELU, RM_LAYER_GELU_TANH};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        lcase c = {"odd", cfg_of(kinds[k]), {SHAPE(3, 5, 7, 9)}, 1, 1, 0};
        run_case(kinds[k], &c);
    }
}

Test(cuda_layers, relu)
{
    lcase c = {"odd", cfg_of(RM_LAYER_RELU), {SHAPE(3, 5, 7, 9)}, 1, 1, 0};
    run_case(RM_LAYER_RELU, &c);
}

Test(cuda_layers, maxpool2d)
{
    lcase c = {"k3s2p1", cfg_of(RM_LAYER_MAXPOOL2D), {SHAPE(3, 5, 11, 9)}, 1, 1, 0};
    c.cfg.kernel = rm_hw_square(3), c.cfg.stride = rm_hw_square(2), c.cfg.pad = rm_hw_square(1);
    run_case(RM_LAYER_MAXPOOL2D, &c);
    lcase c2 = {"k2s2p0", cfg_of(RM_LAYER_MAXPOOL2D), {SHAPE(2, 3, 7, 13)}, 1, 1, 0};
    c2.cfg.kernel = rm_hw_square(2), c2.cfg.stride = rm_hw_square(2);
    run_case(RM_LAYER_MAXPOOL2D, &c2);
    /* ceil_mode: the last row and column of windows overhang the input. */
    lcase c3 = {"k3s2p0ceil", cfg_of(RM_LAYER_MAXPOOL2D), {SHAPE(2, 3, 8, 10)}, 1, 1, 0};
    c3.cfg.kernel = rm_hw_square(3), c3.cfg.stride = rm_hw_square(2), c3.cfg.ceil_mode = 1;
    run_case(RM_LAYER_MAXPOOL2D, &c3);
}

Test(cuda_layers, avgpool2d)
{
    lcase c = {"k3s2p1", cfg_of(RM_LAYER_AVGPOOL2D), {SHAPE(3, 5, 11, 9)}, 1, 1, 0};
    c.cfg.kernel = rm_hw_square(3), c.cfg.stride = rm_hw_square(2), c.cfg.pad = rm_hw_square(1);
    run_case(RM_LAYER_AVGPOOL2D, &c);
    lcase c2 = {"k3s1p1", cfg_of(RM_LAYER_AVGPOOL2D), {SHAPE(2, 3, 7, 5)}, 1, 1, 0};
    c2.cfg.kernel = rm_hw_square(3), c2.cfg.stride = rm_hw_square(1), c2.cfg.pad = rm_hw_square(1);
    run_case(RM_LAYER_AVGPOOL2D, &c2);
}

Test(cuda_layers, global_avgpool)
{
    lcase c = {"odd", cfg_of(RM_LAYER_GLOBAL_AVGPOOL), {SHAPE(3, 5, 7, 9)}, 1, 1, 0};
    run_case(RM_LAYER_GLOBAL_AVGPOOL, &c);
}

Test(cuda_layers, linear)
{
    lcase c = {"bias", cfg_of(RM_LAYER_LINEAR), {SHAPE(5, 3, 3, 7)}, 1, 1, 0};
    c.cfg.out_channels = 11, c.cfg.bias = 1;
    run_case(RM_LAYER_LINEAR, &c);
    lcase c2 = {"nobias", cfg_of(RM_LAYER_LINEAR), {SHAPE(3, 37, 1, 1)}, 1, 1, 0};
    c2.cfg.out_channels = 13;
    run_case(RM_LAYER_LINEAR, &c2);
}

Test(cuda_layers, add)
{
    lcase c = {"three", cfg_of(RM_LAYER_ADD), {SHAPE(3, 5, 7, 9), SHAPE(3, 5, 7, 9), SHAPE(3, 5, 7, 9)}, 3, 1, 0};
    run_case(RM_LAYER_ADD, &c);
}

Test(cuda_layers, concat)
{
    lcase c = {"three", cfg_of(RM_LAYER_CONCAT), {SHAPE(3, 2, 7, 9), SHAPE(3, 5, 7, 9), SHAPE(3, 3, 7, 9)}, 3, 1, 0};
    run_case(RM_LAYER_CONCAT, &c);
    /* DenseNet-121's widest: the block input and 24 layers' outputs */
    lcase w = {"twenty-five", cfg_of(RM_LAYER_CONCAT), {SHAPE(2, 4, 3, 5)}, 25, 1, 0};
    for (int k = 1; k < 25; k++) w.in[k] = SHAPE(2, 1 + k % 3, 3, 5);
    run_case(RM_LAYER_CONCAT, &w);
}

Test(cuda_layers, channel_layout)
{
    lcase s = {"shuffle3", cfg_of(RM_LAYER_CHANNEL_SHUFFLE), {SHAPE(3, 6, 7, 9)}, 1, 1, 0};
    s.cfg.groups = 3;
    run_case(RM_LAYER_CHANNEL_SHUFFLE, &s);
    lcase c = {"slice2of5", cfg_of(RM_LAYER_SLICE), {SHAPE(3, 5, 7, 9)}, 1, 1, 0};
    c.cfg.start = 1, c.cfg.out_channels = 2;
    run_case(RM_LAYER_SLICE, &c);
}

Test(cuda_layers, layernorm)
{
    lcase c = {"channels", cfg_of(RM_LAYER_LAYERNORM), {SHAPE(3, 5, 7, 9)}, 1, 1, 0};
    c.cfg.eps = 1e-6f;
    run_case(RM_LAYER_LAYERNORM, &c);
    lcase t = {"tokens", cfg_of(RM_LAYER_LAYERNORM), {SHAPE(2, 33, 17, 1)}, 1, 1, 0};
    t.cfg.eps = 1e-5f;
    run_case(RM_LAYER_LAYERNORM, &t);
}

/* Several heads on a column of tokens, and one head over a 3 x 4 map. */
Test(cuda_layers, attention)
{
    lcase c = {"heads3", cfg_of(RM_LAYER_ATTENTION), {SHAPE(2, 18, 5, 1)}, 1, 1, 0};
    c.cfg.heads = 3;
    run_case(RM_LAYER_ATTENTION, &c);
    lcase m = {"map", cfg_of(RM_LAYER_ATTENTION), {SHAPE(2, 18, 3, 4)}, 1, 1, 0};
    m.cfg.heads = 1;
    run_case(RM_LAYER_ATTENTION, &m);
}

/* The class token and position embedding (parameters w and b), and one token taken. */
Test(cuda_layers, tokens)
{
    lcase c = {"cls_pos", cfg_of(RM_LAYER_TOKENS), {SHAPE(2, 6, 3, 4)}, 1, 1, 0};
    run_case(RM_LAYER_TOKENS, &c);
    lcase t = {"start5", cfg_of(RM_LAYER_TOKEN), {SHAPE(2, 6, 7, 1)}, 1, 1, 0};
    t.cfg.start = 5;
    run_case(RM_LAYER_TOKEN, &t);
}

Test(cuda_layers, upsample2x)
{
    lcase c = {"odd", cfg_of(RM_LAYER_UPSAMPLE2X), {SHAPE(3, 5, 7, 9)}, 1, 1, 0};
    run_case(RM_LAYER_UPSAMPLE2X, &c);
}

Test(cuda_layers, conv_transpose2x2)
{
    lcase c = {"bias", cfg_of(RM_LAYER_CONV_TRANSPOSE2X2), {SHAPE(3, 5, 7, 9)}, 1, 1, 0};
    c.cfg.out_channels = 3, c.cfg.bias = 1;
    run_case(RM_LAYER_CONV_TRANSPOSE2X2, &c);
}

Test(cuda_layers, dropout)
{
    lcase c = {"train", cfg_of(RM_LAYER_DROPOUT), {SHAPE(3, 5, 7, 9)}, 1, 1, 0};
    c.cfg.p = 0.3f;
    run_case(RM_LAYER_DROPOUT, &c);
    lcase v = c;
    v.name = "eval", v.training = 0;
    run_case(RM_LAYER_DROPOUT, &v);
    /* stochastic depth: the same samples dropped whole as on the CPU */
    lcase d = {"samples", cfg_of(RM_LAYER_DROP_PATH), {SHAPE(6, 5, 7, 9)}, 1, 1, 0};
    d.cfg.p = 0.5f;
    run_case(RM_LAYER_DROP_PATH, &d);
}

Test(cuda_layers, flatten)
{
    lcase c = {"odd", cfg_of(RM_LAYER_FLATTEN), {SHAPE(3, 5, 7, 9)}, 1, 1, 0};
    run_case(RM_LAYER_FLATTEN, &c);
}

Test(cuda_layers, softmax_xent)
{
    lcase c = {"odd", cfg_of(RM_LAYER_SOFTMAX_XENT), {SHAPE(7, 11, 1, 1)}, 1, 1, 0};
    run_case(RM_LAYER_SOFTMAX_XENT, &c);
}

Test(cuda_layers, pixel_softmax_xent)
{
    lcase c = {"odd", cfg_of(RM_LAYER_PIXEL_SOFTMAX_XENT), {SHAPE(3, 5, 7, 9)}, 1, 1, 0};
    run_case(RM_LAYER_PIXEL_SOFTMAX_XENT, &c);
}

/* A bad label is an error and leaves the loss untouched, as on the CPU. */
Test(cuda_layers, bad_label_rejected)
{
    rm_backend *be = cuda_backend();
    rm_err e = {0};
    devmem m = {be, {0}, 0};
    float x[6] = {0.5f, -0.25f, 1.0f, 0.75f, -1.0f, 0.125f}, sentinel = 3.5f, got = 0;
    int32_t labels[3] = {1, 2, 0}; /* K = 2: label 2 of sample 1 is out of range */
    rm_tensor tx = rm_tensor_make(rm_shape_make(3, 2, 1, 1), dev_upload(&m, x, sizeof x));
    rm_tensor ty = rm_tensor_make(rm_shape_make(1, 1, 1, 1), dev_upload(&m, &sentinel, sizeof sentinel));
    rm_layer_config cfg = cfg_of(RM_LAYER_SOFTMAX_XENT);
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &cfg, call.be = be, call.nin = 1, call.in[0] = &tx, call.out = &ty;
    call.labels = (const int32_t *)dev_upload(&m, labels, sizeof labels);
    cr_expect_eq(rm_layer_forward(&rm_softmax_xent_desc, &call, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "sample 1 has label 2") != NULL, "message: %s", e.msg);
    dev_download(&m, &got, ty.data, sizeof got);
    cr_expect_eq(got, sentinel);
    tx.shape = rm_shape_make(1, 2, 1, 3); /* the same 6 logits as 1 x 2 x 1 x 3 pixels */
    rm_err e2 = {0};
    cr_expect_eq(rm_layer_forward(&rm_pixel_softmax_xent_desc, &call, &e2), RM_ERR_INVALID);
    cr_expect(strstr(e2.msg, "pixel (y 0, x 1) has label 2") != NULL, "message: %s", e2.msg);
    devmem_free(&m);
    rm_backend_free(be);
}

/* Probes for a GPU in a child process, so that this process (whose tests
 * Criterion may fork) never initialises CUDA. 0: usable, 1: none. */
static int probe_gpu(char *why, size_t len)
{
    int fd[2];
    if (pipe(fd)) return snprintf(why, len, "pipe failed"), 1;
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        rm_backend *be = NULL;
        rm_err e = {0};
        int rc = rm_backend_cuda_create(&be, 0, &e);
        if (rc == RM_OK) rm_backend_free(be);
        ssize_t wr = write(fd[1], e.msg, strlen(e.msg));
        (void)wr;
        _exit(rc == RM_OK ? 0 : rc == RM_ERR_UNSUPPORTED ? 1 : 2);
    }
    close(fd[1]);
    ssize_t got = pid > 0 ? read(fd[0], why, len - 1) : -1;
    why[got > 0 ? got : 0] = '\0';
    close(fd[0]);
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) return 2;
    return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
    struct criterion_test_set *tests = criterion_initialize();
    char why[RM_ERR_MSG_LEN] = "";
    int probe = probe_gpu(why, sizeof why);
    const char *require = getenv("REMAT_CUDA_TESTS_REQUIRE");
    if (probe == 1 && require && !strcmp(require, "1")) {
        fprintf(stderr, "remat_cuda_tests: no GPU (%s), and REMAT_CUDA_TESTS_REQUIRE=1: failing\n", why);
        criterion_finalize(tests);
        return 1;
    }
    if (probe == 1) {
        printf("remat_cuda_tests: no GPU: skipped (%s)\n", why);
        printf("[====] Synthesis: Tested: 0 | Skipped: %zu | Passing: 0 | Failing: 0 | Crashing: 0\n", tests->tests);
        criterion_finalize(tests);
        return 0;
    }
    if (probe != 0) fprintf(stderr, "remat_cuda_tests: GPU probe failed (%s); running anyway\n", why);
    int result = 0;
    if (criterion_handle_args(argc, argv, true)) result = !criterion_run_all_tests(tests);
    criterion_finalize(tests);
    return result;
}
