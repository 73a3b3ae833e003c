/* The CUDA backend's registry entry (backend.c) and the names of its kernel
 * libraries, in every build (a build without CUDA still names the device,
 * parses its settings and plans its workspace). */
#include "backend_cuda.h"
#include "layer.h"

static const char *const lib_names[RM_CUDA_KERNELS_COUNT] = {"handwritten", "cublas", "cudnn"};

const char *rm_cuda_kernel_lib_name(rm_cuda_kernel_lib lib)
{
    return (int)lib >= 0 && lib < RM_CUDA_KERNELS_COUNT ? lib_names[lib] : "unknown";
}

int rm_cuda_kernel_lib_parse(rm_cuda_kernel_lib *out, const char *name, rm_err *e)
{
    int i = 0, rc = rm_backend_kernels_parse(&i, RM_BACKEND_CUDA, name, e);
    return rc ? rc : (*out = (rm_cuda_kernel_lib)i, RM_OK);
}

/* The bound a layer declares for its CUDA kernels: every library fits in it
 * (layer.h), so planning needs no device. */
static size_t layer_workspace_bound(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in, int nin,
                                    rm_shape out, int backward)
{
    const rm_layer_backend_kernels *b = rm_layer_backend_of(d, RM_BACKEND_CUDA);
    return b->workspace ? b->workspace(cfg, in, nin, out, backward) : 0;
}

static int create(rm_backend **out, const rm_backend_options *o, rm_err *e)
{
    return rm_backend_cuda_create_with(out, -1, o, e);
}

const rm_backend_info rm_backend_cuda_info = {
    .kind = RM_BACKEND_CUDA,
    .name = "cuda",
    .device = "the GPU",
    .kernel_libs = lib_names,
    .nkernel_libs = RM_CUDA_KERNELS_COUNT,
    .kernels_env = "REMAT_KERNELS",
    .has_threads = 0,
    .create = create,
    .layer_workspace_bound = layer_workspace_bound,
};
