/* Nearest-neighbour upsampling by two (the U-Net decoder without learned
 * weights): every input pixel becomes a 2x2 block. Backward sums each 2x2
 * block of the output gradient and reads no forward tensor. */
#include "layers.h"

#include <limits.h>

static int upsample2x_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    (void)cfg;
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "upsample: takes 1 input, got %d", nin);
    if (in[0].h > INT_MAX / 2 || in[0].w > INT_MAX / 2) {
        char a[64];
        return rm_errorf(e, RM_ERR_SHAPE, "upsample: input %s is too large to double",
                         rm_shape_str(in[0], a, sizeof a));
    }
    *out = rm_shape_make(in[0].n, in[0].c, 2 * in[0].h, 2 * in[0].w);
    return RM_OK;
}

/* Forward: one copy per output element. Backward: 4 adds per input element,
 * i.e. one per output element. */
static double upsample2x_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)in, (void)nin, (void)backward;
    return (double)rm_shape_numel(out);
}

/* y: planes x 2h x 2w, x: planes x h x w (planes = N*C). */
static void upsample2x_forward_kernel(float *y, const float *x, size_t planes, int h, int w)
{
    size_t ow = 2 * (size_t)w;
    for (size_t p = 0; p < planes; p++) {
        const float *xp = x + p * (size_t)h * (size_t)w;
        float *yp = y + p * 4 * (size_t)h * (size_t)w;
        for (int i = 0; i < h; i++) {
            float *row0 = yp + (2 * (size_t)i) * ow, *row1 = row0 + ow;
            for (int j = 0; j < w; j++) {
                float v = xp[(size_t)i * (size_t)w + (size_t)j];
                row0[2 * j] = row0[2 * j + 1] = v;
                row1[2 * j] = row1[2 * j + 1] = v;
            }
        }
    }
}

/* dx: planes x h x w, dy: planes x 2h x 2w. */
static void upsample2x_backward_kernel(float *dx, const float *dy, size_t planes, int h, int w)
{
    size_t ow = 2 * (size_t)w;
    for (size_t p = 0; p < planes; p++) {
        float *dxp = dx + p * (size_t)h * (size_t)w;
        const float *dyp = dy + p * 4 * (size_t)h * (size_t)w;
        for (int i = 0; i < h; i++) {
            const float *row0 = dyp + (2 * (size_t)i) * ow, *row1 = row0 + ow;
            for (int j = 0; j < w; j++) {
                double s = (double)row0[2 * j] + row0[2 * j + 1] + row1[2 * j] + row1[2 * j + 1];
                dxp[(size_t)i * (size_t)w + (size_t)j] = (float)s;
            }
        }
    }
}

static int upsample2x_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    rm_shape s = call->in[0]->shape;
    upsample2x_forward_kernel(call->out->data, call->in[0]->data, (size_t)s.n * (size_t)s.c, s.h, s.w);
    return RM_OK;
}

static int upsample2x_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    if (!call->din[0]) return RM_OK;
    rm_shape s = call->din[0]->shape;
    upsample2x_backward_kernel(call->din[0]->data, call->dout->data, (size_t)s.n * (size_t)s.c, s.h, s.w);
    return RM_OK;
}

const rm_layer_desc rm_upsample2x_desc = {
    .kind = RM_LAYER_UPSAMPLE2X,
    .name = "upsample",
    .backward_reads = RM_READS_NOTHING,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = upsample2x_infer,
    .param_shapes = NULL,
    .flops = upsample2x_flops,
    .init = NULL,
    .forward_ref = upsample2x_forward,
    .backward_ref = upsample2x_backward,
    .kernels = rm_upsample2x_kernels,
};
