/* Built instead of backend_cuda.cu when CUDA is off, so callers need no #ifdef. */
#include "backend.h"

int rm_backend_cuda_create(rm_backend **out, int device, rm_err *e)
{
    (void)device;
    *out = 0;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "this build of remat has no CUDA support");
}

void *rm_backend_cuda_stream(const rm_backend *be)
{
    (void)be;
    return 0;
}

int rm_backend_cuda_mem_info(const rm_backend *be, size_t *free_bytes, size_t *total_bytes, rm_err *e)
{
    (void)be;
    *free_bytes = *total_bytes = 0;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "this build of remat has no CUDA support");
}
