/* Synthetic datasets: reproducible from the seed, shaped as asked, labels in
 * range, and learnable (a nearest-class-mean classifier, i.e. one linear
 * layer that any small CNN contains, reaches high accuracy). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"

static rm_dataset *make(rm_task task, int64_t count, int c, int h, int w, int classes, uint64_t seed, float noise)
{
    rm_synthetic_options o;
    rm_synthetic_options_default(&o, task, count, c, h, w, classes);
    o.seed = seed;
    o.noise = noise;
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_synthetic_create(&ds, &o, &e), RM_OK, "%s", e.msg);
    return ds;
}

Test(data_synthetic, info_and_reproducible_from_seed)
{
    rm_dataset *a = make(RM_TASK_CLASSIFICATION, 50, 3, 8, 6, 5, 7, 0.5f);
    rm_dataset *b = make(RM_TASK_CLASSIFICATION, 50, 3, 8, 6, 5, 7, 0.5f);
    rm_dataset *c = make(RM_TASK_CLASSIFICATION, 50, 3, 8, 6, 5, 8, 0.5f);
    cr_assert_eq(a->info.count, 50);
    cr_assert_eq(a->info.c, 3);
    cr_assert_eq(a->info.h, 8);
    cr_assert_eq(a->info.w, 6);
    cr_assert_eq(a->info.classes, 5);
    cr_assert_eq(rm_dataset_label_count(a), 1);
    cr_assert_eq(rm_dataset_image_numel(a), 144);
    float x[144], y[144], z[144];
    int32_t lx, ly, lz;
    rm_err e = {0};
    int differs = 0, seen[5] = {0};
    for (int64_t i = 0; i < 50; i++) {
        cr_assert_eq(rm_dataset_load(a, x, &lx, i, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_dataset_load(b, y, &ly, i, &e), RM_OK);
        cr_assert_eq(rm_dataset_load(c, z, &lz, i, &e), RM_OK);
        cr_assert_eq(lx, ly);
        cr_assert(memcmp(x, y, sizeof x) == 0, "same seed, sample %lld differs", (long long)i);
        differs += memcmp(x, z, sizeof x) != 0;
        cr_assert(lx >= 0 && lx < 5);
        seen[lx]++;
        for (int k = 0; k < 144; k++) cr_assert(isfinite(x[k]));
    }
    cr_assert_eq(differs, 50, "another seed must give other samples");
    for (int k = 0; k < 5; k++) cr_assert_gt(seen[k], 0, "class %d never drawn in 50 samples", k);
    /* Loading out of order gives the same sample: a pure function of index. */
    cr_assert_eq(rm_dataset_load(a, y, &ly, 3, &e), RM_OK);
    cr_assert_eq(rm_dataset_load(a, x, &lx, 49, &e), RM_OK);
    cr_assert_eq(rm_dataset_load(a, x, &lx, 3, &e), RM_OK);
    cr_assert(memcmp(x, y, sizeof x) == 0 && lx == ly);
    cr_assert_neq(rm_dataset_load(a, x, &lx, 50, &e), RM_OK);
    cr_assert_neq(rm_dataset_load(a, x, &lx, -1, &e), RM_OK);
    rm_dataset_free(a);
    rm_dataset_free(b);
    rm_dataset_free(c);
}

/* Nearest class mean on half the samples, scored on the other half. */
Test(data_synthetic, classification_is_learnable)
{
    const int k = 6, n = 600, c = 1, h = 12, w = 12, d = c * h * w;
    rm_dataset *ds = make(RM_TASK_CLASSIFICATION, n, c, h, w, k, 3, 1.0f);
    float *x = malloc((size_t)n * d * sizeof *x), *mean = calloc((size_t)k * d, sizeof *mean);
    int32_t *y = malloc((size_t)n * sizeof *y);
    int count[6] = {0};
    rm_err e = {0};
    for (int i = 0; i < n; i++) cr_assert_eq(rm_dataset_load(ds, x + (size_t)i * d, y + i, i, &e), RM_OK);
    for (int i = 0; i < n / 2; i++) {
        count[y[i]]++;
        for (int j = 0; j < d; j++) mean[y[i] * d + j] += x[(size_t)i * d + j];
    }
    for (int q = 0; q < k; q++)
        for (int j = 0; j < d; j++) mean[q * d + j] /= (float)(count[q] ? count[q] : 1);
    int right = 0;
    for (int i = n / 2; i < n; i++) {
        int best = 0;
        double best_d = INFINITY;
        for (int q = 0; q < k; q++) {
            double s = 0;
            for (int j = 0; j < d; j++) s += pow(x[(size_t)i * d + j] - mean[q * d + j], 2);
            if (s < best_d) best_d = s, best = q;
        }
        right += best == y[i];
    }
    double acc = (double)right / (n / 2);
    cr_assert_gt(acc, 0.9, "nearest-mean accuracy %.3f: the task must be learnable", acc);
    free(x), free(mean), free(y);
    rm_dataset_free(ds);
}

Test(data_synthetic, segmentation_masks_and_learnable_pixels)
{
    const int k = 4, n = 40, c = 3, h = 16, w = 20, hw = h * w;
    rm_dataset *ds = make(RM_TASK_SEGMENTATION, n, c, h, w, k, 11, 0.2f);
    cr_assert_eq(ds->info.task, RM_TASK_SEGMENTATION);
    cr_assert_eq(rm_dataset_label_count(ds), (size_t)hw);
    float *x = malloc((size_t)n * c * hw * sizeof *x);
    int32_t *m = malloc((size_t)n * hw * sizeof *m);
    rm_err e = {0};
    int fg_samples = 0;
    for (int i = 0; i < n; i++) {
        cr_assert_eq(rm_dataset_load(ds, x + (size_t)i * c * hw, m + (size_t)i * hw, i, &e), RM_OK, "%s", e.msg);
        int bg = 0, fg = 0;
        for (int p = 0; p < hw; p++) {
            int32_t v = m[(size_t)i * hw + p];
            cr_assert(v >= 0 && v < k, "mask value %d", v);
            bg += v == 0, fg += v != 0;
        }
        fg_samples += fg > 0 && bg > 0;
    }
    cr_assert_gt(fg_samples, n / 2, "most samples show shapes on a background");
    /* Per-pixel class mean colours from the first half, scored on the rest. */
    double mean[4][3] = {{0}}, cnt[4] = {0};
    for (int i = 0; i < n / 2; i++)
        for (int p = 0; p < hw; p++) {
            int q = m[(size_t)i * hw + p];
            cnt[q]++;
            for (int ch = 0; ch < c; ch++) mean[q][ch] += x[((size_t)i * c + ch) * hw + p];
        }
    for (int q = 0; q < k; q++)
        for (int ch = 0; ch < c; ch++) mean[q][ch] /= cnt[q] ? cnt[q] : 1;
    long right = 0, total = 0;
    for (int i = n / 2; i < n; i++)
        for (int p = 0; p < hw; p++) {
            int best = 0;
            double best_d = INFINITY;
            for (int q = 0; q < k; q++) {
                double s = 0;
                for (int ch = 0; ch < c; ch++) s += pow(x[((size_t)i * c + ch) * hw + p] - mean[q][ch], 2);
                if (s < best_d) best_d = s, best = q;
            }
            right += best == m[(size_t)i * hw + p], total++;
        }
    double acc = (double)right / (double)total;
    cr_assert_gt(acc, 0.95, "per-pixel nearest-colour accuracy %.3f", acc);
    free(x), free(m);
    rm_dataset_free(ds);
}

Test(data_synthetic, rejects_bad_options)
{
    rm_synthetic_options o;
    rm_dataset *ds;
    rm_err e = {0};
    rm_synthetic_options_default(&o, RM_TASK_CLASSIFICATION, 10, 3, 8, 8, 1);
    cr_assert_eq(rm_dataset_synthetic_create(&ds, &o, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "classes"), "%s", e.msg);
    rm_synthetic_options_default(&o, RM_TASK_CLASSIFICATION, 0, 3, 8, 8, 4);
    cr_assert_eq(rm_dataset_synthetic_create(&ds, &o, &e), RM_ERR_INVALID);
    rm_synthetic_options_default(&o, RM_TASK_CLASSIFICATION, 10, 0, 8, 8, 4);
    cr_assert_eq(rm_dataset_synthetic_create(&ds, &o, &e), RM_ERR_INVALID);
    rm_synthetic_options_default(&o, RM_TASK_CLASSIFICATION, 10, 3, 8, 8, 4);
    o.noise = -1;
    cr_assert_eq(rm_dataset_synthetic_create(&ds, &o, &e), RM_ERR_INVALID);
    o.noise = NAN;
    cr_assert_eq(rm_dataset_synthetic_create(&ds, &o, &e), RM_ERR_INVALID);
    cr_assert_null(ds);
}

Test(data_synthetic, describe_and_class_names)
{
    rm_dataset *ds = make(RM_TASK_CLASSIFICATION, 10, 3, 4, 4, 3, 1, 0.1f);
    char buf[256], nb[16];
    rm_dataset_describe(ds, buf, sizeof buf);
    cr_assert(strstr(buf, "10 samples") && strstr(buf, "3x4x4") && strstr(buf, "3 classes"), "%s", buf);
    cr_assert_str_eq(rm_dataset_class_name(ds, 2, nb, sizeof nb), "2");
    rm_err e = {0};
    cr_assert_eq(rm_dataset_validate(ds, &e), RM_OK, "%s", e.msg);
    rm_dataset_free(ds);
}
