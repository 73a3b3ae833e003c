/* Element-wise sum of 2..RM_MAX_INPUTS tensors of one shape: the residual
 * connection. Its gradient is the output gradient, copied to every input, so
 * backward reads no forward tensor at all. */
#include "cpu_kernels.h"
#include "layers.h"

#include <string.h>

static int add_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    (void)cfg;
    if (nin < 2 || nin > RM_MAX_INPUTS)
        return rm_errorf(e, RM_ERR_SHAPE, "add: takes 2..%d inputs, got %d", RM_MAX_INPUTS, nin);
    for (int i = 1; i < nin; i++) {
        if (!rm_shape_equal(in[i], in[0])) {
            char a[64], b[64];
            return rm_errorf(e, RM_ERR_SHAPE, "add: input %d is %s but input 0 is %s (shapes must be equal)", i,
                             rm_shape_str(in[i], a, sizeof a), rm_shape_str(in[0], b, sizeof b));
        }
    }
    *out = in[0];
    return RM_OK;
}

/* Forward: nin - 1 additions per output element. Backward: one copy per
 * element per input; copies are counted as 1 FLOP per element written so that
 * memory-bound work is never free in the scheduler's cost model. */
static double add_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)in;
    double n = (double)rm_shape_numel(out);
    return backward ? n * nin : n * (nin - 1);
}

/* y: n; x: nin pointers to n. Summed in double, as the reference for other backends. */
static void add_forward_kernel(float *y, const float *const *x, int nin, size_t n, int nt)
{
    RM_CPU_PARALLEL_FOR_SIMD(nt)
    for (size_t i = 0; i < n; i++) {
        double s = x[0][i];
        for (int k = 1; k < nin; k++) s += x[k][i];
        y[i] = (float)s;
    }
}

static int add_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const float *x[RM_MAX_INPUTS];
    for (int k = 0; k < call->nin; k++) x[k] = call->in[k]->data;
    size_t n = rm_tensor_numel(call->out);
    add_forward_kernel(call->out->data, x, call->nin, n, rm_call_threads(call, n));
    return RM_OK;
}

static int add_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    size_t bytes = rm_tensor_numel(call->dout) * sizeof(float);
    for (int k = 0; k < call->nin; k++)
        if (call->din[k]) memcpy(call->din[k]->data, call->dout->data, bytes);
    return RM_OK;
}

const rm_layer_desc rm_add_desc = {
    .kind = RM_LAYER_ADD,
    .name = "add",
    .backward_reads = RM_READS_NOTHING,
    .min_inputs = 2,
    .max_inputs = RM_MAX_INPUTS,
    .infer = add_infer,
    .param_shapes = NULL,
    .flops = add_flops,
    .init = NULL,
    .forward_ref = add_forward,
    .backward_ref = add_backward,
    .kernels = rm_add_kernels,
};
