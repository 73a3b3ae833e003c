/* Looking ahead: the nodes after the one being imported, before they are,
 * for the handlers that import a multi-node form PyTorch writes for one
 * layer (GELU, SiLU, LayerNorm). The layer then covers those later nodes. */
#include <math.h>
#include <string.h>

#include "onnx_internal.h"

/* onnx_sole_consumer by name: every node output has its value (and its
 * readers counted, the graph output among them) before the first node is
 * imported, so this answers for later nodes too. */
int onnx_sole_reader(const onnx_import *c, const char *name)
{
    const onnx_value *v = onnx_find(c, name);
    return v ? onnx_sole_consumer(c, v) : -1;
}

/* Node i when it is op with n_in inputs and one output, after this node; else NULL. */
const Onnx__NodeProto *onnx_later(const onnx_import *c, int i, const char *op, size_t n_in)
{
    if (i <= c->node) return NULL;
    const Onnx__NodeProto *n = c->g->node[i];
    if (!n->op_type || strcmp(n->op_type, op) || n->n_input != n_in || n->n_output < 1 || !n->output[0]) return NULL;
    return n;
}

/* The one value a one-element constant will hold, float or integer as
 * asked: a constant already imported, or one a Constant node defines later
 * (a float one possibly through a Cast). */
static int one_value(const onnx_import *c, const char *name, int is_int, double *f, int64_t *i)
{
    const onnx_value *val = onnx_find(c, name);
    const onnx_const *k = val && val->kind == ONNX_CONST ? &val->c : NULL;
    onnx_const decoded = {0};
    if (!k && val && val->kind != ONNX_UNSET) return 0;
    for (size_t q = 0; !k && q < c->g->n_node; q++) {
        const Onnx__NodeProto *n = c->g->node[q];
        if (n->n_output < 1 || !n->output[0] || strcmp(n->output[0], name) || !n->op_type) continue;
        if (!is_int && !strcmp(n->op_type, "Cast") && n->n_input == 1 && n->input[0])
            return one_value(c, n->input[0], is_int, f, i);
        const Onnx__AttributeProto *a = onnx_attr(n, "value");
        rm_err e = {RM_OK, ""};
        if (strcmp(n->op_type, "Constant") || !a || !a->t ||
            onnx_const_from_tensor(&decoded, a->t, c->path, "a constant", &e))
            return 0;
        k = &decoded;
    }
    int ok = k && k->count == 1 && k->is_int == is_int;
    if (ok && is_int) *i = k->i[0];
    if (ok && !is_int) *f = k->f[0];
    onnx_const_free(&decoded);
    return ok;
}

int onnx_scalar(const onnx_import *c, const char *name, double *v)
{
    return one_value(c, name, 0, v, NULL);
}

int onnx_int_scalar(const onnx_import *c, const char *name, int64_t *v)
{
    return one_value(c, name, 1, NULL, v);
}

const onnx_value *onnx_float_const(const onnx_import *c, const char *name, size_t count)
{
    const onnx_value *v = name ? onnx_find(c, name) : NULL;
    return v && v->kind == ONNX_CONST && !v->c.is_int && v->c.count == count ? v : NULL;
}

/* The input of binary node b other than name (NULL when b does not read name exactly once). */
const char *onnx_other_input(const Onnx__NodeProto *b, const char *name)
{
    int a0 = !strcmp(b->input[0], name), a1 = !strcmp(b->input[1], name);
    return a0 == a1 ? NULL : a0 ? b->input[1] : b->input[0];
}

/* Binary node b reads name and a scalar within a relative 1e-6 of want. */
int onnx_with_scalar(const onnx_import *c, const Onnx__NodeProto *b, const char *name, double want)
{
    double v;
    const char *o = b ? onnx_other_input(b, name) : NULL;
    return o && onnx_scalar(c, o, &v) && fabs(v - want) <= 1e-6 * fabs(want);
}

/* The layer covers the later nodes of its pattern: the last one's output is
 * an alias of the layer's (of x's rank and layout), the others are skipped. */
int onnx_cover(onnx_import *c, int layer, const onnx_value *x, const int *nodes, int count, const char *what)
{
    int self = c->node, rc = RM_OK;
    const rm_model_layer *L = &c->m->layers[layer];
    for (int k = 0; k < count && !rc; k++) {
        c->node = nodes[k];
        const Onnx__NodeProto *n = c->g->node[nodes[k]];
        if (k == count - 1) rc = onnx_set_act(c, n, 0, layer, x->rank, x->channels_last, L->out_shape);
        if (!rc) onnx_note(c, n, "part of %s '%s' (%s)", L->desc->name, L->name, what);
        c->skip[nodes[k]] = 1;
    }
    c->node = self;
    c->sum.aliases++;
    return rc;
}
