/* Snapshot files. A save and a load restore parameters, batchnorm running
 * statistics, optimizer state and step count, and the counters bit for bit
 * (NaN payloads and signed zeros included). Every way a file can be wrong
 * is refused with an error naming the file and the problem, and a refused
 * load leaves the parameters untouched: missing file, wrong magic, newer
 * version, damaged header, truncation at many offsets, a flipped byte
 * anywhere in the payload, trailing bytes, another model (naming the first
 * differing tensor), an optimizer that does not fit. A failed save (missing
 * directory, a write that fails part-way under RLIMIT_FSIZE, a rename that
 * fails) leaves the previous snapshot intact and no temporary file. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "optim.h"
#include "snapshot.h"
#include "train_fixtures.h"

/* ---- helpers ------------------------------------------------------------- */

typedef struct fixture {
    char dir[256], path[512], tmp[520];
    tf_net net;
    rm_optim *opt;
} fixture;

static rm_optim *make_optim(tf_net *n, rm_optim_kind kind)
{
    rm_optim_tensor t[32];
    int count;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_optim_tensors_from_model(t, &count, n->m, n->lpp, &e), RM_OK, "%s", e.msg);
    rm_optim_options o = rm_optim_options_default(kind);
    o.weight_decay = 1e-4;
    rm_optim *opt;
    cr_assert_eq(rm_optim_create(&opt, t, count, &o, &e), RM_OK, "%s", e.msg);
    return opt;
}

/* A model with an optimizer of `kind` (NONE: none) that has taken two steps,
 * so its state is not zero. */
static void setup(fixture *f, rm_optim_kind kind)
{
    memset(f, 0, sizeof *f);
    tf_tmpdir(f->dir, sizeof f->dir);
    snprintf(f->path, sizeof f->path, "%s/run.snap", f->dir);
    /* The first temporary name a save in this process tries (base/atomic_file.h). */
    snprintf(f->tmp, sizeof f->tmp, "%s.tmp.%ld.0", f->path, (long)getpid());
    char text[512];
    tf_model_text(text, sizeof text, "conv1", 4, 5);
    f->net = tf_net_make(text, 42);
    if (kind != RM_OPTIM_NONE) {
        f->opt = make_optim(&f->net, kind);
        rm_err e = {RM_OK, ""};
        for (int s = 0; s < 2; s++) cr_assert_eq(rm_optim_step(f->opt, 0.01, &e), RM_OK, "%s", e.msg);
    }
}

static void teardown(fixture *f)
{
    rm_optim_free(f->opt);
    tf_net_free(&f->net);
    tf_rmdir(f->dir);
}

static const rm_snapshot_counters counters = {1234, 7, 0xfeedfacecafebeefULL, 99, 48};

static void save_ok(fixture *f)
{
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_snapshot_save(f->path, f->net.m, f->net.lpp, f->opt, &counters, &e), RM_OK, "%s", e.msg);
    cr_assert_neq(access(f->tmp, F_OK), 0, "the temporary file is gone after a save");
}

/* Everything a snapshot holds, copied so a test can compare bit for bit. */
typedef struct snapshot {
    float *params, *buffers, *state;
    size_t np, nb, ns;
    uint64_t steps;
} snapshot;

static snapshot take(const fixture *f)
{
    snapshot s;
    s.np = f->net.m->param_count;
    s.nb = f->net.m->buffer_count;
    s.ns = 0;
    s.params = malloc(s.np * 4);
    s.buffers = malloc(s.nb * 4);
    memcpy(s.params, f->net.params, s.np * 4);
    memcpy(s.buffers, f->net.buffers, s.nb * 4);
    s.steps = f->opt ? rm_optim_steps(f->opt) : 0;
    s.state = NULL;
    if (f->opt) {
        int slots = rm_optim_slots(f->opt), nt = rm_optim_tensor_count(f->opt);
        s.ns = (size_t)slots * rm_optim_param_count(f->opt);
        s.state = malloc(s.ns * 4 + 4);
        size_t k = 0;
        for (int sl = 0; sl < slots; sl++)
            for (int i = 0; i < nt; i++) {
                size_t n = rm_optim_tensor_at(f->opt, i)->n;
                memcpy(s.state + k, rm_optim_state(f->opt, i, sl), n * 4);
                k += n;
            }
    }
    return s;
}

static void expect_same(const snapshot *a, const snapshot *b, const char *when)
{
    cr_expect_eq(a->np, b->np);
    cr_expect_eq(memcmp(a->params, b->params, a->np * 4), 0, "%s: parameters differ", when);
    cr_expect_eq(memcmp(a->buffers, b->buffers, a->nb * 4), 0, "%s: running statistics differ", when);
    cr_expect_eq(a->ns, b->ns);
    if (a->ns) cr_expect_eq(memcmp(a->state, b->state, a->ns * 4), 0, "%s: optimizer state differs", when);
    cr_expect_eq(a->steps, b->steps, "%s: optimizer steps %llu vs %llu", when, (unsigned long long)a->steps,
                 (unsigned long long)b->steps);
}

static void drop(snapshot *s)
{
    free(s->params);
    free(s->buffers);
    free(s->state);
}

/* Overwrites everything a load should restore. */
static void scramble(fixture *f)
{
    tf_net_fill(&f->net, 777);
    if (f->opt) {
        for (int sl = 0; sl < rm_optim_slots(f->opt); sl++)
            for (int i = 0; i < rm_optim_tensor_count(f->opt); i++)
                for (size_t j = 0; j < rm_optim_tensor_at(f->opt, i)->n; j++) rm_optim_state(f->opt, i, sl)[j] = -3.0f;
        rm_optim_set_steps(f->opt, 5);
    }
}

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    cr_assert_not_null(fp, "cannot open %s", path);
    cr_assert_eq(fseek(fp, 0, SEEK_END), 0);
    long n = ftell(fp);
    cr_assert_geq(n, 0);
    rewind(fp);
    unsigned char *b = malloc((size_t)n + 1);
    cr_assert_eq(fread(b, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    *len = (size_t)n;
    return b;
}

static void spit(const char *path, const unsigned char *b, size_t len)
{
    FILE *fp = fopen(path, "wb");
    cr_assert_not_null(fp, "cannot create %s", path);
    cr_assert_eq(fwrite(b, 1, len, fp), len);
    cr_assert_eq(fclose(fp), 0);
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

/* Loads f->path expecting `code` with every needle in the message (and the
 * file's name), and checks that nothing was written. */
static void expect_refused(fixture *f, int code, const char *needle, const char *needle2)
{
    snapshot before = take(f);
    rm_snapshot_counters c = {5, 5, 5, 5, 5};
    rm_err e = {RM_OK, ""};
    int rc = rm_snapshot_load(&c, f->path, f->net.m, f->net.lpp, f->opt, &e);
    cr_expect_eq(rc, code, "load returned %d (%s), expected %d: %s", rc, rm_code_name((rm_code)rc), code, e.msg);
    cr_expect(strstr(e.msg, f->path), "the message names the file: %s", e.msg);
    cr_expect(strstr(e.msg, needle), "the message says '%s': %s", needle, e.msg);
    if (needle2) cr_expect(strstr(e.msg, needle2), "the message says '%s': %s", needle2, e.msg);
    snapshot after = take(f);
    expect_same(&before, &after, "after a refused load");
    cr_expect_eq(c.step, 5u, "counters untouched");
    drop(&before);
    drop(&after);
}

/* ---- round trips --------------------------------------------------------- */

static void round_trip(rm_optim_kind kind)
{
    fixture f;
    setup(&f, kind);
    /* Bits that a decimal or a float conversion would lose. */
    uint32_t nan_bits = 0x7fc01234u;
    memcpy(&f.net.params[3], &nan_bits, 4);
    f.net.params[4] = -0.0f;
    f.net.buffers[1] = 1e-40f; /* subnormal */
    snapshot saved = take(&f);
    save_ok(&f);
    scramble(&f);
    rm_snapshot_counters c;
    memset(&c, 0, sizeof c);
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_snapshot_load(&c, f.path, f.net.m, f.net.lpp, f.opt, &e), RM_OK, "%s", e.msg);
    snapshot loaded = take(&f);
    expect_same(&saved, &loaded, "after a round trip");
    cr_expect(c.step == counters.step && c.epoch == counters.epoch && c.seed == counters.seed &&
                  c.rng_counter == counters.rng_counter && c.batch == counters.batch,
              "counters restored");
    if (f.opt) cr_expect_eq(rm_optim_steps(f.opt), 2u);
    drop(&saved);
    drop(&loaded);
    teardown(&f);
}

Test(snapshot, round_trip_sgd_bit_identical)
{
    round_trip(RM_OPTIM_SGD);
}
Test(snapshot, round_trip_adam_bit_identical)
{
    round_trip(RM_OPTIM_ADAM);
}
Test(snapshot, round_trip_without_optimizer)
{
    round_trip(RM_OPTIM_NONE);
}

Test(snapshot, resumed_run_continues_exactly)
{
    /* Two more Adam steps after a restore equal two more steps without one. */
    fixture f;
    setup(&f, RM_OPTIM_ADAM);
    save_ok(&f);
    rm_err e = {RM_OK, ""};
    for (int s = 0; s < 2; s++) cr_assert_eq(rm_optim_step(f.opt, 0.01, &e), RM_OK, "%s", e.msg);
    snapshot straight = take(&f);
    scramble(&f);
    tf_net_fill(&f.net, 42); /* the same gradients as before; the load overwrites the rest */
    cr_assert_eq(rm_snapshot_load(NULL, f.path, f.net.m, f.net.lpp, f.opt, &e), RM_OK, "%s", e.msg);
    for (int s = 0; s < 2; s++) cr_assert_eq(rm_optim_step(f.opt, 0.01, &e), RM_OK, "%s", e.msg);
    snapshot resumed = take(&f);
    expect_same(&straight, &resumed, "after resuming");
    drop(&straight);
    drop(&resumed);
    teardown(&f);
}

Test(snapshot, file_layout_and_size)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    save_ok(&f);
    size_t len;
    unsigned char *b = slurp(f.path, &len);
    cr_assert_geq(len, (size_t)RM_SNAPSHOT_HEADER_BYTES + 4);
    cr_expect_eq(memcmp(b, "RMATCKPT", 8), 0);
    cr_expect_eq(le32(b + 8), RM_SNAPSHOT_VERSION);
    uint64_t payload = le32(b + 16) | (uint64_t)le32(b + 20) << 32;
    cr_expect_eq(len, RM_SNAPSHOT_HEADER_BYTES + payload + 4);
    cr_expect_eq(le32(b + 28), rm_snapshot_crc32(0, b, 28), "header checksum");
    cr_expect_eq(le32(b + len - 4), rm_snapshot_crc32(0, b + 32, (size_t)payload), "payload checksum");
    /* The first table entry is conv1.w, 4x3x3x3, right after the 56-byte counters. */
    const unsigned char *t = b + 32 + 56;
    cr_expect_eq(le32(t), 7u);
    cr_expect_eq(memcmp(t + 4, "conv1.w", 7), 0);
    cr_expect_eq(le32(t + 11), 0u); /* role: weight */
    cr_expect_eq(le32(t + 15), 4u);
    cr_expect_eq(le32(t + 19), 3u);
    /* Saving the same state twice gives the same bytes. */
    save_ok(&f);
    size_t len2;
    unsigned char *b2 = slurp(f.path, &len2);
    cr_expect(len2 == len && memcmp(b, b2, len) == 0, "saves are deterministic");
    free(b);
    free(b2);
    teardown(&f);
}

Test(snapshot, crc32_check_value)
{
    cr_expect_eq(rm_snapshot_crc32(0, "123456789", 9), 0xcbf43926u);
    cr_expect_eq(rm_snapshot_crc32(rm_snapshot_crc32(0, "1234", 4), "56789", 5), 0xcbf43926u, "continues");
}

/* ---- refused files -------------------------------------------------------- */

Test(snapshot, missing_file)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    expect_refused(&f, RM_ERR_IO, "cannot open", NULL);
    teardown(&f);
}

Test(snapshot, wrong_magic)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    save_ok(&f);
    size_t len;
    unsigned char *b = slurp(f.path, &len);
    b[3] ^= 0x20;
    spit(f.path, b, len);
    expect_refused(&f, RM_ERR_PARSE, "not a remat snapshot", NULL);
    /* A text file is not a snapshot either, whatever its length. */
    spit(f.path, (const unsigned char *)"hello, world\n", 13);
    expect_refused(&f, RM_ERR_PARSE, "not a remat snapshot", NULL);
    free(b);
    teardown(&f);
}

Test(snapshot, unsupported_version)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    save_ok(&f);
    size_t len;
    unsigned char *b = slurp(f.path, &len);
    put_le32(b + 8, 2);
    put_le32(b + 28, rm_snapshot_crc32(0, b, 28)); /* a well-formed file from a newer remat */
    spit(f.path, b, len);
    expect_refused(&f, RM_ERR_UNSUPPORTED, "version 2", "reads 1");
    free(b);
    teardown(&f);
}

/* The global batch (a step's samples) is the counters' last word, flagged
 * in the header (bit 0); a file written before it had neither, and still
 * loads, with batch 0 (not recorded). The word without the flag, the flag
 * with a batch of 0, or a flag this build does not know are refused. */
Test(snapshot, the_global_batch_is_flagged_and_optional)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    save_ok(&f);
    size_t len;
    unsigned char *b = slurp(f.path, &len);
    cr_assert_eq(le32(b + 12), RM_SNAPSHOT_FLAG_BATCH, "flags");
    unsigned char *word = b + 32 + 44, *hdr_crc = b + 28, *trailer = b + len - 4;
    cr_assert_eq(le32(word), 48u, "the counters' last word holds the batch");
    const uint32_t payload_bytes = (uint32_t)(len - 36);
#define RESEAL()                                                                                                       \
    (put_le32(hdr_crc, rm_snapshot_crc32(0, b, 28)), put_le32(trailer, rm_snapshot_crc32(0, b + 32, payload_bytes)))
    /* As written before the batch was recorded: both zero. */
    put_le32(b + 12, 0), put_le32(word, 0), RESEAL();
    spit(f.path, b, len);
    rm_snapshot_counters c = {0, 0, 0, 0, 7};
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_snapshot_load(&c, f.path, f.net.m, f.net.lpp, f.opt, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(c.batch, 0u, "not recorded");
    cr_expect_eq(c.step, counters.step);
    put_le32(word, 48), RESEAL();
    spit(f.path, b, len);
    expect_refused(&f, RM_ERR_PARSE, "a reserved field is not zero", NULL);
    put_le32(b + 12, RM_SNAPSHOT_FLAG_BATCH), put_le32(word, 0), RESEAL();
    spit(f.path, b, len);
    expect_refused(&f, RM_ERR_PARSE, "a batch of 0", NULL);
    put_le32(b + 12, RM_SNAPSHOT_FLAG_BATCH | 2u), put_le32(word, 48), RESEAL();
    spit(f.path, b, len);
    expect_refused(&f, RM_ERR_UNSUPPORTED, "flags this build does not know", NULL);
#undef RESEAL
    free(b);
    teardown(&f);
}

Test(snapshot, damaged_header)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    save_ok(&f);
    size_t len;
    unsigned char *b = slurp(f.path, &len);
    b[17] ^= 0x01; /* the payload size */
    spit(f.path, b, len);
    expect_refused(&f, RM_ERR_PARSE, "header checksum", NULL);
    free(b);
    teardown(&f);
}

Test(snapshot, truncated_at_many_offsets)
{
    fixture f;
    setup(&f, RM_OPTIM_ADAM);
    save_ok(&f);
    size_t len;
    unsigned char *b = slurp(f.path, &len);
    const size_t cuts[] = {0, 1, 7, 8, 20, 31, 32, 40, 88, 100, 1000, len / 2, len - 5, len - 4, len - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
        cr_assert_lt(cuts[k], len);
        spit(f.path, b, cuts[k]);
        cr_log_info("truncated to %zu of %zu bytes", cuts[k], len);
        expect_refused(&f, RM_ERR_PARSE, "truncated", NULL);
    }
    free(b);
    teardown(&f);
}

Test(snapshot, flipped_payload_byte_fails_checksum)
{
    fixture f;
    setup(&f, RM_OPTIM_ADAM);
    save_ok(&f);
    size_t len;
    unsigned char *b = slurp(f.path, &len);
    /* counters, table (a name, a shape), a parameter, optimizer state, the stored CRC */
    const size_t at[] = {32, 32 + 40, 32 + 56 + 5, 32 + 56 + 16, len / 3, len - 100, len - 1};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        b[at[k]] ^= 0x10;
        spit(f.path, b, len);
        cr_log_info("byte %zu of %zu flipped", at[k], len);
        expect_refused(&f, RM_ERR_PARSE, "checksum mismatch", NULL);
        b[at[k]] ^= 0x10;
    }
    free(b);
    teardown(&f);
}

Test(snapshot, trailing_bytes)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    save_ok(&f);
    size_t len;
    unsigned char *b = slurp(f.path, &len);
    unsigned char *longer = calloc(len + 100, 1);
    memcpy(longer, b, len);
    spit(f.path, longer, len + 1);
    expect_refused(&f, RM_ERR_PARSE, "1 trailing byte after", NULL);
    spit(f.path, longer, len + 100);
    expect_refused(&f, RM_ERR_PARSE, "100 trailing bytes", NULL);
    free(longer);
    free(b);
    teardown(&f);
}

/* Saves a snapshot of another model into f->path. */
static void save_other(fixture *f, const char *conv_name, int filters, int classes)
{
    char text[512];
    tf_model_text(text, sizeof text, conv_name, filters, classes);
    tf_net other = tf_net_make(text, 3);
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_snapshot_save(f->path, other.m, other.lpp, NULL, NULL, &e), RM_OK, "%s", e.msg);
    tf_net_free(&other);
}

Test(snapshot, another_model_names_the_first_differing_tensor)
{
    fixture f;
    setup(&f, RM_OPTIM_NONE);
    save_other(&f, "conv1", 6, 5); /* the same names, wider convolution */
    expect_refused(&f, RM_ERR_INVALID, "tensor 0 is conv1.w 6x3x3x3 in the snapshot, conv1.w 4x3x3x3 in the model",
                   "test.cfg");
    save_other(&f, "stem", 4, 5); /* the same shapes, another name */
    expect_refused(&f, RM_ERR_INVALID, "tensor 0 is stem.w", NULL);
    save_other(&f, "conv1", 4, 7); /* differs only in the last layer */
    expect_refused(&f, RM_ERR_INVALID, "tensor 6 is fc.w 7x256x1x1", NULL);
    teardown(&f);
}

Test(snapshot, fewer_or_more_tensors_than_the_model)
{
    fixture f;
    setup(&f, RM_OPTIM_NONE);
    /* The fixture's model without batchnorm: its tensor 2 is fc.w, where ours has bn1.w. */
    const char *no_bn = "[net]\nchannels=3\nheight=8\nwidth=8\n[conv]\nname=conv1\nfilters=4\nsize=3\npad=1\n"
                        "[relu]\nname=relu1\n[linear]\nname=fc\nout=5\n[softmax_xent]\nname=loss\n";
    tf_net other = tf_net_make(no_bn, 3);
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_snapshot_save(f.path, other.m, other.lpp, NULL, NULL, &e), RM_OK, "%s", e.msg);
    expect_refused(&f, RM_ERR_INVALID, "tensor 2 is fc.w", "bn1.w");
    /* And the other way round: loading our snapshot into the model without batchnorm. */
    cr_assert_eq(rm_snapshot_save(f.path, f.net.m, f.net.lpp, NULL, NULL, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_snapshot_load(NULL, f.path, other.m, other.lpp, NULL, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "tensor 2 is bn1.w"), "%s", e.msg);
    /* A model that is ours plus a layer: every saved tensor matches, one is missing. */
    const char *more = "[net]\nchannels=3\nheight=8\nwidth=8\n[conv]\nname=conv1\nfilters=4\nsize=3\npad=1\n"
                       "[batchnorm]\nname=bn1\n[relu]\nname=relu1\n[linear]\nname=fc\nout=5\n"
                       "[linear]\nname=fc2\nout=5\n[softmax_xent]\nname=loss\n";
    tf_net bigger = tf_net_make(more, 4);
    cr_expect_eq(rm_snapshot_load(NULL, f.path, bigger.m, bigger.lpp, NULL, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "fc2.w, is missing"), "%s", e.msg);
    /* ...and the bigger model's snapshot has one tensor too many for ours. */
    cr_assert_eq(rm_snapshot_save(f.path, bigger.m, bigger.lpp, NULL, NULL, &e), RM_OK, "%s", e.msg);
    expect_refused(&f, RM_ERR_INVALID, "first extra is fc2.w", NULL);
    tf_net_free(&bigger);
    tf_net_free(&other);
    teardown(&f);
}

Test(snapshot, optimizer_must_fit_the_saved_state)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    save_ok(&f);
    rm_optim *sgd = f.opt;
    f.opt = make_optim(&f.net, RM_OPTIM_ADAM);
    expect_refused(&f, RM_ERR_INVALID, "holds sgd state", "adam");
    rm_optim_free(f.opt);
    /* A weights-only file cannot restore an optimizer, but restores weights without one. */
    f.opt = NULL;
    save_ok(&f);
    rm_err e = {RM_OK, ""};
    cr_expect_eq(rm_snapshot_load(NULL, f.path, f.net.m, f.net.lpp, sgd, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "no optimizer state"), "%s", e.msg);
    cr_expect_eq(rm_snapshot_load(NULL, f.path, f.net.m, f.net.lpp, NULL, &e), RM_OK, "%s", e.msg);
    /* A file with optimizer state restores weights without an optimizer too. */
    cr_assert_eq(rm_snapshot_save(f.path, f.net.m, f.net.lpp, sgd, NULL, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_snapshot_load(NULL, f.path, f.net.m, f.net.lpp, NULL, &e), RM_OK, "%s", e.msg);
    f.opt = sgd;
    teardown(&f);
}

/* ---- failed saves ---------------------------------------------------------- */

/* Saves a good snapshot, changes the parameters, runs `arrange` (which
 * must make the next save fail with RM_ERR_IO), and checks that the old snapshot still
 * loads with the old values and that no temporary file is left. */
static void expect_failed_save_keeps_old(fixture *f, void (*arrange)(fixture *), const char *needle)
{
    save_ok(f);
    snapshot old = take(f);
    scramble(f);
    arrange(f);
    rm_err e = {RM_OK, ""};
    int rc = rm_snapshot_save(f->path, f->net.m, f->net.lpp, f->opt, &counters, &e);
    cr_expect_eq(rc, RM_ERR_IO, "save returned %d: %s", rc, e.msg);
    cr_expect(strstr(e.msg, needle), "the message says '%s': %s", needle, e.msg);
    cr_expect_neq(access(f->tmp, F_OK), 0, "no temporary file is left behind");
    struct rlimit r;
    if (getrlimit(RLIMIT_FSIZE, &r) == 0) { /* undo limit_file_size */
        r.rlim_cur = r.rlim_max;
        setrlimit(RLIMIT_FSIZE, &r);
    }
    cr_assert_eq(rm_snapshot_load(NULL, f->path, f->net.m, f->net.lpp, f->opt, &e), RM_OK, "%s", e.msg);
    snapshot now = take(f);
    expect_same(&old, &now, "the old snapshot");
    drop(&old);
    drop(&now);
}

static void limit_file_size(fixture *f)
{
    (void)f;
    /* Writes past 1 KiB fail with EFBIG instead of killing the process. The
     * limit holds even for root, unlike permissions. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit r;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &r), 0);
    r.rlim_cur = 1024;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &r), 0);
}

Test(snapshot, write_failing_part_way_keeps_old_snapshot)
{
    fixture f;
    setup(&f, RM_OPTIM_ADAM);
    expect_failed_save_keeps_old(&f, limit_file_size, ".tmp");
    teardown(&f);
}

static void block_rename(fixture *f)
{
    /* The final name becomes a non-empty directory: rename(2) cannot replace it. */
    cr_assert_eq(rename(f->path, f->tmp), 0);
    cr_assert_eq(mkdir(f->path, 0700), 0);
    char inside[600];
    snprintf(inside, sizeof inside, "%s/keep", f->path);
    cr_assert_eq(rename(f->tmp, inside), 0);
}

Test(snapshot, failed_rename_removes_temporary_file)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    save_ok(&f);
    block_rename(&f);
    rm_err e = {RM_OK, ""};
    cr_expect_eq(rm_snapshot_save(f.path, f.net.m, f.net.lpp, f.opt, &counters, &e), RM_ERR_IO);
    cr_expect(strstr(e.msg, "cannot rename"), "%s", e.msg);
    cr_expect_neq(access(f.tmp, F_OK), 0, "no temporary file is left behind");
    char inside[600];
    snprintf(inside, sizeof inside, "%s/keep", f.path);
    cr_expect_eq(access(inside, F_OK), 0, "what was at the name is untouched");
    teardown(&f);
}

Test(snapshot, missing_directory)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    char path[600];
    snprintf(path, sizeof path, "%s/no/such/dir/run.snap", f.dir);
    rm_err e = {RM_OK, ""};
    cr_expect_eq(rm_snapshot_save(path, f.net.m, f.net.lpp, f.opt, NULL, &e), RM_ERR_IO);
    cr_expect(strstr(e.msg, "no/such/dir/run.snap.tmp"), "%s", e.msg);
    teardown(&f);
}

/* A temporary left by a crashed save under this process's name (a reused
 * pid) is neither truncated nor read: the save takes the next name. */
Test(snapshot, stale_temporary_file_is_left_alone)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    spit(f.tmp, (const unsigned char *)"left by a crash", 15);
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_snapshot_save(f.path, f.net.m, f.net.lpp, f.opt, &counters, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_snapshot_load(NULL, f.path, f.net.m, f.net.lpp, f.opt, &e), RM_OK, "%s", e.msg);
    struct stat st;
    cr_expect(stat(f.tmp, &st) == 0 && st.st_size == 15, "the stale temporary is untouched");
    teardown(&f);
}

Test(snapshot, parameters_that_do_not_match_the_model_are_refused)
{
    fixture f;
    setup(&f, RM_OPTIM_SGD);
    rm_layer_params *bn = f.net.lpp[1];
    f.net.lpp[1] = NULL; /* a caller that forgot batchnorm's tensors */
    rm_err e = {RM_OK, ""};
    cr_expect_eq(rm_snapshot_save(f.path, f.net.m, f.net.lpp, NULL, NULL, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "the model test.cfg has"), "%s", e.msg);
    f.net.lpp[1] = bn;
    /* An optimizer over part of the model cannot be saved with it. */
    rm_optim_tensor t = {f.net.params, f.net.grads, 10, 1};
    rm_optim *part;
    cr_assert_eq(rm_optim_create(&part, &t, 1, NULL, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_snapshot_save(f.path, f.net.m, f.net.lpp, part, NULL, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "does not update tensor conv1.w"), "%s", e.msg);
    cr_expect_neq(access(f.path, F_OK), 0, "nothing written");
    rm_optim_free(part);
    teardown(&f);
}
