/* Inverted dropout, and its per-sample form drop_path (stochastic depth,
 * torchvision's StochasticDepth in "row" mode: each sample's whole tensor is
 * kept or dropped, the residual branch of EfficientNet's and ConvNeXt's
 * blocks). The mask is never stored: element j (drop_path: sample n) is kept
 * iff rm_uniform_at(seed, stream, j) >= p with stream a pure function of
 * (step, node), so a recomputed forward and the backward regenerate the very
 * same mask bit for bit. That is what makes rematerializing through dropout
 * exact and lets backward read nothing. */
#include "layers.h"

#include <string.h>

static const char *name_of(const rm_layer_config *cfg)
{
    return rm_layer_desc_of(cfg->kind)->name;
}

static int check_p(const rm_layer_config *cfg, rm_err *e)
{
    if (!(cfg->p >= 0.0f && cfg->p < 1.0f)) /* also rejects NaN */
        return rm_errorf(e, RM_ERR_SHAPE, "%s: p = %g must lie in [0, 1)", name_of(cfg), (double)cfg->p);
    return RM_OK;
}

static int dropout_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "%s: takes 1 input, got %d", name_of(cfg), nin);
    int rc = check_p(cfg, e);
    if (rc) return rc;
    *out = in[0];
    return RM_OK;
}

/* Per element: one hash-based uniform (counted as 1), one compare, one
 * multiply; backward replays the mask at the same cost. */
static double dropout_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)in, (void)nin, (void)backward;
    return 3.0 * (double)rm_shape_numel(out);
}

/* y = mask * x / (1 - p); also the backward, with x = dy and y = dx, since the
 * Jacobian is the same diagonal. Element j's draw is number j / per: per is 1
 * for dropout, a sample's elements for drop_path. */
static void dropout_apply_kernel(float *y, const float *x, size_t n, size_t per, float p, uint64_t seed,
                                 uint64_t stream)
{
    float scale = 1.0f / (1.0f - p);
    for (size_t j = 0; j < n; j++) y[j] = rm_uniform_at(seed, stream, j / per) >= p ? x[j] * scale : 0.0f;
}

static int dropout_run(float *y, const float *x, size_t n, int batch, const rm_layer_call *call, rm_err *e)
{
    int rc = check_p(call->cfg, e);
    if (rc) return rc;
    if (!call->training || call->cfg->p == 0.0f) {
        if (y != x) memcpy(y, x, n * sizeof(float));
        return RM_OK;
    }
    const size_t per = call->cfg->kind == RM_LAYER_DROP_PATH ? n / (size_t)batch : 1;
    dropout_apply_kernel(y, x, n, per, call->cfg->p, call->seed, rm_dropout_stream(call->step, call->node_id));
    return RM_OK;
}

static int dropout_forward(const rm_layer_call *call, rm_err *e)
{
    return dropout_run(call->out->data, call->in[0]->data, rm_tensor_numel(call->out), call->out->shape.n, call, e);
}

static int dropout_backward(const rm_layer_call *call, rm_err *e)
{
    if (!call->din[0]) return RM_OK;
    return dropout_run(call->din[0]->data, call->dout->data, rm_tensor_numel(call->dout), call->dout->shape.n, call, e);
}

/* The two differ in their mask's grain only (dropout_apply_kernel). */
#define DROPOUT_DESC(var, k, n)                                                                                        \
    const rm_layer_desc var = {                                                                                        \
        .kind = k,                                                                                                     \
        .name = n,                                                                                                     \
        .backward_reads = RM_READS_NOTHING,                                                                            \
        .min_inputs = 1,                                                                                               \
        .max_inputs = 1,                                                                                               \
        .infer = dropout_infer,                                                                                        \
        .flops = dropout_flops,                                                                                        \
        .forward_ref = dropout_forward,                                                                                \
        .backward_ref = dropout_backward,                                                                              \
        .kernels = rm_dropout_kernels,                                                                                 \
    }

DROPOUT_DESC(rm_dropout_desc, RM_LAYER_DROPOUT, "dropout");
DROPOUT_DESC(rm_drop_path_desc, RM_LAYER_DROP_PATH, "drop_path");
