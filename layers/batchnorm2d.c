/* 2-D batch normalisation over (N, H, W) per channel, PyTorch semantics:
 * training normalises with the batch mean and biased variance and, when asked,
 * folds them into running statistics (unbiased variance); eval uses the
 * running statistics. Backward declares RM_READS_INPUTS only: it recomputes
 * the batch statistics from x with the very function the forward uses, so no
 * saved-statistics tensor has to live between forward and backward. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "layers.h"

static int bn_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    char buf[64];
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "batchnorm: takes exactly 1 input, got %d", nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "batchnorm: empty input %s", rm_shape_str(x, buf, sizeof buf));
    if (!(cfg->eps > 0.0f)) return rm_errorf(e, RM_ERR_SHAPE, "batchnorm: eps must be > 0, got %g", (double)cfg->eps);
    if (!(cfg->momentum >= 0.0f && cfg->momentum <= 1.0f))
        return rm_errorf(e, RM_ERR_SHAPE, "batchnorm: momentum must be in [0, 1], got %g", (double)cfg->momentum);
    *out = x;
    return RM_OK;
}

static void bn_param_shapes(rm_shape *w, rm_shape *b, const rm_layer_config *cfg, const rm_shape *in, int nin)
{
    (void)cfg, (void)nin;
    /* gamma and beta only: the running statistics are buffers, not parameters. */
    *w = rm_shape_make(in[0].c, 1, 1, 1);
    *b = rm_shape_make(in[0].c, 1, 1, 1);
}

static double bn_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)in, (void)nin;
    /* Per element, training mode. Forward: mean 1, variance 3, normalise and
     * scale 4. Backward: recomputed statistics 4, x-hat 2, the two channel
     * sums 3, dx 4. */
    double elems = (double)rm_shape_numel(out);
    return backward ? 13.0 * elems : 8.0 * elems;
}

static void bn_init(rm_layer_params *p, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_rng *rng)
{
    (void)cfg, (void)in, (void)nin, (void)rng;
    rm_tensor *ones[] = {&p->w, &p->running_var}, *zeros[] = {&p->b, &p->running_mean};
    for (int t = 0; t < 2; t++) {
        if (ones[t]->data)
            for (size_t i = 0; i < rm_tensor_numel(ones[t]); i++) ones[t]->data[i] = 1.0f;
        if (zeros[t]->data) memset(zeros[t]->data, 0, rm_tensor_numel(zeros[t]) * sizeof(float));
    }
}

/* Sums of a channel run in BN_LANES double accumulators, element i of each
 * plane into lane i % BN_LANES, the lanes added in a fixed tree at the end:
 * independent additions the CPU overlaps (one accumulator is a chain of
 * dependent adds, four times slower), in an order fixed by the shapes alone. */
#define BN_LANES 8

static double bn_lanes_total(const double *acc)
{
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* Batch mean and biased variance of channel c, in double, two passes (the
 * one-pass formula cancels badly when the mean is large). The forward and the
 * backward both call this, which is what makes the backward's recomputed
 * statistics bit-identical to the forward's. */
static void bn_batch_stats(double *mean, double *var, const float *x /* n x c x h x w */, rm_shape s, int c)
{
    size_t hw = (size_t)s.h * s.w, m = (size_t)s.n * hw;
    double acc[BN_LANES] = {0};
    for (int n = 0; n < s.n; n++) {
        const float *plane = x + ((size_t)n * s.c + c) * hw;
        size_t i = 0;
        for (; i + BN_LANES <= hw; i += BN_LANES)
            for (size_t l = 0; l < BN_LANES; l++) acc[l] += plane[i + l];
        for (size_t l = 0; i + l < hw; l++) acc[l] += plane[i + l];
    }
    double mu = bn_lanes_total(acc) / (double)m;
    double sq[BN_LANES] = {0};
    for (int n = 0; n < s.n; n++) {
        const float *plane = x + ((size_t)n * s.c + c) * hw;
        size_t i = 0;
        for (; i + BN_LANES <= hw; i += BN_LANES)
            for (size_t l = 0; l < BN_LANES; l++) {
                double d = (double)plane[i + l] - mu;
                sq[l] += d * d;
            }
        for (size_t l = 0; i + l < hw; l++) {
            double d = (double)plane[i + l] - mu;
            sq[l] += d * d;
        }
    }
    *mean = mu;
    *var = bn_lanes_total(sq) / (double)m;
}

/* The statistics one call normalises channel c with: the batch's in training,
 * the running ones in eval. */
static void bn_channel_stats(double *mean, double *var, const rm_layer_call *call, const float *x, rm_shape s, int c)
{
    if (call->training) {
        bn_batch_stats(mean, var, x, s, c);
    } else {
        *mean = call->params->running_mean.data[c];
        *var = call->params->running_var.data[c];
    }
}

/* Errors shared by forward and backward, CPU and CUDA (declared in
 * cuda/layer_cuda.h): what each mode needs to exist. */
int rm_batchnorm2d_check_call(const rm_layer_call *call, rm_shape s, const char *what, rm_err *e)
{
    char buf[64];
    if (call->training && (size_t)s.n * s.h * s.w < 2)
        return rm_errorf(e, RM_ERR_SHAPE, "batchnorm %s: training needs more than 1 value per channel, input is %s",
                         what, rm_shape_str(s, buf, sizeof buf));
    if (!call->training && (!call->params->running_mean.data || !call->params->running_var.data))
        return rm_errorf(e, RM_ERR_INVALID, "batchnorm %s: eval mode needs running statistics, none were given", what);
    return RM_OK;
}

static int bn_forward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0];
    rm_shape s = x->shape;
    rm_layer_params *prm = call->params;
    int rc = rm_batchnorm2d_check_call(call, s, "forward", e);
    if (rc) return rc;
    size_t hw = (size_t)s.h * s.w, m = (size_t)s.n * hw;
    int update = call->training && call->update_stats && prm->running_mean.data && prm->running_var.data;
    int nt = rm_call_threads(call, rm_shape_numel(s));
    RM_CPU_PARALLEL_FOR(nt)
    for (int c = 0; c < s.c; c++) {
        double mean, var, gamma = prm->w.data[c], beta = prm->b.data[c];
        bn_channel_stats(&mean, &var, call, x->data, s, c);
        double inv_std = 1.0 / sqrt(var + (double)call->cfg->eps);
        for (int n = 0; n < s.n; n++) {
            size_t off = ((size_t)n * s.c + c) * hw;
            const float *xp = x->data + off;
            float *yp = call->out->data + off;
            RM_CPU_SIMD
            for (size_t i = 0; i < hw; i++) yp[i] = (float)(gamma * (((double)xp[i] - mean) * inv_std) + beta);
        }
        if (update) {
            /* PyTorch folds the unbiased variance into the running estimate. */
            double mom = call->cfg->momentum, unbiased = var * (double)m / (double)(m - 1);
            prm->running_mean.data[c] = (float)((1.0 - mom) * prm->running_mean.data[c] + mom * mean);
            prm->running_var.data[c] = (float)((1.0 - mom) * prm->running_var.data[c] + mom * unbiased);
        }
    }
    return RM_OK;
}

static int bn_backward(const rm_layer_call *call, rm_err *e)
{
    const rm_tensor *x = call->in[0], *dy = call->dout;
    rm_tensor *dx = call->din[0];
    rm_shape s = x->shape;
    rm_layer_params *prm = call->params;
    int rc = rm_batchnorm2d_check_call(call, s, "backward", e);
    if (rc) return rc;
    size_t hw = (size_t)s.h * s.w;
    double m = (double)s.n * (double)hw;
    int nt = rm_call_threads(call, rm_shape_numel(s));
    RM_CPU_PARALLEL_FOR(nt)
    for (int c = 0; c < s.c; c++) {
        double mean, var, gamma = prm->w.data[c];
        bn_channel_stats(&mean, &var, call, x->data, s, c);
        double inv_std = 1.0 / sqrt(var + (double)call->cfg->eps);
        /* dbeta = sum dy, dgamma = sum dy * xhat. */
        double db[BN_LANES] = {0}, dg[BN_LANES] = {0};
        for (int n = 0; n < s.n; n++) {
            size_t off = ((size_t)n * s.c + c) * hw;
            const float *gp = dy->data + off, *xp = x->data + off;
            size_t i = 0;
            for (; i + BN_LANES <= hw; i += BN_LANES)
                for (size_t l = 0; l < BN_LANES; l++) {
                    db[l] += gp[i + l];
                    dg[l] += gp[i + l] * (((double)xp[i + l] - mean) * inv_std);
                }
            for (size_t l = 0; i + l < hw; l++) {
                db[l] += gp[i + l];
                dg[l] += gp[i + l] * (((double)xp[i + l] - mean) * inv_std);
            }
        }
        double dbeta = bn_lanes_total(db), dgamma = bn_lanes_total(dg);
        if (prm->dw.data) prm->dw.data[c] = (float)dgamma;
        if (prm->db.data) prm->db.data[c] = (float)dbeta;
        if (!dx || !dx->data) continue;
        /* Training: the mean and variance depend on x too, which subtracts the
         * gradient's projection onto 1 and onto xhat. Eval: a plain affine map. */
        double scale = gamma * inv_std, mean_g = call->training ? dbeta / m : 0.0,
               mean_gx = call->training ? dgamma / m : 0.0;
        for (int n = 0; n < s.n; n++) {
            size_t off = ((size_t)n * s.c + c) * hw;
            RM_CPU_SIMD
            for (size_t i = 0; i < hw; i++) {
                double xhat = ((double)x->data[off + i] - mean) * inv_std;
                dx->data[off + i] = (float)(scale * ((double)dy->data[off + i] - mean_g - xhat * mean_gx));
            }
        }
    }
    return RM_OK;
}

const rm_layer_desc rm_batchnorm2d_desc = {
    .kind = RM_LAYER_BATCHNORM2D,
    .name = "batchnorm",
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = bn_infer,
    .param_shapes = bn_param_shapes,
    .flops = bn_flops,
    .init = bn_init,
    .forward_ref = bn_forward,
    .backward_ref = bn_backward,
    .kernels = rm_batchnorm2d_kernels,
};
