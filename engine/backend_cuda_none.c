/* Built instead of backend_cuda.cu when CUDA is off, so callers need no #ifdef. */
#include "backend_cuda.h"

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

int rm_backend_cuda_has_cudnn(void) { return 0; }

int rm_backend_cuda_set_kernels(rm_backend *be, rm_kernel_lib lib, rm_err *e)
{
    (void)be, (void)lib;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "this build of remat has no CUDA support");
}

rm_kernel_lib rm_backend_cuda_kernels(const rm_backend *be)
{
    (void)be;
    return RM_KERNELS_HANDWRITTEN;
}

int rm_backend_cuda_set_deterministic(rm_backend *be, int on, rm_err *e)
{
    (void)be, (void)on;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "this build of remat has no CUDA support");
}

int rm_backend_cuda_deterministic(const rm_backend *be)
{
    (void)be;
    return 1;
}

int rm_backend_cuda_set_fast_math(rm_backend *be, int on, rm_err *e)
{
    (void)be, (void)on;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "this build of remat has no CUDA support");
}

int rm_backend_cuda_fast_math(const rm_backend *be)
{
    (void)be;
    return 0;
}

unsigned long long rm_backend_cuda_fallbacks(const rm_backend *be)
{
    (void)be;
    return 0;
}

size_t rm_backend_cuda_fixed_bytes(const rm_backend *be)
{
    (void)be;
    return 0;
}
