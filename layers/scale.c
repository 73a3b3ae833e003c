/* Channel scaling, squeeze-and-excitation's product: y = x * s with x
 * N x C x H x W and s N x C x 1 x 1, every channel of every sample scaled by
 * its own factor (MobileNetV3's and EfficientNet's x * gate(pool(x))).
 * Inputs in that order: the tensor, then the factors. Forward is one float
 * multiply per element, as PyTorch's; backward reads both inputs: dx = dy *
 * s, and ds = the sum over the plane of dy * x, in double. */
#include "cpu_kernels.h"
#include "layers.h"

static int scale_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    (void)cfg;
    if (nin != 2)
        return rm_errorf(e, RM_ERR_SHAPE, "scale: takes 2 inputs (a tensor and its channels' factors), got %d", nin);
    char a[64], b[64];
    if (in[0].h == 1 && in[0].w == 1 && (in[1].h > 1 || in[1].w > 1))
        return rm_errorf(e, RM_ERR_SHAPE,
                         "scale: the inputs look swapped: first the tensor (N x C x H x W, here %s), then its factors "
                         "(N x C x 1 x 1, here %s)",
                         rm_shape_str(in[1], a, sizeof a), rm_shape_str(in[0], b, sizeof b));
    if (in[1].n != in[0].n || in[1].c != in[0].c || in[1].h != 1 || in[1].w != 1) {
        return rm_errorf(e, RM_ERR_SHAPE, "scale: the factors are %s; the tensor %s needs %dx%dx1x1",
                         rm_shape_str(in[1], a, sizeof a), rm_shape_str(in[0], b, sizeof b), in[0].n, in[0].c);
    }
    *out = in[0];
    return RM_OK;
}

static double scale_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)in, (void)nin;
    double n = (double)rm_shape_numel(out);
    return backward ? 3 * n : n;
}

static int scale_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_shape s = call->out->shape;
    const size_t plane = (size_t)s.h * s.w, planes = (size_t)s.n * s.c;
    float *y = call->out->data;
    const float *x = call->in[0]->data, *f = call->in[1]->data;
    RM_CPU_PARALLEL_FOR(rm_call_threads(call, planes * plane))
    for (size_t p = 0; p < planes; p++)
        for (size_t i = 0; i < plane; i++) y[p * plane + i] = x[p * plane + i] * f[p];
    return RM_OK;
}

static int scale_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_shape s = call->dout->shape;
    const size_t plane = (size_t)s.h * s.w, planes = (size_t)s.n * s.c;
    const float *dy = call->dout->data, *x = call->in[0]->data, *f = call->in[1]->data;
    float *dx = call->din[0] ? call->din[0]->data : NULL, *df = call->din[1] ? call->din[1]->data : NULL;
    RM_CPU_PARALLEL_FOR(rm_call_threads(call, planes * plane))
    for (size_t p = 0; p < planes; p++) {
        double acc = 0;
        for (size_t i = 0; i < plane; i++) {
            const size_t k = p * plane + i;
            if (dx) dx[k] = dy[k] * f[p];
            acc += (double)dy[k] * (double)x[k];
        }
        if (df) df[p] = (float)acc;
    }
    return RM_OK;
}

const rm_layer_desc rm_scale_desc = {
    .kind = RM_LAYER_SCALE,
    .name = "scale",
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 2,
    .max_inputs = 2,
    .infer = scale_infer,
    .flops = scale_flops,
    .forward_ref = scale_forward,
    .backward_ref = scale_backward,
    .kernels = rm_scale_kernels,
};
