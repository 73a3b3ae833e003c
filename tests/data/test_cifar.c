/* CIFAR-10 binary batches written by hand: exact values per channel plane,
 * labels, files concatenated in order, the folder layout, and every error
 * naming its file. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "data_fixtures.h"
#include "dataset.h"

#define REC 3073

/* Record r: label, then pixel i of channel ch = (r * 31 + ch * 7 + i) % 256. */
static void make_records(uint8_t *buf, int n, int first, const uint8_t *labels)
{
    for (int r = 0; r < n; r++) {
        uint8_t *rec = buf + (size_t)r * REC;
        rec[0] = labels[r];
        for (int ch = 0; ch < 3; ch++)
            for (int i = 0; i < 1024; i++) rec[1 + ch * 1024 + i] = (uint8_t)((first + r) * 31 + ch * 7 + i);
    }
}

static void write_batch(const char *dir, const char *rel, int n, int first, const uint8_t *labels)
{
    uint8_t *buf = malloc((size_t)n * REC);
    make_records(buf, n, first, labels);
    fx_write(dir, rel, buf, (size_t)n * REC);
    free(buf);
}

static void check_sample(rm_dataset *ds, int64_t index, int global, int label)
{
    static float img[3 * 1024];
    int32_t lab;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_load(ds, img, &lab, index, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(lab, label);
    for (int ch = 0; ch < 3; ch++)
        for (int i = 0; i < 1024; i++) {
            uint8_t p = (uint8_t)(global * 31 + ch * 7 + i);
            float want = ((float)p / 255.0f - rm_cifar10_mean[ch]) / rm_cifar10_std[ch];
            cr_assert(img[ch * 1024 + i] == want, "sample %lld ch %d px %d: %.9g want %.9g", (long long)index, ch, i,
                      (double)img[ch * 1024 + i], (double)want);
        }
}

Test(data_cifar, decodes_files_in_order)
{
    char dir[FX_PATH], a[FX_PATH], b[FX_PATH];
    fx_tmpdir(dir);
    const uint8_t la[2] = {3, 9}, lb[1] = {0};
    write_batch(dir, "a.bin", 2, 0, la);
    write_batch(dir, "b.bin", 1, 2, lb);
    const char *paths[2] = {fx_path(a, dir, "a.bin"), fx_path(b, dir, "b.bin")};
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_cifar10_open(&ds, paths, 2, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(ds->info.count, 3);
    cr_assert_eq(ds->info.c, 3);
    cr_assert_eq(ds->info.h, 32);
    cr_assert_eq(ds->info.w, 32);
    cr_assert_eq(ds->info.classes, 10);
    check_sample(ds, 0, 0, 3);
    check_sample(ds, 1, 1, 9);
    check_sample(ds, 2, 2, 0);
    char nb[16];
    cr_assert_str_eq(rm_dataset_class_name(ds, 3, nb, sizeof nb), "cat");
    cr_assert_str_eq(rm_dataset_class_name(ds, 9, nb, sizeof nb), "truck");
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

Test(data_cifar, opens_folder_by_split)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    const uint8_t l[2] = {1, 2};
    for (int i = 1; i <= 5; i++) {
        char name[64];
        snprintf(name, sizeof name, "cifar-10-batches-bin/data_batch_%d.bin", i);
        write_batch(dir, name, i == 5 ? 2 : 1, i - 1, l);
    }
    write_batch(dir, "cifar-10-batches-bin/test_batch.bin", 1, 6, l + 1);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_cifar10_open_dir(&ds, dir, RM_SPLIT_TRAIN, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(ds->info.count, 6);
    check_sample(ds, 3, 3, 1);
    check_sample(ds, 5, 5, 2); /* second record of data_batch_5 */
    rm_dataset_free(ds);
    cr_assert_eq(rm_dataset_open_dir(&ds, dir, RM_SPLIT_TEST, NULL, 0, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(ds->info.kind, "cifar10");
    cr_assert_eq(ds->info.count, 1);
    check_sample(ds, 0, 6, 2);
    rm_dataset_free(ds);
    /* A missing training batch is an error naming it, not a smaller set. */
    char p[FX_PATH];
    remove(fx_path(p, dir, "cifar-10-batches-bin/data_batch_3.bin"));
    ds = (rm_dataset *)1;
    cr_assert_eq(rm_dataset_cifar10_open_dir(&ds, dir, RM_SPLIT_TRAIN, &e), RM_ERR_IO);
    cr_assert_null(ds);
    cr_assert(strstr(e.msg, "data_batch_3.bin") && strstr(e.msg, "cannot open"), "%s", e.msg);
    fx_rmtree(dir);
}

static void expect_error(const char *path, rm_code code, const char *what)
{
    rm_dataset *ds = (rm_dataset *)1;
    rm_err e = {0};
    const char *paths[1] = {path};
    cr_assert_eq(rm_dataset_cifar10_open(&ds, paths, 1, &e), (int)code, "%s", e.msg);
    cr_assert_null(ds);
    cr_assert(strstr(e.msg, path), "message '%s' should name %s", e.msg, path);
    cr_assert(strstr(e.msg, what), "message '%s' should say '%s'", e.msg, what);
}

Test(data_cifar, errors_name_the_file)
{
    char dir[FX_PATH], p[FX_PATH];
    fx_tmpdir(dir);
    const uint8_t l[2] = {4, 5}, bad[2] = {4, 10};
    uint8_t *buf = malloc(2 * REC);
    make_records(buf, 2, 0, l);
    fx_write(dir, "cut.bin", buf, 2 * REC - 5);
    expect_error(fx_path(p, dir, "cut.bin"), RM_ERR_PARSE, "record 1 is truncated");
    fx_write(dir, "empty.bin", buf, 0);
    expect_error(fx_path(p, dir, "empty.bin"), RM_ERR_PARSE, "empty");
    make_records(buf, 2, 0, bad);
    fx_write(dir, "label.bin", buf, 2 * REC);
    expect_error(fx_path(p, dir, "label.bin"), RM_ERR_PARSE, "record 1 has label 10");
    expect_error(fx_path(p, dir, "missing.bin"), RM_ERR_IO, "cannot open");
    fx_mkdir(dir, "folder.bin");
    expect_error(fx_path(p, dir, "folder.bin"), RM_ERR_IO, "not a regular file");
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_cifar10_open(&ds, NULL, 0, &e), RM_ERR_INVALID);
    free(buf);
    fx_rmtree(dir);
}
