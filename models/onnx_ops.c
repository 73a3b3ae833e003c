/* The ONNX importer's operators: one handler per operator, mapping a node
 * onto a remat layer (with its weights), onto a constant folded at import,
 * or onto an alias of its input. Each handler checks every attribute it is
 * given against what the layer computes and refuses, naming what would be
 * needed, anything else: remat imports a network exactly or not at all. The
 * supported set is documented in docs/onnx.md. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- small helpers ------------------------------------------------------------- */

static int copy_floats(float **dst, const float *src, size_t n, onnx_import *c)
{
    *dst = malloc((n ? n : 1) * sizeof **dst);
    if (!*dst) return onnx_fail(c, RM_ERR_NOMEM, "out of memory for %zu weights", n);
    if (n) memcpy(*dst, src, n * sizeof **dst);
    return RM_OK;
}

/* A constant that becomes a layer's weights: FLOAT and finite. A NaN or an
 * infinity would only show in training, as a NaN loss; the config reader
 * refuses such values too. */
int onnx_need_floats(onnx_import *c, const onnx_value *v, const char *role)
{
    if (v->c.is_int)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "its %s '%s' holds integers; remat's weights are FLOAT", role, v->name);
    for (size_t k = 0; k < v->c.count; k++)
        if (!isfinite(v->c.f[k]))
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "its %s '%s' holds %g at element %zu; remat trains on finite "
                             "numbers",
                             role, v->name, (double)v->c.f[k], k);
    return RM_OK;
}

/* What a float attribute scales weights by: a finite number. */
static int need_finite_attr(onnx_import *c, const char *name, float v)
{
    if (!isfinite(v))
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "attribute %s is %g; remat needs a finite number", name, (double)v);
    return RM_OK;
}

const char *onnx_dims_str(char *buf, size_t len, const int64_t *d, int rank)
{
    size_t used = (size_t)snprintf(buf, len, "[");
    for (int k = 0; k < rank && used < len; k++) {
        if (d[k] == ONNX_BATCH)
            used += (size_t)snprintf(buf + used, len - used, "%sN", k ? ", " : "");
        else
            used += (size_t)snprintf(buf + used, len - used, "%s%lld", k ? ", " : "", (long long)d[k]);
    }
    if (used < len) snprintf(buf + used, len - used, "]");
    return buf;
}

/* An activation's full ONNX dimensions: N (as ONNX_BATCH), then its own,
 * the channels last when ONNX sees them there. */
static int act_dims(int64_t *d, const onnx_value *v)
{
    const int per[3] = {v->shape.c, v->shape.h, v->shape.w};
    d[0] = ONNX_BATCH;
    for (int k = 1; k < v->rank; k++) d[k] = per[v->channels_last ? k % (v->rank - 1) : k - 1];
    return v->rank;
}

static int64_t norm_axis(int64_t axis, int rank)
{
    return axis < 0 ? axis + rank : axis;
}

/* For onnx_need_input where any value will do, a channels-last activation
 * too (Identity, Shape, Transpose): the kind to ask for, given input raw. */
static onnx_value_kind any_layout(const onnx_value *raw)
{
    return raw && raw->kind == ONNX_ACT && raw->channels_last ? ONNX_ACT_ANY_LAYOUT : ONNX_UNSET;
}

/* A layer from the node, its output 0 an activation of the layer's shape and this rank. */
int onnx_emit(onnx_import *c, const Onnx__NodeProto *n, rm_layer_kind kind, const rm_layer_config *cfg,
              onnx_value *const *in, int nin, onnx_weights *w, int rank, int *layer)
{
    int i;
    int rc = onnx_add_layer(&i, c, n, kind, cfg, in, nin, w);
    /* in a layout-preserving layer's output, its input's layout (the
     * others refuse a channels-last input) */
    const int cl = nin > 0 && in[0]->channels_last;
    if (!rc) rc = onnx_set_act(c, n, 0, i, rank, cl, c->m->layers[i].out_shape);
    if (layer) *layer = i;
    return rc;
}

void onnx_note_layer(onnx_import *c, const Onnx__NodeProto *n, int i, const char *detail)
{
    const rm_model_layer *L = &c->m->layers[i];
    char sh[64];
    onnx_note(c, n, "%s '%s'%s%s, output %s per sample", L->desc->name, L->name, *detail ? " " : "", detail,
              rm_shape_str(L->out_shape, sh, sizeof sh));
}

/* Concat and Add of nin activations: the layer, or an alias of a single input. */
static int emit_nary(onnx_import *c, const Onnx__NodeProto *n, rm_layer_kind kind, onnx_value *const *in, int nin,
                     const char *detail)
{
    int rc;
    if (nin == 1) {
        if ((rc = onnx_set_alias(c, n, 0, in[0]))) return rc;
        onnx_note(c, n, "alias of '%s' (one input)", in[0]->name);
        c->sum.aliases++;
        return RM_OK;
    }
    rm_layer_config cfg = {0};
    int i;
    if ((rc = onnx_emit(c, n, kind, &cfg, in, nin, NULL, in[0]->rank, &i))) return rc;
    onnx_note_layer(c, n, i, detail);
    return RM_OK;
}

/* ---- windows: Conv, ConvTranspose, MaxPool, AveragePool ---------------------------- */

typedef struct window {
    rm_hw k, s, p, d; /* kernel, stride, padding on each side, dilation */
} window;

/* kernel_shape (or the weights' kh x kw), strides, pads, dilations and
 * auto_pad, reduced to the padding alike on both sides of each axis that
 * remat's layers have. any: the layer takes any window (conv); otherwise
 * it is square, strides alike both ways and is not dilated (the pools,
 * dwconv, conv_transpose2x2). */
static int read_window(window *w, onnx_import *c, const Onnx__NodeProto *n, const int64_t *wk, const char *layer,
                       int any)
{
    const int64_t *ks, *st, *pd, *dl;
    size_t nk, ns, np, nd;
    char pad_mode[32];
    int rc = onnx_attr_ints(&ks, &nk, c, n, "kernel_shape");
    if (!rc) rc = onnx_attr_ints(&st, &ns, c, n, "strides");
    if (!rc) rc = onnx_attr_ints(&pd, &np, c, n, "pads");
    if (!rc) rc = onnx_attr_ints(&dl, &nd, c, n, "dilations");
    if (!rc) rc = onnx_attr_string(pad_mode, sizeof pad_mode, c, n, "auto_pad", "NOTSET");
    if (rc) return rc;
    if (strcmp(pad_mode, "NOTSET") && strcmp(pad_mode, "VALID"))
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "auto_pad %s; remat's %s takes explicit symmetric padding (export with padding given as "
                         "pads, e.g. padding=1 in PyTorch)",
                         pad_mode, layer);
    if (!strcmp(pad_mode, "VALID") && np) return onnx_fail(c, RM_ERR_PARSE, "auto_pad VALID together with pads");
    if ((nk && nk != 2) || (ns && ns != 2) || (np && np != 4) || (nd && nd != 2))
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "a window of %zu dimensions; remat's %s is 2-D",
                         nk   ? nk
                         : ns ? ns
                         : nd ? nd
                              : np / 2,
                         layer);
    if (!nk && !wk) return onnx_fail(c, RM_ERR_PARSE, "no kernel_shape");
    if (nk && wk && (ks[0] != wk[0] || ks[1] != wk[1]))
        return onnx_fail(c, RM_ERR_PARSE, "kernel_shape %lldx%lld but the weights are %lldx%lld", (long long)ks[0],
                         (long long)ks[1], (long long)wk[0], (long long)wk[1]);
    if (np && (pd[0] != pd[2] || pd[1] != pd[3]))
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "asymmetric padding (pads %lld, %lld, %lld, %lld: top, left, bottom, right); remat's %s "
                         "pads the two sides of an axis alike",
                         (long long)pd[0], (long long)pd[1], (long long)pd[2], (long long)pd[3], layer);
    const int64_t v[4][2] = {{nk ? ks[0] : wk[0], nk ? ks[1] : wk[1]},
                             {ns ? st[0] : 1, ns ? st[1] : 1},
                             {np ? pd[0] : 0, np ? pd[1] : 0},
                             {nd ? dl[0] : 1, nd ? dl[1] : 1}};
    static const char *const what[4] = {"kernel", "stride", "pad", "dilation"};
    for (int i = 0; i < 4; i++) {
        int lo = i == 2 ? 0 : 1;
        if (v[i][0] < lo || v[i][0] > 1024 || v[i][1] < lo || v[i][1] > 1024)
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "%s %lldx%lld (remat: %d to 1024)", what[i], (long long)v[i][0],
                             (long long)v[i][1], lo);
        if (!any && v[i][0] != v[i][1])
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "%s %lldx%lld; remat's %s has the same %s along both axes", what[i],
                             (long long)v[i][0], (long long)v[i][1], layer, what[i]);
    }
    if (!any && v[3][0] != 1)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "dilations (%lld, %lld); remat's %s has no dilation (1 only)",
                         (long long)v[3][0], (long long)v[3][1], layer);
    rm_hw *out[4] = {&w->k, &w->s, &w->p, &w->d};
    for (int i = 0; i < 4; i++) out[i]->h = (int)v[i][0], out[i]->w = (int)v[i][1];
    return RM_OK;
}

/* "2" when both axes are 2, else "2x1". */
static const char *hw_str(char *buf, size_t len, rm_hw v)
{
    if (v.h == v.w)
        snprintf(buf, len, "%d", v.h);
    else
        snprintf(buf, len, "%dx%d", v.h, v.w);
    return buf;
}

/* "3x3, stride 2, pad 1" (and ", dilation 2x2" when there is one) for notes. */
static void window_str(char *buf, size_t len, const window *w)
{
    char s[24], p[24], d[32] = "";
    if (w->d.h != 1 || w->d.w != 1) snprintf(d, sizeof d, ", dilation %dx%d", w->d.h, w->d.w);
    snprintf(buf, len, "%dx%d, stride %s, pad %s%s", w->k.h, w->k.w, hw_str(s, sizeof s, w->s),
             hw_str(p, sizeof p, w->p), d);
}

static int need_rank4(onnx_import *c, const onnx_value *x, const char *layer)
{
    if (x->rank != 4)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "a rank-%d input ('%s'); remat's %s is 2-D (N x C x H x W)", x->rank,
                         x->name, layer);
    return RM_OK;
}

/* A convolution's weights and optional bias (m values) into wt. */
static int conv_weights(onnx_weights *wt, const onnx_value *w, const onnx_value *b, int64_t m, onnx_import *c)
{
    memset(wt, 0, sizeof *wt);
    if (m < 1 || m > (1 << 20)) return onnx_fail(c, RM_ERR_UNSUPPORTED, "%lld output channels", (long long)m);
    if (b && b->c.count != (size_t)m)
        return onnx_fail(c, RM_ERR_SHAPE, "a bias of %zu values for %lld output channels", b->c.count, (long long)m);
    wt->nw = w->c.count;
    int rc = copy_floats(&wt->w, w->c.f, wt->nw, c);
    if (!rc && b) {
        wt->nb = b->c.count;
        if ((rc = copy_floats(&wt->b, b->c.f, wt->nb, c))) free(wt->w);
    }
    return rc;
}

/* A convolution's input (N x C x H x W), weights (rank 4) and optional bias, all FLOAT. */
static int conv_inputs(onnx_value **x, onnx_value **w, onnx_value **b, onnx_import *c, const Onnx__NodeProto *n,
                       const char *const *attrs, const char *layer)
{
    *b = onnx_input(c, n, 2);
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(x, c, n, 0, ONNX_ACT, "input");
    if (!rc) rc = need_rank4(c, *x, layer);
    if (!rc) rc = onnx_need_input(w, c, n, 1, ONNX_CONST, "weights");
    if (!rc) rc = onnx_need_floats(c, *w, "weights");
    if (!rc && *b) rc = onnx_need_input(b, c, n, 2, ONNX_CONST, "bias");
    if (!rc && *b) rc = onnx_need_floats(c, *b, "bias");
    if (!rc && (*w)->c.rank != 4)
        rc = onnx_fail(c, RM_ERR_UNSUPPORTED, "weights of rank %d; remat's %s has rank 4", (*w)->c.rank, layer);
    return rc;
}

static int op_conv(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides", NULL};
    onnx_value *x, *w, *b;
    int rc = conv_inputs(&x, &w, &b, c, n, attrs, "conv");
    if (rc) return rc;
    int64_t group;
    if ((rc = onnx_attr_int(&group, c, n, "group", 1))) return rc;
    int64_t m = w->c.dims[0], per = w->c.dims[1], ch = x->shape.c;
    if (group < 1 || ch % group || m % group)
        return onnx_fail(c, RM_ERR_SHAPE, "group %lld does not divide %lld input and %lld output channels",
                         (long long)group, (long long)ch, (long long)m);
    if (per * group != ch)
        return onnx_fail(c, RM_ERR_SHAPE, "weights for %lld input channels in each of %lld groups, the input has %lld",
                         (long long)per, (long long)group, (long long)ch);
    /* One filter per channel, square: remat's depthwise layer, whose kernels are made for it. */
    window win;
    int depthwise = group == ch && m == ch && per == 1 && w->c.dims[2] == w->c.dims[3];
    if ((rc = read_window(&win, c, n, w->c.dims + 2, "conv", 1))) return rc;
    if (depthwise && (win.s.h != win.s.w || win.p.h != win.p.w || win.d.h != 1 || win.d.w != 1)) depthwise = 0;
    rm_layer_kind kind = depthwise ? RM_LAYER_DWCONV2D : RM_LAYER_CONV2D;
    rm_layer_config cfg = {0};
    cfg.out_channels = depthwise ? 0 : (int)m;
    cfg.kernel = win.k, cfg.stride = win.s, cfg.pad = win.p, cfg.bias = b != NULL;
    if (!depthwise) cfg.dilation = win.d, cfg.groups = (int)group;
    onnx_weights wt;
    if ((rc = conv_weights(&wt, w, b, m, c))) return rc;
    int i;
    if ((rc = onnx_emit(c, n, kind, &cfg, &x, 1, &wt, 4, &i))) return rc;
    char d[128], ws[80], gs[32] = "";
    window_str(ws, sizeof ws, &win);
    if (!depthwise && group > 1) snprintf(gs, sizeof gs, ", %lld groups", (long long)group);
    snprintf(d, sizeof d, "(%s%s%s, %s)", depthwise ? "depthwise " : "", ws, gs, b ? "bias" : "no bias");
    onnx_note_layer(c, n, i, d);
    return RM_OK;
}

static int op_conv_transpose(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {
        "auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads", "strides", NULL};
    onnx_value *x, *w, *b;
    int rc = conv_inputs(&x, &w, &b, c, n, attrs, "conv_transpose2x2");
    if (rc) return rc;
    int64_t group;
    const int64_t *op, *os;
    size_t nop, nos;
    window win;
    if ((rc = onnx_attr_int(&group, c, n, "group", 1)) || (rc = onnx_attr_ints(&op, &nop, c, n, "output_padding")) ||
        (rc = onnx_attr_ints(&os, &nos, c, n, "output_shape")) ||
        (rc = read_window(&win, c, n, w->c.dims + 2, "conv_transpose2x2", 0)))
        return rc;
    if (group != 1)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "group %lld; remat's conv_transpose2x2 has group 1", (long long)group);
    if (win.k.h != 2 || win.s.h != 2 || win.p.h != 0)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "kernel %d, stride %d, pad %d; remat's conv_transpose2x2 is kernel 2, stride 2, no padding "
                         "(the U-Net up-convolution)",
                         win.k.h, win.s.h, win.p.h);
    for (size_t k = 0; k < nop; k++)
        if (op[k])
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "output_padding %lld; remat's conv_transpose2x2 has none",
                             (long long)op[k]);
    if (nos && (nos != 2 || os[0] != 2LL * x->shape.h || os[1] != 2LL * x->shape.w))
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "an output_shape other than twice the input's height and width");
    if (w->c.dims[0] != x->shape.c)
        return onnx_fail(c, RM_ERR_SHAPE, "weights for %lld input channels, the input has %d", (long long)w->c.dims[0],
                         x->shape.c);
    int64_t m = w->c.dims[1];
    rm_layer_config cfg = {0};
    cfg.out_channels = (int)m, cfg.bias = b != NULL;
    onnx_weights wt;
    if ((rc = conv_weights(&wt, w, b, m, c))) return rc;
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_CONV_TRANSPOSE2X2, &cfg, &x, 1, &wt, 4, &i))) return rc;
    onnx_note_layer(c, n, i, b ? "(2x2, stride 2, bias)" : "(2x2, stride 2, no bias)");
    return RM_OK;
}

static int op_batchnorm(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"epsilon", "momentum",        "spatial", "training_mode",
                                        "is_test", "consumed_inputs", NULL};
    onnx_value *x, *p[4];
    static const char *const roles[4] = {"scale", "bias", "running mean", "running variance"};
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_ACT, "input");
    for (int k = 0; k < 4 && !rc; k++) {
        rc = onnx_need_input(&p[k], c, n, k + 1, ONNX_CONST, roles[k]);
        if (!rc) rc = onnx_need_floats(c, p[k], roles[k]);
        if (!rc && p[k]->c.count != (size_t)x->shape.c)
            rc = onnx_fail(c, RM_ERR_SHAPE, "a %s of %zu values for %d channels", roles[k], p[k]->c.count, x->shape.c);
    }
    if (!rc) rc = onnx_only_first_output(c, n, "training statistics");
    float eps, mom;
    int64_t spatial, training;
    if (!rc) rc = onnx_attr_float(&eps, c, n, "epsilon", 1e-5f);
    if (!rc) rc = onnx_attr_float(&mom, c, n, "momentum", 0.9f);
    if (!rc) rc = onnx_attr_int(&spatial, c, n, "spatial", 1);
    if (!rc) rc = onnx_attr_int(&training, c, n, "training_mode", 0);
    if (rc) return rc;
    if (spatial != 1)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "spatial=0 (statistics per element); remat's batchnorm keeps them per "
                         "channel");
    if (training)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "training_mode=1; remat's batchnorm uses batch statistics in training and the running ones "
                         "in evaluation by itself (export in eval mode)");
    if (!(mom >= 0.0f && mom <= 1.0f))
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "momentum %g; remat takes 0 to 1", (double)mom);
    if (!(eps > 0.0f) || !isfinite(eps))
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "epsilon %g; remat needs a finite number above 0", (double)eps);
    /* A negative variance makes the evaluation's sqrt(var + eps) NaN. */
    for (size_t k = 0; k < p[3]->c.count; k++)
        if (p[3]->c.f[k] < 0.0f)
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "its running variance '%s' is %g at channel %zu; a variance is "
                             "never negative",
                             p[3]->name, (double)p[3]->c.f[k], k);
    if (x->rank < 2) return onnx_fail(c, RM_ERR_UNSUPPORTED, "a rank-%d input", x->rank);
    rm_layer_config cfg = {0};
    /* ONNX keeps momentum x running + (1 - momentum) x batch; remat's
     * momentum is the weight of the batch, as PyTorch's is. */
    cfg.eps = eps, cfg.momentum = 1.0f - mom;
    onnx_weights wt = {0};
    wt.nw = wt.nb = wt.nstats = (size_t)x->shape.c;
    float **dst[4] = {&wt.w, &wt.b, &wt.mean, &wt.var};
    for (int k = 0; k < 4 && !rc; k++) rc = copy_floats(dst[k], p[k]->c.f, wt.nw, c);
    if (rc) {
        free(wt.w), free(wt.b), free(wt.mean), free(wt.var);
        return rc;
    }
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_BATCHNORM2D, &cfg, &x, 1, &wt, x->rank, &i))) return rc;
    char d[96];
    snprintf(d, sizeof d, "(eps %g, momentum %g: ONNX's %g)", (double)eps, (double)cfg.momentum, (double)mom);
    onnx_note_layer(c, n, i, d);
    return RM_OK;
}

static int op_pool(onnx_import *c, const Onnx__NodeProto *n, int max)
{
    static const char *const max_attrs[] = {"auto_pad", "ceil_mode",     "dilations", "kernel_shape",
                                            "pads",     "storage_order", "strides",   NULL};
    static const char *const avg_attrs[] = {"auto_pad", "ceil_mode", "count_include_pad", "kernel_shape", "pads",
                                            "strides",  NULL};
    const char *layer = max ? "maxpool" : "avgpool";
    onnx_value *x;
    window win;
    int64_t ceil_mode, include_pad = 0;
    int rc = onnx_check_attrs(c, n, max ? max_attrs : avg_attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_ACT, "input");
    if (!rc) rc = need_rank4(c, x, layer);
    if (!rc && max) rc = onnx_only_first_output(c, n, "the indices of the maxima");
    if (!rc) rc = read_window(&win, c, n, NULL, layer, 0);
    if (!rc) rc = onnx_attr_int(&ceil_mode, c, n, "ceil_mode", 0);
    if (!rc && !max) rc = onnx_attr_int(&include_pad, c, n, "count_include_pad", 0);
    if (rc) return rc;
    if (ceil_mode && !max)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "ceil_mode=1; remat's avgpool rounds the output size down (ceil_mode=0; maxpool has both)");
    if (!max && win.p.h && !include_pad)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "count_include_pad=0 with padding %d; remat's avgpool divides every window by k*k, padding "
                         "included (PyTorch's default count_include_pad=True)",
                         win.p.h);
    rm_layer_config cfg = {0};
    cfg.kernel = win.k, cfg.stride = win.s, cfg.pad = win.p, cfg.ceil_mode = ceil_mode != 0;
    int i;
    if ((rc = onnx_emit(c, n, max ? RM_LAYER_MAXPOOL2D : RM_LAYER_AVGPOOL2D, &cfg, &x, 1, NULL, 4, &i))) return rc;
    char d[112], ws[80];
    window_str(ws, sizeof ws, &win);
    snprintf(d, sizeof d, "(%s%s)", ws, ceil_mode ? ", ceil_mode" : "");
    onnx_note_layer(c, n, i, d);
    return RM_OK;
}

static int op_global_avgpool(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {NULL};
    onnx_value *x;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_ACT, "input");
    if (!rc && x->rank < 3) rc = onnx_fail(c, RM_ERR_UNSUPPORTED, "a rank-%d input has nothing to pool", x->rank);
    rm_layer_config cfg = {0};
    int i;
    if (!rc) rc = onnx_emit(c, n, RM_LAYER_GLOBAL_AVGPOOL, &cfg, &x, 1, NULL, x->rank, &i);
    if (!rc) onnx_note_layer(c, n, i, "");
    return rc;
}

/* ReduceMean over the spatial axes of an N x C x H x W tensor (x.mean([2, 3]),
 * MnasNet's and ShuffleNet's pooling): a global average pool, keepdims
 * deciding whether N x C x 1 x 1 or N x C follows. Other axes are refused. */
static int op_reduce_mean(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"axes", "keepdims", NULL};
    onnx_value *x;
    const int64_t *axes = NULL;
    size_t naxes = 0;
    int64_t keep = 1;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_ACT, "input");
    if (!rc) rc = onnx_attr_ints(&axes, &naxes, c, n, "axes");
    if (!rc) rc = onnx_attr_int(&keep, c, n, "keepdims", 1);
    if (rc) return rc;
    if (n->n_input > 1)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "axes as an input (opset 18); export at opset 13 to 17");
    int spatial = x->rank == 4 && naxes == 2;
    for (size_t k = 0; spatial && k < 2; k++) {
        int64_t a = axes[k] < 0 ? axes[k] + 4 : axes[k];
        spatial = (a == 2 || a == 3) && (k == 0 || a != (axes[0] < 0 ? axes[0] + 4 : axes[0]));
    }
    if (!spatial)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "ReduceMean over axes other than the two spatial ones of a rank-4 tensor; remat averages "
                         "over height and width only (global_avgpool)");
    rm_layer_config cfg = {0};
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_GLOBAL_AVGPOOL, &cfg, &x, 1, NULL, keep ? 4 : 2, &i))) return rc;
    onnx_note_layer(c, n, i, keep ? "(ReduceMean over H, W)" : "(ReduceMean over H, W, not kept)");
    return RM_OK;
}

/* ---- fully connected: Gemm, MatMul (+ Add) ------------------------------------------ */

/* A bias for m outputs: a scalar (broadcast), [m] or [1, m]. */
static int bias_ok(const onnx_const *b, int64_t m)
{
    if (b->count == 1) return 1;
    if (b->count != (size_t)m) return 0;
    return b->rank == 1 || (b->rank == 2 && b->dims[0] == 1);
}

int onnx_fill_bias(onnx_weights *wt, const onnx_value *b, int64_t m, float scale, onnx_import *c)
{
    wt->nb = (size_t)m;
    if (!(wt->b = malloc((size_t)m * sizeof *wt->b))) return onnx_fail(c, RM_ERR_NOMEM, "out of memory");
    for (int64_t k = 0; k < m; k++) {
        float v = b->c.f[b->c.count == 1 ? 0 : k];
        /* Finite values scaled by beta can still overflow. */
        if (!isfinite(wt->b[k] = scale * v))
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "its bias '%s' (%g at %lld) times %g is %g; remat trains on finite "
                             "numbers",
                             b->name, (double)v, (long long)k, (double)scale, (double)wt->b[k]);
    }
    return RM_OK;
}

/* weights[j][f] (out x in) from b: [in, out] (transpose) or [out, in] times alpha. */
int onnx_linear_weights(onnx_weights *wt, const onnx_const *b, int transposed, int64_t m, int64_t f, float alpha,
                        onnx_import *c)
{
    wt->nw = (size_t)m * (size_t)f;
    if (!(wt->w = malloc((wt->nw ? wt->nw : 1) * sizeof *wt->w))) return onnx_fail(c, RM_ERR_NOMEM, "out of memory");
    for (int64_t j = 0; j < m; j++)
        for (int64_t k = 0; k < f; k++) wt->w[j * f + k] = alpha * (transposed ? b->f[k * m + j] : b->f[j * f + k]);
    /* Finite weights times a finite alpha can still overflow. */
    for (size_t k = 0; k < wt->nw; k++)
        if (!isfinite(wt->w[k]))
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "its weights times alpha %g overflow float (element %zu); remat "
                             "trains on finite numbers",
                             (double)alpha, k);
    return RM_OK;
}

static int need_features(onnx_import *c, const onnx_value *a)
{
    if (a->rank != 2)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "a rank-%d input ('%s'); remat's linear takes N x features (flatten first)", a->rank, a->name);
    return RM_OK;
}

static int op_gemm(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"alpha", "beta", "transA", "transB", "broadcast", NULL};
    onnx_value *a, *b, *cc = onnx_input(c, n, 2);
    float alpha, beta;
    int64_t ta, tb;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&a, c, n, 0, ONNX_ACT, "input A");
    if (!rc) rc = need_features(c, a);
    if (!rc) rc = onnx_need_input(&b, c, n, 1, ONNX_CONST, "weights B");
    if (!rc) rc = onnx_need_floats(c, b, "weights B");
    if (!rc && cc) rc = onnx_need_input(&cc, c, n, 2, ONNX_CONST, "bias C");
    if (!rc && cc) rc = onnx_need_floats(c, cc, "bias C");
    if (!rc) rc = onnx_attr_float(&alpha, c, n, "alpha", 1.0f);
    if (!rc) rc = onnx_attr_float(&beta, c, n, "beta", 1.0f);
    if (!rc) rc = need_finite_attr(c, "alpha", alpha);
    if (!rc) rc = need_finite_attr(c, "beta", beta);
    if (!rc) rc = onnx_attr_int(&ta, c, n, "transA", 0);
    if (!rc) rc = onnx_attr_int(&tb, c, n, "transB", 0);
    if (rc) return rc;
    if (ta)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "transA=1 (the batch along the columns); remat's linear takes N x features");
    if (b->c.rank != 2) return onnx_fail(c, RM_ERR_UNSUPPORTED, "weights B of rank %d (2 expected)", b->c.rank);
    int64_t f = a->shape.c, m = tb ? b->c.dims[0] : b->c.dims[1], bf = tb ? b->c.dims[1] : b->c.dims[0];
    if (bf != f)
        return onnx_fail(c, RM_ERR_SHAPE, "weights B for %lld input features, the input has %lld", (long long)bf,
                         (long long)f);
    if (m < 1 || m > (1 << 20)) return onnx_fail(c, RM_ERR_UNSUPPORTED, "%lld outputs", (long long)m);
    int has_bias = cc && beta != 0.0f;
    if (has_bias && !bias_ok(&cc->c, m)) {
        char d[96];
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "bias C of shape %s; remat's linear adds one bias per output ([%lld] or a scalar), the same "
                         "for every sample",
                         onnx_dims_str(d, sizeof d, cc->c.dims, cc->c.rank), (long long)m);
    }
    onnx_weights wt = {0};
    rc = onnx_linear_weights(&wt, &b->c, !tb, m, f, alpha, c);
    if (!rc && has_bias) rc = onnx_fill_bias(&wt, cc, m, beta, c);
    if (rc) {
        free(wt.w), free(wt.b);
        return rc;
    }
    rm_layer_config cfg = {0};
    cfg.out_channels = (int)m, cfg.bias = has_bias;
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_LINEAR, &cfg, &a, 1, &wt, 2, &i))) return rc;
    char d[160];
    snprintf(d, sizeof d, "(%lld -> %lld, %s%s%s)", (long long)f, (long long)m, has_bias ? "bias" : "no bias",
             alpha != 1.0f ? ", alpha folded into the weights" : "",
             has_bias && beta != 1.0f ? ", beta folded into the bias" : "");
    onnx_note_layer(c, n, i, d);
    return RM_OK;
}

/* MatMul by constant weights: a linear layer, or on a channels-last view
 * (nn.Linear over the last axis of N x H x W x C or N x T x D) a 1x1
 * convolution, which computes the same per position; when its one reader
 * is an Add of a constant [out] (PyTorch's nn.Linear exported as MatMul +
 * Add), that constant is the layer's bias and the Add's output is the
 * layer's. */
static int op_matmul(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {NULL};
    onnx_value *a, *b;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&a, c, n, 0, ONNX_ACT_ANY_LAYOUT, "input A");
    if (!rc && !a->channels_last) rc = need_features(c, a);
    if (!rc) rc = onnx_need_input(&b, c, n, 1, ONNX_CONST, "weights B");
    if (!rc) rc = onnx_need_floats(c, b, "weights B");
    if (rc) return rc;
    if (b->c.rank != 2) return onnx_fail(c, RM_ERR_UNSUPPORTED, "weights B of rank %d (2 expected)", b->c.rank);
    int64_t f = a->shape.c, m = b->c.dims[1];
    if (b->c.dims[0] != f)
        return onnx_fail(c, RM_ERR_SHAPE, "weights B for %lld input features, the input has %lld",
                         (long long)b->c.dims[0], (long long)f);
    if (m < 1 || m > (1 << 20)) return onnx_fail(c, RM_ERR_UNSUPPORTED, "%lld outputs", (long long)m);
    /* The bias Add, if there is one. */
    const onnx_value *out = n->n_output && n->output[0] ? onnx_find(c, n->output[0]) : NULL;
    int add = out ? onnx_sole_consumer(c, out) : -1;
    const onnx_value *bias = NULL;
    if (add > c->node && !strcmp(c->g->node[add]->op_type ? c->g->node[add]->op_type : "", "Add") &&
        c->g->node[add]->n_input == 2) {
        const Onnx__NodeProto *an = c->g->node[add];
        int other = !strcmp(an->input[0], out->name) ? 1 : 0;
        onnx_value *v = onnx_input(c, an, other);
        if (v && v->kind == ONNX_CONST && !v->c.is_int && v->c.count == (size_t)m && bias_ok(&v->c, m)) bias = v;
    }
    onnx_weights wt = {0};
    rc = onnx_linear_weights(&wt, &b->c, 1, m, f, 1.0f, c);
    if (!rc && bias) rc = onnx_fill_bias(&wt, bias, m, 1.0f, c);
    if (rc) {
        free(wt.w), free(wt.b);
        return rc;
    }
    rm_layer_config cfg = {0};
    cfg.out_channels = (int)m, cfg.bias = bias != NULL;
    if (a->channels_last) cfg.kernel = cfg.stride = rm_hw_square(1);
    int i;
    if ((rc = onnx_emit(c, n, a->channels_last ? RM_LAYER_CONV2D : RM_LAYER_LINEAR, &cfg, &a, 1, &wt, a->rank, &i)))
        return rc;
    char d[128];
    snprintf(d, sizeof d, "(%lld -> %lld%s, %s)", (long long)f, (long long)m,
             a->channels_last ? ", 1x1: MatMul over the channels-last axis" : "",
             bias ? "bias from the Add that follows" : "no bias");
    onnx_note_layer(c, n, i, d);
    if (!bias) return RM_OK;
    int self = c->node;
    c->node = add;
    const Onnx__NodeProto *an = c->g->node[add];
    rc = onnx_set_act(c, an, 0, i, a->rank, a->channels_last, c->m->layers[i].out_shape);
    if (!rc) {
        onnx_note(c, an, "alias of '%s': its constant '%s' is that linear layer's bias", c->m->layers[i].name,
                  bias->name);
        c->skip[add] = 1;
        c->sum.aliases++;
    }
    c->node = self;
    return rc;
}

/* ---- folding constants ---------------------------------------------------------- */

int onnx_fold_done(onnx_import *c, const Onnx__NodeProto *n, onnx_const *k)
{
    char d[160];
    if (k->is_int && k->count <= 8)
        onnx_dims_str(d, sizeof d, k->i, (int)k->count);
    else
        snprintf(d, sizeof d, "%zu %s", k->count, k->is_int ? "integers" : "floats");
    int rc = onnx_set_const(c, n, 0, k);
    if (!rc) {
        onnx_note(c, n, "folded: %s", d);
        c->sum.folded++;
    }
    return rc;
}

static int all_const(onnx_import *c, const Onnx__NodeProto *n)
{
    int any = 0;
    for (size_t k = 0; k < n->n_input; k++) {
        const onnx_value *v = onnx_input(c, n, (int)k);
        if (!v) continue;
        if (v->kind != ONNX_CONST) return 0;
        any = 1;
    }
    return any;
}

/* The integers of constant input k (NULL, *count 0 when absent). */
static int const_ints(const int64_t **v, size_t *count, onnx_import *c, const Onnx__NodeProto *n, int k,
                      const char *role)
{
    *v = NULL;
    *count = 0;
    onnx_value *x = onnx_input(c, n, k);
    if (!x) return RM_OK;
    int rc = onnx_need_input(&x, c, n, k, ONNX_CONST, role);
    if (rc) return rc;
    if (!x->c.is_int) return onnx_fail(c, RM_ERR_PARSE, "its %s '%s' is not a tensor of integers", role, x->name);
    *v = x->c.i;
    *count = x->c.count;
    return RM_OK;
}

/* The axes of Squeeze / Unsqueeze / Slice: an attribute before opset 13 (10 for Slice), an input after. */
static int axes_of(const int64_t **v, size_t *count, onnx_import *c, const Onnx__NodeProto *n, int input)
{
    int rc = onnx_attr_ints(v, count, c, n, "axes");
    if (rc || *v) return rc;
    return const_ints(v, count, c, n, input, "axes");
}

static int op_constant(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"value", "value_float", "value_floats", "value_int", "value_ints", NULL};
    int rc = onnx_check_attrs(c, n, attrs);
    if (rc) return rc;
    if (n->n_attribute != 1) return onnx_fail(c, RM_ERR_PARSE, "a Constant takes exactly one value attribute");
    const Onnx__AttributeProto *a = n->attribute[0];
    onnx_const k;
    if (!strcmp(a->name, "value")) {
        if (!a->t) return onnx_fail(c, RM_ERR_PARSE, "its value is no tensor");
        char what[96];
        snprintf(what, sizeof what, "the value of node %d", c->node + 1);
        rc = onnx_const_from_tensor(&k, a->t, c->path, what, c->e);
    } else {
        int is_int = !strcmp(a->name, "value_int") || !strcmp(a->name, "value_ints");
        int list = !strcmp(a->name, "value_floats") || !strcmp(a->name, "value_ints");
        int64_t d = list ? (int64_t)(is_int ? a->n_ints : a->n_floats) : 1;
        rc = onnx_const_alloc(&k, is_int, list, &d, c->path, c->e);
        for (int64_t q = 0; !rc && q < d; q++) {
            if (is_int)
                k.i[q] = list ? a->ints[q] : a->i;
            else
                k.f[q] = list ? a->floats[q] : a->f;
            if (is_int && k.i[q] == ONNX_BATCH) rc = onnx_fail(c, RM_ERR_UNSUPPORTED, "INT64_MIN");
        }
        if (rc) onnx_const_free(&k);
    }
    return rc ? rc : onnx_fold_done(c, n, &k);
}

static int op_shape(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"start", "end", NULL};
    onnx_value *x;
    int64_t start, end;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, any_layout(onnx_input(c, n, 0)), "input");
    if (!rc) rc = onnx_attr_int(&start, c, n, "start", 0);
    if (!rc) rc = onnx_attr_int(&end, c, n, "end", INT64_MAX);
    if (rc) return rc;
    int64_t d[RM_ONNX_MAX_RANK];
    int rank = x->kind == ONNX_ACT ? act_dims(d, x) : x->c.rank;
    if (x->kind == ONNX_CONST) memcpy(d, x->c.dims, sizeof d);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < start ? start : end > rank ? rank : end;
    int64_t len = end - start;
    onnx_const k;
    if ((rc = onnx_const_alloc(&k, 1, 1, &len, c->path, c->e))) return rc;
    for (int64_t q = 0; q < len; q++) k.i[q] = d[start + q];
    return onnx_fold_done(c, n, &k);
}

/* Gather, Slice, Concat, Squeeze, Unsqueeze, Reshape and Flatten of
 * constants move elements without arithmetic: one element copy. */
static void const_copy(onnx_const *dst, size_t to, const onnx_const *src, size_t from)
{
    if (dst->is_int)
        dst->i[to] = src->i[from];
    else
        dst->f[to] = src->f[from];
}

static size_t dims_product(const int64_t *d, int from, int to)
{
    size_t p = 1;
    for (int k = from; k < to; k++) p *= (size_t)d[k];
    return p;
}

static int op_gather(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"axis", NULL};
    onnx_value *x, *ix;
    int64_t axis;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, any_layout(onnx_input(c, n, 0)), "data");
    if (!rc && x->kind == ONNX_ACT) return onnx_op_gather_token(c, n, x);
    if (!rc) rc = onnx_need_input(&ix, c, n, 1, ONNX_CONST, "indices");
    if (!rc && !ix->c.is_int) rc = onnx_fail(c, RM_ERR_PARSE, "its indices are not integers");
    if (!rc) rc = onnx_attr_int(&axis, c, n, "axis", 0);
    if (rc) return rc;
    int r = x->c.rank;
    axis = norm_axis(axis, r);
    if (r < 1 || axis < 0 || axis >= r || r - 1 + ix->c.rank > RM_ONNX_MAX_RANK)
        return onnx_fail(c, RM_ERR_PARSE, "axis out of range");
    int64_t d[RM_ONNX_MAX_RANK];
    int rank = 0;
    for (int k = 0; k < axis; k++) d[rank++] = x->c.dims[k];
    for (int k = 0; k < ix->c.rank; k++) d[rank++] = ix->c.dims[k];
    for (int k = (int)axis + 1; k < r; k++) d[rank++] = x->c.dims[k];
    if (dims_product(d, 0, rank) > ONNX_MAX_FOLDED)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "gathers more than %zu elements at import", ONNX_MAX_FOLDED);
    onnx_const k;
    if ((rc = onnx_const_alloc(&k, x->c.is_int, rank, d, c->path, c->e))) return rc;
    size_t outer = dims_product(x->c.dims, 0, (int)axis), inner = dims_product(x->c.dims, (int)axis + 1, r);
    int64_t len = x->c.dims[axis];
    size_t o = 0;
    for (size_t a = 0; a < outer; a++)
        for (size_t q = 0; q < ix->c.count; q++) {
            int64_t at = ix->c.i[q] < 0 ? ix->c.i[q] + len : ix->c.i[q];
            if (ix->c.i[q] == ONNX_BATCH || at < 0 || at >= len) {
                onnx_const_free(&k);
                return onnx_fail(c, RM_ERR_PARSE, "index out of range");
            }
            for (size_t b = 0; b < inner; b++) const_copy(&k, o++, &x->c, (a * (size_t)len + (size_t)at) * inner + b);
        }
    return onnx_fold_done(c, n, &k);
}

static int op_unsqueeze(onnx_import *c, const Onnx__NodeProto *n, int squeeze)
{
    static const char *const attrs[] = {"axes", NULL};
    onnx_value *x;
    const int64_t *ax;
    size_t nax;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_UNSET, "data");
    if (!rc && x->kind == ONNX_ACT)
        rc = onnx_fail(c, RM_ERR_UNSUPPORTED,
                       "%s a tensor computed from the input; remat folds it on constants (shapes) only",
                       squeeze ? "squeezes" : "unsqueezes");
    if (!rc) rc = axes_of(&ax, &nax, c, n, 1);
    if (rc) return rc;
    if (nax > RM_ONNX_MAX_RANK) return onnx_fail(c, RM_ERR_UNSUPPORTED, "%zu axes (at most %d)", nax, RM_ONNX_MAX_RANK);
    int r = x->c.rank, out_rank = squeeze ? (nax ? r - (int)nax : 0) : r + (int)nax;
    int64_t d[RM_ONNX_MAX_RANK];
    if (out_rank < 0 || out_rank > RM_ONNX_MAX_RANK) return onnx_fail(c, RM_ERR_UNSUPPORTED, "rank %d", out_rank);
    int mark[RM_ONNX_MAX_RANK] = {0};
    for (size_t q = 0; q < nax; q++) {
        int64_t a = norm_axis(ax[q], squeeze ? r : out_rank);
        if (a < 0 || a >= (squeeze ? r : out_rank) || mark[a] || (squeeze && x->c.dims[a] != 1))
            return onnx_fail(c, RM_ERR_PARSE, "axis %lld out of range, repeated or not of size 1", (long long)ax[q]);
        mark[a] = 1;
    }
    int o = 0;
    if (squeeze) {
        for (int k = 0; k < r; k++)
            if (!(nax ? mark[k] : x->c.dims[k] == 1)) d[o++] = x->c.dims[k];
    } else {
        for (int k = 0, src = 0; k < out_rank; k++) d[o++] = mark[k] ? 1 : x->c.dims[src++];
    }
    onnx_const k;
    if ((rc = onnx_const_alloc(&k, x->c.is_int, o, d, c->path, c->e))) return rc;
    for (size_t q = 0; q < k.count; q++) const_copy(&k, q, &x->c, q);
    return onnx_fold_done(c, n, &k);
}

static int op_cast(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"to", "saturate", NULL};
    onnx_value *x;
    int64_t to;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_UNSET, "input");
    if (!rc) rc = onnx_attr_int(&to, c, n, "to", 0);
    if (rc) return rc;
    int to_int = to == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || to == ONNX__TENSOR_PROTO__DATA_TYPE__INT32;
    int to_float = to == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || to == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    if (x->kind == ONNX_ACT) {
        if (to != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "casts a tensor computed from the input to type %lld; remat "
                             "computes in FLOAT",
                             (long long)to);
        if ((rc = onnx_set_alias(c, n, 0, x))) return rc;
        onnx_note(c, n, "alias of '%s' (already FLOAT)", x->name);
        c->sum.aliases++;
        return RM_OK;
    }
    if (!to_int && !to_float) return onnx_fail(c, RM_ERR_UNSUPPORTED, "a cast to type %lld", (long long)to);
    onnx_const k;
    if ((rc = onnx_const_alloc(&k, to_int, x->c.rank, x->c.dims, c->path, c->e))) return rc;
    for (size_t q = 0; q < k.count; q++) {
        if (x->c.is_int && x->c.i[q] == ONNX_BATCH && !to_int) {
            onnx_const_free(&k);
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "casts the batch size to a float; remat does not compute with the "
                             "batch size at import");
        }
        /* A float outside int64 (or NaN) has no integer: converting it is
         * undefined in C; -2^63 would read as the batch size. */
        if (to_int && !x->c.is_int && !(x->c.f[q] > -0x1p63f && x->c.f[q] < 0x1p63f)) {
            float f = x->c.f[q];
            onnx_const_free(&k);
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "casts %g to an integer; remat folds floats of -(2^63 - 1) to "
                             "2^63 - 1 only",
                             (double)f);
        }
        if (to_int)
            k.i[q] = x->c.is_int ? x->c.i[q] : (int64_t)x->c.f[q];
        else
            k.f[q] = x->c.is_int ? (float)x->c.i[q] : x->c.f[q];
        /* INT32 holds what INT64 does not: ONNX leaves such a cast undefined
         * (onnxruntime wraps it), so a value outside is refused rather than
         * kept as a number no INT32 can be. The batch size stays itself. */
        if (to == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 && k.i[q] != ONNX_BATCH &&
            (k.i[q] < INT32_MIN || k.i[q] > INT32_MAX)) {
            int64_t v = k.i[q];
            onnx_const_free(&k);
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "casts %lld to INT32, outside its range of -2^31 to 2^31 - 1",
                             (long long)v);
        }
    }
    return onnx_fold_done(c, n, &k);
}

static int op_concat_const(onnx_import *c, const Onnx__NodeProto *n, int64_t axis)
{
    const onnx_value *first = onnx_input(c, n, 0);
    if (!first) return onnx_fail(c, RM_ERR_PARSE, "no inputs");
    int r = first->c.rank;
    axis = norm_axis(axis, r);
    if (axis < 0 || axis >= r) return onnx_fail(c, RM_ERR_PARSE, "axis out of range");
    int64_t d[RM_ONNX_MAX_RANK];
    memcpy(d, first->c.dims, sizeof d);
    d[axis] = 0;
    for (size_t k = 0; k < n->n_input; k++) {
        const onnx_value *v = onnx_input(c, n, (int)k);
        if (!v) continue;
        if (v->c.rank != r || v->c.is_int != first->c.is_int)
            return onnx_fail(c, RM_ERR_PARSE, "inputs of different ranks or types");
        for (int q = 0; q < r; q++)
            if (q != axis && v->c.dims[q] != first->c.dims[q])
                return onnx_fail(c, RM_ERR_PARSE, "inputs of different shapes");
        d[axis] += v->c.dims[axis];
    }
    if (dims_product(d, 0, r) > ONNX_MAX_FOLDED)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "concatenates more than %zu elements at import", ONNX_MAX_FOLDED);
    onnx_const k;
    int rc = onnx_const_alloc(&k, first->c.is_int, r, d, c->path, c->e);
    if (rc) return rc;
    size_t outer = dims_product(d, 0, (int)axis), inner = dims_product(d, (int)axis + 1, r), o = 0;
    for (size_t a = 0; a < outer; a++)
        for (size_t q = 0; q < n->n_input; q++) {
            const onnx_value *v = onnx_input(c, n, (int)q);
            if (!v) continue;
            size_t block = (size_t)v->c.dims[axis] * inner;
            for (size_t b = 0; b < block; b++) const_copy(&k, o++, &v->c, a * block + b);
        }
    return onnx_fold_done(c, n, &k);
}

static int op_concat(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"axis", NULL};
    int64_t axis;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_attr_int(&axis, c, n, "axis", 1);
    if (rc) return rc;
    /* A node of no inputs is no constant to fold, and no layer (in[0] below). */
    if (!n->n_input) return onnx_fail(c, RM_ERR_PARSE, "no inputs");
    if (all_const(c, n)) return op_concat_const(c, n, axis);
    onnx_value *in[RM_MAX_INPUTS];
    int nin = 0;
    if (n->n_input > RM_MAX_INPUTS)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "%zu inputs; remat's concat takes at most %d", n->n_input,
                         RM_MAX_INPUTS);
    for (size_t k = 0; k < n->n_input; k++) {
        if ((rc = onnx_need_input(&in[nin], c, n, (int)k, ONNX_ACT, "input"))) return rc;
        if (in[nin]->rank != in[0]->rank)
            return onnx_fail(c, RM_ERR_SHAPE, "inputs of ranks %d and %d", in[0]->rank, in[nin]->rank);
        nin++;
    }
    if (norm_axis(axis, in[0]->rank) != 1)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "axis %lld; remat's concat joins channels (axis 1)", (long long)axis);
    return emit_nary(c, n, RM_LAYER_CONCAT, in, nin, "(channels)");
}

/* A constant's elements under new dimensions (no batch among them). */
static int reshape_const(onnx_import *c, const Onnx__NodeProto *n, const onnx_value *x, const int64_t *d, int rank)
{
    onnx_const k;
    int rc = onnx_const_alloc(&k, x->c.is_int, rank, d, c->path, c->e);
    if (rc) return rc;
    if (k.count != x->c.count) {
        onnx_const_free(&k);
        return onnx_fail(c, RM_ERR_PARSE, "reshapes %zu elements into %zu", x->c.count, k.count);
    }
    for (size_t q = 0; q < k.count; q++) const_copy(&k, q, &x->c, q);
    return onnx_fold_done(c, n, &k);
}

/* An activation flattened to N x features: a flatten layer, or nothing when
 * it is N x features already. */
static int flatten_act(onnx_import *c, const Onnx__NodeProto *n, onnx_value *x)
{
    int rc;
    if (x->rank == 2) {
        if ((rc = onnx_set_alias(c, n, 0, x))) return rc;
        onnx_note(c, n, "alias of '%s' (N x features already)", x->name);
        c->sum.aliases++;
        return RM_OK;
    }
    rm_layer_config cfg = {0};
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_FLATTEN, &cfg, &x, 1, NULL, 2, &i))) return rc;
    onnx_note_layer(c, n, i, "");
    return RM_OK;
}

static int op_flatten(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"axis", NULL};
    onnx_value *x;
    int64_t axis;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_UNSET, "input");
    if (!rc) rc = onnx_attr_int(&axis, c, n, "axis", 1);
    if (rc) return rc;
    int r = x->kind == ONNX_ACT ? x->rank : x->c.rank;
    axis = norm_axis(axis, r);
    if (axis < 0 || axis > r) return onnx_fail(c, RM_ERR_PARSE, "axis out of range");
    if (x->kind == ONNX_CONST) {
        int64_t d[2] = {(int64_t)dims_product(x->c.dims, 0, (int)axis), (int64_t)dims_product(x->c.dims, (int)axis, r)};
        return reshape_const(c, n, x, d, 2);
    }
    if (axis != 1)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "axis %lld; remat flattens everything after the batch (axis 1), keeping samples apart",
                         (long long)axis);
    return flatten_act(c, n, x);
}

static int op_reshape(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"allowzero", NULL};
    onnx_value *x;
    const int64_t *t;
    size_t nt;
    int64_t allowzero;
    const onnx_value *raw = onnx_input(c, n, 0);
    const int view = raw && raw->kind == ONNX_VIEW;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, view ? ONNX_VIEW : ONNX_UNSET, "data");
    if (!rc) rc = onnx_attr_int(&allowzero, c, n, "allowzero", 0);
    if (!rc) rc = const_ints(&t, &nt, c, n, 1, "shape");
    if (!rc && !t && onnx_attr(n, "shape"))
        rc = onnx_fail(c, RM_ERR_UNSUPPORTED, "the opset-1 'shape' attribute; export with opset 5 or later");
    if (!rc && !t) rc = onnx_fail(c, RM_ERR_PARSE, "no shape input");
    if (rc) return rc;
    if (nt < 1 || nt > RM_ONNX_MAX_RANK) return onnx_fail(c, RM_ERR_UNSUPPORTED, "a target of rank %zu", nt);
    int64_t in[RM_ONNX_MAX_RANK], d[RM_ONNX_MAX_RANK];
    int r = x->kind == ONNX_ACT ? act_dims(in, x) : view ? onnx_layout_view_dims(in, x) : x->c.rank;
    if (x->kind == ONNX_CONST) memcpy(in, x->c.dims, sizeof in);
    char ts[160], is[160];
    onnx_dims_str(ts, sizeof ts, t, (int)nt);
    onnx_dims_str(is, sizeof is, in, r);
    int infer = -1, note_batch = 0;
    for (size_t k = 0; k < nt; k++) {
        d[k] = t[k];
        if (t[k] == 0 && !allowzero) {
            if ((int)k >= r) return onnx_fail(c, RM_ERR_PARSE, "shape %s copies dimension %zu of %s", ts, k, is);
            d[k] = in[k];
        } else if (t[k] == -1) {
            if (infer >= 0) return onnx_fail(c, RM_ERR_PARSE, "shape %s has two -1", ts);
            infer = (int)k;
        } else if (k == 0 && x->kind != ONNX_CONST && c->fixed_batch > 0 && t[k] == c->fixed_batch) {
            /* The export fixed the batch and folded it into the shape: the
             * first dimension is still the batch, at any batch size. */
            d[k] = ONNX_BATCH;
            note_batch = 1;
        } else if (t[k] < -1 && t[k] != ONNX_BATCH) {
            return onnx_fail(c, RM_ERR_PARSE, "shape %s has a negative dimension", ts);
        }
    }
    if (x->kind == ONNX_CONST) {
        size_t known = 1;
        for (size_t k = 0; k < nt; k++)
            if ((int)k != infer) {
                if (d[k] == ONNX_BATCH)
                    return onnx_fail(c, RM_ERR_UNSUPPORTED, "reshapes a constant by the batch size");
                if (__builtin_mul_overflow(known, (size_t)d[k], &known))
                    return onnx_fail(c, RM_ERR_UNSUPPORTED, "shape %s has more elements than size_t counts", ts);
            }
        if (infer >= 0) {
            if (!known || x->c.count % known) return onnx_fail(c, RM_ERR_PARSE, "shape %s does not fit %s", ts, is);
            d[infer] = (int64_t)(x->c.count / known);
        }
        return reshape_const(c, n, x, d, (int)nt);
    }
    /* An activation (or a view of one): the batch must stay first; the rest must hold one sample. */
    size_t per = rm_shape_numel(view ? x->source->shape : x->shape), rest = 1;
    for (size_t k = 1; k < nt; k++) {
        if (d[k] == ONNX_BATCH)
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "reshapes %s to %s, moving the batch; remat keeps it first", is,
                             ts);
        if ((int)k != infer && __builtin_mul_overflow(rest, (size_t)d[k], &rest))
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "shape %s has more elements than size_t counts", ts);
    }
    if (infer == 0) {
        if (rest != per)
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "reshapes %s to %s, which mixes samples; remat keeps the batch "
                             "first",
                             is, ts);
        d[0] = ONNX_BATCH;
    } else if (infer > 0) {
        if (!rest || per % rest) return onnx_fail(c, RM_ERR_PARSE, "shape %s does not fit %s", ts, is);
        d[infer] = (int64_t)(per / rest);
        rest = per;
    }
    if (d[0] != ONNX_BATCH || rest != per)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "reshapes %s to %s: the first dimension is not the batch%s; remat keeps the batch first", is,
                         ts, c->fixed_batch ? "" : " (the input's batch is symbolic)");
    if (note_batch)
        onnx_note(c, n, "its shape's first dimension %lld is the batch the export fixed: read as N",
                  (long long)c->fixed_batch);
    if (view || nt == 5) return onnx_layout_reshape(c, n, x, d, (int)nt);
    /* A target remat lays out as the input is (the same dimensions, or only
     * trailing 1s added or removed: [N, C, L] and [N, C, L, 1]) is the same
     * tensor under another ONNX rank. */
    int64_t pd[4] = {1, 1, 1, 1};
    for (size_t k = 1; k < nt && nt <= 4; k++) pd[k] = d[k];
    if (nt >= 2 && nt <= 4 && pd[1] == x->shape.c && pd[2] == x->shape.h && pd[3] == x->shape.w) {
        onnx_value v = *x;
        v.rank = (int)nt;
        if ((rc = onnx_set_alias(c, n, 0, &v))) return rc;
        onnx_note(c, n, "alias of '%s' (the same layout)", x->name);
        c->sum.aliases++;
        return RM_OK;
    }
    if (nt == 3 && x->rank == 4 && !x->channels_last && pd[1] == x->shape.c &&
        pd[2] == (int64_t)x->shape.h * x->shape.w) {
        /* [N, C, H, W] as [N, C, H W]: ViT's patches as tokens; the memory is the same */
        onnx_value v = *x;
        v.rank = 3, v.shape.h *= v.shape.w, v.shape.w = 1;
        if ((rc = onnx_set_alias(c, n, 0, &v))) return rc;
        onnx_note(c, n, "alias of '%s' (its H x W positions as one axis)", x->name);
        c->sum.aliases++;
        return RM_OK;
    }
    if (nt != 2) {
        char ds[160];
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "reshapes %s to %s; remat reshapes only to N x features (a flatten)",
                         is, onnx_dims_str(ds, sizeof ds, d, (int)nt));
    }
    return flatten_act(c, n, x);
}

static int op_slice(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"starts", "ends", "axes", NULL};
    onnx_value *x;
    const int64_t *st, *en, *ax, *sp = NULL;
    size_t nst, nen, nax, nsp = 0;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_UNSET, "data");
    if (!rc) rc = onnx_attr_ints(&st, &nst, c, n, "starts");
    if (!rc && !st) rc = const_ints(&st, &nst, c, n, 1, "starts");
    if (!rc) rc = onnx_attr_ints(&en, &nen, c, n, "ends");
    if (!rc && !en) rc = const_ints(&en, &nen, c, n, 2, "ends");
    if (!rc) rc = axes_of(&ax, &nax, c, n, 3);
    if (!rc) rc = const_ints(&sp, &nsp, c, n, 4, "steps");
    if (rc) return rc;
    if (x->kind == ONNX_ACT) {
        if (nst != 1 || nen != 1 || nax != 1 || (nsp && nsp != 1))
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "slices a computed tensor along %zu axes; remat slices one (the channels), axes given",
                             nst);
        return onnx_layout_slice(c, n, x, norm_axis(ax[0], x->rank), st[0], en[0], nsp ? sp[0] : 1);
    }
    if (x->c.rank != 1 || nst != 1 || nen != 1 || (nax && (nax != 1 || norm_axis(ax[0], 1) != 0)) || (nsp && nsp != 1))
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "remat folds Slice of a 1-D constant along its one axis only");
    int64_t len = x->c.dims[0], step = nsp ? sp[0] : 1, s = st[0], e = en[0];
    if (step == 0) return onnx_fail(c, RM_ERR_PARSE, "a step of 0");
    if (s == ONNX_BATCH || e == ONNX_BATCH || step == ONNX_BATCH)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "slices by the batch size, which an import does not know");
    if (s < 0) s += len;
    if (e < 0) e += len;
    int64_t lo = step > 0 ? 0 : -1, hi = step > 0 ? len : len - 1;
    s = s < lo ? lo : s > hi ? hi : s;
    e = e < lo ? lo : e > hi ? hi : e;
    /* Elements from s to e by step, in unsigned arithmetic: e - s + step
     * would overflow for a step near INT64_MAX (the bounds are clamped to
     * [-1, len] above, and step is not INT64_MIN). */
    uint64_t span = step > 0 ? (e > s ? (uint64_t)(e - s) : 0) : (s > e ? (uint64_t)(s - e) : 0);
    uint64_t by = step > 0 ? (uint64_t)step : (uint64_t)-step;
    int64_t count = span ? (int64_t)((span - 1) / by + 1) : 0;
    onnx_const k;
    if ((rc = onnx_const_alloc(&k, x->c.is_int, 1, &count, c->path, c->e))) return rc;
    for (int64_t q = 0; q < count; q++) const_copy(&k, (size_t)q, &x->c, (size_t)(s + q * step));
    return onnx_fold_done(c, n, &k);
}

/* Transpose: of a constant (a weight transposed before a MatMul), folded; of
 * a computed tensor or a view, its layout (onnx_ops_layout.c). */
static int op_transpose(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"perm", NULL};
    onnx_value *x;
    const int64_t *perm;
    size_t np;
    const onnx_value *raw = onnx_input(c, n, 0);
    const int view = raw && raw->kind == ONNX_VIEW;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, view ? ONNX_VIEW : any_layout(raw), "data");
    if (!rc) rc = onnx_attr_ints(&perm, &np, c, n, "perm");
    if (rc) return rc;
    if (view) return onnx_layout_transpose(c, n, x, perm, np);
    int matched;
    if ((rc = onnx_op_attention_begin(c, n, &matched)) || matched) return rc;
    if (x->kind == ONNX_ACT) return onnx_layout_channels_last(c, n, x, perm, np);
    int r = x->c.rank, p[RM_ONNX_MAX_RANK], seen[RM_ONNX_MAX_RANK] = {0};
    if (np && np != (size_t)r) return onnx_fail(c, RM_ERR_PARSE, "perm of %zu axes for rank %d", np, r);
    for (int k = 0; k < r; k++) {
        int64_t a = np ? perm[k] : r - 1 - k; /* no perm: the axes reversed */
        if (a < 0 || a >= r || seen[a]) return onnx_fail(c, RM_ERR_PARSE, "perm is not a permutation");
        seen[a] = 1;
        p[k] = (int)a;
    }
    int64_t d[RM_ONNX_MAX_RANK];
    size_t stride[RM_ONNX_MAX_RANK]; /* of x's axes */
    for (int k = 0; k < r; k++) d[k] = x->c.dims[p[k]];
    for (int k = r - 1; k >= 0; k--) stride[k] = k == r - 1 ? 1 : stride[k + 1] * (size_t)x->c.dims[k + 1];
    onnx_const k;
    if ((rc = onnx_const_alloc(&k, x->c.is_int, r, d, c->path, c->e))) return rc;
    for (size_t q = 0; q < k.count; q++) {
        size_t rest = q, from = 0;
        for (int a = r - 1; a >= 0; a--) {
            from += rest % (size_t)d[a] * stride[p[a]];
            rest /= (size_t)d[a];
        }
        const_copy(&k, q, &x->c, from);
    }
    return onnx_fold_done(c, n, &k);
}

/* Add, Sub, Mul, Div of constants, element by element, a one-element
 * operand broadcast. Shape arithmetic: never on the batch size. */
static int fold_arith(onnx_import *c, const Onnx__NodeProto *n, char op)
{
    onnx_value *a, *b;
    int rc = onnx_need_input(&a, c, n, 0, ONNX_CONST, "input A");
    if (!rc) rc = onnx_need_input(&b, c, n, 1, ONNX_CONST, "input B");
    if (rc) return rc;
    const onnx_value *big = a->c.count >= b->c.count ? a : b;
    int same = a->c.rank == b->c.rank;
    for (int k = 0; same && k < a->c.rank; k++) same = a->c.dims[k] == b->c.dims[k];
    if (!same && a->c.count != 1 && b->c.count != 1)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "broadcasts constants of different shapes; remat folds equal shapes "
                         "or a single value");
    int is_int = a->c.is_int && b->c.is_int;
    onnx_const k;
    if ((rc = onnx_const_alloc(&k, is_int, big->c.rank, big->c.dims, c->path, c->e))) return rc;
    for (size_t q = 0; q < k.count; q++) {
        size_t ia = a->c.count == 1 ? 0 : q, ib = b->c.count == 1 ? 0 : q;
        if ((a->c.is_int && a->c.i[ia] == ONNX_BATCH) || (b->c.is_int && b->c.i[ib] == ONNX_BATCH)) {
            onnx_const_free(&k);
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "computes with the batch size, which an import does not know (each command chooses it)");
        }
        if (is_int) {
            int64_t x = a->c.i[ia], y = b->c.i[ib];
            if (op == '/' && y == 0) {
                onnx_const_free(&k);
                return onnx_fail(c, RM_ERR_PARSE, "divides by zero");
            }
            /* Checked: an overflow is undefined in C, and a result of
             * INT64_MIN (Sub(-(2^63 - 1), 1), no overflow) would be read as
             * the batch dimension. (x / y cannot overflow: x is never INT64_MIN.) */
            int64_t r = 0;
            int over = op == '+'   ? __builtin_add_overflow(x, y, &r)
                       : op == '-' ? __builtin_sub_overflow(x, y, &r)
                       : op == '*' ? __builtin_mul_overflow(x, y, &r)
                                   : (r = x / y, 0);
            if (over || r == ONNX_BATCH) {
                onnx_const_free(&k);
                return onnx_fail(c, RM_ERR_UNSUPPORTED,
                                 "folds %lld %c %lld, which %s; remat folds integers of -(2^63 - 1) to 2^63 - 1 "
                                 "(-2^63 stands for the batch size)",
                                 (long long)x, op, (long long)y, over ? "overflows int64" : "is -2^63");
            }
            k.i[q] = r;
        } else {
            double x = a->c.is_int ? (double)a->c.i[ia] : a->c.f[ia], y = b->c.is_int ? (double)b->c.i[ib] : b->c.f[ib];
            k.f[q] = (float)(op == '+' ? x + y : op == '-' ? x - y : op == '*' ? x * y : x / y);
        }
    }
    return onnx_fold_done(c, n, &k);
}

/* ---- element-wise and pass-through -------------------------------------------------- */

static int op_add(onnx_import *c, const Onnx__NodeProto *n, int sum)
{
    static const char *const attrs[] = {"broadcast", "axis", "consumed_inputs", NULL};
    int rc = onnx_check_attrs(c, n, attrs);
    if (rc) return rc;
    if (!n->n_input) return onnx_fail(c, RM_ERR_PARSE, "no inputs");
    if (all_const(c, n) && !sum) return fold_arith(c, n, '+');
    onnx_value *in[RM_MAX_INPUTS];
    if (n->n_input > RM_MAX_INPUTS)
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "%zu inputs; remat's add takes at most %d", n->n_input, RM_MAX_INPUTS);
    int nin = 0;
    for (size_t k = 0; k < n->n_input; k++) {
        onnx_value *v = onnx_input(c, n, (int)k);
        if (v && v->kind == ONNX_CONST)
            return onnx_fail(
                c, RM_ERR_UNSUPPORTED,
                "adds the constant '%s'; remat has no layer adding a constant (one right after a MatMul is "
                "folded into the linear layer's bias)",
                v->name);
        if ((rc = onnx_need_input(&in[nin], c, n, (int)k, ONNX_ACT_ANY_LAYOUT, "input"))) return rc;
        if (in[nin]->channels_last != in[0]->channels_last)
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "adds '%s' and '%s', one of them transposed to its channels last",
                             in[0]->name, in[nin]->name);
        if (in[nin]->rank != in[0]->rank || !rm_shape_equal(in[nin]->shape, in[0]->shape)) {
            char a[64], b[64];
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "adds '%s' (%s, rank %d) and '%s' (%s, rank %d): broadcasting; remat's add takes equal "
                             "shapes",
                             in[0]->name, rm_shape_str(in[0]->shape, a, sizeof a), in[0]->rank, in[nin]->name,
                             rm_shape_str(in[nin]->shape, b, sizeof b), in[nin]->rank);
        }
        nin++;
    }
    return emit_nary(c, n, RM_LAYER_ADD, in, nin, "");
}

/* Mul of an N x C x H x W tensor by constant factors C x 1 x 1 (or 1 x C x
 * 1 x 1), in either order: ConvNeXt's layer scale, a trainable factor per
 * channel. That is a depthwise 1x1 convolution without bias, the factors
 * its weights. */
static int layer_scale(onnx_import *c, const Onnx__NodeProto *n)
{
    const onnx_value *k0 = onnx_input(c, n, 0);
    const int kfirst = k0 && k0->kind == ONNX_CONST;
    onnx_value *x, *k;
    int rc = onnx_need_input(&x, c, n, kfirst, ONNX_ACT, "input");
    if (!rc) rc = onnx_need_input(&k, c, n, !kfirst, ONNX_CONST, "factors");
    if (!rc) rc = onnx_need_floats(c, k, "factors");
    if (rc) return rc;
    const int64_t ch = x->shape.c;
    int per_channel = x->rank == 4 && (k->c.rank == 3 || k->c.rank == 4) && k->c.count == (size_t)ch;
    per_channel = per_channel && k->c.dims[k->c.rank - 3] == ch; /* the rest are 1 */
    if (!per_channel) {
        char ks[96];
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "multiplies '%s' (rank %d) by the constant '%s' (%s); remat multiplies a computed tensor "
                         "by constants only as a factor per channel: C x 1 x 1 on N x C x H x W (a layer scale)",
                         x->name, x->rank, k->name, onnx_dims_str(ks, sizeof ks, k->c.dims, k->c.rank));
    }
    onnx_weights wt = {0};
    if ((rc = copy_floats(&wt.w, k->c.f, k->c.count, c))) return rc;
    wt.nw = k->c.count;
    rm_layer_config cfg = {0};
    cfg.kernel = cfg.stride = rm_hw_square(1);
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_DWCONV2D, &cfg, &x, 1, &wt, 4, &i))) return rc;
    char d[160];
    snprintf(d, sizeof d, "(a layer scale: depthwise 1x1, no bias, the factors '%s' its weights)", k->name);
    onnx_note_layer(c, n, i, d);
    return RM_OK;
}

static int op_arith(onnx_import *c, const Onnx__NodeProto *n, char op)
{
    static const char *const attrs[] = {"broadcast", "axis", "consumed_inputs", NULL};
    int rc = onnx_check_attrs(c, n, attrs);
    if (rc) return rc;
    if (op == '*' && n->n_input == 2 && !all_const(c, n)) return layer_scale(c, n);
    if (!all_const(c, n))
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "%s on a tensor computed from the input; remat folds it on constants "
                         "(shape arithmetic) only",
                         n->op_type);
    return fold_arith(c, n, op);
}

static int op_identity(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {NULL};
    onnx_value *x;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, any_layout(onnx_input(c, n, 0)), "input");
    if (!rc) rc = onnx_set_alias(c, n, 0, x);
    if (rc) return rc;
    onnx_note(c, n, "alias of '%s'", x->name);
    c->sum.aliases++;
    return RM_OK;
}

static int op_dropout(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"ratio", "is_test", "seed", NULL};
    onnx_value *x, *r = onnx_input(c, n, 1), *t = onnx_input(c, n, 2);
    float ratio = 0.5f;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_ACT_ANY_LAYOUT, "input");
    if (!rc) rc = onnx_only_first_output(c, n, "the mask");
    if (!rc) rc = onnx_attr_float(&ratio, c, n, "ratio", 0.5f);
    if (!rc && r) rc = onnx_need_input(&r, c, n, 1, ONNX_CONST, "ratio");
    if (!rc && t) rc = onnx_need_input(&t, c, n, 2, ONNX_CONST, "training_mode");
    if (rc) return rc;
    if (r) {
        if (r->c.count != 1 || r->c.is_int) return onnx_fail(c, RM_ERR_PARSE, "a ratio that is not one float");
        ratio = r->c.f[0];
    }
    /* training_mode (a training export says true): remat's dropout drops in
     * training and passes everything in evaluation by itself, either way. */
    if (t && t->c.count != 1) return onnx_fail(c, RM_ERR_PARSE, "a training_mode that is not one value");
    if (!(ratio >= 0.0f && ratio < 1.0f))
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "ratio %g (remat: 0 <= p < 1)", (double)ratio);
    if (ratio == 0.0f) {
        if ((rc = onnx_set_alias(c, n, 0, x))) return rc;
        onnx_note(c, n, "alias of '%s' (ratio 0 drops nothing)", x->name);
        c->sum.aliases++;
        return RM_OK;
    }
    rm_layer_config cfg = {0};
    cfg.p = ratio;
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_DROPOUT, &cfg, &x, 1, NULL, x->rank, &i))) return rc;
    char d[32];
    snprintf(d, sizeof d, "(p %g)", (double)ratio);
    onnx_note_layer(c, n, i, d);
    return RM_OK;
}

/* Stochastic depth as a training-mode export writes it (torchvision's
 * StochasticDepth, mode "row"): RandomUniformLike of a constant [B, 1, ...]
 * (one draw per sample of the export's batch), Less than the survival rate
 * s, Cast to float, Div by s, Mul by the branch x (either order): a
 * drop_path layer of p = 1 - s, which draws its own mask per sample, of any
 * batch. *matched 0 when n begins no such chain. */
static int op_stochastic_depth(onnx_import *c, const Onnx__NodeProto *n, int *matched)
{
    int node[4];
    double s, s2;
    const onnx_value *shape = n->n_input == 1 ? onnx_find(c, n->input[0]) : NULL;
    const Onnx__NodeProto *less = onnx_later(c, node[0] = onnx_sole_reader(c, n->output[0]), "Less", 2);
    const Onnx__NodeProto *cast = less && !strcmp(less->input[0], n->output[0]) && onnx_scalar(c, less->input[1], &s)
                                      ? onnx_later(c, node[1] = onnx_sole_reader(c, less->output[0]), "Cast", 1)
                                      : NULL;
    const Onnx__NodeProto *div = cast ? onnx_later(c, node[2] = onnx_sole_reader(c, cast->output[0]), "Div", 2) : NULL;
    const Onnx__NodeProto *mul =
        div && !strcmp(div->input[0], cast->output[0]) && onnx_scalar(c, div->input[1], &s2) && s2 == s
            ? onnx_later(c, node[3] = onnx_sole_reader(c, div->output[0]), "Mul", 2)
            : NULL;
    const char *xn = mul ? onnx_other_input(mul, div->output[0]) : NULL;
    onnx_value *x = xn ? onnx_find(c, xn) : NULL;
    int ok = x && x->kind == ONNX_ACT && shape && shape->kind == ONNX_CONST && shape->c.rank == x->rank && s > 0.0 &&
             s <= 1.0;
    for (int k = 1; ok && k < shape->c.rank; k++) ok = shape->c.dims[k] == 1;
    if (!(*matched = ok)) return RM_OK;
    rm_layer_config cfg = {0};
    cfg.p = (float)(1.0 - s);
    int i, rc = onnx_emit(c, n, RM_LAYER_DROP_PATH, &cfg, &x, 1, NULL, x->rank, &i);
    if (rc) return rc;
    char d[64];
    snprintf(d, sizeof d, "(stochastic depth: a sample's branch dropped with p %g)", (double)cfg.p);
    onnx_note_layer(c, n, i, d);
    return onnx_cover(c, i, x, node, 4, "stochastic depth");
}

/* ---- Resize / Upsample: nearest, by two ------------------------------------------- */

/* Where ONNX's nearest resize reads output coordinate x from, for an axis of
 * len values resized to 2 len, as the operator's specification computes it. */
static int64_t nearest_source(int64_t x, int64_t len, const char *coord, const char *round)
{
    double scale = 2.0, out = 2.0 * (double)len, s;
    if (!strcmp(coord, "half_pixel"))
        s = ((double)x + 0.5) / scale - 0.5;
    else if (!strcmp(coord, "pytorch_half_pixel"))
        s = out > 1 ? ((double)x + 0.5) / scale - 0.5 : 0.0;
    else if (!strcmp(coord, "align_corners"))
        s = out > 1 ? (double)x * (double)(len - 1) / (out - 1) : 0.0;
    else if (!strcmp(coord, "tf_half_pixel_for_nn"))
        s = ((double)x + 0.5) / scale;
    else
        s = (double)x / scale; /* asymmetric */
    double f = floor(s), r;
    if (!strcmp(round, "floor"))
        r = f;
    else if (!strcmp(round, "ceil"))
        r = ceil(s);
    else if (s - f == 0.5)
        r = !strcmp(round, "round_prefer_ceil") ? f + 1 : f;
    else
        r = floor(s + 0.5);
    int64_t k = (int64_t)r;
    return k < 0 ? 0 : k >= len ? len - 1 : k;
}

static int op_resize(onnx_import *c, const Onnx__NodeProto *n, int upsample)
{
    static const char *const resize_attrs[] = {"mode",
                                               "coordinate_transformation_mode",
                                               "nearest_mode",
                                               "cubic_coeff_a",
                                               "exclude_outside",
                                               "extrapolation_value",
                                               NULL};
    static const char *const upsample_attrs[] = {"mode", "scales", NULL};
    onnx_value *x;
    char mode[32], coord[32] = "asymmetric", round[32] = "floor";
    int rc = onnx_check_attrs(c, n, upsample ? upsample_attrs : resize_attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_ACT, "input");
    if (!rc) rc = need_rank4(c, x, "upsample2x");
    if (!rc) rc = onnx_attr_string(mode, sizeof mode, c, n, "mode", "nearest");
    /* Upsample, and Resize before opset 11, read x / scale rounded down. */
    if (!rc && !upsample && c->opset >= 11) {
        rc = onnx_attr_string(coord, sizeof coord, c, n, "coordinate_transformation_mode", "half_pixel");
        if (!rc) rc = onnx_attr_string(round, sizeof round, c, n, "nearest_mode", "round_prefer_floor");
    }
    if (rc) return rc;
    if (strcmp(mode, "nearest"))
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "mode '%s'; remat's upsample2x is nearest-neighbour", mode);
    if (!strcmp(coord, "tf_crop_and_resize"))
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "coordinate_transformation_mode tf_crop_and_resize (a crop)");
    /* The factors: scales (attribute or input) or sizes. */
    float sc[4] = {0, 0, 0, 0};
    int have = 0;
    const Onnx__AttributeProto *sa = upsample ? onnx_attr(n, "scales") : NULL;
    if (sa && sa->n_floats == 4) {
        for (int k = 0; k < 4; k++) sc[k] = sa->floats[k];
        have = 1;
    }
    int scales_in = upsample || c->opset < 11 ? 1 : 2;
    onnx_value *s = onnx_input(c, n, scales_in), *z = upsample || c->opset < 11 ? NULL : onnx_input(c, n, 3);
    if (!have && s && s->kind == ONNX_CONST && s->c.count == 4 && !s->c.is_int) {
        for (int k = 0; k < 4; k++) sc[k] = s->c.f[k];
        have = 1;
    } else if (!have && s && s->kind != ONNX_CONST) {
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "its scales are computed from the input; remat needs constants");
    }
    if (!have && z) {
        if (z->kind != ONNX_CONST || !z->c.is_int || z->c.count != 4)
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "its sizes are not 4 constant integers");
        const int64_t want[4] = {ONNX_BATCH, x->shape.c, 2LL * x->shape.h, 2LL * x->shape.w};
        int ok = (z->c.i[0] == ONNX_BATCH || z->c.i[0] == c->fixed_batch) && z->c.i[1] == want[1] &&
                 z->c.i[2] == want[2] && z->c.i[3] == want[3];
        char d[128];
        if (!ok)
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "sizes %s; remat's upsample2x doubles height and width only",
                             onnx_dims_str(d, sizeof d, z->c.i, 4));
        sc[0] = sc[1] = 1.0f, sc[2] = sc[3] = 2.0f;
        have = 1;
    }
    if (!have) return onnx_fail(c, RM_ERR_PARSE, "neither scales nor sizes");
    if (sc[0] != 1.0f || sc[1] != 1.0f || sc[2] != 2.0f || sc[3] != 2.0f)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "scales (%g, %g, %g, %g); remat's upsample2x scales height and width by "
                         "2 only",
                         (double)sc[0], (double)sc[1], (double)sc[2], (double)sc[3]);
    /* Every output pixel must read the input pixel upsample2x copies. */
    const int64_t lens[2] = {x->shape.h, x->shape.w};
    for (int a = 0; a < 2; a++)
        for (int64_t q = 0; q < 2 * lens[a]; q++)
            if (nearest_source(q, lens[a], coord, round) != q / 2)
                return onnx_fail(c, RM_ERR_UNSUPPORTED,
                                 "coordinate_transformation_mode %s with nearest_mode %s reads input %lld for output "
                                 "%lld along %s; remat's upsample2x copies each pixel to a 2x2 block (PyTorch's "
                                 "nearest: asymmetric, floor)",
                                 coord, round, (long long)nearest_source(q, lens[a], coord, round), (long long)q,
                                 a ? "the width" : "the height");
    rm_layer_config cfg = {0};
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_UPSAMPLE2X, &cfg, &x, 1, NULL, 4, &i))) return rc;
    onnx_note_layer(c, n, i, "(nearest, x2)");
    return RM_OK;
}

/* ---- dispatch ---------------------------------------------------------------------- */

/* What the message of an unsupported operator lists: the families, short
 * enough for an error message (docs/onnx.md has the table). */
static const char *const supported =
    "Conv, ConvTranspose, BatchNormalization, LayerNorm, the activations, pooling, ReduceMean, Gemm, MatMul, Add, "
    "Sum, Mul, Concat, Flatten, Reshape, Transpose, Slice, Resize, Dropout, stochastic depth, ViT's attention; "
    "docs/onnx.md says what each accepts";

int onnx_import_node(onnx_import *c, const Onnx__NodeProto *n)
{
    const char *op = n->op_type;
    if (c->node == c->attn.exit) return onnx_op_attention_end(c, n);
    if (!strcmp(op, "Conv")) return op_conv(c, n);
    if (!strcmp(op, "ConvTranspose")) return op_conv_transpose(c, n);
    if (!strcmp(op, "BatchNormalization")) return op_batchnorm(c, n);
    if (!strcmp(op, "Relu")) return onnx_op_relu(c, n);
    if (!strcmp(op, "Clip")) return onnx_op_clip(c, n);
    if (!strcmp(op, "Sigmoid")) return onnx_op_gate(c, n, RM_LAYER_SIGMOID);
    if (!strcmp(op, "HardSigmoid")) return onnx_op_gate(c, n, RM_LAYER_HARDSIGMOID);
    if (!strcmp(op, "Tanh") || !strcmp(op, "HardSwish") || !strcmp(op, "Gelu")) return onnx_op_activation(c, n);
    int matched, rc = onnx_op_pattern(c, n, &matched);
    if (matched) return rc;
    if (!strcmp(op, "Mul") && onnx_is_mul_of_activations(c, n)) return onnx_op_channel_scale(c, n);
    if (!strcmp(op, "RandomUniformLike") && ((rc = op_stochastic_depth(c, n, &matched)) || matched)) return rc;
    if (!strcmp(op, "RandomUniformLike") || !strcmp(op, "RandomNormalLike") || !strcmp(op, "RandomUniform") ||
        !strcmp(op, "RandomNormal") || !strcmp(op, "Bernoulli"))
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "operator %s: randomness in the graph other than stochastic depth (RandomUniformLike, Less, "
                         "Cast, Div, Mul of a branch); export with model.eval(): remat's own dropout is the "
                         "randomness it trains with",
                         op);
    if (!strcmp(op, "MaxPool")) return op_pool(c, n, 1);
    if (!strcmp(op, "AveragePool")) return op_pool(c, n, 0);
    if (!strcmp(op, "GlobalAveragePool")) return op_global_avgpool(c, n);
    if (!strcmp(op, "ReduceMean")) {
        if ((rc = onnx_op_layernorm(c, n, &matched)) || matched) return rc;
        return op_reduce_mean(c, n);
    }
    if (!strcmp(op, "LayerNormalization")) return onnx_op_layernormalization(c, n);
    if (!strcmp(op, "Gemm")) return op_gemm(c, n);
    if (!strcmp(op, "MatMul")) return op_matmul(c, n);
    if (!strcmp(op, "Add")) return op_add(c, n, 0);
    if (!strcmp(op, "Sum")) return op_add(c, n, 1);
    if (!strcmp(op, "Sub")) return op_arith(c, n, '-');
    if (!strcmp(op, "Mul")) return op_arith(c, n, '*');
    if (!strcmp(op, "Div")) return op_arith(c, n, '/');
    if (!strcmp(op, "Concat")) return op_concat(c, n);
    if (!strcmp(op, "Flatten")) return op_flatten(c, n);
    if (!strcmp(op, "Reshape")) return op_reshape(c, n);
    if (!strcmp(op, "Resize")) return op_resize(c, n, 0);
    if (!strcmp(op, "Upsample")) return op_resize(c, n, 1);
    if (!strcmp(op, "Dropout")) return op_dropout(c, n);
    if (!strcmp(op, "Identity")) return op_identity(c, n);
    if (!strcmp(op, "Constant")) return op_constant(c, n);
    if (!strcmp(op, "Shape")) return op_shape(c, n);
    if (!strcmp(op, "Gather")) return op_gather(c, n);
    if (!strcmp(op, "Unsqueeze")) return op_unsqueeze(c, n, 0);
    if (!strcmp(op, "Squeeze")) return op_unsqueeze(c, n, 1);
    if (!strcmp(op, "Cast")) return op_cast(c, n);
    if (!strcmp(op, "Slice")) return op_slice(c, n);
    if (!strcmp(op, "Transpose")) return op_transpose(c, n);
    if (!strcmp(op, "Expand")) return onnx_op_expand(c, n);
    if (!strcmp(op, "ConstantOfShape")) return onnx_op_constant_of_shape(c, n);
    if (!strcmp(op, "Equal")) return onnx_op_equal(c, n);
    if (!strcmp(op, "Where")) return onnx_op_where(c, n);
    if (!strcmp(op, "Softmax") || !strcmp(op, "LogSoftmax"))
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "operator %s; remat's loss (--loss) applies the softmax itself: export the logits, without "
                         "a final softmax",
                         op);
    return onnx_fail(c, RM_ERR_UNSUPPORTED, "operator '%s' is not supported; remat imports %s", op, supported);
}
