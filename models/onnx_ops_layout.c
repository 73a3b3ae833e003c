/* Layout of computed tensors: what ONNX writes with Reshape, Transpose and
 * Slice where a network moves channels rather than computes.
 *  - ShuffleNet's channel shuffle, which PyTorch exports as Reshape of
 *    N x C x H x W to N x g x C/g x H x W, Transpose (0, 2, 1, 3, 4), and
 *    Reshape back to N x C x H x W: the first two steps make views
 *    (ONNX_VIEW, no layer), the third a shuffle layer of g groups.
 *  - A range of channels (ShuffleNet's chunk, exported as Slice along axis
 *    1): a slice layer, or an alias when it takes every channel.
 *  - The channels moved last (ConvNeXt's permute to N x H x W x C, a
 *    transformer's tokens N x T x D) and back: an alias that ONNX sees
 *    transposed (channels_last); remat's tensor stays N x C x ... in memory,
 *    and only what computes per position (element-wise layers, LayerNorm and
 *    MatMul over the last axis) reads it.
 * Anything else that reads a view is refused (onnx_need_input). */
#include <stdio.h>

#include "onnx_internal.h"

int onnx_layout_view_dims(int64_t *d, const onnx_value *v)
{
    const rm_shape s = v->source->shape;
    int per = s.c / v->groups;
    d[0] = ONNX_BATCH, d[1] = v->transposed ? per : v->groups, d[2] = v->transposed ? v->groups : per;
    d[3] = s.h, d[4] = s.w;
    return 5;
}

int onnx_layout_reshape(onnx_import *c, const Onnx__NodeProto *n, const onnx_value *x, const int64_t *d, int nt)
{
    char buf[96];
    if (x->kind == ONNX_ACT) {
        /* the first step: N x C x H x W as N x g x C/g x H x W */
        const rm_shape s = x->shape;
        if (nt != 5 || x->rank != 4 || d[1] < 1 || d[1] * d[2] != s.c || d[3] != s.h || d[4] != s.w)
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "reshapes '%s' (rank %d) to rank %d; remat reshapes a computed tensor only to N x "
                             "features (a flatten), or to N x g x C/g x H x W as ShuffleNet's channel shuffle does",
                             x->name, x->rank, nt);
        int rc = onnx_set_view(c, n, 0, x, (int)d[1], 0);
        if (!rc)
            onnx_note(c, n,
                      "a view of '%s' as %lld groups of %lld channels (a channel shuffle, continued by a "
                      "Transpose)",
                      x->name, (long long)d[1], (long long)d[2]);
        return rc;
    }
    /* the last step: the transposed view back to N x C x H x W */
    const onnx_value *src = x->source;
    if (!x->transposed || nt != 4 || d[1] != src->shape.c || d[2] != src->shape.h || d[3] != src->shape.w) {
        int64_t vd[5];
        onnx_layout_view_dims(vd, x);
        snprintf(buf, sizeof buf, "%lld x %lld x %lld x %lld", (long long)vd[1], (long long)vd[2], (long long)vd[3],
                 (long long)vd[4]);
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "reshapes the view of '%s' (%s per sample%s) to rank %d; remat reads such a view only as "
                         "ShuffleNet's channel shuffle, which transposes it and reshapes it back to N x C x H x W",
                         src->name, buf, x->transposed ? ", transposed" : "", nt);
    }
    rm_layer_config cfg = {0};
    cfg.groups = x->groups;
    onnx_value *in = (onnx_value *)src;
    int i, rc = onnx_emit(c, n, RM_LAYER_CHANNEL_SHUFFLE, &cfg, &in, 1, NULL, src->rank, &i);
    if (rc) return rc;
    snprintf(buf, sizeof buf, "(%d groups: Reshape, Transpose (0, 2, 1, 3, 4), Reshape)", x->groups);
    onnx_note_layer(c, n, i, buf);
    return RM_OK;
}

int onnx_layout_transpose(onnx_import *c, const Onnx__NodeProto *n, const onnx_value *v, const int64_t *perm, size_t np)
{
    static const int64_t swap[5] = {0, 2, 1, 3, 4};
    int same = np == 5;
    for (size_t k = 0; same && k < 5; k++) same = perm[k] == swap[k];
    if (!same || v->transposed)
        return onnx_fail(
            c, RM_ERR_UNSUPPORTED,
            "transposes the view of '%s'%s other than ShuffleNet's channel shuffle does (perm (0, 2, 1, 3, "
            "4), once)",
            v->source->name, v->transposed ? " a second time, or" : "");
    int rc = onnx_set_view(c, n, 0, v->source, v->groups, 1);
    if (!rc)
        onnx_note(c, n, "the view of '%s' transposed (the channel shuffle, continued by a Reshape)", v->source->name);
    return rc;
}

int onnx_layout_slice(onnx_import *c, const Onnx__NodeProto *n, onnx_value *x, int64_t axis, int64_t start, int64_t end,
                      int64_t step)
{
    const int64_t len = x->shape.c;
    if (axis != 1 || x->rank != 4 || step != 1)
        return onnx_fail(
            c, RM_ERR_UNSUPPORTED,
            "slices '%s' along axis %lld%s; remat slices a computed tensor along its channels (axis 1 of N "
            "x C x H x W) with step 1",
            x->name, (long long)axis, step != 1 ? " by a step other than 1" : "");
    if (start == ONNX_BATCH || end == ONNX_BATCH)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "slices by the batch size, which an import does not know");
    /* ONNX's clamping: negative counts from the end, then into [0, C] */
    if (start < 0) start += len;
    if (end < 0) end += len;
    start = start < 0 ? 0 : start > len ? len : start;
    end = end < 0 ? 0 : end > len ? len : end;
    if (end <= start)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "slices no channel of '%s' (%lld to %lld of %lld)", x->name,
                         (long long)start, (long long)end, (long long)len);
    int rc;
    if (start == 0 && end == len) {
        if ((rc = onnx_set_alias(c, n, 0, x))) return rc;
        onnx_note(c, n, "alias of '%s' (every channel)", x->name);
        c->sum.aliases++;
        return RM_OK;
    }
    rm_layer_config cfg = {0};
    cfg.start = (int)start, cfg.out_channels = (int)(end - start);
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_SLICE, &cfg, &x, 1, NULL, x->rank, &i))) return rc;
    char buf[64];
    snprintf(buf, sizeof buf, "(channels %lld to %lld)", (long long)start, (long long)end - 1);
    onnx_note_layer(c, n, i, buf);
    return RM_OK;
}

int onnx_layout_channels_last(onnx_import *c, const Onnx__NodeProto *n, const onnx_value *x, const int64_t *perm,
                              size_t np)
{
    static const int64_t to4[4] = {0, 2, 3, 1}, from4[4] = {0, 3, 1, 2}, swap3[3] = {0, 2, 1};
    const int64_t *want = x->rank == 3 ? swap3 : x->rank != 4 ? NULL : x->channels_last ? from4 : to4;
    int ok = want && np == (size_t)x->rank;
    for (size_t k = 0; ok && k < np; k++) ok = perm[k] == want[k];
    if (!ok && x->channels_last && np == 3 && perm[0] == 1 && perm[1] == 0 && perm[2] == 2)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "transposes the tokens '%s' to T x N x D, as nn.MultiheadAttention begins, but what follows "
                         "is not the attention remat imports (in_proj as MatMul and Add, two MatMuls around one "
                         "Softmax with nothing between them, such as a mask, out_proj as Gemm, then the residual "
                         "Add)",
                         x->name);
    if (!ok) {
        char ps[96];
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "transposes '%s' (rank %d%s) by perm %s; remat transposes a computed tensor only to move "
                         "its channels last and back: perm (0, 2, 3, 1) then (0, 3, 1, 2) at rank 4, (0, 2, 1) at "
                         "rank 3",
                         x->name, x->rank, x->channels_last ? ", channels last" : "",
                         np ? onnx_dims_str(ps, sizeof ps, perm, (int)np) : "(reversed)");
    }
    onnx_value *v;
    int rc = onnx_set_alias(c, n, 0, x);
    if (!rc && !(v = onnx_find(c, n->output[0]))) rc = onnx_fail(c, RM_ERR_PARSE, "its output was not indexed");
    if (rc) return rc;
    v->channels_last = !x->channels_last;
    onnx_note(c, n, "alias of '%s' with its channels %s (the same memory)", x->name,
              v->channels_last ? "last" : "back in place");
    c->sum.aliases++;
    return RM_OK;
}
