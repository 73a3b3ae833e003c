/* CUDA event timers for the profiler (see profile.h). Events are recorded on
 * the backend's stream, so they time the GPU's work between them, not how
 * long the host took to queue it. */
#include <stdlib.h>

#include "cuda_common.cuh"

extern "C" {
#include "profile.h"
}

struct rm_cuda_timer {
    cudaStream_t stream;
    int n;
    cudaEvent_t *ev; /* [n] */
};

extern "C" void rm_cuda_timer_free(rm_cuda_timer *t)
{
    if (!t) return;
    /* A failed destroy leaks one event at worst; nothing to report it to. */
    for (int k = 0; k < t->n; k++)
        if (t->ev[k]) (void)cudaEventDestroy(t->ev[k]);
    free(t->ev);
    free(t);
}

extern "C" int rm_cuda_timer_create(rm_cuda_timer **out, rm_backend *be, int nevents, rm_err *e)
{
    *out = NULL;
    if (!be || be->kind != RM_BACKEND_CUDA || !rm_backend_cuda_stream(be))
        return rm_errorf(e, RM_ERR_INVALID, "cuda timer: not a CUDA backend");
    if (nevents < 1) return rm_errorf(e, RM_ERR_INVALID, "cuda timer: %d events", nevents);
    rm_cuda_timer *t = (rm_cuda_timer *)calloc(1, sizeof *t);
    if (t) t->ev = (cudaEvent_t *)calloc((size_t)nevents, sizeof *t->ev);
    if (!t || !t->ev) {
        free(t);
        return rm_errorf(e, RM_ERR_NOMEM, "cuda timer: out of memory");
    }
    t->stream = (cudaStream_t)rm_backend_cuda_stream(be);
    for (int k = 0; k < nevents; k++) {
        cudaError_t st = cudaEventCreate(&t->ev[k]);
        if (st != cudaSuccess) {
            rm_cuda_timer_free(t);
            return rm_errorf(e, RM_ERR_DEVICE, "cuda: cudaEventCreate failed: %s", cudaGetErrorString(st));
        }
        t->n = k + 1;
    }
    *out = t;
    return RM_OK;
}

extern "C" int rm_cuda_timer_record(rm_cuda_timer *t, int k, rm_err *e)
{
    if (k < 0 || k >= t->n) return rm_errorf(e, RM_ERR_INVALID, "cuda timer: event %d of %d", k, t->n);
    RM_CUDA_CHECK(cudaEventRecord(t->ev[k], t->stream), e, "cudaEventRecord");
    return RM_OK;
}

extern "C" int rm_cuda_timer_elapsed(rm_cuda_timer *t, int a, int b, double *seconds, rm_err *e)
{
    if (a < 0 || a >= t->n || b < 0 || b >= t->n)
        return rm_errorf(e, RM_ERR_INVALID, "cuda timer: events %d, %d of %d", a, b, t->n);
    RM_CUDA_CHECK(cudaEventSynchronize(t->ev[b]), e, "cudaEventSynchronize");
    float ms = 0;
    RM_CUDA_CHECK(cudaEventElapsedTime(&ms, t->ev[a], t->ev[b]), e, "cudaEventElapsedTime");
    *seconds = (double)ms * 1e-3;
    return RM_OK;
}
