/* The ONNX importer's LayerNorm. Up to opset 16 PyTorch exports
 * nn.LayerNorm(C) decomposed, over the last axis:
 *   m = ReduceMean(x), d = Sub(x, m), Pow(d, 2), v = ReduceMean(that),
 *   Add(v, eps), Sqrt, Div(d, that), Mul by gamma, Add beta
 * (the constants on either side of the Add and the Mul). Recognised at its
 * first ReduceMean, the nine nodes become one layernorm layer when the last
 * ONNX axis is remat's channel axis: an N x C tensor, or a channels-last
 * view (ConvNeXt's N x H x W x C, a transformer's N x T x D). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ReduceMean node r averages over the last of rank axes only, keeping it. */
static int mean_of_last_axis(const Onnx__NodeProto *r, int rank)
{
    const Onnx__AttributeProto *axes = onnx_attr(r, "axes"), *keep = onnx_attr(r, "keepdims");
    if (r->n_input != 1 || r->n_attribute != (size_t)(1 + (keep != NULL)) || !axes || axes->n_ints != 1) return 0;
    if (keep && keep->i != 1) return 0;
    return axes->ints[0] == -1 || axes->ints[0] == rank - 1;
}

/* The nodes after the first ReduceMean, in order: Sub, Pow, ReduceMean,
 * Add, Sqrt, Div, Mul, Add; *eps, *gamma and *beta what they read. */
static int layernorm_nodes(const onnx_import *c, const Onnx__NodeProto *mean, const onnx_value *x, int *node,
                           double *eps, const onnx_value **gamma, const onnx_value **beta)
{
    const int64_t ch = x->shape.c;
    if (!mean_of_last_axis(mean, x->rank) || mean->n_output < 1 || !mean->output[0]) return 0;
    const Onnx__NodeProto *sub = onnx_later(c, node[0] = onnx_sole_reader(c, mean->output[0]), "Sub", 2);
    if (!sub || strcmp(sub->input[0], x->name) || strcmp(sub->input[1], mean->output[0])) return 0;
    /* d has two readers, Pow then Div */
    const onnx_value *d = onnx_find(c, sub->output[0]);
    if (!d || d->consumers != 2) return 0;
    const Onnx__NodeProto *pow = NULL;
    for (size_t i = (size_t)node[0] + 1; i < c->g->n_node && !pow; i++) {
        const Onnx__NodeProto *p = onnx_later(c, (int)i, "Pow", 2);
        if (p && !strcmp(p->input[0], d->name)) pow = p, node[1] = (int)i;
    }
    double two;
    if (!pow || !onnx_scalar(c, pow->input[1], &two) || two != 2.0) return 0;
    const Onnx__NodeProto *var = onnx_later(c, node[2] = onnx_sole_reader(c, pow->output[0]), "ReduceMean", 1);
    if (!var || !mean_of_last_axis(var, x->rank)) return 0;
    const Onnx__NodeProto *add = onnx_later(c, node[3] = onnx_sole_reader(c, var->output[0]), "Add", 2);
    const char *e = add ? onnx_other_input(add, var->output[0]) : NULL;
    if (!e || !onnx_scalar(c, e, eps) || !(*eps > 0.0)) return 0;
    const Onnx__NodeProto *sq = onnx_later(c, node[4] = onnx_sole_reader(c, add->output[0]), "Sqrt", 1);
    const Onnx__NodeProto *div = sq ? onnx_later(c, node[5] = onnx_sole_reader(c, sq->output[0]), "Div", 2) : NULL;
    if (!div || strcmp(div->input[0], d->name) || strcmp(div->input[1], sq->output[0])) return 0;
    const Onnx__NodeProto *mul = onnx_later(c, node[6] = onnx_sole_reader(c, div->output[0]), "Mul", 2);
    if (!mul || !(*gamma = onnx_float_const(c, onnx_other_input(mul, div->output[0]), (size_t)ch))) return 0;
    const Onnx__NodeProto *shift = onnx_later(c, node[7] = onnx_sole_reader(c, mul->output[0]), "Add", 2);
    return shift && (*beta = onnx_float_const(c, onnx_other_input(shift, mul->output[0]), (size_t)ch)) != NULL;
}

/* The layer's scale and shift (none: zeros), copied from the file's. */
static int norm_weights(onnx_weights *wt, onnx_import *c, const float *gamma, const float *beta, size_t ch)
{
    memset(wt, 0, sizeof *wt);
    wt->w = malloc(ch * sizeof *wt->w), wt->b = calloc(ch, sizeof *wt->b);
    if (!wt->w || !wt->b) {
        free(wt->w), free(wt->b);
        return onnx_fail(c, RM_ERR_NOMEM, "out of memory for the layernorm's %zu channels", ch);
    }
    memcpy(wt->w, gamma, ch * sizeof *wt->w);
    if (beta) memcpy(wt->b, beta, ch * sizeof *wt->b);
    wt->nw = wt->nb = ch;
    return RM_OK;
}

int onnx_op_layernorm(onnx_import *c, const Onnx__NodeProto *n, int *matched)
{
    enum { NODES = 8 };
    int node[NODES];
    double eps = 0;
    const onnx_value *gamma = NULL, *beta = NULL;
    onnx_value *x = n->n_input && n->input[0] ? onnx_find(c, n->input[0]) : NULL;
    *matched = x && x->kind == ONNX_ACT && (x->channels_last || x->rank == 2) &&
               layernorm_nodes(c, n, x, node, &eps, &gamma, &beta);
    if (!*matched) return RM_OK;
    onnx_weights wt;
    int i, rc = norm_weights(&wt, c, gamma->c.f, beta->c.f, (size_t)x->shape.c);
    if (rc) return rc;
    rm_layer_config cfg = {0};
    cfg.eps = (float)eps;
    rc = onnx_emit(c, n, RM_LAYER_LAYERNORM, &cfg, &x, 1, &wt, x->rank, &i);
    if (rc) return rc;
    char d[160];
    snprintf(d, sizeof d, "(over the last axis, eps %g; the scale '%s' and the shift '%s')", eps, gamma->name,
             beta->name);
    onnx_note_layer(c, n, i, d);
    return onnx_cover(c, i, x, node, NODES, "LayerNorm, decomposed");
}

/* LayerNormalization (opset 17, which PyTorch writes from opset 17 on) over
 * the last axis, with a scale and a shift. */
int onnx_op_layernormalization(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"axis", "epsilon", "stash_type", NULL};
    onnx_value *x, *g, *b = onnx_input(c, n, 2);
    int64_t axis, stash;
    float eps;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_ACT_ANY_LAYOUT, "input");
    if (!rc) rc = onnx_need_input(&g, c, n, 1, ONNX_CONST, "scale");
    if (!rc && b) rc = onnx_need_input(&b, c, n, 2, ONNX_CONST, "bias");
    if (!rc) rc = onnx_attr_int(&axis, c, n, "axis", -1);
    if (!rc) rc = onnx_attr_float(&eps, c, n, "epsilon", 1e-5f);
    if (!rc) rc = onnx_attr_int(&stash, c, n, "stash_type", 1);
    if (!rc) rc = onnx_only_first_output(c, n, "the mean and inverse standard deviation");
    if (rc) return rc;
    if (axis != -1 && axis != x->rank - 1)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "LayerNormalization from axis %lld; remat normalises over the last axis", (long long)axis);
    if (!x->channels_last && x->rank != 2)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "LayerNormalization over the last axis of '%s' (rank %d), which is not its channels; remat "
                         "normalises over the channels: N x C, or a view with the channels moved last",
                         x->name, x->rank);
    if (!(eps > 0.0f)) return onnx_fail(c, RM_ERR_UNSUPPORTED, "epsilon %g (remat: > 0)", (double)eps);
    const size_t ch = (size_t)x->shape.c;
    if (g->c.is_int || g->c.count != ch || (b && (b->c.is_int || b->c.count != ch)))
        return onnx_fail(c, RM_ERR_SHAPE, "a scale or bias that is not %zu floats, one per channel", ch);
    onnx_weights wt;
    if ((rc = norm_weights(&wt, c, g->c.f, b ? b->c.f : NULL, ch))) return rc;
    rm_layer_config cfg = {0};
    cfg.eps = eps;
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_LAYERNORM, &cfg, &x, 1, &wt, x->rank, &i))) return rc;
    char d[96];
    snprintf(d, sizeof d, "(over the last axis, eps %g%s)", (double)eps, b ? "" : "; no bias: the shift starts at 0");
    onnx_note_layer(c, n, i, d);
    return RM_OK;
}
