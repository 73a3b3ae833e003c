/* The CUDA backend's own kernels: the executor's poison fill and gradient
 * sum, the trainer's gradient scale and the optimizer's SGD and Adam updates, each mirroring a loop of
 * backend_cpu_compute.c operation for operation (see backend_cuda.cuh), and
 * the event timers of the profiler. The backend's ops (backend_cuda.cu) call
 * these with its stream. */
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.cuh"

int rm_cuda_poison(cudaStream_t st, void *dst, size_t bytes, rm_err *e)
{
    /* All-ones bytes: every float reads as a NaN. */
    if (bytes) RM_CUDA_CHECK(cudaMemsetAsync(dst, 0xFF, bytes, st), e, "poison fill (cudaMemsetAsync)");
    return RM_OK;
}

typedef struct grad_sum_srcs {
    const float *p[RM_CUDA_GRAD_SUM_MAX];
} grad_sum_srcs;

static __global__ void grad_sum_kernel(float *out, grad_sum_srcs src, int nsrc, size_t count)
{
    RM_CUDA_FOR(i, count)
    {
        double acc = 0.0;
        for (int d = 0; d < nsrc; d++) acc = __dadd_rn(acc, (double)src.p[d][i]);
        out[i] = (float)acc;
    }
}

int rm_cuda_grad_sum(cudaStream_t st, float *out, const float *const *src, int nsrc, size_t count, rm_err *e)
{
    if (nsrc < 1 || nsrc > RM_CUDA_GRAD_SUM_MAX)
        return rm_errorf(e, RM_ERR_INVALID, "gradient sum: %d sources (1 to %d supported)", nsrc, RM_CUDA_GRAD_SUM_MAX);
    if (!count) return RM_OK;
    grad_sum_srcs s;
    memset(&s, 0, sizeof s);
    for (int d = 0; d < nsrc; d++) s.p[d] = src[d];
    grad_sum_kernel<<<rm_cuda_blocks(count), RM_THREADS, 0, st>>>(out, s, nsrc, count);
    RM_CUDA_LAUNCHED(e, "grad_sum_kernel");
    return RM_OK;
}

static __global__ void scale_kernel(float *x, size_t count, float a)
{
    RM_CUDA_FOR(i, count) x[i] = __fmul_rn(x[i], a);
}

int rm_cuda_scale(cudaStream_t st, float *x, size_t count, float a, rm_err *e)
{
    if (!count) return RM_OK;
    scale_kernel<<<rm_cuda_blocks(count), RM_THREADS, 0, st>>>(x, count, a);
    RM_CUDA_LAUNCHED(e, "scale_kernel");
    return RM_OK;
}

/* w -= lr * (dw + wd * w) */
static __global__ void sgd_plain_kernel(float *w, const float *dw, size_t n, float lr, float wd)
{
    RM_CUDA_FOR(j, n)
    {
        float wj = w[j];
        float g = __fadd_rn(dw[j], __fmul_rn(wd, wj));
        w[j] = __fsub_rn(wj, __fmul_rn(lr, g));
    }
}

/* g = dw + wd*w; v = mu*v + g; w -= lr * (nesterov ? g + mu*v : v) */
static __global__ void sgd_momentum_kernel(float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
                                           int nesterov)
{
    RM_CUDA_FOR(j, n)
    {
        float wj = w[j];
        float g = __fadd_rn(dw[j], __fmul_rn(wd, wj));
        float vj = __fadd_rn(__fmul_rn(mu, v[j]), g);
        v[j] = vj;
        float step = nesterov ? __fadd_rn(g, __fmul_rn(mu, vj)) : vj;
        w[j] = __fsub_rn(wj, __fmul_rn(lr, step));
    }
}

int rm_cuda_sgd_update(cudaStream_t st, float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
                       int nesterov, rm_err *e)
{
    if (!n) return RM_OK;
    if (!v) {
        sgd_plain_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, st>>>(w, dw, n, lr, wd);
        RM_CUDA_LAUNCHED(e, "sgd_plain_kernel");
    } else {
        sgd_momentum_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, st>>>(w, dw, v, n, lr, wd, mu, nesterov);
        RM_CUDA_LAUNCHED(e, "sgd_momentum_kernel");
    }
    return RM_OK;
}

/* wj = w*shrink; g = dw + l2*wj; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
 * w = wj - step_size*m / (sqrt(v)/bc2_sqrt + eps), each operation rounded
 * as the CPU rounds it (sqrtf and division are IEEE on both). */
static __global__ void adam_kernel(float *w, const float *dw, float *m, float *v, size_t n, rm_adam_scalars k)
{
    RM_CUDA_FOR(j, n)
    {
        float wj = __fmul_rn(w[j], k.shrink);
        float g = __fadd_rn(dw[j], __fmul_rn(k.l2, wj));
        float mj = __fadd_rn(__fmul_rn(k.b1, m[j]), __fmul_rn(k.one_minus_b1, g));
        float vj = __fadd_rn(__fmul_rn(k.b2, v[j]), __fmul_rn(__fmul_rn(k.one_minus_b2, g), g));
        m[j] = mj;
        v[j] = vj;
        float den = __fadd_rn(__fdiv_rn(__fsqrt_rn(vj), k.bc2_sqrt), k.eps);
        w[j] = __fsub_rn(wj, __fdiv_rn(__fmul_rn(k.step_size, mj), den));
    }
}

int rm_cuda_adam_update(cudaStream_t st, float *w, const float *dw, float *m, float *v, size_t n,
                        const rm_adam_scalars *k, rm_err *e)
{
    if (!n) return RM_OK;
    adam_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, st>>>(w, dw, m, v, n, *k);
    RM_CUDA_LAUNCHED(e, "adam_kernel");
    return RM_OK;
}

/* ---- event timers ---- */

struct rm_backend_timer {
    cudaStream_t stream;
    int n;
    cudaEvent_t *ev; /* [n] */
};

void rm_cuda_timer_free(rm_backend_timer *t)
{
    if (!t) return;
    /* A failed destroy leaks one event at worst; nothing to report it to. */
    for (int k = 0; k < t->n; k++)
        if (t->ev[k]) (void)cudaEventDestroy(t->ev[k]);
    free(t->ev);
    free(t);
}

int rm_cuda_timer_create(rm_backend_timer **out, cudaStream_t st, int nevents, rm_err *e)
{
    *out = NULL;
    if (nevents < 1) return rm_errorf(e, RM_ERR_INVALID, "cuda timer: %d events", nevents);
    rm_backend_timer *t = (rm_backend_timer *)calloc(1, sizeof *t);
    if (t) t->ev = (cudaEvent_t *)calloc((size_t)nevents, sizeof *t->ev);
    if (!t || !t->ev) {
        free(t);
        return rm_errorf(e, RM_ERR_NOMEM, "cuda timer: out of memory");
    }
    t->stream = st;
    for (int k = 0; k < nevents; k++) {
        cudaError_t cst = cudaEventCreate(&t->ev[k]);
        if (cst != cudaSuccess) {
            rm_cuda_timer_free(t);
            return rm_errorf(e, RM_ERR_DEVICE, "cuda: cudaEventCreate failed: %s", cudaGetErrorString(cst));
        }
        t->n = k + 1;
    }
    *out = t;
    return RM_OK;
}

int rm_cuda_timer_record(rm_backend_timer *t, int k, rm_err *e)
{
    if (k < 0 || k >= t->n) return rm_errorf(e, RM_ERR_INVALID, "cuda timer: event %d of %d", k, t->n);
    RM_CUDA_CHECK(cudaEventRecord(t->ev[k], t->stream), e, "cudaEventRecord");
    return RM_OK;
}

int rm_cuda_timer_elapsed(rm_backend_timer *t, int a, int b, double *seconds, rm_err *e)
{
    if (a < 0 || a >= t->n || b < 0 || b >= t->n)
        return rm_errorf(e, RM_ERR_INVALID, "cuda timer: events %d, %d of %d", a, b, t->n);
    RM_CUDA_CHECK(cudaEventSynchronize(t->ev[b]), e, "cudaEventSynchronize");
    float ms = 0;
    RM_CUDA_CHECK(cudaEventElapsedTime(&ms, t->ev[a], t->ev[b]), e, "cudaEventElapsedTime");
    *seconds = (double)ms * 1e-3;
    return RM_OK;
}
