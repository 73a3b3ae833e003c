/* The element-wise activations beyond ReLU, as one family: relu6, sigmoid,
 * tanh, silu, hardsigmoid, hardswish, gelu (erf) and gelu_tanh. Each is its
 * own layer (a config section of its name, an ONNX mapping, what its
 * backward reads), sharing the shape rule, the loops and the definitions in
 * activation.h, which are PyTorch's:
 *   relu6(x)       = min(max(x, 0), 6)
 *   sigmoid(x)     = 1 / (1 + exp(-x))            tanh(x)
 *   silu(x)        = x * sigmoid(x)
 *   hardsigmoid(x) = min(max(x / 6 + 1/2, 0), 1)
 *   hardswish(x)   = x * min(max(x + 3, 0), 6) / 6
 *   gelu(x)        = x / 2 * (1 + erf(x / sqrt 2))
 *   gelu_tanh(x)   = x / 2 * (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
 * Backward reads the output where the derivative is a function of it
 * (relu6, sigmoid, tanh: the scheduler may then free the input as soon as
 * the forward is done), else the input. Both directions compute in double
 * and round once. */
#include "activation.h"

#include "cpu_kernels.h"
#include "layers.h"

static int act_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    if (nin != 1)
        return rm_errorf(e, RM_ERR_SHAPE, "%s: takes 1 input, got %d", rm_layer_desc_of(cfg->kind)->name, nin);
    *out = in[0];
    return RM_OK;
}

/* Operations per element, forward and backward, counting a transcendental
 * (exp, tanh, erf) as 4. */
static double act_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)in, (void)nin;
    static const struct {
        rm_layer_kind kind;
        double fwd, bwd;
    } cost[] = {{RM_LAYER_RELU6, 2, 2}, {RM_LAYER_SIGMOID, 6, 3},     {RM_LAYER_TANH, 4, 3},
                {RM_LAYER_SILU, 7, 10}, {RM_LAYER_HARDSIGMOID, 4, 3}, {RM_LAYER_HARDSWISH, 5, 4},
                {RM_LAYER_GELU, 8, 14}, {RM_LAYER_GELU_TANH, 10, 16}};
    for (size_t k = 0; k < sizeof cost / sizeof *cost; k++)
        if (cost[k].kind == cfg->kind) return (backward ? cost[k].bwd : cost[k].fwd) * (double)rm_shape_numel(out);
    return (double)rm_shape_numel(out);
}

static int act_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_layer_kind kind = call->cfg->kind;
    const size_t n = rm_tensor_numel(call->out);
    float *y = call->out->data;
    const float *x = call->in[0]->data;
    RM_CPU_PARALLEL_FOR(rm_call_threads(call, n))
    for (size_t i = 0; i < n; i++) y[i] = (float)rm_act_forward(kind, (double)x[i]);
    return RM_OK;
}

static int act_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    if (!call->din[0]) return RM_OK;
    const rm_layer_kind kind = call->cfg->kind;
    const size_t n = rm_tensor_numel(call->out);
    const rm_layer_desc *d = rm_layer_desc_of(kind);
    const float *v = d->backward_reads & RM_READS_OUTPUT ? call->out->data : call->in[0]->data, *dy = call->dout->data;
    float *dx = call->din[0]->data;
    RM_CPU_PARALLEL_FOR(rm_call_threads(call, n))
    for (size_t i = 0; i < n; i++) dx[i] = (float)((double)dy[i] * rm_act_derivative(kind, (double)v[i]));
    return RM_OK;
}

#define ACTIVATION(id, kind_, name_, reads)                                                                            \
    const rm_layer_desc rm_##id##_desc = {                                                                             \
        .kind = kind_,                                                                                                 \
        .name = name_,                                                                                                 \
        .backward_reads = reads,                                                                                       \
        .min_inputs = 1,                                                                                               \
        .max_inputs = 1,                                                                                               \
        .infer = act_infer,                                                                                            \
        .flops = act_flops,                                                                                            \
        .forward_ref = act_forward,                                                                                    \
        .backward_ref = act_backward,                                                                                  \
        .kernels = rm_activation_kernels,                                                                              \
    }

ACTIVATION(relu6, RM_LAYER_RELU6, "relu6", RM_READS_OUTPUT);
ACTIVATION(sigmoid, RM_LAYER_SIGMOID, "sigmoid", RM_READS_OUTPUT);
ACTIVATION(tanh, RM_LAYER_TANH, "tanh", RM_READS_OUTPUT);
ACTIVATION(silu, RM_LAYER_SILU, "silu", RM_READS_INPUTS);
ACTIVATION(hardsigmoid, RM_LAYER_HARDSIGMOID, "hardsigmoid", RM_READS_INPUTS);
ACTIVATION(hardswish, RM_LAYER_HARDSWISH, "hardswish", RM_READS_INPUTS);
ACTIVATION(gelu, RM_LAYER_GELU, "gelu", RM_READS_INPUTS);
ACTIVATION(gelu_tanh, RM_LAYER_GELU_TANH, "gelu_tanh", RM_READS_INPUTS);
