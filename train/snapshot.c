/* Snapshot files (docs/snapshot-format.md): an atomic, checksummed save
 * and a load that verifies the whole file before it touches a parameter.
 *
 * Bytes go through a small buffer that encodes little-endian explicitly, so
 * the file is the same on any host and one code path (the one the tests
 * run) handles every value. Tensors are streamed, never copied whole: a
 * ResNet-152 with Adam state is 700 MB, which a training process should not
 * have to hold twice. That is why a load reads the file twice, once to check
 * its checksum and once to copy.
 *
 * One file, over the ~600-line guide on purpose: it is one binary format, and
 * the writer and the reader below must agree on every field (the constants,
 * the roles, the tensor list of model_tensors, payload_bytes). Side by side,
 * a change to one half shows where the other must change; split in two, that
 * shared part would be a quarter of the code in an internal header. */
#include "snapshot.h"

#include "atomic_file.h"
#include "checksum.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define NAME_CAP (RM_NAME_LEN + 16) /* "<layer>.running_mean" */
#define CHUNK_BYTES 65536
#define META_BYTES 56                         /* 4 x u64 counters, 4 x u32, u64 optimizer steps */
#define ENTRY_FIXED_BYTES (4 + 4 + 4 * 4 + 8) /* name length, role, shape, count; the name follows */
#define TRAILER_BYTES 4

/* Which tensor of a layer an entry is; the name's suffix says the same. */
enum { ROLE_W = 0, ROLE_B, ROLE_MEAN, ROLE_VAR, ROLE_COUNT };
static const char *const role_suffix[ROLE_COUNT] = {"w", "b", "running_mean", "running_var"};

static const char *optim_name(uint32_t kind)
{
    return kind == RM_OPTIM_SGD ? "sgd" : kind == RM_OPTIM_ADAM ? "adam" : "no optimizer";
}

/* ---- CRC-32 ----------------------------------------------------------------- */

uint32_t rm_snapshot_crc32(uint32_t crc, const void *data, size_t n)
{
    return rm_crc32(crc, data, n);
}

/* ---- little-endian encoding ------------------------------------------------- */

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* ---- the tensors of a model ------------------------------------------------- */

/* One entry of the tensor table, as the model (not the file) has it. */
typedef struct ck_tensor {
    char name[NAME_CAP];
    uint32_t role;
    rm_shape shape;
    uint64_t count;
    float *data;
    int opt; /* the optimizer's index for this tensor (trainable ones, when an optimizer is given), else -1 */
} ck_tensor;

static int trainable(uint32_t role)
{
    return role == ROLE_W || role == ROLE_B;
}

/* The model's tensors in file order: layer order, then w, b, running mean,
 * running variance. Checks that lp holds what the model counts and that opt
 * updates exactly the trainable tensors, so a snapshot always holds the
 * whole state. */
static int model_tensors(ck_tensor **out, int *count, const rm_model *m, rm_layer_params *const *lp,
                         const rm_optim *opt, const char *path, rm_err *e)
{
    *out = NULL;
    *count = 0;
    if (!m || !lp) return rm_errorf(e, RM_ERR_INVALID, "%s: snapshot needs a model and its parameters", path);
    ck_tensor *t = calloc((size_t)m->nlayers * ROLE_COUNT + 1, sizeof *t);
    if (!t) return rm_errorf(e, RM_ERR_NOMEM, "%s: no memory for the tensor table", path);
    int k = 0, rc;
    size_t params = 0, buffers = 0;
    for (int i = 0; i < m->nlayers; i++) {
        rm_layer_params *p = lp[i];
        if (!p) continue;
        const rm_tensor *src[ROLE_COUNT] = {&p->w, &p->b, &p->running_mean, &p->running_var};
        for (uint32_t r = 0; r < ROLE_COUNT; r++) {
            if (!src[r]->data) continue;
            ck_tensor *c = &t[k++];
            snprintf(c->name, sizeof c->name, "%s.%s", m->layers[i].name, role_suffix[r]);
            c->role = r;
            c->shape = src[r]->shape;
            c->count = rm_tensor_numel(src[r]);
            c->data = src[r]->data;
            c->opt = -1;
            if (trainable(r))
                params += c->count;
            else
                buffers += c->count;
            if (opt && trainable(r)) {
                c->opt = rm_optim_find(opt, c->data);
                if (c->opt < 0 || rm_optim_tensor_at(opt, c->opt)->n != c->count) {
                    rc = rm_errorf(e, RM_ERR_INVALID, "%s: the optimizer does not update tensor %s (%llu elements)",
                                   path, c->name, (unsigned long long)c->count);
                    free(t);
                    return rc;
                }
            }
        }
    }
    if (params != m->param_count || buffers != m->buffer_count) {
        free(t);
        return rm_errorf(e, RM_ERR_INVALID,
                         "%s: the layers hold %zu parameters and %zu buffer elements, the model %s has %zu and %zu",
                         path, params, buffers, m->path ? m->path : "(unnamed)", m->param_count, m->buffer_count);
    }
    if (opt && rm_optim_param_count(opt) != params) {
        free(t);
        return rm_errorf(e, RM_ERR_INVALID, "%s: the optimizer updates %zu parameters, the model has %zu", path,
                         rm_optim_param_count(opt), params);
    }
    *out = t;
    *count = k;
    return RM_OK;
}

/* Payload bytes for a tensor table and optimizer slots: the writer states it
 * in the header and the reader checks that the table it read agrees. */
static uint64_t payload_bytes(const ck_tensor *t, int n, uint32_t slots)
{
    uint64_t b = META_BYTES;
    for (int i = 0; i < n; i++) {
        b += ENTRY_FIXED_BYTES + strlen(t[i].name);
        b += t[i].count * 4u * (1u + (trainable(t[i].role) ? slots : 0u));
    }
    return b;
}

size_t rm_snapshot_min_bytes(const rm_model *m, int optim_slots)
{
    size_t floats = m->param_count * (1 + (size_t)optim_slots) + m->buffer_count;
    return RM_SNAPSHOT_HEADER_BYTES + META_BYTES + TRAILER_BYTES + 4 * floats;
}

/* ---- writing ---------------------------------------------------------------- */

typedef struct ck_writer {
    FILE *f;
    const char *path, *tmp; /* for messages */
    uint32_t crc;           /* of the payload written so far */
    size_t pos;
    uint8_t buf[CHUNK_BYTES];
} ck_writer;

static const char *errno_text(int err)
{
    return err ? strerror(err) : "short count";
}

static int io_error(rm_err *e, const char *file, const char *what)
{
    int err = errno;
    return rm_errorf(e, RM_ERR_IO, "%s: cannot %s: %s", file, what, errno_text(err));
}

/* A failed save names the snapshot and the temporary file it was writing. */
static int save_error(rm_err *e, const ck_writer *w, const char *what)
{
    int err = errno;
    return rm_errorf(e, RM_ERR_IO, "%s: cannot %s %s: %s", w->path, what, w->tmp, errno_text(err));
}

/* Everything that goes through the buffer is payload, so the CRC is taken here. */
static int w_flush(ck_writer *w, rm_err *e)
{
    if (!w->pos) return RM_OK;
    w->crc = rm_snapshot_crc32(w->crc, w->buf, w->pos);
    errno = 0;
    if (fwrite(w->buf, 1, w->pos, w->f) != w->pos) return save_error(e, w, "write");
    w->pos = 0;
    return RM_OK;
}

/* Room for n more bytes (n <= CHUNK_BYTES). */
static int w_room(ck_writer *w, size_t n, rm_err *e)
{
    return w->pos + n > sizeof w->buf ? w_flush(w, e) : RM_OK;
}

static int w_u32(ck_writer *w, uint32_t v, rm_err *e)
{
    int rc = w_room(w, 4, e);
    if (rc) return rc;
    put_u32(w->buf + w->pos, v);
    w->pos += 4;
    return RM_OK;
}

static int w_u64(ck_writer *w, uint64_t v, rm_err *e)
{
    int rc = w_room(w, 8, e);
    if (rc) return rc;
    put_u64(w->buf + w->pos, v);
    w->pos += 8;
    return RM_OK;
}

static int w_bytes(ck_writer *w, const void *p, size_t n, rm_err *e)
{
    const uint8_t *s = p;
    while (n) {
        int rc = w_room(w, 1, e);
        if (rc) return rc;
        size_t k = sizeof w->buf - w->pos < n ? sizeof w->buf - w->pos : n;
        memcpy(w->buf + w->pos, s, k);
        w->pos += k;
        s += k;
        n -= k;
    }
    return RM_OK;
}

/* Floats by their bits: NaN payloads and signed zeros survive. */
static int w_floats(ck_writer *w, const float *x, uint64_t n, rm_err *e)
{
    for (uint64_t i = 0; i < n; i++) {
        int rc = w_room(w, 4, e);
        if (rc) return rc;
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        put_u32(w->buf + w->pos, bits);
        w->pos += 4;
    }
    return RM_OK;
}

static int write_payload(ck_writer *w, const ck_tensor *t, int n, const rm_optim *opt, const rm_snapshot_counters *c,
                         rm_err *e)
{
    uint32_t kind = opt ? (uint32_t)rm_optim_options_of(opt)->kind : RM_OPTIM_NONE;
    uint32_t slots = opt ? (uint32_t)rm_optim_slots(opt) : 0;
    int rc;
    if ((rc = w_u64(w, c->step, e)) || (rc = w_u64(w, c->epoch, e)) || (rc = w_u64(w, c->seed, e)) ||
        (rc = w_u64(w, c->rng_counter, e)) || (rc = w_u32(w, (uint32_t)n, e)) || (rc = w_u32(w, kind, e)) ||
        (rc = w_u32(w, slots, e)) || (rc = w_u32(w, c->batch, e)) || (rc = w_u64(w, opt ? rm_optim_steps(opt) : 0, e)))
        return rc;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(t[i].name);
        if ((rc = w_u32(w, (uint32_t)len, e)) || (rc = w_bytes(w, t[i].name, len, e)) ||
            (rc = w_u32(w, t[i].role, e)) || (rc = w_u32(w, (uint32_t)t[i].shape.n, e)) ||
            (rc = w_u32(w, (uint32_t)t[i].shape.c, e)) || (rc = w_u32(w, (uint32_t)t[i].shape.h, e)) ||
            (rc = w_u32(w, (uint32_t)t[i].shape.w, e)) || (rc = w_u64(w, t[i].count, e)))
            return rc;
    }
    for (int i = 0; i < n; i++)
        if ((rc = w_floats(w, t[i].data, t[i].count, e))) return rc;
    for (uint32_t s = 0; s < slots; s++)
        for (int i = 0; i < n; i++)
            if (t[i].opt >= 0 && (rc = w_floats(w, rm_optim_state(opt, t[i].opt, (int)s), t[i].count, e))) return rc;
    return w_flush(w, e);
}

int rm_snapshot_save(const char *path, const rm_model *m, rm_layer_params *const *lp, const rm_optim *opt,
                     const rm_snapshot_counters *c, rm_err *e)
{
    if (!path || !*path) return rm_errorf(e, RM_ERR_INVALID, "snapshot: no file name");
    rm_snapshot_counters zero = {0, 0, 0, 0, 0};
    if (!c) c = &zero;
    ck_tensor *t;
    int n, rc;
    uint8_t hdr[RM_SNAPSHOT_HEADER_BYTES], trailer[TRAILER_BYTES];
    if ((rc = model_tensors(&t, &n, m, lp, opt, path, e))) return rc;
    uint32_t slots = opt ? (uint32_t)rm_optim_slots(opt) : 0;

    ck_writer *w = malloc(sizeof *w);
    if (!w) {
        free(t);
        return rm_errorf(e, RM_ERR_NOMEM, "%s: no memory to write a snapshot", path);
    }
    /* The previous snapshot stays in place until the new one is complete
     * and on the disk (base/atomic_file.h): a run killed mid-save resumes
     * from the previous one. */
    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, path, e))) goto done;
    w->f = af.f;
    w->path = path;
    w->tmp = af.tmp ? af.tmp : path;
    w->crc = 0;
    w->pos = 0;

    memset(hdr, 0, sizeof hdr);
    memcpy(hdr, RM_SNAPSHOT_MAGIC, 8);
    put_u32(hdr + 8, RM_SNAPSHOT_VERSION);
    put_u32(hdr + 12, c->batch ? RM_SNAPSHOT_FLAG_BATCH : 0); /* flags */
    put_u64(hdr + 16, payload_bytes(t, n, slots));
    put_u32(hdr + 24, 0); /* reserved */
    put_u32(hdr + 28, rm_snapshot_crc32(0, hdr, 28));
    errno = 0;
    if (fwrite(hdr, 1, sizeof hdr, w->f) != sizeof hdr) {
        rc = save_error(e, w, "write");
        goto fail;
    }
    if ((rc = write_payload(w, t, n, opt, c, e))) goto fail;
    put_u32(trailer, w->crc);
    errno = 0;
    if (fwrite(trailer, 1, sizeof trailer, w->f) != sizeof trailer) {
        rc = save_error(e, w, "write");
        goto fail;
    }
    rc = rm_atomic_commit(&af, e);
    goto done;
fail:
    rm_atomic_abort(&af);
done:
    free(w);
    free(t);
    return rc;
}

/* ---- reading ---------------------------------------------------------------- */

typedef struct ck_reader {
    FILE *f;
    const char *path;
    uint64_t left;  /* payload bytes not yet read */
    uint32_t flags; /* the header's (RM_SNAPSHOT_FLAG_*) */
    uint8_t buf[CHUNK_BYTES];
} ck_reader;

static int corrupt(rm_err *e, const char *path, const char *what)
{
    return rm_errorf(e, RM_ERR_PARSE, "%s: corrupt snapshot: %s", path, what);
}

/* Reads n payload bytes; the payload's stated size bounds every record, so a
 * bad count can never make the reader run into the trailer or allocate. */
static int r_bytes(ck_reader *r, void *p, size_t n, rm_err *e)
{
    if (n > r->left) return corrupt(e, r->path, "a record runs past the end of the payload");
    errno = 0;
    if (fread(p, 1, n, r->f) != n) {
        if (feof(r->f))
            return rm_errorf(e, RM_ERR_PARSE, "%s: truncated snapshot (the file shrank while being read)", r->path);
        return io_error(e, r->path, "read");
    }
    r->left -= n;
    return RM_OK;
}

static int r_u32(ck_reader *r, uint32_t *v, rm_err *e)
{
    uint8_t b[4];
    int rc = r_bytes(r, b, 4, e);
    if (!rc) *v = get_u32(b);
    return rc;
}

static int r_u64(ck_reader *r, uint64_t *v, rm_err *e)
{
    uint8_t b[8];
    int rc = r_bytes(r, b, 8, e);
    if (!rc) *v = get_u64(b);
    return rc;
}

/* n floats into x, or skipped when x is NULL. */
static int r_floats(ck_reader *r, float *x, uint64_t n, rm_err *e)
{
    while (n) {
        size_t k = n > CHUNK_BYTES / 4 ? CHUNK_BYTES / 4 : (size_t)n;
        int rc = r_bytes(r, r->buf, 4 * k, e);
        if (rc) return rc;
        if (x) {
            for (size_t i = 0; i < k; i++) {
                uint32_t bits = get_u32(r->buf + 4 * i);
                memcpy(&x[i], &bits, 4);
            }
            x += k;
        }
        n -= k;
    }
    return RM_OK;
}

/* A name from the file, printable whatever its bytes. */
static void sanitize(char *s)
{
    for (; *s; s++)
        if (*s < 0x20 || *s > 0x7e) *s = '?';
}

/* Reads table entry k and compares it with the model's entry (if any). */
static int check_entry(ck_reader *r, int k, const ck_tensor *t, int n, const rm_model *m, rm_err *e)
{
    uint32_t len, role, dims[4];
    uint64_t count;
    char name[NAME_CAP], a[64], b[64];
    int rc;
    if ((rc = r_u32(r, &len, e))) return rc;
    if (len == 0 || len >= sizeof name) return corrupt(e, r->path, "a tensor name has an impossible length");
    if ((rc = r_bytes(r, name, len, e))) return rc;
    name[len] = '\0';
    sanitize(name);
    if ((rc = r_u32(r, &role, e))) return rc;
    for (int d = 0; d < 4; d++)
        if ((rc = r_u32(r, &dims[d], e))) return rc;
    if ((rc = r_u64(r, &count, e))) return rc;
    uint64_t numel = 1;
    for (int d = 0; d < 4; d++) {
        if (dims[d] < 1 || dims[d] > 0x7fffffffu) return corrupt(e, r->path, "a tensor has an impossible shape");
        if (numel > (UINT64_C(1) << 62) / dims[d]) return corrupt(e, r->path, "a tensor has an impossible shape");
        numel *= dims[d];
    }
    if (role >= ROLE_COUNT || numel != count)
        return corrupt(e, r->path, "a tensor's role or element count disagrees with its shape");
    rm_shape s = rm_shape_make((int)dims[0], (int)dims[1], (int)dims[2], (int)dims[3]);
    const char *model = m->path ? m->path : "(unnamed)";
    if (k >= n)
        return rm_errorf(e, RM_ERR_INVALID,
                         "%s: snapshot does not match model %s: it has more tensors than the model's %d, the "
                         "first extra is %s %s",
                         r->path, model, n, name, rm_shape_str(s, a, sizeof a));
    if (strcmp(name, t[k].name) != 0 || role != t[k].role || !rm_shape_equal(s, t[k].shape))
        return rm_errorf(e, RM_ERR_INVALID,
                         "%s: snapshot does not match model %s: tensor %d is %s %s in the snapshot, %s %s in "
                         "the model",
                         r->path, model, k, name, rm_shape_str(s, a, sizeof a), t[k].name,
                         rm_shape_str(t[k].shape, b, sizeof b));
    return RM_OK;
}

/* Header checks in the order that names the real problem: another kind of
 * file, then a newer format (whose header layout may differ, so before its
 * checksum), then damage. */
static int read_header(uint64_t *payload, ck_reader *r, long long size, rm_err *e)
{
    uint8_t h[RM_SNAPSHOT_HEADER_BYTES];
    size_t want = size < (long long)sizeof h ? (size_t)size : sizeof h;
    errno = 0;
    if (fread(h, 1, want, r->f) != want) return io_error(e, r->path, "read");
    if (want < 8)
        return rm_errorf(e, RM_ERR_PARSE, "%s: truncated snapshot: %lld bytes, shorter than its %d-byte header",
                         r->path, size, RM_SNAPSHOT_HEADER_BYTES);
    if (memcmp(h, RM_SNAPSHOT_MAGIC, 8) != 0)
        return rm_errorf(e, RM_ERR_PARSE, "%s: not a remat snapshot (the file does not start with %s)", r->path,
                         RM_SNAPSHOT_MAGIC);
    if (want < sizeof h)
        return rm_errorf(e, RM_ERR_PARSE, "%s: truncated snapshot: %lld bytes, shorter than its %d-byte header",
                         r->path, size, RM_SNAPSHOT_HEADER_BYTES);
    uint32_t version = get_u32(h + 8);
    if (version != RM_SNAPSHOT_VERSION)
        return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: snapshot format version %u is not supported (this build reads %u)",
                         r->path, version, RM_SNAPSHOT_VERSION);
    if (get_u32(h + 28) != rm_snapshot_crc32(0, h, 28))
        return rm_errorf(e, RM_ERR_PARSE, "%s: snapshot header checksum mismatch: the file is corrupt", r->path);
    r->flags = get_u32(h + 12);
    if ((r->flags & ~(uint32_t)RM_SNAPSHOT_FLAG_BATCH) || get_u32(h + 24) != 0)
        return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: snapshot uses flags this build does not know", r->path);
    *payload = get_u64(h + 16);
    uint64_t have = (uint64_t)size - sizeof h;
    if (*payload > have || have - *payload < TRAILER_BYTES)
        return rm_errorf(e, RM_ERR_PARSE,
                         "%s: truncated snapshot: %lld bytes, its header announces %llu (a %llu-byte payload between "
                         "the %d-byte header and the %d-byte checksum)",
                         r->path, size,
                         (unsigned long long)(*payload <= UINT64_MAX - sizeof h - TRAILER_BYTES
                                                  ? *payload + sizeof h + TRAILER_BYTES
                                                  : UINT64_MAX),
                         (unsigned long long)*payload, RM_SNAPSHOT_HEADER_BYTES, TRAILER_BYTES);
    if (have - *payload > TRAILER_BYTES)
        return rm_errorf(e, RM_ERR_PARSE, "%s: %llu trailing byte%s after the snapshot's end", r->path,
                         (unsigned long long)(have - *payload - TRAILER_BYTES),
                         have - *payload - TRAILER_BYTES == 1 ? "" : "s");
    return RM_OK;
}

/* Pass 1: the payload's CRC against the trailer. */
static int check_crc(ck_reader *r, uint64_t payload, rm_err *e)
{
    uint32_t crc = 0;
    r->left = payload;
    while (r->left) {
        size_t k = r->left > CHUNK_BYTES ? CHUNK_BYTES : (size_t)r->left;
        int rc = r_bytes(r, r->buf, k, e);
        if (rc) return rc;
        crc = rm_snapshot_crc32(crc, r->buf, k);
    }
    uint8_t tb[TRAILER_BYTES];
    errno = 0;
    if (fread(tb, 1, sizeof tb, r->f) != sizeof tb) return io_error(e, r->path, "read");
    if (get_u32(tb) != crc)
        return rm_errorf(e, RM_ERR_PARSE,
                         "%s: snapshot checksum mismatch (CRC-32 of the payload %08x, stored %08x): the file is "
                         "corrupt",
                         r->path, crc, get_u32(tb));
    return RM_OK;
}

/* Pass 2: counters, table and optimizer compatibility, all checked before the
 * first tensor is copied; then the copy. */
static int read_payload(rm_snapshot_counters *c, ck_reader *r, uint64_t payload, const ck_tensor *t, int n,
                        const rm_model *m, rm_optim *opt, rm_err *e)
{
    rm_snapshot_counters got;
    uint32_t ntensors, kind, slots, reserved;
    uint64_t steps;
    int rc;
    errno = 0;
    if (fseek(r->f, RM_SNAPSHOT_HEADER_BYTES, SEEK_SET) != 0) return io_error(e, r->path, "seek");
    r->left = payload;
    if ((rc = r_u64(r, &got.step, e)) || (rc = r_u64(r, &got.epoch, e)) || (rc = r_u64(r, &got.seed, e)) ||
        (rc = r_u64(r, &got.rng_counter, e)) || (rc = r_u32(r, &ntensors, e)) || (rc = r_u32(r, &kind, e)) ||
        (rc = r_u32(r, &slots, e)) || (rc = r_u32(r, &reserved, e)) || (rc = r_u64(r, &steps, e)))
        return rc;
    /* The counters' last word: the global batch when the header's flag says so, else reserved. */
    got.batch = r->flags & RM_SNAPSHOT_FLAG_BATCH ? reserved : 0;
    if (!(r->flags & RM_SNAPSHOT_FLAG_BATCH) && reserved != 0)
        return corrupt(e, r->path, "a reserved field is not zero");
    if ((r->flags & RM_SNAPSHOT_FLAG_BATCH) && reserved == 0) return corrupt(e, r->path, "it records a batch of 0");
    if (!(kind == RM_OPTIM_NONE && slots == 0) && !(kind == RM_OPTIM_SGD && slots <= 1) &&
        !(kind == RM_OPTIM_ADAM && slots == 2))
        return corrupt(e, r->path, "unknown optimizer kind or state size");
    if (ntensors > payload / ENTRY_FIXED_BYTES) return corrupt(e, r->path, "impossible tensor count");
    for (uint32_t k = 0; k < ntensors; k++)
        if ((rc = check_entry(r, (int)k, t, n, m, e))) return rc;
    if ((int)ntensors < n)
        return rm_errorf(e, RM_ERR_INVALID,
                         "%s: snapshot does not match model %s: the model's tensor %d, %s, is missing (the "
                         "snapshot has %u tensors, the model %d)",
                         r->path, m->path ? m->path : "(unnamed)", (int)ntensors, t[ntensors].name, ntensors, n);
    if (payload_bytes(t, n, slots) != payload)
        return corrupt(e, r->path, "the tensor table and the payload size disagree");
    if (opt) {
        const rm_optim_options *oo = rm_optim_options_of(opt);
        if (kind == RM_OPTIM_NONE)
            return rm_errorf(e, RM_ERR_INVALID,
                             "%s: snapshot holds no optimizer state; load it without an optimizer to restore the "
                             "weights only",
                             r->path);
        if (kind != (uint32_t)oo->kind || slots != (uint32_t)rm_optim_slots(opt))
            return rm_errorf(e, RM_ERR_INVALID,
                             "%s: snapshot holds %s state with %u value(s) per parameter, the optimizer is %s with "
                             "%d",
                             r->path, optim_name(kind), slots, optim_name((uint32_t)oo->kind), rm_optim_slots(opt));
    }
    /* Everything is known to fit: copy. */
    for (int i = 0; i < n; i++)
        if ((rc = r_floats(r, t[i].data, t[i].count, e))) return rc;
    for (uint32_t s = 0; s < slots; s++)
        for (int i = 0; i < n; i++)
            if (trainable(t[i].role) &&
                (rc = r_floats(r, opt ? rm_optim_state(opt, t[i].opt, (int)s) : NULL, t[i].count, e)))
                return rc;
    if (r->left) return corrupt(e, r->path, "bytes left over in the payload");
    if (opt) rm_optim_set_steps(opt, steps);
    if (c) *c = got;
    return RM_OK;
}

/* A snapshot the user names (--resume): a link is followed as for the
 * files remat writes (base/atomic_file.h), and anything but a regular
 * file is refused without waiting on it (a FIFO would block the open). */
static FILE *open_snapshot(const char *path, rm_err *e)
{
    return rm_file_open_read(path, RM_PATH_NAMED, e);
}

int rm_snapshot_check_header(const char *path, rm_err *e)
{
    if (!path || !*path) return rm_errorf(e, RM_ERR_INVALID, "snapshot: no file name");
    ck_reader *r = malloc(sizeof *r);
    if (!r) return rm_errorf(e, RM_ERR_NOMEM, "%s: no memory to read a snapshot", path);
    r->path = path;
    r->left = 0;
    int rc = RM_OK;
    struct stat st;
    uint64_t payload = 0;
    r->f = open_snapshot(path, e);
    if (!r->f)
        rc = e ? e->code : RM_ERR_IO;
    else if (fstat(fileno(r->f), &st) != 0)
        rc = io_error(e, path, "stat snapshot");
    else
        rc = read_header(&payload, r, (long long)st.st_size, e);
    if (r->f) fclose(r->f);
    free(r);
    return rc;
}

int rm_snapshot_load(rm_snapshot_counters *c, const char *path, const rm_model *m, rm_layer_params *const *lp,
                     rm_optim *opt, rm_err *e)
{
    if (!path || !*path) return rm_errorf(e, RM_ERR_INVALID, "snapshot: no file name");
    ck_tensor *t;
    int n, rc;
    if ((rc = model_tensors(&t, &n, m, lp, opt, path, e))) return rc;
    ck_reader *r = malloc(sizeof *r);
    if (!r) {
        free(t);
        return rm_errorf(e, RM_ERR_NOMEM, "%s: no memory to read a snapshot", path);
    }
    r->path = path;
    r->left = 0;
    r->f = open_snapshot(path, e);
    if (!r->f) {
        rc = e ? e->code : RM_ERR_IO;
        goto done;
    }
    struct stat st;
    if (fstat(fileno(r->f), &st) != 0) {
        rc = io_error(e, path, "stat snapshot");
        goto done;
    }
    uint64_t payload = 0;
    if ((rc = read_header(&payload, r, (long long)st.st_size, e)) || (rc = check_crc(r, payload, e)) ||
        (rc = read_payload(c, r, payload, t, n, m, opt, e)))
        goto done;
done:
    if (r->f && fclose(r->f) != 0 && rc == RM_OK) rc = io_error(e, path, "close");
    free(r);
    free(t);
    return rc;
}
