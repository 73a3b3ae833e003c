/* The element-wise activations beyond ReLU (activation.c): their
 * definitions and derivatives, in double, shared by the CPU reference and
 * the CUDA kernels (layers/cuda/activation.cu compiles these same lines as
 * device code), so the two differ only in their libm. */
#ifndef REMAT_ACTIVATION_H
#define REMAT_ACTIVATION_H

#include <math.h>

#include "layer.h"

#ifdef __CUDACC__
#define RM_ACT_FN static __host__ __device__ inline
#else
#define RM_ACT_FN static inline
#endif

/* sqrt(2 / pi), the tanh form's constant, and 1 / sqrt(2 pi), the normal density's. */
#define RM_ACT_SQRT_2_OVER_PI 0.7978845608028654
#define RM_ACT_INV_SQRT_2PI 0.3989422804014327

RM_ACT_FN double rm_act_sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

/* f(x), kind one of the activation layers. */
RM_ACT_FN double rm_act_forward(rm_layer_kind kind, double x)
{
    switch (kind) {
    case RM_LAYER_RELU6:
        return x <= 0.0 ? 0.0 : x >= 6.0 ? 6.0 : x;
    case RM_LAYER_SIGMOID:
        return rm_act_sigmoid(x);
    case RM_LAYER_TANH:
        return tanh(x);
    case RM_LAYER_SILU:
        return x * rm_act_sigmoid(x);
    case RM_LAYER_HARDSIGMOID:
        return x <= -3.0 ? 0.0 : x >= 3.0 ? 1.0 : x / 6.0 + 0.5;
    case RM_LAYER_HARDSWISH:
        return x <= -3.0 ? 0.0 : x >= 3.0 ? x : x * (x + 3.0) / 6.0;
    case RM_LAYER_GELU:
        return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
    case RM_LAYER_GELU_TANH:
        return 0.5 * x * (1.0 + tanh(RM_ACT_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)));
    default:
        return NAN;
    }
}

/* df/dx at the value the layer's backward reads: its output y for relu6,
 * sigmoid and tanh, its input x for the others. At the kinks, PyTorch's
 * choices: relu6' is 1 on (0, 6) only, hardsigmoid' 1/6 on (-3, 3) only,
 * hardswish' x/3 + 1/2 on [-3, 3]. */
RM_ACT_FN double rm_act_derivative(rm_layer_kind kind, double v)
{
    switch (kind) {
    case RM_LAYER_RELU6:
        return v > 0.0 && v < 6.0 ? 1.0 : 0.0;
    case RM_LAYER_SIGMOID:
        return v * (1.0 - v);
    case RM_LAYER_TANH:
        return 1.0 - v * v;
    case RM_LAYER_SILU: {
        double s = rm_act_sigmoid(v);
        return s * (1.0 + v * (1.0 - s));
    }
    case RM_LAYER_HARDSIGMOID:
        return v > -3.0 && v < 3.0 ? 1.0 / 6.0 : 0.0;
    case RM_LAYER_HARDSWISH:
        return v < -3.0 ? 0.0 : v <= 3.0 ? v / 3.0 + 0.5 : 1.0;
    case RM_LAYER_GELU:
        return 0.5 * (1.0 + erf(v * 0.7071067811865476)) + v * RM_ACT_INV_SQRT_2PI * exp(-0.5 * v * v);
    case RM_LAYER_GELU_TANH: {
        double t = tanh(RM_ACT_SQRT_2_OVER_PI * (v + 0.044715 * v * v * v));
        return 0.5 * (1.0 + t) + 0.5 * v * (1.0 - t * t) * RM_ACT_SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * v * v);
    }
    default:
        return NAN;
    }
}

#endif
