/* Batch normalisation on the GPU, the CPU reference's semantics.
 *
 * Hand-written kernel library (also cublas's, and the fallback): the batch
 * statistics come from one block per channel, two passes in double (mean,
 * then squared deviations) with fixed-tree sums, and the backward recomputes
 * them with the same kernel, so forward and backward agree bit for bit and
 * every run gives the same bits.
 *
 * cudnn kernel library: cudnnBatchNormalizationForwardTraining / ForwardInference /
 * Backward (CUDNN_BATCHNORM_SPATIAL), with two deliberate departures from how
 * frameworks usually call them:
 *  - cuDNN is never handed the running statistics. Its forward then computes
 *    y from the same arguments whether or not this call should update them,
 *    so a recomputed forward (update_stats = 0) gives the first one's bits;
 *    when update_stats is set, our own kernel folds the batch statistics
 *    cuDNN saved (mean, 1/sqrt(var + eps)) into the running ones with the
 *    CPU reference's formula (unbiased variance, running = (1-m) running +
 *    m batch), once per step by the caller's contract.
 *  - The backward passes no saved statistics (savedMean = savedInvVariance
 *    = NULL): cuDNN recomputes them from x. The layer declares
 *    RM_READS_INPUTS only, so nothing saved by a forward may be assumed alive
 *    at the backward (the forward may have run many stages earlier, or been
 *    recomputed); x is what the plan keeps.
 * Eval-mode backward, a backward without dx, and an eps below cuDNN's
 * minimum run the hand-written kernels.
 *
 * Device workspace (every kernel library): 4*C doubles (the hand-written kernels'
 * mean, var, dgamma, dbeta; the cudnn path uses its first 2*C floats for the
 * saved statistics, or for dgamma / dbeta when the caller wants none). */
#include "cuda_kernel_libs.cuh"

extern "C" size_t rm_batchnorm2d_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                                int backward)
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

static int hw_forward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    rm_shape s = x->shape;
    rm_layer_params *prm = call->params;
    int rc = rm_batchnorm2d_check_call(call, s, "forward", e);
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

static int hw_backward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_shape s = x->shape;
    rm_layer_params *prm = call->params;
    int rc = rm_batchnorm2d_check_call(call, s, "backward", e);
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

#ifdef REMAT_HAVE_CUDNN
enum { BN_PLAN_TAG = 0x424e3244 }; /* "BN2D" */

typedef struct bn_plan {
    cudnnTensorDescriptor_t x, stats; /* n,c,h,w and 1,c,1,1 */
} bn_plan;

static void bn_plan_free(void *p)
{
    bn_plan *plan = (bn_plan *)p;
    if (!plan) return;
    if (plan->stats) cudnnDestroyTensorDescriptor(plan->stats);
    if (plan->x) cudnnDestroyTensorDescriptor(plan->x);
    free(plan);
}

static int bn_plan_create(bn_plan *plan, rm_shape s, rm_err *e)
{
    RM_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->x), e, "cudnnCreateTensorDescriptor(batchnorm x)");
    RM_CUDNN_CHECK(cudnnCreateTensorDescriptor(&plan->stats), e, "cudnnCreateTensorDescriptor(batchnorm stats)");
    RM_CUDNN_CHECK(cudnnSetTensor4dDescriptor(plan->x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, s.n, s.c, s.h, s.w), e,
                   "cudnnSetTensor4dDescriptor(batchnorm x)");
    RM_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(plan->stats, plan->x, CUDNN_BATCHNORM_SPATIAL), e,
                   "cudnnDeriveBNTensorDescriptor");
    return RM_OK;
}

/* The cached descriptors of shape s (*owned: not cached, the caller frees). */
static int bn_plan_get(bn_plan **out, int *owned, const rm_backend *be, rm_shape s, rm_err *e)
{
    *owned = 0;
    rm_cuda_plan_key key;
    memset(&key, 0, sizeof key);
    key.kind = BN_PLAN_TAG, key.v[0] = s.n, key.v[1] = s.c, key.v[2] = s.h, key.v[3] = s.w;
    if ((*out = (bn_plan *)rm_cuda_plan_find(be, &key))) return RM_OK;
    bn_plan *plan = (bn_plan *)calloc(1, sizeof *plan);
    if (!plan) return rm_errorf(e, RM_ERR_NOMEM, "batchnorm (cudnn): out of memory");
    int rc = bn_plan_create(plan, s, e);
    if (rc) {
        bn_plan_free(plan);
        return rc;
    }
    if (!rm_cuda_plan_put(be, &key, plan, bn_plan_free)) *owned = 1;
    *out = plan;
    return RM_OK;
}

/* cuDNN refuses eps below CUDNN_BN_MIN_EPSILON: 1e-5 up to cuDNN 7, 0 since
 * cuDNN 8. Under a 1e-5 minimum, the float 1e-5f a config holds is
 * 9.9999997e-6, a hair below: that one (within float rounding) is raised to
 * the minimum, a change of 2.5e-13 in var + eps, far under float
 * resolution. Any smaller eps: 0, and the caller falls back. */
static double bn_cudnn_eps(float eps)
{
    double d = (double)eps;
    if (d >= CUDNN_BN_MIN_EPSILON) return d;
    if (d >= CUDNN_BN_MIN_EPSILON * (1.0 - 1e-6)) return CUDNN_BN_MIN_EPSILON;
    return 0.0;
}

/* running = (1 - m) running + m batch, from cuDNN's saved mean and
 * 1/sqrt(var + eps); the variance folded in is the unbiased one, as the CPU
 * reference (and PyTorch) do. */
static __global__ void batchnorm2d_cudnn_update_kernel(float *running_mean, float *running_var, const float *save_mean,
                                                       const float *save_inv_std, int channels, double m, double mom,
                                                       double eps)
{
    RM_CUDA_FOR(c, (size_t)channels)
    {
        double inv = save_inv_std[c], var = 1.0 / (inv * inv) - eps;
        if (var < 0.0) var = 0.0;
        double unbiased = var * m / (m - 1.0);
        running_mean[c] = (float)((1.0 - mom) * running_mean[c] + mom * (double)save_mean[c]);
        running_var[c] = (float)((1.0 - mom) * running_var[c] + mom * unbiased);
    }
}

static int cudnn_bn_status(cudnnStatus_t st, const char *what, rm_err *e)
{
    if (st == CUDNN_STATUS_SUCCESS) return RM_OK;
    char detail[256] = "";
    cudnnGetLastErrorString(detail, sizeof detail);
    return rm_errorf(e, RM_ERR_DEVICE, "cudnn: %s failed: %s%s%s", what, cudnnGetErrorString(st), detail[0] ? ": " : "",
                     detail);
}

/* *done = 0: not for cuDNN (eps too small), or cuDNN answered
 * NOT_SUPPORTED; nothing was written and the caller falls back. */
static int cudnn_forward(const rm_layer_call *call, int *done, rm_err *e)
{
    *done = 0;
    const rm_tensor *x = call->in[0];
    rm_shape s = x->shape;
    rm_layer_params *prm = call->params;
    double eps = bn_cudnn_eps(call->cfg->eps);
    if (eps == 0.0) return RM_OK;
    bn_plan *plan;
    int owned_plan;
    int rc = bn_plan_get(&plan, &owned_plan, call->be, s, e);
    if (rc) return rc;
    void *ws, *owned;
    rc = rm_cuda_workspace(&ws, &owned, call, rm_batchnorm2d_workspace_cuda(call->cfg, &s, 1, s, 0),
                           "batchnorm forward (cudnn)", e);
    if (rc) {
        if (owned_plan) bn_plan_free(plan);
        return rc;
    }
    float *save_mean = (float *)ws, *save_inv = save_mean + s.c;
    const float one = 1.0f, zero = 0.0f;
    cudnnHandle_t h = rm_cuda_cudnn(call->be);
    cudnnStatus_t st;
    if (call->training)
        st = cudnnBatchNormalizationForwardTraining(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, plan->x, x->data, plan->x,
                                                    call->out->data, plan->stats, prm->w.data, prm->b.data,
                                                    (double)call->cfg->momentum, NULL, NULL, eps, save_mean, save_inv);
    else
        st = cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, plan->x, x->data, plan->x,
                                                     call->out->data, plan->stats, prm->w.data, prm->b.data,
                                                     prm->running_mean.data, prm->running_var.data, eps);
    if (!rm_cudnn_not_supported(st)) {
        rc = cudnn_bn_status(
            st, call->training ? "cudnnBatchNormalizationForwardTraining" : "cudnnBatchNormalizationForwardInference",
            e);
        if (!rc && call->training && call->update_stats && prm->running_mean.data && prm->running_var.data) {
            batchnorm2d_cudnn_update_kernel<<<rm_cuda_blocks((size_t)s.c), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
                prm->running_mean.data, prm->running_var.data, save_mean, save_inv, s.c, (double)s.n * s.h * s.w,
                (double)call->cfg->momentum, eps);
            cudaError_t cst = cudaGetLastError();
            if (cst != cudaSuccess)
                rc = rm_errorf(e, RM_ERR_DEVICE, "cuda: batchnorm2d_cudnn_update_kernel failed: %s",
                               cudaGetErrorString(cst));
        }
        *done = !rc;
    }
    int rc2 = rm_cuda_workspace_release(owned, call, e);
    if (owned_plan) bn_plan_free(plan);
    return rc ? rc : rc2;
}

static int cudnn_backward(const rm_layer_call *call, int *done, rm_err *e)
{
    *done = 0;
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_shape s = x->shape;
    rm_layer_params *prm = call->params;
    double eps = bn_cudnn_eps(call->cfg->eps);
    if (eps == 0.0 || !call->training || !dx || !dx->data) return RM_OK;
    bn_plan *plan;
    int owned_plan;
    int rc = bn_plan_get(&plan, &owned_plan, call->be, s, e);
    if (rc) return rc;
    void *ws, *owned;
    rc = rm_cuda_workspace(&ws, &owned, call, rm_batchnorm2d_workspace_cuda(call->cfg, &s, 1, s, 1),
                           "batchnorm backward (cudnn)", e);
    if (rc) {
        if (owned_plan) bn_plan_free(plan);
        return rc;
    }
    /* cuDNN always writes both parameter gradients: scratch for an absent one. */
    float *dgamma = prm->dw.data ? prm->dw.data : (float *)ws, *dbeta = prm->db.data ? prm->db.data : (float *)ws + s.c;
    const float one = 1.0f, zero = 0.0f;
    cudnnStatus_t st = cudnnBatchNormalizationBackward(
        rm_cuda_cudnn(call->be), CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, plan->x, x->data, plan->x, dy->data,
        plan->x, dx->data, plan->stats, prm->w.data, dgamma, dbeta, eps, NULL, NULL);
    if (!rm_cudnn_not_supported(st)) {
        rc = cudnn_bn_status(st, "cudnnBatchNormalizationBackward", e);
        *done = !rc;
    }
    int rc2 = rm_cuda_workspace_release(owned, call, e);
    if (owned_plan) bn_plan_free(plan);
    return rc ? rc : rc2;
}
#endif

/* The hand-written kernels: the handwritten and cublas libraries' (cuBLAS
 * has no batch norm), and the cudnn library's fallback. */
extern "C" int rm_batchnorm2d_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    return hw_forward(call, e);
}

extern "C" int rm_batchnorm2d_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    return hw_backward(call, e);
}

#ifdef REMAT_HAVE_CUDNN
static int cudnn_forward_call(const rm_layer_call *call, rm_err *e)
{
    int rc = rm_batchnorm2d_check_call(call, call->in[0]->shape, "forward", e), done = 0;
    if (rc) return rc;
    if ((rc = cudnn_forward(call, &done, e)) || done) return rc;
    rm_cuda_note_fallback(call->be);
    return hw_forward(call, e);
}

static int cudnn_backward_call(const rm_layer_call *call, rm_err *e)
{
    int rc = rm_batchnorm2d_check_call(call, call->in[0]->shape, "backward", e), done = 0;
    if (rc) return rc;
    if ((rc = cudnn_backward(call, &done, e)) || done) return rc;
    /* eval mode and dx-less calls are hand-written by design, not a fallback */
    if (call->training && call->din[0] && call->din[0]->data) rm_cuda_note_fallback(call->be);
    return hw_backward(call, e);
}
#endif

/* The workspace is the same in every library (NULL: the declared bound,
 * rm_batchnorm2d_workspace_cuda). */
extern "C" rm_layer_kernels rm_batchnorm2d_cuda_kernels(int lib)
{
    rm_layer_kernels k = {rm_batchnorm2d_forward_cuda, rm_batchnorm2d_backward_cuda, NULL};
#ifdef REMAT_HAVE_CUDNN
    if (lib == RM_CUDA_KERNELS_CUDNN) k = {cudnn_forward_call, cudnn_backward_call, NULL};
#else
    (void)lib;
#endif
    return k;
}
