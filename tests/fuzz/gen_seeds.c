/* Writes the binary seed files of the fuzz corpora (snapshot, mnist,
 * cifar, image, and the ONNX seeds of the reader's limits) into
 * tests/fuzz/corpus/<harness>/, in each harness's input format (see the
 * comment at the top of each fuzz_<name>.c). The text seeds (configs,
 * problems, schedules) are copies of real files and are not generated, nor
 * are the ONNX seeds exported by gen_fixtures.py. Built as fuzz_gen_seeds
 * in a REMAT_FUZZ build; run it from the repository root when a format
 * changes (a harness name writes only that harness's seeds):
 *   ./build-fuzz/fuzz/fuzz_gen_seeds tests/fuzz/corpus [HARNESS] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harnesses.h"
#include "onnx_wire.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STB_IMAGE_WRITE_STATIC
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

static const char *root;

/* A growable byte buffer. */
typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void put(buf *b, const void *data, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
        if (!b->p) abort();
    }
    if (n) memcpy(b->p + b->n, data, n);
    b->n += n;
}

static void put_byte(buf *b, int v)
{
    uint8_t c = (uint8_t)v;
    put(b, &c, 1);
}

static void put_be32(buf *b, uint32_t v)
{
    uint8_t p[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    put(b, p, 4);
}

static void save(const char *harness, const char *name, const buf *b)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, harness);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", root, harness, name);
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(b->p, 1, b->n, fp) != b->n || fclose(fp)) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
}

static uint8_t *read_all(const char *path, size_t *n)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) abort();
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    uint8_t *p = malloc((size_t)size + 1);
    if (!p || fread(p, 1, (size_t)size, fp) != (size_t)size) abort();
    fclose(fp);
    *n = (size_t)size;
    return p;
}

/* ---- snapshot: mode byte + file ---- */

static void snapshots(void)
{
    rm_fuzz_net *net = rm_fuzz_net_make();
    static const char *const kinds[4] = {"none", "sgd", "adam", "sgd0"};
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s/gen.snap", rm_fuzz_dir());
    for (int k = 0; k < 4; k++) {
        rm_err e = {RM_OK, ""};
        if (rm_fuzz_net_save(net, tmp, k, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            exit(1);
        }
        size_t n;
        uint8_t *file = read_all(tmp, &n);
        char name[64];
        for (int fix = 0; fix < 2; fix++) {
            buf b = {0};
            put_byte(&b, k << 1 | fix);
            put(&b, file, n);
            snprintf(name, sizeof name, "ok-%s%s", kinds[k], fix ? "-fixcrc" : "");
            save("snapshot", name, &b);
            free(b.p);
        }
        if (k == 1) {
            buf b = {0};
            put_byte(&b, 2 << 1); /* SGD state loaded into Adam */
            put(&b, file, n);
            save("snapshot", "bad-sgd-into-adam", &b);
            b.n = 1 + n / 2; /* truncated */
            b.p[0] = 1 << 1;
            save("snapshot", "bad-truncated", &b);
            b.n = 1 + n;
            b.p[1 + 40] ^= 0x10; /* a flipped payload byte, checksum kept */
            save("snapshot", "bad-flipped", &b);
            b.p[0] |= 1; /* the same with the checksums recomputed: a counter changed, still a valid file */
            save("snapshot", "ok-flipped-fixcrc", &b);
            free(b.p);
        }
        free(file);
    }
    remove(tmp);
    rm_fuzz_net_free(net);
}

/* ---- mnist: idx3 file + idx1 file ---- */

static void mnist_pair(const char *name, uint32_t magic, uint32_t n, uint32_t rows, uint32_t cols, int bad_label,
                       size_t cut)
{
    buf b = {0};
    put_be32(&b, magic), put_be32(&b, n), put_be32(&b, rows), put_be32(&b, cols);
    for (uint32_t i = 0; i < n * rows * cols; i++) put_byte(&b, (int)(i * 37 % 256));
    put_be32(&b, 0x801), put_be32(&b, n);
    for (uint32_t i = 0; i < n; i++) put_byte(&b, bad_label && i == n - 1 ? 10 : (int)(i % 10));
    if (cut) b.n -= cut;
    save("mnist", name, &b);
    free(b.p);
}

/* ---- cifar: mode byte + records ---- */

static void cifar(const char *name, int mode, int records, int bad_label, size_t cut)
{
    buf b = {0};
    put_byte(&b, mode);
    for (int r = 0; r < records; r++) {
        put_byte(&b, bad_label && r == records - 1 ? 10 : r % 10);
        for (int i = 0; i < 3072; i++) put_byte(&b, (i * 7 + r) % 256);
    }
    if (cut) b.n -= cut;
    save("cifar", name, &b);
    free(b.p);
}

/* ---- image: mode byte + image [+ mask] ---- */

static void write_func(void *ctx, void *data, int size)
{
    put(ctx, data, (size_t)size);
}

/* kind: 0 png, 1 jpg, 2 bmp */
static buf encode(int kind, int w, int h, int comp, const uint8_t *px)
{
    buf b = {0};
    int ok = kind == 0   ? stbi_write_png_to_func(write_func, &b, w, h, comp, px, w * comp)
             : kind == 1 ? stbi_write_jpg_to_func(write_func, &b, w, h, comp, px, 90)
                         : stbi_write_bmp_to_func(write_func, &b, w, h, comp, px);
    if (!ok) abort();
    return b;
}

static void image_seed(const char *name, int mode, const buf *image, const buf *mask)
{
    buf b = {0};
    put_byte(&b, mode);
    if (mask) put_byte(&b, (int)(image->n & 255)), put_byte(&b, (int)(image->n >> 8));
    put(&b, image->p, image->n);
    if (mask) put(&b, mask->p, mask->n);
    save("image", name, &b);
    free(b.p);
}

static void images(void)
{
    enum { W = 6, H = 5 };
    uint8_t rgb[W * H * 3], gray[W * H], mask[W * H], badmask[W * H];
    for (int i = 0; i < W * H * 3; i++) rgb[i] = (uint8_t)(i * 29 % 256);
    for (int i = 0; i < W * H; i++)
        gray[i] = (uint8_t)(i * 8), mask[i] = (uint8_t)(i % 4), badmask[i] = (uint8_t)(i % 4);
    badmask[W * H - 1] = 9; /* class 9 of 4 */
    buf png3 = encode(0, W, H, 3, rgb), png1 = encode(0, W, H, 1, gray), jpg3 = encode(1, W, H, 3, rgb),
        bmp3 = encode(2, W, H, 3, rgb), pngm = encode(0, W, H, 1, mask), pngbad = encode(0, W, H, 1, badmask),
        bmpm = encode(2, W, H, 1, mask), pngm_small = encode(0, W - 1, H, 1, mask);
    /* mode: bit 0 seg, bit 1 rgb, bits 2-3 ext, bits 4-5 size, bits 6-7 mask ext */
    image_seed("ok-png-rgb", 0x02, &png3, NULL);
    image_seed("ok-png-gray-16x16", 0x20, &png1, NULL);
    image_seed("ok-png-gray-as-rgb", 0x12, &png1, NULL);
    image_seed("ok-jpg-rgb", 0x06, &jpg3, NULL);
    image_seed("ok-bmp-rgb-3x1", 0x3a, &bmp3, NULL);
    image_seed("ok-seg-png", 0x03, &png3, &pngm);
    image_seed("ok-seg-jpg", 0x07, &jpg3, &pngm);
    image_seed("bad-seg-bmpmask", 0x47, &jpg3, &bmpm); /* stb_image_write's BMPs are 24-bit: 3 channels */
    image_seed("bad-seg-jpgmask", 0x83, &png3, &pngm);
    image_seed("bad-seg-mask-class", 0x03, &png3, &pngbad);
    image_seed("bad-seg-mask-size", 0x03, &png3, &pngm_small);
    buf trunc = png3;
    trunc.n = png3.n - 20; /* IDAT cut: the header reads, decoding fails */
    image_seed("bad-png-truncated", 0x02, &trunc, NULL);
    buf huge = png3; /* IHDR claims 100000 x 5: refused before decoding */
    uint8_t hdr[64];
    memcpy(hdr, png3.p, 33);
    hdr[16] = 0, hdr[17] = 1, hdr[18] = 0x86, hdr[19] = 0xa0;
    huge.p = hdr, huge.n = 33;
    image_seed("bad-png-huge", 0x02, &huge, NULL);
    free(png3.p), free(png1.p), free(jpg3.p), free(bmp3.p), free(pngm.p), free(pngbad.p), free(bmpm.p),
        free(pngm_small.p);
}

/* ---- onnx: the models of the reader's limits (tests/models/test_onnx_hostile.c) ---- */

static void onnx_seed(const char *name, pb_buf *m)
{
    if (m->oom) abort();
    buf b = {m->p, m->n, m->cap};
    save("onnx", name, &b);
    pb_free(m);
}

/* ok-*: what the structure-aware mutator starts from (the fold chain's
 * integers, the Gemm's and batch norm's floats); bad-*: one of each limit,
 * small enough for the corpus (nesting 120 and 124 levels deep). */
static void onnx_seeds(void)
{
    const float w[6] = {1, 2, 3, 4, 5, 6}, w_nan[6] = {1, 2, NAN, 4, 5, 6}, c[2] = {0.5f, -0.5f};
    const float ones[2] = {1, 1}, negative[2] = {1, -0.5f};
    pb_buf m = {0};
    onnx_w_fold_chain_model(&m), onnx_seed("ok-fold-chain.onnx", &m);
    onnx_w_gemm_model(&m, w, c, 0.5f, 2.0f), onnx_seed("ok-gemm-alpha-beta.onnx", &m);
    onnx_w_batchnorm_model(&m, ones, ones, 1e-5f), onnx_seed("ok-batchnorm.onnx", &m);
    onnx_w_deep_type_model(&m, 60, 0), onnx_seed("bad-deep-type.onnx", &m);
    onnx_w_deep_graph_model(&m, 40), onnx_seed("bad-deep-graph.onnx", &m);
    onnx_w_fold_model(&m, "Add", INT64_MAX, 1), onnx_seed("bad-fold-overflow.onnx", &m);
    onnx_w_fold_model(&m, "Sub", -INT64_MAX, 1), onnx_seed("bad-fold-batch.onnx", &m);
    onnx_w_cast_model(&m, -0x1p63f), onnx_seed("bad-cast-batch.onnx", &m);
    onnx_w_batchnorm_model(&m, ones, negative, 1e-5f), onnx_seed("bad-bn-negative-var.onnx", &m);
    onnx_w_batchnorm_model(&m, ones, ones, INFINITY), onnx_seed("bad-bn-eps-inf.onnx", &m);
    onnx_w_gemm_model(&m, w, c, NAN, 1.0f), onnx_seed("bad-gemm-alpha-nan.onnx", &m);
    onnx_w_gemm_model(&m, w_nan, c, 1.0f, 1.0f), onnx_seed("bad-gemm-nan-weight.onnx", &m);
}

int main(int argc, char **argv)
{
    if (argc != 2 && argc != 3) {
        fprintf(stderr, "usage: fuzz_gen_seeds CORPUS_DIR [HARNESS]\n");
        return 2;
    }
    root = argv[1];
    if (argc == 3) {
        if (strcmp(argv[2], "onnx")) {
            fprintf(stderr, "fuzz_gen_seeds: only onnx's seeds are written alone\n");
            return 2;
        }
        onnx_seeds();
        return 0;
    }
    onnx_seeds();
    snapshots();
    mnist_pair("ok-3x4x5", 0x803, 3, 4, 5, 0, 0);
    mnist_pair("ok-1x28x28", 0x803, 1, 28, 28, 0, 0);
    mnist_pair("bad-label", 0x803, 2, 3, 3, 1, 0);
    mnist_pair("bad-magic", 0x801, 2, 3, 3, 0, 0);
    mnist_pair("bad-truncated", 0x803, 2, 3, 3, 0, 1);
    cifar("ok-2", 0, 2, 0, 0);
    cifar("ok-two-files", 1, 4, 0, 0);
    cifar("bad-label", 0, 1, 1, 0);
    cifar("bad-partial", 0, 2, 0, 100);
    images();
    rm_fuzz_clear();
    return 0;
}
