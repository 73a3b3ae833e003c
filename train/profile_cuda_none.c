/* Built instead of profile_cuda.cu when CUDA is off: no CUDA backend can
 * exist then, so these are never reached past rm_backend_cuda_create's own
 * error; they answer RM_ERR_UNSUPPORTED. */
#include "profile.h"

int rm_cuda_timer_create(rm_cuda_timer **out, rm_backend *be, int nevents, rm_err *e)
{
    (void)be, (void)nevents;
    *out = NULL;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "cuda timer: this build of remat has no CUDA support");
}

int rm_cuda_timer_record(rm_cuda_timer *t, int k, rm_err *e)
{
    (void)t, (void)k;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "cuda timer: this build of remat has no CUDA support");
}

int rm_cuda_timer_elapsed(rm_cuda_timer *t, int a, int b, double *seconds, rm_err *e)
{
    (void)t, (void)a, (void)b, (void)seconds;
    return rm_errorf(e, RM_ERR_UNSUPPORTED, "cuda timer: this build of remat has no CUDA support");
}

void rm_cuda_timer_free(rm_cuda_timer *t) { (void)t; }
