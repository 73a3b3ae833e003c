/* Channel concatenation of 2..RM_MAX_INPUTS tensors (U-Net skip connections,
 * DenseNet-style blocks). Backward slices the output gradient back into the
 * inputs' channel ranges and reads no forward tensor. */
#include "layers.h"

#include <limits.h>
#include <string.h>

static int concat_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    (void)cfg;
    if (nin < 2 || nin > RM_MAX_INPUTS)
        return rm_errorf(e, RM_ERR_SHAPE, "concat: takes 2..%d inputs, got %d", RM_MAX_INPUTS, nin);
    long long c = 0;
    for (int i = 0; i < nin; i++) {
        if (in[i].n != in[0].n || in[i].h != in[0].h || in[i].w != in[0].w) {
            char a[64], b[64];
            return rm_errorf(e, RM_ERR_SHAPE, "concat: input %d is %s but input 0 is %s (N, H and W must match)", i,
                             rm_shape_str(in[i], a, sizeof a), rm_shape_str(in[0], b, sizeof b));
        }
        c += in[i].c;
    }
    if (c > INT_MAX) return rm_errorf(e, RM_ERR_SHAPE, "concat: %lld output channels overflow", c);
    *out = rm_shape_make(in[0].n, (int)c, in[0].h, in[0].w);
    return RM_OK;
}

/* A copy each way: 1 FLOP per element written (so that it is not free). */
static double concat_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)in, (void)nin, (void)backward;
    return (double)rm_shape_numel(out);
}

/* Each sample of an NCHW tensor is a contiguous C*H*W block, and the inputs'
 * blocks sit one after the other inside the output's block: concatenation
 * along channels is one memcpy per (sample, input). */
static int concat_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    rm_shape os = call->out->shape;
    size_t plane = (size_t)os.h * (size_t)os.w, out_sample = (size_t)os.c * plane;
    for (int n = 0; n < os.n; n++) {
        float *y = call->out->data + (size_t)n * out_sample;
        for (int k = 0; k < call->nin; k++) {
            size_t len = (size_t)call->in[k]->shape.c * plane;
            memcpy(y, call->in[k]->data + (size_t)n * len, len * sizeof(float));
            y += len;
        }
    }
    return RM_OK;
}

static int concat_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    rm_shape os = call->dout->shape;
    size_t plane = (size_t)os.h * (size_t)os.w, out_sample = (size_t)os.c * plane;
    for (int n = 0; n < os.n; n++) {
        const float *dy = call->dout->data + (size_t)n * out_sample;
        for (int k = 0; k < call->nin; k++) {
            /* Shapes of inputs are valid even when their data is not read. */
            size_t len = (size_t)call->in[k]->shape.c * plane;
            if (call->din[k]) memcpy(call->din[k]->data + (size_t)n * len, dy, len * sizeof(float));
            dy += len;
        }
    }
    return RM_OK;
}

const rm_layer_desc rm_concat_desc = {
    .kind = RM_LAYER_CONCAT,
    .name = "concat",
    .backward_reads = RM_READS_NOTHING,
    .min_inputs = 2,
    .max_inputs = RM_MAX_INPUTS,
    .infer = concat_infer,
    .param_shapes = NULL,
    .flops = concat_flops,
    .init = NULL,
    .forward_ref = concat_forward,
    .backward_ref = concat_backward,
    .kernels = rm_concat_kernels,
};
