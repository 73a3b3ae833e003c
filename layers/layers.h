/* The layer registry: every layer's descriptor (engine/layer.h is the
 * interface they implement), lookup by kind and by config section name, the
 * declarations of each layer's kernels per backend (kernels.c), and the
 * RM_CUDA_FN helper those use for the CUDA entry points. */
#ifndef REMAT_LAYERS_H
#define REMAT_LAYERS_H

#include "layer.h"

/* `RM_CUDA_FN(rm_conv2d_forward_cuda)` in a kernel declaration (kernels.c):
 * the function when this build has CUDA, NULL otherwise, so no file needs an
 * #ifdef of its own. The functions are declared in cuda/layer_cuda.h. */
#ifdef REMAT_HAVE_CUDA
#define RM_CUDA_FN(fn) fn
#else
#define RM_CUDA_FN(fn) NULL
#endif

/* The descriptor of a kind, and lookup by config section name (NULL if none). */
const rm_layer_desc *rm_layer_desc_of(rm_layer_kind kind);
const rm_layer_desc *rm_layer_desc_by_name(const char *name);

/* One descriptor per layer file. */
extern const rm_layer_desc rm_conv2d_desc, rm_batchnorm2d_desc, rm_relu_desc, rm_maxpool2d_desc, rm_avgpool2d_desc,
    rm_global_avgpool_desc, rm_linear_desc, rm_add_desc, rm_concat_desc, rm_upsample2x_desc, rm_conv_transpose2x2_desc,
    rm_dropout_desc, rm_flatten_desc, rm_softmax_xent_desc, rm_pixel_softmax_xent_desc, rm_dwconv2d_desc, rm_relu6_desc,
    rm_sigmoid_desc, rm_tanh_desc, rm_silu_desc, rm_hardsigmoid_desc, rm_hardswish_desc, rm_gelu_desc,
    rm_gelu_tanh_desc, rm_scale_desc, rm_channel_shuffle_desc, rm_slice_desc, rm_layernorm_desc, rm_attention_desc,
    rm_tokens_desc, rm_token_desc, rm_drop_path_desc;

/* Each layer's kernels per backend, indexed by the registry's id
 * (kernels.c): what a descriptor's .kernels points to. */
extern const rm_layer_backend_kernels rm_conv2d_kernels[], rm_batchnorm2d_kernels[], rm_relu_kernels[],
    rm_maxpool2d_kernels[], rm_avgpool2d_kernels[], rm_global_avgpool_kernels[], rm_linear_kernels[], rm_add_kernels[],
    rm_concat_kernels[], rm_upsample2x_kernels[], rm_conv_transpose2x2_kernels[], rm_dropout_kernels[],
    rm_flatten_kernels[], rm_softmax_xent_kernels[], rm_pixel_softmax_xent_kernels[], rm_dwconv2d_kernels[],
    rm_activation_kernels[] /* every activation of activation.c */, rm_scale_kernels[],
    rm_channel_layout_kernels[] /* shuffle and slice */, rm_layernorm_kernels[], rm_attention_kernels[],
    rm_tokens_kernels[] /* tokens and token */;

#endif
