/* Per-pixel softmax cross-entropy for segmentation: logits N x K x H x W and
 * N*H*W class ids (index n*H*W + y*W + x) give the mean over every pixel of
 * -log softmax(x)[label], as one 1x1x1x1 tensor. As for softmax_xent, backward
 * recomputes the softmax from the logits and starts with a loss scale of 1:
 * dlogits = (softmax - onehot) / (N*H*W). */
#include "cpu_kernels.h"
#include "layers.h"

#include <float.h>
#include <math.h>

static int pixel_softmax_xent_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    (void)cfg;
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "pixel_softmax_xent: takes 1 input, got %d", nin);
    if (in[0].c < 2) {
        char a[64];
        return rm_errorf(e, RM_ERR_SHAPE, "pixel_softmax_xent: logits %s have %d classes, need at least 2",
                         rm_shape_str(in[0], a, sizeof a), in[0].c);
    }
    *out = rm_shape_make(1, 1, 1, 1);
    return RM_OK;
}

/* Per logit, counting exp as 1: forward max, subtract, exp, sum = 4;
 * backward recomputes those 4 and then subtracts the one-hot and scales = 6. */
static double pixel_softmax_xent_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                       int backward)
{
    (void)cfg, (void)nin, (void)out;
    return (backward ? 6.0 : 4.0) * (double)rm_shape_numel(in[0]);
}

/* Every label must be a class id: checked before any output is written. */
static int check_labels(const int32_t *labels, rm_shape s, rm_err *e)
{
    if (!labels) return rm_errorf(e, RM_ERR_INVALID, "pixel_softmax_xent: no labels given");
    size_t hw = (size_t)s.h * (size_t)s.w;
    for (int n = 0; n < s.n; n++)
        for (size_t p = 0; p < hw; p++) {
            int32_t l = labels[(size_t)n * hw + p];
            if (l < 0 || l >= s.c)
                return rm_errorf(e, RM_ERR_INVALID,
                                 "pixel_softmax_xent: sample %d pixel (y %d, x %d) has label %d, outside [0, %d)", n,
                                 (int)(p / (size_t)s.w), (int)(p % (size_t)s.w), (int)l, s.c);
        }
    return RM_OK;
}

/* log(sum(exp(x))) over the k channels of one pixel (channel stride `stride`),
 * shifted by the max so exp never overflows. */
static double log_sum_exp(const float *x, int k, size_t stride)
{
    double m = -DBL_MAX, s = 0;
    for (int j = 0; j < k; j++)
        if (x[j * stride] > m) m = x[j * stride];
    for (int j = 0; j < k; j++) s += exp((double)x[j * stride] - m);
    return m + log(s);
}

/* loss: 1 float; x: n x k x hw. */
static void pixel_softmax_xent_forward_kernel(float *loss, const float *x, const int32_t *labels, int n, int k,
                                              size_t hw)
{
    double total = 0;
    for (int i = 0; i < n; i++)
        for (size_t p = 0; p < hw; p++) {
            const float *px = x + (size_t)i * (size_t)k * hw + p;
            total += log_sum_exp(px, k, hw) - px[(size_t)labels[(size_t)i * hw + p] * hw];
        }
    *loss = (float)(total / ((double)n * (double)hw));
}

/* dx, x: n x k x hw; pixels independent, split between nt threads. */
static void pixel_softmax_xent_backward_kernel(float *dx, const float *x, const int32_t *labels, int n, int k,
                                               size_t hw, int nt)
{
    double count = (double)n * (double)hw;
    size_t pixels = (size_t)n * hw;
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t q = 0; q < pixels; q++) {
        size_t i = q / hw, p = q % hw, base = i * (size_t)k * hw + p;
        double lse = log_sum_exp(x + base, k, hw);
        int32_t label = labels[q];
        for (int j = 0; j < k; j++) {
            double prob = exp((double)x[base + j * hw] - lse);
            dx[base + j * hw] = (float)((prob - (j == label ? 1.0 : 0.0)) / count);
        }
    }
}

static int pixel_softmax_xent_forward(const rm_layer_call *call, rm_err *e)
{
    rm_shape s = call->in[0]->shape;
    int rc = check_labels(call->labels, s, e);
    if (rc) return rc;
    pixel_softmax_xent_forward_kernel(call->out->data, call->in[0]->data, call->labels, s.n, s.c,
                                      (size_t)s.h * (size_t)s.w);
    return RM_OK;
}

static int pixel_softmax_xent_backward(const rm_layer_call *call, rm_err *e)
{
    rm_shape s = call->in[0]->shape;
    int rc = check_labels(call->labels, s, e);
    if (rc) return rc;
    if (call->din[0])
        pixel_softmax_xent_backward_kernel(call->din[0]->data, call->in[0]->data, call->labels, s.n, s.c,
                                           (size_t)s.h * (size_t)s.w, rm_call_threads(call, rm_shape_numel(s)));
    return RM_OK;
}

const rm_layer_desc rm_pixel_softmax_xent_desc = {
    .kind = RM_LAYER_PIXEL_SOFTMAX_XENT,
    .name = "pixel_softmax_xent",
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = pixel_softmax_xent_infer,
    .param_shapes = NULL,
    .flops = pixel_softmax_xent_flops,
    .init = NULL,
    .forward_ref = pixel_softmax_xent_forward,
    .backward_ref = pixel_softmax_xent_backward,
    .kernels = rm_pixel_softmax_xent_kernels,
};
