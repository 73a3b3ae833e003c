/* The CPU backend's registry entry (backend.c) and the names of its kernel
 * libraries: what is known of it before one exists. */
#include "backend_cpu_internal.h"

static const char *const lib_names[RM_CPU_KERNELS_COUNT] = {"reference", "fast"};

const char *rm_cpu_kernel_lib_name(rm_cpu_kernel_lib lib)
{
    return (int)lib >= 0 && lib < RM_CPU_KERNELS_COUNT ? lib_names[lib] : "unknown";
}

int rm_cpu_kernel_lib_parse(rm_cpu_kernel_lib *out, const char *name, rm_err *e)
{
    int i = 0, rc = rm_backend_kernels_parse(&i, RM_BACKEND_CPU, name, e);
    return rc ? rc : (*out = (rm_cpu_kernel_lib)i, RM_OK);
}

const rm_backend_info rm_backend_cpu_info = {
    .kind = RM_BACKEND_CPU,
    .name = "cpu",
    .device = "the CPU",
    .kernel_libs = lib_names,
    .nkernel_libs = RM_CPU_KERNELS_COUNT,
    .kernels_env = "REMAT_CPU_KERNELS",
    .has_threads = 1,
    .create = rm_backend_cpu_create_with,
    .layer_workspace_bound = rm_backend_cpu_layer_workspace_bound,
};
