/* Calling a layer through the interface: dispatch to the backend's kernels,
 * and the parameter count every caller derives from the descriptor. */
#include "layer.h"

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
