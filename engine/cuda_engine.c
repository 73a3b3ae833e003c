/* Names of the CUDA backend's kernel engines (backend.h), shared by the CUDA
 * build and the build without it, so the CLI and the tests can parse an
 * engine name either way. */
#include <string.h>

#include "backend.h"

static const char *const engine_names[RM_ENGINE_COUNT] = {"handwritten", "cublas", "cudnn"};

const char *rm_cuda_engine_name(rm_cuda_engine engine)
{
    return engine >= 0 && engine < RM_ENGINE_COUNT ? engine_names[engine] : "unknown";
}

int rm_cuda_engine_parse(rm_cuda_engine *out, const char *name, rm_err *e)
{
    for (int i = 0; i < RM_ENGINE_COUNT; i++)
        if (name && strcmp(name, engine_names[i]) == 0) {
            *out = (rm_cuda_engine)i;
            return RM_OK;
        }
    return rm_errorf(e, RM_ERR_INVALID, "unknown CUDA engine '%s' (handwritten, cublas or cudnn)",
                     name ? name : "(null)");
}
