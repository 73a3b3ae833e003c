/* Image folders: class ordering, exact pixel -> normalized float values,
 * channel conversion, the resize/crop geometry on known images, and every
 * error (empty class, corrupt and truncated files, oversized headers). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data_fixtures.h"
#include "dataset.h"

static rm_image_options opts(int c, int h, int w)
{
    rm_image_options o;
    rm_image_options_default(&o, c, h, w);
    return o;
}

/* mean 0, std 1: outputs are pixel/255, so geometry is easy to read. */
static rm_image_options raw_opts(int c, int h, int w)
{
    rm_image_options o = opts(c, h, w);
    for (int k = 0; k < 3; k++) o.mean[k] = 0, o.std[k] = 1;
    return o;
}

static rm_dataset *open_ok(const char *root, const rm_image_options *o)
{
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_image_folder_open(&ds, root, o, &e), RM_OK, "%s", e.msg);
    return ds;
}

static void expect_open_error(const char *root, const rm_image_options *o, rm_code code, const char *file,
                              const char *what)
{
    rm_dataset *ds = (rm_dataset *)1;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_image_folder_open(&ds, root, o, &e), (int)code, "%s", e.msg);
    cr_assert_null(ds);
    cr_assert(strstr(e.msg, file), "message '%s' should name %s", e.msg, file);
    cr_assert(strstr(e.msg, what), "message '%s' should say '%s'", e.msg, what);
}

static const uint8_t rgb2x2[12] = {10, 20, 30, 40, 50, 60, 70, 80, 90, 200, 210, 255};

Test(data_images, classes_sorted_and_files_filtered)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    fx_write_png(dir, "zebra/b.png", 2, 2, 3, rgb2x2);
    fx_write_png(dir, "zebra/a.PNG", 2, 2, 3, rgb2x2);
    fx_write_png(dir, "apple/x.png", 2, 2, 3, rgb2x2);
    fx_write_bmp(dir, "Mango/m.bmp", 2, 2, 3, rgb2x2);
    fx_write(dir, "Mango/notes.txt", "hello", 5);        /* not an image: skipped */
    fx_write_png(dir, ".hidden/h.png", 2, 2, 3, rgb2x2); /* hidden: not a class */
    fx_write_png(dir, "apple/.h.png", 2, 2, 3, rgb2x2);  /* hidden: not a sample */
    fx_write(dir, "stray.png", "x", 1);                  /* files at the root are not samples */
    rm_image_options o = opts(3, 2, 2);
    rm_dataset *ds = open_ok(dir, &o);
    cr_assert_eq(ds->info.classes, 3);
    cr_assert_eq(ds->info.count, 4);
    char nb[16];
    /* Byte order: upper case before lower case. */
    cr_assert_str_eq(rm_dataset_class_name(ds, 0, nb, sizeof nb), "Mango");
    cr_assert_str_eq(rm_dataset_class_name(ds, 1, nb, sizeof nb), "apple");
    cr_assert_str_eq(rm_dataset_class_name(ds, 2, nb, sizeof nb), "zebra");
    float img[12];
    int32_t want[4] = {0, 1, 2, 2}, lab;
    rm_err e = {0};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(rm_dataset_load(ds, img, &lab, i, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(lab, want[i], "sample %d", i);
    }
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_images, decodes_values_exactly)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    fx_write_png(dir, "c/rgb.png", 2, 2, 3, rgb2x2);
    static const uint8_t gray[4] = {0, 1, 128, 255};
    fx_write_png(dir, "d/gray.png", 2, 2, 1, gray);
    rm_image_options o = opts(3, 2, 2);
    rm_dataset *ds = open_ok(dir, &o);
    float img[12];
    int32_t lab;
    rm_err e = {0};
    const float mean[3] = {0.485f, 0.456f, 0.406f}, sd[3] = {0.229f, 0.224f, 0.225f};
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 0, &e), RM_OK, "%s", e.msg);
    for (int ch = 0; ch < 3; ch++)
        for (int p = 0; p < 4; p++) {
            float want = ((float)rgb2x2[p * 3 + ch] / 255.0f - mean[ch]) / sd[ch];
            cr_assert(img[ch * 4 + p] == want, "ch %d px %d: %.9g want %.9g", ch, p, (double)img[ch * 4 + p],
                      (double)want);
        }
    /* Gray loaded as 3 channels: the value repeated in each. */
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 1, &e), RM_OK, "%s", e.msg);
    for (int ch = 0; ch < 3; ch++)
        for (int p = 0; p < 4; p++) cr_assert(img[ch * 4 + p] == ((float)gray[p] / 255.0f - mean[ch]) / sd[ch]);
    rm_dataset_free(ds);

    /* One channel: gray exactly; RGB through stb_image's integer luma. */
    o = opts(1, 2, 2);
    cr_assert(o.mean[0] == 0.449f && o.std[0] == 0.226f);
    ds = open_ok(dir, &o);
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 0, &e), RM_OK, "%s", e.msg);
    for (int p = 0; p < 4; p++) {
        const uint8_t *px = rgb2x2 + 3 * p;
        int y = (px[0] * 77 + px[1] * 150 + px[2] * 29) >> 8;
        cr_assert(img[p] == ((float)y / 255.0f - 0.449f) / 0.226f, "px %d", p);
    }
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 1, &e), RM_OK, "%s", e.msg);
    for (int p = 0; p < 4; p++) cr_assert(img[p] == ((float)gray[p] / 255.0f - 0.449f) / 0.226f);
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

/* Loads the only sample of a one-image folder at the given input size. */
static void load_single(float *img, const uint8_t *px, int w, int h, int out_w, int out_h)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    fx_write_png(dir, "k/i.png", w, h, 1, px);
    rm_image_options o = raw_opts(1, out_h, out_w);
    rm_dataset *ds = open_ok(dir, &o);
    int32_t lab;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 0, &e), RM_OK, "%s", e.msg);
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_images, center_crop_geometry)
{
    /* 6 wide x 2 high to 2x2: the scale is 1 (the height binds) and the
     * centred columns 2 and 3 remain, exactly. */
    uint8_t px[12];
    for (int y = 0; y < 2; y++)
        for (int x = 0; x < 6; x++) px[y * 6 + x] = (uint8_t)(10 * x + 100 * y);
    float img[4];
    load_single(img, px, 6, 2, 2, 2);
    const uint8_t want[4] = {20, 30, 120, 130};
    for (int i = 0; i < 4; i++) cr_assert(img[i] == (float)want[i] / 255.0f, "px %d: %g", i, (double)img[i] * 255);
    /* 2 wide x 6 high: rows 2 and 3. */
    for (int y = 0; y < 6; y++)
        for (int x = 0; x < 2; x++) px[y * 2 + x] = (uint8_t)(10 * y + 100 * x);
    load_single(img, px, 2, 6, 2, 2);
    const uint8_t want2[4] = {20, 120, 30, 130};
    for (int i = 0; i < 4; i++) cr_assert(img[i] == (float)want2[i] / 255.0f, "px %d: %g", i, (double)img[i] * 255);
}

Test(data_images, bilinear_upscale_geometry)
{
    /* 2x2 -> 4x4: half-pixel centres, weights 1 | 3/4 1/4 | 1/4 3/4 | 1 per
     * axis (the border clamps), as bilinear with align_corners=False. */
    const uint8_t px[4] = {0, 100, 200, 40};
    float img[16];
    load_single(img, px, 2, 2, 4, 4);
    const float wa[4] = {1, 0.75f, 0.25f, 0};
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 4; x++) {
            float top = wa[x] * px[0] + (1 - wa[x]) * px[1], bot = wa[x] * px[2] + (1 - wa[x]) * px[3];
            float want = (wa[y] * top + (1 - wa[y]) * bot) / 255.0f;
            cr_assert_float_eq(img[y * 4 + x], want, 1e-6, "(%d,%d): %g want %g", x, y, (double)img[y * 4 + x] * 255,
                               (double)want * 255);
        }
}

Test(data_images, antialiased_downscale_geometry)
{
    /* 4x4 -> 2x2, columns 0 40 80 120: the triangle is two source pixels
     * wide, so output 0 (centre 1.0) weighs pixels 0,1,2 by .75,.75,.25. */
    uint8_t px[16];
    for (int i = 0; i < 16; i++) px[i] = (uint8_t)(40 * (i % 4));
    float img[4];
    load_single(img, px, 4, 4, 2, 2);
    float left = (0.75f * 0 + 0.75f * 40 + 0.25f * 80) / 1.75f, right = (0.25f * 40 + 0.75f * 80 + 0.75f * 120) / 1.75f;
    for (int y = 0; y < 2; y++) {
        cr_assert_float_eq(img[y * 2 + 0] * 255, left, 1e-3, "%g", (double)img[y * 2] * 255);
        cr_assert_float_eq(img[y * 2 + 1] * 255, right, 1e-3, "%g", (double)img[y * 2 + 1] * 255);
    }
    /* A constant image stays constant at any scale. */
    uint8_t flat[35];
    memset(flat, 77, sizeof flat);
    float big[9 * 13];
    load_single(big, flat, 7, 5, 13, 9);
    for (int i = 0; i < 9 * 13; i++) cr_assert_float_eq(big[i], 77 / 255.0f, 1e-6);
    load_single(big, flat, 7, 5, 3, 2);
    for (int i = 0; i < 6; i++) cr_assert_float_eq(big[i], 77 / 255.0f, 1e-6);
}

Test(data_images, empty_and_missing_folders)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    rm_image_options o = opts(3, 4, 4);
    expect_open_error(dir, &o, RM_ERR_IO, dir, "no class sub-folders");
    expect_open_error(fx_path(p, dir, "nope"), &o, RM_ERR_IO, "nope", "cannot open folder");
    fx_write_png(dir, "a/x.png", 2, 2, 3, rgb2x2);
    fx_mkdir(dir, "b");
    fx_write(dir, "b/readme.txt", "x", 1);
    expect_open_error(dir, &o, RM_ERR_IO, "/b", "class folder has no images");
    fx_rmtree(dir);
}

Test(data_images, corrupt_truncated_and_empty_files)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    rm_image_options o = opts(3, 4, 4);
    fx_write(dir, "a/junk.png", "this is not a png file at all", 29);
    expect_open_error(dir, &o, RM_ERR_PARSE, "a/junk.png", "not a readable image");
    fx_rmtree(dir);

    fx_tmpdir(dir);
    fx_write(dir, "a/empty.png", "", 0);
    expect_open_error(dir, &o, RM_ERR_PARSE, "a/empty.png", "empty file");
    fx_rmtree(dir);

    /* A valid header with its pixel data cut: open succeeds (headers only),
     * loading names the file; validate catches it up front. */
    fx_tmpdir(dir);
    uint8_t px[64 * 64 * 3];
    for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 7919 % 251);
    fx_write_png(dir, "a/good.png", 64, 64, 3, px);
    size_t n;
    uint8_t *raw = fx_read(fx_path(p, dir, "a/good.png"), &n);
    fx_write(dir, "a/torn.png", raw, n / 2);
    free(raw);
    rm_dataset *ds = open_ok(dir, &o);
    float img[48];
    int32_t lab;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 0, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 1, &e), RM_ERR_PARSE);
    cr_assert(strstr(e.msg, "a/torn.png") && strstr(e.msg, "corrupt image"), "%s", e.msg);
    rm_err_clear(&e);
    cr_assert_eq(rm_dataset_validate(ds, &e), RM_ERR_PARSE);
    cr_assert(strstr(e.msg, "a/torn.png"), "%s", e.msg);
    /* A file replaced after open is noticed, not misread. */
    fx_write(dir, "a/good.png", px, 100);
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 0, &e), RM_ERR_IO);
    cr_assert(strstr(e.msg, "a/good.png") && strstr(e.msg, "changed"), "%s", e.msg);
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_images, oversized_headers_refused_before_decoding)
{
    char dir[FX_PATH];
    rm_image_options o = opts(3, 4, 4);
    fx_tmpdir(dir);
    fx_write_png_header_only(dir, "a/wide.png", 20000, 10);
    expect_open_error(dir, &o, RM_ERR_PARSE, "a/wide.png", "sides above 16384");
    fx_rmtree(dir);

    fx_tmpdir(dir);
    fx_write_png_header_only(dir, "a/huge.png", 16000, 16000);
    expect_open_error(dir, &o, RM_ERR_PARSE, "a/huge.png", "above the limit");
    fx_rmtree(dir);

    fx_tmpdir(dir);
    fx_write_png_header_only(dir, "a/zero.png", 0, 10);
    expect_open_error(dir, &o, RM_ERR_PARSE, "a/zero.png", "zero.png");
    fx_rmtree(dir);

    /* The caller's own pixel limit. */
    fx_tmpdir(dir);
    uint8_t px[8 * 8 * 3] = {0};
    fx_write_png(dir, "a/small.png", 8, 8, 3, px);
    o.max_pixels = 63;
    expect_open_error(dir, &o, RM_ERR_PARSE, "a/small.png", "8x8 = 64 pixels, above the limit of 63");
    o.max_pixels = 64;
    rm_dataset_free(open_ok(dir, &o));
    fx_rmtree(dir);
}

Test(data_images, jpeg_decodes_and_bad_huffman_tables_are_refused)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    uint8_t px[16 * 16 * 3];
    memset(px, 128, sizeof px);
    fx_write_jpg(dir, "a/flat.jpg", 16, 16, 3, px);
    rm_image_options o;
    rm_image_options_default(&o, 3, 8, 8);
    for (int k = 0; k < 3; k++) o.mean[k] = 0, o.std[k] = 1;
    rm_dataset *ds = open_ok(dir, &o);
    float img[3 * 64];
    int32_t lab;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 0, &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < 3 * 64; i++) cr_assert_float_eq(img[i] * 255, 128, 2, "%g", (double)img[i] * 255);
    rm_dataset_free(ds);

    /* A DHT segment declaring 300 symbols: stb_image 2.27 would write past
     * its 256-entry tables; it must be refused before stb_image reads it. */
    uint8_t jpg[4 + 2 + 17 + 300 + 2] = {0xFF, 0xD8, 0xFF, 0xC4, 0x01, 0x3F, 0x00};
    jpg[6 + 15] = 45, jpg[6 + 16] = 255;
    jpg[sizeof jpg - 2] = 0xFF, jpg[sizeof jpg - 1] = 0xD9;
    fx_write(dir, "a/evil.jpg", jpg, sizeof jpg);
    rm_image_options o3 = opts(3, 8, 8);
    expect_open_error(dir, &o3, RM_ERR_PARSE, "a/evil.jpg", "more than 256 symbols");
    fx_rmtree(dir);
}

/* A scan that selects Huffman tables the file never defines: stb_image 2.27
 * would decode with whatever its uncleared tables held, which made it read
 * outside them (found by fuzzing); refused before stb_image reads it. */
Test(data_images, jpeg_scan_with_undefined_huffman_table_is_refused)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    uint8_t px[16 * 16 * 3];
    memset(px, 128, sizeof px);
    fx_write_jpg(dir, "a/x.jpg", 16, 16, 3, px);
    size_t n, sos = 0;
    uint8_t *jpg = fx_read(fx_path(p, dir, "a/x.jpg"), &n);
    for (size_t i = 0; i + 7 < n && !sos; i++)
        if (jpg[i] == 0xFF && jpg[i + 1] == 0xDA) sos = i;
    cr_assert(sos, "no scan header");
    jpg[sos + 6] = 0x22; /* FF DA, length, count, id, then the first component's tables: DC 2, AC 2 */
    fx_write(dir, "a/x.jpg", jpg, n);
    free(jpg);
    rm_image_options o = opts(3, 8, 8);
    rm_dataset *ds = open_ok(dir, &o); /* the header is sound: opening reads no further */
    float img[3 * 64];
    int32_t lab;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_load(ds, img, &lab, 0, &e), RM_ERR_PARSE, "%s", e.msg);
    cr_assert(strstr(e.msg, "a/x.jpg") && strstr(e.msg, "DC Huffman table that was never defined"), "%s", e.msg);
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_images, bad_options)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    fx_write_png(dir, "a/x.png", 2, 2, 3, rgb2x2);
    rm_image_options o = opts(2, 4, 4);
    expect_open_error(dir, &o, RM_ERR_INVALID, dir, "1 or 3 channels");
    o = opts(3, 0, 4);
    expect_open_error(dir, &o, RM_ERR_INVALID, dir, "input size");
    o = opts(3, 4, 4);
    o.std[1] = 0;
    expect_open_error(dir, &o, RM_ERR_INVALID, dir, "std");
    fx_rmtree(dir);
}

Test(data_images, open_dir_uses_split_folders)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    fx_write_png(dir, "train/a/1.png", 2, 2, 3, rgb2x2);
    fx_write_png(dir, "train/b/1.png", 2, 2, 3, rgb2x2);
    fx_write_png(dir, "train/b/2.png", 2, 2, 3, rgb2x2);
    fx_write_png(dir, "val/a/1.png", 2, 2, 3, rgb2x2);
    fx_write_png(dir, "val/b/1.png", 2, 2, 3, rgb2x2);
    rm_image_options o = opts(3, 2, 2);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TRAIN, &o, 0, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(ds->info.kind, "image-folder");
    cr_assert_eq(ds->info.count, 3);
    rm_dataset_free(ds);
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TEST, &o, 0, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(ds->info.count, 2);
    rm_dataset_free(ds);
    fx_rmtree(dir);
}
