/* Gradient checks, hand-computed values and shape errors for layer set b:
 * relu, add, concat, upsample, dropout, flatten, softmax_xent and
 * pixel_softmax_xent. Shapes are odd on purpose so that no loop can get away
 * with assuming even or square sizes.
 *
 * Over ~600 lines on purpose: one suite per layer set, each Test independent,
 * sharing gradcheck.c; splitting it further would only scatter the layers.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layer_checks.h"

/* ---- relu ---------------------------------------------------------------- */

Test(relu, descriptor)
{
    check_desc(&rm_relu_desc, "relu", RM_READS_OUTPUT, 1, 1, &odd, 1);
}

Test(relu, gradcheck)
{
    gc_case c = one_input_case(&rm_relu_desc, odd);
    c.fill = GC_FILL_SPACED;
    run_gradcheck(&c);
}

Test(relu, forward_values)
{
    float x[5] = {-2.0f, -0.0f, 0.0f, 0.5f, 3.0f}, y[5], want[5] = {0, 0, 0, 0.5f, 3.0f};
    rm_tensor tx = rm_tensor_make(rm_shape_make(1, 5, 1, 1), x), ty = rm_tensor_make(tx.shape, y);
    rm_layer_call call = {.nin = 1, .in = {&tx}, .out = &ty};
    rm_err e = {0};
    cr_assert_eq(rm_relu_desc.forward_ref(&call, &e), RM_OK);
    for (int i = 0; i < 5; i++) cr_assert_eq(y[i], want[i], "y[%d] = %g", i, y[i]);
}

Test(relu, backward_overwrites)
{
    rm_layer_config cfg = {.kind = RM_LAYER_RELU};
    check_backward_overwrites(&rm_relu_desc, &cfg, &odd, 1, 1);
}

Test(relu, input_count_errors)
{
    expect_input_count_errors(&rm_relu_desc);
}

/* ---- add ----------------------------------------------------------------- */

Test(add, descriptor)
{
    rm_shape in[2] = {odd, odd};
    check_desc(&rm_add_desc, "add", RM_READS_NOTHING, 2, RM_MAX_INPUTS, in, 2);
}

Test(add, gradcheck_two_inputs)
{
    gc_case c = one_input_case(&rm_add_desc, odd);
    c.in[1] = odd;
    c.nin = 2;
    run_gradcheck(&c);
}

Test(add, gradcheck_three_inputs)
{
    gc_case c = one_input_case(&rm_add_desc, odd);
    c.in[1] = c.in[2] = odd;
    c.nin = 3;
    run_gradcheck(&c);
}

Test(add, forward_values)
{
    float a[3] = {1, 2, 3}, b[3] = {10, 20, 30}, c[3] = {100, 200, 300}, y[3];
    rm_shape s = rm_shape_make(1, 3, 1, 1);
    rm_tensor ta = rm_tensor_make(s, a), tb = rm_tensor_make(s, b), tc = rm_tensor_make(s, c),
              ty = rm_tensor_make(s, y);
    rm_layer_call call = {.nin = 3, .in = {&ta, &tb, &tc}, .out = &ty};
    rm_err e = {0};
    cr_assert_eq(rm_add_desc.forward_ref(&call, &e), RM_OK);
    cr_assert(y[0] == 111 && y[1] == 222 && y[2] == 333);
}

Test(add, backward_overwrites)
{
    rm_layer_config cfg = {.kind = RM_LAYER_ADD};
    rm_shape in[3] = {odd, odd, odd};
    check_backward_overwrites(&rm_add_desc, &cfg, in, 3, 1);
}

Test(add, mismatched_shapes)
{
    rm_layer_config cfg = {.kind = RM_LAYER_ADD};
    rm_shape in[3] = {odd, odd, rm_shape_make(2, 3, 7, 6)};
    expect_shape_error(&rm_add_desc, &cfg, in, 3, "2x3x7x6");
    expect_shape_error(&rm_add_desc, &cfg, in, 3, "2x3x7x5");
    in[2] = rm_shape_make(3, 3, 7, 5); /* batch differs */
    expect_shape_error(&rm_add_desc, &cfg, in, 3, "3x3x7x5");
}

Test(add, input_count_errors)
{
    expect_input_count_errors(&rm_add_desc);
}

/* ---- concat -------------------------------------------------------------- */

Test(concat, descriptor)
{
    rm_shape in[2] = {odd, rm_shape_make(2, 4, 7, 5)};
    check_desc(&rm_concat_desc, "concat", RM_READS_NOTHING, 2, RM_MAX_INPUTS, in, 2);
    rm_shape out;
    rm_layer_config cfg = {.kind = RM_LAYER_CONCAT};
    cr_assert_eq(rm_concat_desc.infer(&out, &cfg, in, 2, NULL), RM_OK);
    cr_assert(rm_shape_equal(out, rm_shape_make(2, 7, 7, 5)));
}

Test(concat, gradcheck_two_inputs)
{
    gc_case c = one_input_case(&rm_concat_desc, odd);
    c.in[1] = rm_shape_make(2, 1, 7, 5);
    c.nin = 2;
    run_gradcheck(&c);
}

Test(concat, gradcheck_three_inputs)
{
    gc_case c = one_input_case(&rm_concat_desc, odd);
    c.in[1] = rm_shape_make(2, 1, 7, 5);
    c.in[2] = rm_shape_make(2, 5, 7, 5);
    c.nin = 3;
    run_gradcheck(&c);
}

/* As wide as DenseNet-121's widest (a block's input and 24 layers'
 * outputs), channels of several sizes. */
Test(concat, gradcheck_twenty_five_inputs)
{
    gc_case c = one_input_case(&rm_concat_desc, rm_shape_make(2, 3, 2, 3));
    for (int k = 1; k < 25; k++) c.in[k] = rm_shape_make(2, 1 + k % 2, 2, 3);
    c.nin = 25;
    run_gradcheck(&c);
}

/* Channels of input 0 come first within each sample, then input 1's. */
Test(concat, forward_layout)
{
    float a[4] = {1, 2, 3, 4}, b[2] = {10, 20}, y[6];
    rm_tensor ta = rm_tensor_make(rm_shape_make(2, 2, 1, 1), a), tb = rm_tensor_make(rm_shape_make(2, 1, 1, 1), b);
    rm_tensor ty = rm_tensor_make(rm_shape_make(2, 3, 1, 1), y);
    rm_layer_call call = {.nin = 2, .in = {&ta, &tb}, .out = &ty};
    rm_err e = {0};
    cr_assert_eq(rm_concat_desc.forward_ref(&call, &e), RM_OK);
    float want[6] = {1, 2, 10, 3, 4, 20};
    for (int i = 0; i < 6; i++) cr_assert_eq(y[i], want[i], "y[%d] = %g", i, y[i]);
}

Test(concat, backward_overwrites)
{
    rm_layer_config cfg = {.kind = RM_LAYER_CONCAT};
    rm_shape in[3] = {odd, rm_shape_make(2, 1, 7, 5), rm_shape_make(2, 2, 7, 5)};
    check_backward_overwrites(&rm_concat_desc, &cfg, in, 3, 1);
}

Test(concat, mismatched_shapes)
{
    rm_layer_config cfg = {.kind = RM_LAYER_CONCAT};
    rm_shape in[2] = {odd, rm_shape_make(2, 4, 6, 5)}; /* different H */
    expect_shape_error(&rm_concat_desc, &cfg, in, 2, "2x4x6x5");
    in[1] = rm_shape_make(2, 4, 7, 4); /* different W */
    expect_shape_error(&rm_concat_desc, &cfg, in, 2, "2x4x7x4");
    in[1] = rm_shape_make(1, 4, 7, 5); /* different N */
    expect_shape_error(&rm_concat_desc, &cfg, in, 2, "1x4x7x5");
}

Test(concat, input_count_errors)
{
    expect_input_count_errors(&rm_concat_desc);
}

/* ---- upsample ------------------------------------------------------------ */

Test(upsample, descriptor)
{
    check_desc(&rm_upsample2x_desc, "upsample", RM_READS_NOTHING, 1, 1, &odd, 1);
    rm_shape out;
    rm_layer_config cfg = {.kind = RM_LAYER_UPSAMPLE2X};
    cr_assert_eq(rm_upsample2x_desc.infer(&out, &cfg, &odd, 1, NULL), RM_OK);
    cr_assert(rm_shape_equal(out, rm_shape_make(2, 3, 14, 10)));
}

Test(upsample, gradcheck)
{
    gc_case c = one_input_case(&rm_upsample2x_desc, odd);
    run_gradcheck(&c);
}

Test(upsample, forward_values)
{
    float x[6] = {1, 2, 3, 4, 5, 6}, y[24]; /* 1x1x2x3 -> 1x1x4x6 */
    rm_tensor tx = rm_tensor_make(rm_shape_make(1, 1, 2, 3), x), ty = rm_tensor_make(rm_shape_make(1, 1, 4, 6), y);
    rm_layer_call call = {.nin = 1, .in = {&tx}, .out = &ty};
    rm_err e = {0};
    cr_assert_eq(rm_upsample2x_desc.forward_ref(&call, &e), RM_OK);
    float want[24] = {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 4, 4, 5, 5, 6, 6};
    for (int i = 0; i < 24; i++) cr_assert_eq(y[i], want[i], "y[%d] = %g", i, y[i]);
}

Test(upsample, backward_overwrites)
{
    rm_layer_config cfg = {.kind = RM_LAYER_UPSAMPLE2X};
    check_backward_overwrites(&rm_upsample2x_desc, &cfg, &odd, 1, 1);
}

Test(upsample, input_count_errors)
{
    expect_input_count_errors(&rm_upsample2x_desc);
}

/* ---- dropout ------------------------------------------------------------- */

Test(dropout, descriptor)
{
    check_desc(&rm_dropout_desc, "dropout", RM_READS_NOTHING, 1, 1, &odd, 1);
}

Test(dropout, gradcheck_training)
{
    gc_case c = one_input_case(&rm_dropout_desc, odd);
    c.cfg.p = 0.3f;
    c.training = 1;
    run_gradcheck(&c);
}

Test(dropout, gradcheck_eval)
{
    gc_case c = one_input_case(&rm_dropout_desc, odd);
    c.cfg.p = 0.3f;
    c.training = 0;
    run_gradcheck(&c);
}

Test(dropout, backward_overwrites)
{
    rm_layer_config cfg = {.kind = RM_LAYER_DROPOUT, .p = 0.3f};
    check_backward_overwrites(&rm_dropout_desc, &cfg, &odd, 1, 1);
}

/* Runs the forward on x = 1 everywhere, so y is the mask times 1/(1-p). */
static void dropout_mask(float *y, size_t n, float p, uint64_t seed, uint64_t step, int node_id, int training)
{
    float *x = floats(n);
    for (size_t i = 0; i < n; i++) x[i] = 1.0f;
    rm_shape s = rm_shape_make(1, (int)n, 1, 1);
    rm_tensor tx = rm_tensor_make(s, x), ty = rm_tensor_make(s, y);
    rm_layer_config cfg = {.kind = RM_LAYER_DROPOUT, .p = p};
    rm_layer_call call = {.cfg = &cfg,
                          .nin = 1,
                          .in = {&tx},
                          .out = &ty,
                          .training = training,
                          .seed = seed,
                          .step = step,
                          .node_id = node_id};
    rm_err e = {0};
    cr_assert_eq(rm_dropout_desc.forward_ref(&call, &e), RM_OK, "%s", e.msg);
    free(x);
}

static size_t count_kept(const float *y, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) kept += y[i] != 0.0f;
    return kept;
}

/* What makes rematerialization exact: a recomputed forward, and the backward
 * (which keeps no mask), see exactly the mask of the first forward. */
Test(dropout, mask_replays_bit_for_bit)
{
    enum { n = 4096 };
    float *a = floats(n), *b = floats(n), *dx = floats(n), *dy = floats(n);
    dropout_mask(a, n, 0.3f, 1234, 17, 9, 1);
    dropout_mask(b, n, 0.3f, 1234, 17, 9, 1);
    cr_assert(!memcmp(a, b, n * sizeof(float)), "recomputed forward differs");

    for (size_t i = 0; i < n; i++) dy[i] = 1.0f;
    rm_shape s = rm_shape_make(1, n, 1, 1);
    rm_tensor tdy = rm_tensor_make(s, dy), tdx = rm_tensor_make(s, dx), hidden = rm_tensor_make(s, NULL);
    rm_layer_config cfg = {.kind = RM_LAYER_DROPOUT, .p = 0.3f};
    rm_layer_call call = {.cfg = &cfg,
                          .nin = 1,
                          .in = {&hidden},
                          .out = &hidden,
                          .dout = &tdy,
                          .din = {&tdx},
                          .training = 1,
                          .seed = 1234,
                          .step = 17,
                          .node_id = 9};
    rm_err e = {0};
    cr_assert_eq(rm_dropout_desc.backward_ref(&call, &e), RM_OK, "%s", e.msg);
    cr_assert(!memcmp(a, dx, n * sizeof(float)), "backward mask differs from the forward's");
    free(a);
    free(b);
    free(dx);
    free(dy);
}

Test(dropout, mask_changes_with_step_node_and_seed)
{
    enum { n = 4096 };
    float *base = floats(n), *other = floats(n);
    dropout_mask(base, n, 0.5f, 1234, 17, 9, 1);
    uint64_t seeds[3] = {1234, 1234, 1235}, steps[3] = {18, 17, 17};
    int nodes[3] = {9, 10, 9};
    const char *what[3] = {"step", "node", "seed"};
    for (int k = 0; k < 3; k++) {
        dropout_mask(other, n, 0.5f, seeds[k], steps[k], nodes[k], 1);
        size_t differ = 0;
        for (size_t i = 0; i < n; i++) differ += (base[i] != 0.0f) != (other[i] != 0.0f);
        /* Independent masks with p = 0.5 disagree on about half the elements. */
        cr_assert(differ > n / 2 - n / 10 && differ < n / 2 + n / 10, "changing the %s changed %zu of %d mask bits",
                  what[k], differ, n);
    }
    free(base);
    free(other);
}

Test(dropout, kept_fraction_and_scale)
{
    enum { n = 1 << 20 };
    float *y = floats(n);
    float ps[3] = {0.1f, 0.3f, 0.7f};
    for (int k = 0; k < 3; k++) {
        dropout_mask(y, n, ps[k], 77, 3, 1, 1);
        double frac = (double)count_kept(y, n) / n;
        /* The standard deviation of the fraction is below 5e-4 here. */
        cr_assert(fabs(frac - (1.0 - ps[k])) < 3e-3, "p = %g kept %.4f", (double)ps[k], frac);
        float scale = 1.0f / (1.0f - ps[k]);
        for (size_t i = 0; i < n; i++) cr_assert(y[i] == 0.0f || y[i] == scale, "y[%zu] = %g", i, y[i]);
    }
    free(y);
}

Test(dropout, eval_and_p0_are_identity)
{
    enum { n = 1001 };
    float *y = floats(n);
    dropout_mask(y, n, 0.3f, 5, 6, 7, 0);
    for (size_t i = 0; i < n; i++) cr_assert_eq(y[i], 1.0f);
    dropout_mask(y, n, 0.0f, 5, 6, 7, 1);
    for (size_t i = 0; i < n; i++) cr_assert_eq(y[i], 1.0f);
    free(y);
}

Test(dropout, bad_p)
{
    float bad[4] = {1.0f, 1.5f, -0.1f, NAN};
    for (int k = 0; k < 4; k++) {
        rm_layer_config cfg = {.kind = RM_LAYER_DROPOUT, .p = bad[k]};
        expect_shape_error(&rm_dropout_desc, &cfg, &odd, 1, "p");
    }
    /* The kernels refuse too: they never divide by 1 - p = 0. */
    float x[3] = {1, 2, 3}, y[3];
    rm_tensor tx = rm_tensor_make(rm_shape_make(1, 3, 1, 1), x), ty = rm_tensor_make(tx.shape, y);
    rm_layer_config cfg = {.kind = RM_LAYER_DROPOUT, .p = 1.0f};
    rm_layer_call call = {.cfg = &cfg, .nin = 1, .in = {&tx}, .out = &ty, .training = 1};
    rm_err e = {0};
    cr_assert_eq(rm_dropout_desc.forward_ref(&call, &e), RM_ERR_SHAPE);
}

Test(dropout, input_count_errors)
{
    expect_input_count_errors(&rm_dropout_desc);
}

/* ---- drop_path (stochastic depth) -------------------------------------------------- */

/* Each of 400 samples kept whole (every element x / (1 - p)) or dropped
 * whole, about 1 - p of them kept; the backward replays the same samples;
 * evaluation passes everything. */
Test(drop_path, whole_samples_kept_or_dropped)
{
    enum { N = 400, PER = 3 * 2 * 5 };
    const rm_shape s = rm_shape_make(N, 3, 2, 5);
    float *x = floats(N * PER), *y = floats(N * PER), *dx = floats(N * PER);
    fill_uniform(x, N * PER, 3);
    rm_tensor tx = rm_tensor_make(s, x), ty = rm_tensor_make(s, y), tdx = rm_tensor_make(s, dx);
    rm_layer_config cfg = {.kind = RM_LAYER_DROP_PATH, .p = 0.2f};
    rm_layer_call call = {
        .cfg = &cfg, .nin = 1, .in = {&tx}, .out = &ty, .training = 1, .seed = 77, .step = 3, .node_id = 5};
    rm_err e = {0};
    cr_assert_eq(rm_drop_path_desc.forward_ref(&call, &e), RM_OK, "%s", e.msg);
    int kept = 0;
    for (int n = 0; n < N; n++) {
        const int keep = y[n * PER] != 0.0f || x[n * PER] == 0.0f;
        kept += keep;
        for (int j = 0; j < PER; j++)
            cr_assert_eq(y[n * PER + j], keep ? x[n * PER + j] * (1.0f / (1.0f - 0.2f)) : 0.0f, "sample %d element %d",
                         n, j);
    }
    cr_expect(kept > 0.8 * N - 40 && kept < 0.8 * N + 40, "%d of %d samples kept at p 0.2", kept, N);
    rm_tensor hidden = rm_tensor_make(s, NULL), tdy = rm_tensor_make(s, x);
    rm_layer_call back = {.cfg = &cfg,
                          .nin = 1,
                          .in = {&hidden},
                          .out = &hidden,
                          .dout = &tdy,
                          .din = {&tdx},
                          .training = 1,
                          .seed = 77,
                          .step = 3,
                          .node_id = 5};
    cr_assert_eq(rm_drop_path_desc.backward_ref(&back, &e), RM_OK, "%s", e.msg);
    cr_assert(!memcmp(dx, y, N * PER * sizeof(float)), "the backward's mask differs from the forward's");
    call.training = 0;
    cr_assert_eq(rm_drop_path_desc.forward_ref(&call, &e), RM_OK, "%s", e.msg);
    cr_assert(!memcmp(x, y, N * PER * sizeof(float)), "evaluation changed the tensor");
    free(x), free(y), free(dx);
}

Test(drop_path, descriptor_gradcheck_and_errors)
{
    check_desc(&rm_drop_path_desc, "drop_path", RM_READS_NOTHING, 1, 1, &odd, 1);
    gc_case c = one_input_case(&rm_drop_path_desc, rm_shape_make(6, 3, 2, 2));
    c.cfg.p = 0.5f, c.training = 1;
    run_gradcheck(&c);
    rm_layer_config one = {.kind = RM_LAYER_DROP_PATH, .p = 1.0f};
    expect_shape_error(&rm_drop_path_desc, &one, &odd, 1, "p = 1 must lie in [0, 1)");
    expect_input_count_errors(&rm_drop_path_desc);
}

/* ---- flatten ------------------------------------------------------------- */

Test(flatten, descriptor)
{
    check_desc(&rm_flatten_desc, "flatten", RM_READS_NOTHING, 1, 1, &odd, 1);
    rm_shape out;
    rm_layer_config cfg = {.kind = RM_LAYER_FLATTEN};
    cr_assert_eq(rm_flatten_desc.infer(&out, &cfg, &odd, 1, NULL), RM_OK);
    cr_assert(rm_shape_equal(out, rm_shape_make(2, 105, 1, 1)));
}

Test(flatten, gradcheck)
{
    gc_case c = one_input_case(&rm_flatten_desc, odd);
    run_gradcheck(&c);
}

Test(flatten, backward_overwrites)
{
    rm_layer_config cfg = {.kind = RM_LAYER_FLATTEN};
    check_backward_overwrites(&rm_flatten_desc, &cfg, &odd, 1, 1);
}

Test(flatten, too_many_features)
{
    rm_layer_config cfg = {.kind = RM_LAYER_FLATTEN};
    rm_shape in = rm_shape_make(1, 1 << 16, 1 << 10, 1 << 10);
    expect_shape_error(&rm_flatten_desc, &cfg, &in, 1, NULL);
}

Test(flatten, input_count_errors)
{
    expect_input_count_errors(&rm_flatten_desc);
}

/* ---- softmax_xent -------------------------------------------------------- */

static const rm_shape logits = {5, 7, 1, 1};

Test(softmax_xent, descriptor)
{
    check_desc(&rm_softmax_xent_desc, "softmax_xent", RM_READS_INPUTS, 1, 1, &logits, 1);
    rm_shape out;
    rm_layer_config cfg = {.kind = RM_LAYER_SOFTMAX_XENT};
    cr_assert_eq(rm_softmax_xent_desc.infer(&out, &cfg, &logits, 1, NULL), RM_OK);
    cr_assert(rm_shape_equal(out, rm_shape_make(1, 1, 1, 1)));
}

Test(softmax_xent, gradcheck)
{
    gc_case c = one_input_case(&rm_softmax_xent_desc, logits);
    c.max_checks = 64; /* all 35 logits */
    run_gradcheck(&c);
}

/* The smallest legal number of classes. */
Test(softmax_xent, gradcheck_two_classes)
{
    gc_case c = one_input_case(&rm_softmax_xent_desc, rm_shape_make(3, 2, 1, 1));
    c.seed = 7;
    run_gradcheck(&c);
}

/* Row 0: logits (1, 2, 3), label 2: log(1 + e^-1 + e^-2) = 0.4076059644.
 * Row 1: logits (0, 0, 0), label 0: log 3 = 1.0986122887.
 * Mean 0.7531091265; the gradient of row 1 is (1/3 - 1, 1/3, 1/3) / 2. */
Test(softmax_xent, hand_computed)
{
    float x[6] = {1, 2, 3, 0, 0, 0}, loss = 0, dx[6];
    int32_t labels[2] = {2, 0};
    rm_shape s = rm_shape_make(2, 3, 1, 1);
    rm_tensor tx = rm_tensor_make(s, x), tl = rm_tensor_make(rm_shape_make(1, 1, 1, 1), &loss),
              tdx = rm_tensor_make(s, dx);
    rm_layer_call call = {.nin = 1, .in = {&tx}, .out = &tl, .din = {&tdx}, .labels = labels};
    rm_err e = {0};
    cr_assert_eq(rm_softmax_xent_desc.forward_ref(&call, &e), RM_OK, "%s", e.msg);
    cr_assert_float_eq(loss, 0.7531091265f, 1e-6f, "loss %.9g", (double)loss);
    cr_assert_eq(rm_softmax_xent_desc.backward_ref(&call, &e), RM_OK, "%s", e.msg);
    double z = 1 + exp(1.0) + exp(2.0);
    double want[6] = {1 / z / 2, exp(1.0) / z / 2, (exp(2.0) / z - 1) / 2, -1.0 / 3, 1.0 / 6, 1.0 / 6};
    for (int i = 0; i < 6; i++) cr_assert(fabs(dx[i] - want[i]) < 1e-7, "dx[%d] = %.9g, want %.9g", i, dx[i], want[i]);
}

/* exp(1000) overflows float and double: log-sum-exp must shift by the max.
 * Row 0: (1000, 0), label 1: loss 1000. Row 1: (-1000, 1000), label 0: loss
 * 2000. The softmaxes are one-hot up to e^-1000. */
Test(softmax_xent, large_logits_stay_finite)
{
    float x[4] = {1000, 0, -1000, 1000}, loss = 0, dx[4];
    int32_t labels[2] = {1, 0};
    rm_shape s = rm_shape_make(2, 2, 1, 1);
    rm_tensor tx = rm_tensor_make(s, x), tl = rm_tensor_make(rm_shape_make(1, 1, 1, 1), &loss),
              tdx = rm_tensor_make(s, dx);
    rm_layer_call call = {.nin = 1, .in = {&tx}, .out = &tl, .din = {&tdx}, .labels = labels};
    rm_err e = {0};
    cr_assert_eq(rm_softmax_xent_desc.forward_ref(&call, &e), RM_OK);
    cr_assert_float_eq(loss, 1500.0f, 1e-3f, "loss %g", (double)loss);
    cr_assert_eq(rm_softmax_xent_desc.backward_ref(&call, &e), RM_OK);
    float want[4] = {0.5f, -0.5f, -0.5f, 0.5f};
    for (int i = 0; i < 4; i++) cr_assert_float_eq(dx[i], want[i], 1e-7f, "dx[%d] = %g", i, dx[i]);
}

Test(softmax_xent, backward_overwrites)
{
    rm_layer_config cfg = {.kind = RM_LAYER_SOFTMAX_XENT};
    check_backward_overwrites(&rm_softmax_xent_desc, &cfg, &logits, 1, 1);
}

Test(softmax_xent, shape_errors)
{
    rm_layer_config cfg = {.kind = RM_LAYER_SOFTMAX_XENT};
    rm_shape one_class = rm_shape_make(4, 1, 1, 1), spatial = rm_shape_make(4, 10, 3, 3);
    expect_shape_error(&rm_softmax_xent_desc, &cfg, &one_class, 1, "4x1x1x1");
    expect_shape_error(&rm_softmax_xent_desc, &cfg, &spatial, 1, "4x10x3x3");
    expect_input_count_errors(&rm_softmax_xent_desc);
}

Test(softmax_xent, bad_label)
{
    float x[6] = {0}, loss = 0, dx[6];
    int32_t labels[2] = {1, 3};
    rm_shape s = rm_shape_make(2, 3, 1, 1);
    rm_tensor tx = rm_tensor_make(s, x), tl = rm_tensor_make(rm_shape_make(1, 1, 1, 1), &loss),
              tdx = rm_tensor_make(s, dx);
    rm_layer_call call = {.nin = 1, .in = {&tx}, .out = &tl, .din = {&tdx}, .labels = labels};
    rm_err e = {0};
    cr_assert_eq(rm_softmax_xent_desc.forward_ref(&call, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "sample 1") && strstr(e.msg, "label 3"), "%s", e.msg);
    rm_err_clear(&e);
    cr_assert_eq(rm_softmax_xent_desc.backward_ref(&call, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "sample 1") && strstr(e.msg, "label 3"), "%s", e.msg);
    labels[1] = -1;
    cr_assert_eq(rm_softmax_xent_desc.forward_ref(&call, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "label -1"), "%s", e.msg);
    call.labels = NULL;
    cr_assert_eq(rm_softmax_xent_desc.forward_ref(&call, &e), RM_ERR_INVALID);
}

/* ---- pixel_softmax_xent -------------------------------------------------- */

Test(pixel_softmax_xent, descriptor)
{
    check_desc(&rm_pixel_softmax_xent_desc, "pixel_softmax_xent", RM_READS_INPUTS, 1, 1, &odd, 1);
    rm_shape out;
    rm_layer_config cfg = {.kind = RM_LAYER_PIXEL_SOFTMAX_XENT};
    cr_assert_eq(rm_pixel_softmax_xent_desc.infer(&out, &cfg, &odd, 1, NULL), RM_OK);
    cr_assert(rm_shape_equal(out, rm_shape_make(1, 1, 1, 1)));
}

Test(pixel_softmax_xent, gradcheck)
{
    gc_case c = one_input_case(&rm_pixel_softmax_xent_desc, odd);
    c.max_checks = 256; /* all 210 logits */
    run_gradcheck(&c);
}

/* N=1, K=2, H=1, W=2. Pixel 0: logits (0, 0), label 0: log 2. Pixel 1:
 * logits (log 3, 0), label 0: log 4 - log 3. Mean: log(8/3) / 2. */
Test(pixel_softmax_xent, hand_computed)
{
    float x[4] = {0, (float)log(3.0), 0, 0}, loss = 0, dx[4]; /* [k][x] */
    int32_t labels[2] = {0, 0};
    rm_shape s = rm_shape_make(1, 2, 1, 2);
    rm_tensor tx = rm_tensor_make(s, x), tl = rm_tensor_make(rm_shape_make(1, 1, 1, 1), &loss),
              tdx = rm_tensor_make(s, dx);
    rm_layer_call call = {.nin = 1, .in = {&tx}, .out = &tl, .din = {&tdx}, .labels = labels};
    rm_err e = {0};
    cr_assert_eq(rm_pixel_softmax_xent_desc.forward_ref(&call, &e), RM_OK, "%s", e.msg);
    cr_assert_float_eq(loss, (float)(log(8.0 / 3.0) / 2), 1e-6f, "loss %.9g", (double)loss);
    cr_assert_eq(rm_pixel_softmax_xent_desc.backward_ref(&call, &e), RM_OK, "%s", e.msg);
    /* softmax: pixel 0 (1/2, 1/2), pixel 1 (3/4, 1/4); minus one-hot, over 2. */
    float want[4] = {-0.25f, -0.125f, 0.25f, 0.125f};
    for (int i = 0; i < 4; i++) cr_assert_float_eq(dx[i], want[i], 1e-7f, "dx[%d] = %g", i, dx[i]);
}

/* With H = W = 1 it is exactly softmax_xent. */
Test(pixel_softmax_xent, matches_softmax_xent)
{
    enum { n = 5, k = 7 };
    float x[n * k], l1 = 0, l2 = 0, d1[n * k], d2[n * k];
    int32_t labels[n] = {0, 6, 3, 3, 1};
    fill_uniform(x, n * k, 3);
    rm_shape s = rm_shape_make(n, k, 1, 1), one = rm_shape_make(1, 1, 1, 1);
    rm_tensor tx = rm_tensor_make(s, x), t1 = rm_tensor_make(one, &l1), t2 = rm_tensor_make(one, &l2);
    rm_tensor td1 = rm_tensor_make(s, d1), td2 = rm_tensor_make(s, d2);
    rm_layer_call c1 = {.nin = 1, .in = {&tx}, .out = &t1, .din = {&td1}, .labels = labels};
    rm_layer_call c2 = {.nin = 1, .in = {&tx}, .out = &t2, .din = {&td2}, .labels = labels};
    rm_err e = {0};
    cr_assert_eq(rm_softmax_xent_desc.forward_ref(&c1, &e), RM_OK);
    cr_assert_eq(rm_pixel_softmax_xent_desc.forward_ref(&c2, &e), RM_OK);
    cr_assert_eq(rm_softmax_xent_desc.backward_ref(&c1, &e), RM_OK);
    cr_assert_eq(rm_pixel_softmax_xent_desc.backward_ref(&c2, &e), RM_OK);
    cr_assert_eq(l1, l2);
    cr_assert(!memcmp(d1, d2, sizeof d1));
}

Test(pixel_softmax_xent, backward_overwrites)
{
    rm_layer_config cfg = {.kind = RM_LAYER_PIXEL_SOFTMAX_XENT};
    check_backward_overwrites(&rm_pixel_softmax_xent_desc, &cfg, &odd, 1, 1);
}

Test(pixel_softmax_xent, shape_errors)
{
    rm_layer_config cfg = {.kind = RM_LAYER_PIXEL_SOFTMAX_XENT};
    rm_shape one_class = rm_shape_make(2, 1, 7, 5);
    expect_shape_error(&rm_pixel_softmax_xent_desc, &cfg, &one_class, 1, "2x1x7x5");
    expect_input_count_errors(&rm_pixel_softmax_xent_desc);
}

Test(pixel_softmax_xent, bad_label)
{
    enum { n = 2, k = 3, h = 3, w = 4 };
    float x[n * k * h * w] = {0}, loss = 0, dx[n * k * h * w];
    int32_t labels[n * h * w] = {0};
    labels[1 * h * w + 2 * w + 1] = 5; /* sample 1, y 2, x 1 */
    rm_shape s = rm_shape_make(n, k, h, w);
    rm_tensor tx = rm_tensor_make(s, x), tl = rm_tensor_make(rm_shape_make(1, 1, 1, 1), &loss),
              tdx = rm_tensor_make(s, dx);
    rm_layer_call call = {.nin = 1, .in = {&tx}, .out = &tl, .din = {&tdx}, .labels = labels};
    rm_err e = {0};
    cr_assert_eq(rm_pixel_softmax_xent_desc.forward_ref(&call, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "sample 1") && strstr(e.msg, "y 2, x 1") && strstr(e.msg, "label 5"), "%s", e.msg);
    rm_err_clear(&e);
    cr_assert_eq(rm_pixel_softmax_xent_desc.backward_ref(&call, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "sample 1") && strstr(e.msg, "label 5"), "%s", e.msg);
}
