/* ReLU, y = max(x, 0). Backward reads only its own output: y > 0 exactly when
 * x > 0, so the scheduler may free the input as soon as the forward is done. */
#include "cpu_kernels.h"
#include "layers.h"

static int relu_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    (void)cfg;
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "relu: takes 1 input, got %d", nin);
    *out = in[0];
    return RM_OK;
}

/* One compare-and-select per element forward; one per element backward. */
static double relu_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)in, (void)nin, (void)backward;
    return (double)rm_shape_numel(out);
}

static void relu_forward_kernel(float *y, const float *x, size_t n, int nt)
{
    RM_CPU_PARALLEL_FOR_SIMD(nt)
    for (size_t i = 0; i < n; i++) {
        float v = x[i]; /* one load: then GCC turns the select into a mask (cmpltps, andps), no branch */
        y[i] = v > 0.0f ? v : 0.0f;
    }
}

static void relu_backward_kernel(float *dx, const float *dy, const float *y, size_t n, int nt)
{
    RM_CPU_PARALLEL_FOR_SIMD(nt)
    for (size_t i = 0; i < n; i++) {
        float g = dy[i]; /* loaded either way: a mask, no branch on the sign */
        dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
}

static int relu_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    size_t n = rm_tensor_numel(call->out);
    relu_forward_kernel(call->out->data, call->in[0]->data, n, rm_call_threads(call, n));
    return RM_OK;
}

static int relu_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    size_t n = rm_tensor_numel(call->out);
    if (call->din[0])
        relu_backward_kernel(call->din[0]->data, call->dout->data, call->out->data, n, rm_call_threads(call, n));
    return RM_OK;
}

const rm_layer_desc rm_relu_desc = {
    .kind = RM_LAYER_RELU,
    .name = "relu",
    .backward_reads = RM_READS_OUTPUT,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = relu_infer,
    .param_shapes = NULL,
    .flops = relu_flops,
    .init = NULL,
    .forward_ref = relu_forward,
    .backward_ref = relu_backward,
    .kernels = rm_relu_kernels,
};
