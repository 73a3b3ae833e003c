/* Per-pixel softmax cross-entropy on the GPU. Labels (N*H*W, device memory)
 * are validated first through a flag copied back, so nothing is written for a
 * bad label, as on the CPU. Forward: one block, each thread sums a strided
 * set of pixels' losses in double, a fixed tree adds them (deterministic).
 * Backward: one thread per pixel (adjacent threads read adjacent pixels of a
 * channel plane). Device workspace: 8 bytes. */
#include <float.h>

#include "cuda_common.cuh"

extern "C" size_t rm_pixel_softmax_xent_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin,
                                                       rm_shape out, int backward)
{
    (void)cfg, (void)in, (void)nin, (void)out, (void)backward;
    return sizeof(unsigned long long);
}

/* Over the k channels of one pixel (channel stride hw). */
__device__ inline double pixel_log_sum_exp(const float *x, int k, size_t hw)
{
    double m = -DBL_MAX, s = 0.0;
    for (int j = 0; j < k; j++)
        if (x[j * hw] > m) m = x[j * hw];
    for (int j = 0; j < k; j++) s += exp((double)x[j * hw] - m);
    return m + log(s);
}

static __global__ void pixel_softmax_xent_forward_kernel(float *loss, const float *x, const int32_t *labels, int n,
                                                         int k, size_t hw)
{
    double total = 0.0;
    for (size_t t = threadIdx.x; t < (size_t)n * hw; t += RM_THREADS) {
        const float *px = x + (t / hw) * k * hw + t % hw;
        total += pixel_log_sum_exp(px, k, hw) - px[(size_t)labels[t] * hw];
    }
    total = rm_block_sum(total);
    if (threadIdx.x == 0) *loss = (float)(total / ((double)n * (double)hw));
}

static __global__ void pixel_softmax_xent_backward_kernel(float *dx, const float *x, const int32_t *labels, int n,
                                                          int k, size_t hw)
{
    double count = (double)n * (double)hw;
    RM_CUDA_FOR(t, (size_t)n * hw)
    {
        size_t base = (t / hw) * k * hw + t % hw;
        double lse = pixel_log_sum_exp(x + base, k, hw);
        int32_t label = labels[t];
        for (int j = 0; j < k; j++) {
            double prob = exp((double)x[base + j * hw] - lse);
            dx[base + j * hw] = (float)((prob - (j == label ? 1.0 : 0.0)) / count);
        }
    }
}

static int check_labels(const rm_layer_call *call, rm_shape s, void *flag, rm_err *e)
{
    if (!call->labels) return rm_errorf(e, RM_ERR_INVALID, "pixel_softmax_xent: no labels given");
    size_t hw = (size_t)s.h * s.w;
    long long bad;
    int label;
    int rc = rm_cuda_check_labels(&bad, &label, call->labels, (size_t)s.n * hw, s.c, (unsigned long long *)flag,
                                  rm_cuda_stream(call->be), e);
    if (rc) return rc;
    if (bad >= 0) {
        size_t p = (size_t)bad % hw;
        return rm_errorf(e, RM_ERR_INVALID,
                         "pixel_softmax_xent: sample %d pixel (y %d, x %d) has label %d, outside [0, %d)",
                         (int)((size_t)bad / hw), (int)(p / (size_t)s.w), (int)(p % (size_t)s.w), label, s.c);
    }
    return RM_OK;
}

static int pixel_softmax_xent_run(const rm_layer_call *call, int backward, rm_err *e)
{
    rm_shape s = call->in[0]->shape;
    size_t hw = (size_t)s.h * s.w;
    void *ws, *owned;
    int rc = rm_cuda_workspace(&ws, &owned, call, sizeof(unsigned long long), "pixel_softmax_xent", e);
    if (rc) return rc;
    rc = check_labels(call, s, ws, e);
    if (!rc) {
        cudaStream_t st = rm_cuda_stream(call->be);
        cudaError_t launched = cudaSuccess;
        if (!backward) {
            pixel_softmax_xent_forward_kernel<<<1, RM_THREADS, 0, st>>>(call->out->data, call->in[0]->data,
                                                                        call->labels, s.n, s.c, hw);
            launched = cudaGetLastError();
        } else if (call->din[0] && call->din[0]->data) {
            pixel_softmax_xent_backward_kernel<<<rm_cuda_blocks((size_t)s.n * hw), RM_THREADS, 0, st>>>(
                call->din[0]->data, call->in[0]->data, call->labels, s.n, s.c, hw);
            launched = cudaGetLastError();
        }
        if (launched != cudaSuccess)
            rc = rm_errorf(e, RM_ERR_DEVICE, "cuda: pixel_softmax_xent_%s_kernel failed: %s",
                           backward ? "backward" : "forward", cudaGetErrorString(launched));
    }
    int rc2 = rm_cuda_workspace_release(owned, call, rc ? NULL : e);
    return rc ? rc : rc2;
}

extern "C" int rm_pixel_softmax_xent_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    return pixel_softmax_xent_run(call, 0, e);
}

extern "C" int rm_pixel_softmax_xent_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    return pixel_softmax_xent_run(call, 1, e);
}
