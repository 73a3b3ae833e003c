/* Flatten N x C x H x W to N x (C*H*W) x 1 x 1, the bridge from convolutional
 * features to linear layers. NCHW is already laid out that way, so both
 * directions are a plain copy; the graph gives the output its own buffer, which
 * keeps every node's tensor independent for the scheduler. */
#include "layers.h"

#include <limits.h>
#include <string.h>

static int flatten_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    (void)cfg;
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "flatten: takes 1 input, got %d", nin);
    long long f = (long long)in[0].c * in[0].h * in[0].w;
    if (f > INT_MAX) {
        char a[64];
        return rm_errorf(e, RM_ERR_SHAPE, "flatten: input %s has %lld features per sample, more than an int holds",
                         rm_shape_str(in[0], a, sizeof a), f);
    }
    *out = rm_shape_make(in[0].n, (int)f, 1, 1);
    return RM_OK;
}

/* A copy each way: 1 FLOP per element written (so that it is not free). */
static double flatten_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)in, (void)nin, (void)backward;
    return (double)rm_shape_numel(out);
}

static int flatten_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    memcpy(call->out->data, call->in[0]->data, rm_tensor_numel(call->out) * sizeof(float));
    return RM_OK;
}

static int flatten_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    if (call->din[0]) memcpy(call->din[0]->data, call->dout->data, rm_tensor_numel(call->dout) * sizeof(float));
    return RM_OK;
}

const rm_layer_desc rm_flatten_desc = {
    .kind = RM_LAYER_FLATTEN,
    .name = "flatten",
    .backward_reads = RM_READS_NOTHING,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = flatten_infer,
    .param_shapes = NULL,
    .flops = flatten_flops,
    .init = NULL,
    .forward_ref = flatten_forward,
    .backward_ref = flatten_backward,
    .kernels = rm_flatten_kernels,
};
