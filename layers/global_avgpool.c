/* Global average pooling: N x C x H x W -> N x C x 1 x 1, the mean of each
 * plane. Linear with constant coefficients, so backward reads nothing but the
 * output gradient. */
#include <stdlib.h>

#include "cpu_kernels.h"
#include "layers.h"

static int gap_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    (void)cfg;
    char buf[64];
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "global_avgpool: takes exactly 1 input, got %d", nin);
    rm_shape x = in[0];
    if (x.n < 1 || x.c < 1 || x.h < 1 || x.w < 1)
        return rm_errorf(e, RM_ERR_SHAPE, "global_avgpool: empty input %s", rm_shape_str(x, buf, sizeof buf));
    *out = rm_shape_make(x.n, x.c, 1, 1);
    return RM_OK;
}

static double gap_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)nin, (void)out, (void)backward;
    return (double)rm_shape_numel(in[0]); /* one add (forward) or one scaled copy (backward) per input element */
}

static int gap_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    rm_shape s = call->in[0]->shape;
    size_t plane = (size_t)s.h * s.w, planes = (size_t)s.n * s.c;
    int nt = rm_call_threads(call, planes * plane);
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t pl = 0; pl < planes; pl++) {
        const float *x = call->in[0]->data + pl * plane;
        double sum = 0.0;
        for (size_t i = 0; i < plane; i++) sum += x[i];
        call->out->data[pl] = (float)(sum / (double)plane);
    }
    return RM_OK;
}

static int gap_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    rm_tensor *dx = call->din[0];
    if (!dx || !dx->data) return RM_OK;
    rm_shape s = dx->shape;
    size_t plane = (size_t)s.h * s.w, planes = (size_t)s.n * s.c;
    int nt = rm_call_threads(call, planes * plane);
    RM_CPU_PARALLEL_FOR(nt)
    for (size_t pl = 0; pl < planes; pl++) {
        float g = (float)((double)call->dout->data[pl] / (double)plane);
        for (size_t i = 0; i < plane; i++) dx->data[pl * plane + i] = g;
    }
    return RM_OK;
}

const rm_layer_desc rm_global_avgpool_desc = {
    .kind = RM_LAYER_GLOBAL_AVGPOOL,
    .name = "global_avgpool",
    .backward_reads = RM_READS_NOTHING,
    .min_inputs = 1,
    .max_inputs = 1,
    .infer = gap_infer,
    .flops = gap_flops,
    .forward_ref = gap_forward,
    .backward_ref = gap_backward,
    .kernels = rm_global_avgpool_kernels,
};
