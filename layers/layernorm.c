/* Layer normalisation over the channels at each position (n, y, x), with a
 * scale and a shift per channel: PyTorch's nn.LayerNorm(C) applied to the
 * channels-last view of an N x C x H x W tensor (ConvNeXt's), or to tokens
 * laid out N x D x T x 1 (a transformer's, each token a column).
 *
 *   y = (x - mean) / sqrt(var + eps) * gamma[c] + beta[c]
 *
 * mean and the biased var over the C channels of the position, as PyTorch;
 * the same in training and evaluation (no running statistics). Backward
 * declares RM_READS_INPUTS: it recomputes each position's statistics with
 * the forward's own function. Every sum is in double, in an order fixed by
 * the shapes (each one thread's, so the bits do not depend on the thread
 * count); the statistics of all positions live in the workspace. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_kernels.h"
#include "layers.h"

static int ln_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    char buf[64];
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "layernorm: takes exactly 1 input, got %d", nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "layernorm: empty input %s", rm_shape_str(x, buf, sizeof buf));
    if (!(cfg->eps > 0.0f)) return rm_errorf(e, RM_ERR_SHAPE, "layernorm: eps must be > 0, got %g", (double)cfg->eps);
    *out = x;
    return RM_OK;
}

static void ln_param_shapes(rm_shape *w, rm_shape *b, const rm_layer_config *cfg, const rm_shape *in, int nin)
{
    (void)cfg, (void)nin;
    *w = rm_shape_make(in[0].c, 1, 1, 1);
    *b = rm_shape_make(in[0].c, 1, 1, 1);
}

/* Per element. Forward: mean 1, variance 3, normalise and scale 4.
 * Backward: statistics again 4, x-hat 2, the two position sums 4, dx 4,
 * the parameters' two sums 3. */
static double ln_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)in, (void)nin;
    double elems = (double)rm_shape_numel(out);
    return backward ? 17.0 * elems : 8.0 * elems;
}

static void ln_init(rm_layer_params *p, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_rng *rng)
{
    (void)cfg, (void)in, (void)nin, (void)rng;
    for (size_t i = 0; i < rm_tensor_numel(&p->w); i++) p->w.data[i] = 1.0f;
    memset(p->b.data, 0, rm_tensor_numel(&p->b) * sizeof(float));
}

/* The mean and 1/sqrt(var + eps) of every position: 2 doubles each. */
static size_t ln_workspace_bytes(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)nin, (void)out, (void)backward;
    return 2 * (size_t)in[0].n * (size_t)in[0].h * (size_t)in[0].w * sizeof(double);
}

/* stats[2p], stats[2p + 1]: mean and 1/sqrt(var + eps) of position p (n, pixel);
 * the positions split between nt threads (each sum one thread's, in order). */
static void ln_stats(double *stats, const float *x, rm_shape s, double eps, int nt)
{
    const size_t plane = (size_t)s.h * s.w, positions = (size_t)s.n * plane;
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t p = 0; p < positions; p++) {
        const float *xp = x + p / plane * s.c * plane + p % plane;
        double sum = 0, sq = 0;
        for (int c = 0; c < s.c; c++) sum += xp[(size_t)c * plane];
        double mean = sum / s.c;
        for (int c = 0; c < s.c; c++) {
            double d = xp[(size_t)c * plane] - mean;
            sq += d * d;
        }
        stats[2 * p] = mean, stats[2 * p + 1] = 1.0 / sqrt(sq / s.c + eps);
    }
}

/* The workspace, holding every position's statistics of the call's input
 * (forward and backward both start here); *owned as rm_layer_workspace's. */
static int ln_stats_of_call(double **stats, void **owned, const rm_layer_call *call, rm_err *e)
{
    const rm_shape s = call->in[0]->shape;
    void *ws;
    int rc = rm_layer_workspace(&ws, owned, call, ln_workspace_bytes(call->cfg, &s, 1, s, 0), "layernorm", e);
    if (rc) return rc;
    *stats = ws;
    ln_stats(*stats, call->in[0]->data, s, call->cfg->eps, rm_call_threads(call, rm_shape_numel(s)));
    return RM_OK;
}

static int ln_forward(const rm_layer_call *call, rm_err *e)
{
    const rm_shape s = call->in[0]->shape;
    double *stats;
    void *owned;
    int rc = ln_stats_of_call(&stats, &owned, call, e);
    if (rc) return rc;
    const size_t plane = (size_t)s.h * s.w;
    const float *x = call->in[0]->data, *g = call->params->w.data, *b = call->params->b.data;
    const int planes = s.n * s.c;
    RM_CPU_PARALLEL_FOR(rm_call_threads(call, rm_shape_numel(s)))
    for (int nc = 0; nc < planes; nc++) {
        const int n = nc / s.c, c = nc % s.c;
        for (size_t i = 0; i < plane; i++) {
            size_t k = (size_t)nc * plane + i;
            const double *st = stats + 2 * ((size_t)n * plane + i);
            call->out->data[k] = (float)((x[k] - st[0]) * st[1] * g[c] + b[c]);
        }
    }
    free(owned);
    return RM_OK;
}

/* With xh = (x - mean) r and gx = dy gamma at one position:
 * dx = r (gx - mean_c(gx) - xh mean_c(gx xh)); dgamma = sum dy xh; dbeta = sum dy.
 * dx by positions, the parameters' sums by channels, split between threads. */
static int ln_backward(const rm_layer_call *call, rm_err *e)
{
    const rm_shape s = call->in[0]->shape;
    double *stats;
    void *owned;
    int rc = ln_stats_of_call(&stats, &owned, call, e);
    if (rc) return rc;
    const size_t plane = (size_t)s.h * s.w, positions = (size_t)s.n * plane;
    const int nt = rm_call_threads(call, rm_shape_numel(s));
    const float *x = call->in[0]->data, *dy = call->dout->data, *g = call->params->w.data;
    float *dx = call->din[0] ? call->din[0]->data : NULL;
    if (dx) {
        RM_CPU_PARALLEL_FOR(nt)
        for (size_t p = 0; p < positions; p++) {
            const double *st = stats + 2 * p;
            const size_t base = p / plane * s.c * plane + p % plane;
            double sg = 0, sgx = 0;
            for (int c = 0; c < s.c; c++) {
                size_t k = base + (size_t)c * plane;
                double gx = (double)dy[k] * g[c];
                sg += gx, sgx += gx * (x[k] - st[0]) * st[1];
            }
            sg /= s.c, sgx /= s.c;
            for (int c = 0; c < s.c; c++) {
                size_t k = base + (size_t)c * plane;
                double xh = (x[k] - st[0]) * st[1];
                dx[k] = (float)(st[1] * ((double)dy[k] * g[c] - sg - xh * sgx));
            }
        }
    }
    float *dg = call->params->dw.data, *db = call->params->db.data;
    if (dg || db) {
        RM_CPU_PARALLEL_FOR(nt)
        for (int c = 0; c < s.c; c++) {
            double sg = 0, sb = 0;
            for (int n = 0; n < s.n; n++)
                for (size_t i = 0; i < plane; i++) {
                    size_t k = ((size_t)n * s.c + c) * plane + i;
                    const double *st = stats + 2 * ((size_t)n * plane + i);
                    sg += (double)dy[k] * (x[k] - st[0]) * st[1];
                    sb += dy[k];
                }
            if (dg) dg[c] = (float)sg;
            if (db) db[c] = (float)sb;
        }
    }
    free(owned);
    return RM_OK;
}

const rm_layer_desc rm_layernorm_desc = {
    .kind = RM_LAYER_LAYERNORM,
    .name = "layernorm",
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = ln_infer,
    .param_shapes = ln_param_shapes,
    .flops = ln_flops,
    .init = ln_init,
    .forward_ref = ln_forward,
    .backward_ref = ln_backward,
    .workspace_bytes = ln_workspace_bytes,
    .kernels = rm_layernorm_kernels,
};
