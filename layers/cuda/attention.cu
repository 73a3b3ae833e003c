/* Multi-head self-attention's core on the GPU (layers/attention.c): one
 * thread per score for the products q k^T and dO^T v, one per row of scores
 * for the softmax and for dS, one per element for the output and for the
 * input's gradient. Every sum is in double over the CPU reference's index, in
 * its order. Unlike the reference, which holds one head at a time, the
 * workspace holds P of every sample and head (and dS too in backward). */
#include <math.h>

#include "cuda_common.cuh"

/* A call's sizes: t positions, heads of hd channels, d = heads hd. */
typedef struct attn_dims {
    size_t t;
    int heads, hd, d;
} attn_dims;

static attn_dims attn_dims_of(const rm_layer_call *call)
{
    const rm_shape s = call->in[0]->shape;
    attn_dims g = {(size_t)s.h * s.w, call->cfg->heads, s.c / 3 / call->cfg->heads, s.c / 3};
    return g;
}

/* Doubles of P (or of dS) over every sample and head. */
static size_t attn_scores(const rm_shape *in, int heads)
{
    const size_t t = (size_t)in->h * in->w;
    return (size_t)in->n * heads * t * t;
}

extern "C" size_t rm_attention_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                              int backward)
{
    (void)nin, (void)out;
    return (backward ? 2 : 1) * attn_scores(in, cfg->heads) * sizeof(double);
}

/* Where head bh (= n heads + h) starts in a tensor of c channels a sample:
 * its first channel's row (q's in the input, when c is 3 d). */
__device__ inline size_t head_at(size_t bh, int c, attn_dims g)
{
    return (bh / g.heads * c + bh % g.heads * g.hd) * g.t;
}

/* out[bh][i][s] = scale sum_j a[j][i] b[j][s], with a and b head bh's rows
 * in tensors of ca and cb channels a sample: the scores q k^T (scaled) and
 * backward's dP = dO^T v. */
static __global__ void attn_products_kernel(double *out, const float *a, int ca, const float *b, int cb, attn_dims g,
                                            size_t count, double scale)
{
    RM_CUDA_FOR(k, count)
    {
        const size_t s = k % g.t, i = k / g.t % g.t, bh = k / g.t / g.t;
        const float *ar = a + head_at(bh, ca, g), *br = b + head_at(bh, cb, g);
        double dot = 0;
        for (int j = 0; j < g.hd; j++) dot += (double)ar[(size_t)j * g.t + i] * br[(size_t)j * g.t + s];
        out[k] = dot * scale;
    }
}

/* Each row of scores in place to its softmax, the row's maximum subtracted first. */
static __global__ void attn_softmax_kernel(double *p, size_t t, size_t rows)
{
    RM_CUDA_FOR(r, rows)
    {
        double *row = p + r * t, mx = -INFINITY, sum = 0;
        for (size_t s = 0; s < t; s++)
            if (row[s] > mx) mx = row[s];
        for (size_t s = 0; s < t; s++) sum += row[s] = exp(row[s] - mx);
        for (size_t s = 0; s < t; s++) row[s] /= sum;
    }
}

/* dP in place to dS = P (dP - rowsum(P dP)), a row at a time. */
static __global__ void attn_ds_kernel(double *ds, const double *p, size_t t, size_t rows)
{
    RM_CUDA_FOR(r, rows)
    {
        const double *pr = p + r * t;
        double *dr = ds + r * t, rowsum = 0;
        for (size_t s = 0; s < t; s++) rowsum += pr[s] * dr[s];
        for (size_t s = 0; s < t; s++) dr[s] = pr[s] * (dr[s] - rowsum);
    }
}

/* o[n][h hd + j][i] = sum_s P[bh][i][s] v[j][s]. */
static __global__ void attn_output_kernel(float *o, const double *p, const float *x, attn_dims g, size_t count)
{
    RM_CUDA_FOR(k, count)
    {
        const size_t i = k % g.t, c = k / g.t % (size_t)g.d, n = k / g.t / (size_t)g.d;
        const size_t bh = n * g.heads + c / g.hd, j = c % g.hd;
        const double *pr = p + (bh * g.t + i) * g.t;
        const float *v = x + head_at(bh, 3 * g.d, g) + (2 * (size_t)g.d + j) * g.t;
        double acc = 0;
        for (size_t s = 0; s < g.t; s++) acc += pr[s] * v[s];
        o[k] = (float)acc;
    }
}

/* The input's gradient, position s of row j of head bh's q, k or v (part 0,
 * 1, 2): dq = dS k scale, dk = dS^T q scale, dv = P^T dO, each a sum over
 * i of a column (or, for dq, a row) of dS or P times a row of k, q or dO. */
static __global__ void attn_dx_kernel(float *dx, const double *p, const double *ds, const float *x, const float *dy,
                                      attn_dims g, size_t count, double scale)
{
    RM_CUDA_FOR(k, count)
    {
        const size_t s = k % g.t, c = k / g.t % (3 * (size_t)g.d), n = k / g.t / (3 * (size_t)g.d);
        const int part = (int)(c / g.d), j = (int)(c % g.d % g.hd);
        const size_t bh = n * g.heads + c % g.d / g.hd, row = (size_t)j * g.t;
        const float *q = x + head_at(bh, 3 * g.d, g), *kr = q + (size_t)g.d * g.t;
        const float *f = part == 2 ? dy + head_at(bh, g.d, g) + row : part == 1 ? q + row : kr + row;
        const double *m = (part == 2 ? p : ds) + bh * g.t * g.t;
        const size_t m0 = part ? s : s * g.t, step = part ? g.t : 1; /* column s, or for dq row s */
        double sum = 0;
        for (size_t i = 0; i < g.t; i++) sum += m[m0 + i * step] * f[i];
        dx[k] = (float)(part == 2 ? sum : sum * scale);
    }
}

/* After the kernels: the workspace released, and the launch's error reported
 * before the release's. */
static int attn_release(void *owned, const rm_layer_call *call, cudaError_t launched, const char *what, rm_err *e)
{
    int rc = rm_cuda_workspace_release(owned, call, e);
    if (launched != cudaSuccess)
        return rm_errorf(e, RM_ERR_DEVICE, "cuda: %s failed: %s", what, cudaGetErrorString(launched));
    return rc;
}

/* The workspace, its first part holding P of the call's input (forward and
 * backward both start here); *owned as rm_cuda_workspace's. */
static int attn_probs(double **p, void **owned, const rm_layer_call *call, int backward, rm_err *e)
{
    const rm_shape s = call->in[0]->shape;
    const attn_dims g = attn_dims_of(call);
    void *ws;
    int rc =
        rm_cuda_workspace(&ws, owned, call, rm_attention_workspace_cuda(call->cfg, &s, 1, s, backward), "attention", e);
    if (rc) return rc;
    *p = (double *)ws;
    const size_t count = attn_scores(&s, g.heads);
    const float *x = call->in[0]->data;
    cudaStream_t st = rm_cuda_stream(call->be);
    attn_products_kernel<<<rm_cuda_blocks(count), RM_THREADS, 0, st>>>(*p, x, s.c, x + (size_t)g.d * g.t, s.c, g, count,
                                                                       1.0 / sqrt((double)g.hd));
    attn_softmax_kernel<<<rm_cuda_blocks(count / g.t), RM_THREADS, 0, st>>>(*p, g.t, count / g.t);
    cudaError_t launched = cudaGetLastError();
    return launched == cudaSuccess ? RM_OK : attn_release(*owned, call, launched, "attention probabilities", e);
}

extern "C" int rm_attention_forward_cuda(const rm_layer_call *call, rm_err *e)
{
    double *p;
    void *owned;
    int rc = attn_probs(&p, &owned, call, 0, e);
    if (rc) return rc;
    const size_t count = rm_tensor_numel(call->out);
    attn_output_kernel<<<rm_cuda_blocks(count), RM_THREADS, 0, rm_cuda_stream(call->be)>>>(
        call->out->data, p, call->in[0]->data, attn_dims_of(call), count);
    return attn_release(owned, call, cudaGetLastError(), "attn_output_kernel", e);
}

extern "C" int rm_attention_backward_cuda(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    const rm_shape s = call->in[0]->shape;
    const attn_dims g = attn_dims_of(call);
    double *p;
    void *owned;
    int rc = attn_probs(&p, &owned, call, 1, e);
    if (rc) return rc;
    const size_t scores = attn_scores(&s, g.heads), count = rm_tensor_numel(call->din[0]);
    const float *x = call->in[0]->data, *dy = call->dout->data;
    double *ds = p + scores;
    cudaStream_t st = rm_cuda_stream(call->be);
    attn_products_kernel<<<rm_cuda_blocks(scores), RM_THREADS, 0, st>>>(ds, dy, g.d, x + 2 * (size_t)g.d * g.t, s.c, g,
                                                                        scores, 1.0);
    attn_ds_kernel<<<rm_cuda_blocks(scores / g.t), RM_THREADS, 0, st>>>(ds, p, g.t, scores / g.t);
    attn_dx_kernel<<<rm_cuda_blocks(count), RM_THREADS, 0, st>>>(call->din[0]->data, p, ds, x, dy, g, count,
                                                                 1.0 / sqrt((double)g.hd));
    return attn_release(owned, call, cudaGetLastError(), "attention backward kernels", e);
}
