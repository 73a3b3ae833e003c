/* The channel layout layers (layers/channel_layout.c): shuffle and slice,
 * their descriptors, hand-worked layouts forward and backward, gradient
 * checks, backward that overwrites, and their shape errors. */
#include <criterion/criterion.h>
#include <stdlib.h>

#include "layer_checks.h"

static rm_layer_config shuffle_cfg(int groups)
{
    return (rm_layer_config){.kind = RM_LAYER_CHANNEL_SHUFFLE, .groups = groups};
}

static rm_layer_config slice_cfg(int start, int count)
{
    return (rm_layer_config){.kind = RM_LAYER_SLICE, .start = start, .out_channels = count};
}

Test(channel_layout, descriptors)
{
    check_desc(&rm_channel_shuffle_desc, "shuffle", RM_READS_NOTHING, 1, 1, &odd, 1);
    check_desc(&rm_slice_desc, "slice", RM_READS_NOTHING, 1, 1, &odd, 1);
}

/* Channel c of one sample holds the value c in every pixel; the output's
 * channel order is then the layer's map, and backward puts each output
 * gradient back where its channel came from. */
static void expect_layout(const rm_layer_desc *d, rm_layer_config cfg, int c, const int *want, int cy)
{
    const rm_shape xs = rm_shape_make(2, c, 1, 2);
    rm_shape ys;
    rm_err e = {0};
    cr_assert_eq(d->infer(&ys, &cfg, &xs, 1, &e), RM_OK, "%s", e.msg);
    cr_assert(rm_shape_equal(ys, rm_shape_make(2, cy, 1, 2)));
    float *x = floats(rm_shape_numel(xs)), *y = floats(rm_shape_numel(ys)), *dy = floats(rm_shape_numel(ys)),
          *dx = floats(rm_shape_numel(xs));
    for (int n = 0; n < 2; n++)
        for (int k = 0; k < c; k++) x[(n * c + k) * 2] = x[(n * c + k) * 2 + 1] = (float)(100 * n + k);
    for (size_t i = 0; i < rm_shape_numel(ys); i++) dy[i] = (float)(i + 1);
    for (size_t i = 0; i < rm_shape_numel(xs); i++) dx[i] = -7.0f; /* overwritten */
    rm_tensor tx = rm_tensor_make(xs, x), ty = rm_tensor_make(ys, y), tdy = rm_tensor_make(ys, dy),
              tdx = rm_tensor_make(xs, dx);
    rm_layer_call call = {.cfg = &cfg, .nin = 1, .in = {&tx}, .out = &ty, .dout = &tdy, .din = {&tdx}};
    cr_assert_eq(d->forward_ref(&call, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(d->backward_ref(&call, &e), RM_OK, "%s", e.msg);
    for (int n = 0; n < 2; n++)
        for (int j = 0; j < cy; j++) {
            cr_expect_eq(y[(n * cy + j) * 2], (float)(100 * n + want[j]), "sample %d channel %d", n, j);
            cr_expect_eq(dx[(n * c + want[j]) * 2 + 1], dy[(n * cy + j) * 2 + 1], "gradient of channel %d", want[j]);
        }
    /* slice: the channels it did not take get a zero gradient */
    for (int k = 0; k < c; k++) {
        int taken = 0;
        for (int j = 0; j < cy; j++) taken |= want[j] == k;
        if (!taken) cr_expect_eq(dx[k * 2], 0.0f, "untaken channel %d", k);
    }
    free(x), free(y), free(dy), free(dx);
}

Test(channel_layout, shuffle_and_slice_by_hand)
{
    /* 6 channels as 2 x 3, transposed to 3 x 2: 0 3 1 4 2 5 (PyTorch's channel_shuffle) */
    expect_layout(&rm_channel_shuffle_desc, shuffle_cfg(2), 6, (const int[]){0, 3, 1, 4, 2, 5}, 6);
    /* as 3 x 2: 0 2 4 1 3 5 */
    expect_layout(&rm_channel_shuffle_desc, shuffle_cfg(3), 6, (const int[]){0, 2, 4, 1, 3, 5}, 6);
    expect_layout(&rm_channel_shuffle_desc, shuffle_cfg(1), 3, (const int[]){0, 1, 2}, 3);
    expect_layout(&rm_slice_desc, slice_cfg(2, 3), 6, (const int[]){2, 3, 4}, 3);
    expect_layout(&rm_slice_desc, slice_cfg(0, 6), 6, (const int[]){0, 1, 2, 3, 4, 5}, 6);
    expect_layout(&rm_slice_desc, slice_cfg(4, 0), 6, (const int[]){4, 5}, 2); /* 0: to the last channel */
}

Test(channel_layout, gradcheck)
{
    gc_case c = one_input_case(&rm_channel_shuffle_desc, rm_shape_make(2, 6, 3, 5));
    c.cfg = shuffle_cfg(3);
    run_gradcheck(&c);
    gc_case s = one_input_case(&rm_slice_desc, odd);
    s.cfg = slice_cfg(1, 2);
    run_gradcheck(&s);
}

Test(channel_layout, backward_overwrites)
{
    const rm_shape six = rm_shape_make(2, 6, 7, 5);
    rm_layer_config sh = shuffle_cfg(2), sl = slice_cfg(1, 2);
    check_backward_overwrites(&rm_channel_shuffle_desc, &sh, &six, 1, 1);
    check_backward_overwrites(&rm_slice_desc, &sl, &odd, 1, 1);
}

Test(channel_layout, shape_errors)
{
    rm_layer_config sh = shuffle_cfg(2), neg = shuffle_cfg(-1);
    expect_shape_error(&rm_channel_shuffle_desc, &sh, &odd, 1, "2 groups do not divide the 3 channels");
    expect_shape_error(&rm_channel_shuffle_desc, &neg, &odd, 1, "groups must be >= 1, got -1");
    const rm_layer_config bad[] = {slice_cfg(2, 2), slice_cfg(-1, 2), slice_cfg(3, 0), slice_cfg(3, 1),
                                   slice_cfg(0, -1)};
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++)
        expect_shape_error(&rm_slice_desc, &bad[k], &odd, 1, "not within the 3 of 2x3x7x5");
    expect_input_count_errors(&rm_channel_shuffle_desc);
    expect_input_count_errors(&rm_slice_desc);
}
