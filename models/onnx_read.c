/* The ONNX importer's reading half: a file into protobuf-c's decoded
 * ModelProto (generated at build time from models/onnx.proto), TensorProtos
 * into plain arrays, attributes by name. protobuf-c checks the wire format
 * (lengths, tags); what it does not bound is bounded here before it decodes:
 * the file's size, the nesting of its messages (protobuf-c recurses once per
 * level) and its count of nodes; and what it cannot know, the sizes a tensor
 * claims against the bytes it holds, after. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "onnx_internal.h"
#include "text_file.h"

/* ---- the wire format, walked before protobuf-c sees it ------------------------ */

/* A varint at p[*at..end): 0 and its value, *at past it; 1 when the bytes end
 * inside it; -1 when it runs past 10 bytes (no protobuf varint does). */
static int wire_varint(uint64_t *v, const uint8_t *p, size_t end, size_t *at)
{
    uint64_t x = 0;
    for (size_t k = 0; k < 10; k++) {
        if (*at + k >= end) return 1;
        x |= (uint64_t)(p[*at + k] & 0x7f) << (7 * k);
        if (!(p[*at + k] & 0x80)) {
            *at += k + 1;
            *v = x;
            return 0;
        }
    }
    return -1;
}

/* One message of descriptor d at each level, and where its bytes end. */
typedef struct wire_frame {
    const ProtobufCMessageDescriptor *d;
    size_t end;
} wire_frame;

/* What protobuf-c allocates for one field of n bytes (the length of a
 * length-delimited field, 0 for others) of descriptor f (NULL: a field d
 * does not know, which protobuf-c keeps as an unknown field), sub-messages
 * apart (wire_check adds their sizeof_message as it enters them): an upper
 * estimate, so that it can be summed from the bytes before anything is
 * decoded. Every field costs WIRE_FIELD_COST: the ScannedMember protobuf-c
 * records for it while its message decodes (32 bytes on 64-bit hosts, in
 * slabs that double), its value in the message or a repeated array (at most
 * 8 bytes); a string, bytes or unknown field its bytes, one more, a pointer
 * and malloc's header (WIRE_ALLOC_COST); a packed array 8 bytes for each of
 * its varints, or its bytes when its elements are fixed-width. */
#define WIRE_FIELD_COST 48
#define WIRE_ALLOC_COST 32
static uint64_t wire_cost(const ProtobufCFieldDescriptor *f, const uint8_t *p, uint64_t n)
{
    if (!f) return WIRE_FIELD_COST + WIRE_ALLOC_COST + n;
    switch (f->type) {
    case PROTOBUF_C_TYPE_MESSAGE:
        return WIRE_FIELD_COST + WIRE_ALLOC_COST;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
        return WIRE_FIELD_COST + WIRE_ALLOC_COST + n + 1;
    case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_DOUBLE:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_SFIXED64:
        return WIRE_FIELD_COST + WIRE_ALLOC_COST + n;
    default: {
        uint64_t varints = 0; /* a packed field of varints: one per byte without its high bit */
        for (uint64_t k = 0; k < n; k++) varints += !(p[k] & 0x80);
        return WIRE_FIELD_COST + WIRE_ALLOC_COST + 8 * varints;
    }
    }
}

/* Walks the bytes as the message d, iteratively, by the schema protobuf-c
 * decodes with (a length-delimited field is entered only when d says it is
 * a sub-message, as protobuf-c recurses only there), and refuses what
 * protobuf-c would overflow its stack or memory on before it sees it:
 * nesting deeper than RM_ONNX_MAX_DEPTH, more nodes than a model may have
 * layers (NodeProtos anywhere, subgraphs included: a bound, counted from
 * bytes alone), and more memory than the file's size,
 * RM_ONNX_MAX_DECODE_BYTES and RM_ONNX_DECODE_NODE_BYTES a node allow
 * (wire_cost: 2 bytes of an empty AttributeProto decode into about 300, so
 * a 6 MB file of them took 1 GB). Bytes that are not a valid encoding
 * end the walk quietly: protobuf-c refuses them with its own message, and
 * since it checks each message's fields before entering any of them, and
 * enters them in order, it meets them before anything deeper that follows. */
static int wire_check(const uint8_t *buf, size_t len, const ProtobufCMessageDescriptor *d, const char *path,
                      const char *what, rm_err *e)
{
    wire_frame st[RM_ONNX_MAX_DEPTH + 1];
    int depth = 0;
    size_t at = 0, nodes = 0;
    /* The decoded size is bounded by the file's: its bytes, a fixed
     * allowance, and one for each node (999,999 Relus, 22 MB, are
     * estimated at about 420 MiB), which at most 999,999 nodes bound too. */
    uint64_t cost = d->sizeof_message, bound = (uint64_t)len + RM_ONNX_MAX_DECODE_BYTES;
    st[0].d = d, st[0].end = len;
    for (;;) {
        while (at == st[depth].end) {
            if (depth == 0) return RM_OK;
            depth--;
        }
        size_t end = st[depth].end, field_at = at;
        const ProtobufCMessageDescriptor *in = st[depth].d;
        uint64_t key, n;
        if (wire_varint(&key, buf, end, &at)) return RM_OK;
        const ProtobufCFieldDescriptor *f =
            key >> 3 <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(in, (unsigned)(key >> 3)) : NULL;
        /* A length-delimited field by wire_cost; others by their value, kept
         * with its own allocation when d does not know the field. */
        if ((key & 7) != 2) cost += WIRE_FIELD_COST + (f ? 0 : WIRE_ALLOC_COST);
        switch (key & 7) {
        case 0:
            if (wire_varint(&n, buf, end, &at)) return RM_OK;
            break;
        case 1:
        case 5: {
            size_t w = (key & 7) == 1 ? 8 : 4;
            if (end - at < w) return RM_OK;
            at += w;
            break;
        }
        case 2: {
            if (wire_varint(&n, buf, end, &at) || n > end - at) return RM_OK;
            cost += wire_cost(f, buf + at, n);
            if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE) {
                at += (size_t)n;
                break;
            }
            const ProtobufCMessageDescriptor *sub = f->descriptor;
            if (depth == RM_ONNX_MAX_DEPTH)
                return rm_errorf(e, RM_ERR_PARSE,
                                 "%s: not a valid %s: messages nested more than %d deep (%s.%s at byte %zu); remat "
                                 "reads at most %d levels, as onnx.load does",
                                 path, what, RM_ONNX_MAX_DEPTH, st[depth].d->name, f->name, field_at,
                                 RM_ONNX_MAX_DEPTH);
            if (sub == &onnx__node_proto__descriptor && ++nodes > RM_ONNX_MAX_NODES)
                return rm_errorf(e, RM_ERR_UNSUPPORTED,
                                 "%s: more than %d nodes (at byte %zu); remat's models have at most %d layers, the "
                                 "loss included",
                                 path, RM_ONNX_MAX_NODES, field_at, RM_MODEL_MAX_LAYERS);
            if (sub == &onnx__node_proto__descriptor) bound += RM_ONNX_DECODE_NODE_BYTES;
            cost += sub->sizeof_message;
            depth++;
            st[depth].d = sub, st[depth].end = at + (size_t)n;
            break;
        }
        default:
            return RM_OK; /* groups (3, 4) and 6, 7: protobuf-c refuses them */
        }
        if (cost > bound)
            return rm_errorf(e, RM_ERR_UNSUPPORTED,
                             "%s: its %zu bytes would decode into more than %" PRIu64 " MiB (%s.%s at byte %zu); "
                             "remat decodes at most the file's size plus %d MiB and %d KiB a node",
                             path, len, cost >> 20, in->name, f ? f->name : "(unknown field)", field_at,
                             (int)(RM_ONNX_MAX_DECODE_BYTES >> 20), RM_ONNX_DECODE_NODE_BYTES >> 10);
    }
}

/* The top-level fields of a stream read so far, from *next (the start of the
 * first field not yet checked): refuses, as soon as it arrives, a byte that
 * cannot start a protobuf field or a field that would end past the size
 * limit, so that a pipe or device of other bytes (/dev/zero, /dev/urandom)
 * is refused at once instead of after the limit. */
static int wire_stream_check(const uint8_t *buf, size_t n, size_t *next, const char *path, const char *what, rm_err *e)
{
    while (*next < n) {
        size_t at = *next;
        uint64_t key, v = 0;
        int r = wire_varint(&key, buf, n, &at);
        unsigned wt = (unsigned)(key & 7);
        if (!r && (key >> 3 == 0 || (wt != 0 && wt != 1 && wt != 2 && wt != 5))) r = -1;
        if (!r && (wt == 0 || wt == 2)) r = wire_varint(&v, buf, n, &at);
        if (r > 0) return RM_OK; /* the rest has not arrived yet */
        if (r < 0)
            return rm_errorf(e, RM_ERR_PARSE, "%s: not an %s: byte %zu does not start a protobuf field", path, what,
                             *next);
        uint64_t size = wt == 1 ? 8 : wt == 5 ? 4 : wt == 2 ? v : 0;
        if (size > RM_ONNX_MAX_FILE_BYTES - at)
            return rm_errorf(e, RM_ERR_PARSE,
                             "%s: a field at byte %zu claims %llu bytes, past protobuf's limit of "
                             "2 GiB for one %s",
                             path, *next, (unsigned long long)size, what);
        *next = at + (size_t)size;
    }
    return RM_OK;
}

/* The whole file in memory (protobuf-c decodes from a buffer), never more
 * than RM_ONNX_MAX_FILE_BYTES: a regular file is refused by its size before
 * anything is read; a pipe or device is refused as soon as it passes the
 * limit. Either goes into a buffer grown as its bytes arrive. Either is
 * read at most READ_CHUNK bytes at a time, each checked as it arrives
 * (wire_stream_check), so that a file of zeros is refused at its first byte
 * whether it is /dev/zero or a sparse file of 2 GiB (which took 25 s and
 * 2.2 GB when read whole first). */
#define READ_CHUNK ((size_t)1 << 20)
static int read_all(uint8_t **out, size_t *len, const char *path, const char *what, rm_err *e)
{
    *out = NULL;
    *len = 0;
    FILE *f = rm_text_open(path, what, e);
    if (!f) return RM_ERR_IO;
    struct stat sb;
    int regular = fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode);
    if (regular && (uintmax_t)sb.st_size > RM_ONNX_MAX_FILE_BYTES) {
        fclose(f);
        return rm_errorf(e, RM_ERR_PARSE, "%s: %jd bytes, larger than protobuf's limit of 2 GiB for one %s", path,
                         (intmax_t)sb.st_size, what);
    }
    /* The buffer grows as bytes arrive, up to a regular file's size and one
     * byte more (to see its end), so that a file refused at its first bytes
     * never costs its size (under ASan a 2 GiB buffer cost 256 MB of shadow). */
    size_t limit = regular ? (size_t)sb.st_size + 1 : RM_ONNX_MAX_FILE_BYTES + 1;
    size_t cap = limit < ((size_t)1 << 16) ? limit : (size_t)1 << 16, n = 0, next = 0;
    uint8_t *buf = malloc(cap);
    int rc = buf ? RM_OK : rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory for its %zu bytes", path, cap);
    while (!rc) {
        if (n == cap) {
            /* Never a buffer past the limit (plus the byte that shows it passed). */
            size_t grown = cap > limit / 2 ? limit : cap * 2;
            uint8_t *nb = realloc(buf, grown);
            if (!nb) {
                rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory after %zu bytes", path, n);
                break;
            }
            buf = nb, cap = grown;
        }
        size_t got = fread(buf + n, 1, cap - n < READ_CHUNK ? cap - n : READ_CHUNK, f);
        n += got;
        if (n > RM_ONNX_MAX_FILE_BYTES) {
            rc = rm_errorf(e, RM_ERR_PARSE, "%s: larger than protobuf's limit of 2 GiB for one %s", path, what);
        } else {
            rc = wire_stream_check(buf, n, &next, path, what, e);
        }
        if (!rc && got == 0) {
            if (ferror(f)) rc = rm_errorf(e, RM_ERR_IO, "%s: read error: %s", path, strerror(errno));
            break;
        }
    }
    fclose(f);
    if (rc) {
        free(buf);
        return rc;
    }
    *out = buf;
    *len = n;
    return RM_OK;
}

/* The file decoded as one message of descriptor d; what names the kind of
 * file in messages ("ONNX model"). */
static int read_message(ProtobufCMessage **out, const ProtobufCMessageDescriptor *d, const char *path, const char *what,
                        rm_err *e)
{
    *out = NULL;
    uint8_t *buf;
    size_t len;
    int rc = read_all(&buf, &len, path, what, e);
    if (rc) return rc;
    if (len == 0) {
        free(buf);
        return rm_errorf(e, RM_ERR_PARSE, "%s: empty file, not an %s", path, what);
    }
    if ((rc = wire_check(buf, len, d, path, what, e))) {
        free(buf);
        return rc;
    }
    /* NULL is protobuf-c's only answer for bytes that are not such a
     * message: truncated, corrupt, or another kind of file. */
    *out = protobuf_c_message_unpack(d, NULL, len, buf);
    free(buf);
    if (!*out)
        return rm_errorf(e, RM_ERR_PARSE,
                         "%s: not a valid %s: protobuf-c could not decode its %zu bytes as an %s (truncated or "
                         "corrupt file?)",
                         path, what, len, d->name);
    return RM_OK;
}

int onnx_read_model(Onnx__ModelProto **model, const char *path, rm_err *e)
{
    ProtobufCMessage *msg;
    *model = NULL;
    int rc = read_message(&msg, &onnx__model_proto__descriptor, path, "ONNX model", e);
    if (rc) return rc;
    Onnx__ModelProto *m = (Onnx__ModelProto *)msg;
    if (!m->graph) {
        onnx__model_proto__free_unpacked(m, NULL);
        return rm_errorf(e, RM_ERR_PARSE, "%s: not an ONNX model: it has no graph", path);
    }
    *model = m;
    return RM_OK;
}

static const char *type_name(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        return "FLOAT";
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
        return "UINT8";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
        return "INT8";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
        return "INT32";
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        return "INT64";
    case ONNX__TENSOR_PROTO__DATA_TYPE__STRING:
        return "STRING";
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return "BOOL";
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
        return "FLOAT16";
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        return "DOUBLE";
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16:
        return "BFLOAT16";
    default:
        return "another type";
    }
}

void onnx_const_free(onnx_const *c)
{
    free(c->f);
    free(c->i);
    c->f = NULL;
    c->i = NULL;
}

int onnx_const_alloc(onnx_const *out, int is_int, int rank, const int64_t *dims, const char *path, rm_err *e)
{
    memset(out, 0, sizeof *out);
    if (rank < 0 || rank > RM_ONNX_MAX_RANK)
        return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: a tensor of rank %d (at most %d)", path, rank, RM_ONNX_MAX_RANK);
    size_t count = 1;
    for (int k = 0; k < rank; k++) {
        if (dims[k] < 0 || (dims[k] > 0 && count > ONNX_MAX_ELEMENTS / (size_t)dims[k]))
            return rm_errorf(e, RM_ERR_PARSE, "%s: a tensor dimension of %lld (or more than 2^31 elements)", path,
                             (long long)dims[k]);
        count *= (size_t)dims[k];
        out->dims[k] = dims[k];
    }
    out->is_int = is_int;
    out->rank = rank;
    out->count = count;
    /* One element at least, so that a tensor of none still has a pointer. */
    if (is_int)
        out->i = calloc(count ? count : 1, sizeof *out->i);
    else
        out->f = calloc(count ? count : 1, sizeof *out->f);
    if (!out->i && !out->f)
        return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory for a tensor of %zu elements", path, count);
    return RM_OK;
}

/* The bytes of one element in raw_data, and how many elements the typed
 * field of this type holds. */
static size_t elem_width(int32_t type)
{
    switch (type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL:
        return 1;
    default:
        return 4; /* FLOAT, INT32 */
    }
}

static size_t typed_count(const Onnx__TensorProto *t, int32_t type)
{
    switch (type) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT:
        return t->n_float_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE:
        return t->n_double_data;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
        return t->n_int64_data;
    default:
        return t->n_int32_data; /* INT32 and BOOL */
    }
}

/* Element k as a double (floats) or an int64 (integers), from raw_data
 * (little-endian, as x86 and ARM hosts are: memcpy reads the value) or the
 * typed field. */
static double float_at(const Onnx__TensorProto *t, int32_t type, size_t k)
{
    if (type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
        double d;
        if (!t->has_raw_data) return t->double_data[k];
        memcpy(&d, t->raw_data.data + 8 * k, 8);
        return d;
    }
    float f;
    if (!t->has_raw_data) return t->float_data[k];
    memcpy(&f, t->raw_data.data + 4 * k, 4);
    return f;
}

static int64_t int_at(const Onnx__TensorProto *t, int32_t type, size_t k)
{
    if (type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        int64_t v;
        if (!t->has_raw_data) return t->int64_data[k];
        memcpy(&v, t->raw_data.data + 8 * k, 8);
        return v;
    }
    if (!t->has_raw_data) return t->int32_data[k];
    if (type == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL) return t->raw_data.data[k] != 0;
    int32_t v;
    memcpy(&v, t->raw_data.data + 4 * k, 4);
    return v;
}

int onnx_const_from_tensor(onnx_const *out, const Onnx__TensorProto *t, const char *path, const char *what, rm_err *e)
{
    memset(out, 0, sizeof *out);
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return rm_errorf(e, RM_ERR_UNSUPPORTED,
                         "%s: %s keeps its data in an external file; remat reads only self-contained models "
                         "(export without external data)",
                         path, what);
    if (t->segment) return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: %s is a segment of a larger tensor", path, what);
    if ((int)t->n_dims > RM_ONNX_MAX_RANK)
        return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: %s has %zu dimensions (at most %d)", path, what, t->n_dims,
                         RM_ONNX_MAX_RANK);
    int32_t type = t->has_data_type ? t->data_type : 0;
    int is_int = type == ONNX__TENSOR_PROTO__DATA_TYPE__INT64 || type == ONNX__TENSOR_PROTO__DATA_TYPE__INT32 ||
                 type == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL;
    int is_float = type == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT || type == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE;
    if (!is_int && !is_float)
        return rm_errorf(e, RM_ERR_UNSUPPORTED,
                         "%s: %s is a tensor of %s; remat computes in FLOAT (and folds INT64, INT32 and BOOL "
                         "shapes)",
                         path, what, type_name(type));
    /* The count the dimensions claim is checked against the data the file
     * holds before anything is allocated: a few bytes cannot claim gigabytes. */
    size_t count = 1, w = elem_width(type);
    for (size_t k = 0; k < t->n_dims; k++) {
        if (t->dims[k] < 0 || (t->dims[k] > 0 && count > ONNX_MAX_ELEMENTS / (size_t)t->dims[k]))
            return rm_errorf(e, RM_ERR_PARSE, "%s: %s has a dimension of %lld (or more than 2^31 elements)", path, what,
                             (long long)t->dims[k]);
        count *= (size_t)t->dims[k];
    }
    if (t->has_raw_data ? t->raw_data.len != count * w : typed_count(t, type) != count)
        return rm_errorf(e, RM_ERR_PARSE, "%s: %s holds %zu %s for the %zu elements its dimensions make", path, what,
                         t->has_raw_data ? t->raw_data.len : typed_count(t, type),
                         t->has_raw_data ? "bytes of raw data" : "values", count);
    int rc = onnx_const_alloc(out, is_int, (int)t->n_dims, t->dims, path, e);
    for (size_t k = 0; !rc && k < count; k++) {
        if (!is_int) {
            out->f[k] = (float)float_at(t, type, k);
        } else if ((out->i[k] = int_at(t, type, k)) == ONNX_BATCH) {
            /* A file's integer is never the batch symbol: it could not be told apart. */
            rc = rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: %s holds INT64_MIN", path, what);
        }
    }
    if (rc) onnx_const_free(out);
    return rc;
}

const Onnx__AttributeProto *onnx_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t k = 0; k < n->n_attribute; k++)
        if (n->attribute[k]->name && !strcmp(n->attribute[k]->name, name)) return n->attribute[k];
    return NULL;
}

int rm_onnx_tensor_load(rm_onnx_tensor *out, const char *path, rm_err *e)
{
    memset(out, 0, sizeof *out);
    ProtobufCMessage *msg;
    int rc = read_message(&msg, &onnx__tensor_proto__descriptor, path, "ONNX tensor file", e);
    if (rc) return rc;
    Onnx__TensorProto *t = (Onnx__TensorProto *)msg;
    onnx_const c;
    rc = onnx_const_from_tensor(&c, t, path, "the tensor", e);
    if (!rc && !(out->name = strdup(t->name ? t->name : ""))) {
        onnx_const_free(&c);
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", path);
    }
    onnx__tensor_proto__free_unpacked(t, NULL);
    if (rc) return rc;
    out->rank = c.rank;
    memcpy(out->dims, c.dims, sizeof out->dims);
    out->count = c.count;
    out->data = c.f;
    out->ints = c.i;
    return RM_OK;
}

void rm_onnx_tensor_free(rm_onnx_tensor *t)
{
    if (!t) return;
    free(t->name);
    free(t->data);
    free(t->ints);
    t->name = NULL;
    t->data = NULL;
    t->ints = NULL;
}
