/* Segmentation pairs: matching by name, mask values carried exactly, masks
 * cropped like their images with nearest-neighbour sampling, 16-bit masks,
 * and every error (missing partner, size mismatch, value out of range,
 * colour or lossy masks). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "data_fixtures.h"
#include "dataset.h"

static rm_image_options raw_opts(int c, int h, int w)
{
    rm_image_options o;
    rm_image_options_default(&o, c, h, w);
    for (int k = 0; k < 3; k++) o.mean[k] = 0, o.std[k] = 1;
    return o;
}

static void expect_open_error(const char *root, int classes, rm_code code, const char *file, const char *what)
{
    rm_image_options o = raw_opts(1, 4, 4);
    rm_dataset *ds = (rm_dataset *)1;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_segmentation_open(&ds, root, classes, &o, &e), (int)code, "%s", e.msg);
    cr_assert_null(ds);
    cr_assert(strstr(e.msg, file), "message '%s' should name %s", e.msg, file);
    cr_assert(strstr(e.msg, what), "message '%s' should say '%s'", e.msg, what);
}

Test(data_segmentation, pairs_by_name_with_exact_values)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    uint8_t img[16], mask[16];
    for (int i = 0; i < 16; i++) img[i] = (uint8_t)(i * 16), mask[i] = (uint8_t)(i % 3);
    fx_write_png(dir, "images/b.png", 4, 4, 1, img);
    fx_write_png(dir, "masks/b.png", 4, 4, 1, mask);
    fx_write_bmp(dir, "images/a-1.bmp", 4, 4, 1, img); /* other extension, same name */
    for (int i = 0; i < 16; i++) mask[i] = (uint8_t)(2 - i % 3);
    fx_write_png(dir, "masks/a-1.png", 4, 4, 1, mask);
    fx_write(dir, "masks/README", "x", 1); /* not an image: ignored */
    rm_image_options o = raw_opts(1, 4, 4);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_segmentation_open(&ds, dir, 3, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(ds->info.count, 2);
    cr_assert_eq(ds->info.task, RM_TASK_SEGMENTATION);
    cr_assert_eq(ds->info.classes, 3);
    cr_assert_eq(rm_dataset_label_count(ds), 16);
    float x[16];
    int32_t m[16];
    /* Sorted by name: a-1 first. */
    cr_assert_eq(rm_dataset_load(ds, x, m, 0, &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < 16; i++) {
        cr_assert_eq(m[i], 2 - i % 3, "a-1 pixel %d", i);
        cr_assert(x[i] == (float)img[i] / 255.0f);
    }
    cr_assert_eq(rm_dataset_load(ds, x, m, 1, &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < 16; i++) cr_assert_eq(m[i], i % 3, "b pixel %d", i);
    cr_assert_eq(rm_dataset_validate(ds, &e), RM_OK, "%s", e.msg);
    rm_dataset_free(ds);
    /* Detection by content. */
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TRAIN, &o, 3, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(ds->info.kind, "segmentation");
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_segmentation, mask_follows_the_image_crop)
{
    /* 8 wide x 4 high to 2x2: the height binds (scale 1/2), the window is
     * columns [2, 6) of the source. Nearest neighbour picks source columns
     * 3 and 5 and rows 1 and 3 for the mask. */
    char dir[FX_PATH];
    fx_tmpdir(dir);
    uint8_t img[32], mask[32];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 8; x++) img[y * 8 + x] = (uint8_t)(x * 20 + y * 3), mask[y * 8 + x] = (uint8_t)(y * 8 + x);
    fx_write_png(dir, "images/p.png", 8, 4, 1, img);
    fx_write_png(dir, "masks/p.png", 8, 4, 1, mask);
    rm_image_options o = raw_opts(1, 2, 2);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_segmentation_open(&ds, dir, 32, &o, &e), RM_OK, "%s", e.msg);
    float x[4];
    int32_t m[4];
    cr_assert_eq(rm_dataset_load(ds, x, m, 0, &e), RM_OK, "%s", e.msg);
    const int32_t want[4] = {1 * 8 + 3, 1 * 8 + 5, 3 * 8 + 3, 3 * 8 + 5};
    for (int i = 0; i < 4; i++) cr_assert_eq(m[i], want[i], "label %d: %d want %d", i, m[i], want[i]);
    /* Output (0,0) is centred on source (x 3.0, y 1.0) with a triangle two
     * source pixels wide: columns 1-4 weigh .25 .75 .75 .25 (sum 2), rows
     * 0-2 weigh .75 .75 .25 (row -1 is outside the image; sum 1.75). */
    const float wx[4] = {0.125f, 0.375f, 0.375f, 0.125f};
    const float wy[3] = {0.75f / 1.75f, 0.75f / 1.75f, 0.25f / 1.75f};
    float v = 0;
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++) v += wy[r] * wx[c] * (float)img[r * 8 + 1 + c];
    cr_assert_float_eq(x[0] * 255, v, 1e-3, "%g want %g", (double)x[0] * 255, (double)v);
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_segmentation, sixteen_bit_masks_keep_their_values)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    uint8_t img[6] = {0};
    uint16_t mask[6] = {0, 1, 2, 300, 299, 5};
    fx_write_png(dir, "images/s.png", 3, 2, 1, img);
    fx_write_png16(dir, "masks/s.png", 3, 2, mask);
    rm_image_options o = raw_opts(3, 2, 3);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_segmentation_open(&ds, dir, 301, &o, &e), RM_OK, "%s", e.msg);
    float x[18];
    int32_t m[6];
    cr_assert_eq(rm_dataset_load(ds, x, m, 0, &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < 6; i++) cr_assert_eq(m[i], mask[i], "pixel %d: %d", i, m[i]);
    rm_dataset_free(ds);
    /* With fewer classes, 300 is out of range. */
    cr_assert_eq(rm_dataset_segmentation_open(&ds, dir, 300, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_dataset_load(ds, x, m, 0, &e), RM_ERR_PARSE);
    cr_assert(strstr(e.msg, "masks/s.png") && strstr(e.msg, "(x 0, y 1) has value 300"), "%s", e.msg);
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_segmentation, mask_value_out_of_range_names_pixel)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    uint8_t img[16] = {0}, mask[16] = {0};
    mask[2 * 4 + 3] = 4; /* x 3, y 2: outside [0, 4) */
    fx_write_png(dir, "images/q.png", 4, 4, 1, img);
    fx_write_png(dir, "masks/q.png", 4, 4, 1, mask);
    /* Tiny output: the bad pixel is not even sampled, it is still an error. */
    rm_image_options o = raw_opts(1, 1, 1);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_segmentation_open(&ds, dir, 4, &o, &e), RM_OK, "%s", e.msg);
    float x[1];
    int32_t m[1];
    cr_assert_eq(rm_dataset_load(ds, x, m, 0, &e), RM_ERR_PARSE);
    cr_assert(strstr(e.msg, "masks/q.png") && strstr(e.msg, "pixel (x 3, y 2) has value 4"), "%s", e.msg);
    rm_err_clear(&e);
    cr_assert_eq(rm_dataset_validate(ds, &e), RM_ERR_PARSE);
    cr_assert(strstr(e.msg, "masks/q.png"), "%s", e.msg);
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_segmentation, pairing_errors)
{
    char dir[FX_PATH];
    uint8_t px[16] = {0};
    fx_tmpdir(dir);
    fx_write_png(dir, "images/a.png", 4, 4, 1, px);
    fx_write_png(dir, "images/b.png", 4, 4, 1, px);
    fx_write_png(dir, "masks/a.png", 4, 4, 1, px);
    expect_open_error(dir, 2, RM_ERR_IO, "images/b.png", "no mask of the same name");
    fx_write_png(dir, "masks/b.png", 4, 4, 1, px);
    fx_write_png(dir, "masks/c.png", 4, 4, 1, px);
    expect_open_error(dir, 2, RM_ERR_IO, "masks/c.png", "no image of the same name");
    fx_write_png(dir, "images/c.png", 4, 4, 1, px);
    fx_write_png(dir, "images/c.bmp", 4, 4, 1, px);
    expect_open_error(dir, 2, RM_ERR_PARSE, "c.bmp and c.png", "same name");
    fx_rmtree(dir);

    fx_tmpdir(dir);
    fx_mkdir(dir, "images");
    expect_open_error(dir, 2, RM_ERR_IO, "masks", "cannot open folder");
    fx_mkdir(dir, "masks");
    expect_open_error(dir, 2, RM_ERR_IO, "images", "no images");
    expect_open_error(dir, 1, RM_ERR_INVALID, dir, "2 to 65536");
    fx_rmtree(dir);
}

Test(data_segmentation, mask_format_errors)
{
    char dir[FX_PATH];
    uint8_t px[4 * 4 * 3] = {0};
    fx_tmpdir(dir);
    fx_write_png(dir, "images/a.png", 4, 4, 3, px);
    fx_write_png(dir, "masks/a.png", 4, 3, 1, px);
    expect_open_error(dir, 2, RM_ERR_PARSE, "masks/a.png", "mask is 4x3 but its image");
    fx_write_png(dir, "masks/a.png", 4, 4, 3, px);
    expect_open_error(dir, 2, RM_ERR_PARSE, "masks/a.png", "mask has 3 channels");
    fx_write(dir, "masks/a.png", "garbage!", 8);
    expect_open_error(dir, 2, RM_ERR_PARSE, "masks/a.png", "not a readable image");
    remove(fx_path((char[FX_PATH]){0}, dir, "masks/a.png"));
    fx_write(dir, "masks/a.jpg", "whatever", 8);
    expect_open_error(dir, 2, RM_ERR_PARSE, "masks/a.jpg", "lossless");
    fx_rmtree(dir);

    fx_tmpdir(dir);
    fx_write_png(dir, "images/a.png", 4, 4, 3, px);
    fx_write_png_header_only(dir, "masks/a.png", 20000, 4);
    expect_open_error(dir, 2, RM_ERR_PARSE, "masks/a.png", "sides above 16384");
    fx_rmtree(dir);
}
