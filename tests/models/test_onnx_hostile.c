/* The ONNX reader's promises against hostile files (issue 23; docs/onnx.md,
 * "What the reader refuses"), each file written here byte by byte
 * (tests/fuzz/onnx_wire.h) rather than checked in: messages nested
 * thousands deep, which protobuf-c would decode recursively until the stack
 * overflows; integer folds that overflow or forge the batch dimension;
 * values that make training meaningless (NaN and infinite weights and
 * attributes, a negative running variance); more nodes than a model may
 * have layers; and files, devices and pipes past the size limit. Each test
 * asserts the refusal, its code and the message naming the file and what
 * is wrong, and, where the old reader's failure was its cost, the memory
 * the refusal took. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cli_fixture.h"
#include "onnx.h"
#include "onnx_wire.h"

TestSuite(onnx_hostile, .init = cf_setup, .fini = cf_teardown);

static void write_bytes(const char *path, const pb_buf *b)
{
    cr_assert(!b->oom, "out of memory building %s", path);
    FILE *fp = fopen(path, "wb");
    cr_assert_not_null(fp, "cannot write %s", path);
    cr_assert_eq(fwrite(b->p, 1, b->n, fp), b->n);
    cr_assert_eq(fclose(fp), 0);
}

/* Writes the model m builds to path and frees it. */
static void save(const char *path, pb_buf *m)
{
    write_bytes(path, m);
    pb_free(m);
}

/* Imports path with the classification loss; returns the code, the message in msg. */
static int import(const char *path, char *msg, size_t len)
{
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    o.loss = RM_ONNX_LOSS_AUTO;
    rm_model *m = (rm_model *)1;
    rm_err e = {RM_OK, ""};
    int rc = rm_onnx_load(&m, NULL, path, &o, &e);
    snprintf(msg, len, "%s", e.msg);
    if (!rc)
        rm_model_free(m);
    else
        cr_expect_null(m, "a failed import handed back a model");
    return rc;
}

static void expect_refused(const char *path, rm_code code, const char *const *parts)
{
    char msg[RM_ERR_MSG_LEN];
    int rc = import(path, msg, sizeof msg);
    cr_expect_eq(rc, code, "%s: code %d, expected %d: %s", path, rc, code, msg);
    cr_expect(strstr(msg, path), "the message does not name the file: %s", msg);
    for (const char *const *p = parts; *p; p++) cr_expect(strstr(msg, *p), "'%s' not in: %s", *p, msg);
}

/* The most memory this process has held, in KiB. */
static long max_rss_kib(void)
{
    struct rusage ru;
    cr_assert_eq(getrusage(RUSAGE_SELF, &ru), 0);
    return ru.ru_maxrss;
}

/* ---- 1. nesting: refused before protobuf-c recurses into it ---- */

static void write_deep_type(const char *path, int pairs, int shaped)
{
    pb_buf m = {0};
    onnx_w_deep_type_model(&m, pairs, shaped);
    save(path, &m);
}

/* The file: 5,000 levels of sequence_type (34 KB) made every
 * --onnx command die of a stack overflow inside protobuf-c. */
Test(onnx_hostile, a_type_nested_5000_deep_is_refused)
{
    const char *path = cf_path("deep-type.onnx");
    write_deep_type(path, 5000, 0);
    expect_refused(path, RM_ERR_PARSE,
                   (const char *const[]){"not a valid ONNX model", "nested more than 100 deep",
                                         "onnx.TypeProto.Sequence.elem_type", NULL});
    /* Every command says so and exits 1. */
    cr_expect_eq(cf_remat("graph", "--onnx", path, "--batch", "2", NULL), 1);
    cr_expect(cf_said(1, "nested more than 100 deep"), "%s", cf_err);
}

/* The limit is exactly RM_ONNX_MAX_DEPTH: at 100 levels the file reaches
 * the importer (which refuses a sequence input for its own reason); at 101
 * it is refused as too deep. */
Test(onnx_hostile, the_depth_limit_is_100_levels)
{
    const char *path = cf_path("depth.onnx");
    write_deep_type(path, 48, 0); /* deepest: the tensor type at 4 + 96 = 100 */
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"input 'x' is not a tensor", NULL});
    write_deep_type(path, 48, 1); /* deepest: the shape at 101 (and its dimension at 102) */
    expect_refused(path, RM_ERR_PARSE,
                   (const char *const[]){"nested more than 100 deep", "onnx.TypeProto.Tensor.shape", NULL});
}

/* Graphs inside attributes inside nodes, 3,000 deep (the second file). */
Test(onnx_hostile, attribute_graphs_nested_3000_deep_are_refused)
{
    const char *path = cf_path("deep-graphs.onnx");
    pb_buf m = {0};
    onnx_w_deep_graph_model(&m, 3000);
    save(path, &m);
    expect_refused(path, RM_ERR_PARSE,
                   (const char *const[]){"nested more than 100 deep", "onnx.GraphProto.node", NULL});
}

/* ---- 2. folding int64 constants: checked, and never the batch ---- */

/* y = Reshape(x, Concat(OP(a, b), [-1])) for x of N x 2 x 2 x 2: when OP's
 * result were the batch placeholder, the reshape would import as [N, -1]. */
static void write_fold(const char *path, const char *op, int64_t a, int64_t b)
{
    pb_buf m = {0};
    onnx_w_fold_model(&m, op, a, b);
    save(path, &m);
}

Test(onnx_hostile, an_int64_fold_that_overflows_is_refused)
{
    const char *path = cf_path("fold.onnx");
    write_fold(path, "Add", INT64_MAX, 1);
    expect_refused(
        path, RM_ERR_UNSUPPORTED,
        (const char *const[]){"node 1 'fold' (Add)", "folds 9223372036854775807 + 1, which overflows int64", NULL});
    write_fold(path, "Mul", INT64_MAX / 2 + 1, 2);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"(Mul)", "overflows int64", NULL});
    write_fold(path, "Sub", -INT64_MAX, 2);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"(Sub)", "overflows int64", NULL});
}

/* Results of -2^63 without any overflow: before, the reshape to a plain
 * number was imported as [N, -1] (a flatten at every batch size). */
Test(onnx_hostile, a_fold_cannot_forge_the_batch_dimension)
{
    const char *path = cf_path("forge.onnx");
    write_fold(path, "Sub", -INT64_MAX, 1);
    expect_refused(path, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"(Sub)", "folds -9223372036854775807 - 1, which is -2^63",
                                         "stands for the batch size", NULL});
    write_fold(path, "Mul", INT64_MIN / 2, 2);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"(Mul)", "is -2^63", NULL});
    /* The same chain with an ordinary number folds as before: 8 - 1 = 7 is
     * no batch, so the reshape is refused for mixing samples, not imported. */
    write_fold(path, "Sub", 8, 1);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"node 3 'reshape' (Reshape)", "[7, -1]", NULL});
}

/* Cast of the float -2^63 to INT64 gives -2^63 too (and of 1e30 or NaN,
 * undefined behaviour in C): refused. */
Test(onnx_hostile, a_cast_cannot_forge_the_batch_dimension)
{
    const float values[3] = {-0x1p63f, 1e30f, NAN};
    const char *const shown[3] = {"casts -9.22337e+18", "casts 1e+30", "casts nan"};
    const char *path = cf_path("cast.onnx");
    for (int k = 0; k < 3; k++) {
        pb_buf m = {0};
        onnx_w_cast_model(&m, values[k]);
        save(path, &m);
        expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"node 1 'cast' (Cast)", shown[k], NULL});
    }
}

/* Cast to INT32 of a value INT32 cannot hold (1e10) was kept as
 * 10000000000; now refused. The model is the INT64 cast's with its "to"
 * attribute (name "to", type INT, then field 3 = 7) turned into INT32 (6). */
Test(onnx_hostile, a_cast_to_int32_out_of_its_range_is_refused)
{
    static const uint8_t to_int64[] = {0x0a, 0x02, 't', 'o', 0xa0, 0x01, 0x02, 0x18, 7};
    const char *path = cf_path("cast32.onnx");
    pb_buf m = {0};
    onnx_w_cast_model(&m, 1e10f);
    uint8_t *at = NULL;
    for (size_t k = 0; !at && k + sizeof to_int64 <= m.n; k++)
        if (!memcmp(m.p + k, to_int64, sizeof to_int64)) at = m.p + k;
    cr_assert_not_null(at, "no 'to' attribute of INT64 in the cast model");
    at[8] = 6;
    save(path, &m);
    expect_refused(
        path, RM_ERR_UNSUPPORTED,
        (const char *const[]){"node 1 'cast' (Cast)", "casts 10000000000 to INT32, outside its range", NULL});
}

/* Found by the structure-aware mutator: a Concat (or Sum) of no inputs read
 * its first input's rank from an uninitialised pointer. */
Test(onnx_hostile, a_concat_or_sum_of_no_inputs_is_refused)
{
    static const char *const ops[2] = {"Concat", "Sum"};
    const char *path = cf_path("empty.onnx");
    for (int k = 0; k < 2; k++) {
        pb_buf nodes[2] = {{0}, {0}}, m = {0};
        onnx_w_node(&nodes[0], "Relu", "relu", (const char *const[]){"x", NULL}, (const char *const[]){"r", NULL}, NULL,
                    0);
        onnx_w_node(&nodes[1], ops[k], "join", NULL, (const char *const[]){"y", NULL}, NULL, 0);
        onnx_w_graph_model(&m, NULL, nodes, 2, NULL, 0);
        save(path, &m);
        expect_refused(path, RM_ERR_PARSE, (const char *const[]){"node 2 'join'", ops[k], "no inputs", NULL});
        pb_free(&nodes[0]), pb_free(&nodes[1]);
    }
}

/* ---- 6. values that make training meaningless ---- */

static void write_batchnorm(const char *path, const float *scale, const float *var, float eps)
{
    pb_buf m = {0};
    onnx_w_batchnorm_model(&m, scale, var, eps);
    save(path, &m);
}

Test(onnx_hostile, batchnorm_values_that_break_training_are_refused)
{
    const char *path = cf_path("bn.onnx");
    const float ones[2] = {1, 1}, negative[2] = {1, -0.5f}, nan_scale[2] = {1, NAN};
    write_batchnorm(path, ones, ones, 1e-5f);
    char msg[RM_ERR_MSG_LEN];
    cr_expect_eq(import(path, msg, sizeof msg), RM_OK, "%s", msg);
    write_batchnorm(path, ones, negative, 1e-5f);
    expect_refused(path, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"node 1 'bn' (BatchNormalization)",
                                         "running variance 'bn.var' is -0.5 at channel 1", NULL});
    write_batchnorm(path, ones, ones, INFINITY);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"'bn'", "epsilon inf", NULL});
    write_batchnorm(path, ones, ones, 0.0f);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"epsilon 0", NULL});
    write_batchnorm(path, nan_scale, ones, 1e-5f);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"scale 'bn.scale' holds nan at element 1", NULL});
}

static void write_gemm(const char *path, const float *w, const float *bias, float alpha, float beta)
{
    pb_buf m = {0};
    onnx_w_gemm_model(&m, w, bias, alpha, beta);
    save(path, &m);
}

Test(onnx_hostile, gemm_values_that_break_training_are_refused)
{
    const char *path = cf_path("gemm.onnx");
    const float w[6] = {1, 2, 3, 4, 5, 6}, b[2] = {0.5f, -0.5f}, w_nan[6] = {1, 2, NAN, 4, 5, 6},
                w_big[6] = {1, 2, 3e30f, 4, 5, 6}, b_inf[2] = {INFINITY, 0};
    write_gemm(path, w, b, 1.0f, 1.0f);
    char msg[RM_ERR_MSG_LEN];
    cr_expect_eq(import(path, msg, sizeof msg), RM_OK, "%s", msg);
    write_gemm(path, w, b, NAN, 1.0f);
    expect_refused(path, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"node 1 'fc' (Gemm)", "attribute alpha is nan", NULL});
    write_gemm(path, w, b, INFINITY, 1.0f);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"attribute alpha is inf", NULL});
    write_gemm(path, w, b, 1.0f, -INFINITY);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"attribute beta is -inf", NULL});
    write_gemm(path, w_nan, b, 1.0f, 1.0f);
    expect_refused(path, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"weights B 'fc.weight' holds nan at element 2", NULL});
    write_gemm(path, w, b_inf, 1.0f, 1.0f);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"bias C 'fc.bias' holds inf at element 0", NULL});
    /* Finite values whose product with alpha is not. */
    write_gemm(path, w_big, b, 1e10f, 1.0f);
    expect_refused(path, RM_ERR_UNSUPPORTED, (const char *const[]){"times alpha 1e+10 overflow float", NULL});
}

/* ---- 8. the layer cap ---- */

/* 1,000,000 Relus in a chain (about 22 MB): one more node than a model of
 * 1,000,000 layers (the loss included) takes. Before, such a file was
 * imported (1,000,001 Relus: 15 s, 1.5 GB, a training graph of 2,000,007
 * nodes); now the nodes are counted in the bytes, before protobuf-c decodes
 * anything. */
Test(onnx_hostile, more_nodes_than_the_layer_cap_are_refused_before_decoding)
{
    pb_buf g = {0}, in = {0}, out = {0}, m = {0}, node = {0};
    const int64_t xd[2] = {-1, 4}, yd[1] = {-1};
    char a[16] = "x", b[16];
    for (int k = 1; k <= RM_ONNX_MAX_NODES + 1; k++) {
        if (k == RM_ONNX_MAX_NODES + 1)
            snprintf(b, sizeof b, "y");
        else
            snprintf(b, sizeof b, "%x", k);
        node.n = 0;
        onnx_w_node(&node, "Relu", NULL, (const char *const[]){a, NULL}, (const char *const[]){b, NULL}, NULL, 0);
        pb_msg(&g, 1, &node);
        memcpy(a, b, sizeof a);
    }
    onnx_w_value_info(&in, "x", xd, 2);
    onnx_w_value_info(&out, "y", yd, 1);
    pb_msg(&g, 11, &in);
    pb_msg(&g, 12, &out);
    onnx_w_model(&m, &g);
    const char *path = cf_path("relus.onnx");
    save(path, &m);
    pb_free(&g), pb_free(&in), pb_free(&out), pb_free(&node);
    long before = max_rss_kib();
    expect_refused(path, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"more than 999999 nodes", "at most 1000000 layers, the loss included", NULL});
    /* The file's bytes (24 MB) and nothing like its decoded graph. */
    cr_expect_lt(max_rss_kib() - before, 64 * 1024, "the refusal took %ld KiB", max_rss_kib() - before);
}

/* ---- 8b. what the bytes decode into ---- */

/* A valid Gemm model with a flood of 3,000,000 empty messages appended
 * (about 6 MB): as a graph merged into the first (field 7: initializers,
 * value_info, or one unused Relu's attributes) or at the top level
 * (opset_import, metadata_props). Each 2 bytes decoded into a message of
 * 100 to 300 bytes: the attributes took 1.03 GB and 1.7 s, the initializers
 * 937 MB, the others 420 to 470 MB. Now the walk sums what protobuf-c would
 * allocate and refuses past the file's size plus 256 MiB, before decoding. */
Test(onnx_hostile, floods_of_empty_messages_are_refused_before_decoding)
{
    enum { FLOOD = 3000000 };
    static const struct {
        uint32_t graph_field, field; /* graph_field 0: field at the model's top level */
        const char *shown;
    } floods[] = {
        {0, 5, "onnx.NodeProto.attribute at byte"}, /* in a Relu node, below */
        {5, 5, "onnx.GraphProto.initializer at byte"},  {5, 13, "onnx.GraphProto.value_info at byte"},
        {0, 8, "onnx.ModelProto.opset_import at byte"}, {0, 14, "onnx.ModelProto.metadata_props at byte"},
    };
    const float w[6] = {1, 2, 3, 4, 5, 6}, c[2] = {0, 0};
    const char *path = cf_path("flood.onnx");
    for (size_t k = 0; k < sizeof floods / sizeof *floods; k++) {
        pb_buf m = {0}, flood = {0}, node = {0}, graph = {0};
        onnx_w_gemm_model(&m, w, c, 1.0f, 1.0f);
        for (int j = 0; j < FLOOD; j++) pb_bytes(&flood, floods[k].field, "", 0);
        if (k == 0) {
            onnx_w_node(&node, "Relu", "unused", (const char *const[]){"y", NULL}, (const char *const[]){"z", NULL},
                        NULL, 0);
            pb_raw(&node, flood.p, flood.n);
            pb_msg(&graph, 1, &node);
            pb_msg(&m, 7, &graph);
        } else if (floods[k].graph_field) {
            pb_msg(&m, 7, &flood);
        } else {
            pb_raw(&m, flood.p, flood.n);
        }
        pb_free(&flood), pb_free(&node), pb_free(&graph);
        save(path, &m);
        long before = max_rss_kib();
        expect_refused(path, RM_ERR_UNSUPPORTED,
                       (const char *const[]){"bytes would decode into more than", floods[k].shown,
                                             "remat decodes at most the file's size plus 256 MiB and 1 KiB a node",
                                             NULL});
        /* The file's bytes (6 MB), never its decoded messages. */
        cr_expect_lt(max_rss_kib() - before, 32 * 1024, "flood %zu: the refusal took %ld KiB", k,
                     max_rss_kib() - before);
    }
}

/* ---- 9. size: by fstat, or as a stream arrives ---- */

/* A sparse file of zeros of that size in the test's folder: its path. */
static const char *sparse_file(const char *name, off_t size)
{
    const char *path = cf_path(name);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(ftruncate(fd, size), 0);
    close(fd);
    return path;
}

/* A sparse regular file of 2 GiB is refused by its size, before any read. */
Test(onnx_hostile, a_file_past_2_gib_is_refused_by_its_size)
{
    const char *path = sparse_file("huge.onnx", (off_t)RM_ONNX_MAX_FILE_BYTES + 1);
    long before = max_rss_kib();
    expect_refused(path, RM_ERR_PARSE,
                   (const char *const[]){"2147483648 bytes, larger than protobuf's limit of 2 GiB", NULL});
    cr_expect_lt(max_rss_kib() - before, 16 * 1024, "the refusal took %ld KiB", max_rss_kib() - before);
}

/* A device of zeros is refused at its first byte (before: after 1.2 GB). */
Test(onnx_hostile, dev_zero_is_refused_at_once)
{
    long before = max_rss_kib();
    expect_refused("/dev/zero", RM_ERR_PARSE,
                   (const char *const[]){"/dev/zero: not an ONNX model: byte 0 does not start a protobuf field", NULL});
    cr_expect_lt(max_rss_kib() - before, 16 * 1024, "the refusal took %ld KiB", max_rss_kib() - before);
}

/* A sparse regular file of zeros within the size limit is refused at its
 * first byte, as /dev/zero is: it was read whole first (2 GiB - 1: 25 s and
 * 2.2 GB; 1 GiB: 11 s and 1.2 GB). */
Test(onnx_hostile, a_sparse_file_of_zeros_is_refused_at_its_first_byte)
{
    const char *path = sparse_file("zeros.onnx", (off_t)RM_ONNX_MAX_FILE_BYTES);
    long before = max_rss_kib();
    expect_refused(path, RM_ERR_PARSE,
                   (const char *const[]){"not an ONNX model: byte 0 does not start a protobuf field", NULL});
    cr_expect_lt(max_rss_kib() - before, 16 * 1024, "the refusal took %ld KiB", max_rss_kib() - before);
}

/* A directory is named as what it is not, with the article English takes
 * ("not a ONNX model" before). */
Test(onnx_hostile, a_directory_is_not_an_onnx_model)
{
    expect_refused("/tmp", RM_ERR_IO, (const char *const[]){"/tmp: is a directory, not an ONNX model", NULL});
}

/* A model arriving through a pipe is still read, chunk by chunk. */
Test(onnx_hostile, a_model_through_a_pipe_is_read)
{
    size_t n;
    unsigned char *bytes = cf_read(REMAT_SOURCE_DIR "/tests/models/onnx/cbr_pool_gemm.onnx", &n);
    cr_assert_not_null(bytes);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    cr_assert_lt(n, 65536u, "the fixture must fit in the pipe's buffer");
    cr_assert_eq(write(fds[1], bytes, n), (ssize_t)n);
    close(fds[1]);
    free(bytes);
    char path[64], msg[RM_ERR_MSG_LEN];
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    cr_expect_eq(import(path, msg, sizeof msg), RM_OK, "%s", msg);
    close(fds[0]);
}
