/* Layer set a (conv2d, dwconv2d, conv_transpose2x2, linear, batchnorm2d,
 * maxpool2d, avgpool2d, global_avgpool): finite-difference gradient checks on odd
 * shapes, hand-computed forward values, BatchNorm running statistics,
 * backward's overwrite contract, parameter counts against torchvision, and
 * shape-inference errors.
 *
 * Over ~600 lines on purpose: one suite per layer set, each Test independent,
 * sharing gradcheck.c; splitting it further would only scatter the layers.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"

/* ---- helpers -------------------------------------------------------------- */

static rm_layer_config conv_cfg(int out, int k, int s, int p, int bias)
{
    rm_layer_config c = {
        .kind = RM_LAYER_CONV2D, .out_channels = out, .kernel = {k, k}, .stride = {s, s}, .pad = {p, p}, .bias = bias};
    return c;
}

static rm_layer_config pool_cfg(rm_layer_kind kind, int k, int s, int p)
{
    rm_layer_config c = {.kind = kind, .kernel = {k, k}, .stride = {s, s}, .pad = {p, p}};
    return c;
}

static rm_layer_config bn_cfg(void)
{
    rm_layer_config c = {.kind = RM_LAYER_BATCHNORM2D, .eps = 1e-5f, .momentum = 0.1f};
    return c;
}

static double check(const rm_layer_desc *d, rm_layer_config cfg, rm_shape in, gc_fill fill, int training, uint64_t seed,
                    double eps)
{
    gc_case c = {
        .desc = d, .cfg = cfg, .in = {in}, .nin = 1, .fill = fill, .training = training, .seed = seed, .eps = eps};
    double worst = gradcheck(&c);
    cr_log_info("%s (seed %d, training %d): worst gradient error %.3g", d->name, (int)seed, training, worst);
    return worst;
}

static float *floats(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof(float));
    cr_assert_not_null(p);
    return p;
}

/* A layer instance with its parameters, input, output and gradients. */
typedef struct layer_fixture {
    const rm_layer_desc *d;
    rm_layer_config cfg;
    rm_layer_params params;
    rm_tensor x, y, dx, dy;
} layer_fixture;

static void fixture_make(layer_fixture *f, const rm_layer_desc *d, rm_layer_config cfg, rm_shape in, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    f->d = d;
    f->cfg = cfg;
    rm_err e = {0};
    rm_shape out;
    cr_assert_eq(d->infer(&out, &f->cfg, &in, 1, &e), RM_OK, "%s", e.msg);
    rm_rng rng = rm_rng_make(seed);
    f->x = rm_tensor_make(in, floats(rm_shape_numel(in)));
    f->dx = rm_tensor_make(in, floats(rm_shape_numel(in)));
    f->y = rm_tensor_make(out, floats(rm_shape_numel(out)));
    f->dy = rm_tensor_make(out, floats(rm_shape_numel(out)));
    for (size_t i = 0; i < rm_shape_numel(in); i++) f->x.data[i] = (float)rm_rng_range(&rng, -1, 1);
    for (size_t i = 0; i < rm_shape_numel(out); i++) f->dy.data[i] = (float)rm_rng_range(&rng, -1, 1);
    if (d->param_shapes) {
        rm_shape ws = {0, 0, 0, 0}, bs = {0, 0, 0, 0};
        d->param_shapes(&ws, &bs, &f->cfg, &in, 1);
        if (rm_shape_numel(ws)) {
            f->params.w = rm_tensor_make(ws, floats(rm_shape_numel(ws)));
            f->params.dw = rm_tensor_make(ws, floats(rm_shape_numel(ws)));
        }
        if (rm_shape_numel(bs)) {
            f->params.b = rm_tensor_make(bs, floats(rm_shape_numel(bs)));
            f->params.db = rm_tensor_make(bs, floats(rm_shape_numel(bs)));
        }
        if (d->kind == RM_LAYER_BATCHNORM2D) {
            f->params.running_mean = rm_tensor_make(bs, floats(rm_shape_numel(bs)));
            f->params.running_var = rm_tensor_make(bs, floats(rm_shape_numel(bs)));
        }
        d->init(&f->params, &f->cfg, &in, 1, &rng);
        if (f->params.b.data)
            for (size_t i = 0; i < rm_tensor_numel(&f->params.b); i++)
                f->params.b.data[i] = (float)rm_rng_range(&rng, -1, 1);
    }
}

static void fixture_free(layer_fixture *f)
{
    rm_tensor *t[] = {&f->x,
                      &f->y,
                      &f->dx,
                      &f->dy,
                      &f->params.w,
                      &f->params.b,
                      &f->params.dw,
                      &f->params.db,
                      &f->params.running_mean,
                      &f->params.running_var};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) free(t[i]->data);
}

static rm_layer_call fixture_call(layer_fixture *f, int training)
{
    rm_layer_call c;
    memset(&c, 0, sizeof c);
    c.cfg = &f->cfg;
    c.params = &f->params;
    c.in[0] = &f->x;
    c.nin = 1;
    c.out = &f->y;
    c.dout = &f->dy;
    c.din[0] = &f->dx;
    c.training = training;
    return c;
}

static void forward_ok(layer_fixture *f, int training)
{
    rm_layer_call c = fixture_call(f, training);
    rm_err e = {0};
    cr_assert_eq(f->d->forward_ref(&c, &e), RM_OK, "%s forward: %s", f->d->name, e.msg);
}

static void backward_ok(layer_fixture *f, int training, int with_dx)
{
    rm_layer_call c = fixture_call(f, training);
    if (!with_dx) c.din[0] = NULL;
    rm_err e = {0};
    cr_assert_eq(f->d->backward_ref(&c, &e), RM_OK, "%s backward: %s", f->d->name, e.msg);
}

static void assert_values(const float *got, const double *want, size_t n, double tol, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(fabs(got[i] - want[i]) <= tol, "%s[%zu]: got %.9g, want %.9g", what, i, got[i], want[i]);
}

static float *copy_of(const rm_tensor *t)
{
    if (!t->data) return NULL;
    float *p = floats(rm_tensor_numel(t));
    memcpy(p, t->data, rm_tensor_numel(t) * sizeof(float));
    return p;
}

static void assert_same(const float *a, const rm_tensor *t, const char *what)
{
    if (!a) return;
    cr_assert(!memcmp(a, t->data, rm_tensor_numel(t) * sizeof(float)), "%s differs between two backward calls", what);
}

/* Backward must overwrite dx, dw and db: a second call over garbage gives the
 * very same bits. */
static void check_overwrites(const rm_layer_desc *d, rm_layer_config cfg, rm_shape in, int training)
{
    layer_fixture f;
    fixture_make(&f, d, cfg, in, 11);
    forward_ok(&f, training);
    backward_ok(&f, training, 1);
    float *dx = copy_of(&f.dx), *dw = copy_of(&f.params.dw), *db = copy_of(&f.params.db);
    rm_tensor *g[] = {&f.dx, &f.params.dw, &f.params.db};
    for (int k = 0; k < 3; k++)
        if (g[k]->data)
            for (size_t i = 0; i < rm_tensor_numel(g[k]); i++) g[k]->data[i] = NAN;
    backward_ok(&f, training, 1);
    assert_same(dx, &f.dx, "dx");
    assert_same(dw, &f.params.dw, "dw");
    assert_same(db, &f.params.db, "db");
    free(dx), free(dw), free(db);
    fixture_free(&f);
}

/* Without din[0] (the first layer), backward skips dx and still yields the same dw and db. */
static void check_no_dx(const rm_layer_desc *d, rm_layer_config cfg, rm_shape in)
{
    layer_fixture f;
    fixture_make(&f, d, cfg, in, 12);
    forward_ok(&f, 1);
    backward_ok(&f, 1, 1);
    float *dw = copy_of(&f.params.dw), *db = copy_of(&f.params.db);
    memset(f.params.dw.data, 0, rm_tensor_numel(&f.params.dw) * sizeof(float));
    if (f.params.db.data) memset(f.params.db.data, 0, rm_tensor_numel(&f.params.db) * sizeof(float));
    backward_ok(&f, 1, 0);
    assert_same(dw, &f.params.dw, "dw");
    assert_same(db, &f.params.db, "db");
    free(dw), free(db);
    fixture_free(&f);
}

/* infer must refuse the configuration with RM_ERR_SHAPE and a message naming the problem. */
static void expect_shape_error(const rm_layer_desc *d, rm_layer_config cfg, rm_shape in, const char *needle)
{
    rm_err e = {0};
    rm_shape out = {0, 0, 0, 0};
    int rc = d->infer(&out, &cfg, &in, 1, &e);
    cr_assert_eq(rc, RM_ERR_SHAPE, "%s: expected a shape error (%s), got %d", d->name, needle, rc);
    cr_assert_eq(e.code, RM_ERR_SHAPE);
    cr_assert(strstr(e.msg, needle), "%s: message \"%s\" does not mention \"%s\"", d->name, e.msg, needle);
}

static rm_shape infer_ok(const rm_layer_desc *d, rm_layer_config cfg, rm_shape in)
{
    rm_err e = {0};
    rm_shape out = {0, 0, 0, 0};
    cr_assert_eq(d->infer(&out, &cfg, &in, 1, &e), RM_OK, "%s: %s", d->name, e.msg);
    return out;
}

#define ODD rm_shape_make(2, 3, 7, 5)

/* ---- conv2d ------------------------------------------------------------- */

Test(conv2d, gradcheck_k3_s1_p1_bias)
{
    check(&rm_conv2d_desc, conv_cfg(4, 3, 1, 1, 1), ODD, GC_FILL_UNIFORM, 1, 1, 0);
}
Test(conv2d, gradcheck_k3_s2_p1_nobias)
{
    check(&rm_conv2d_desc, conv_cfg(4, 3, 2, 1, 0), ODD, GC_FILL_UNIFORM, 1, 2, 0);
}
Test(conv2d, gradcheck_k3_s2_p0_bias)
{
    check(&rm_conv2d_desc, conv_cfg(2, 3, 2, 0, 1), ODD, GC_FILL_UNIFORM, 1, 3, 0);
}
Test(conv2d, gradcheck_k1_s1_p0_bias)
{
    check(&rm_conv2d_desc, conv_cfg(5, 1, 1, 0, 1), ODD, GC_FILL_UNIFORM, 1, 4, 0);
}
Test(conv2d, gradcheck_k1_s2_p1_nobias)
{
    check(&rm_conv2d_desc, conv_cfg(3, 1, 2, 1, 0), ODD, GC_FILL_UNIFORM, 1, 5, 0);
}
Test(conv2d, gradcheck_k5_s3_p2_bias)
{
    check(&rm_conv2d_desc, conv_cfg(3, 5, 3, 2, 1), ODD, GC_FILL_UNIFORM, 1, 6, 0);
}
Test(conv2d, gradcheck_k2_s1_p0_wide)
{
    check(&rm_conv2d_desc, conv_cfg(3, 2, 1, 0, 1), rm_shape_make(3, 2, 5, 9), GC_FILL_UNIFORM, 1, 7, 0);
}

/* Grouped, rectangular and dilated windows: ResNeXt's groups, Inception's
 * 1x7 / 7x1 with their per-axis padding, dilation with uneven strides. */
static rm_layer_config conv_any_cfg(int out, rm_hw k, rm_hw s, rm_hw p, rm_hw d, int groups, int bias)
{
    rm_layer_config c = conv_cfg(out, 1, 1, 0, bias);
    c.kernel = k, c.stride = s, c.pad = p, c.dilation = d, c.groups = groups;
    return c;
}
Test(conv2d, gradcheck_groups3_k3_bias)
{
    rm_layer_config c = conv_any_cfg(6, rm_hw_square(3), rm_hw_square(1), rm_hw_square(1), rm_hw_square(1), 3, 1);
    check(&rm_conv2d_desc, c, rm_shape_make(2, 6, 5, 4), GC_FILL_UNIFORM, 1, 8, 0);
}
Test(conv2d, gradcheck_1x3_and_3x1_padded_per_axis)
{
    rm_hw one = rm_hw_square(1);
    check(&rm_conv2d_desc, conv_any_cfg(3, (rm_hw){1, 3}, one, (rm_hw){0, 1}, one, 1, 1), ODD, GC_FILL_UNIFORM, 1, 9,
          0);
    check(&rm_conv2d_desc, conv_any_cfg(3, (rm_hw){3, 1}, (rm_hw){2, 1}, (rm_hw){1, 0}, one, 1, 0), ODD,
          GC_FILL_UNIFORM, 1, 10, 0);
}
Test(conv2d, gradcheck_dilated_grouped_strided)
{
    rm_layer_config c = conv_any_cfg(4, (rm_hw){2, 3}, (rm_hw){1, 2}, (rm_hw){1, 2}, (rm_hw){2, 2}, 2, 1);
    check(&rm_conv2d_desc, c, rm_shape_make(2, 4, 6, 7), GC_FILL_UNIFORM, 1, 11, 0);
}

Test(conv2d, forward_hand_k2_bias)
{
    /* x = [1 2 3; 4 5 6; 7 8 9], w = [1 2; 3 4], b = 0.5, stride 1, no padding. */
    layer_fixture f;
    fixture_make(&f, &rm_conv2d_desc, conv_cfg(1, 2, 1, 0, 1), rm_shape_make(1, 1, 3, 3), 1);
    for (int i = 0; i < 9; i++) f.x.data[i] = (float)(i + 1);
    for (int i = 0; i < 4; i++) f.params.w.data[i] = (float)(i + 1);
    f.params.b.data[0] = 0.5f;
    forward_ok(&f, 1);
    const double want[] = {37.5, 47.5, 67.5, 77.5};
    assert_values(f.y.data, want, 4, 0, "y");
    fixture_free(&f);
}

Test(conv2d, forward_hand_k3_s2_p1_two_channels)
{
    /* Channel 0 of the output sums each zero-padded 3x3 window; channel 1
     * picks its centre times -2. */
    layer_fixture f;
    fixture_make(&f, &rm_conv2d_desc, conv_cfg(2, 3, 2, 1, 0), rm_shape_make(1, 1, 3, 3), 1);
    for (int i = 0; i < 9; i++) f.x.data[i] = (float)(i + 1);
    for (int i = 0; i < 9; i++) f.params.w.data[i] = 1.0f;
    for (int i = 0; i < 9; i++) f.params.w.data[9 + i] = i == 4 ? -2.0f : 0.0f;
    forward_ok(&f, 1);
    cr_assert(rm_shape_equal(f.y.shape, rm_shape_make(1, 2, 2, 2)));
    const double want[] = {12, 16, 24, 28, -2, -6, -14, -18};
    assert_values(f.y.data, want, 8, 0, "y");
    fixture_free(&f);
}

Test(conv2d, backward_overwrites)
{
    check_overwrites(&rm_conv2d_desc, conv_cfg(4, 3, 2, 1, 1), ODD, 1);
}
Test(conv2d, backward_without_dx)
{
    check_no_dx(&rm_conv2d_desc, conv_cfg(4, 3, 1, 1, 1), ODD);
}

Test(conv2d, shapes_params_flops)
{
    rm_shape in = rm_shape_make(8, 3, 224, 224);
    rm_layer_config c = conv_cfg(64, 3, 1, 1, 1);
    cr_assert(rm_shape_equal(infer_ok(&rm_conv2d_desc, c, in), rm_shape_make(8, 64, 224, 224)));
    /* torchvision vgg16 features[0]: Conv2d(3, 64, 3, padding=1). */
    cr_assert_eq(rm_layer_param_count(&rm_conv2d_desc, &c, &in, 1), 1792);
    /* resnet50 conv1: Conv2d(3, 64, 7, stride 2, padding 3, bias=False), 112x112 out. */
    rm_layer_config r = conv_cfg(64, 7, 2, 3, 0);
    cr_assert(rm_shape_equal(infer_ok(&rm_conv2d_desc, r, in), rm_shape_make(8, 64, 112, 112)));
    cr_assert_eq(rm_layer_param_count(&rm_conv2d_desc, &r, &in, 1), 9408);
    /* Floor division: 7 + 2 - 3 = 6, / 2 + 1 = 4 rows; 5 + 2 - 3 = 4 -> 3 columns. */
    cr_assert(rm_shape_equal(infer_ok(&rm_conv2d_desc, conv_cfg(4, 3, 2, 1, 0), ODD), rm_shape_make(2, 4, 4, 3)));
    rm_shape out = rm_shape_make(8, 64, 224, 224);
    double macs = 8.0 * 64 * 224 * 224 * 3 * 9, outs = 8.0 * 64 * 224 * 224;
    cr_assert_eq(rm_conv2d_desc.flops(&c, &in, 1, out, 0), 2 * macs + outs);
    cr_assert_eq(rm_conv2d_desc.flops(&c, &in, 1, out, 1), 4 * macs + outs);
    cr_assert_eq(rm_conv2d_desc.backward_reads, RM_READS_INPUTS);
    cr_assert_eq(rm_conv2d_desc.min_inputs, 1);
    cr_assert_eq(rm_conv2d_desc.max_inputs, 1);
}

Test(conv2d, he_init)
{
    layer_fixture f;
    fixture_make(&f, &rm_conv2d_desc, conv_cfg(64, 3, 1, 1, 1), rm_shape_make(1, 64, 4, 4), 9);
    rm_rng rng = rm_rng_make(5);
    rm_shape in = rm_shape_make(1, 64, 4, 4);
    rm_conv2d_desc.init(&f.params, &f.cfg, &in, 1, &rng);
    size_t n = rm_tensor_numel(&f.params.w);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) sum += f.params.w.data[i], sq += (double)f.params.w.data[i] * f.params.w.data[i];
    double mean = sum / n, std = sqrt(sq / n - mean * mean), want = sqrt(2.0 / (64 * 9));
    cr_assert(fabs(std - want) < 0.03 * want, "std %g, want %g", std, want);
    cr_assert(fabs(mean) < 0.03 * want, "mean %g", mean);
    for (int i = 0; i < 64; i++) cr_assert_eq(f.params.b.data[i], 0.0f);
    fixture_free(&f);
}

Test(conv2d, shape_errors)
{
    rm_shape small = rm_shape_make(2, 3, 3, 3);
    expect_shape_error(&rm_conv2d_desc, conv_cfg(4, 5, 1, 0, 1), small, "larger than the padded input");
    expect_shape_error(&rm_conv2d_desc, conv_cfg(4, 6, 1, 1, 1), small, "larger than the padded input");
    expect_shape_error(&rm_conv2d_desc, conv_cfg(0, 3, 1, 1, 1), small, "out_channels");
    expect_shape_error(&rm_conv2d_desc, conv_cfg(4, 3, 0, 1, 1), small, "stride");
    expect_shape_error(&rm_conv2d_desc, conv_cfg(4, 3, -2, 1, 1), small, "stride");
    expect_shape_error(&rm_conv2d_desc, conv_cfg(4, 0, 1, 0, 1), small, "kernel");
    expect_shape_error(&rm_conv2d_desc, conv_cfg(4, 3, 1, -1, 1), small, "pad");
    expect_shape_error(&rm_conv2d_desc, conv_cfg(4, 3, 1, 1, 1), rm_shape_make(2, 0, 3, 3), "empty input");
    rm_hw one = rm_hw_square(1);
    expect_shape_error(&rm_conv2d_desc, conv_any_cfg(4, one, one, one, one, 2, 1), small,
                       "2 groups do not divide 3 input and 4 output channels");
    expect_shape_error(&rm_conv2d_desc, conv_any_cfg(3, one, one, one, one, -1, 1), small, "groups must be >= 1");
    expect_shape_error(&rm_conv2d_desc, conv_any_cfg(3, one, one, one, (rm_hw){1, -1}, 1, 1), small,
                       "dilation must be >= 1, got 1x-1");
    expect_shape_error(&rm_conv2d_desc, conv_any_cfg(3, (rm_hw){1, 3}, one, (rm_hw){0, 0}, (rm_hw){1, 2}, 1, 1), small,
                       "kernel 1x5 is larger than the padded input 3x3");
    /* 5 + 2*1 = 7 >= 5 is fine even though the kernel is larger than the raw input. */
    infer_ok(&rm_conv2d_desc, conv_cfg(4, 5, 1, 1, 1), rm_shape_make(1, 1, 5, 5));
}

/* ---- dwconv2d (depthwise) --------------------------------------------------- */

static rm_layer_config dw_cfg(int k, int s, int p, int bias)
{
    rm_layer_config c = {.kind = RM_LAYER_DWCONV2D, .kernel = {k, k}, .stride = {s, s}, .pad = {p, p}, .bias = bias};
    return c;
}

Test(dwconv2d, gradcheck_k3_s1_p1_bias)
{
    check(&rm_dwconv2d_desc, dw_cfg(3, 1, 1, 1), ODD, GC_FILL_UNIFORM, 1, 81, 0);
}
Test(dwconv2d, gradcheck_k3_s2_p1_nobias)
{
    check(&rm_dwconv2d_desc, dw_cfg(3, 2, 1, 0), ODD, GC_FILL_UNIFORM, 1, 82, 0);
}
Test(dwconv2d, gradcheck_k3_s2_p0_bias)
{
    check(&rm_dwconv2d_desc, dw_cfg(3, 2, 0, 1), ODD, GC_FILL_UNIFORM, 1, 83, 0);
}
Test(dwconv2d, gradcheck_k1_s1_p0_bias)
{
    check(&rm_dwconv2d_desc, dw_cfg(1, 1, 0, 1), ODD, GC_FILL_UNIFORM, 1, 84, 0);
}
Test(dwconv2d, gradcheck_k1_s2_p1_nobias)
{
    check(&rm_dwconv2d_desc, dw_cfg(1, 2, 1, 0), ODD, GC_FILL_UNIFORM, 1, 85, 0);
}
Test(dwconv2d, gradcheck_k5_s2_p1_wide_batch3)
{
    check(&rm_dwconv2d_desc, dw_cfg(5, 2, 1, 1), rm_shape_make(3, 4, 6, 11), GC_FILL_UNIFORM, 1, 86, 0);
}
Test(dwconv2d, gradcheck_k5_s1_p2_tall_nobias)
{
    check(&rm_dwconv2d_desc, dw_cfg(5, 1, 2, 0), rm_shape_make(2, 2, 9, 4), GC_FILL_UNIFORM, 1, 87, 0);
}

Test(dwconv2d, forward_hand_k3_p1_two_channels)
{
    /* x channel 0 = [1 2 3; 4 5 6; 7 8 9], channel 1 = 10 x channel 0.
     * Channel 0's filter is all ones (each zero-padded 3x3 window's sum),
     * channel 1's picks the centre times -2, bias 0.5 and -1: each output
     * channel reads its own input channel only. */
    layer_fixture f;
    fixture_make(&f, &rm_dwconv2d_desc, dw_cfg(3, 1, 1, 1), rm_shape_make(1, 2, 3, 3), 1);
    for (int i = 0; i < 9; i++) f.x.data[i] = (float)(i + 1), f.x.data[9 + i] = (float)(10 * (i + 1));
    for (int i = 0; i < 9; i++) f.params.w.data[i] = 1.0f, f.params.w.data[9 + i] = i == 4 ? -2.0f : 0.0f;
    f.params.b.data[0] = 0.5f, f.params.b.data[1] = -1.0f;
    forward_ok(&f, 1);
    cr_assert(rm_shape_equal(f.y.shape, rm_shape_make(1, 2, 3, 3)));
    const double want[] = {12.5,  21.5,  16.5,  27.5,  45.5,   33.5,   24.5,   39.5,   28.5,
                           -21.0, -41.0, -61.0, -81.0, -101.0, -121.0, -141.0, -161.0, -181.0};
    assert_values(f.y.data, want, 18, 0, "y");
    fixture_free(&f);
}

Test(dwconv2d, forward_hand_k2_s2_p0_batch2)
{
    /* 4x4 planes, 2x2 filter [1 2; 3 4], stride 2: four disjoint windows.
     * Image 1 is image 0 negated, so the batch index is honoured too. */
    layer_fixture f;
    fixture_make(&f, &rm_dwconv2d_desc, dw_cfg(2, 2, 0, 0), rm_shape_make(2, 1, 4, 4), 1);
    for (int i = 0; i < 16; i++) f.x.data[i] = (float)i, f.x.data[16 + i] = (float)-i;
    for (int i = 0; i < 4; i++) f.params.w.data[i] = (float)(i + 1);
    forward_ok(&f, 1);
    cr_assert(rm_shape_equal(f.y.shape, rm_shape_make(2, 1, 2, 2)));
    /* window at (0,0): 0*1 + 1*2 + 4*3 + 5*4 = 34; each step right adds 2*10, down 8*10. */
    const double want[] = {34, 54, 114, 134, -34, -54, -114, -134};
    assert_values(f.y.data, want, 8, 0, "y");
    fixture_free(&f);
}

/* A depthwise convolution is a full convolution whose C x C x k x k weights
 * are zero off the channel diagonal: forward, dx, the diagonal of dW and db
 * of the two layers agree (both sum in double; only the order differs). */
static void expect_like_block_diagonal_conv(rm_layer_config dc, rm_shape in)
{
    layer_fixture d, f;
    fixture_make(&d, &rm_dwconv2d_desc, dc, in, 31);
    rm_layer_config cc = conv_cfg(in.c, dc.kernel.h, dc.stride.h, dc.pad.h, dc.bias);
    fixture_make(&f, &rm_conv2d_desc, cc, in, 32);
    size_t kk = (size_t)dc.kernel.h * dc.kernel.w, c = (size_t)in.c;
    memcpy(f.x.data, d.x.data, rm_shape_numel(in) * sizeof(float));
    memcpy(f.dy.data, d.dy.data, rm_tensor_numel(&d.dy) * sizeof(float));
    memset(f.params.w.data, 0, rm_tensor_numel(&f.params.w) * sizeof(float));
    for (size_t ch = 0; ch < c; ch++)
        memcpy(f.params.w.data + (ch * c + ch) * kk, d.params.w.data + ch * kk, kk * sizeof(float));
    if (dc.bias) memcpy(f.params.b.data, d.params.b.data, c * sizeof(float));
    forward_ok(&d, 1), forward_ok(&f, 1);
    backward_ok(&d, 1, 1), backward_ok(&f, 1, 1);
    cr_assert(rm_shape_equal(d.y.shape, f.y.shape));
    const float *got[] = {d.y.data, d.dx.data};
    const float *want[] = {f.y.data, f.dx.data};
    size_t n[] = {rm_tensor_numel(&d.y), rm_tensor_numel(&d.dx)};
    for (int t = 0; t < 2; t++)
        for (size_t i = 0; i < n[t]; i++)
            cr_assert(fabs(got[t][i] - want[t][i]) <= 1e-6 * fmax(1.0, fabs(want[t][i])), "%s[%zu]: %.9g vs %.9g",
                      t ? "dx" : "y", i, got[t][i], want[t][i]);
    for (size_t ch = 0; ch < c; ch++)
        for (size_t j = 0; j < kk; j++) {
            float g = d.params.dw.data[ch * kk + j], w = f.params.dw.data[(ch * c + ch) * kk + j];
            cr_assert(fabs(g - w) <= 1e-6 * fmax(1.0, fabs(w)), "dw[%zu][%zu]: %.9g vs %.9g", ch, j, g, w);
        }
    for (size_t ch = 0; dc.bias && ch < c; ch++)
        cr_assert(fabs(d.params.db.data[ch] - f.params.db.data[ch]) <= 1e-6 * fmax(1.0, fabs(f.params.db.data[ch])));
    fixture_free(&d), fixture_free(&f);
}

Test(dwconv2d, same_as_block_diagonal_conv)
{
    expect_like_block_diagonal_conv(dw_cfg(3, 2, 1, 1), ODD);
    expect_like_block_diagonal_conv(dw_cfg(5, 1, 2, 0), rm_shape_make(3, 4, 6, 9));
    expect_like_block_diagonal_conv(dw_cfg(1, 1, 0, 1), rm_shape_make(1, 5, 3, 4));
}

Test(dwconv2d, backward_overwrites)
{
    check_overwrites(&rm_dwconv2d_desc, dw_cfg(3, 2, 1, 1), ODD, 1);
}
Test(dwconv2d, backward_without_dx)
{
    check_no_dx(&rm_dwconv2d_desc, dw_cfg(3, 1, 1, 1), ODD);
}

Test(dwconv2d, shapes_params_flops)
{
    /* Keras MobileNet conv_dw_1: DepthwiseConv2D(3, padding same, use_bias False) on 32 x 112 x 112. */
    rm_shape in = rm_shape_make(8, 32, 112, 112);
    rm_layer_config c = dw_cfg(3, 1, 1, 0);
    rm_shape out = infer_ok(&rm_dwconv2d_desc, c, in);
    cr_assert(rm_shape_equal(out, rm_shape_make(8, 32, 112, 112)));
    cr_assert_eq(rm_layer_param_count(&rm_dwconv2d_desc, &c, &in, 1), 288);
    rm_shape w, b;
    rm_dwconv2d_desc.param_shapes(&w, &b, &c, &in, 1);
    cr_assert(rm_shape_equal(w, rm_shape_make(32, 1, 3, 3)));
    cr_assert_eq(rm_shape_numel(b), 0);
    double macs = 8.0 * 32 * 112 * 112 * 9; /* no bias: no adds besides the products */
    cr_assert_eq(rm_dwconv2d_desc.flops(&c, &in, 1, out, 0), 2 * macs);
    cr_assert_eq(rm_dwconv2d_desc.flops(&c, &in, 1, out, 1), 4 * macs);
    /* conv_dw_2 (stride 2 on 64 x 112 x 112): 56 x 56 out; with a bias, one add per output more. */
    rm_shape in2 = rm_shape_make(1, 64, 112, 112);
    rm_layer_config c2 = dw_cfg(3, 2, 1, 1);
    rm_shape out2 = infer_ok(&rm_dwconv2d_desc, c2, in2);
    cr_assert(rm_shape_equal(out2, rm_shape_make(1, 64, 56, 56)));
    cr_assert_eq(rm_layer_param_count(&rm_dwconv2d_desc, &c2, &in2, 1), 64 * 9 + 64);
    double outs2 = 64.0 * 56 * 56;
    cr_assert_eq(rm_dwconv2d_desc.flops(&c2, &in2, 1, out2, 0), 2 * 9 * outs2 + outs2);
    cr_assert_eq(rm_dwconv2d_desc.flops(&c2, &in2, 1, out2, 1), 4 * 9 * outs2 + outs2);
    /* Floor division as conv: 7 + 2 - 3 = 6, / 2 + 1 = 4 rows; 5 + 2 - 3 = 4 -> 3 columns. */
    cr_assert(rm_shape_equal(infer_ok(&rm_dwconv2d_desc, dw_cfg(3, 2, 1, 0), ODD), rm_shape_make(2, 3, 4, 3)));
    /* Backward reads its input (for dW), never its output; no scratch on either backend. */
    cr_assert_eq(rm_dwconv2d_desc.backward_reads, RM_READS_INPUTS);
    cr_assert_null(rm_dwconv2d_desc.workspace_bytes);
    cr_assert_null(rm_layer_backend_of(&rm_dwconv2d_desc, RM_BACKEND_CUDA)->workspace);
    cr_assert_eq(rm_dwconv2d_desc.min_inputs, 1);
    cr_assert_eq(rm_dwconv2d_desc.max_inputs, 1);
    cr_assert_eq(rm_layer_desc_by_name("dwconv"), &rm_dwconv2d_desc);
    cr_assert_eq(rm_layer_desc_of(RM_LAYER_DWCONV2D), &rm_dwconv2d_desc);
}

Test(dwconv2d, he_init)
{
    /* Fan-in of one depthwise filter is k*k, whatever the channel count. */
    layer_fixture f;
    fixture_make(&f, &rm_dwconv2d_desc, dw_cfg(3, 1, 1, 1), rm_shape_make(1, 512, 4, 4), 9);
    rm_rng rng = rm_rng_make(5);
    rm_shape in = rm_shape_make(1, 512, 4, 4);
    rm_dwconv2d_desc.init(&f.params, &f.cfg, &in, 1, &rng);
    size_t n = rm_tensor_numel(&f.params.w);
    double sum = 0, sq = 0;
    for (size_t i = 0; i < n; i++) sum += f.params.w.data[i], sq += (double)f.params.w.data[i] * f.params.w.data[i];
    double mean = sum / n, std = sqrt(sq / n - mean * mean), want = sqrt(2.0 / 9);
    cr_assert(fabs(std - want) < 0.03 * want, "std %g, want %g", std, want);
    cr_assert(fabs(mean) < 0.03 * want, "mean %g", mean);
    for (int i = 0; i < 512; i++) cr_assert_eq(f.params.b.data[i], 0.0f);
    fixture_free(&f);
}

Test(dwconv2d, shape_errors)
{
    rm_shape small = rm_shape_make(2, 3, 3, 3);
    expect_shape_error(&rm_dwconv2d_desc, dw_cfg(5, 1, 0, 1), small, "larger than the padded input");
    expect_shape_error(&rm_dwconv2d_desc, dw_cfg(6, 1, 1, 1), small, "larger than the padded input");
    expect_shape_error(&rm_dwconv2d_desc, dw_cfg(3, 0, 1, 1), small, "stride");
    expect_shape_error(&rm_dwconv2d_desc, dw_cfg(0, 1, 0, 1), small, "kernel");
    expect_shape_error(&rm_dwconv2d_desc, dw_cfg(3, 1, -1, 1), small, "pad");
    expect_shape_error(&rm_dwconv2d_desc, dw_cfg(3, 1, 1, 1), rm_shape_make(2, 0, 3, 3), "empty input");
    infer_ok(&rm_dwconv2d_desc, dw_cfg(5, 1, 1, 1), rm_shape_make(1, 1, 5, 5));
    /* square windows only (a rectangular one is conv with groups = channels) */
    rm_layer_config rect = dw_cfg(3, 1, 1, 1);
    rect.kernel.w = 1;
    expect_shape_error(&rm_dwconv2d_desc, rect, small, "kernel 3x1 differs between height and width");
    rm_layer_config pool = pool_cfg(RM_LAYER_MAXPOOL2D, 3, 2, 1);
    pool.stride.w = 1;
    expect_shape_error(&rm_maxpool2d_desc, pool, small, "maxpool: stride 2x1 differs between height and width");
}

/* ---- conv_transpose2x2 ---------------------------------------------------- */

static rm_layer_config convt_cfg(int out, int bias)
{
    rm_layer_config c = {.kind = RM_LAYER_CONV_TRANSPOSE2X2, .out_channels = out, .bias = bias};
    return c;
}

Test(conv_transpose2x2, gradcheck_bias)
{
    check(&rm_conv_transpose2x2_desc, convt_cfg(4, 1), ODD, GC_FILL_UNIFORM, 1, 21, 0);
}
Test(conv_transpose2x2, gradcheck_nobias)
{
    check(&rm_conv_transpose2x2_desc, convt_cfg(3, 0), rm_shape_make(3, 5, 3, 1), GC_FILL_UNIFORM, 1, 22, 0);
}

Test(conv_transpose2x2, forward_hand)
{
    /* Two 1x1 input channels x = (1, 10), two output channels; w[ci][co][a][b]
     * = 8 ci + 4 co + 2 a + b + 1 (PyTorch's (in, out, kH, kW) layout), bias
     * (0.5, -1): y[co][a][b] = w[0][co][a][b] + 10 w[1][co][a][b] + bias[co]. */
    layer_fixture f;
    fixture_make(&f, &rm_conv_transpose2x2_desc, convt_cfg(2, 1), rm_shape_make(1, 2, 1, 1), 1);
    f.x.data[0] = 1, f.x.data[1] = 10;
    for (int i = 0; i < 16; i++) f.params.w.data[i] = (float)(i + 1);
    f.params.b.data[0] = 0.5f, f.params.b.data[1] = -1.0f;
    forward_ok(&f, 1);
    cr_assert(rm_shape_equal(f.y.shape, rm_shape_make(1, 2, 2, 2)));
    const double want[] = {91.5, 102.5, 113.5, 124.5, 134, 145, 156, 167};
    assert_values(f.y.data, want, 8, 0, "y");
    fixture_free(&f);
}

Test(conv_transpose2x2, forward_hand_spatial)
{
    /* One channel, x = [1 2], w = [1 2; 3 4], bias 1: each input pixel paints its own 2x2 block. */
    layer_fixture f;
    fixture_make(&f, &rm_conv_transpose2x2_desc, convt_cfg(1, 1), rm_shape_make(1, 1, 1, 2), 1);
    f.x.data[0] = 1, f.x.data[1] = 2;
    for (int i = 0; i < 4; i++) f.params.w.data[i] = (float)(i + 1);
    f.params.b.data[0] = 1;
    forward_ok(&f, 1);
    cr_assert(rm_shape_equal(f.y.shape, rm_shape_make(1, 1, 2, 4)));
    const double want[] = {2, 3, 3, 5, 4, 5, 7, 9};
    assert_values(f.y.data, want, 8, 0, "y");
    fixture_free(&f);
}

Test(conv_transpose2x2, backward_overwrites)
{
    check_overwrites(&rm_conv_transpose2x2_desc, convt_cfg(4, 1), ODD, 1);
}
Test(conv_transpose2x2, backward_without_dx)
{
    check_no_dx(&rm_conv_transpose2x2_desc, convt_cfg(4, 1), ODD);
}

Test(conv_transpose2x2, shapes_params_errors)
{
    rm_shape in = rm_shape_make(4, 64, 7, 5);
    rm_layer_config c = convt_cfg(32, 1);
    cr_assert(rm_shape_equal(infer_ok(&rm_conv_transpose2x2_desc, c, in), rm_shape_make(4, 32, 14, 10)));
    rm_shape w, b;
    rm_conv_transpose2x2_desc.param_shapes(&w, &b, &c, &in, 1);
    cr_assert(rm_shape_equal(w, rm_shape_make(64, 32, 2, 2)));
    cr_assert(rm_shape_equal(b, rm_shape_make(32, 1, 1, 1)));
    /* nn.ConvTranspose2d(64, 32, 2, stride=2): 64*32*4 + 32. */
    cr_assert_eq(rm_layer_param_count(&rm_conv_transpose2x2_desc, &c, &in, 1), 8224);
    cr_assert_eq(rm_conv_transpose2x2_desc.flops(&c, &in, 1, rm_shape_make(4, 32, 14, 10), 0),
                 2.0 * 4 * 32 * 14 * 10 * 64 + 4.0 * 32 * 14 * 10);
    expect_shape_error(&rm_conv_transpose2x2_desc, convt_cfg(0, 1), in, "out_channels");
}

/* ---- linear --------------------------------------------------------------- */

static rm_layer_config linear_cfg(int out, int bias)
{
    rm_layer_config c = {.kind = RM_LAYER_LINEAR, .out_channels = out, .bias = bias};
    return c;
}

Test(linear, gradcheck_vector_bias)
{
    check(&rm_linear_desc, linear_cfg(7, 1), rm_shape_make(3, 5, 1, 1), GC_FILL_UNIFORM, 1, 31, 0);
}
Test(linear, gradcheck_flattens_nobias)
{
    check(&rm_linear_desc, linear_cfg(4, 0), ODD, GC_FILL_UNIFORM, 1, 32, 0);
}
Test(linear, gradcheck_batch1)
{
    check(&rm_linear_desc, linear_cfg(3, 1), rm_shape_make(1, 3, 3, 1), GC_FILL_UNIFORM, 1, 33, 0);
}

Test(linear, forward_hand)
{
    /* x (2 samples of 3 features) times W (2 x 3) plus b. */
    layer_fixture f;
    fixture_make(&f, &rm_linear_desc, linear_cfg(2, 1), rm_shape_make(2, 3, 1, 1), 1);
    const float x[] = {1, 2, 3, -1, 0, 2}, w[] = {1, 0, -1, 0.5f, 2, 1};
    memcpy(f.x.data, x, sizeof x);
    memcpy(f.params.w.data, w, sizeof w);
    f.params.b.data[0] = 1, f.params.b.data[1] = -2;
    forward_ok(&f, 1);
    const double want[] = {1 - 3 + 1, 0.5 + 4 + 3 - 2, -1 - 2 + 1, -0.5 + 2 - 2};
    assert_values(f.y.data, want, 4, 0, "y");
    fixture_free(&f);
}

Test(linear, backward_overwrites)
{
    check_overwrites(&rm_linear_desc, linear_cfg(4, 1), ODD, 1);
}
Test(linear, backward_without_dx)
{
    check_no_dx(&rm_linear_desc, linear_cfg(4, 1), ODD);
}

Test(linear, shapes_params_errors)
{
    /* torchvision vgg16 classifier[0]: Linear(512*7*7, 4096). */
    rm_shape in = rm_shape_make(2, 512, 7, 7);
    rm_layer_config c = linear_cfg(4096, 1);
    cr_assert(rm_shape_equal(infer_ok(&rm_linear_desc, c, in), rm_shape_make(2, 4096, 1, 1)));
    cr_assert_eq(rm_layer_param_count(&rm_linear_desc, &c, &in, 1), 102764544);
    cr_assert_eq(rm_linear_desc.flops(&c, &in, 1, rm_shape_make(2, 4096, 1, 1), 0), 2.0 * 2 * 4096 * 25088 + 2 * 4096);
    expect_shape_error(&rm_linear_desc, linear_cfg(0, 1), in, "out_channels");
}

/* ---- batchnorm2d ---------------------------------------------------------- */

Test(batchnorm2d, gradcheck_training)
{
    check(&rm_batchnorm2d_desc, bn_cfg(), ODD, GC_FILL_UNIFORM, 1, 41, 0);
}
Test(batchnorm2d, gradcheck_training_vector)
{
    check(&rm_batchnorm2d_desc, bn_cfg(), rm_shape_make(5, 3, 1, 1), GC_FILL_UNIFORM, 1, 42, 0);
}
Test(batchnorm2d, gradcheck_eval)
{
    check(&rm_batchnorm2d_desc, bn_cfg(), ODD, GC_FILL_UNIFORM, 0, 43, 0);
}

Test(batchnorm2d, forward_hand_training)
{
    /* x = (1 2 3 4): mean 2.5, biased variance 1.25; gamma 2, beta 0.5. */
    layer_fixture f;
    fixture_make(&f, &rm_batchnorm2d_desc, bn_cfg(), rm_shape_make(1, 1, 1, 4), 1);
    for (int i = 0; i < 4; i++) f.x.data[i] = (float)(i + 1);
    f.params.w.data[0] = 2, f.params.b.data[0] = 0.5f;
    forward_ok(&f, 1);
    const double want[] = {-2.1832708399378538, -0.394423613312618, 1.394423613312618, 3.1832708399378538};
    assert_values(f.y.data, want, 4, 1e-6, "y");
    /* update_stats is 0: the running statistics stay at their initial 0 and 1. */
    cr_assert_eq(f.params.running_mean.data[0], 0.0f);
    cr_assert_eq(f.params.running_var.data[0], 1.0f);
    fixture_free(&f);
}

Test(batchnorm2d, forward_hand_eval)
{
    /* Running mean 1, variance 4: y = 2 (x - 1) / sqrt(4 + eps) + 0.5, whatever the batch. */
    layer_fixture f;
    fixture_make(&f, &rm_batchnorm2d_desc, bn_cfg(), rm_shape_make(1, 1, 1, 4), 1);
    for (int i = 0; i < 4; i++) f.x.data[i] = (float)(i + 1);
    f.params.w.data[0] = 2, f.params.b.data[0] = 0.5f;
    f.params.running_mean.data[0] = 1, f.params.running_var.data[0] = 4;
    rm_layer_call c = fixture_call(&f, 0);
    c.update_stats = 1; /* ignored in eval */
    rm_err e = {0};
    cr_assert_eq(rm_batchnorm2d_desc.forward_ref(&c, &e), RM_OK, "%s", e.msg);
    const double want[] = {0.5, 1.4999987500023437, 2.4999975000046875, 3.499996250007031};
    assert_values(f.y.data, want, 4, 1e-6, "y");
    cr_assert_eq(f.params.running_mean.data[0], 1.0f);
    cr_assert_eq(f.params.running_var.data[0], 4.0f);
    /* Eval backward is the affine map's: dx = dy gamma / sqrt(4 + eps),
     * dgamma = sum dy (x - 1) / sqrt(4 + eps), dbeta = sum dy. */
    const float dy[] = {1, -2, 0.5f, 4};
    memcpy(f.dy.data, dy, sizeof dy);
    backward_ok(&f, 0, 1);
    double s = 1.0 / sqrt(4 + 1e-5);
    const double want_dx[] = {2 * s, -4 * s, 1 * s, 8 * s};
    assert_values(f.dx.data, want_dx, 4, 1e-6, "dx");
    const double want_dgamma[] = {(0 - 2 + 1 + 12) * s}, want_dbeta[] = {3.5};
    assert_values(f.params.dw.data, want_dgamma, 1, 1e-6, "dgamma");
    assert_values(f.params.db.data, want_dbeta, 1, 0, "dbeta");
    fixture_free(&f);
}

Test(batchnorm2d, running_stats_update)
{
    /* Two channels over N=2, 1x2 pixels; momentum 0.25. Channel 0 holds
     * (1 2 | 3 4): mean 2.5, unbiased variance 5/3. Channel 1 holds
     * (-1 -1 | -1 3): mean 0, unbiased variance 4. */
    rm_layer_config cfg = bn_cfg();
    cfg.momentum = 0.25f;
    layer_fixture f;
    fixture_make(&f, &rm_batchnorm2d_desc, cfg, rm_shape_make(2, 2, 1, 2), 1);
    const float x[] = {1, 2, -1, -1, 3, 4, -1, 3};
    memcpy(f.x.data, x, sizeof x);
    f.params.running_mean.data[0] = 1, f.params.running_var.data[0] = 2;
    f.params.running_mean.data[1] = -4, f.params.running_var.data[1] = 0.5f;
    rm_layer_call c = fixture_call(&f, 1);
    rm_err e = {0};
    /* Without update_stats (a recomputation), nothing moves. */
    cr_assert_eq(rm_batchnorm2d_desc.forward_ref(&c, &e), RM_OK, "%s", e.msg);
    const double unchanged_mean[] = {1, -4}, unchanged_var[] = {2, 0.5};
    assert_values(f.params.running_mean.data, unchanged_mean, 2, 0, "running_mean");
    assert_values(f.params.running_var.data, unchanged_var, 2, 0, "running_var");
    float *y0 = copy_of(&f.y);
    c.update_stats = 1;
    cr_assert_eq(rm_batchnorm2d_desc.forward_ref(&c, &e), RM_OK, "%s", e.msg);
    const double want_mean[] = {0.75 * 1 + 0.25 * 2.5, 0.75 * -4 + 0.25 * 0};
    const double want_var[] = {0.75 * 2 + 0.25 * (5.0 / 3.0), 0.75 * 0.5 + 0.25 * 4};
    assert_values(f.params.running_mean.data, want_mean, 2, 1e-6, "running_mean");
    assert_values(f.params.running_var.data, want_var, 2, 1e-6, "running_var");
    /* The output uses the batch statistics either way. */
    assert_same(y0, &f.y, "y");
    free(y0);
    fixture_free(&f);
}

Test(batchnorm2d, training_gradient_is_centred)
{
    /* Training-mode dx is orthogonal to 1 and to xhat in every channel (to
     * xhat exactly only as eps -> 0, since sum xhat^2 = M var / (var + eps)). */
    rm_layer_config cfg = bn_cfg();
    cfg.eps = 1e-12f;
    layer_fixture f;
    fixture_make(&f, &rm_batchnorm2d_desc, cfg, ODD, 3);
    forward_ok(&f, 1);
    backward_ok(&f, 1, 1);
    for (int c = 0; c < 3; c++) {
        double sum = 0, dot = 0;
        for (int n = 0; n < 2; n++)
            for (int i = 0; i < 35; i++) {
                size_t k = ((size_t)n * 3 + c) * 35 + i;
                sum += f.dx.data[k];
                dot += f.dx.data[k] * (f.y.data[k] - f.params.b.data[c]);
            }
        cr_assert(fabs(sum) < 1e-5 && fabs(dot) < 1e-5, "channel %d: sum %g, dot %g", c, sum, dot);
    }
    fixture_free(&f);
}

Test(batchnorm2d, backward_overwrites)
{
    check_overwrites(&rm_batchnorm2d_desc, bn_cfg(), ODD, 1);
    check_overwrites(&rm_batchnorm2d_desc, bn_cfg(), ODD, 0);
}
Test(batchnorm2d, backward_without_dx)
{
    check_no_dx(&rm_batchnorm2d_desc, bn_cfg(), ODD);
}

Test(batchnorm2d, shapes_params_errors)
{
    rm_shape in = rm_shape_make(4, 64, 7, 5);
    rm_layer_config c = bn_cfg();
    cr_assert(rm_shape_equal(infer_ok(&rm_batchnorm2d_desc, c, in), in));
    /* nn.BatchNorm2d(64): gamma and beta only, the running buffers are not parameters. */
    cr_assert_eq(rm_layer_param_count(&rm_batchnorm2d_desc, &c, &in, 1), 128);
    rm_layer_config bad = c;
    bad.eps = 0;
    expect_shape_error(&rm_batchnorm2d_desc, bad, in, "eps");
    bad = c;
    bad.momentum = 1.5f;
    expect_shape_error(&rm_batchnorm2d_desc, bad, in, "momentum");
    /* One value per channel cannot be normalised in training (PyTorch refuses too). */
    layer_fixture f;
    fixture_make(&f, &rm_batchnorm2d_desc, c, rm_shape_make(1, 3, 1, 1), 1);
    rm_layer_call call = fixture_call(&f, 1);
    rm_err e = {0};
    cr_assert_eq(rm_batchnorm2d_desc.forward_ref(&call, &e), RM_ERR_SHAPE);
    cr_assert(strstr(e.msg, "more than 1 value per channel"), "%s", e.msg);
    call.training = 0;
    cr_assert_eq(rm_batchnorm2d_desc.forward_ref(&call, &e), RM_OK, "%s", e.msg);
    fixture_free(&f);
}

/* ---- maxpool2d ------------------------------------------------------------ */

/* Spaced fill keeps the values of a window at least ~0.008 apart: a 1e-3
 * perturbation never changes a window's argmax. */
#define MAXPOOL_EPS 1e-3

Test(maxpool2d, gradcheck_k2_s2_p0)
{
    check(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 2, 2, 0), ODD, GC_FILL_SPACED, 1, 51, MAXPOOL_EPS);
}
Test(maxpool2d, gradcheck_k3_s2_p1)
{
    check(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 3, 2, 1), ODD, GC_FILL_SPACED, 1, 52, MAXPOOL_EPS);
}
Test(maxpool2d, gradcheck_k3_s1_p1_overlapping)
{
    check(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 3, 1, 1), ODD, GC_FILL_SPACED, 1, 53, MAXPOOL_EPS);
}

Test(maxpool2d, forward_backward_hand)
{
    /* x = [1 5 2; 4 3 6; 9 8 7], k2 s1: y = [5 6; 9 8]. Each window's max
     * receives its gradient; 5 wins two windows and receives both. */
    layer_fixture f;
    fixture_make(&f, &rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 2, 1, 0), rm_shape_make(1, 1, 3, 3), 1);
    const float x[] = {1, 5, 2, 4, 3, 6, 9, 8, 7};
    memcpy(f.x.data, x, sizeof x);
    forward_ok(&f, 1);
    const double want[] = {5, 6, 9, 8};
    assert_values(f.y.data, want, 4, 0, "y");
    const float dy[] = {1, 10, 100, 1000};
    memcpy(f.dy.data, dy, sizeof dy);
    backward_ok(&f, 1, 1);
    const double want_dx[] = {0, 1, 0, 0, 0, 10, 100, 1000, 0};
    assert_values(f.dx.data, want_dx, 9, 0, "dx");
    fixture_free(&f);
}

/* ceil_mode (GoogLeNet's and SqueezeNet's pools): PyTorch's output sizes,
 * an extra window overhanging the bottom and right edges, and the rule that
 * drops a window that would start in the right padding. */
static rm_layer_config ceil_cfg(int k, int s, int p)
{
    rm_layer_config c = pool_cfg(RM_LAYER_MAXPOOL2D, k, s, p);
    c.ceil_mode = 1;
    return c;
}

Test(maxpool2d, ceil_mode_sizes)
{
    /* in, k, s, p: PyTorch's size with ceil_mode, and without */
    static const int cases[][6] = {
        {112, 3, 2, 0, 56, 55},                         /* googlenet maxpool1 */
        {14, 3, 2, 0, 7, 6},    {111, 3, 2, 0, 55, 55}, /* squeezenet: no window overhangs */
        {8, 3, 2, 0, 4, 3},     {5, 2, 2, 1, 3, 3},     /* the 4th window would start at 6 >= 5 + 1: dropped */
        {6, 2, 2, 1, 4, 4},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const int *t = cases[k];
        rm_shape in = rm_shape_make(2, 3, t[0], t[0]);
        rm_shape got = infer_ok(&rm_maxpool2d_desc, ceil_cfg(t[1], t[2], t[3]), in);
        cr_expect_eq(got.h, t[4], "%d, k%d s%d p%d, ceil: %d, PyTorch %d", t[0], t[1], t[2], t[3], got.h, t[4]);
        got = infer_ok(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, t[1], t[2], t[3]), in);
        cr_expect_eq(got.h, t[5], "%d, k%d s%d p%d, floor: %d, PyTorch %d", t[0], t[1], t[2], t[3], got.h, t[5]);
    }
    /* avgpool has no ceil_mode: an overhanging window's divisor would be a choice of its own. */
    rm_layer_config avg = ceil_cfg(2, 2, 0);
    avg.kind = RM_LAYER_AVGPOOL2D;
    expect_shape_error(&rm_avgpool2d_desc, avg, ODD, "ceil_mode");
}

Test(maxpool2d, ceil_mode_hand_and_gradcheck)
{
    /* x = [1 5 2; 4 3 6; 9 8 7], k2 s2 ceil: windows [1 5; 4 3], [2; 6], [9 8], [7]. */
    layer_fixture f;
    fixture_make(&f, &rm_maxpool2d_desc, ceil_cfg(2, 2, 0), rm_shape_make(1, 1, 3, 3), 1);
    const float x[] = {1, 5, 2, 4, 3, 6, 9, 8, 7};
    memcpy(f.x.data, x, sizeof x);
    forward_ok(&f, 1);
    const double want[] = {5, 6, 9, 7};
    assert_values(f.y.data, want, 4, 0, "y");
    const float dy[] = {1, 10, 100, 1000};
    memcpy(f.dy.data, dy, sizeof dy);
    backward_ok(&f, 1, 1);
    const double want_dx[] = {0, 1, 0, 0, 0, 10, 100, 0, 1000};
    assert_values(f.dx.data, want_dx, 9, 0, "dx");
    fixture_free(&f);
    check(&rm_maxpool2d_desc, ceil_cfg(2, 2, 0), ODD, GC_FILL_SPACED, 1, 54, MAXPOOL_EPS);
    check(&rm_maxpool2d_desc, ceil_cfg(3, 2, 1), ODD, GC_FILL_SPACED, 1, 55, MAXPOOL_EPS);
}

Test(maxpool2d, ties_go_to_first)
{
    /* All equal, k3 s1 p1 on 2x2: padding never wins, and every window picks
     * its first real element in scan order. */
    layer_fixture f;
    fixture_make(&f, &rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 3, 1, 1), rm_shape_make(1, 1, 2, 2), 1);
    for (int i = 0; i < 4; i++) f.x.data[i] = -3;
    forward_ok(&f, 1);
    const double want[] = {-3, -3, -3, -3};
    assert_values(f.y.data, want, 4, 0, "y");
    for (int i = 0; i < 4; i++) f.dy.data[i] = 1;
    backward_ok(&f, 1, 1);
    const double want_dx[] = {4, 0, 0, 0};
    assert_values(f.dx.data, want_dx, 4, 0, "dx");
    fixture_free(&f);
}

Test(maxpool2d, nan_propagates)
{
    /* A NaN wins its window (PyTorch does the same), so divergence stays visible. */
    layer_fixture f;
    fixture_make(&f, &rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 2, 2, 0), rm_shape_make(1, 1, 2, 4), 1);
    const float x[] = {1, 2, 3, 4, NAN, 0, 5, -1};
    memcpy(f.x.data, x, sizeof x);
    forward_ok(&f, 1);
    cr_assert(isnan(f.y.data[0]), "y[0] = %g", f.y.data[0]);
    cr_assert_eq(f.y.data[1], 5.0f);
    fixture_free(&f);
}

Test(maxpool2d, backward_overwrites)
{
    check_overwrites(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 3, 2, 1), ODD, 1);
}

Test(maxpool2d, shapes_errors)
{
    rm_shape in = rm_shape_make(2, 64, 112, 112);
    /* resnet50 maxpool: MaxPool2d(3, 2, 1): 112 -> 56. */
    cr_assert(rm_shape_equal(infer_ok(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 3, 2, 1), in),
                             rm_shape_make(2, 64, 56, 56)));
    cr_assert(rm_shape_equal(infer_ok(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 2, 2, 0), ODD),
                             rm_shape_make(2, 3, 3, 2)));
    cr_assert_null(rm_maxpool2d_desc.param_shapes);
    cr_assert_eq(rm_maxpool2d_desc.backward_reads, RM_READS_INPUTS);
    expect_shape_error(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 2, 2, 2), in, "pad");
    expect_shape_error(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 0, 1, 0), in, "kernel");
    expect_shape_error(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 2, 0, 0), in, "stride");
    expect_shape_error(&rm_maxpool2d_desc, pool_cfg(RM_LAYER_MAXPOOL2D, 3, 1, 0), rm_shape_make(1, 1, 2, 2),
                       "larger than the padded input");
}

/* ---- avgpool2d ------------------------------------------------------------ */

Test(avgpool2d, gradcheck_k2_s2_p0)
{
    check(&rm_avgpool2d_desc, pool_cfg(RM_LAYER_AVGPOOL2D, 2, 2, 0), ODD, GC_FILL_UNIFORM, 1, 61, 0);
}
Test(avgpool2d, gradcheck_k3_s2_p1)
{
    check(&rm_avgpool2d_desc, pool_cfg(RM_LAYER_AVGPOOL2D, 3, 2, 1), ODD, GC_FILL_UNIFORM, 1, 62, 0);
}
Test(avgpool2d, gradcheck_k3_s1_p1_overlapping)
{
    check(&rm_avgpool2d_desc, pool_cfg(RM_LAYER_AVGPOOL2D, 3, 1, 1), ODD, GC_FILL_UNIFORM, 1, 63, 0);
}

Test(avgpool2d, forward_hand_count_include_pad)
{
    /* x = [1 2; 3 4], k3 s1 p1: every window holds all four values and five
     * zeros of padding, and padding counts: each output is 10 / 9. */
    layer_fixture f;
    fixture_make(&f, &rm_avgpool2d_desc, pool_cfg(RM_LAYER_AVGPOOL2D, 3, 1, 1), rm_shape_make(1, 1, 2, 2), 1);
    for (int i = 0; i < 4; i++) f.x.data[i] = (float)(i + 1);
    forward_ok(&f, 1);
    const double want[] = {10.0 / 9, 10.0 / 9, 10.0 / 9, 10.0 / 9};
    assert_values(f.y.data, want, 4, 1e-6, "y");
    fixture_free(&f);
}

Test(avgpool2d, backward_overwrites)
{
    check_overwrites(&rm_avgpool2d_desc, pool_cfg(RM_LAYER_AVGPOOL2D, 3, 1, 1), ODD, 1);
}

Test(avgpool2d, shapes_errors)
{
    cr_assert(rm_shape_equal(infer_ok(&rm_avgpool2d_desc, pool_cfg(RM_LAYER_AVGPOOL2D, 3, 2, 1), ODD),
                             rm_shape_make(2, 3, 4, 3)));
    cr_assert_eq(rm_avgpool2d_desc.backward_reads, RM_READS_NOTHING);
    expect_shape_error(&rm_avgpool2d_desc, pool_cfg(RM_LAYER_AVGPOOL2D, 3, 1, 2), ODD, "pad");
    expect_shape_error(&rm_avgpool2d_desc, pool_cfg(RM_LAYER_AVGPOOL2D, 3, 0, 1), ODD, "stride");
    expect_shape_error(&rm_avgpool2d_desc, pool_cfg(RM_LAYER_AVGPOOL2D, 8, 1, 0), ODD, "larger than the padded input");
}

/* ---- global_avgpool ------------------------------------------------------- */

Test(global_avgpool, gradcheck)
{
    rm_layer_config c = {.kind = RM_LAYER_GLOBAL_AVGPOOL};
    check(&rm_global_avgpool_desc, c, ODD, GC_FILL_UNIFORM, 1, 71, 0);
}

Test(global_avgpool, forward_backward_hand)
{
    rm_layer_config c = {.kind = RM_LAYER_GLOBAL_AVGPOOL};
    layer_fixture f;
    fixture_make(&f, &rm_global_avgpool_desc, c, rm_shape_make(1, 2, 2, 2), 1);
    const float x[] = {1, 2, 3, 4, -1, -1, -1, 7};
    memcpy(f.x.data, x, sizeof x);
    forward_ok(&f, 1);
    cr_assert(rm_shape_equal(f.y.shape, rm_shape_make(1, 2, 1, 1)));
    const double want[] = {2.5, 1};
    assert_values(f.y.data, want, 2, 0, "y");
    f.dy.data[0] = 4, f.dy.data[1] = -2;
    backward_ok(&f, 1, 1);
    const double want_dx[] = {1, 1, 1, 1, -0.5, -0.5, -0.5, -0.5};
    assert_values(f.dx.data, want_dx, 8, 0, "dx");
    cr_assert_eq(rm_global_avgpool_desc.backward_reads, RM_READS_NOTHING);
    fixture_free(&f);
}
