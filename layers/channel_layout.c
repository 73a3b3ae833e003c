/* Channel layout, no arithmetic: shuffle (ShuffleNet v2's channel shuffle,
 * which PyTorch exports as Reshape to 5-D, Transpose, Reshape back) and
 * slice (a range of channels: ShuffleNet's chunk, exported as Slice). Each
 * output plane is a copy of one input plane (channel_layout.h says which);
 * backward copies every output gradient plane back to its source, and
 * slice's channels outside the range get a zero gradient. Neither reads a
 * forward tensor in backward. */
#include <string.h>

#include "channel_layout.h"
#include "layers.h"

static int channel_layout_infer(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e)
{
    char a[64];
    const char *name = cfg->kind == RM_LAYER_CHANNEL_SHUFFLE ? "shuffle" : "slice";
    if (nin != 1) return rm_errorf(e, RM_ERR_SHAPE, "%s: takes 1 input, got %d", name, nin);
    rm_shape x = in[0];
    if (cfg->kind == RM_LAYER_CHANNEL_SHUFFLE) {
        if (cfg->groups < 0) return rm_errorf(e, RM_ERR_SHAPE, "shuffle: groups must be >= 1, got %d", cfg->groups);
        const channel_map m = channel_map_of(cfg, x.c); /* as conv's, 0 groups reads as 1 */
        if (x.c % m.groups)
            return rm_errorf(e, RM_ERR_SHAPE, "shuffle: %d groups do not divide the %d channels of %s", m.groups, x.c,
                             rm_shape_str(x, a, sizeof a));
        *out = x;
        return RM_OK;
    }
    /* 0 channels: every channel from start on (a zeroed config takes them all) */
    int count = cfg->start < 0 ? 0 : cfg->out_channels ? cfg->out_channels : x.c - cfg->start;
    if (cfg->start < 0 || count < 1 || cfg->start > x.c - count)
        return rm_errorf(e, RM_ERR_SHAPE,
                         "slice: channels %d to %d (start %d, %d channels) are not within the %d of %s", cfg->start,
                         cfg->start + count - 1, cfg->start, count, x.c, rm_shape_str(x, a, sizeof a));
    *out = rm_shape_make(x.n, count, x.h, x.w);
    return RM_OK;
}

/* A copy per output element, forward and backward (slice's backward also
 * zeroes the channels outside its range). */
static double channel_layout_flops(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward)
{
    (void)cfg, (void)nin, (void)backward;
    (void)in;
    return (double)rm_shape_numel(out);
}

static int channel_layout_forward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    const rm_shape x = call->in[0]->shape, y = call->out->shape;
    const channel_map m = channel_map_of(call->cfg, x.c);
    const size_t plane = (size_t)x.h * x.w;
    for (int n = 0; n < y.n; n++)
        for (int j = 0; j < y.c; j++)
            memcpy(call->out->data + ((size_t)n * y.c + j) * plane,
                   call->in[0]->data + ((size_t)n * x.c + channel_source(&m, j)) * plane, plane * sizeof(float));
    return RM_OK;
}

static int channel_layout_backward(const rm_layer_call *call, rm_err *e)
{
    (void)e;
    if (!call->din[0] || !call->din[0]->data) return RM_OK;
    const rm_shape x = call->din[0]->shape, y = call->dout->shape;
    const channel_map m = channel_map_of(call->cfg, x.c);
    const size_t plane = (size_t)x.h * x.w;
    float *dx = call->din[0]->data;
    if (!m.shuffle) memset(dx, 0, rm_tensor_numel(call->din[0]) * sizeof(float));
    for (int n = 0; n < y.n; n++)
        for (int j = 0; j < y.c; j++)
            memcpy(dx + ((size_t)n * x.c + channel_source(&m, j)) * plane,
                   call->dout->data + ((size_t)n * y.c + j) * plane, plane * sizeof(float));
    return RM_OK;
}

/* The two layers differ in their config only (channel_layout.h). */
#define CHANNEL_LAYOUT_DESC(var, k, n)                                                                                 \
    const rm_layer_desc var = {                                                                                        \
        .kind = k,                                                                                                     \
        .name = n,                                                                                                     \
        .backward_reads = RM_READS_NOTHING,                                                                            \
        .min_inputs = 1,                                                                                               \
        .max_inputs = 1,                                                                                               \
        .infer = channel_layout_infer,                                                                                 \
        .flops = channel_layout_flops,                                                                                 \
        .forward_ref = channel_layout_forward,                                                                         \
        .backward_ref = channel_layout_backward,                                                                       \
        .kernels = rm_channel_layout_kernels,                                                                          \
    }

CHANNEL_LAYOUT_DESC(rm_channel_shuffle_desc, RM_LAYER_CHANNEL_SHUFFLE, "shuffle");
CHANNEL_LAYOUT_DESC(rm_slice_desc, RM_LAYER_SLICE, "slice");
