/* Fuzz harness: ONNX files (models/onnx_read.c, protobuf-c's decoder, and
 * the importer, models/onnx_import.c and onnx_ops.c). The same bytes are
 * also read as a tensor file (rm_onnx_tensor_load, what the backend tests
 * read). An accepted model is re-inferred at a batch size and traced, as a
 * config is in fuzz_config.c: a network that imports but breaks those is as
 * much an importer bug as a crash, and so is a weight or a statistic that is
 * not finite. The loss is chosen to fit the output
 * (RM_ONNX_LOSS_AUTO) so that more inputs get through to the end. In the
 * libFuzzer executable, rm_fuzz_onnx_mutate below is the custom mutator
 * (fuzz_main.c): it changes the protobuf structure rather than bytes. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harnesses.h"
#include "onnx.h"
#include "onnx.pb-c.h"
#include "onnx_wire.h"

int rm_fuzz_onnx(const uint8_t *data, size_t size)
{
    char path[256];
    rm_fuzz_write(path, sizeof path, "model.onnx", data, size);
    rm_onnx_tensor t;
    rm_err te = {RM_OK, ""};
    int trc = rm_onnx_tensor_load(&t, path, &te);
    rm_fuzz_check_err(trc, &te);
    if (!trc) {
        if (!t.name || (!t.data == !t.ints && t.count)) abort(); /* exactly one kind of values */
        rm_onnx_tensor_free(&t);
    }
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    o.loss = RM_ONNX_LOSS_AUTO;
    rm_err e = {RM_OK, ""};
    rm_model *m = NULL;
    rm_onnx_summary sum;
    int rc = rm_onnx_load(&m, &sum, path, &o, &e);
    rm_fuzz_check_err(rc, &e);
    if (rc) {
        if (m) abort(); /* a failed import hands back nothing */
        return rc;
    }
    if (m->nlayers < 2 || sum.layers != m->nlayers || !m->init_params || !m->init_buffers) abort();
    /* The reader promises finite weights and statistics (docs/onnx.md). */
    for (size_t k = 0; k < m->param_count; k++)
        if (!isfinite(m->init_params[k])) abort();
    for (size_t k = 0; k < m->buffer_count; k++)
        if (!isfinite(m->init_buffers[k])) abort();
    rm_fuzz_check_model(m);
    rm_model_free(m);
    return RM_OK;
}

/* ---- the structure-aware mutator ------------------------------------------------
 *
 * Byte-level mutation rarely keeps a protobuf valid past the field it hits,
 * and never makes what the reader's limits are about: a message nested a
 * thousand levels deeper with every length prefix still right, an int64 of
 * 2^63 - 1 in the tensor a Reshape's shape is folded from, a NaN in a Gemm's
 * alpha. This one reads the input's fields by the schema (protobuf-c's
 * descriptors of onnx.proto, the model at the top), changes one field or
 * message, and rewrites every enclosing length prefix to match. */

#define MUT_MAX_FIELDS 4096
#define MUT_MAX_DEPTH 64

typedef struct mut_field {
    size_t at, val, body, end; /* the key, the value (a length's varint for LEN), the payload, the end */
    unsigned wt;
    int parent;                           /* the enclosing message's field, or -1 */
    const ProtobufCFieldDescriptor *fd;   /* NULL: not in the schema */
    const ProtobufCMessageDescriptor *in; /* the message it belongs to */
    int entered;                          /* its payload was read as a sub-message */
} mut_field;

typedef struct mut_rng {
    uint64_t s;
} mut_rng;

static unsigned mut_next(mut_rng *r, unsigned n)
{
    r->s ^= r->s << 13, r->s ^= r->s >> 7, r->s ^= r->s << 17;
    return n ? (unsigned)(r->s % n) : 0;
}

/* The fields of data, depth first (a message's own fields after it), up to cap. */
static int mut_walk(mut_field *f, int cap, const uint8_t *d, size_t size)
{
    struct {
        const ProtobufCMessageDescriptor *desc;
        size_t end;
        int field;
    } st[MUT_MAX_DEPTH];
    int depth = 0, n = 0;
    size_t at = 0;
    st[0].desc = &onnx__model_proto__descriptor, st[0].end = size, st[0].field = -1;
    while (n < cap) {
        while (depth > 0 && at == st[depth].end) depth--;
        if (at >= st[depth].end) break;
        mut_field *m = &f[n];
        uint64_t key, v;
        m->at = at;
        if (pb_read_varint(&key, d, st[depth].end, &at)) break;
        m->val = at;
        m->wt = (unsigned)(key & 7);
        m->parent = st[depth].field;
        m->in = st[depth].desc;
        m->fd = key >> 3 <= 0x1fffffff ? protobuf_c_message_descriptor_get_field(m->in, (unsigned)(key >> 3)) : NULL;
        m->entered = 0;
        if (m->wt == 0) {
            if (pb_read_varint(&v, d, st[depth].end, &at)) break;
            m->body = m->val;
        } else if (m->wt == 1 || m->wt == 5) {
            size_t w = m->wt == 1 ? 8 : 4;
            if (st[depth].end - at < w) break;
            m->body = m->val;
            at += w;
        } else if (m->wt == 2) {
            if (pb_read_varint(&v, d, st[depth].end, &at) || v > st[depth].end - at) break;
            m->body = at;
            m->end = at + (size_t)v;
            if (m->fd && m->fd->type == PROTOBUF_C_TYPE_MESSAGE && depth + 1 < MUT_MAX_DEPTH) {
                m->entered = 1;
                depth++;
                st[depth].desc = m->fd->descriptor, st[depth].end = m->end, st[depth].field = n;
                n++;
                continue;
            }
            at = m->end;
        } else {
            break;
        }
        m->end = at;
        n++;
    }
    return n;
}

/* out = data with [a, b) replaced by rep, inside field `parent`: each
 * enclosing length prefix rewritten for the new length (innermost first;
 * an outer prefix lies before an inner one, so rewriting one leaves the
 * places of the others as they were). */
static void mut_splice(pb_buf *out, const uint8_t *d, size_t size, const mut_field *f, int parent, size_t a, size_t b,
                       const uint8_t *rep, size_t rep_n)
{
    out->n = 0;
    pb_raw(out, d, a);
    pb_raw(out, rep, rep_n);
    pb_raw(out, d + b, size - b);
    long long delta = (long long)rep_n - (long long)(b - a);
    for (int p = parent; p >= 0; p = f[p].parent) {
        uint8_t len[16];
        pb_buf v = {len, 0, sizeof len, 0};
        pb_varint(&v, (uint64_t)((long long)(f[p].end - f[p].body) + delta));
        size_t old = f[p].body - f[p].val;
        pb_splice(out, f[p].val, old, len, v.n);
        delta += (long long)v.n - (long long)old;
    }
}

/* A path of message fields from d back to d (at most 4), for nesting d in
 * itself: TypeProto.sequence_type.elem_type, GraphProto.node.attribute.g. */
static int mut_cycle(const ProtobufCFieldDescriptor **path, const ProtobufCMessageDescriptor *d, mut_rng *r)
{
    for (int attempt = 0; attempt < 32; attempt++) {
        const ProtobufCMessageDescriptor *cur = d;
        for (int len = 0; len < 4; len++) {
            const ProtobufCFieldDescriptor *msgs[64];
            unsigned nm = 0;
            for (unsigned k = 0; k < cur->n_fields && nm < 64; k++)
                if (cur->fields[k].type == PROTOBUF_C_TYPE_MESSAGE) msgs[nm++] = &cur->fields[k];
            if (!nm) break;
            path[len] = msgs[mut_next(r, nm)];
            cur = path[len]->descriptor;
            if (cur == d) return len + 1;
        }
    }
    return 0;
}

static const int64_t mut_ints[] = {INT64_MAX,
                                   INT64_MIN,
                                   INT64_MAX - 1,
                                   -INT64_MAX,
                                   (int64_t)1 << 62,
                                   -((int64_t)1 << 62),
                                   (int64_t)1 << 32,
                                   (int64_t)1 << 31,
                                   INT32_MAX,
                                   INT32_MIN,
                                   3037000500LL,
                                   -3037000500LL,
                                   -1,
                                   0,
                                   1,
                                   2,
                                   -2};
static const float mut_floats[] = {NAN,   INFINITY, -INFINITY, FLT_MAX, -FLT_MAX, 1e30f,  -1e30f,
                                   -0.0f, 1e-45f,   0.0f,      -1.0f,   -0x1p63f, 0x1p63f};
#define MUT_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* Is field k inside a tensor or an attribute (the values the folder and the layers read)? */
static int mut_in_values(const mut_field *f, int k)
{
    return f[k].in == &onnx__tensor_proto__descriptor || f[k].in == &onnx__attribute_proto__descriptor;
}

/* A random field for which ok() holds, preferring (one time in two) those in tensors and attributes. */
static int mut_pick(const mut_field *f, int n, mut_rng *r, int (*ok)(const mut_field *))
{
    int values = (int)mut_next(r, 2), found = -1, seen = 0;
    for (int pass = 0; pass < 2 && found < 0; pass++, values = 0)
        for (int k = 0; k < n; k++)
            if (ok(&f[k]) && (!values || mut_in_values(f, k)) && mut_next(r, (unsigned)++seen) == 0) found = k;
    return found;
}

static int mut_is_msg(const mut_field *m)
{
    return m->entered;
}
static int mut_any(const mut_field *m)
{
    (void)m;
    return 1;
}
static int mut_is_int(const mut_field *m)
{
    return m->wt == 0 ||
           (m->wt == 2 && m->fd && (m->fd->type == PROTOBUF_C_TYPE_INT64 || m->fd->type == PROTOBUF_C_TYPE_INT32));
}
static int mut_is_float(const mut_field *m)
{
    return m->wt == 5 || m->wt == 1 || (m->wt == 2 && m->fd && m->fd->type == PROTOBUF_C_TYPE_FLOAT) ||
           (m->wt == 2 && m->fd && m->fd->type == PROTOBUF_C_TYPE_BYTES && (m->end - m->body) % 4 == 0 &&
            m->end > m->body);
}
static int mut_is_bytes(const mut_field *m)
{
    return m->wt == 2 && !m->entered;
}

size_t rm_fuzz_onnx_mutate(uint8_t *data, size_t size, size_t max_size, unsigned seed,
                           size_t (*byte_mutate)(uint8_t *, size_t, size_t))
{
    mut_rng r = {(uint64_t)seed * 0x9E3779B97F4A7C15ULL + 1};
    mut_field *f = malloc(MUT_MAX_FIELDS * sizeof *f);
    int n = f ? mut_walk(f, MUT_MAX_FIELDS, data, size) : 0;
    pb_buf out = {0}, rep = {0};
    unsigned kind = mut_next(&r, byte_mutate ? 8 : 6);
    int k = -1;
    switch (kind) {
    case 0: /* nest a message in itself, 1 to 3000 times */
        if ((k = mut_pick(f, n, &r, mut_is_msg)) >= 0) {
            const ProtobufCFieldDescriptor *path[4];
            int len = mut_cycle(path, f[k].fd->descriptor, &r);
            static const int levels[] = {1, 2, 3, 10, 40, 60, 100, 500, 3000};
            int times = levels[mut_next(&r, MUT_COUNT(levels))];
            uint32_t ids[4];
            for (int q = 0; q < len; q++) ids[q] = path[q]->id;
            /* At least 2 bytes a field: no more levels than would fit. */
            size_t fit = max_size > size ? (max_size - size) / (2 * (size_t)(len ? len : 1)) : 0;
            pb_raw(&rep, data + f[k].body, f[k].end - f[k].body);
            pb_nest(&rep, ids, len, (size_t)times < fit ? times : (int)fit);
            pb_wrap(&rep, f[k].fd->id, 1);
            mut_splice(&out, data, size, f, f[k].parent, f[k].at, f[k].end, rep.p, rep.n);
        }
        break;
    case 1: /* duplicate a field (a repeated node, a second initializer, an attribute twice) */
        if ((k = mut_pick(f, n, &r, mut_any)) >= 0)
            mut_splice(&out, data, size, f, f[k].parent, f[k].end, f[k].end, data + f[k].at, f[k].end - f[k].at);
        break;
    case 2: /* drop a field */
        if ((k = mut_pick(f, n, &r, mut_any)) >= 0)
            mut_splice(&out, data, size, f, f[k].parent, f[k].at, f[k].end, NULL, 0);
        break;
    case 3:
    case 4: /* an extreme int64: a varint, or one element of packed integers */
        if ((k = mut_pick(f, n, &r, mut_is_int)) >= 0) {
            uint64_t v = (uint64_t)mut_ints[mut_next(&r, MUT_COUNT(mut_ints))];
            if (f[k].wt == 0) {
                pb_varint(&rep, v);
                mut_splice(&out, data, size, f, f[k].parent, f[k].val, f[k].end, rep.p, rep.n);
            } else {
                size_t at = f[k].body, count = 0;
                uint64_t x;
                while (at < f[k].end && !pb_read_varint(&x, data, f[k].end, &at)) count++;
                size_t which = mut_next(&r, (unsigned)(count ? count : 1)), e = 0;
                pb_buf payload = {0};
                for (at = f[k].body; at < f[k].end && !pb_read_varint(&x, data, f[k].end, &at); e++)
                    pb_varint(&payload, e == which ? v : x);
                if (!count) pb_varint(&payload, v);
                pb_msg(&rep, (uint32_t)(f[k].fd ? f[k].fd->id : 0), &payload);
                pb_free(&payload);
                mut_splice(&out, data, size, f, f[k].parent, f[k].at, f[k].end, rep.p, rep.n);
            }
        }
        break;
    case 5: /* NaN, an infinity or an extreme float: a float, a double, packed floats or raw data */
        if ((k = mut_pick(f, n, &r, mut_is_float)) >= 0) {
            float x = mut_floats[mut_next(&r, MUT_COUNT(mut_floats))];
            double dx = x;
            size_t w = f[k].wt == 1 ? 8 : 4, span = f[k].wt == 2 ? f[k].end - f[k].body : w;
            size_t at = f[k].body + w * mut_next(&r, (unsigned)(span / w ? span / w : 1));
            if (f[k].wt == 2 && span >= 8 && span % 8 == 0 && mut_next(&r, 2)) { /* raw INT64 data, say */
                int64_t v = mut_ints[mut_next(&r, MUT_COUNT(mut_ints))];
                at = f[k].body + 8 * mut_next(&r, (unsigned)(span / 8));
                mut_splice(&out, data, size, f, f[k].parent, at, at + 8, (const uint8_t *)&v, 8);
            } else if (at + w <= f[k].end) {
                mut_splice(&out, data, size, f, f[k].parent, at, at + w,
                           w == 8 ? (const uint8_t *)&dx : (const uint8_t *)&x, w);
            }
        }
        break;
    case 6: /* a string's or bytes' content changed by libFuzzer, its length kept right */
        if ((k = mut_pick(f, n, &r, mut_is_bytes)) >= 0 && size < max_size) {
            size_t len = f[k].end - f[k].body, room = max_size - size + len;
            uint8_t *p = malloc(room ? room : 1);
            if (p) {
                memcpy(p, data + f[k].body, len);
                size_t got = byte_mutate(p, len, room);
                pb_raw(&rep, data + f[k].at, f[k].val - f[k].at); /* its key */
                pb_varint(&rep, got);
                pb_raw(&rep, p, got);
                free(p);
                mut_splice(&out, data, size, f, f[k].parent, f[k].at, f[k].end, rep.p, rep.n);
            }
        }
        break;
    default:
        break; /* 7: libFuzzer's own byte-level mutation */
    }
    free(f);
    size_t result;
    if (out.n && !out.oom && out.n <= max_size) {
        memcpy(data, out.p, out.n);
        result = out.n;
    } else {
        result = byte_mutate ? byte_mutate(data, size, max_size) : size;
    }
    pb_free(&out);
    pb_free(&rep);
    return result;
}
