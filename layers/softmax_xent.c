/* Softmax cross-entropy loss for classification: logits N x K x 1 x 1 and N
 * class ids give the mean over the batch of -log softmax(x)[label], as one
 * 1x1x1x1 tensor. Backward recomputes the softmax from the logits (it reads
 * the inputs, not the scalar output) and starts the backward pass with a loss
 * scale of 1: dlogits = (softmax - onehot) / N. */
#include "cpu_kernels.h"
#include "layers.h"

#include <float.h>
#include <math.h>

static int softmax_xent_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    (void)cfg;
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "softmax_xent: takes 1 input, got %d", nin);
    char a[64];
    if (in[0].h != 1 || in[0].w != 1)
        return rm_errorf(e, RM_ERR_SHAPE, "softmax_xent: logits %s must be N x K x 1 x 1 (flatten or pool first)",
                         rm_shape_str(in[0], a, sizeof a));
    if (in[0].c < 2)
        return rm_errorf(e, RM_ERR_SHAPE, "softmax_xent: logits %s have %d classes, need at least 2",
                         rm_shape_str(in[0], a, sizeof a), in[0].c);
    *out = rm_shape_make(1, 1, 1, 1);
    return RM_OK;
}

/* Per logit, counting exp as 1: forward max, subtract, exp, sum = 4;
 * backward recomputes those 4 and then subtracts the one-hot and scales = 6. */
static double softmax_xent_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)nin, (void)out;
    return (backward ? 6.0 : 4.0) * (double)rm_shape_numel(in[0]);
}

/* Every label must be a class id: checked before any output is written. */
static int check_labels(const int32_t *labels, int n, int k, rm_err *e)
{
    if (!labels) return rm_errorf(e, RM_ERR_INVALID, "softmax_xent: no labels given");
    for (int i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= k)
            return rm_errorf(e, RM_ERR_INVALID, "softmax_xent: sample %d has label %d, outside [0, %d)", i,
                             (int)labels[i], k);
    return RM_OK;
}

/* log(sum(exp(x))) of one row, shifted by its max so exp never overflows. */
static double log_sum_exp(const float *x, int k)
{
    double m = -DBL_MAX, s = 0;
    for (int j = 0; j < k; j++)
        if (x[j] > m) m = x[j];
    for (int j = 0; j < k; j++) s += exp((double)x[j] - m);
    return m + log(s);
}

/* loss: 1 float; x: n x k. */
static void softmax_xent_forward_kernel(float *loss, const float *x, const int32_t *labels, int n, int k)
{
    double total = 0;
    for (int i = 0; i < n; i++) {
        const float *row = x + (size_t)i * (size_t)k;
        total += log_sum_exp(row, k) - row[labels[i]];
    }
    *loss = (float)(total / n);
}

/* dx, x: n x k; rows independent, split between nt threads. */
static void softmax_xent_backward_kernel(float *dx, const float *x, const int32_t *labels, int n, int k, int nt)
{
    RM_CPU_PARALLEL_FOR(nt)
    for (int i = 0; i < n; i++) {
        const float *row = x + (size_t)i * (size_t)k;
        float *drow = dx + (size_t)i * (size_t)k;
        double lse = log_sum_exp(row, k);
        for (int j = 0; j < k; j++) {
            double p = exp((double)row[j] - lse);
            drow[j] = (float)((p - (j == labels[i] ? 1.0 : 0.0)) / n);
        }
    }
}

static int softmax_xent_forward(const rm_layer_call *call, rm_err *e)
{
    rm_shape s = call->in[0]->shape;
    int rc = check_labels(call->labels, s.n, s.c, e);
    if (rc) return rc;
    softmax_xent_forward_kernel(call->out->data, call->in[0]->data, call->labels, s.n, s.c);
    return RM_OK;
}

static int softmax_xent_backward(const rm_layer_call *call, rm_err *e)
{
    rm_shape s = call->in[0]->shape;
    int rc = check_labels(call->labels, s.n, s.c, e);
    if (rc) return rc;
    if (call->din[0])
        softmax_xent_backward_kernel(call->din[0]->data, call->in[0]->data, call->labels, s.n, s.c,
                                     rm_call_threads(call, rm_shape_numel(s)));
    return RM_OK;
}

const rm_layer_desc rm_softmax_xent_desc = {
    .kind = RM_LAYER_SOFTMAX_XENT,
    .name = "softmax_xent",
    .backward_reads = RM_READS_INPUTS,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = softmax_xent_infer,
    .param_shapes = NULL,
    .flops = softmax_xent_flops,
    .init = NULL,
    .forward_ref = softmax_xent_forward,
    .backward_ref = softmax_xent_backward,
    .kernels = rm_softmax_xent_kernels,
};
