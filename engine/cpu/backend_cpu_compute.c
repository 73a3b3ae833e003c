/* The CPU backend's compute beyond the layers: the executor's poison fill
 * and gradient sum, the trainer's gradient scale and the optimizer's SGD and
 * Adam updates. These loops are
 * the reference: the CUDA kernels (backend_cuda_kernels.cu) evaluate the
 * same float (or double) operations in the same order, and tests assert
 * bit-equality across schedules and between the two backends. Every element
 * is independent of the others, so the loops split them between the
 * backend's threads without changing a bit. */
#include <math.h>
#include <string.h>

#include "backend_cpu_internal.h"

int rm_cpu_poison(void *ctx, void *dst, size_t bytes, rm_err *e)
{
    (void)e;
    float *p = dst;
    size_t n = bytes / sizeof(float);
    int nt = rm_cpu_ctx_loop_threads(ctx, n);
    RM_CPU_PARALLEL_FOR_SIMD(nt)
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return RM_OK;
}

/* Summed in double, in source order, 256 elements at a time (the
 * accumulators stay in cache whatever the number of sources). */
int rm_cpu_grad_sum(void *ctx, float *out, const float *const *src, int nsrc, size_t count, rm_err *e)
{
    (void)e;
    size_t blocks = (count + 255) / 256;
    int nt = rm_cpu_ctx_loop_threads(ctx, count);
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t b = 0; b < blocks; b++) {
        size_t i0 = b * 256, i1 = count - i0 < 256 ? count : i0 + 256;
        double acc[256];
        for (size_t i = i0; i < i1; i++) acc[i - i0] = 0.0;
        for (int d = 0; d < nsrc; d++) {
            const float *s = src[d];
            for (size_t i = i0; i < i1; i++) acc[i - i0] += s[i];
        }
        for (size_t i = i0; i < i1; i++) out[i] = (float)acc[i - i0];
    }
    return RM_OK;
}

int rm_cpu_scale(void *ctx, float *x, size_t count, float a, rm_err *e)
{
    (void)e;
    int nt = rm_cpu_ctx_loop_threads(ctx, count);
    RM_CPU_PARALLEL_FOR_SIMD(nt)
    for (size_t i = 0; i < count; i++) x[i] *= a;
    return RM_OK;
}

/* The element-wise parts run in float on float32 state, in the order of
 * torch.optim's single-tensor implementation; scalars arrive as floats
 * rounded from doubles (see rm_optim_options). */
int rm_cpu_sgd_update(void *ctx, float *restrict w, const float *restrict dw, float *restrict v, size_t n, float lr,
                      float wd, float mu, int nesterov, rm_err *e)
{
    (void)e;
    int nt = rm_cpu_ctx_loop_threads(ctx, n);
    if (!v) { /* no momentum: plain SGD */
        RM_CPU_PARALLEL_FOR_SIMD(nt)
        for (size_t j = 0; j < n; j++) w[j] -= lr * (dw[j] + wd * w[j]);
        return RM_OK;
    }
    RM_CPU_PARALLEL_FOR_SIMD(nt)
    for (size_t j = 0; j < n; j++) {
        float g = dw[j] + wd * w[j];
        float vj = mu * v[j] + g;
        v[j] = vj;
        w[j] -= lr * (nesterov ? g + mu * vj : vj);
    }
    return RM_OK;
}

int rm_cpu_adam_update(void *ctx, float *restrict w, const float *restrict dw, float *restrict m, float *restrict v,
                       size_t n, const rm_adam_scalars *k, rm_err *e)
{
    (void)e;
    int nt = rm_cpu_ctx_loop_threads(ctx, n);
    RM_CPU_PARALLEL_FOR_SIMD(nt)
    for (size_t j = 0; j < n; j++) {
        float wj = w[j] * k->shrink;
        float g = dw[j] + k->l2 * wj;
        float mj = k->b1 * m[j] + k->one_minus_b1 * g;
        float vj = k->b2 * v[j] + k->one_minus_b2 * g * g;
        m[j] = mj;
        v[j] = vj;
        w[j] = wj - k->step_size * mj / (sqrtf(vj) / k->bc2_sqrt + k->eps);
    }
    return RM_OK;
}
