/* The layer registry: every descriptor by kind and by config section name. */
#include "layers.h"

#include <string.h>

static const rm_layer_desc *const all_layers[RM_LAYER_KIND_COUNT] = {
    [RM_LAYER_CONV2D] = &rm_conv2d_desc,
    [RM_LAYER_BATCHNORM2D] = &rm_batchnorm2d_desc,
    [RM_LAYER_RELU] = &rm_relu_desc,
    [RM_LAYER_MAXPOOL2D] = &rm_maxpool2d_desc,
    [RM_LAYER_AVGPOOL2D] = &rm_avgpool2d_desc,
    [RM_LAYER_GLOBAL_AVGPOOL] = &rm_global_avgpool_desc,
    [RM_LAYER_LINEAR] = &rm_linear_desc,
    [RM_LAYER_ADD] = &rm_add_desc,
    [RM_LAYER_CONCAT] = &rm_concat_desc,
    [RM_LAYER_UPSAMPLE2X] = &rm_upsample2x_desc,
    [RM_LAYER_CONV_TRANSPOSE2X2] = &rm_conv_transpose2x2_desc,
    [RM_LAYER_DROPOUT] = &rm_dropout_desc,
    [RM_LAYER_FLATTEN] = &rm_flatten_desc,
    [RM_LAYER_SOFTMAX_XENT] = &rm_softmax_xent_desc,
    [RM_LAYER_PIXEL_SOFTMAX_XENT] = &rm_pixel_softmax_xent_desc,
    [RM_LAYER_DWCONV2D] = &rm_dwconv2d_desc,
    [RM_LAYER_RELU6] = &rm_relu6_desc,
    [RM_LAYER_SIGMOID] = &rm_sigmoid_desc,
    [RM_LAYER_TANH] = &rm_tanh_desc,
    [RM_LAYER_SILU] = &rm_silu_desc,
    [RM_LAYER_HARDSIGMOID] = &rm_hardsigmoid_desc,
    [RM_LAYER_HARDSWISH] = &rm_hardswish_desc,
    [RM_LAYER_GELU] = &rm_gelu_desc,
    [RM_LAYER_GELU_TANH] = &rm_gelu_tanh_desc,
    [RM_LAYER_SCALE] = &rm_scale_desc,
    [RM_LAYER_CHANNEL_SHUFFLE] = &rm_channel_shuffle_desc,
    [RM_LAYER_SLICE] = &rm_slice_desc,
    [RM_LAYER_LAYERNORM] = &rm_layernorm_desc,
    [RM_LAYER_ATTENTION] = &rm_attention_desc,
    [RM_LAYER_TOKENS] = &rm_tokens_desc,
    [RM_LAYER_TOKEN] = &rm_token_desc,
    [RM_LAYER_DROP_PATH] = &rm_drop_path_desc,
};

const rm_layer_desc *rm_layer_desc_of(rm_layer_kind kind)
{
    if ((int)kind < 0 || kind >= RM_LAYER_KIND_COUNT) return NULL;
    return all_layers[kind];
}

const rm_layer_desc *rm_layer_desc_by_name(const char *name)
{
    for (int k = 0; k < RM_LAYER_KIND_COUNT; k++)
        if (!strcmp(all_layers[k]->name, name)) return all_layers[k];
    return NULL;
}
