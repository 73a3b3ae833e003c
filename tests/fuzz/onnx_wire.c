/* Writing protobuf and ONNX models byte by byte (see onnx_wire.h). */
#include "onnx_wire.h"

#include <stdlib.h>
#include <string.h>

void pb_free(pb_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static int room(pb_buf *b, size_t n)
{
    if (b->oom) return 0;
    if (b->cap - b->n >= n) return 1;
    size_t cap = b->cap ? b->cap : 64;
    while (cap - b->n < n) cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p) {
        b->oom = 1;
        return 0;
    }
    b->p = p, b->cap = cap;
    return 1;
}

void pb_raw(pb_buf *b, const void *data, size_t n)
{
    if (!n || !room(b, n)) return;
    memcpy(b->p + b->n, data, n);
    b->n += n;
}

void pb_varint(pb_buf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t k = 0;
    do {
        tmp[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    pb_raw(b, tmp, k);
}

void pb_key(pb_buf *b, uint32_t field, unsigned wire_type)
{
    pb_varint(b, (uint64_t)field << 3 | wire_type);
}

void pb_int(pb_buf *b, uint32_t field, int64_t v)
{
    pb_key(b, field, 0);
    pb_varint(b, (uint64_t)v);
}

void pb_f32(pb_buf *b, uint32_t field, float v)
{
    uint8_t le[4];
    memcpy(le, &v, 4); /* little-endian hosts, as the reader assumes */
    pb_key(b, field, 5);
    pb_raw(b, le, 4);
}

void pb_bytes(pb_buf *b, uint32_t field, const void *data, size_t n)
{
    pb_key(b, field, 2);
    pb_varint(b, n);
    pb_raw(b, data, n);
}

void pb_str(pb_buf *b, uint32_t field, const char *s)
{
    pb_bytes(b, field, s, strlen(s));
}

void pb_msg(pb_buf *b, uint32_t field, const pb_buf *sub)
{
    if (sub->oom) b->oom = 1;
    pb_bytes(b, field, sub->p, sub->n);
}

void pb_splice(pb_buf *b, size_t pos, size_t old, const void *data, size_t n)
{
    if (n > old && !room(b, n - old)) return;
    if (b->oom) return;
    memmove(b->p + pos + n, b->p + pos + old, b->n - pos - old);
    if (n) memcpy(b->p + pos, data, n);
    b->n = b->n - old + n;
}

int pb_read_varint(uint64_t *v, const uint8_t *p, size_t end, size_t *at)
{
    uint64_t x = 0;
    for (size_t k = 0; k < 10 && *at + k < end; k++) {
        x |= (uint64_t)(p[*at + k] & 0x7f) << (7 * k);
        if (!(p[*at + k] & 0x80)) {
            *at += k + 1;
            *v = x;
            return 0;
        }
    }
    return -1;
}

void pb_nest(pb_buf *b, const uint32_t *fields, int nfields, int times)
{
    /* Wrapping only puts a key and a length before what is there, so the
     * heads are made inside out (each length is known by then) and the
     * content is moved once: linear in the result, where wrapping one level
     * at a time would move it once a level. */
    size_t nheads = (size_t)nfields * (size_t)(times > 0 ? times : 0);
    if (!nheads || b->oom) return;
    size_t *end = malloc(nheads * sizeof *end); /* where each head ends in heads, innermost first */
    pb_buf heads = {0}, prefix = {0};
    if (!end) {
        b->oom = 1;
        return;
    }
    uint64_t len = b->n;
    for (size_t h = 0; h < nheads; h++) {
        size_t before = heads.n;
        pb_key(&heads, fields[nfields - 1 - (int)(h % (size_t)nfields)], 2);
        pb_varint(&heads, len);
        len += heads.n - before;
        end[h] = heads.n;
    }
    for (size_t h = nheads; h-- > 0;) pb_raw(&prefix, heads.p + (h ? end[h - 1] : 0), end[h] - (h ? end[h - 1] : 0));
    if (heads.oom || prefix.oom)
        b->oom = 1;
    else
        pb_splice(b, 0, 0, prefix.p, prefix.n);
    free(end);
    pb_free(&heads);
    pb_free(&prefix);
}

void pb_wrap(pb_buf *b, uint32_t field, int levels)
{
    pb_nest(b, &field, 1, levels);
}

/* ---- ONNX ---- */

static void tensor_head(pb_buf *t, const char *name, const int64_t *dims, int rank, int type)
{
    for (int k = 0; k < rank; k++) pb_int(t, 1, dims[k]); /* dims */
    pb_int(t, 2, type);                                   /* data_type */
    pb_str(t, 8, name);                                   /* name */
}

static size_t count_of(const int64_t *dims, int rank)
{
    size_t n = 1;
    for (int k = 0; k < rank; k++) n *= (size_t)dims[k];
    return n;
}

void onnx_w_tensor_f(pb_buf *t, const char *name, const int64_t *dims, int rank, const float *f)
{
    tensor_head(t, name, dims, rank, ONNX_W_FLOAT);
    size_t n = count_of(dims, rank);
    pb_key(t, 4, 2); /* float_data, packed */
    pb_varint(t, 4 * n);
    pb_raw(t, f, 4 * n);
}

void onnx_w_tensor_i(pb_buf *t, const char *name, const int64_t *dims, int rank, const int64_t *i)
{
    tensor_head(t, name, dims, rank, ONNX_W_INT64);
    pb_buf packed = {0};
    for (size_t k = 0; k < count_of(dims, rank); k++) pb_varint(&packed, (uint64_t)i[k]);
    pb_msg(t, 7, &packed); /* int64_data, packed */
    pb_free(&packed);
}

void onnx_w_value_info(pb_buf *v, const char *name, const int64_t *dims, int rank)
{
    pb_buf shape = {0}, tensor = {0}, type = {0};
    for (int k = 0; k < rank; k++) {
        pb_buf dim = {0};
        if (dims[k] < 0)
            pb_str(&dim, 2, "N"); /* dim_param */
        else
            pb_int(&dim, 1, dims[k]); /* dim_value */
        pb_msg(&shape, 1, &dim);
        pb_free(&dim);
    }
    pb_int(&tensor, 1, ONNX_W_FLOAT); /* elem_type */
    pb_msg(&tensor, 2, &shape);
    pb_msg(&type, 1, &tensor); /* tensor_type */
    pb_str(v, 1, name);
    pb_msg(v, 2, &type);
    pb_free(&shape);
    pb_free(&tensor);
    pb_free(&type);
}

void onnx_w_attr_int(pb_buf *a, const char *name, int64_t v)
{
    pb_str(a, 1, name);
    pb_int(a, 20, 2); /* INT */
    pb_int(a, 3, v);
}

void onnx_w_attr_float(pb_buf *a, const char *name, float v)
{
    pb_str(a, 1, name);
    pb_int(a, 20, 1); /* FLOAT */
    pb_f32(a, 2, v);
}

void onnx_w_attr_ints(pb_buf *a, const char *name, const int64_t *v, int n)
{
    pb_str(a, 1, name);
    pb_int(a, 20, 7); /* INTS */
    for (int k = 0; k < n; k++) pb_int(a, 8, v[k]);
}

void onnx_w_attr_tensor(pb_buf *a, const char *name, const pb_buf *tensor)
{
    pb_str(a, 1, name);
    pb_int(a, 20, 4); /* TENSOR */
    pb_msg(a, 5, tensor);
}

void onnx_w_attr_graph(pb_buf *a, const char *name, const pb_buf *graph)
{
    pb_str(a, 1, name);
    pb_int(a, 20, 5); /* GRAPH */
    pb_msg(a, 6, graph);
}

void onnx_w_node(pb_buf *n, const char *op, const char *name, const char *const *in, const char *const *out,
                 const pb_buf *attrs, int nattrs)
{
    for (const char *const *p = in; p && *p; p++) pb_str(n, 1, *p);
    for (const char *const *p = out; p && *p; p++) pb_str(n, 2, *p);
    if (name) pb_str(n, 3, name);
    pb_str(n, 4, op);
    for (int k = 0; k < nattrs; k++) pb_msg(n, 5, &attrs[k]);
}

void onnx_w_model(pb_buf *m, const pb_buf *graph)
{
    pb_buf opset = {0};
    pb_str(&opset, 1, "");
    pb_int(&opset, 2, 13);
    pb_int(m, 1, 8); /* ir_version */
    pb_str(m, 2, "remat-tests");
    pb_msg(m, 7, graph);
    pb_msg(m, 8, &opset);
    pb_free(&opset);
}

void onnx_w_graph_model(pb_buf *m, const pb_buf *input, const pb_buf *nodes, int nnodes, const pb_buf *inits,
                        int ninits)
{
    pb_buf g = {0}, in = {0}, out = {0};
    const int64_t x_dims[4] = {-1, 2, 2, 2}, y_dims[1] = {-1};
    if (!input) onnx_w_value_info(&in, "x", x_dims, 4);
    for (int k = 0; k < nnodes; k++) pb_msg(&g, 1, &nodes[k]);
    for (int k = 0; k < ninits; k++) pb_msg(&g, 5, &inits[k]);
    pb_msg(&g, 11, input ? input : &in);
    onnx_w_value_info(&out, "y", y_dims, 1);
    pb_msg(&g, 12, &out);
    onnx_w_model(m, &g);
    pb_free(&g);
    pb_free(&in);
    pb_free(&out);
}

#define LIST(...) ((const char *const[]){__VA_ARGS__, NULL})

void onnx_w_deep_type_model(pb_buf *m, int pairs, int shaped)
{
    pb_buf tensor = {0}, type = {0}, vi = {0}, relu = {0};
    pb_int(&tensor, 1, ONNX_W_FLOAT); /* elem_type */
    if (shaped) {
        pb_buf shape = {0}, dim = {0};
        pb_int(&dim, 1, 2);
        pb_msg(&shape, 1, &dim);
        pb_msg(&tensor, 2, &shape);
        pb_free(&shape);
        pb_free(&dim);
    }
    pb_msg(&type, 1, &tensor);           /* tensor_type */
    const uint32_t sequence[2] = {4, 1}; /* TypeProto.sequence_type, Sequence.elem_type */
    pb_nest(&type, sequence, 2, pairs);
    pb_str(&vi, 1, "x");
    pb_msg(&vi, 2, &type);
    onnx_w_node(&relu, "Relu", "relu", LIST("x"), LIST("y"), NULL, 0);
    onnx_w_graph_model(m, &vi, &relu, 1, NULL, 0);
    pb_free(&tensor);
    pb_free(&type);
    pb_free(&vi);
    pb_free(&relu);
}

void onnx_w_deep_graph_model(pb_buf *m, int levels)
{
    pb_buf inner = {0}, attr = {0}, nodes[2] = {{0}, {0}};
    pb_str(&inner, 2, "body");           /* GraphProto.name */
    const uint32_t level[3] = {1, 5, 6}; /* GraphProto.node, NodeProto.attribute, AttributeProto.g */
    pb_nest(&inner, level, 3, levels - 1);
    onnx_w_attr_graph(&attr, "then_branch", &inner);
    onnx_w_node(&nodes[0], "Relu", "relu", LIST("x"), LIST("y"), NULL, 0);
    onnx_w_node(&nodes[1], "If", "if", LIST("x"), LIST("z"), &attr, 1);
    onnx_w_graph_model(m, NULL, nodes, 2, NULL, 0);
    pb_free(&inner);
    pb_free(&attr);
    pb_free(&nodes[0]);
    pb_free(&nodes[1]);
}

/* Reshape(x, Concat(s, [-1])) after the nodes that make s. */
static void reshape_by(pb_buf *m, pb_buf *nodes, int nnodes, pb_buf *inits, int ninits)
{
    const int64_t one[1] = {1}, minus1[1] = {-1};
    pb_buf axis = {0};
    onnx_w_tensor_i(&inits[ninits++], "rest", one, 1, minus1);
    onnx_w_attr_int(&axis, "axis", 0);
    onnx_w_node(&nodes[nnodes++], "Concat", "concat", LIST("s", "rest"), LIST("shape"), &axis, 1);
    onnx_w_node(&nodes[nnodes++], "Reshape", "reshape", LIST("x", "shape"), LIST("y"), NULL, 0);
    onnx_w_graph_model(m, NULL, nodes, nnodes, inits, ninits);
    for (int k = 0; k < nnodes; k++) pb_free(&nodes[k]);
    for (int k = 0; k < ninits; k++) pb_free(&inits[k]);
    pb_free(&axis);
}

void onnx_w_fold_model(pb_buf *m, const char *op, int64_t a, int64_t b)
{
    const int64_t one[1] = {1};
    pb_buf inits[3] = {{0}, {0}, {0}}, nodes[3] = {{0}, {0}, {0}};
    onnx_w_tensor_i(&inits[0], "a", one, 1, &a);
    onnx_w_tensor_i(&inits[1], "b", one, 1, &b);
    onnx_w_node(&nodes[0], op, "fold", LIST("a", "b"), LIST("s"), NULL, 0);
    reshape_by(m, nodes, 1, inits, 2);
}

void onnx_w_cast_model(pb_buf *m, float f)
{
    const int64_t one[1] = {1};
    pb_buf inits[2] = {{0}, {0}}, nodes[3] = {{0}, {0}, {0}}, to = {0};
    onnx_w_tensor_f(&inits[0], "f", one, 1, &f);
    onnx_w_attr_int(&to, "to", ONNX_W_INT64);
    onnx_w_node(&nodes[0], "Cast", "cast", LIST("f"), LIST("s"), &to, 1);
    reshape_by(m, nodes, 1, inits, 1);
    pb_free(&to);
}

void onnx_w_batchnorm_model(pb_buf *m, const float scale[2], const float var[2], float eps)
{
    const int64_t two[1] = {2};
    const float zeros[2] = {0, 0};
    pb_buf inits[4] = {{0}, {0}, {0}, {0}}, node = {0}, attr = {0};
    onnx_w_tensor_f(&inits[0], "bn.scale", two, 1, scale);
    onnx_w_tensor_f(&inits[1], "bn.bias", two, 1, zeros);
    onnx_w_tensor_f(&inits[2], "bn.mean", two, 1, zeros);
    onnx_w_tensor_f(&inits[3], "bn.var", two, 1, var);
    onnx_w_attr_float(&attr, "epsilon", eps);
    onnx_w_node(&node, "BatchNormalization", "bn", LIST("x", "bn.scale", "bn.bias", "bn.mean", "bn.var"), LIST("y"),
                &attr, 1);
    onnx_w_graph_model(m, NULL, &node, 1, inits, 4);
    for (int k = 0; k < 4; k++) pb_free(&inits[k]);
    pb_free(&node);
    pb_free(&attr);
}

void onnx_w_gemm_model(pb_buf *m, const float w[6], const float c[2], float alpha, float beta)
{
    const int64_t wd[2] = {3, 2}, cd[1] = {2}, xd[2] = {-1, 3};
    pb_buf inits[2] = {{0}, {0}}, node = {0}, attrs[2] = {{0}, {0}}, in = {0};
    onnx_w_tensor_f(&inits[0], "fc.weight", wd, 2, w);
    onnx_w_tensor_f(&inits[1], "fc.bias", cd, 1, c);
    onnx_w_attr_float(&attrs[0], "alpha", alpha);
    onnx_w_attr_float(&attrs[1], "beta", beta);
    onnx_w_value_info(&in, "x", xd, 2);
    onnx_w_node(&node, "Gemm", "fc", LIST("x", "fc.weight", "fc.bias"), LIST("y"), attrs, 2);
    onnx_w_graph_model(m, &in, &node, 1, inits, 2);
    pb_free(&inits[0]);
    pb_free(&inits[1]);
    pb_free(&node);
    pb_free(&attrs[0]);
    pb_free(&attrs[1]);
    pb_free(&in);
}

void onnx_w_fold_chain_model(pb_buf *m)
{
    const int64_t one[1] = {1}, wd[2] = {8, 3}, cd[1] = {3};
    const int64_t three = 3, two = 2, zero = 0;
    const float onef = 1.0f, c[3] = {0.1f, -0.2f, 0.3f};
    float w[24];
    for (int k = 0; k < 24; k++) w[k] = (float)(k % 7) * 0.125f - 0.375f;
    pb_buf inits[6] = {{0}}, nodes[12] = {{0}}, attr = {0}, to = {0}, value = {0}, cst = {0};
    onnx_w_tensor_i(&inits[0], "three", one, 1, &three);
    onnx_w_tensor_i(&inits[1], "two", one, 1, &two);
    onnx_w_tensor_i(&inits[2], "zero", NULL, 0, &zero); /* a scalar index */
    onnx_w_tensor_i(&inits[3], "axes", one, 1, &zero);
    onnx_w_tensor_f(&inits[4], "fc.weight", wd, 2, w);
    onnx_w_tensor_f(&inits[5], "fc.bias", cd, 1, c);
    int n = 0;
    onnx_w_node(&nodes[n++], "Shape", "shape", LIST("x"), LIST("dims"), NULL, 0);
    onnx_w_node(&nodes[n++], "Gather", "batch", LIST("dims", "zero"), LIST("n"), NULL, 0);
    onnx_w_node(&nodes[n++], "Unsqueeze", "batch1", LIST("n", "axes"), LIST("n1"), NULL, 0);
    onnx_w_node(&nodes[n++], "Mul", "mul", LIST("three", "two"), LIST("six"), NULL, 0);
    onnx_w_node(&nodes[n++], "Add", "add", LIST("six", "three"), LIST("nine"), NULL, 0);
    onnx_w_tensor_f(&value, "", one, 1, &onef);
    onnx_w_attr_tensor(&cst, "value", &value);
    onnx_w_node(&nodes[n++], "Constant", "one_f", NULL, LIST("onef"), &cst, 1);
    onnx_w_attr_int(&to, "to", ONNX_W_INT64);
    onnx_w_node(&nodes[n++], "Cast", "one_i", LIST("onef"), LIST("onei"), &to, 1);
    onnx_w_node(&nodes[n++], "Sub", "sub", LIST("nine", "onei"), LIST("eight"), NULL, 0);
    onnx_w_attr_int(&attr, "axis", 0);
    onnx_w_node(&nodes[n++], "Concat", "target", LIST("n1", "eight"), LIST("target"), &attr, 1);
    onnx_w_node(&nodes[n++], "Reshape", "flatten", LIST("x", "target"), LIST("h"), NULL, 0);
    onnx_w_node(&nodes[n++], "Gemm", "fc", LIST("h", "fc.weight", "fc.bias"), LIST("y"), NULL, 0);
    onnx_w_graph_model(m, NULL, nodes, n, inits, 6);
    for (int k = 0; k < n; k++) pb_free(&nodes[k]);
    for (int k = 0; k < 6; k++) pb_free(&inits[k]);
    pb_free(&attr);
    pb_free(&to);
    pb_free(&value);
    pb_free(&cst);
}
