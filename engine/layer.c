/* Calling a layer through the interface: the call goes to its backend's
 * layer ops (which choose the kernels), and the parameter count every caller
 * derives from the descriptor. */
#include "layer.h"

static const rm_backend *backend_of(const rm_backend *be)
{
    return be ? be : rm_backend_host();
}

int rm_layer_forward(const rm_layer_desc *d, const rm_layer_call *call, rm_err *e)
{
    const rm_backend *be = backend_of(call->be);
    return be->ops->layer_forward(be->ctx, d, call, e);
}

int rm_layer_backward(const rm_layer_desc *d, const rm_layer_call *call, rm_err *e)
{
    const rm_backend *be = backend_of(call->be);
    return be->ops->layer_backward(be->ctx, d, call, e);
}

size_t rm_layer_workspace_bytes_device(const rm_layer_desc *d, const rm_backend *be, const rm_layer_config *cfg,
                                       const rm_shape *in, int nin, rm_shape out, int backward)
{
    be = backend_of(be);
    return be->ops->layer_workspace(be->ctx, d, cfg, in, nin, out, backward);
}

const rm_layer_backend_kernels *rm_layer_backend_of(const rm_layer_desc *d, rm_backend_kind kind)
{
    static const rm_layer_backend_kernels none;
    if (!d->kernels || (int)kind < 0 || kind >= RM_BACKEND_KIND_COUNT) return &none;
    return &d->kernels[kind];
}

size_t rm_layer_param_count(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in, int nin)
{
    if (!d->param_shapes) return 0;
    rm_shape w = {0, 0, 0, 0}, b = {0, 0, 0, 0};
    d->param_shapes(&w, &b, cfg, in, nin);
    return rm_shape_numel(w) + rm_shape_numel(b);
}
