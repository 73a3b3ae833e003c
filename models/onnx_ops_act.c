/* The ONNX importer's activations: Relu, Clip (ReLU or ReLU6), Sigmoid,
 * HardSigmoid, Tanh, HardSwish and Gelu map onto remat's activation layers
 * (layers/activation.c), and the forms PyTorch's exporter writes at opset
 * 13 are recognised whole:
 *   SiLU       Sigmoid(x) then Mul(x, that)                         -> silu
 *   Hardswish  HardSigmoid(x) then Mul(x, that)                     -> hardswish
 *   GELU       Div(x, sqrt 2), Erf, Add 1, Mul by x, Mul by 1/2     -> gelu
 * A pattern's later nodes are then covered by the layer (skipped, their
 * output an alias of its). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

static int one_input_layer(onnx_import *c, const Onnx__NodeProto *n, rm_layer_kind kind, const char *detail)
{
    onnx_value *x;
    int i, rc = onnx_need_input(&x, c, n, 0, ONNX_ACT_ANY_LAYOUT, "input");
    rm_layer_config cfg = {0};
    if (!rc) rc = onnx_emit(c, n, kind, &cfg, &x, 1, NULL, x->rank, &i);
    if (!rc) onnx_note_layer(c, n, i, detail);
    return rc;
}

int onnx_op_relu(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"consumed_inputs", NULL};
    int rc = onnx_check_attrs(c, n, attrs);
    return rc ? rc : one_input_layer(c, n, RM_LAYER_RELU, "");
}

/* Clip to [0, +inf) is a ReLU (torch.clamp(x, min=0)), to [0, 6] a ReLU6;
 * any other range is neither. The bounds: attributes before opset 11,
 * constant inputs after. */
int onnx_op_clip(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {"min", "max", NULL};
    onnx_value *x, *lo = onnx_input(c, n, 1), *hi = onnx_input(c, n, 2);
    float mn = -INFINITY, mx = INFINITY;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&x, c, n, 0, ONNX_ACT_ANY_LAYOUT, "input");
    if (!rc) rc = onnx_attr_float(&mn, c, n, "min", -INFINITY);
    if (!rc) rc = onnx_attr_float(&mx, c, n, "max", INFINITY);
    if (!rc && lo) rc = onnx_need_input(&lo, c, n, 1, ONNX_CONST, "min");
    if (!rc && hi) rc = onnx_need_input(&hi, c, n, 2, ONNX_CONST, "max");
    if (rc) return rc;
    const onnx_value *bound[2] = {lo, hi};
    float *dst[2] = {&mn, &mx};
    for (int k = 0; k < 2; k++) {
        if (!bound[k]) continue;
        if (bound[k]->c.count != 1 || bound[k]->c.is_int)
            return onnx_fail(c, RM_ERR_PARSE, "its %s is not one float", k ? "max" : "min");
        *dst[k] = bound[k]->c.f[0];
    }
    if (mn == 0.0f && mx == INFINITY) return one_input_layer(c, n, RM_LAYER_RELU, "(Clip to [0, inf))");
    if (mn == 0.0f && mx == 6.0f) return one_input_layer(c, n, RM_LAYER_RELU6, "(Clip to [0, 6])");
    return onnx_fail(c, RM_ERR_UNSUPPORTED,
                     "Clip to [%g, %g]; remat has relu (Clip to [0, inf)) and relu6 (Clip to [0, 6]), no other "
                     "clipping layer",
                     (double)mn, (double)mx);
}

/* ---- the gates and their products ---- */

/* Sigmoid or HardSigmoid; when its one reader multiplies it by its own
 * input, the pair is silu or hardswish. */
int onnx_op_gate(onnx_import *c, const Onnx__NodeProto *n, rm_layer_kind kind)
{
    static const char *const sig_attrs[] = {NULL}, *const hard_attrs[] = {"alpha", "beta", NULL};
    const int hard = kind == RM_LAYER_HARDSIGMOID;
    int rc = onnx_check_attrs(c, n, hard ? hard_attrs : sig_attrs);
    if (rc) return rc;
    if (hard) {
        /* torch.nn.Hardsigmoid is ONNX's with alpha 1/6 and beta 1/2 (ONNX's default alpha is 0.2). */
        float alpha, beta;
        if ((rc = onnx_attr_float(&alpha, c, n, "alpha", 0.2f)) || (rc = onnx_attr_float(&beta, c, n, "beta", 0.5f)))
            return rc;
        if (fabsf(alpha - 1.0f / 6.0f) > 1e-6f || beta != 0.5f)
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "HardSigmoid with alpha %g and beta %g; remat's hardsigmoid is PyTorch's: alpha 1/6, "
                             "beta 1/2",
                             (double)alpha, (double)beta);
    }
    if (!n->n_input || !n->input[0] || n->n_output < 1 || !n->output[0]) return onnx_fail(c, RM_ERR_PARSE, "no input");
    int i, m = onnx_sole_reader(c, n->output[0]);
    const Onnx__NodeProto *mul = onnx_later(c, m, "Mul", 2);
    const char *o = mul ? onnx_other_input(mul, n->output[0]) : NULL;
    if (!o || strcmp(o, n->input[0])) return one_input_layer(c, n, kind, "");
    const rm_layer_kind fused = hard ? RM_LAYER_HARDSWISH : RM_LAYER_SILU;
    onnx_value *x;
    rm_layer_config cfg = {0};
    if ((rc = onnx_need_input(&x, c, n, 0, ONNX_ACT_ANY_LAYOUT, "input")) ||
        (rc = onnx_emit(c, n, fused, &cfg, &x, 1, NULL, x->rank, &i)))
        return rc;
    onnx_note_layer(c, n, i, hard ? "(HardSigmoid then Mul by its input)" : "(Sigmoid then Mul by its input)");
    return onnx_cover(c, i, x, &m, 1, hard ? "x * hardsigmoid(x)" : "x * sigmoid(x)");
}

/* Tanh, HardSwish (opset 14) and Gelu (opset 20: approximate "none" or "tanh"). */
int onnx_op_activation(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const none[] = {NULL}, *const gelu_attrs[] = {"approximate", NULL};
    const int gelu = !strcmp(n->op_type, "Gelu");
    int rc = onnx_check_attrs(c, n, gelu ? gelu_attrs : none);
    if (rc) return rc;
    if (!gelu) return one_input_layer(c, n, !strcmp(n->op_type, "Tanh") ? RM_LAYER_TANH : RM_LAYER_HARDSWISH, "");
    char approx[16];
    if ((rc = onnx_attr_string(approx, sizeof approx, c, n, "approximate", "none"))) return rc;
    if (!strcmp(approx, "none")) return one_input_layer(c, n, RM_LAYER_GELU, "");
    if (!strcmp(approx, "tanh")) return one_input_layer(c, n, RM_LAYER_GELU_TANH, "(the tanh approximation)");
    return onnx_fail(c, RM_ERR_UNSUPPORTED, "Gelu with approximate \"%s\" (\"none\" or \"tanh\")", approx);
}

/* GELU as PyTorch writes it at opset 13: x / sqrt 2, Erf, + 1, * x, * 1/2
 * (the constants on either side of each Add and Mul). Called at the Div. */
static int gelu_nodes(const onnx_import *c, const Onnx__NodeProto *div, int *node)
{
    if (div->n_input != 2 || div->n_output < 1 || !div->input[0] || !div->input[1] || !div->output[0]) return 0;
    const char *x = div->input[0];
    double v;
    if (!onnx_scalar(c, div->input[1], &v) || fabs(v - sqrt(2.0)) > 1e-6 * sqrt(2.0)) return 0;
    const Onnx__NodeProto *erf = onnx_later(c, node[0] = onnx_sole_reader(c, div->output[0]), "Erf", 1);
    const Onnx__NodeProto *add = erf ? onnx_later(c, node[1] = onnx_sole_reader(c, erf->output[0]), "Add", 2) : NULL;
    if (!add || !onnx_with_scalar(c, add, erf->output[0], 1.0)) return 0;
    const Onnx__NodeProto *mx = onnx_later(c, node[2] = onnx_sole_reader(c, add->output[0]), "Mul", 2);
    const char *o = mx ? onnx_other_input(mx, add->output[0]) : NULL;
    if (!o || strcmp(o, x)) return 0;
    const Onnx__NodeProto *half = onnx_later(c, node[3] = onnx_sole_reader(c, mx->output[0]), "Mul", 2);
    return half && onnx_with_scalar(c, half, mx->output[0], 0.5);
}

/* GELU's tanh form as PyTorch writes it at opset 13 (nn.GELU(approximate="tanh")):
 * x * x, * x, * 0.044715, + x, * sqrt(2 / pi), Tanh, + 1, * x, * 1/2. Called
 * at the first Mul, which reads x twice; node[] the 8 after it. */
static int gelu_tanh_nodes(const onnx_import *c, const Onnx__NodeProto *sq, int *node)
{
    if (sq->n_input != 2 || !sq->input[0] || !sq->input[1] || strcmp(sq->input[0], sq->input[1]) || sq->n_output < 1 ||
        !sq->output[0])
        return 0;
    const char *x = sq->input[0];
    const Onnx__NodeProto *cube = onnx_later(c, node[0] = onnx_sole_reader(c, sq->output[0]), "Mul", 2);
    const char *o = cube ? onnx_other_input(cube, sq->output[0]) : NULL;
    if (!o || strcmp(o, x)) return 0;
    const Onnx__NodeProto *k = onnx_later(c, node[1] = onnx_sole_reader(c, cube->output[0]), "Mul", 2);
    if (!k || !onnx_with_scalar(c, k, cube->output[0], 0.044715)) return 0;
    const Onnx__NodeProto *inner = onnx_later(c, node[2] = onnx_sole_reader(c, k->output[0]), "Add", 2);
    if (!inner || !(o = onnx_other_input(inner, k->output[0])) || strcmp(o, x)) return 0;
    const Onnx__NodeProto *beta = onnx_later(c, node[3] = onnx_sole_reader(c, inner->output[0]), "Mul", 2);
    if (!beta || !onnx_with_scalar(c, beta, inner->output[0], 0.7978845608028654 /* sqrt(2 / pi) */)) return 0;
    const Onnx__NodeProto *t = onnx_later(c, node[4] = onnx_sole_reader(c, beta->output[0]), "Tanh", 1);
    const Onnx__NodeProto *one = t ? onnx_later(c, node[5] = onnx_sole_reader(c, t->output[0]), "Add", 2) : NULL;
    if (!one || !onnx_with_scalar(c, one, t->output[0], 1.0)) return 0;
    const Onnx__NodeProto *mx = onnx_later(c, node[6] = onnx_sole_reader(c, one->output[0]), "Mul", 2);
    if (!mx || !(o = onnx_other_input(mx, one->output[0])) || strcmp(o, x)) return 0;
    const Onnx__NodeProto *half = onnx_later(c, node[7] = onnx_sole_reader(c, mx->output[0]), "Mul", 2);
    return half && onnx_with_scalar(c, half, mx->output[0], 0.5);
}

/* ---- the patterns: several nodes, one layer ---- */

typedef struct pattern {
    const char *first; /* the operator of its first node, where it is matched */
    int (*match)(const onnx_import *c, const Onnx__NodeProto *n, int *node); /* node[]: the others */
    int count;                                                               /* of those others */
    rm_layer_kind kind;
    const char *how, *what;
} pattern;

static const pattern patterns[] = {
    {"Div", gelu_nodes, 4, RM_LAYER_GELU, "(x / sqrt 2, Erf, + 1, * x, * 1/2)", "x / 2 * (1 + erf(x / sqrt 2))"},
    {"Mul", gelu_tanh_nodes, 8, RM_LAYER_GELU_TANH, "(x^3, tanh, as nn.GELU(approximate='tanh') exports at opset 13)",
     "x / 2 * (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))"},
};
enum { PATTERN_MAX_NODES = 8 };

/* The pattern that node n begins, reading a computed tensor; NULL for none. */
static const pattern *pattern_at(const onnx_import *c, const Onnx__NodeProto *n, int *node)
{
    const onnx_value *x = n->n_input && n->input[0] ? onnx_find(c, n->input[0]) : NULL;
    if (!x || x->kind != ONNX_ACT) return NULL;
    for (size_t k = 0; k < sizeof patterns / sizeof *patterns; k++)
        if (!strcmp(n->op_type, patterns[k].first) && patterns[k].match(c, n, node)) return &patterns[k];
    return NULL;
}

int onnx_op_pattern(onnx_import *c, const Onnx__NodeProto *n, int *matched)
{
    int node[PATTERN_MAX_NODES], i, rc;
    const pattern *p = pattern_at(c, n, node);
    onnx_value *x;
    rm_layer_config cfg = {0};
    if (!(*matched = p != NULL)) return RM_OK;
    if ((rc = onnx_need_input(&x, c, n, 0, ONNX_ACT_ANY_LAYOUT, "input")) ||
        (rc = onnx_emit(c, n, p->kind, &cfg, &x, 1, NULL, x->rank, &i)))
        return rc;
    onnx_note_layer(c, n, i, p->how);
    return onnx_cover(c, i, x, node, p->count, p->what);
}

/* ---- squeeze-and-excitation: a tensor times its channels' gates ---- */

int onnx_is_mul_of_activations(const onnx_import *c, const Onnx__NodeProto *n)
{
    if (n->n_input != 2 || !n->input[0] || !n->input[1]) return 0;
    const onnx_value *a = onnx_find(c, n->input[0]), *b = onnx_find(c, n->input[1]);
    return a && b && a->kind == ONNX_ACT && b->kind == ONNX_ACT;
}

/* Mul of an N x C x H x W tensor and N x C x 1 x 1 factors, in either
 * order (PyTorch writes the factors first): the scale layer. Other products
 * of two computed tensors are refused. */
int onnx_op_channel_scale(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {NULL};
    onnx_value *in[2];
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&in[0], c, n, 0, ONNX_ACT, "A");
    if (!rc) rc = onnx_need_input(&in[1], c, n, 1, ONNX_ACT, "B");
    if (rc) return rc;
    const int first = in[0]->shape.h == 1 && in[0]->shape.w == 1 && (in[1]->shape.h > 1 || in[1]->shape.w > 1);
    onnx_value *x = first ? in[1] : in[0], *s = first ? in[0] : in[1];
    if (x->rank != 4 || s->rank != 4 || s->shape.c != x->shape.c || s->shape.h != 1 || s->shape.w != 1) {
        char a[64], b[64];
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "Mul of %s and %s per sample; remat multiplies two computed tensors only as "
                         "squeeze-and-excitation does: N x C x H x W by N x C x 1 x 1",
                         rm_shape_str(in[0]->shape, a, sizeof a), rm_shape_str(in[1]->shape, b, sizeof b));
    }
    onnx_value *xs[2] = {x, s};
    rm_layer_config cfg = {0};
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_SCALE, &cfg, xs, 2, NULL, 4, &i))) return rc;
    onnx_note_layer(c, n, i, "(each channel times its factor)");
    return RM_OK;
}
