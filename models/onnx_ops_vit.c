/* The ONNX importer's vision transformer (torchvision's ViT as PyTorch
 * exports it at opset 14). Tokens are remat's N x D x T x 1 tensors, which
 * ONNX sees as N x T x D (a channels-last view, onnx_ops_layout.c).
 *  - The class token and the position embedding: Expand(class_token
 *    [1, 1, D], [N, 1, 1]), Concat along the tokens (the class token first),
 *    Add(pos_embedding [1, T + 1, D]): one tokens layer.
 *  - nn.MultiheadAttention: from the Transpose of its N x T x D input to
 *    T x N x D, some 150 nodes (in_proj as MatMul + Add, the reshapes that
 *    split q, k and v into heads, the scaling, MatMul, Softmax, MatMul, the
 *    reshapes back, out_proj as Gemm, the Transpose back). Recognised at the
 *    first Transpose as the nodes that descend from it up to the one value
 *    the residual Add reads; their shape arithmetic reads the batch size,
 *    so they are not folded but covered. Three layers come at the last
 *    node: a 1x1 conv D -> 3D (in_proj), attention of the heads (read from
 *    q's Reshape to [N, heads, T, head_dim]), a 1x1 conv D -> D (out_proj).
 *  - x[:, 0], the class token the head reads: Gather of one index along the
 *    tokens: a token layer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_internal.h"

/* ---- the class token and the position embedding ---------------------------- */

int onnx_op_expand(onnx_import *c, const Onnx__NodeProto *n)
{
    static const char *const attrs[] = {NULL};
    onnx_value *cls;
    int rc = onnx_check_attrs(c, n, attrs);
    if (!rc) rc = onnx_need_input(&cls, c, n, 0, ONNX_CONST, "input");
    if (!rc) rc = onnx_need_floats(c, cls, "input");
    if (rc) return rc;
    /* Concat(class token, x) along the tokens, then Add(that, pos_embedding). */
    int node[2];
    const Onnx__NodeProto *cat = onnx_later(c, node[0] = onnx_sole_reader(c, n->output[0]), "Concat", 2);
    const Onnx__AttributeProto *axis = cat ? onnx_attr(cat, "axis") : NULL;
    onnx_value *x = cat ? onnx_find(c, cat->input[1]) : NULL;
    int ok = axis && axis->i == 1 && !strcmp(cat->input[0], n->output[0]) && x && x->kind == ONNX_ACT &&
             x->channels_last && x->rank == 3 && cls->c.count == (size_t)x->shape.c;
    const size_t d = ok ? (size_t)x->shape.c : 0, t = ok ? (size_t)x->shape.h * x->shape.w + 1 : 0;
    const Onnx__NodeProto *add = ok ? onnx_later(c, node[1] = onnx_sole_reader(c, cat->output[0]), "Add", 2) : NULL;
    const char *po = add ? onnx_other_input(add, cat->output[0]) : NULL;
    const onnx_value *pos = onnx_float_const(c, po, d * t), *other = po ? onnx_find(c, po) : NULL;
    if (!pos && other && other->kind == ONNX_CONST && !other->c.is_int && other->c.count % d == 0)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "the position embedding '%s' holds %zu tokens, the input makes %zu (the class token and %zu "
                         "patches): a ViT's input size is the one its position embedding was made for",
                         other->name, other->c.count / d, t, t - 1);
    if (!pos)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "Expand of the constant '%s'; remat expands a constant only as ViT's class token: the one "
                         "reader a Concat along the tokens of it (first) and N x T x D tokens, whose one reader "
                         "adds a position embedding [1, T + 1, D]",
                         cls->name);
    /* pos_embedding [1, T + 1, D] to remat's D x (T + 1); the class token as the bias */
    onnx_weights wt = {0};
    wt.nw = d * t, wt.nb = d;
    wt.w = malloc(wt.nw * sizeof *wt.w), wt.b = malloc(d * sizeof *wt.b);
    if (!wt.w || !wt.b) {
        free(wt.w), free(wt.b);
        return onnx_fail(c, RM_ERR_NOMEM, "out of memory for the position embedding");
    }
    for (size_t i = 0; i < t; i++)
        for (size_t j = 0; j < d; j++) wt.w[j * t + i] = pos->c.f[i * d + j];
    memcpy(wt.b, cls->c.f, d * sizeof *wt.b);
    rm_layer_config cfg = {0};
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_TOKENS, &cfg, &x, 1, &wt, 3, &i))) return rc;
    char note[160];
    snprintf(note, sizeof note, "(the class token '%s' first, the position embedding '%s' added)", cls->name,
             pos->name);
    onnx_note_layer(c, n, i, note);
    return onnx_cover(c, i, x, node, 2, "ViT's tokens");
}

/* ---- one token ------------------------------------------------------------------ */

int onnx_op_gather_token(onnx_import *c, const Onnx__NodeProto *n, onnx_value *x)
{
    onnx_value *ix;
    int64_t axis;
    int rc = onnx_need_input(&ix, c, n, 1, ONNX_CONST, "indices");
    if (!rc) rc = onnx_attr_int(&axis, c, n, "axis", 0);
    if (rc) return rc;
    const int64_t t = (int64_t)x->shape.h * x->shape.w;
    int64_t at = ix->c.is_int && ix->c.rank == 0 ? ix->c.i[0] : -t - 1;
    if (at < 0) at += t;
    if (!x->channels_last || x->rank != 3 || (axis != 1 && axis != -2) || at < 0 || at >= t)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "gathers from a tensor computed from the input; remat gathers only one token (a single "
                         "index along axis 1 of N x T x D tokens: ViT's class token)");
    rm_layer_config cfg = {0};
    cfg.start = (int)at;
    int i;
    if ((rc = onnx_emit(c, n, RM_LAYER_TOKEN, &cfg, &x, 1, NULL, 2, &i))) return rc;
    /* N x D: the same in either layout */
    onnx_find(c, n->output[0])->channels_last = 0;
    char note[48];
    snprintf(note, sizeof note, "(token %lld)", (long long)at);
    onnx_note_layer(c, n, i, note);
    return RM_OK;
}

/* ---- attention ---------------------------------------------------------------------- */

/* The operators the subgraph may hold besides its products and Softmax:
 * layout, shape arithmetic, the scaling. */
static int allowed(const char *op)
{
    static const char *const ops[] = {"Shape",  "Gather",  "Constant",  "Div", "Cast", "Slice", "Squeeze", "Unsqueeze",
                                      "Concat", "Reshape", "Transpose", "Mod", "Mul",  "Sqrt",  "Add",     "Identity"};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
        if (!strcmp(op, ops[k])) return 1;
    return 0;
}

/* A Dropout of ratio 0 (a training export's attention dropout, off by
 * default): the identity. */
static int no_dropout(const onnx_import *c, const Onnx__NodeProto *m)
{
    double ratio;
    return m->n_input >= 2 && m->input[1] && onnx_scalar(c, m->input[1], &ratio) && ratio == 0.0;
}

/* The index of value v in c->v. */
static size_t value_index(const onnx_import *c, const onnx_value *v)
{
    return (size_t)(v - c->v);
}

/* Marks the nodes after n that descend from its output (in[] the values
 * that do), up to the first node that also reads an activation computed
 * before n (the residual Add): *merge. */
static int descendants(const onnx_import *c, const Onnx__NodeProto *n, unsigned char *in, unsigned char *region,
                       int *merge)
{
    in[value_index(c, onnx_find(c, n->output[0]))] = 1;
    for (size_t i = (size_t)c->node + 1; i < c->g->n_node; i++) {
        const Onnx__NodeProto *m = c->g->node[i];
        if (c->skip[i]) continue;
        int mine = 0, foreign = 0;
        for (size_t k = 0; k < m->n_input; k++) {
            const onnx_value *v = m->input[k] && *m->input[k] ? onnx_find(c, m->input[k]) : NULL;
            if (!v) continue;
            if (in[value_index(c, v)])
                mine = 1;
            else if (v->kind == ONNX_ACT)
                foreign = 1;
        }
        if (!mine) continue;
        if (foreign) {
            *merge = (int)i;
            return 1;
        }
        region[i] = 1;
        for (size_t k = 0; k < m->n_output; k++)
            if (m->output[k] && *m->output[k]) in[value_index(c, onnx_find(c, m->output[k]))] = 1;
    }
    return 0;
}

/* Whether node m makes one of the projections' weights or biases, which the
 * layers need folded. */
static int makes_weights(const onnx_import *c, const Onnx__NodeProto *m)
{
    const struct onnx_attention *a = &c->attn;
    const Onnx__NodeProto *in = c->g->node[a->in_proj], *bias = c->g->node[a->in_bias], *out = c->g->node[a->out_proj];
    const char *b = onnx_other_input(bias, in->output[0]);
    for (size_t k = 0; k < m->n_output; k++) {
        const char *o = m->output[k] ? m->output[k] : "";
        if (!strcmp(o, in->input[1]) || (b && !strcmp(o, b))) return 1;
        for (size_t j = 1; j < out->n_input; j++)
            if (out->input[j] && !strcmp(o, out->input[j])) return 1;
    }
    return 0;
}

/* Adds to the region the nodes between n and its exit that only it reads
 * (constant shape arithmetic, Mod and all, which covering spares folding),
 * last first so that a chain joins whole; not what makes the weights. */
static int absorb(const onnx_import *c, unsigned char *region)
{
    int *reads = calloc((size_t)c->nv + 1, sizeof *reads); /* per value: readers in the region */
    if (!reads) return 0;
    for (int i = c->attn.exit; i > c->node; i--) {
        const Onnx__NodeProto *m = c->g->node[i];
        int only = !region[i] && !c->skip[i] && m->n_output > 0 && !makes_weights(c, m);
        for (size_t k = 0; only && k < m->n_output; k++) {
            const onnx_value *v = m->output[k] && *m->output[k] ? onnx_find(c, m->output[k]) : NULL;
            only = v && v->consumers > 0 && reads[value_index(c, v)] == v->consumers;
        }
        if (only) region[i] = 1;
        for (size_t k = 0; region[i] && k < m->n_input; k++) {
            const onnx_value *v = m->input[k] && *m->input[k] ? onnx_find(c, m->input[k]) : NULL;
            if (v) reads[value_index(c, v)]++;
        }
    }
    free(reads);
    return 1;
}

/* Whether the marked region is one attention, and its parts in c->attn. */
static int attention_parts(onnx_import *c, const Onnx__NodeProto *entry, const unsigned char *in,
                           const unsigned char *region, int merge)
{
    struct onnx_attention *a = &c->attn;
    int products = 0, softmaxes = 0;
    a->in_proj = a->in_bias = a->out_proj = a->exit = -1;
    /* the exit: the one value of the region the merge reads */
    const Onnx__NodeProto *mg = c->g->node[merge];
    for (size_t k = 0; k < mg->n_input; k++) {
        const onnx_value *v = onnx_find(c, mg->input[k]);
        if (!v || !in[value_index(c, v)]) continue;
        if (a->exit >= 0) return 0;
        for (int i = c->node + 1; i < merge; i++)
            if (region[i] && !strcmp(c->g->node[i]->output[0], v->name)) a->exit = i;
    }
    if (a->exit < 0) return 0;
    for (int i = c->node + 1; i < merge; i++) {
        if (!region[i]) continue;
        const Onnx__NodeProto *m = c->g->node[i];
        const onnx_value *i0 = m->n_input > 0 ? onnx_find(c, m->input[0]) : NULL,
                         *i1 = m->n_input > 1 ? onnx_find(c, m->input[1]) : NULL;
        const int in0 = i0 && in[value_index(c, i0)], in1 = i1 && in[value_index(c, i1)];
        if (!strcmp(m->op_type, "MatMul") && in0 && in1)
            products++;
        else if (!strcmp(m->op_type, "MatMul") && !strcmp(m->input[0], entry->output[0]) && i1 && !in1)
            a->in_proj = a->in_proj < 0 ? i : -2;
        else if (!strcmp(m->op_type, "Gemm") && in0 && i1 && !in1)
            a->out_proj = a->out_proj < 0 ? i : -2;
        else if (!strcmp(m->op_type, "Softmax"))
            softmaxes++, a->softmax = i;
        else if (!strcmp(m->op_type, "Dropout") ? !no_dropout(c, m) : !allowed(m->op_type))
            return 0;
    }
    if (products != 2 || softmaxes != 1 || a->in_proj < 0 || a->out_proj < 0) return 0;
    /* nothing between the scores and the softmax (no mask), nor after it */
    const Onnx__NodeProto *sm = c->g->node[a->softmax];
    int scores = -1, weighs = onnx_sole_reader(c, sm->output[0]);
    const char *probs = sm->output[0];
    if (weighs > 0 && !strcmp(c->g->node[weighs]->op_type, "Dropout")) /* of ratio 0, checked above */
        probs = c->g->node[weighs]->output[0], weighs = onnx_sole_reader(c, probs);
    for (int i = c->node + 1; i < a->softmax; i++)
        if (region[i] && !strcmp(c->g->node[i]->output[0], sm->input[0])) scores = i;
    if (scores < 0 || strcmp(c->g->node[scores]->op_type, "MatMul") || weighs < 0 || !region[weighs] ||
        strcmp(c->g->node[weighs]->op_type, "MatMul") || strcmp(c->g->node[weighs]->input[0], probs))
        return 0;
    a->scores = scores;
    /* in_proj's bias: the one reader of its product, an Add of a constant */
    int b = onnx_sole_reader(c, c->g->node[a->in_proj]->output[0]);
    if (b < 0 || !region[b] || strcmp(c->g->node[b]->op_type, "Add")) return 0;
    a->in_bias = b;
    return 1;
}

int onnx_op_attention_begin(onnx_import *c, const Onnx__NodeProto *n, int *matched)
{
    *matched = 0;
    const onnx_value *x = n->n_input ? onnx_find(c, n->input[0]) : NULL;
    const Onnx__AttributeProto *perm = onnx_attr(n, "perm");
    if (!x || x->kind != ONNX_ACT || !x->channels_last || x->rank != 3 || !perm || perm->n_ints != 3 ||
        perm->ints[0] != 1 || perm->ints[1] != 0 || perm->ints[2] != 2 || c->attn.exit >= 0 || n->n_output != 1)
        return RM_OK;
    unsigned char *in = calloc((size_t)c->nv + 1, 1), *region = calloc(c->g->n_node + 1, 1);
    if (!in || !region) {
        free(in), free(region);
        return onnx_fail(c, RM_ERR_NOMEM, "out of memory");
    }
    int merge = -1;
    if (descendants(c, n, in, region, &merge) && attention_parts(c, n, in, region, merge)) {
        /* nothing after the merge may read the region, but for its output */
        const char *out = c->g->node[c->attn.exit]->output[0];
        int ok = 1;
        for (size_t i = (size_t)merge; ok && i < c->g->n_node; i++)
            for (size_t k = 0; ok && k < c->g->node[i]->n_input; k++) {
                const onnx_value *v = onnx_find(c, c->g->node[i]->input[k]);
                ok = !v || !in[value_index(c, v)] || !strcmp(v->name, out);
            }
        if ((*matched = ok && absorb(c, region))) {
            c->attn.x = x;
            for (size_t i = 0; i < c->g->n_node; i++)
                if (region[i] && (int)i != c->attn.exit) c->skip[i] = 1;
            onnx_note(c, n, "begins an attention: its nodes up to node %d become layers there", c->attn.exit + 1);
        }
    }
    if (!*matched) c->attn.exit = -1;
    free(in), free(region);
    return RM_OK;
}

/* Constant input k of node i, float, of count elements. */
static const onnx_value *weights(onnx_import *c, int i, int k, size_t count, const char *what)
{
    const Onnx__NodeProto *m = c->g->node[i];
    const onnx_value *v = (size_t)k < m->n_input ? onnx_find(c, m->input[k]) : NULL;
    if (!v || v->kind != ONNX_CONST || v->c.is_int || v->c.count != count) {
        onnx_fail(c, RM_ERR_UNSUPPORTED, "attention: %s '%s' (node %d) is not a constant of %zu floats", what,
                  (size_t)k < m->n_input ? m->input[k] : "", i + 1, count);
        return NULL;
    }
    return onnx_need_floats(c, v, what) ? NULL : v;
}

/* Appends a layer reading *from (a value of the attention, channels last)
 * named after node i; *from becomes its output. */
static int add(onnx_import *c, int i, rm_layer_kind kind, const rm_layer_config *cfg, onnx_value *from,
               onnx_weights *wt, const char *detail)
{
    const int self = c->node;
    c->node = i; /* the layer's line and note are that node's */
    int layer, rc = onnx_add_layer(&layer, c, c->g->node[i], kind, cfg, &from, 1, wt);
    if (!rc) {
        from->layer = layer;
        from->shape = c->m->layers[layer].out_shape;
        onnx_note_layer(c, c->g->node[i], layer, detail);
    }
    c->node = self;
    return rc;
}

/* The node whose first output is name, if op, before node `before`; else NULL. */
static const Onnx__NodeProto *made_by(const onnx_import *c, const char *name, const char *op, int before)
{
    for (int i = before - 1; name && i >= 0; i--) {
        const Onnx__NodeProto *m = c->g->node[i];
        if (m->n_output && m->output[0] && !strcmp(m->output[0], name)) return strcmp(m->op_type, op) ? NULL : m;
    }
    return NULL;
}

/* The heads: q's Reshape to [N, heads, T, head_dim] before the scores (it may
 * be scaled first, by Mul or Div), whose target is the Concat of four
 * Unsqueezed scalars, the second the head count. 0 when it is not found. */
static int heads_of(const onnx_import *c, const struct onnx_attention *a)
{
    const Onnx__NodeProto *q = c->g->node[a->scores];
    const Onnx__NodeProto *scaled = made_by(c, q->input[0], "Mul", a->scores);
    if (!scaled) scaled = made_by(c, q->input[0], "Div", a->scores);
    const Onnx__NodeProto *r = made_by(c, scaled ? scaled->input[0] : q->input[0], "Reshape", a->scores);
    const Onnx__NodeProto *cat = r && r->n_input == 2 ? made_by(c, r->input[1], "Concat", a->scores) : NULL;
    const Onnx__NodeProto *u = cat && cat->n_input == 4 ? made_by(c, cat->input[1], "Unsqueeze", a->scores) : NULL;
    int64_t h;
    return u && onnx_int_scalar(c, u->input[0], &h) && h >= 1 && h <= 1 << 20 ? (int)h : 0;
}

int onnx_op_attention_end(onnx_import *c, const Onnx__NodeProto *n)
{
    struct onnx_attention *a = &c->attn;
    const size_t d = (size_t)a->x->shape.c;
    const int heads = heads_of(c, a);
    if (heads <= 0 || d % (size_t)heads)
        return onnx_fail(c, RM_ERR_UNSUPPORTED,
                         "attention: the head count is not found (q's Reshape to [N, heads, T, head_dim] before the "
                         "scores, its target a Concat of four Unsqueezed scalars, the heads dividing %zu)",
                         d);
    const Onnx__NodeProto *gemm = c->g->node[a->out_proj];
    const Onnx__AttributeProto *alpha = onnx_attr(gemm, "alpha"), *beta = onnx_attr(gemm, "beta"),
                               *ta = onnx_attr(gemm, "transA"), *tb = onnx_attr(gemm, "transB");
    if ((alpha && alpha->f != 1.0f) || (beta && beta->f != 1.0f) || (ta && ta->i))
        return onnx_fail(c, RM_ERR_UNSUPPORTED, "attention: out_proj's Gemm with alpha, beta or transA");
    const Onnx__NodeProto *bias_add = c->g->node[a->in_bias];
    const onnx_value *w_in = weights(c, a->in_proj, 1, 3 * d * d, "in_proj's weights");
    const int bias_at = !strcmp(bias_add->input[0], c->g->node[a->in_proj]->output[0]) ? 1 : 0;
    const onnx_value *b_in = w_in ? weights(c, a->in_bias, bias_at, 3 * d, "in_proj's bias") : NULL;
    const onnx_value *w_out = b_in ? weights(c, a->out_proj, 1, d * d, "out_proj's weights") : NULL;
    const onnx_value *b_out = w_out ? weights(c, a->out_proj, 2, d, "out_proj's bias") : NULL;
    if (!b_out) return c->e->code;
    onnx_weights in_w = {0}, out_w = {0};
    int rc = onnx_linear_weights(&in_w, &w_in->c, 1, (int64_t)(3 * d), (int64_t)d, 1.0f, c);
    if (!rc) rc = onnx_fill_bias(&in_w, b_in, (int64_t)(3 * d), 1.0f, c);
    if (!rc) rc = onnx_linear_weights(&out_w, &w_out->c, !(tb && tb->i), (int64_t)d, (int64_t)d, 1.0f, c);
    if (!rc) rc = onnx_fill_bias(&out_w, b_out, (int64_t)d, 1.0f, c);
    if (rc) {
        free(in_w.w), free(in_w.b), free(out_w.w), free(out_w.b);
        return rc;
    }
    onnx_value v = *a->x;
    rm_layer_config conv = {0}, attn = {0};
    conv.kernel = conv.stride = rm_hw_square(1), conv.bias = 1;
    conv.out_channels = (int)(3 * d);
    attn.heads = heads;
    char detail[96];
    snprintf(detail, sizeof detail, "(%d heads of %zu channels: softmax(q k^T / sqrt %zu) v)", heads, d / (size_t)heads,
             d / (size_t)heads);
    rc = add(c, a->in_proj, RM_LAYER_CONV2D, &conv, &v, &in_w, "(in_proj: q, k and v, a 1x1 conv over the tokens)");
    if (rc) {
        free(out_w.w), free(out_w.b);
        return rc;
    }
    if (!rc) rc = add(c, a->softmax, RM_LAYER_ATTENTION, &attn, &v, NULL, detail);
    conv.out_channels = (int)d;
    if (!rc)
        rc = add(c, a->out_proj, RM_LAYER_CONV2D, &conv, &v, &out_w, "(out_proj, a 1x1 conv over the tokens)");
    else
        free(out_w.w), free(out_w.b);
    if (!rc) rc = onnx_set_act(c, n, 0, v.layer, 3, 1, c->m->layers[v.layer].out_shape);
    if (!rc) onnx_note(c, n, "the attention's output: alias of '%s'", c->m->layers[v.layer].name);
    a->exit = -1;
    return rc;
}
