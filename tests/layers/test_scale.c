/* The scale layer (layers/scale.c, squeeze-and-excitation's product):
 * its descriptor, hand-computed values, a gradient check of both inputs,
 * backward that overwrites, and its shape errors. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "layer_checks.h"

static const rm_shape factors = {2, 3, 1, 1};

Test(scale, descriptor)
{
    const rm_shape in[2] = {odd, factors};
    check_desc(&rm_scale_desc, "scale", RM_READS_INPUTS, 2, 2, in, 2);
}

Test(scale, hand_computed)
{
    /* One sample, two channels of 2 pixels: x = [1 2 | 3 4], s = [10 | -1]. */
    float x[4] = {1, 2, 3, 4}, s[2] = {10, -1}, y[4], dy[4] = {1, 0.5f, 2, -1}, dx[4], ds[2];
    rm_tensor tx = rm_tensor_make(rm_shape_make(1, 2, 1, 2), x), ts = rm_tensor_make(rm_shape_make(1, 2, 1, 1), s),
              ty = rm_tensor_make(tx.shape, y), tdy = rm_tensor_make(tx.shape, dy), tdx = rm_tensor_make(tx.shape, dx),
              tds = rm_tensor_make(ts.shape, ds);
    rm_layer_config cfg = {.kind = RM_LAYER_SCALE};
    rm_layer_call call = {.cfg = &cfg, .nin = 2, .in = {&tx, &ts}, .out = &ty, .dout = &tdy, .din = {&tdx, &tds}};
    rm_err e = {0};
    cr_assert_eq(rm_scale_desc.forward_ref(&call, &e), RM_OK, "%s", e.msg);
    const float want_y[4] = {10, 20, -3, -4}, want_dx[4] = {10, 5, -2, 1}, want_ds[2] = {1 + 1, 6 - 4};
    for (int i = 0; i < 4; i++) cr_expect_eq(y[i], want_y[i], "y[%d] = %g", i, (double)y[i]);
    cr_assert_eq(rm_scale_desc.backward_ref(&call, &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < 4; i++) cr_expect_eq(dx[i], want_dx[i], "dx[%d] = %g", i, (double)dx[i]);
    for (int i = 0; i < 2; i++) cr_expect_eq(ds[i], want_ds[i], "ds[%d] = %g", i, (double)ds[i]);
}

Test(scale, gradcheck)
{
    gc_case c = one_input_case(&rm_scale_desc, odd);
    c.in[1] = factors;
    c.nin = 2;
    run_gradcheck(&c);
}

Test(scale, backward_overwrites)
{
    const rm_shape in[2] = {odd, factors};
    rm_layer_config cfg = {.kind = RM_LAYER_SCALE};
    check_backward_overwrites(&rm_scale_desc, &cfg, in, 2, 1);
}

Test(scale, shape_errors)
{
    rm_layer_config cfg = {.kind = RM_LAYER_SCALE};
    const rm_shape wrong[][2] = {
        {odd, {2, 4, 1, 1}}, /* another channel count */
        {odd, {1, 3, 1, 1}}, /* another batch */
        {odd, {2, 3, 7, 5}}, /* not one factor per channel */
        {odd, {2, 3, 1, 5}},
    };
    for (size_t k = 0; k < sizeof wrong / sizeof *wrong; k++)
        expect_shape_error(&rm_scale_desc, &cfg, wrong[k], 2, "factors");
    /* The factors first: said as swapped. */
    const rm_shape swapped[2] = {factors, odd};
    expect_shape_error(&rm_scale_desc, &cfg, swapped, 2, "the inputs look swapped: first the tensor");
    expect_input_count_errors(&rm_scale_desc);
}
