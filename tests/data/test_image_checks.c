/* What the image readers check beyond stb_image (issue 23): a PNG's chunk
 * CRCs, its IEND and the Adler-32 of its zlib stream; top-down and truncated
 * BMPs; broken symbolic links in image folders; held-out folders whose
 * images have no labels. Every file is built here from bytes: a valid image,
 * then the one corruption under test. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checksum.h"
#include "cli_fixture.h"
#include "data_fixtures.h"
#include "dataset.h"

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* The offset of the first chunk of that type (its length field). */
static size_t png_chunk(const uint8_t *b, size_t n, const char *type)
{
    for (size_t pos = 8; pos + 12 <= n; pos += 12 + be32(b + pos))
        if (memcmp(b + pos + 4, type, 4) == 0) return pos;
    cr_assert_fail("no %s chunk", type);
    return 0;
}

/* Recomputes the CRC of the chunk at pos, so only the corruption under test
 * is wrong. */
static void png_fix_crc(uint8_t *b, size_t pos)
{
    uint32_t n = be32(b + pos);
    put_be32(b + pos + 8 + n, rm_crc32(0, b + pos + 4, 4 + (size_t)n));
}

/* mean 0, std 1: outputs are pixel / 255. */
static rm_image_options raw_opts(int c, int h, int w)
{
    rm_image_options o;
    rm_image_options_default(&o, c, h, w);
    for (int k = 0; k < 3; k++) o.mean[k] = 0, o.std[k] = 1;
    return o;
}

/* dir/a/<name> holds bytes; opening the folder succeeds (headers are
 * sound) and loading fails naming the file and saying what. */
static void expect_load_error(const char *dir, const char *name, const uint8_t *bytes, size_t n, int w, int h,
                              const char *what)
{
    char rel[FX_PATH];
    snprintf(rel, sizeof rel, "a/%s", name);
    fx_write(dir, rel, bytes, n);
    rm_image_options o = raw_opts(3, h, w);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_image_folder_open(&ds, dir, &o, &e), RM_OK, "%s", e.msg);
    float *img = malloc((size_t)(3 * w * h) * sizeof *img);
    int32_t lab;
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 0, &e), RM_ERR_PARSE, "%s: loaded without an error", name);
    cr_assert(strstr(e.msg, rel), "message '%s' should name %s", e.msg, rel);
    cr_assert(strstr(e.msg, what), "message '%s' should say '%s'", e.msg, what);
    rm_err_clear(&e);
    cr_assert_eq(rm_dataset_validate(ds, &e), RM_ERR_PARSE, "validate must catch %s too", name);
    free(img);
    rm_dataset_free(ds);
    char path[FX_PATH];
    cr_assert_eq(unlink(fx_path(path, dir, rel)), 0);
}

/* Loads dir's only image; the caller frees. */
static float *load_only(const char *dir, int c, int h, int w)
{
    rm_image_options o = raw_opts(c, h, w);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_image_folder_open(&ds, dir, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(ds->info.count, 1);
    float *img = malloc((size_t)(c * h * w) * sizeof *img);
    int32_t lab;
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 0, &e), RM_OK, "%s", e.msg);
    rm_dataset_free(ds);
    return img;
}

static void pixels(uint8_t *px, size_t n)
{
    for (size_t i = 0; i < n; i++) px[i] = (uint8_t)(i * 7919 % 251);
}

/* The bytes of a valid 16x8 RGB PNG of px (as stb_image_write makes it: one
 * IDAT), written at dir/rel and read back; the caller frees. */
static uint8_t *png_16x8(const char *dir, const char *rel, uint8_t px[16 * 8 * 3], size_t *n)
{
    char p[FX_PATH];
    pixels(px, 16 * 8 * 3);
    fx_write_png(dir, rel, 16, 8, 3, px);
    return fx_read(fx_path(p, dir, rel), n);
}

Test(data_image_checks, png_chunk_crc_mismatch_and_missing_iend)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    uint8_t px[16 * 8 * 3];
    size_t n;
    uint8_t *good = png_16x8(dir, "good.png", px, &n); /* outside the class folder: the template */
    unlink(fx_path(p, dir, "good.png"));
    uint8_t *b = malloc(n);

    /* A flipped bit in the compressed data: the IDAT CRC no longer matches. */
    memcpy(b, good, n);
    b[png_chunk(b, n, "IDAT") + 8 + 5] ^= 0x10;
    expect_load_error(dir, "idat.png", b, n, 16, 8, "PNG chunk IDAT CRC mismatch");
    /* Each chunk's own CRC field, IHDR and IEND included. */
    static const char *const types[] = {"IHDR", "IDAT", "IEND"};
    for (int t = 0; t < 3; t++) {
        memcpy(b, good, n);
        size_t at = png_chunk(b, n, types[t]);
        b[at + 8 + be32(b + at) + 3] ^= 1;
        char what[64];
        snprintf(what, sizeof what, "chunk %s CRC mismatch", types[t]);
        expect_load_error(dir, "crc.png", b, n, 16, 8, what);
    }
    /* No IEND: the file was cut at a chunk boundary. */
    expect_load_error(dir, "noend.png", good, n - 12, 16, 8, "no IEND chunk");
    /* Cut inside IDAT. */
    expect_load_error(dir, "cut.png", good, png_chunk(good, n, "IDAT") + 20, 16, 8, "truncated");
    free(b), free(good);
    fx_rmtree(dir);
}

Test(data_image_checks, png_adler32_mismatch)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    uint8_t px[16 * 8 * 3];
    size_t n;
    uint8_t *b = png_16x8(dir, "good.png", px, &n);
    unlink(fx_path(p, dir, "good.png"));
    /* The Adler-32 trailer, with the chunk's CRC made right again: only the
     * zlib check can see it. */
    size_t at = png_chunk(b, n, "IDAT");
    b[at + 8 + be32(b + at) - 1] ^= 0x40;
    png_fix_crc(b, at);
    expect_load_error(dir, "adler.png", b, n, 16, 8, "zlib data fails its Adler-32 check");
    free(b);

    /* The silent case: a stored (uncompressed) stream whose pixel byte
     * changed after the checksums were computed, CRC fixed. It inflates
     * without complaint and used to decode to wrong pixels. */
    uint16_t v[4 * 3];
    for (int i = 0; i < 12; i++) v[i] = (uint16_t)(1000 * i);
    fx_write_png16(dir, "good16.png", 4, 3, v);
    b = fx_read(fx_path(p, dir, "good16.png"), &n);
    unlink(p);
    at = png_chunk(b, n, "IDAT");
    b[at + 8 + 2 + 5 + 3] ^= 0x80; /* zlib header, stored block header, filter byte, then a sample */
    png_fix_crc(b, at);
    expect_load_error(dir, "stored.png", b, n, 4, 3, "Adler-32");
    free(b);
    fx_rmtree(dir);
}

/* A valid PNG whose zlib stream is split over IDAT chunks so that the Adler-32
 * spans two of them, followed by an empty IDAT: it loads, with the pixels of
 * the one-chunk file. */
Test(data_image_checks, png_adler32_across_idat_chunks)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    uint8_t px[16 * 8 * 3];
    size_t n;
    uint8_t *b = png_16x8(dir, "a/one.png", px, &n);
    float *want = load_only(dir, 3, 8, 16);
    unlink(fx_path(p, dir, "a/one.png"));
    size_t at = png_chunk(b, n, "IDAT");
    uint32_t len = be32(b + at);
    cr_assert_gt(len, 8);
    /* IDAT(len - 2) IDAT(2) IDAT(0), then the rest of the file. */
    uint8_t *s = malloc(n + 24);
    size_t k = 0;
    memcpy(s, b, at), k = at;
    const uint32_t parts[3] = {len - 2, 2, 0};
    for (uint32_t i = 0, from = 0; i < 3; from += parts[i], i++) {
        put_be32(s + k, parts[i]);
        memcpy(s + k + 4, "IDAT", 4);
        memcpy(s + k + 8, b + at + 8 + from, parts[i]);
        png_fix_crc(s, k);
        k += 12 + parts[i];
    }
    memcpy(s + k, b + at + 12 + len, n - (at + 12 + len));
    k += n - (at + 12 + len);
    fx_write(dir, "a/split.png", s, k);
    float *got = load_only(dir, 3, 8, 16);
    cr_assert_arr_eq(got, want, 3 * 8 * 16 * sizeof *got);
    free(got), free(want), free(s), free(b);
    fx_rmtree(dir);
}

/* A BMP stores rows bottom-up when its height is positive and top-down when
 * it is negative; both are valid. stb_image_write writes bottom-up. */
static uint8_t *bmp_top_down(const uint8_t *up, size_t n, int w, int h)
{
    uint8_t *down = malloc(n);
    memcpy(down, up, n);
    uint32_t offset = up[10] | up[11] << 8 | up[12] << 16 | (uint32_t)up[13] << 24;
    int32_t height = -h;
    memcpy(down + 22, &height, 4); /* little-endian, as this machine */
    size_t stride = ((size_t)w * 3 + 3) / 4 * 4;
    for (int y = 0; y < h; y++)
        memcpy(down + offset + (size_t)y * stride, up + offset + (size_t)(h - 1 - y) * stride, stride);
    return down;
}

Test(data_image_checks, top_down_bmp_loads_as_its_bottom_up_twin)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    const int w = 3, h = 2; /* not square, and rows padded (9 bytes to 12) */
    uint8_t px[3 * 2 * 3];
    pixels(px, sizeof px);
    fx_write_bmp(dir, "a/up.bmp", w, h, 3, px);
    size_t n;
    uint8_t *up = fx_read(fx_path(p, dir, "a/up.bmp"), &n);
    unlink(p);
    uint8_t *down = bmp_top_down(up, n, w, h);
    fx_write(dir, "a/down.bmp", down, n);
    float *got = load_only(dir, 3, h, w);
    /* Output pixel (x, y) of channel k is the source's, / 255, exactly. */
    for (int k = 0; k < 3; k++)
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                cr_assert_eq(got[(k * h + y) * w + x], (float)px[(y * w + x) * 3 + k] / 255.0f, "k %d y %d x %d", k, y,
                             x);
    unlink(fx_path(p, dir, "a/down.bmp"));
    fx_write(dir, "a/up.bmp", up, n);
    float *twin = load_only(dir, 3, h, w);
    cr_assert_arr_eq(got, twin, 3 * 2 * 3 * sizeof *got);
    free(got), free(twin), free(up), free(down);
    fx_rmtree(dir);
}

Test(data_image_checks, truncated_bmp_refused)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    const int w = 3, h = 4;
    uint8_t px[3 * 4 * 3];
    pixels(px, sizeof px);
    fx_write_bmp(dir, "x.bmp", w, h, 3, px);
    size_t n;
    uint8_t *b = fx_read(fx_path(p, dir, "x.bmp"), &n);
    unlink(p);
    /* stb_image read zeros past the end: the cut rows came out black. */
    expect_load_error(dir, "cut.bmp", b, n - 12 - 4, w, h, "BMP pixel rows run past the end of the file");
    expect_load_error(dir, "cut1.bmp", b, n - 4, w, h, "truncated");
    uint8_t *down = bmp_top_down(b, n, w, h);
    expect_load_error(dir, "cutdown.bmp", down, n - 12, w, h, "truncated");
    /* Only the last row's padding missing (some writers do that): loads. */
    fx_write(dir, "a/nopad.bmp", b, n - 3);
    float *got = load_only(dir, 3, h, w);
    cr_assert_eq(got[0], (float)px[0] / 255.0f);
    free(got), free(b), free(down);
    fx_rmtree(dir);
}

static void expect_open_error(const char *dir, const char *file, const char *what)
{
    rm_image_options o = raw_opts(3, 2, 2);
    rm_dataset *ds = (rm_dataset *)1;
    rm_err e = {0};
    /* RM_ERR_INVALID: a bad entry, never taken for a missing split. */
    cr_assert_eq(rm_dataset_image_folder_open(&ds, dir, &o, &e), RM_ERR_INVALID, "%s", e.msg);
    cr_assert_null(ds);
    cr_assert(strstr(e.msg, file), "message '%s' should name %s", e.msg, file);
    cr_assert(strstr(e.msg, what), "message '%s' should say '%s'", e.msg, what);
}

static const uint8_t rgb2x2[12] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 200, 210, 255};

/* A 2x2 RGB PNG at each of the NULL-ended paths under dir. */
static void tiny_pngs(const char *dir, const char *const *rels)
{
    for (; *rels; rels++) fx_write_png(dir, *rels, 2, 2, 3, rgb2x2);
}

/* dir opens as an image folder of count samples. */
static void expect_samples(const char *dir, int64_t count)
{
    rm_image_options o = raw_opts(3, 2, 2);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_image_folder_open(&ds, dir, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(ds->info.count, count);
    rm_dataset_free(ds);
}

Test(data_image_checks, broken_symlink_is_an_error)
{
    char dir[FX_PATH], p[FX_PATH], q[FX_PATH];
    fx_tmpdir(dir);
    tiny_pngs(dir, (const char *const[]){"a/1.png", "b/1.png", NULL});
    /* A working link is a sample like any file. */
    cr_assert_eq(symlink(fx_path(q, dir, "a/1.png"), fx_path(p, dir, "b/2.png")), 0);
    expect_samples(dir, 3);
    /* A sample whose target is gone: an error naming it, not one sample fewer. */
    cr_assert_eq(symlink(fx_path(q, dir, "gone.png"), fx_path(p, dir, "b/3.png")), 0);
    expect_open_error(dir, "b/3.png", "broken symbolic link");
    unlink(p);
    /* So is a class folder whose target is gone. */
    cr_assert_eq(symlink(fx_path(q, dir, "gone"), fx_path(p, dir, "c")), 0);
    expect_open_error(dir, "/c", "broken symbolic link");
    fx_rmtree(dir);
}

/* A FIFO, a folder, a link to a device named like an image in a class
 * folder: each was skipped without a word (one sample fewer). Now an error
 * naming it, found by stat without opening it (the FIFO would block). */
Test(data_image_checks, special_files_named_like_images_are_errors, .timeout = 30)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    tiny_pngs(dir, (const char *const[]){"a/1.png", "b/1.png", NULL});
    cr_assert_eq(mkfifo(fx_path(p, dir, "a/fifo.png"), 0666), 0);
    expect_open_error(dir, "a/fifo.png", "not a regular file (a FIFO)");
    unlink(p);
    cr_assert_eq(mkdir(fx_path(p, dir, "a/dir.png"), 0777), 0);
    expect_open_error(dir, "a/dir.png", "not a regular file (a folder)");
    rmdir(p);
    cr_assert_eq(symlink("/dev/zero", fx_path(p, dir, "b/zero.png")), 0);
    expect_open_error(dir, "b/zero.png", "named like an image but not a regular file (a device)");
    unlink(p);
    cr_assert_eq(symlink("/dev/urandom", fx_path(p, dir, "b/rand.bmp")), 0);
    expect_open_error(dir, "b/rand.bmp", "(a device)");
    unlink(p);
    /* Other names are not samples and stay ignored. */
    cr_assert_eq(mkfifo(fx_path(p, dir, "a/README"), 0666), 0);
    expect_samples(dir, 2);
    fx_rmtree(dir);
}

/* A broken entry in val/ made the held-out split "missing" (RM_ERR_IO): the
 * trainer noted it and held out 10% of the training data instead, exit 0.
 * It is an error like the same entry in train/ (RM_ERR_INVALID). */
Test(data_image_checks, broken_link_in_val_is_an_error)
{
    char dir[FX_PATH], p[FX_PATH], q[FX_PATH];
    fx_tmpdir(dir);
    tiny_pngs(dir, (const char *const[]){"train/a/1.png", "train/a/2.png", "val/a/0.png", NULL});
    cr_assert_eq(symlink(fx_path(q, dir, "nowhere"), fx_path(p, dir, "val/a/b.png")), 0);
    rm_image_options o = raw_opts(3, 2, 2);
    rm_dataset *ds = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TEST, &o, 1, &e), RM_ERR_INVALID, "%s", e.msg);
    cr_assert(strstr(e.msg, "val/a/b.png: broken symbolic link"), "%s", e.msg);
    fx_rmtree(dir);
}

/* A held-out folder whose images have no labels is refused with a message
 * that says so, as an I/O error: the trainer then notes that message and
 * holds out part of the training data instead (train/trainer.c). */
Test(data_image_checks, unlabelled_test_images_are_reported)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    tiny_pngs(dir, (const char *const[]){"train/a/1.png", "train/b/1.png", "test/1.png", "test/2.png", NULL});
    rm_image_options o = raw_opts(3, 2, 2);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TEST, &o, 2, &e), RM_ERR_IO, "%s", e.msg);
    cr_assert(strstr(e.msg, "/test: 2 images but no class sub-folders, so no labels"), "%s", e.msg);
    fx_rmtree(dir);

    /* Segmentation images without their masks: not an image folder with one
     * class called "images". */
    fx_tmpdir(dir);
    fx_write_png(dir, "train/images/1.png", 2, 2, 3, rgb2x2);
    fx_write_png(dir, "train/masks/1.png", 2, 2, 1, (const uint8_t[]){0, 1, 1, 0});
    fx_write_png(dir, "test/images/1.png", 2, 2, 3, rgb2x2);
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TRAIN, &o, 2, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(ds->info.kind, "segmentation");
    rm_dataset_free(ds);
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TEST, &o, 2, &e), RM_ERR_IO, "%s", e.msg);
    cr_assert(strstr(e.msg, "/test: images/ but no masks/, so no labels"), "%s", e.msg);
    fx_rmtree(dir);
}

/* A held-out split's labels are the training split's class numbers, matched
 * by folder name: a val/ without class "a" used to number "b" as 0, the
 * training split's "a", and was evaluated against the wrong labels. */
Test(data_image_checks, held_out_classes_numbered_as_training)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    tiny_pngs(dir, (const char *const[]){"train/a/1.png", "train/b/1.png", "train/c/1.png", "val/b/1.png",
                                         "val/c/1.png", "val/c/2.png", NULL});
    rm_image_options o = raw_opts(3, 2, 2);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TEST, &o, 3, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(ds->info.count, 3);
    cr_assert_eq(ds->info.classes, 3);
    char buf[16];
    cr_assert_str_eq(rm_dataset_class_name(ds, 0, buf, sizeof buf), "a");
    float img[12];
    const int32_t want[3] = {1, 2, 2};
    for (int i = 0; i < 3; i++) {
        int32_t lab = -1;
        cr_assert_eq(rm_dataset_load(ds, img, &lab, i, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(lab, want[i], "sample %d: label %d, want %d", i, lab, want[i]);
    }
    rm_dataset_free(ds);
    /* A held-out class the training split lacks has no label. */
    fx_write_png(dir, "val/d/1.png", 2, 2, 3, rgb2x2);
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TEST, &o, 3, &e), RM_ERR_PARSE, "%s", e.msg);
    cr_assert(strstr(e.msg, "/val/d: not a class of the training data"), "%s", e.msg);
    fx_rmtree(dir);
}

/* --quiet dropped every note, among them the one that says the held-out
 * data is a part of the training data (its help says it removes only the
 * progress bar and the solver log). */
TestSuite(data_cli, .init = cf_setup, .fini = cf_teardown);

Test(data_cli, quiet_keeps_the_held_out_note)
{
    const uint8_t px[4] = {0, 255, 255, 0};
    const char *dir = cf_path("d");
    cr_assert_eq(mkdir(dir, 0755), 0);
    const char *rels[] = {"train/a/0.png", "train/a/1.png", "train/b/0.png", "train/b/1.png"};
    for (int i = 0; i < 4; i++) fx_write_png(dir, rels[i], 2, 2, 1, px);
    int rc = cf_remat("train", "--model", CF_MODEL("digits.cfg"), "--data", dir, "--budget", "100%", "--batch", "2",
                      "--steps", "1", "--quiet", NULL);
    cr_assert_eq(rc, 0, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, "no held-out split") && strstr(cf_err, "holding out 10% of the training data"), "%s",
              cf_err);
    cr_expect(!strstr(cf_err, "solving the"), "the solver log stays quiet: %s", cf_err);
}
