/* Batch normalisation on the GPU, the CPU reference's semantics. The batch
 * statistics come from one block per channel, two passes in double (mean,
 * then squared deviations) with fixed-tree sums, and the backward recomputes
 * them with the same kernel, so forward and backward agree bit for bit and
 * every run gives the same bits. Device workspace: 4*C doubles (mean, var,
 * dgamma, dbeta). */
#include "cuda_common.cuh"

extern "C" size_t rm_batchnorm2d_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin,
                                                rm_shape out, int backward)
{
    (void)cfg, (void)nin, (void)out, (void)backward;
    return 4 * (size_t)in[0].c * sizeof(double);
}

/* mean[c], var[c]: the batch's (biased variance) in training, the running
 * ones in eval. One block per channel. */
static __global__ void batchnorm2d_stats_kernel(double *mean, double *var, const float *x, rm_shape s, int training,
                                                const float *running_mean, const float *running_var)
{
    int c = blockIdx.x;
    if (!training) {
        if (threadIdx.x == 0) mean[c] = running_mean[c], var[c] = running_var[c];
        return;
    }
    size_t hw = (size_t)s.h * s.w, m = (size_t)s.n * hw;
    double sum = 0.0;
    for (size_t j = threadIdx.x; j < m; j += RM_THREADS) sum += x[((j / hw) * s.c + c) * hw + j % hw];
    double mu = rm_block_sum(sum) / (double)m, sq = 0.0;
    for (size_t j = threadIdx.x; j < m; j += RM_THREADS) {
        double d = (double)x[((j / hw) * s.c + c) * hw + j % hw] - mu;
        sq += d * d;
    }
    sq = rm_block_sum(sq);
    if (threadIdx.x == 0) mean[c] = mu, var[c] = sq / (double)m;
}

static __global__ void batchnorm2d_forward_kernel(float *y, const float *x, const float *gamma, const float *beta,
                                                  const double *mean, const double *var, rm_shape s, double eps)
{
    size_t hw = (size_t)s.h * s.w;
    RM_CUDA_FOR(i, (size_t)s.n * s.c * hw)
    {
        size_t c = i / hw % s.c;
        double inv_std = 1.0 / sqrt(var[c] + eps);
        y[i] = (float)((double)gamma[c] * (((double)x[i] - mean[c]) * inv_std) + (double)beta[c]);
    }
}

/* running = (1 - momentum) running + momentum batch (unbiased variance). */
static __global__ void batchnorm2d_update_kernel(float *running_mean, float *running_var, const double *mean,
                                                 const double *var, int channels, double m, double mom)
{
    RM_CUDA_FOR(c, (size_t)channels)
    {
        double unbiased = var[c] * m / (m - 1.0);
        running_mean[c] = (float)((1.0 - mom) * running_mean[c] + mom * mean[c]);
        running_var[c] = (float)((1.0 - mom) * running_var[c] + mom * unbiased);
    }
}

/* One block per channel: dbeta = sum dy, dgamma = sum dy * xhat. */
static __global__ void batchnorm2d_backward_reduce_kernel(double *dgamma, double *dbeta, float *dw, float *db,
                                                          const float *x, const float *dy, const double *mean,
                                                          const double *var, rm_shape s, double eps)
{
    int c = blockIdx.x;
    size_t hw = (size_t)s.h * s.w, m = (size_t)s.n * hw;
    double mu = mean[c], inv_std = 1.0 / sqrt(var[c] + eps), sb = 0.0, sg = 0.0;
    for (size_t j = threadIdx.x; j < m; j += RM_THREADS) {
        size_t off = ((j / hw) * s.c + c) * hw + j % hw;
        double g = dy[off];
        sb += g;
        sg += g * (((double)x[off] - mu) * inv_std);
    }
    sb = rm_block_sum(sb);
    sg = rm_block_sum(sg);
    if (threadIdx.x == 0) {
        dgamma[c] = sg, dbeta[c] = sb;
        if (dw) dw[c] = (float)sg;
        if (db) db[c] = (float)sb;
    }
}

static __global__ void batchnorm2d_backward_kernel(float *dx, const float *x, const float *dy, const float *gamma,
                                                   const double *mean, const double *var, const double *dgamma,
                                                   const double *dbeta, rm_shape s, double eps, int training)
{
    size_t hw = (size_t)s.h * s.w;
    double m = (double)s.n * (double)hw;
    RM_CUDA_FOR(i, (size_t)s.n * s.c * hw)
    {
        size_t c = i / hw % s.c;
        double inv_std = 1.0 / sqrt(var[c] + eps), scale = (double)gamma[c] * inv_std;
        double mean_g = training ? dbeta[c] / m : 0.0, mean_gx = training ? dgamma[c] / m : 0.0;
        double xhat = ((double)x[i] - mean[c]) * inv_std;
        dx[i] = (float)(scale * ((double)dy[i] - mean_g - xhat * mean_gx));
    }
}

/* The CPU reference's checks: what each mode needs to exist. */
static int bn_check_call(const rm_layer_call *call, rm_shape s, const char *what, rm_err *e)
{
    char buf[64];
    if (call->training && (size_t)s.n * s.h * s.w < 2)
        return rm_errorf(e, RM_ERR_SHAPE, "batchnorm %s: training needs more than 1 value per channel, input is %s",
                         what, rm_shape_str(s, buf, sizeof buf));
    if (!call->training && (!call->params->running_mean.data || !call->params->running_var.data))
        return rm_errorf(e, RM_ERR_INVALID, "batchnorm %s: eval mode needs running statistics, none were given", what);
    return RM_OK;
}

extern "C" int rm_batchnorm2d_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    rm_shape s = x->shape;
    rm_layer_params *prm = call->params;
    int rc = bn_check_call(call, s, "forward", e);
    if (rc) return rc;
    void *ws, *owned;
    rc = rm_cuda_workspace(&ws, &owned, call, rm_batchnorm2d_workspace_cuda(call->cfg, &s, 1, s, 0),
                           "batchnorm forward", e);
    if (rc) return rc;
    double *mean = (double *)ws, *var = mean + s.c, eps = (double)call->cfg->eps;
    cudaStream_t st = rm_cuda_stream(call->be);
    batchnorm2d_stats_kernel<<<(unsigned)s.c, RM_THREADS, 0, st>>>(mean, var, x->data, s, call->training,
                                                                   prm->running_mean.data, prm->running_var.data);
    RM_CUDA_LAUNCHED(e, "batchnorm2d_stats_kernel");
    batchnorm2d_forward_kernel<<<rm_cuda_blocks(rm_shape_numel(s)), RM_THREADS, 0, st>>>(
        call->out->data, x->data, prm->w.data, prm->b.data, mean, var, s, eps);
    RM_CUDA_LAUNCHED(e, "batchnorm2d_forward_kernel");
    if (call->training && call->update_stats && prm->running_mean.data && prm->running_var.data) {
        batchnorm2d_update_kernel<<<rm_cuda_blocks((size_t)s.c), RM_THREADS, 0, st>>>(
            prm->running_mean.data, prm->running_var.data, mean, var, s.c, (double)s.n * s.h * s.w,
            (double)call->cfg->momentum);
        RM_CUDA_LAUNCHED(e, "batchnorm2d_update_kernel");
    }
    return rm_cuda_workspace_release(owned, call, e);
}

extern "C" int rm_batchnorm2d_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_shape s = x->shape;
    rm_layer_params *prm = call->params;
    int rc = bn_check_call(call, s, "backward", e);
    if (rc) return rc;
    void *ws, *owned;
    rc = rm_cuda_workspace(&ws, &owned, call, rm_batchnorm2d_workspace_cuda(call->cfg, &s, 1, s, 1),
                           "batchnorm backward", e);
    if (rc) return rc;
    double *mean = (double *)ws, *var = mean + s.c, *dgamma = var + s.c, *dbeta = dgamma + s.c;
    double eps = (double)call->cfg->eps;
    cudaStream_t st = rm_cuda_stream(call->be);
    batchnorm2d_stats_kernel<<<(unsigned)s.c, RM_THREADS, 0, st>>>(mean, var, x->data, s, call->training,
                                                                   prm->running_mean.data, prm->running_var.data);
    RM_CUDA_LAUNCHED(e, "batchnorm2d_stats_kernel");
    batchnorm2d_backward_reduce_kernel<<<(unsigned)s.c, RM_THREADS, 0, st>>>(dgamma, dbeta, prm->dw.data, prm->db.data,
                                                                             x->data, dy->data, mean, var, s, eps);
    RM_CUDA_LAUNCHED(e, "batchnorm2d_backward_reduce_kernel");
    if (dx && dx->data) {
        batchnorm2d_backward_kernel<<<rm_cuda_blocks(rm_shape_numel(s)), RM_THREADS, 0, st>>>(
            dx->data, x->data, dy->data, prm->w.data, mean, var, dgamma, dbeta, s, eps, call->training);
        RM_CUDA_LAUNCHED(e, "batchnorm2d_backward_kernel");
    }
    return rm_cuda_workspace_release(owned, call, e);
}
