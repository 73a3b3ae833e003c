/* Writing protobuf, and ONNX models, byte by byte: what the ONNX tests build
 * their hostile files with (tests/models/test_onnx_hostile.c), what the ONNX
 * fuzzer's structure-aware mutator writes its mutants with (fuzz_onnx.c), and
 * what gen_seeds.c writes the ONNX seeds with. Byte by byte and not through
 * protobuf-c's packer because the files these make are the ones protobuf-c
 * must not be trusted with: thousands of levels deep (its packer recurses
 * too), more nodes than remat takes, values no exporter writes.
 *
 * A pb_buf grows as it is written; an allocation failure is remembered (oom)
 * and later writes do nothing, so callers check once at the end. */
#ifndef REMAT_TESTS_FUZZ_ONNX_WIRE_H
#define REMAT_TESTS_FUZZ_ONNX_WIRE_H

#include <stddef.h>
#include <stdint.h>

typedef struct pb_buf {
    uint8_t *p;
    size_t n, cap;
    int oom;
} pb_buf;

void pb_free(pb_buf *b);
void pb_raw(pb_buf *b, const void *data, size_t n);
void pb_varint(pb_buf *b, uint64_t v);
void pb_key(pb_buf *b, uint32_t field, unsigned wire_type);
void pb_int(pb_buf *b, uint32_t field, int64_t v);                    /* varint field */
void pb_f32(pb_buf *b, uint32_t field, float v);                      /* fixed32 field */
void pb_bytes(pb_buf *b, uint32_t field, const void *data, size_t n); /* length-delimited */
void pb_str(pb_buf *b, uint32_t field, const char *s);
void pb_msg(pb_buf *b, uint32_t field, const pb_buf *sub); /* sub's bytes as a sub-message */
/* Replaces the `old` bytes of b at pos with n bytes of data. */
void pb_splice(pb_buf *b, size_t pos, size_t old, const void *data, size_t n);
/* Reads a varint at p[*at..end): 0 with *at past it; nonzero when it is cut
 * off or longer than 10 bytes. */
int pb_read_varint(uint64_t *v, const uint8_t *p, size_t end, size_t *at);
/* Nests b `times` times in the path of message fields fields[0] (outermost)
 * .. fields[nfields - 1]: with fields {4, 1}, b becomes 4 { 1 { 4 { 1 { ...
 * b ... } } } }. Written inside out without recursion, in linear time. */
void pb_nest(pb_buf *b, const uint32_t *fields, int nfields, int times);
/* pb_nest of one field: b becomes field { b }, `levels` times. */
void pb_wrap(pb_buf *b, uint32_t field, int levels);

/* ---- ONNX messages (field numbers of models/onnx.proto) ---- */

enum { ONNX_W_FLOAT = 1, ONNX_W_INT64 = 7 }; /* TensorProto.DataType */

/* A TensorProto of rank dims, FLOAT (f) or INT64 (i), values in the typed field. */
void onnx_w_tensor_f(pb_buf *t, const char *name, const int64_t *dims, int rank, const float *f);
void onnx_w_tensor_i(pb_buf *t, const char *name, const int64_t *dims, int rank, const int64_t *i);
/* A ValueInfoProto of a FLOAT tensor of rank dims (dims[0] < 0: a symbolic "N"). */
void onnx_w_value_info(pb_buf *v, const char *name, const int64_t *dims, int rank);
/* AttributeProtos. */
void onnx_w_attr_int(pb_buf *a, const char *name, int64_t v);
void onnx_w_attr_float(pb_buf *a, const char *name, float v);
void onnx_w_attr_ints(pb_buf *a, const char *name, const int64_t *v, int n);
void onnx_w_attr_tensor(pb_buf *a, const char *name, const pb_buf *tensor);
void onnx_w_attr_graph(pb_buf *a, const char *name, const pb_buf *graph);
/* A NodeProto: inputs and outputs NULL-terminated lists, attrs nattrs AttributeProtos. */
void onnx_w_node(pb_buf *n, const char *op, const char *name, const char *const *in, const char *const *out,
                 const pb_buf *attrs, int nattrs);
/* A ModelProto (IR 8, opset 13) around a GraphProto's bytes. */
void onnx_w_model(pb_buf *m, const pb_buf *graph);
/* A model of these nodes and initializers, the graph output y, and the input
 * (NULL: x, a FLOAT tensor N x 2 x 2 x 2 of symbolic batch). */
void onnx_w_graph_model(pb_buf *m, const pb_buf *input, const pb_buf *nodes, int nnodes, const pb_buf *inits,
                        int ninits);

/* ---- the models of the hostile-file tests and the fuzz seeds ---- */

/* Relu(x): x's type is `pairs` levels of sequence_type.elem_type around a
 * tensor type (with a shape of one dimension when shaped). Its deepest
 * message is at depth 4 + 2 pairs, 5 + 2 pairs with the shape (the model at
 * depth 0, the graph 1, the value info 2, its type 3). */
void onnx_w_deep_type_model(pb_buf *m, int pairs, int shaped);
/* Relu(x), and an If node whose then_branch graph holds a node whose
 * attribute holds a graph ... `levels` graphs deep (3 messages a level). */
void onnx_w_deep_graph_model(pb_buf *m, int levels);
/* y = Reshape(x, Concat(OP(a, b), [-1])): OP ("Add", "Sub", "Mul", "Div")
 * of two INT64 initializers a and b of one element. */
void onnx_w_fold_model(pb_buf *m, const char *op, int64_t a, int64_t b);
/* The same with Cast(f, to INT64) of a FLOAT initializer in place of OP. */
void onnx_w_cast_model(pb_buf *m, float f);
/* y = BatchNormalization(x; scale, zero bias, zero mean, var; epsilon). */
void onnx_w_batchnorm_model(pb_buf *m, const float scale[2], const float var[2], float eps);
/* y = Gemm(x (N x 3), W (3 x 2), C (2); alpha, beta): 2 logits. */
void onnx_w_gemm_model(pb_buf *m, const float w[6], const float c[2], float alpha, float beta);
/* A model remat imports whose Reshape target is folded from every integer
 * path of the constant folder: y = Gemm(Reshape(x, Concat(Unsqueeze(
 * Gather(Shape(x), 0)), Sub(Add(Mul(3, 2), 3), Cast(Constant 1.0))))) ->
 * [N, 8] -> 3 logits. The fuzz seed the int64 mutations start from. */
void onnx_w_fold_chain_model(pb_buf *m);

#endif
