/* A vision transformer's token bookkeeping, on tokens laid out N x D x T x 1
 * (each token a column of D channels):
 *  - tokens: the H W positions of an N x D x H x W map as tokens, a learned
 *    class token put first, a learned position embedding added: y is
 *    N x D x (H W + 1) x 1, y[d][0] = cls[d] + pos[d][0] and
 *    y[d][1 + t] = x[d][t] + pos[d][1 + t] (ViT's patch embedding output,
 *    torch.cat([class_token, x]) + pos_embedding). The parameters: w the
 *    position embedding, D x (T + 1) (PyTorch's pos_embedding [1, T + 1, D]
 *    transposed), b the class token, D.
 *  - token: the token at position start, N x D x 1 x 1 (ViT's x[:, 0], the
 *    class token the head reads).
 * Both move values only; their backward reads nothing but the gradient. */
#include <string.h>

#include "layers.h"
#include "rng.h"

static int tokens_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    char buf[64];
    const char *name = rm_layer_desc_of(cfg->kind)->name;
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "%s: takes exactly 1 input, got %d", name, nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "%s: empty input %s", name, rm_shape_str(x, buf, sizeof buf));
    const long long t = (long long)x.h * x.w;
    if (cfg->kind == RM_LAYER_TOKENS) {
        if (t + 1 > 1 << 24) return rm_errorf(e, RM_ERR_SHAPE, "tokens: %lld positions is too many", t);
        *out = rm_shape_make(x.n, x.c, (int)t + 1, 1);
        return RM_OK;
    }
    if (cfg->start < 0 || cfg->start >= t)
        return rm_errorf(e, RM_ERR_SHAPE, "token: position %d of an input with %lld (%s)", cfg->start, t,
                         rm_shape_str(x, buf, sizeof buf));
    *out = rm_shape_make(x.n, x.c, 1, 1);
    return RM_OK;
}

static void tokens_param_shapes(rm_shape *w, rm_shape *b, const rm_layer_config *cfg, const rm_shape *in, int nin)
{
    (void)cfg, (void)nin;
    *w = rm_shape_make(in[0].c, in[0].h * in[0].w + 1, 1, 1);
    *b = rm_shape_make(in[0].c, 1, 1, 1);
}

/* tokens: one add per output element (two in backward: the gradient's copy
 * and the embedding's sum); token: a copy. */
static double tokens_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)in, (void)nin;
    double elems = (double)rm_shape_numel(out);
    return cfg->kind == RM_LAYER_TOKENS ? (backward ? 2.0 : 1.0) * elems : elems;
}

/* torchvision's ViT: the position embedding N(0, 0.02^2), the class token zero. */
static void tokens_init(rm_layer_params *p, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_rng *rng)
{
    (void)cfg, (void)in, (void)nin;
    for (size_t i = 0; i < rm_tensor_numel(&p->w); i++) p->w.data[i] = (float)(0.02 * rm_rng_normal(rng));
    memset(p->b.data, 0, rm_tensor_numel(&p->b) * sizeof(float));
}

static int tokens_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_shape x = call->in[0]->shape;
    const size_t t = (size_t)x.h * x.w;
    for (int n = 0; n < x.n; n++)
        for (int d = 0; d < x.c; d++) {
            const float *xr = call->in[0]->data + ((size_t)n * x.c + d) * t;
            if (call->cfg->kind == RM_LAYER_TOKEN) {
                call->out->data[(size_t)n * x.c + d] = xr[call->cfg->start];
                continue;
            }
            const float *pos = call->params->w.data + (size_t)d * (t + 1);
            float *yr = call->out->data + ((size_t)n * x.c + d) * (t + 1);
            yr[0] = call->params->b.data[d] + pos[0];
            for (size_t i = 0; i < t; i++) yr[1 + i] = xr[i] + pos[1 + i];
        }
    return RM_OK;
}

/* tokens: dx the gradient's columns 1..T, dcls its column 0 and dpos its
 * every column, each summed over the batch (in double); token: dx zero but
 * at the position taken. */
static int tokens_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_shape x = call->din[0] ? call->din[0]->shape : call->in[0]->shape;
    const size_t t = (size_t)x.h * x.w;
    float *dx = call->din[0] ? call->din[0]->data : NULL;
    const float *dy = call->dout->data;
    if (call->cfg->kind == RM_LAYER_TOKEN) {
        if (!dx) return RM_OK;
        memset(dx, 0, rm_tensor_numel(call->din[0]) * sizeof(float));
        for (size_t nd = 0; nd < (size_t)x.n * x.c; nd++) dx[nd * t + (size_t)call->cfg->start] = dy[nd];
        return RM_OK;
    }
    if (dx)
        for (size_t nd = 0; nd < (size_t)x.n * x.c; nd++) memcpy(dx + nd * t, dy + nd * (t + 1) + 1, t * sizeof(float));
    float *dpos = call->params->dw.data, *dcls = call->params->db.data;
    for (int d = 0; d < x.c && (dpos || dcls); d++)
        for (size_t i = 0; i <= t; i++) {
            double sum = 0;
            for (int n = 0; n < x.n; n++) sum += dy[((size_t)n * x.c + d) * (t + 1) + i];
            if (dpos) dpos[(size_t)d * (t + 1) + i] = (float)sum;
            if (i == 0 && dcls) dcls[d] = (float)sum;
        }
    return RM_OK;
}

const rm_layer_desc rm_tokens_desc = {
    .kind = RM_LAYER_TOKENS,
    .name = "tokens",
    .backward_reads = RM_READS_NOTHING,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = tokens_infer,
    .param_shapes = tokens_param_shapes,
    .flops = tokens_flops,
    .init = tokens_init,
    .forward_ref = tokens_forward,
    .backward_ref = tokens_backward,
    .kernels = rm_tokens_kernels,
};

const rm_layer_desc rm_token_desc = {
    .kind = RM_LAYER_TOKEN,
    .name = "token",
    .backward_reads = RM_READS_NOTHING,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = tokens_infer,
    .flops = tokens_flops,
    .forward_ref = tokens_forward,
    .backward_ref = tokens_backward,
    .kernels = rm_tokens_kernels,
};
