/* What every backend shares: creation by kind, freeing, and the workspace
 * bound of a kind before any backend of it exists. The only place besides
 * the backends themselves that looks at a backend's kind. */
#include <stdlib.h>

#include "backend_cpu_internal.h"
#include "backend_cuda.h"
#include "layer.h"

int rm_backend_create(rm_backend **out, rm_backend_kind kind, rm_err *e)
{
    *out = NULL;
    switch (kind) {
    case RM_BACKEND_CPU: return rm_backend_cpu_create(out, e);
    case RM_BACKEND_CUDA: return rm_backend_cuda_create(out, 0, e);
    default: return rm_errorf(e, RM_ERR_INVALID, "unknown device %d (cpu or cuda)", (int)kind);
    }
}

const char *rm_backend_kind_name(rm_backend_kind kind)
{
    switch (kind) {
    case RM_BACKEND_CPU: return "cpu";
    case RM_BACKEND_CUDA: return "cuda";
    default: return "unknown";
    }
}

const char *rm_backend_kind_device(rm_backend_kind kind)
{
    switch (kind) {
    case RM_BACKEND_CPU: return "the CPU";
    case RM_BACKEND_CUDA: return "the GPU";
    default: return "an unknown device";
    }
}

void rm_backend_free(rm_backend *be)
{
    if (!be || be == rm_backend_host()) return;
    be->ops->destroy(be->ctx);
    free(be);
}

size_t rm_backend_kind_layer_workspace(rm_backend_kind kind, const rm_layer_desc *d, const rm_layer_config *cfg,
                                       const rm_shape *in, int nin, rm_shape out, int backward)
{
    /* The bound every kernel library of the kind fits in, a function of the
     * shapes alone, so that planning needs no device (layer.h). */
    if (kind == RM_BACKEND_CUDA)
        return d->workspace_bytes_cuda ? d->workspace_bytes_cuda(cfg, in, nin, out, backward) : 0;
    return rm_backend_cpu_layer_workspace_bound(d, cfg, in, nin, out, backward);
}
