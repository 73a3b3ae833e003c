/* Softmax cross-entropy on the GPU. Labels are device memory; they are
 * validated first (a flag copied back, so nothing is written for a bad label,
 * as on the CPU). Forward: one block, each thread sums the losses of a strided
 * set of rows in double, a fixed tree adds them (deterministic). Backward:
 * one thread per row recomputes its log-sum-exp. Device workspace: 8 bytes. */
#include <float.h>

#include "cuda_common.cuh"

extern "C" size_t rm_softmax_xent_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                                 int backward)
{
    (void)cfg, (void)in, (void)nin, (void)out, (void)backward;
    return sizeof(unsigned long long);
}

__device__ inline double row_log_sum_exp(const float *x, int k)
{
    double m = -DBL_MAX, s = 0.0;
    for (int j = 0; j < k; j++)
        if (x[j] > m) m = x[j];
    for (int j = 0; j < k; j++) s += exp((double)x[j] - m);
    return m + log(s);
}

static __global__ void softmax_xent_forward_kernel(float *loss, const float *x, const int32_t *labels, int n, int k)
{
    double total = 0.0;
    for (int i = threadIdx.x; i < n; i += RM_THREADS) {
        const float *row = x + (size_t)i * k;
        total += row_log_sum_exp(row, k) - row[labels[i]];
    }
    total = rm_block_sum(total);
    if (threadIdx.x == 0) *loss = (float)(total / n);
}

static __global__ void softmax_xent_backward_kernel(float *dx, const float *x, const int32_t *labels, int n, int k)
{
    RM_CUDA_FOR(i, (size_t)n)
    {
        const float *row = x + i * k;
        float *drow = dx + i * k;
        double lse = row_log_sum_exp(row, k);
        for (int j = 0; j < k; j++) {
            double p = exp((double)row[j] - lse);
            drow[j] = (float)((p - (j == labels[i] ? 1.0 : 0.0)) / n);
        }
    }
}

/* Labels checked before anything is written; the CPU reference's message. */
static int check_labels(const rm_layer_call *call, int n, int k, void *flag, rm_err *e)
{
    if (!call->labels) return rm_errorf(e, RM_ERR_INVALID, "softmax_xent: no labels given");
    long long bad;
    int label;
    int rc = rm_cuda_check_labels(&bad, &label, call->labels, (size_t)n, k, (unsigned long long *)flag,
                                  rm_cuda_stream(call->be), e);
    if (rc) return rc;
    if (bad >= 0)
        return rm_errorf(e, RM_ERR_INVALID, "softmax_xent: sample %lld has label %d, outside [0, %d)", bad, label, k);
    return RM_OK;
}

static int softmax_xent_run(const rm_layer_call *call, int backward, rm_err *e)
{
    rm_shape s = call->in[0]->shape;
    void *ws, *owned;
    int rc = rm_cuda_workspace(&ws, &owned, call, sizeof(unsigned long long), "softmax_xent", e);
    if (rc) return rc;
    rc = check_labels(call, s.n, s.c, ws, e);
    if (!rc) {
        cudaStream_t st = rm_cuda_stream(call->be);
        cudaError_t launched = cudaSuccess;
        if (!backward) {
            softmax_xent_forward_kernel<<<1, RM_THREADS, 0, st>>>(call->out->data, call->in[0]->data, call->labels, s.n,
                                                                  s.c);
            launched = cudaGetLastError();
        } else if (call->din[0] && call->din[0]->data) {
            softmax_xent_backward_kernel<<<rm_cuda_blocks((size_t)s.n), RM_THREADS, 0, st>>>(
                call->din[0]->data, call->in[0]->data, call->labels, s.n, s.c);
            launched = cudaGetLastError();
        }
        if (launched != cudaSuccess)
            rc = rm_errorf(e, RM_ERR_DEVICE, "cuda: softmax_xent_%s_kernel failed: %s",
                           backward ? "backward" : "forward", cudaGetErrorString(launched));
    }
    int rc2 = rm_cuda_workspace_release(owned, call, rc ? NULL : e);
    return rc ? rc : rc2;
}

extern "C" int rm_softmax_xent_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    return softmax_xent_run(call, 0, e);
}

extern "C" int rm_softmax_xent_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    return softmax_xent_run(call, 1, e);
}
