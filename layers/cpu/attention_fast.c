/* attention in the CPU backend's fast kernel library: the reference's
 * products (../attention.c) as single-precision BLIS ones (rm_cpu_sgemm),
 * one sample and head at a time. A head's q, k and v are hd x T row-major
 * matrices as they lie (channel-major, the T positions contiguous), so every
 * product reads them in place. The workspace is the declaration's (one
 * head's T x T doubles, twice in backward): here two T x T floats. */
#include <math.h>
#include <stdlib.h>

#include "attention.h"
#include "backend_cpu.h"
#include "cpu_blas.h"
#include "cpu_kernels.h"
#include "layer_cpu.h"
#include "layers.h"

/* p = the row softmax of q^T k / sqrt(hd) (t x t), each row's maximum
 * subtracted first; the rows split between nt threads. */
static int probs(float *p, const rm_attn_head *a, const rm_backend *be, int nt, rm_err *e)
{
    int rc = rm_cpu_sgemm(be, 1, 0, a->t, a->t, a->hd, a->q, a->t, a->k, a->t, 0.0f, p, a->t, "attention scores", e);
    if (rc) return rc;
    const float scale = (float)(1.0 / sqrt((double)a->hd));
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t i = 0; i < a->t; i++) {
        float *row = p + i * a->t, mx = -INFINITY;
        for (size_t s = 0; s < a->t; s++) mx = fmaxf(mx, row[s] *= scale);
        double sum = 0;
        for (size_t s = 0; s < a->t; s++) sum += row[s] = expf(row[s] - mx);
        const float inv = (float)(1.0 / sum);
        for (size_t s = 0; s < a->t; s++) row[s] *= inv;
    }
    return RM_OK;
}

/* The workspace as two t x t float blocks. */
static int blocks(float **p, float **q, void **owned, const rm_layer_call *call, int backward, rm_err *e)
{
    const rm_shape s = call->in[0]->shape;
    const size_t tt = (size_t)s.h * s.w * (size_t)s.h * s.w;
    void *ws;
    int rc = rm_layer_workspace(&ws, owned, call, rm_attention_desc.workspace_bytes(call->cfg, &s, 1, s, backward),
                                "attention", e);
    if (rc) return rc;
    *p = ws, *q = *p + tt;
    return RM_OK;
}

/* o = v p^T per head. */
static int attention_fast_forward(const rm_layer_call *call, rm_err *e)
{
    const rm_shape s = call->in[0]->shape;
    float *p, *unused;
    void *owned;
    int rc = blocks(&p, &unused, &owned, call, 0, e);
    for (int n = 0; !rc && n < s.n; n++)
        for (int h = 0; !rc && h < call->cfg->heads; h++) {
            const rm_attn_head a = rm_attn_head_of(call->in[0]->data, s, call->cfg->heads, n, h);
            float *o = call->out->data + ((size_t)n * s.c / 3 + h * a.hd) * a.t;
            rc = probs(p, &a, call->be, rm_call_threads(call, a.t * a.t), e);
            if (!rc) rc = rm_cpu_sgemm(call->be, 0, 1, a.hd, a.t, a.t, a.v, a.t, p, a.t, 0.0f, o, a.t, "attention", e);
        }
    free(owned);
    return rc;
}

/* With P recomputed: dv = dO P, dP = dO^T v, dS = P (dP - rowsum(P dP)),
 * dq = k dS^T / sqrt(hd), dk = q dS / sqrt(hd). */
static int attention_fast_backward(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    const rm_shape s = call->in[0]->shape;
    float *p, *ds;
    void *owned;
    int rc = blocks(&p, &ds, &owned, call, 1, e);
    const float *x = call->in[0]->data;
    float *dx = call->din[0]->data;
    for (int n = 0; !rc && n < s.n; n++)
        for (int h = 0; !rc && h < call->cfg->heads; h++) {
            const rm_attn_head a = rm_attn_head_of(x, s, call->cfg->heads, n, h);
            const size_t t = a.t;
            const float *dout = call->dout->data + ((size_t)n * s.c / 3 + h * a.hd) * t;
            float *dq = dx + (a.q - x), *dk = dx + (a.k - x), *dv = dx + (a.v - x);
            const float scale = (float)(1.0 / sqrt((double)a.hd));
            const int nt = rm_call_threads(call, t * t);
            rc = probs(p, &a, call->be, nt, e);
            if (!rc) rc = rm_cpu_sgemm(call->be, 0, 0, a.hd, t, t, dout, t, p, t, 0.0f, dv, t, "attention dv", e);
            if (!rc) rc = rm_cpu_sgemm(call->be, 1, 0, t, t, a.hd, dout, t, a.v, t, 0.0f, ds, t, "attention dP", e);
            if (rc) break;
            RM_CPU_PARALLEL_FOR(nt)
            for (size_t i = 0; i < t; i++) {
                float *pr = p + i * t, *dr = ds + i * t;
                double dot = 0;
                for (size_t k = 0; k < t; k++) dot += (double)pr[k] * dr[k];
                for (size_t k = 0; k < t; k++) dr[k] = pr[k] * (dr[k] - (float)dot) * scale;
            }
            if (!rc) rc = rm_cpu_sgemm(call->be, 0, 1, a.hd, t, t, a.k, t, ds, t, 0.0f, dq, t, "attention dq", e);
            if (!rc) rc = rm_cpu_sgemm(call->be, 0, 0, a.hd, t, t, a.q, t, ds, t, 0.0f, dk, t, "attention dk", e);
        }
    free(owned);
    return rc;
}

rm_layer_kernels rm_attention_cpu_kernels(int lib)
{
    rm_layer_kernels k = {NULL, NULL, NULL}; /* the reference (attention.c) */
    if (lib == RM_CPU_KERNELS_FAST) k = (rm_layer_kernels){attention_fast_forward, attention_fast_backward, NULL};
    return k;
}
