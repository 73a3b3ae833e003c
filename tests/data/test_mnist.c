/* MNIST idx files written by hand: exact decoded values and labels, the
 * folder layout, and one malformed file per error, each named in the
 * message. */
#include <criterion/criterion.h>
#include <string.h>

#include "data_fixtures.h"
#include "dataset.h"

#define ROWS 4
#define COLS 5
#define N 3

static uint8_t pixels[N * ROWS * COLS];
static const uint8_t labels[N] = {7, 0, 9};

static void fill_pixels(void)
{
    for (int i = 0; i < N * ROWS * COLS; i++) pixels[i] = (uint8_t)(i * 37 + 11);
    pixels[0] = 0, pixels[1] = 255;
}

static void write_good(const char *dir, const char *images, const char *lab)
{
    fill_pixels();
    fx_write_idx3(dir, images, 0x803, N, ROWS, COLS, pixels);
    fx_write_idx1(dir, lab, 0x801, N, labels);
}

/* Opens dir/images + dir/labels expecting failure whose message names file. */
static void expect_error(const char *dir, const char *images, const char *lab, rm_code code, const char *file,
                         const char *what)
{
    char pi[FX_PATH], pl[FX_PATH];
    rm_dataset *ds = (rm_dataset *)1;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_mnist_open(&ds, fx_path(pi, dir, images), fx_path(pl, dir, lab), &e), (int)code, "%s",
                 e.msg);
    cr_assert_null(ds);
    cr_assert(strstr(e.msg, file), "message '%s' should name %s", e.msg, file);
    cr_assert(strstr(e.msg, what), "message '%s' should say '%s'", e.msg, what);
}

Test(data_mnist, decodes_values_exactly)
{
    char dir[FX_PATH], pi[FX_PATH], pl[FX_PATH];
    fx_tmpdir(dir);
    write_good(dir, "img", "lab");
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_mnist_open(&ds, fx_path(pi, dir, "img"), fx_path(pl, dir, "lab"), &e), RM_OK, "%s", e.msg);
    cr_assert_eq(ds->info.count, N);
    cr_assert_eq(ds->info.c, 1);
    cr_assert_eq(ds->info.h, ROWS);
    cr_assert_eq(ds->info.w, COLS);
    cr_assert_eq(ds->info.classes, 10);
    cr_assert_eq(ds->info.task, RM_TASK_CLASSIFICATION);
    float img[ROWS * COLS];
    int32_t lab;
    for (int i = 0; i < N; i++) {
        cr_assert_eq(rm_dataset_load(ds, img, &lab, i, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(lab, labels[i]);
        for (int p = 0; p < ROWS * COLS; p++) {
            float want = ((float)pixels[i * ROWS * COLS + p] / 255.0f - 0.1307f) / 0.3081f;
            cr_assert(img[p] == want, "sample %d pixel %d: %.9g, want %.9g", i, p, (double)img[p], (double)want);
        }
    }
    cr_assert(img[0] != img[1]);
    char nb[16];
    cr_assert_str_eq(rm_dataset_class_name(ds, 7, nb, sizeof nb), "7");
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_mnist, opens_folder_by_split)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    write_good(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte");
    /* A one-image test split with the dotted spelling of some mirrors. */
    fx_write_idx3(dir, "t10k-images.idx3-ubyte", 0x803, 1, ROWS, COLS, pixels);
    fx_write_idx1(dir, "t10k-labels.idx1-ubyte", 0x801, 1, labels);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_mnist_open_dir(&ds, dir, RM_SPLIT_TRAIN, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(ds->info.count, N);
    rm_dataset_free(ds);
    cr_assert_eq(rm_dataset_mnist_open_dir(&ds, dir, RM_SPLIT_TEST, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(ds->info.count, 1);
    rm_dataset_free(ds);
    /* Detection by content. */
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TRAIN, NULL, 0, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(ds->info.kind, "mnist");
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_mnist, missing_files)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    write_good(dir, "img", "lab");
    expect_error(dir, "nope", "lab", RM_ERR_IO, "nope", "cannot open");
    expect_error(dir, "img", "nolabels", RM_ERR_IO, "nolabels", "cannot open");
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_mnist_open_dir(&ds, dir, RM_SPLIT_TRAIN, &e), RM_ERR_IO);
    cr_assert(strstr(e.msg, "train-images-idx3-ubyte"), "%s", e.msg);
    fx_rmtree(dir);
}

Test(data_mnist, wrong_magic)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    write_good(dir, "img", "lab");
    fx_write_idx3(dir, "bad_img", 0x801, N, ROWS, COLS, pixels);
    fx_write_idx1(dir, "bad_lab", 0x803, N, labels);
    expect_error(dir, "bad_img", "lab", RM_ERR_PARSE, "bad_img", "magic 0x00000801");
    expect_error(dir, "img", "bad_lab", RM_ERR_PARSE, "bad_lab", "magic 0x00000803");
    /* Labels passed as images and the other way round. */
    expect_error(dir, "lab", "img", RM_ERR_PARSE, "lab", "magic");
    fx_rmtree(dir);
}

Test(data_mnist, truncated_and_oversized_files)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    write_good(dir, "img", "lab");
    size_t n;
    uint8_t *img = fx_read(fx_path(p, dir, "img"), &n);
    uint8_t *lab = fx_read(fx_path(p, dir, "lab"), &n);
    fx_write(dir, "img_cut", img, 16 + N * ROWS * COLS - 1);
    fx_write(dir, "img_hdr", img, 10);
    fx_write(dir, "lab_cut", lab, 8 + N - 1);
    fx_write(dir, "lab_hdr", lab, 5);
    fx_write(dir, "empty", img, 0);
    uint8_t big[16 + N * ROWS * COLS + 3] = {0};
    memcpy(big, img, 16 + N * ROWS * COLS);
    fx_write(dir, "img_long", big, sizeof big);
    expect_error(dir, "img_cut", "lab", RM_ERR_PARSE, "img_cut", "truncated");
    expect_error(dir, "img_hdr", "lab", RM_ERR_PARSE, "img_hdr", "truncated");
    expect_error(dir, "empty", "lab", RM_ERR_PARSE, "empty", "truncated");
    expect_error(dir, "img_long", "lab", RM_ERR_PARSE, "img_long", "trailing bytes");
    expect_error(dir, "img", "lab_cut", RM_ERR_PARSE, "lab_cut", "truncated");
    expect_error(dir, "img", "lab_hdr", RM_ERR_PARSE, "lab_hdr", "truncated");
    free(img), free(lab);
    fx_rmtree(dir);
}

Test(data_mnist, count_mismatch_bad_dims_and_label_range)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    write_good(dir, "img", "lab");
    fx_write_idx1(dir, "lab2", 0x801, 2, labels);
    expect_error(dir, "img", "lab2", RM_ERR_PARSE, "img", "3 images but");
    const uint8_t bad[N] = {1, 10, 2};
    fx_write_idx1(dir, "lab10", 0x801, N, bad);
    expect_error(dir, "img", "lab10", RM_ERR_PARSE, "lab10", "label 10 of item 1");
    fx_write_idx3(dir, "img0", 0x803, 0, ROWS, COLS, pixels);
    expect_error(dir, "img0", "lab", RM_ERR_PARSE, "img0", "positive count");
    fx_write_idx3(dir, "imgw", 0x803, 1, 0, COLS, pixels);
    expect_error(dir, "imgw", "lab", RM_ERR_PARSE, "imgw", "0x5");
    /* A huge header count must fail on the size, not try to allocate it. */
    fx_write_idx3(dir, "imgbig", 0x803, N, ROWS, COLS, pixels);
    char p[FX_PATH];
    size_t n;
    uint8_t *raw = fx_read(fx_path(p, dir, "imgbig"), &n);
    raw[4] = 0x7f;
    fx_write(dir, "imgbig", raw, n);
    free(raw);
    expect_error(dir, "imgbig", "lab", RM_ERR_PARSE, "imgbig", "truncated");
    fx_rmtree(dir);
}
