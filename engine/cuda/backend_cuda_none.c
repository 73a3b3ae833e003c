/* Built instead of backend_cuda.cu when CUDA is off, so callers need no #ifdef. */
#include "backend_cuda.h"

int rm_backend_cuda_create_with(rm_backend **out, int device, const rm_backend_options *o, rm_err *e)
{
    (void)device, (void)o;
    *out = 0;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "this build of remat has no CUDA support");
}

int rm_backend_cuda_create(rm_backend **out, int device, rm_err *e)
{
    return rm_backend_cuda_create_with(out, device, NULL, e);
}

void *rm_backend_cuda_stream(const rm_backend *be)
{
    (void)be;
    return 0;
}

int rm_backend_cuda_has_cudnn(void)
{
    return 0;
}

int rm_backend_cuda_set_kernels(rm_backend *be, rm_cuda_kernel_lib lib, rm_err *e)
{
    (void)be, (void)lib;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "this build of remat has no CUDA support");
}

rm_cuda_kernel_lib rm_backend_cuda_kernels(const rm_backend *be)
{
    (void)be;
    return RM_CUDA_KERNELS_HANDWRITTEN;
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
