/* The layer registry and backend dispatch. */
#include "layer.h"

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

int rm_layer_forward(const rm_layer_desc *d, const rm_layer_call *call, rm_err *e)
{
    if (!call->be || call->be->kind == RM_BACKEND_CPU) return d->forward_cpu(call, e);
    if (call->be->kind == RM_BACKEND_CUDA && d->forward_cuda) return d->forward_cuda(call, e);
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: no forward kernel for backend %s", d->name, call->be->name);
}

int rm_layer_backward(const rm_layer_desc *d, const rm_layer_call *call, rm_err *e)
{
    if (!call->be || call->be->kind == RM_BACKEND_CPU) return d->backward_cpu(call, e);
    if (call->be->kind == RM_BACKEND_CUDA && d->backward_cuda) return d->backward_cuda(call, e);
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: no backward kernel for backend %s", d->name, call->be->name);
}

size_t rm_layer_param_count(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in, int nin)
{
    if (!d->param_shapes) return 0;
    rm_shape w = {0, 0, 0, 0}, b = {0, 0, 0, 0};
    d->param_shapes(&w, &b, cfg, in, nin);
    return rm_shape_numel(w) + rm_shape_numel(b);
}
