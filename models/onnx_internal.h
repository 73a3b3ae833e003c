/* The ONNX importer's insides, shared by its three files: onnx_read.c
 * (protobuf-c decoding, tensors, attributes), onnx_import.c (the walk over
 * the graph: values, folding, layers, weights, the loss) and onnx_ops.c (one
 * handler per operator). Not for use outside models/onnx_*.c. */
#ifndef REMAT_MODELS_ONNX_INTERNAL_H
#define REMAT_MODELS_ONNX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "name_index.h"
#include "onnx.h"
#include "onnx.pb-c.h"

/* A dimension of a folded integer tensor that stands for the batch size,
 * which an import does not know (each command chooses it): what Shape gives
 * for dimension 0 of an activation. Any arithmetic on it is refused. It can
 * never be a value: the file's integers (initializers, Constants, bindings)
 * holding it are refused, and the only folds that make new integers
 * (fold_arith, Cast of floats in onnx_ops.c) refuse to make it: checked
 * arithmetic, the values folded kept in -(2^63 - 1) .. 2^63 - 1. Only Shape
 * writes it, and the other folds copy it. */
#define ONNX_BATCH INT64_MIN

/* Elements a constant may have: a bound on what a hostile file can make the
 * importer allocate beyond its own size (every element comes from the file,
 * or from folding a few small tensors). */
#define ONNX_MAX_ELEMENTS ((size_t)1 << 31)

/* The most elements a Gather or Concat of constants may make: shape
 * arithmetic needs a handful, and without a bound a chain of such nodes in a
 * small (or hostile) file could double its tensors node after node. */
#define ONNX_MAX_FOLDED ((size_t)1 << 16)

/* A value folded at import: float (weights, scales) or integer (shapes,
 * axes, indices; int32 and bool are widened to int64). */
typedef struct onnx_const {
    int is_int;
    int rank;
    int64_t dims[RM_ONNX_MAX_RANK];
    size_t count;
    float *f;   /* count floats when !is_int */
    int64_t *i; /* count integers when is_int; may hold ONNX_BATCH */
} onnx_const;

/* ONNX_VIEW: an activation seen as N x groups x C/groups x H x W, before or
 * after the transpose of its two middle axes: the steps of ShuffleNet's
 * channel shuffle (onnx_ops_layout.c), which only the next step reads. */
typedef enum onnx_value_kind { ONNX_UNSET = 0, ONNX_ACT, ONNX_CONST, ONNX_VIEW } onnx_value_kind;

/* What onnx_need_input may ask for beyond a kind: an activation in either
 * layout (ONNX_ACT alone refuses a channels-last one). Never a value's kind. */
#define ONNX_ACT_ANY_LAYOUT ((onnx_value_kind)(ONNX_VIEW + 1))

/* What an ONNX name stands for: a tensor remat computes (the input batch
 * or a layer's output), a constant, or a view of a computed tensor. */
typedef struct onnx_value {
    const char *name; /* points into the decoded model */
    onnx_value_kind kind;
    int layer;      /* ONNX_ACT: the layer index, or RM_MODEL_INPUT */
    int rank;       /* ONNX_ACT: the ONNX rank, batch included: 2 (N x C), 3 (N x C x L) or 4 (N x C x H x W) */
    rm_shape shape; /* ONNX_ACT: per sample (n = 1); trailing dimensions of a lower rank are 1 */
    /* ONNX_ACT: ONNX sees the channels last (N x L x C, N x H x W x C: a
     * Transpose of remat's tensor, which stays N x C x ... in memory); only
     * element-wise operations, LayerNorm and MatMul over the last axis, and
     * the Transpose back read it (onnx_ops_layout.c). */
    int channels_last;
    onnx_const c;                    /* ONNX_CONST */
    const struct onnx_value *source; /* ONNX_VIEW: the activation viewed */
    int groups, transposed;          /* ONNX_VIEW: N x groups x C/groups x H x W, or (transposed) C/groups x groups */
    int consumers;                   /* nodes that read it (a node reading it twice counts twice) */
    int needed;                      /* the graph output depends on it */
} onnx_value;

/* One layer's initial values: w and b, and batchnorm's statistics; the
 * counts are checked against the layer's parameter shapes at the end. */
typedef struct onnx_weights {
    float *w, *b, *mean, *var;
    size_t nw, nb, nstats; /* nstats: of mean, and of var */
} onnx_weights;

typedef struct onnx_import {
    const char *path;
    const rm_onnx_options *o;
    rm_err *e;
    Onnx__ModelProto *model;
    const Onnx__GraphProto *g;
    int64_t opset;
    onnx_value *v;
    int nv, cap_v;
    rm_name_index names; /* ONNX name -> index in v */
    rm_model *m;         /* layers grow here, completed one by one */
    int cap_layers;
    onnx_weights *wts; /* per layer */
    rm_name_index layer_names;
    int node;            /* the node being imported (0-based) */
    int *skip;           /* per node: 1 when an earlier node's import already covered it (a folded bias Add) */
    int64_t fixed_batch; /* the batch size the file gives its input, or 0 */
    /* An attention subgraph begun, whose layers come at its last node (onnx_ops_vit.c). */
    struct onnx_attention {
        int exit;                       /* that node, or -1 */
        const struct onnx_value *x;     /* the N x T x D tokens it reads */
        int in_proj, in_bias, out_proj; /* nodes: MatMul by the q, k, v weights, its bias Add, Gemm */
        int softmax, scores;            /* nodes: the Softmax, the MatMul of q and k before it */
    } attn;
    rm_onnx_summary sum;
} onnx_import;

/* ---- onnx_read.c ---- */

/* Reads and decodes the file; *model is freed with onnx__model_proto__free_unpacked. */
int onnx_read_model(Onnx__ModelProto **model, const char *path, rm_err *e);
/* A TensorProto's values. what names it in messages ("initializer 'conv1.weight'"). */
int onnx_const_from_tensor(onnx_const *out, const Onnx__TensorProto *t, const char *path, const char *what, rm_err *e);
void onnx_const_free(onnx_const *c);
/* An empty constant of the given type and shape (count elements zeroed). */
int onnx_const_alloc(onnx_const *out, int is_int, int rank, const int64_t *dims, const char *path, rm_err *e);
/* The node's attribute of this name, or NULL. */
const Onnx__AttributeProto *onnx_attr(const Onnx__NodeProto *n, const char *name);

/* ---- onnx_import.c: what the operator handlers use ---- */

/* "net.onnx: node 12 'conv1' (Conv): " + the message; returns code. */
int onnx_fail(onnx_import *c, rm_code code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The value of an ONNX name, or NULL. */
onnx_value *onnx_find(const onnx_import *c, const char *name);
/* Input k of the current node, or NULL when absent (fewer inputs, or ""). */
onnx_value *onnx_input(onnx_import *c, const Onnx__NodeProto *n, int k);
/* Input k, which must be there and be of the kind asked (ONNX_UNSET: any;
 * ONNX_ACT_ANY_LAYOUT: an activation, channels-last too; otherwise a
 * channels-last activation is refused). */
int onnx_need_input(onnx_value **out, onnx_import *c, const Onnx__NodeProto *n, int k, onnx_value_kind kind,
                    const char *role);
/* Output k of the current node becomes the given value (a layer's output, a
 * constant taken over, an alias of another value). */
int onnx_set_act(onnx_import *c, const Onnx__NodeProto *n, int k, int layer, int rank, int channels_last,
                 rm_shape shape);
int onnx_set_const(onnx_import *c, const Onnx__NodeProto *n, int k, onnx_const *taken);
int onnx_set_alias(onnx_import *c, const Onnx__NodeProto *n, int k, const onnx_value *of);
/* Appends a layer reading the given activations and completes it (shapes,
 * counts); its weights (owned from now on, may be NULL) are what an import
 * keeps. *layer is its index. */
int onnx_add_layer(int *layer, onnx_import *c, const Onnx__NodeProto *n, rm_layer_kind kind, const rm_layer_config *cfg,
                   onnx_value *const *in, int nin, onnx_weights *w);
/* Checks that every attribute of the node is one of the names listed
 * (NULL-terminated): an attribute the handler does not read would be ignored. */
int onnx_check_attrs(onnx_import *c, const Onnx__NodeProto *n, const char *const *known);
/* Attribute readers: the value or the default when absent; a wrong type is an error. */
int onnx_attr_int(int64_t *out, onnx_import *c, const Onnx__NodeProto *n, const char *name, int64_t dflt);
int onnx_attr_float(float *out, onnx_import *c, const Onnx__NodeProto *n, const char *name, float dflt);
/* A string attribute copied into buf (dflt when absent). */
int onnx_attr_string(char *buf, size_t len, onnx_import *c, const Onnx__NodeProto *n, const char *name,
                     const char *dflt);
/* An ints attribute: *count 0 and *v NULL when absent. */
int onnx_attr_ints(const int64_t **v, size_t *count, onnx_import *c, const Onnx__NodeProto *n, const char *name);
/* Outputs beyond the first that something reads: an error (Dropout's mask,
 * MaxPool's indices, BatchNormalization's training statistics). */
int onnx_only_first_output(onnx_import *c, const Onnx__NodeProto *n, const char *what);
/* Adds a line to the notes: "node 12 Conv 'conv1' -> " + text. */
void onnx_note(onnx_import *c, const Onnx__NodeProto *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Output k of node n: a view of activation source (ONNX_VIEW). */
int onnx_set_view(onnx_import *c, const Onnx__NodeProto *n, int k, const onnx_value *source, int groups,
                  int transposed);
/* The node that reads value v when exactly one node does (-1 otherwise). */
int onnx_sole_consumer(const onnx_import *c, const onnx_value *v);

/* ---- onnx_match.c: looking ahead at the nodes a multi-node form covers ---- */

/* onnx_sole_consumer by name (answers for later nodes too). */
int onnx_sole_reader(const onnx_import *c, const char *name);
/* Node i when it is op with n_in inputs and one output, after this node; else NULL. */
const Onnx__NodeProto *onnx_later(const onnx_import *c, int i, const char *op, size_t n_in);
/* The float scalar a value holds or a later Constant (through a Cast) defines: 1 and *v, or 0. */
int onnx_scalar(const onnx_import *c, const char *name, double *v);
/* The integer scalar a value holds or a later Constant defines: 1 and *v, or 0. */
int onnx_int_scalar(const onnx_import *c, const char *name, int64_t *v);
/* The float constant of count elements a value (name may be NULL) holds already, else NULL. */
const onnx_value *onnx_float_const(const onnx_import *c, const char *name, size_t count);
/* The input of binary node b other than name (NULL when b does not read name exactly once). */
const char *onnx_other_input(const Onnx__NodeProto *b, const char *name);
/* Binary node b reads name and a scalar within a relative 1e-6 of want. */
int onnx_with_scalar(const onnx_import *c, const Onnx__NodeProto *b, const char *name, double want);
/* Layer covers nodes[0..count) of its pattern: the last one's output is an
 * alias of the layer's, of x's rank and layout; the others are skipped. */
int onnx_cover(onnx_import *c, int layer, const onnx_value *x, const int *nodes, int count, const char *what);

/* ---- onnx_ops.c ---- */

/* Imports node n (c->node) by its operator. */
int onnx_import_node(onnx_import *c, const Onnx__NodeProto *n);
/* Adds the layer of node n reading in[0..nin) (weights w, may be NULL); its
 * output is n's first, of rank; *layer (may be NULL) its index. */
int onnx_emit(onnx_import *c, const Onnx__NodeProto *n, rm_layer_kind kind, const rm_layer_config *cfg,
              onnx_value *const *in, int nin, onnx_weights *w, int rank, int *layer);
/* The note of layer i made from n: "<layer> '<name>' <detail>, output <shape> per sample". */
void onnx_note_layer(onnx_import *c, const Onnx__NodeProto *n, int i, const char *detail);
/* d[0..rank) as "[N, 3, 224]" (ONNX_BATCH as N), in buf. */
const char *onnx_dims_str(char *buf, size_t len, const int64_t *d, int rank);
/* Output 0 of n becomes the folded constant k (taken), with a note. */
int onnx_fold_done(onnx_import *c, const Onnx__NodeProto *n, onnx_const *k);
/* A constant that becomes weights: FLOAT and finite. */
int onnx_need_floats(onnx_import *c, const onnx_value *v, const char *role);
/* wt->w [m][f] (out x in) from b: [f, m] (transposed) or [m, f], times alpha. */
int onnx_linear_weights(onnx_weights *wt, const onnx_const *b, int transposed, int64_t m, int64_t f, float alpha,
                        onnx_import *c);
/* wt->b, m values from b (one value repeated, or m), times scale. */
int onnx_fill_bias(onnx_weights *wt, const onnx_value *b, int64_t m, float scale, onnx_import *c);

/* ---- onnx_fold_logic.c: ConstantOfShape, Equal, Where on constants ---- */

int onnx_op_constant_of_shape(onnx_import *c, const Onnx__NodeProto *n);
int onnx_op_equal(onnx_import *c, const Onnx__NodeProto *n);
int onnx_op_where(onnx_import *c, const Onnx__NodeProto *n);

/* ---- onnx_ops_vit.c: a vision transformer's tokens and attention ---- */

/* Expand of the class token, with the Concat and the position embedding's Add after it: a tokens layer. */
int onnx_op_expand(onnx_import *c, const Onnx__NodeProto *n);
/* Gather of one token (axis 1 of a channels-last N x T x D view): a token layer. */
int onnx_op_gather_token(onnx_import *c, const Onnx__NodeProto *n, onnx_value *x);
/* nn.MultiheadAttention's exported subgraph that Transpose node n (perm 1, 0, 2 of an N x T x D view)
 * begins: *matched 0 (and RM_OK) when it is none; else its nodes are covered and the layers come at
 * its last node (onnx_op_attention_end). */
int onnx_op_attention_begin(onnx_import *c, const Onnx__NodeProto *n, int *matched);
int onnx_op_attention_end(onnx_import *c, const Onnx__NodeProto *n);

/* ---- onnx_ops_act.c: the activations ---- */

int onnx_op_relu(onnx_import *c, const Onnx__NodeProto *n);
/* Clip to [0, inf) or [0, 6]. */
int onnx_op_clip(onnx_import *c, const Onnx__NodeProto *n);
/* Sigmoid or HardSigmoid (kind), or silu / hardswish when its reader multiplies it by its input. */
int onnx_op_gate(onnx_import *c, const Onnx__NodeProto *n, rm_layer_kind kind);
/* Tanh, HardSwish, Gelu. */
int onnx_op_activation(onnx_import *c, const Onnx__NodeProto *n);
/* Imports the multi-node form PyTorch writes for one layer (GELU's erf and
 * tanh forms at opset 13) that node n begins; *matched 0 (and RM_OK) when
 * n begins none, and the operator's own handler is next. */
int onnx_op_pattern(onnx_import *c, const Onnx__NodeProto *n, int *matched);
/* Whether Mul node n multiplies two computed tensors, and its import (squeeze-and-excitation's scale). */
int onnx_is_mul_of_activations(const onnx_import *c, const Onnx__NodeProto *n);
int onnx_op_channel_scale(onnx_import *c, const Onnx__NodeProto *n);

/* ---- onnx_ops_norm.c ---- */

/* The decomposed LayerNorm that ReduceMean node n begins, as one layernorm
 * layer; *matched 0 (and RM_OK) when n begins none. */
int onnx_op_layernorm(onnx_import *c, const Onnx__NodeProto *n, int *matched);
/* LayerNormalization (opset 17) over the last axis. */
int onnx_op_layernormalization(onnx_import *c, const Onnx__NodeProto *n);

/* ---- onnx_ops_layout.c: layout of computed tensors ---- */

/* Reshape of activation x to d[0..nt) (resolved: N first, no -1). */
int onnx_layout_reshape(onnx_import *c, const Onnx__NodeProto *n, const onnx_value *x, const int64_t *d, int nt);
/* Transpose of view v by perm[0..np). */
int onnx_layout_transpose(onnx_import *c, const Onnx__NodeProto *n, const onnx_value *v, const int64_t *perm,
                          size_t np);
/* Transpose of activation x by perm[0..np): its channels to the end or back (an alias). */
int onnx_layout_channels_last(onnx_import *c, const Onnx__NodeProto *n, const onnx_value *x, const int64_t *perm,
                              size_t np);
/* Slice of activation x along axis (normalised), start to end by step (as ONNX gives them). */
int onnx_layout_slice(onnx_import *c, const Onnx__NodeProto *n, onnx_value *x, int64_t axis, int64_t start, int64_t end,
                      int64_t step);
/* The dimensions of view v, ONNX_BATCH first; returns its rank (5). */
int onnx_layout_view_dims(int64_t *d, const onnx_value *v);

#endif
