/* The ONNX importer's walk over a graph (see onnx.h). Every ONNX name gets a
 * value: the input batch, a layer's output, or a constant (an initializer, a
 * bound input, or what a node folded to). Nodes are visited in the file's
 * order, which ONNX requires to be topological, so a layer's inputs are
 * always earlier layers, as remat's models need; nodes the graph output does
 * not depend on are dropped first, so that every layer's output is read.
 * Each layer is completed (shapes, counts) as soon as it is made, through
 * the same function the config builder uses, because the next node's
 * mapping may depend on its shape (a Gemm's input features, a Reshape's
 * target). */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers.h"
#include "onnx_internal.h"

/* Room for the longest suffix the tracer appends: "<name>.gradsum" (as models/builder.c). */
#define NAME_MAX_CHARS (RM_NAME_LEN - 1 - (int)sizeof(".gradsum"))
/* A bound on each dimension of the input, as a config's (models/builder.c). */
#define MAX_DIM (1 << 20)

void rm_onnx_options_default(rm_onnx_options *o)
{
    memset(o, 0, sizeof *o);
    o->loss = RM_ONNX_SOFTMAX_XENT;
}

int rm_onnx_loss_parse(rm_onnx_loss *out, const char *name)
{
    if (!strcmp(name, "softmax_xent"))
        *out = RM_ONNX_SOFTMAX_XENT;
    else if (!strcmp(name, "pixel_softmax_xent"))
        *out = RM_ONNX_PIXEL_SOFTMAX_XENT;
    else if (!strcmp(name, "auto"))
        *out = RM_ONNX_LOSS_AUTO;
    else
        return -1;
    return 0;
}

/* ---- messages -------------------------------------------------------------- */

static const char *node_label(const Onnx__NodeProto *n)
{
    return n->name && *n->name ? n->name : n->n_output && n->output[0] ? n->output[0] : "";
}

int onnx_fail(onnx_import *c, rm_code code, const char *fmt, ...)
{
    char msg[RM_ERR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const Onnx__NodeProto *n = c->g->node[c->node];
    return rm_errorf(c->e, code, "%s: node %d '%s' (%s): %s", c->path, c->node + 1, node_label(n),
                     n->op_type ? n->op_type : "", msg);
}

void onnx_note(onnx_import *c, const Onnx__NodeProto *n, const char *fmt, ...)
{
    if (!c->o->note) return;
    char msg[512], line[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(line, sizeof line, "node %d %s '%s' -> %s", c->node + 1, n->op_type ? n->op_type : "", node_label(n), msg);
    c->o->note(c->o->note_ctx, line);
}

/* ---- values ---------------------------------------------------------------- */

onnx_value *onnx_find(const onnx_import *c, const char *name)
{
    int k = rm_name_index_find(&c->names, name);
    return k < 0 ? NULL : &c->v[k];
}

/* The value of this name, made (unset) when new. */
static int name_value(onnx_value **out, onnx_import *c, const char *name)
{
    if ((*out = onnx_find(c, name))) return RM_OK;
    if (c->nv == c->cap_v) return rm_errorf(c->e, RM_ERR_INVALID, "%s: more names than counted", c->path);
    onnx_value *v = &c->v[c->nv];
    memset(v, 0, sizeof *v);
    v->name = name;
    rm_name_index_add(&c->names, name, c->nv++);
    *out = v;
    return RM_OK;
}

onnx_value *onnx_input(onnx_import *c, const Onnx__NodeProto *n, int k)
{
    if ((size_t)k >= n->n_input || !n->input[k] || !*n->input[k]) return NULL;
    return onnx_find(c, n->input[k]);
}

int onnx_need_input(onnx_value **out, onnx_import *c, const Onnx__NodeProto *n, int k, onnx_value_kind kind,
                    const char *role)
{
    *out = NULL;
    if ((size_t)k >= n->n_input || !n->input[k] || !*n->input[k])
        return onnx_fail(c, RM_ERR_PARSE, "input %d (%s) is missing", k, role);
    onnx_value *v = onnx_find(c, n->input[k]);
    if (!v || v->kind == ONNX_UNSET)
        return onnx_fail(c, RM_ERR_PARSE, "input '%s' is not made by an earlier node, an initializer or a graph input",
                         n->input[k]);
    if (v->kind == ONNX_VIEW && kind != ONNX_VIEW)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "its %s '%s' is a 5-D view of a computed tensor; remat reads such a view only as ShuffleNet's "
                         "channel shuffle (Reshape to N x g x C/g x H x W, Transpose (0, 2, 1, 3, 4), Reshape back)",
                         role, v->name);
    if (v->kind == ONNX_ACT && v->channels_last && kind != ONNX_ACT_ANY_LAYOUT)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "its %s '%s' is a computed tensor transposed to put its channels last; remat reads such a "
                         "view only in element-wise operations (activations, Add of two views, Dropout), LayerNorm "
                         "and MatMul over the last axis, Shape, Identity, and the Transpose back",
                         role, v->name);
    if (kind == ONNX_ACT_ANY_LAYOUT) kind = ONNX_ACT;
    if (kind == ONNX_CONST && v->kind != ONNX_CONST)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "its %s '%s' is computed from the input; remat needs it to be a constant (an initializer, "
                         "or something folded at import)",
                         role, v->name);
    if (kind == ONNX_ACT && v->kind != ONNX_ACT)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "its %s '%s' is a constant; remat's layer computes on a tensor that depends on the input",
                         role, v->name);
    *out = v;
    return RM_OK;
}

static int output_value(onnx_value **out, onnx_import *c, const Onnx__NodeProto *n, int k)
{
    if ((size_t)k >= n->n_output || !n->output[k] || !*n->output[k])
        return onnx_fail(c, RM_ERR_PARSE, "it has no output %d", k);
    onnx_value *v = onnx_find(c, n->output[k]);
    if (!v) return onnx_fail(c, RM_ERR_PARSE, "output '%s' was not indexed", n->output[k]);
    if (v->kind != ONNX_UNSET)
        return onnx_fail(c, RM_ERR_PARSE,
                         "output '%s' is already defined (by an earlier node, an initializer or a "
                         "graph input): ONNX names are assigned once",
                         n->output[k]);
    *out = v;
    return RM_OK;
}

int onnx_set_act(onnx_import *c, const Onnx__NodeProto *n, int k, int layer, int rank, int channels_last,
                 rm_shape shape)
{
    onnx_value *v;
    int rc = output_value(&v, c, n, k);
    if (rc) return rc;
    v->kind = ONNX_ACT;
    v->layer = layer;
    v->rank = rank;
    v->channels_last = channels_last;
    v->shape = shape;
    return RM_OK;
}

int onnx_set_view(onnx_import *c, const Onnx__NodeProto *n, int k, const onnx_value *source, int groups, int transposed)
{
    onnx_value *v;
    int rc = output_value(&v, c, n, k);
    if (rc) return rc;
    v->kind = ONNX_VIEW;
    v->source = source;
    v->rank = 5;
    v->groups = groups;
    v->transposed = transposed;
    return RM_OK;
}

int onnx_set_const(onnx_import *c, const Onnx__NodeProto *n, int k, onnx_const *taken)
{
    onnx_value *v;
    int rc = output_value(&v, c, n, k);
    if (rc) {
        onnx_const_free(taken);
        return rc;
    }
    v->kind = ONNX_CONST;
    v->c = *taken;
    memset(taken, 0, sizeof *taken);
    return RM_OK;
}

int onnx_set_alias(onnx_import *c, const Onnx__NodeProto *n, int k, const onnx_value *of)
{
    onnx_value *v;
    int rc = output_value(&v, c, n, k);
    if (rc) return rc;
    if (of->kind == ONNX_CONST) {
        /* A copy: each value owns its arrays. */
        onnx_const copy;
        if ((rc = onnx_const_alloc(&copy, of->c.is_int, of->c.rank, of->c.dims, c->path, c->e))) return rc;
        if (copy.is_int)
            memcpy(copy.i, of->c.i, copy.count * sizeof *copy.i);
        else
            memcpy(copy.f, of->c.f, copy.count * sizeof *copy.f);
        v->kind = ONNX_CONST;
        v->c = copy;
        return RM_OK;
    }
    v->kind = of->kind;
    v->layer = of->layer;
    v->rank = of->rank;
    v->shape = of->shape;
    v->channels_last = of->channels_last;
    return RM_OK;
}

int onnx_sole_consumer(const onnx_import *c, const onnx_value *v)
{
    if (v->consumers != 1) return -1;
    for (size_t i = 0; i < c->g->n_node; i++) {
        const Onnx__NodeProto *n = c->g->node[i];
        if (c->skip[i] == 2) continue; /* dropped: not counted among the consumers */
        for (size_t k = 0; k < n->n_input; k++)
            if (n->input[k] && !strcmp(n->input[k], v->name)) return (int)i;
    }
    return -1;
}

int onnx_only_first_output(onnx_import *c, const Onnx__NodeProto *n, const char *what)
{
    for (size_t k = 1; k < n->n_output; k++) {
        if (!n->output[k] || !*n->output[k]) continue;
        const onnx_value *v = onnx_find(c, n->output[k]);
        if (v && v->needed)
            return onnx_fail(c, RM_ERR_UNSUPPORTED,
                             "its output %zu ('%s', %s) is used; remat's layer makes only the "
                             "first",
                             k, n->output[k], what);
    }
    return RM_OK;
}

/* ---- attributes ------------------------------------------------------------ */

int onnx_check_attrs(onnx_import *c, const Onnx__NodeProto *n, const char *const *known)
{
    for (size_t k = 0; k < n->n_attribute; k++) {
        const char *name = n->attribute[k]->name ? n->attribute[k]->name : "";
        int ok = 0;
        for (const char *const *q = known; *q && !ok; q++) ok = !strcmp(*q, name);
        if (!ok) {
            char list[256] = "";
            size_t used = 0;
            for (const char *const *q = known; *q && used < sizeof list; q++)
                used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", *q);
            return onnx_fail(c, RM_ERR_UNSUPPORTED, "attribute '%s' is not supported (remat reads: %s)", name,
                             used ? list : "none");
        }
    }
    return RM_OK;
}

static int attr_typed(const Onnx__AttributeProto **out, onnx_import *c, const Onnx__NodeProto *n, const char *name,
                      Onnx__AttributeProto__AttributeType type, const char *type_word)
{
    *out = onnx_attr(n, name);
    if (*out && (*out)->has_type && (*out)->type != type)
        return onnx_fail(c, RM_ERR_PARSE, "attribute '%s' should be %s", name, type_word);
    return RM_OK;
}

int onnx_attr_int(int64_t *out, onnx_import *c, const Onnx__NodeProto *n, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a;
    int rc = attr_typed(&a, c, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT, "an integer");
    *out = a ? a->i : dflt;
    return rc;
}

int onnx_attr_float(float *out, onnx_import *c, const Onnx__NodeProto *n, const char *name, float dflt)
{
    const Onnx__AttributeProto *a;
    int rc = attr_typed(&a, c, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT, "a float");
    *out = a ? a->f : dflt;
    return rc;
}

int onnx_attr_string(char *buf, size_t len, onnx_import *c, const Onnx__NodeProto *n, const char *name,
                     const char *dflt)
{
    const Onnx__AttributeProto *a;
    int rc = attr_typed(&a, c, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING, "a string");
    if (a)
        snprintf(buf, len, "%.*s", (int)(a->s.len < len ? a->s.len : len - 1),
                 a->s.data ? (const char *)a->s.data : "");
    else
        snprintf(buf, len, "%s", dflt);
    return rc;
}

int onnx_attr_ints(const int64_t **v, size_t *count, onnx_import *c, const Onnx__NodeProto *n, const char *name)
{
    const Onnx__AttributeProto *a;
    int rc = attr_typed(&a, c, n, name, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS, "a list of integers");
    *v = a ? a->ints : NULL;
    *count = a ? a->n_ints : 0;
    return rc;
}

/* ---- layers ---------------------------------------------------------------- */

static void weights_free(onnx_weights *w)
{
    if (!w) return;
    free(w->w);
    free(w->b);
    free(w->mean);
    free(w->var);
    memset(w, 0, sizeof *w);
}

/* A layer name from the node's: PyTorch's "/layer1/layer1.0/conv1/Conv"
 * becomes "layer1.layer1.0.conv1" (the path, '/' as '.', without the
 * operator it ends with); other characters remat's names do not take become
 * '_'; too long a name keeps its end, the most specific part; a name taken
 * already gets "_2", "_3", ... */
static int layer_name(char *out, onnx_import *c, const Onnx__NodeProto *n, const char *fallback)
{
    char base[256];
    const char *src = n->name && *n->name ? n->name : fallback;
    size_t len = 0;
    for (const char *p = src; *p && len + 1 < sizeof base; p++) {
        char ch = *p == '/' ? '.' : *p;
        if (!(isalnum((unsigned char)ch) || ch == '_' || ch == '.' || ch == '-')) ch = '_';
        if (ch == '.' && (len == 0 || base[len - 1] == '.')) continue;
        base[len++] = ch;
    }
    base[len] = '\0';
    const char *op = n->op_type ? n->op_type : "";
    size_t ol = strlen(op);
    /* Without the operator, unless that name is taken ("/bottom/Conv" and "/bottom/Relu"). */
    if (len > ol + 1 && base[len - ol - 1] == '.' && !strcmp(base + len - ol, op)) {
        base[len - ol - 1] = '\0';
        if (rm_name_index_find(&c->layer_names, base) >= 0 || len - ol - 1 > (size_t)NAME_MAX_CHARS)
            base[len - ol - 1] = '.';
        else
            len -= ol + 1;
    }
    while (len && base[len - 1] == '.') base[--len] = '\0';
    if (!len)
        snprintf(base, sizeof base, "layer");
    else if (!strcmp(base, "input"))
        snprintf(base, sizeof base, "input_1"); /* the input batch's reserved name */
    len = strlen(base);
    for (int k = 1;; k++) {
        char suffix[16] = "";
        if (k > 1) snprintf(suffix, sizeof suffix, "_%d", k);
        size_t room = (size_t)NAME_MAX_CHARS - strlen(suffix);
        const char *start = len > room ? base + len - room : base;
        snprintf(out, RM_NAME_LEN, "%s%s", start, suffix);
        if (rm_name_index_find(&c->layer_names, out) < 0) return RM_OK;
        if (k > c->cap_layers + 1) return onnx_fail(c, RM_ERR_INVALID, "no free layer name for '%s'", base);
    }
}

int onnx_add_layer(int *layer, onnx_import *c, const Onnx__NodeProto *n, rm_layer_kind kind, const rm_layer_config *cfg,
                   onnx_value *const *in, int nin, onnx_weights *w)
{
    onnx_weights none = {0};
    if (!w) w = &none;
    rm_model *m = c->m;
    int i = m->nlayers, rc = RM_OK;
    if (i >= c->cap_layers) rc = onnx_fail(c, RM_ERR_INVALID, "more layers than nodes");
    if (!rc && nin > RM_MAX_INPUTS)
        rc = onnx_fail(c, RM_ERR_UNSUPPORTED, "%d inputs; remat's layers take at most %d", nin, RM_MAX_INPUTS);
    for (int k = 0; !rc && k < nin; k++)
        for (int q = 0; q < k && !rc; q++)
            if (in[q]->layer == in[k]->layer)
                rc = onnx_fail(c, RM_ERR_UNSUPPORTED,
                               "it reads '%s' twice (inputs %d and %d); remat's layers take distinct inputs",
                               in[k]->name, q, k);
    if (rc) {
        weights_free(w);
        return rc;
    }
    rm_model_layer *L = &m->layers[i];
    memset(L, 0, sizeof *L);
    if ((rc = layer_name(L->name, c, n, n->n_output ? n->output[0] : ""))) {
        weights_free(w);
        return rc;
    }
    L->desc = rm_layer_desc_of(kind);
    L->cfg = *cfg;
    L->cfg.kind = kind;
    int ins[RM_MAX_INPUTS];
    for (int k = 0; k < nin; k++) ins[k] = in[k]->layer;
    L->line = c->node + 1;
    c->wts[i] = *w;
    rm_err le = {RM_OK, ""};
    if ((rc = rm_model_layer_complete(m, i, ins, nin, &le))) {
        weights_free(&c->wts[i]);
        return onnx_fail(c, (rm_code)rc, "%s", le.msg);
    }
    rm_name_index_add(&c->layer_names, L->name, i);
    *layer = i;
    return RM_OK;
}

/* ---- the graph ---------------------------------------------------------------- */

static int64_t default_opset(const Onnx__ModelProto *m)
{
    for (size_t k = 0; k < m->n_opset_import; k++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[k];
        if (!o->domain || !*o->domain || !strcmp(o->domain, "ai.onnx")) return o->has_version ? o->version : 1;
    }
    return 1; /* IR version 1 files name no opset */
}

static const rm_onnx_tensor *binding(const onnx_import *c, const char *name)
{
    for (int k = 0; k < c->o->nbind; k++)
        if (c->o->bind[k].name && !strcmp(c->o->bind[k].name, name)) return &c->o->bind[k];
    return NULL;
}

/* The data input: one float tensor of rank 2 to 4 whose dimensions after the
 * batch are fixed. */
static int setup_input(onnx_import *c, const Onnx__ValueInfoProto *vi)
{
    const char *name = vi->name;
    const Onnx__TypeProto *tp = vi->type;
    if (!tp || tp->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE || !tp->tensor_type)
        return rm_errorf(c->e, RM_ERR_UNSUPPORTED, "%s: input '%s' is not a tensor", c->path, name);
    const Onnx__TypeProto__Tensor *tt = tp->tensor_type;
    if (!tt->has_elem_type || tt->elem_type != ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT)
        return rm_errorf(c->e, RM_ERR_UNSUPPORTED, "%s: input '%s' is not a FLOAT tensor; remat trains in float32",
                         c->path, name);
    if (!tt->shape)
        return rm_errorf(c->e, RM_ERR_UNSUPPORTED, "%s: input '%s' has no shape; remat needs its dimensions", c->path,
                         name);
    int rank = (int)tt->shape->n_dim;
    if (rank < 2 || rank > 4)
        return rm_errorf(c->e, RM_ERR_UNSUPPORTED,
                         "%s: input '%s' has rank %d; remat takes N x C, N x C x L or N x C x H x W", c->path, name,
                         rank);
    int d[4] = {1, 1, 1, 1};
    for (int k = 0; k < rank; k++) {
        const Onnx__TensorShapeProto__Dimension *dim = tt->shape->dim[k];
        int fixed = dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
        int64_t val = fixed ? dim->dim_value : 0;
        if (k == 0) {
            c->fixed_batch = fixed && val > 0 ? val : 0;
            continue;
        }
        int over = rank == 4 && ((k == 2 && c->o->height > 0) || (k == 3 && c->o->width > 0));
        if (over)
            val = k == 2 ? c->o->height : c->o->width;
        else if (!fixed)
            return rm_errorf(c->e, RM_ERR_UNSUPPORTED,
                             "%s: dimension %d of input '%s' is symbolic ('%s'); remat needs fixed sizes after the "
                             "batch%s",
                             c->path, k, name,
                             dim->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM && dim->dim_param
                                 ? dim->dim_param
                                 : "?",
                             rank == 4 && k >= 2 ? " (give the height and width, e.g. maxbatch --input HxW)" : "");
        if (val < 1 || val > MAX_DIM)
            return rm_errorf(c->e, RM_ERR_UNSUPPORTED, "%s: dimension %d of input '%s' is %lld (1 to %d)", c->path, k,
                             name, (long long)val, MAX_DIM);
        d[k] = (int)val;
    }
    onnx_value *v;
    int rc = name_value(&v, c, name);
    if (rc) return rc;
    v->kind = ONNX_ACT;
    v->layer = RM_MODEL_INPUT;
    v->rank = rank;
    v->shape = rm_shape_make(1, d[1], d[2], d[3]);
    c->m->input = v->shape;
    snprintf(c->sum.input, sizeof c->sum.input, "%s", name);
    c->sum.fixed_batch = (int)(c->fixed_batch > INT_MAX ? 0 : c->fixed_batch);
    return RM_OK;
}

static int setup_constant(onnx_import *c, const char *name, onnx_const *k)
{
    onnx_value *v;
    int rc = name_value(&v, c, name);
    if (!rc && v->kind != ONNX_UNSET)
        rc = rm_errorf(c->e, RM_ERR_PARSE, "%s: '%s' is given twice (two initializers, or an input and a binding)",
                       c->path, name);
    if (rc) {
        onnx_const_free(k);
        return rc;
    }
    v->kind = ONNX_CONST;
    v->c = *k;
    return RM_OK;
}

static int setup_graph(onnx_import *c)
{
    const Onnx__GraphProto *g = c->g;
    size_t names = g->n_initializer + g->n_input + 1;
    for (size_t i = 0; i < g->n_node; i++) names += g->node[i]->n_output + g->node[i]->n_input;
    if (names > (size_t)INT_MAX / 2) return rm_errorf(c->e, RM_ERR_UNSUPPORTED, "%s: too many names", c->path);
    c->cap_v = (int)names;
    c->cap_layers = (int)g->n_node + 1;
    if (!(c->v = calloc(names, sizeof *c->v)) || !(c->wts = calloc((size_t)c->cap_layers, sizeof *c->wts)) ||
        !(c->skip = calloc(g->n_node + 1, sizeof *c->skip)) ||
        !(c->m->layers = calloc((size_t)c->cap_layers, sizeof *c->m->layers)))
        return rm_errorf(c->e, RM_ERR_NOMEM, "%s: out of memory", c->path);
    int rc = rm_name_index_init(&c->names, names, c->path, c->e);
    if (!rc) rc = rm_name_index_init(&c->layer_names, (size_t)c->cap_layers, c->path, c->e);
    for (size_t i = 0; !rc && i < g->n_initializer; i++) {
        const Onnx__TensorProto *t = g->initializer[i];
        if (!t->name || !*t->name) {
            rc = rm_errorf(c->e, RM_ERR_PARSE, "%s: initializer %zu has no name", c->path, i + 1);
            break;
        }
        char what[128];
        snprintf(what, sizeof what, "initializer '%.80s'", t->name);
        onnx_const k;
        rc = onnx_const_from_tensor(&k, t, c->path, what, c->e);
        if (!rc) rc = setup_constant(c, t->name, &k);
    }
    if (!rc && g->n_sparse_initializer)
        rc = rm_errorf(c->e, RM_ERR_UNSUPPORTED, "%s: sparse initializers are not supported", c->path);
    /* Graph inputs: an initializer's name listed as an input too (IR < 4
     * files) is that constant; a bound one is its binding; one is the data. */
    const Onnx__ValueInfoProto *data = NULL;
    for (size_t i = 0; !rc && i < g->n_input; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi->name || !*vi->name) {
            rc = rm_errorf(c->e, RM_ERR_PARSE, "%s: graph input %zu has no name", c->path, i + 1);
            break;
        }
        const onnx_value *known = onnx_find(c, vi->name);
        if (known && known->kind == ONNX_CONST) continue;
        const rm_onnx_tensor *b = binding(c, vi->name);
        if (b) {
            onnx_const k;
            if (!(rc = onnx_const_alloc(&k, b->ints != NULL, b->rank, b->dims, c->path, c->e))) {
                int batchlike = 0; /* the batch symbol is the importer's own, never a value */
                for (size_t q = 0; k.is_int && q < b->count; q++) batchlike |= b->ints[q] == ONNX_BATCH;
                if (k.count != b->count || batchlike) {
                    onnx_const_free(&k);
                    rc = rm_errorf(c->e, RM_ERR_INVALID,
                                   "%s: the value bound to '%s' has %zu elements for its "
                                   "dimensions' %zu, or holds INT64_MIN",
                                   c->path, vi->name, b->count, k.count);
                } else {
                    if (k.count && k.is_int)
                        memcpy(k.i, b->ints, k.count * sizeof *k.i);
                    else if (k.count)
                        memcpy(k.f, b->data, k.count * sizeof *k.f);
                    rc = setup_constant(c, vi->name, &k);
                }
            }
            continue;
        }
        if (data)
            rc = rm_errorf(c->e, RM_ERR_UNSUPPORTED,
                           "%s: the graph has more than one input ('%s', '%s'); remat trains a network of one input "
                           "batch",
                           c->path, data->name, vi->name);
        data = vi;
    }
    if (!rc && !data)
        rc = rm_errorf(c->e, RM_ERR_UNSUPPORTED, "%s: the graph has no input (only initializers)", c->path);
    if (!rc) rc = setup_input(c, data);
    for (int k = 0; !rc && k < c->o->nbind; k++) {
        const onnx_value *v = c->o->bind[k].name ? onnx_find(c, c->o->bind[k].name) : NULL;
        if (!v || v->kind != ONNX_CONST)
            rc = rm_errorf(c->e, RM_ERR_INVALID, "%s: a value is bound to '%s', which is no graph input", c->path,
                           c->o->bind[k].name ? c->o->bind[k].name : "");
    }
    if (rc) return rc;
    if (g->n_output != 1) {
        if (g->n_output == 0) return rm_errorf(c->e, RM_ERR_PARSE, "%s: the graph has no output", c->path);
        return rm_errorf(c->e, RM_ERR_UNSUPPORTED,
                         "%s: the graph has %zu outputs ('%s', '%s'%s); remat trains a network with one, the logits "
                         "its loss reads",
                         c->path, g->n_output, g->output[0]->name ? g->output[0]->name : "",
                         g->output[1]->name ? g->output[1]->name : "", g->n_output > 2 ? ", ..." : "");
    }
    /* Every node output gets its value now, so that a node's later outputs
     * can be told unused, and the walk below can mark what is needed. */
    for (size_t i = 0; !rc && i < g->n_node; i++) {
        const Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; !rc && k < n->n_output; k++) {
            onnx_value *v;
            if (n->output[k] && *n->output[k]) rc = name_value(&v, c, n->output[k]);
        }
        if (!rc && n->domain && *n->domain && strcmp(n->domain, "ai.onnx")) {
            c->node = (int)i;
            rc = onnx_fail(c, RM_ERR_UNSUPPORTED, "operator domain '%s'; remat imports the standard operators only",
                           n->domain);
        }
    }
    if (rc) return rc;
    const char *out = g->output[0]->name ? g->output[0]->name : "";
    onnx_value *ov = onnx_find(c, out);
    if (!ov) return rm_errorf(c->e, RM_ERR_PARSE, "%s: the graph output '%s' is made by no node", c->path, out);
    snprintf(c->sum.output, sizeof c->sum.output, "%s", out);
    /* Backwards from the output: what it needs. The output itself counts as
     * a consumer, so that nothing folds it away into another layer. */
    ov->needed = 1;
    ov->consumers = 1;
    for (size_t i = g->n_node; i-- > 0;) {
        const Onnx__NodeProto *n = g->node[i];
        int needed = 0;
        for (size_t k = 0; k < n->n_output && !needed; k++) {
            const onnx_value *v = n->output[k] && *n->output[k] ? onnx_find(c, n->output[k]) : NULL;
            needed = v && v->needed;
        }
        if (!needed) {
            c->skip[i] = 2; /* dropped */
            continue;
        }
        for (size_t k = 0; !rc && k < n->n_input; k++) {
            if (!n->input[k] || !*n->input[k]) continue;
            onnx_value *v;
            rc = name_value(&v, c, n->input[k]);
            if (!rc) v->needed = 1, v->consumers++;
        }
    }
    return rc;
}

/* ---- finishing: the loss, the weights, the checks ----------------------------------- */

static int add_loss(onnx_import *c)
{
    const Onnx__GraphProto *g = c->g;
    c->node = g->n_node ? (int)g->n_node - 1 : 0;
    const onnx_value *ov = onnx_find(c, c->sum.output);
    if (!ov || ov->kind != ONNX_ACT || ov->layer == RM_MODEL_INPUT)
        return rm_errorf(c->e, RM_ERR_UNSUPPORTED,
                         "%s: the graph output '%s' is %s; remat trains the layers that "
                         "compute it from the input",
                         c->path, c->sum.output,
                         !ov || ov->kind == ONNX_CONST || ov->kind == ONNX_UNSET ? "a constant"
                         : ov->kind == ONNX_VIEW ? "a 5-D view of a computed tensor (a channel shuffle left unfinished)"
                                                 : "the input itself");
    c->sum.output_rank = ov->rank;
    rm_onnx_loss loss = c->o->loss;
    if (loss == RM_ONNX_LOSS_AUTO)
        loss = ov->shape.h == 1 && ov->shape.w == 1 ? RM_ONNX_SOFTMAX_XENT : RM_ONNX_PIXEL_SOFTMAX_XENT;
    rm_layer_kind kind = loss == RM_ONNX_SOFTMAX_XENT ? RM_LAYER_SOFTMAX_XENT : RM_LAYER_PIXEL_SOFTMAX_XENT;
    rm_model *m = c->m;
    int i = m->nlayers;
    rm_model_layer *L = &m->layers[i];
    memset(L, 0, sizeof *L);
    snprintf(L->name, sizeof L->name, "loss");
    for (int k = 2; rm_name_index_find(&c->layer_names, L->name) >= 0; k++)
        snprintf(L->name, sizeof L->name, "loss_%d", k);
    L->desc = rm_layer_desc_of(kind);
    L->cfg.kind = kind;
    L->line = c->node + 1;
    rm_err le = {RM_OK, ""};
    int rc = rm_model_layer_complete(m, i, &ov->layer, 1, &le);
    if (rc)
        return rm_errorf(c->e, (rm_code)rc, "%s: the loss on the graph output '%s': %s%s", c->path, c->sum.output,
                         le.msg,
                         kind == RM_LAYER_SOFTMAX_XENT && (ov->shape.h != 1 || ov->shape.w != 1)
                             ? " (an output with spatial dimensions takes --loss pixel_softmax_xent)"
                             : "");
    if (c->o->note) {
        char sh[64], line[256];
        snprintf(line, sizeof line, "loss -> %s '%s' on '%s' (%s per sample), added: an exported network has none",
                 L->desc->name, L->name, c->sum.output, rm_shape_str(ov->shape, sh, sizeof sh));
        c->o->note(c->o->note_ctx, line);
    }
    return RM_OK;
}

/* Copies n floats of a layer's weight into dst, checking the count the layer expects. */
static int put_weights(float **dst, const float *src, size_t have, rm_shape want, const rm_model_layer *L,
                       const char *what, onnx_import *c)
{
    size_t n = want.n ? rm_shape_numel(want) : 0;
    if (have != n)
        return rm_errorf(c->e, RM_ERR_INVALID, "%s: layer '%s': %zu values for its %s, which has %zu", c->path, L->name,
                         have, what, n);
    if (n) memcpy(*dst, src, n * sizeof(float));
    *dst += n;
    return RM_OK;
}

static int finish_weights(onnx_import *c)
{
    rm_model *m = c->m;
    if (c->o->random_init) return RM_OK;
    if (!(m->init_params = malloc((m->param_count ? m->param_count : 1) * sizeof(float))) ||
        !(m->init_buffers = malloc((m->buffer_count ? m->buffer_count : 1) * sizeof(float))))
        return rm_errorf(c->e, RM_ERR_NOMEM, "%s: out of memory for the weights", c->path);
    float *p = m->init_params, *b = m->init_buffers;
    int rc = RM_OK;
    for (int i = 0; !rc && i < m->nlayers; i++) {
        const rm_model_layer *L = &m->layers[i];
        const onnx_weights *w = &c->wts[i];
        rm_shape ws = {0, 0, 0, 0}, bs = {0, 0, 0, 0};
        if (L->desc->param_shapes) L->desc->param_shapes(&ws, &bs, &L->cfg, L->in_shape, L->nin);
        rc = put_weights(&p, w->w, w->nw, ws, L, "weights", c);
        if (!rc) rc = put_weights(&p, w->b, w->nb, bs, L, "bias", c);
        rm_shape ss = rm_shape_make(L->buffer_count ? (int)(L->buffer_count / 2) : 0, 1, 1, 1);
        if (!rc) rc = put_weights(&b, w->mean, w->nstats, ss, L, "running mean", c);
        if (!rc) rc = put_weights(&b, w->var, w->nstats, ss, L, "running variance", c);
    }
    c->sum.weights = m->param_count + m->buffer_count;
    return rc;
}

static int finish_checks(onnx_import *c)
{
    const rm_model *m = c->m;
    for (int i = 0; i < m->nlayers - 1; i++)
        if (m->layers[i].uses == 0)
            return rm_errorf(c->e, RM_ERR_UNSUPPORTED,
                             "%s:%d: the output of layer '%s' is only read by nodes folded at import (Shape, say); "
                             "remat's models read every layer's output",
                             c->path, m->layers[i].line, m->layers[i].name);
    if (m->input_uses == 0)
        return rm_errorf(c->e, RM_ERR_UNSUPPORTED, "%s: no layer reads the input '%s'", c->path, c->sum.input);
    return RM_OK;
}

static void import_free(onnx_import *c)
{
    for (int i = 0; i < c->nv; i++) onnx_const_free(&c->v[i].c);
    free(c->v);
    if (c->wts)
        for (int i = 0; i < c->cap_layers; i++) weights_free(&c->wts[i]);
    free(c->wts);
    free(c->skip);
    rm_name_index_free(&c->names);
    rm_name_index_free(&c->layer_names);
    if (c->model) onnx__model_proto__free_unpacked(c->model, NULL);
}

int rm_onnx_load(rm_model **out, rm_onnx_summary *sum, const char *path, const rm_onnx_options *o, rm_err *e)
{
    *out = NULL;
    rm_onnx_options dflt;
    if (!o) {
        rm_onnx_options_default(&dflt);
        o = &dflt;
    }
    onnx_import c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.o = o;
    c.e = e;
    c.attn.exit = -1;
    int rc = onnx_read_model(&c.model, path, e);
    if (rc) return rc;
    c.g = c.model->graph;
    c.opset = default_opset(c.model);
    c.sum.nodes = (int)c.g->n_node;
    c.sum.opset = c.opset;
    snprintf(c.sum.producer, sizeof c.sum.producer, "%s%s%s", c.model->producer_name ? c.model->producer_name : "",
             c.model->producer_version && *c.model->producer_version ? " " : "",
             c.model->producer_version ? c.model->producer_version : "");
    if (!(c.m = calloc(1, sizeof *c.m)) || !(c.m->path = strdup(path)))
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", path);
    if (!rc) rc = setup_graph(&c);
    for (size_t i = 0; !rc && i < c.g->n_node; i++) {
        c.node = (int)i;
        const Onnx__NodeProto *n = c.g->node[i];
        if (c.skip[i] == 2) {
            onnx_note(&c, n, "dropped: the graph output does not depend on it");
            c.sum.dropped++;
        } else if (!c.skip[i]) {
            if (!n->op_type || !*n->op_type)
                rc = onnx_fail(&c, RM_ERR_PARSE, "no operator");
            else
                rc = onnx_import_node(&c, n);
        }
    }
    if (!rc) rc = add_loss(&c);
    if (!rc) rc = finish_checks(&c);
    if (!rc) rc = finish_weights(&c);
    c.sum.layers = c.m ? c.m->nlayers : 0;
    if (sum) *sum = c.sum;
    rm_model *m = c.m;
    import_free(&c);
    if (rc) {
        rm_model_free(m);
        return rc;
    }
    *out = m;
    return RM_OK;
}
