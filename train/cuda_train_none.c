/* Built instead of cuda_train.cu when CUDA is off: no CUDA backend can exist
 * then, so these are never reached; they answer RM_ERR_UNSUPPORTED. */
#include "cuda_train.h"

static int none(const char *what, rm_err *e)
{
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: this build of remat has no CUDA support", what);
}

int rm_cuda_fill_nan(rm_backend *be, void *dev, size_t bytes, rm_err *e)
{
    (void)be, (void)dev, (void)bytes;
    return none("poison fill", e);
}

int rm_cuda_grad_sum(rm_backend *be, float *out, const float *const *src, int nsrc, size_t count, rm_err *e)
{
    (void)be, (void)out, (void)src, (void)nsrc, (void)count;
    return none("gradient sum", e);
}

int rm_cuda_sgd_update(rm_backend *be, float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
                       int nesterov, rm_err *e)
{
    (void)be, (void)w, (void)dw, (void)v, (void)n, (void)lr, (void)wd, (void)mu, (void)nesterov;
    return none("sgd update", e);
}

int rm_cuda_adam_update(rm_backend *be, float *w, const float *dw, float *m, float *v, size_t n,
                        const rm_cuda_adam_scalars *k, rm_err *e)
{
    (void)be, (void)w, (void)dw, (void)m, (void)v, (void)n, (void)k;
    return none("adam update", e);
}
