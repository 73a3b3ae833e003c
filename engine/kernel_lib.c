/* Names of the CUDA backend's kernel libraries (backend_cuda.h), shared by
 * the CUDA build and the build without it, so the CLI and the tests can
 * parse a library name either way. */
#include <string.h>

#include "backend_cuda.h"

static const char *const lib_names[RM_KERNELS_COUNT] = {"handwritten", "cublas", "cudnn"};

const char *rm_kernel_lib_name(rm_kernel_lib lib)
{
    return lib >= 0 && lib < RM_KERNELS_COUNT ? lib_names[lib] : "unknown";
}

int rm_kernel_lib_parse(rm_kernel_lib *out, const char *name, rm_err *e)
{
    for (int i = 0; i < RM_KERNELS_COUNT; i++)
        if (name && strcmp(name, lib_names[i]) == 0) {
            *out = (rm_kernel_lib)i;
            return RM_OK;
        }
    return rm_errorf(e, RM_ERR_INVALID, "unknown kernel library '%s' (handwritten, cublas or cudnn)",
                     name ? name : "(null)");
}
