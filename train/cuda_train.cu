/* Device kernels of the executor (poison fill, gradient sum) and of the
 * optimizer (SGD, Adam); see cuda_train.h. Each mirrors a CPU loop of
 * train/executor.c or train/optim.c operation for operation, written with
 * _rn intrinsics so that nvcc cannot contract a multiply and an add into an
 * FMA: the GPU then computes the same bits as the CPU reference. */
#include <string.h>

#include "cuda_common.cuh"

extern "C" {
#include "cuda_train.h"
}

static cudaStream_t stream_of(rm_backend *be) { return (cudaStream_t)rm_backend_cuda_stream(be); }

static int check_backend(rm_backend *be, const char *who, rm_err *e)
{
    if (!be || be->kind != RM_BACKEND_CUDA || !stream_of(be))
        return rm_errorf(e, RM_ERR_INVALID, "%s: not a CUDA backend", who);
    return RM_OK;
}

extern "C" int rm_cuda_fill_nan(rm_backend *be, void *dev, size_t bytes, rm_err *e)
{
    int rc = check_backend(be, "poison fill", e);
    if (rc || !bytes) return rc;
    RM_CUDA_CHECK(cudaMemsetAsync(dev, 0xFF, bytes, stream_of(be)), e, "poison fill (cudaMemsetAsync)");
    return RM_OK;
}

typedef struct grad_sum_srcs {
    const float *p[RM_CUDA_GRAD_SUM_MAX];
} grad_sum_srcs;

__global__ void grad_sum_kernel(float *out, grad_sum_srcs src, int nsrc, size_t count)
{
    RM_CUDA_FOR(i, count)
    {
        double acc = 0.0;
        for (int d = 0; d < nsrc; d++) acc = __dadd_rn(acc, (double)src.p[d][i]);
        out[i] = (float)acc;
    }
}

extern "C" int rm_cuda_grad_sum(rm_backend *be, float *out, const float *const *src, int nsrc, size_t count, rm_err *e)
{
    int rc = check_backend(be, "gradient sum", e);
    if (rc) return rc;
    if (nsrc < 1 || nsrc > RM_CUDA_GRAD_SUM_MAX)
        return rm_errorf(e, RM_ERR_INVALID, "gradient sum: %d sources (1 to %d supported)", nsrc,
                         RM_CUDA_GRAD_SUM_MAX);
    if (!count) return RM_OK;
    grad_sum_srcs s;
    memset(&s, 0, sizeof s);
    for (int d = 0; d < nsrc; d++) s.p[d] = src[d];
    grad_sum_kernel<<<rm_cuda_blocks(count), RM_THREADS, 0, stream_of(be)>>>(out, s, nsrc, count);
    RM_CUDA_LAUNCHED(e, "grad_sum_kernel");
    return RM_OK;
}

/* w -= lr * (dw + wd * w) */
__global__ void sgd_plain_kernel(float *w, const float *dw, size_t n, float lr, float wd)
{
    RM_CUDA_FOR(j, n)
    {
        float wj = w[j];
        float g = __fadd_rn(dw[j], __fmul_rn(wd, wj));
        w[j] = __fsub_rn(wj, __fmul_rn(lr, g));
    }
}

/* g = dw + wd*w; v = mu*v + g; w -= lr * (nesterov ? g + mu*v : v) */
__global__ void sgd_momentum_kernel(float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
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

extern "C" int rm_cuda_sgd_update(rm_backend *be, float *w, const float *dw, float *v, size_t n, float lr, float wd,
                                  float mu, int nesterov, rm_err *e)
{
    int rc = check_backend(be, "sgd update", e);
    if (rc || !n) return rc;
    if (!v) {
        sgd_plain_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, stream_of(be)>>>(w, dw, n, lr, wd);
        RM_CUDA_LAUNCHED(e, "sgd_plain_kernel");
    } else {
        sgd_momentum_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, stream_of(be)>>>(w, dw, v, n, lr, wd, mu, nesterov);
        RM_CUDA_LAUNCHED(e, "sgd_momentum_kernel");
    }
    return RM_OK;
}

/* wj = w*shrink; g = dw + l2*wj; m = b1*m + (1-b1)*g; v = b2*v + (1-b2)*g*g;
 * w = wj - step_size*m / (sqrt(v)/bc2_sqrt + eps), each operation rounded
 * as the CPU rounds it (sqrtf and division are IEEE on both). */
__global__ void adam_kernel(float *w, const float *dw, float *m, float *v, size_t n, rm_cuda_adam_scalars k)
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

extern "C" int rm_cuda_adam_update(rm_backend *be, float *w, const float *dw, float *m, float *v, size_t n,
                                   const rm_cuda_adam_scalars *k, rm_err *e)
{
    int rc = check_backend(be, "adam update", e);
    if (rc || !n) return rc;
    adam_kernel<<<rm_cuda_blocks(n), RM_THREADS, 0, stream_of(be)>>>(w, dw, m, v, n, *k);
    RM_CUDA_LAUNCHED(e, "adam_kernel");
    return RM_OK;
}
