/* Multi-head self-attention's core: what nn.MultiheadAttention computes
 * between its two projections (in_proj, a 1x1 conv to 3 D channels, and
 * out_proj, a 1x1 conv back to D). The input N x 3D x H x W holds q, k and v
 * as in_proj's rows do (channels [0, D), [D, 2D), [2D, 3D)); its T = H W
 * positions are the tokens. Head h owns hd = D / heads channels of each:
 *
 *   P[t][s] = softmax over s of (q_t . k_s) / sqrt(hd)
 *   o[h hd + j][t] = sum_s P[t][s] v[h hd + j][s]
 *
 * per sample, output N x D x H x W. Backward declares RM_READS_INPUTS: it
 * recomputes P from q and k (as FlashAttention does) rather than keeping
 * the N x heads x T x T probabilities, so the scheduler sees exactly what
 * the layer holds between its passes: nothing but its input. The workspace
 * holds one head's P and dP at a time; every sum is in double, in an order
 * fixed by the shapes. */
#include <math.h>
#include <stdlib.h>

#include "attention.h"

static int attn_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    char buf[64];
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "attention: takes exactly 1 input, got %d", nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "attention: empty input %s", rm_shape_str(x, buf, sizeof buf));
    if (cfg->heads < 1) return rm_errorf(e, RM_ERR_SHAPE, "attention: heads must be >= 1, got %d", cfg->heads);
    if (x.c % (3 * cfg->heads))
        return rm_errorf(e, RM_ERR_SHAPE,
                         "attention: the input's %d channels are not q, k and v of %d heads each (3 x heads must "
                         "divide them)",
                         x.c, cfg->heads);
    *out = rm_shape_make(x.n, x.c / 3, x.h, x.w);
    return RM_OK;
}

/* Per sample and head, T x T x hd multiply-adds for q k^T and for P v, and
 * about 5 operations per score for the softmax. Backward: the recomputed
 * scores and softmax, then dv, dP, dq and dk (four products) and dS. */
static double attn_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)nin;
    const double t = (double)in[0].h * in[0].w, scores = (double)in[0].n * cfg->heads * t * t;
    const double products = 2.0 * (double)in[0].n * t * t * out.c; /* one product over all heads */
    return backward ? 6.0 * products + 8.0 * scores : 2.0 * products + 5.0 * scores;
}

/* One head's P and dP, T x T doubles each. */
static size_t attn_workspace_bytes(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)nin, (void)out;
    const size_t t = (size_t)in[0].h * in[0].w;
    return (backward ? 2 : 1) * t * t * sizeof(double);
}

/* P of one head: each row the softmax of its scaled scores (the row's
 * maximum subtracted first, as PyTorch's softmax does). */
static void attn_probs(double *p, const rm_attn_head *a)
{
    const double scale = 1.0 / sqrt((double)a->hd);
    for (size_t t = 0; t < a->t; t++) {
        double *row = p + t * a->t, mx = -INFINITY, sum = 0;
        for (size_t s = 0; s < a->t; s++) {
            double dot = 0;
            for (size_t j = 0; j < a->hd; j++) dot += (double)a->q[j * a->t + t] * a->k[j * a->t + s];
            row[s] = dot * scale;
            if (row[s] > mx) mx = row[s];
        }
        for (size_t s = 0; s < a->t; s++) sum += row[s] = exp(row[s] - mx);
        for (size_t s = 0; s < a->t; s++) row[s] /= sum;
    }
}

static int attn_forward(const rm_layer_call *call, rm_err *e)
{
    const rm_shape s = call->in[0]->shape;
    const int heads = call->cfg->heads;
    void *ws, *owned;
    int rc = rm_layer_workspace(&ws, &owned, call, attn_workspace_bytes(call->cfg, &s, 1, s, 0), "attention", e);
    if (rc) return rc;
    double *p = ws;
    const size_t t = (size_t)s.h * s.w;
    const int d = s.c / 3;
    for (int n = 0; n < s.n; n++)
        for (int h = 0; h < heads; h++) {
            const rm_attn_head a = rm_attn_head_of(call->in[0]->data, s, heads, n, h);
            attn_probs(p, &a);
            float *o = call->out->data + ((size_t)n * d + (size_t)h * a.hd) * t;
            for (size_t j = 0; j < a.hd; j++)
                for (size_t i = 0; i < t; i++) {
                    double acc = 0;
                    for (size_t k = 0; k < t; k++) acc += p[i * t + k] * a.v[j * t + k];
                    o[j * t + i] = (float)acc;
                }
        }
    free(owned);
    return RM_OK;
}

/* With dP = dO^T v and dS = P (dP - rowsum(P dP)):
 * dv = dO P (over t), dq = dS k / sqrt(hd), dk = dS^T q / sqrt(hd). */
static int attn_backward(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    const rm_shape s = call->in[0]->shape;
    const int heads = call->cfg->heads;
    void *ws, *owned;
    int rc = rm_layer_workspace(&ws, &owned, call, attn_workspace_bytes(call->cfg, &s, 1, s, 1), "attention", e);
    if (rc) return rc;
    const size_t t = (size_t)s.h * s.w;
    double *p = ws, *ds = p + t * t;
    const int d = s.c / 3;
    for (int n = 0; n < s.n; n++)
        for (int h = 0; h < heads; h++) {
            const rm_attn_head a = rm_attn_head_of(call->in[0]->data, s, heads, n, h);
            const double scale = 1.0 / sqrt((double)a.hd);
            const float *dout = call->dout->data + ((size_t)n * d + (size_t)h * a.hd) * t;
            float *dq = call->din[0]->data + (a.q - call->in[0]->data),
                  *dk = call->din[0]->data + (a.k - call->in[0]->data),
                  *dv = call->din[0]->data + (a.v - call->in[0]->data);
            attn_probs(p, &a);
            for (size_t i = 0; i < t; i++) {
                double rowsum = 0;
                for (size_t k = 0; k < t; k++) {
                    double dp = 0;
                    for (size_t j = 0; j < a.hd; j++) dp += (double)dout[j * t + i] * a.v[j * t + k];
                    ds[i * t + k] = dp;
                    rowsum += p[i * t + k] * dp;
                }
                for (size_t k = 0; k < t; k++) ds[i * t + k] = p[i * t + k] * (ds[i * t + k] - rowsum);
            }
            for (size_t j = 0; j < a.hd; j++)
                for (size_t k = 0; k < t; k++) {
                    double sv = 0, sk = 0, sq = 0;
                    for (size_t i = 0; i < t; i++) {
                        sv += p[i * t + k] * dout[j * t + i];
                        sk += ds[i * t + k] * a.q[j * t + i];
                        sq += ds[k * t + i] * a.k[j * t + i];
                    }
                    dv[j * t + k] = (float)sv;
                    dk[j * t + k] = (float)(sk * scale);
                    dq[j * t + k] = (float)(sq * scale);
                }
        }
    free(owned);
    return RM_OK;
}

const rm_layer_desc rm_attention_desc = {
    .kind = RM_LAYER_ATTENTION,
    .name = "attention",
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = attn_infer,
    .flops = attn_flops,
    .forward_ref = attn_forward,
    .backward_ref = attn_backward,
    .workspace_bytes = attn_workspace_bytes,
    .kernels = rm_attention_kernels,
};
