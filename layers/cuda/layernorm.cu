/* Layer normalisation over the channels on the GPU (layers/layernorm.c):
 * one thread per position for its statistics (in double, the CPU
 * reference's order) and for dx, one per element for y, one per channel for
 * the scale's and shift's gradients (summed over the positions in the
 * reference's order). The statistics of every position live in the
 * workspace, 2 doubles each, as on the CPU. */
#include "cuda_common.cuh"

extern "C" size_t rm_layernorm_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                              int backward)
{
    (void)cfg, (void)nin, (void)out, (void)backward;
    return 2 * (size_t)in[0].n * (size_t)in[0].h * (size_t)in[0].w * sizeof(double);
}

static __global__ void ln_stats_kernel(double *stats, const float *x, int n, int c, size_t plane, double eps)
{
    RM_CUDA_FOR(p, (size_t)n * plane)
    {
        const float *xp = x + p / plane * c * plane + p % plane;
        double sum = 0, sq = 0;
        for (int k = 0; k < c; k++) sum += xp[(size_t)k * plane];
        double mean = sum / c;
        for (int k = 0; k < c; k++) {
            double d = xp[(size_t)k * plane] - mean;
            sq += d * d;
        }
        stats[2 * p] = mean, stats[2 * p + 1] = 1.0 / sqrt(sq / c + eps);
    }
}

static __global__ void ln_forward_kernel(float *y, const float *x, const double *stats, const float *g, const float *b,
                                         int n, int c, size_t plane)
{
    RM_CUDA_FOR(k, (size_t)n * c * plane)
    {
        size_t i = k % plane, ch = k / plane % (size_t)c, s = k / plane / (size_t)c;
        const double *st = stats + 2 * (s * plane + i);
        y[k] = (float)((x[k] - st[0]) * st[1] * g[ch] + b[ch]);
    }
}

static __global__ void ln_dx_kernel(float *dx, const float *dy, const float *x, const double *stats, const float *g,
                                    int n, int c, size_t plane)
{
    RM_CUDA_FOR(p, (size_t)n * plane)
    {
        const double *st = stats + 2 * p;
        const size_t base = p / plane * c * plane + p % plane;
        double sg = 0, sgx = 0;
        for (int k = 0; k < c; k++) {
            size_t e = base + (size_t)k * plane;
            double gx = (double)dy[e] * g[k];
            sg += gx, sgx += gx * (x[e] - st[0]) * st[1];
        }
        sg /= c, sgx /= c;
        for (int k = 0; k < c; k++) {
            size_t e = base + (size_t)k * plane;
            double xh = (x[e] - st[0]) * st[1];
            dx[e] = (float)(st[1] * ((double)dy[e] * g[k] - sg - xh * sgx));
        }
    }
}

static __global__ void ln_dparams_kernel(float *dg, float *db, const float *dy, const float *x, const double *stats,
                                         int n, int c, size_t plane)
{
    RM_CUDA_FOR(ch, (size_t)c)
    {
        double sg = 0, sb = 0;
        for (int s = 0; s < n; s++)
            for (size_t i = 0; i < plane; i++) {
                size_t k = ((size_t)s * c + ch) * plane + i;
                const double *st = stats + 2 * ((size_t)s * plane + i);
                sg += (double)dy[k] * (x[k] - st[0]) * st[1];
                sb += dy[k];
            }
        if (dg) dg[ch] = (float)sg;
        if (db) db[ch] = (float)sb;
    }
}

/* After the kernels: the workspace released, and the launch's error reported
 * before the release's. */
static int ln_release(void *owned, const rm_layer_call *call, cudaError_t launched, const char *what, rm_err *e)
{
    int rc = rm_cuda_workspace_release(owned, call, e);
    if (launched != cudaSuccess)
        return rm_errorf(e, RM_ERR_DEVICE, "cuda: %s failed: %s", what, cudaGetErrorString(launched));
    return rc;
}

static int ln_stats(double **stats, void **owned, const rm_layer_call *call, rm_err *e)
{
    const rm_shape s = call->in[0]->shape;
    void *ws;
    int rc = rm_cuda_workspace(&ws, owned, call, rm_layernorm_workspace_cuda(call->cfg, &s, 1, s, 0), "layernorm", e);
    if (rc) return rc;
    *stats = (double *)ws;
    size_t plane = (size_t)s.h * s.w;
    ln_stats_kernel<<<rm_cuda_blocks((size_t)s.n * plane), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        *stats, call->in[0]->data, s.n, s.c, plane, call->cfg->eps);
    cudaError_t st = cudaGetLastError();
    return st == cudaSuccess ? RM_OK : ln_release(*owned, call, st, "ln_stats_kernel", e);
}

extern "C" int rm_layernorm_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_shape s = call->in[0]->shape;
    double *stats;
    void *owned;
    int rc = ln_stats(&stats, &owned, call, e);
    if (rc) return rc;
    size_t plane = (size_t)s.h * s.w;
    ln_forward_kernel<<<rm_cuda_blocks(rm_tensor_numel(call->out)), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, call->in[0]->data, stats, call->params->w.data, call->params->b.data, s.n, s.c, plane);
    return ln_release(owned, call, cudaGetLastError(), "ln_forward_kernel", e);
}

extern "C" int rm_layernorm_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_shape s = call->in[0]->shape;
    double *stats;
    void *owned;
    int rc = ln_stats(&stats, &owned, call, e);
    if (rc) return rc;
    size_t plane = (size_t)s.h * s.w;
    cudaStream_t str = rm_cuda_stream(call->be);
    if (call->din[0] && call->din[0]->data)
        ln_dx_kernel<<<rm_cuda_blocks((size_t)s.n * plane), RM_THREADS, 0, str>>>(
            call->din[0]->data, call->dout->data, call->in[0]->data, stats, call->params->w.data, s.n, s.c, plane);
    if (call->params->dw.data || call->params->db.data)
        ln_dparams_kernel<<<rm_cuda_blocks((size_t)s.c), RM_THREADS, 0, str>>>(
            call->params->dw.data, call->params->db.data, call->dout->data, call->in[0]->data, stats, s.n, s.c, plane);
    return ln_release(owned, call, cudaGetLastError(), "layernorm backward kernels", e);
}
