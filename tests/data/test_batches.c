/* The batch iterator: each epoch's order is a permutation reproducible from
 * (seed, epoch); the last-batch policies; batches hold exactly the samples
 * of the order; crop/flip keep masks aligned with images and are
 * reproducible; a failing sample fails the whole batch, naming its file. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "batcher.h"
#include "data_fixtures.h"
#include "dataset.h"

/* ---- Probe datasets built through the public vtable ---- */

/* Classification: pixel (ch, p) of sample i is 100*i + 10*ch + p, label i. */
#define PC 2
#define PH 3
#define PW 4
static int probe_load(void *ctx, float *image, int32_t *labels, int64_t index, rm_err *e)
{
    (void)ctx, (void)e;
    for (int ch = 0; ch < PC; ch++)
        for (int p = 0; p < PH * PW; p++) image[ch * PH * PW + p] = (float)(100 * index + 10 * ch + p);
    labels[0] = (int32_t)index;
    return RM_OK;
}
static const rm_dataset_ops probe_ops = {probe_load, NULL, NULL};

static rm_dataset *probe(int64_t n)
{
    rm_dataset_info info = {n, PC, PH, PW, (int)n, RM_TASK_CLASSIFICATION, "probe", "probe"};
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_wrap(&ds, &info, &probe_ops, NULL, &e), RM_OK);
    return ds;
}

/* Segmentation: channel 0 of sample i at (y, x) is 1000 i + y W + x + 1,
 * channel 1 its negative, the mask (y W + x) % 7: every output pixel tells
 * where it came from. */
#define GC 2
#define GH 6
#define GW 5
#define GK 7
static int geo_load(void *ctx, float *image, int32_t *labels, int64_t index, rm_err *e)
{
    (void)ctx, (void)e;
    for (int p = 0; p < GH * GW; p++) {
        image[p] = (float)(1000 * index + p + 1);
        image[GH * GW + p] = -image[p];
        labels[p] = p % GK;
    }
    return RM_OK;
}
static const rm_dataset_ops geo_ops = {geo_load, NULL, NULL};

static rm_dataset *geo(int64_t n)
{
    rm_dataset_info info = {n, GC, GH, GW, GK, RM_TASK_SEGMENTATION, "geo", "geo"};
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_wrap(&ds, &info, &geo_ops, NULL, &e), RM_OK);
    return ds;
}

static rm_batcher *batcher(rm_dataset *ds, int bs, uint64_t seed, int shuffle, rm_last_batch last, int pad, int flip)
{
    rm_batcher_options o;
    rm_batcher_options_default(&o, bs);
    o.seed = seed, o.shuffle = shuffle, o.last = last, o.crop_padding = pad, o.hflip = flip;
    rm_batcher *b;
    rm_err e = {0};
    cr_assert_eq(rm_batcher_create(&b, ds, &o, &e), RM_OK, "%s", e.msg);
    return b;
}

static void order_of(const rm_batcher *b, int64_t n, int64_t *out)
{
    for (int64_t i = 0; i < n; i++) out[i] = rm_batcher_sample_at(b, i);
}

Test(data_batches, shuffle_is_a_reproducible_permutation)
{
    enum { N = 257 };
    rm_dataset *ds = probe(N);
    rm_batcher *a = batcher(ds, 16, 42, 1, RM_LAST_DROP, 0, 0), *b = batcher(ds, 16, 42, 1, RM_LAST_DROP, 0, 0),
               *c = batcher(ds, 16, 43, 1, RM_LAST_DROP, 0, 0);
    static int64_t oa[N], ob[N], oc[N], o0[N];
    for (uint64_t ep = 0; ep < 4; ep++) {
        rm_batcher_set_epoch(a, ep);
        rm_batcher_set_epoch(b, ep);
        rm_batcher_set_epoch(c, ep);
        order_of(a, N, oa), order_of(b, N, ob), order_of(c, N, oc);
        int seen[N] = {0};
        for (int i = 0; i < N; i++) {
            cr_assert(oa[i] >= 0 && oa[i] < N);
            seen[oa[i]]++;
        }
        for (int i = 0; i < N; i++)
            cr_assert_eq(seen[i], 1, "epoch %llu: sample %d seen %d times", (unsigned long long)ep, i, seen[i]);
        cr_assert(memcmp(oa, ob, sizeof oa) == 0, "same seed and epoch, same order");
        cr_assert(memcmp(oa, oc, sizeof oa) != 0, "another seed, another order");
        int fixed = 0;
        for (int i = 0; i < N; i++) fixed += oa[i] == i;
        cr_assert_lt(fixed, 20, "epoch %llu barely shuffled", (unsigned long long)ep);
        if (ep == 0)
            memcpy(o0, oa, sizeof oa);
        else
            cr_assert(memcmp(oa, o0, sizeof oa) != 0, "epoch %llu repeats epoch 0", (unsigned long long)ep);
    }
    /* Going back to an epoch reproduces it: no hidden state. */
    rm_batcher_set_epoch(a, 0);
    order_of(a, N, oa);
    cr_assert(memcmp(oa, o0, sizeof oa) == 0);
    cr_assert_eq(rm_batcher_epoch(a), 0);
    rm_batcher_free(a), rm_batcher_free(b), rm_batcher_free(c);
    /* Without shuffling: dataset order. */
    rm_batcher *s = batcher(ds, 16, 42, 0, RM_LAST_DROP, 0, 0);
    rm_batcher_set_epoch(s, 3);
    for (int i = 0; i < N; i++) cr_assert_eq(rm_batcher_sample_at(s, i), i);
    rm_batcher_free(s);
    rm_dataset_free(ds);
}

static void check_slot(const float *img, int32_t lab, int64_t want)
{
    cr_assert_eq(lab, want);
    for (int ch = 0; ch < PC; ch++)
        for (int p = 0; p < PH * PW; p++) cr_assert(img[ch * PH * PW + p] == (float)(100 * want + 10 * ch + p));
}

Test(data_batches, batches_follow_the_order_and_last_policy)
{
    enum { N = 10, BS = 4, SZ = PC * PH * PW };
    rm_dataset *ds = probe(N);
    static float img[BS * SZ];
    int32_t lab[BS];
    int count;
    rm_err e = {0};
    const rm_last_batch policy[3] = {RM_LAST_DROP, RM_LAST_PARTIAL, RM_LAST_WRAP};
    const int64_t nb[3] = {2, 3, 3};
    const int last_count[3] = {4, 2, 4};
    for (int pi = 0; pi < 3; pi++) {
        rm_batcher *b = batcher(ds, BS, 5, 1, policy[pi], 0, 0);
        rm_batcher_set_epoch(b, 1);
        cr_assert_eq(rm_batcher_batches(b), nb[pi]);
        int64_t pos = 0;
        for (int64_t k = 0; k < nb[pi]; k++) {
            cr_assert_eq(rm_batcher_next(b, img, lab, &count, &e), RM_OK, "%s", e.msg);
            cr_assert_eq(count, k == nb[pi] - 1 ? last_count[pi] : BS, "policy %d batch %lld", pi, (long long)k);
            for (int s = 0; s < count; s++, pos++) check_slot(img + s * SZ, lab[s], rm_batcher_sample_at(b, pos % N));
        }
        /* The epoch is over until the next one is selected. */
        cr_assert_eq(rm_batcher_next(b, img, lab, &count, &e), RM_OK);
        cr_assert_eq(count, 0);
        cr_assert_eq(rm_batcher_get(b, img, lab, &count, nb[pi], &e), RM_ERR_INVALID);
        rm_batcher_set_epoch(b, 2);
        cr_assert_eq(rm_batcher_next(b, img, lab, &count, &e), RM_OK);
        cr_assert_eq(count, BS);
        check_slot(img, lab[0], rm_batcher_sample_at(b, 0));
        rm_batcher_free(b);
    }
    /* Random access equals sequential access. */
    rm_batcher *b = batcher(ds, BS, 9, 1, RM_LAST_DROP, 0, 0);
    static float img2[BS * SZ];
    int32_t lab2[BS];
    cr_assert_eq(rm_batcher_get(b, img2, lab2, &count, 1, &e), RM_OK);
    cr_assert_eq(rm_batcher_next(b, img, lab, &count, &e), RM_OK);
    cr_assert_eq(rm_batcher_next(b, img, lab, &count, &e), RM_OK);
    cr_assert(memcmp(img, img2, sizeof img) == 0 && memcmp(lab, lab2, sizeof lab) == 0);
    rm_batcher_free(b);
    rm_dataset_free(ds);
}

Test(data_batches, rejects_impossible_options)
{
    rm_dataset *ds = probe(5);
    rm_batcher_options o;
    rm_batcher *b = (rm_batcher *)1;
    rm_err e = {0};
    rm_batcher_options_default(&o, 8);
    cr_assert_eq(rm_batcher_create(&b, ds, &o, &e), RM_ERR_INVALID);
    cr_assert_null(b);
    cr_assert(strstr(e.msg, "no batch per epoch"), "%s", e.msg);
    o.last = RM_LAST_WRAP; /* one full batch, samples repeated */
    cr_assert_eq(rm_batcher_create(&b, ds, &o, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_batcher_batches(b), 1);
    rm_batcher_free(b);
    rm_batcher_options_default(&o, 0);
    cr_assert_eq(rm_batcher_create(&b, ds, &o, &e), RM_ERR_INVALID);
    rm_batcher_options_default(&o, 2);
    o.crop_padding = -1;
    cr_assert_eq(rm_batcher_create(&b, ds, &o, &e), RM_ERR_INVALID);
    rm_dataset_free(ds);
}

typedef struct geometry {
    int dy, dx, flip; /* source = (y + dy - P, (flip ? W-1-x : x) + dx - P); flip -1: undecidable */
} geometry;

/* Checks one augmented segmentation sample: padding is 0 in the image and
 * class 0 in the mask; every other pixel's image and mask come from the same
 * source pixel; the mapping is one crop offset and at most one flip. */
static geometry check_augmented(const float *img, const int32_t *mask, int64_t index, int pad)
{
    int have = 0, dy = 0, dx_plain = 0, dx_flip = 0, plain_ok = 1, flip_ok = 1;
    for (int y = 0; y < GH; y++)
        for (int x = 0; x < GW; x++) {
            int p = y * GW + x;
            float v = img[p];
            if (v == 0) {
                cr_assert(img[GH * GW + p] == 0 && mask[p] == 0, "padding at (%d,%d)", x, y);
                continue;
            }
            int src = (int)v - 1000 * (int)index - 1;
            cr_assert(src >= 0 && src < GH * GW, "pixel (%d,%d) from another sample", x, y);
            cr_assert(img[GH * GW + p] == -v, "channels disagree at (%d,%d)", x, y);
            cr_assert_eq(mask[p], src % GK, "mask misaligned at (%d,%d)", x, y);
            int sy = src / GW, sx = src % GW;
            /* Both hypotheses (flipped or not) are tracked; at least one must
             * explain every pixel with a single offset. */
            int dyh = sy - y + pad, d0 = sx - x + pad, d1 = sx - (GW - 1 - x) + pad;
            if (!have) {
                have = 1, dy = dyh, dx_plain = d0, dx_flip = d1;
                continue;
            }
            cr_assert_eq(dyh, dy, "rows from two offsets at (%d,%d)", x, y);
            plain_ok &= d0 == dx_plain;
            flip_ok &= d1 == dx_flip;
        }
    cr_assert(have, "no pixel of the sample is visible");
    cr_assert(plain_ok || flip_ok, "columns are neither one crop nor one mirrored crop");
    cr_assert(dy >= 0 && dy <= 2 * pad, "row offset %d outside [0, %d]", dy, 2 * pad);
    geometry g = {dy, -1, -1};
    if (plain_ok != flip_ok) {
        g.flip = flip_ok;
        g.dx = flip_ok ? dx_flip : dx_plain;
        cr_assert(g.dx >= 0 && g.dx <= 2 * pad, "column offset %d outside [0, %d]", g.dx, 2 * pad);
    }
    return g;
}

Test(data_batches, crop_and_flip_keep_masks_aligned)
{
    enum { N = 64, BS = 8, P = 2, SZ = GC * GH * GW, HW = GH * GW };
    rm_dataset *ds = geo(N);
    rm_batcher *b = batcher(ds, BS, 77, 1, RM_LAST_DROP, P, 1);
    static float img[BS * SZ];
    static int32_t mask[BS * HW];
    int count, flips[2] = {0}, offsets[2 * P + 1] = {0};
    rm_err e = {0};
    for (int k = 0; k < N / BS; k++) {
        cr_assert_eq(rm_batcher_next(b, img, mask, &count, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(count, BS);
        for (int s = 0; s < BS; s++) {
            int64_t index = rm_batcher_sample_at(b, k * BS + s);
            geometry g = check_augmented(img + s * SZ, mask + s * HW, index, P);
            if (g.flip >= 0) flips[g.flip]++;
            offsets[g.dy]++;
        }
    }
    cr_assert(flips[0] > 8 && flips[1] > 8, "flips %d / %d", flips[0], flips[1]);
    for (int i = 0; i <= 2 * P; i++) cr_assert_gt(offsets[i], 0, "row offset %d never drawn", i);

    /* Reproducible from (seed, epoch, index); another epoch, other draws. */
    static float again[BS * SZ], other[BS * SZ];
    static int32_t mask2[BS * HW];
    rm_batcher *b2 = batcher(ds, BS, 77, 1, RM_LAST_DROP, P, 1);
    cr_assert_eq(rm_batcher_get(b, img, mask, &count, 3, &e), RM_OK);
    cr_assert_eq(rm_batcher_get(b2, again, mask2, &count, 3, &e), RM_OK);
    cr_assert(memcmp(img, again, sizeof img) == 0 && memcmp(mask, mask2, sizeof mask) == 0);
    rm_batcher_set_epoch(b2, 1);
    int differ = 0;
    for (int k = 0; k < N / BS; k++) {
        cr_assert_eq(rm_batcher_get(b2, other, mask2, &count, k, &e), RM_OK);
        for (int s = 0; s < BS; s++) {
            int64_t index = rm_batcher_sample_at(b2, k * BS + s);
            check_augmented(other + s * SZ, mask2 + s * HW, index, P);
            /* Compare with the epoch-0 augmentation of the same sample. */
            int64_t pos0 = -1;
            for (int64_t q = 0; q < N; q++)
                if (rm_batcher_sample_at(b, q) == index) pos0 = q;
            cr_assert_geq(pos0, 0);
            static float tmp[BS * SZ];
            static int32_t tmpm[BS * HW];
            cr_assert_eq(rm_batcher_get(b, tmp, tmpm, &count, pos0 / BS, &e), RM_OK);
            differ += memcmp(tmp + (pos0 % BS) * SZ, other + s * SZ, SZ * sizeof(float)) != 0;
        }
    }
    cr_assert_gt(differ, N / 2, "epoch 1 should augment most samples differently (%d of %d)", differ, N);
    rm_batcher_free(b), rm_batcher_free(b2);
    rm_dataset_free(ds);
}

Test(data_batches, flip_only_mirrors_whole_rows)
{
    enum { N = 32, SZ = GC * GH * GW, HW = GH * GW };
    rm_dataset *ds = geo(N);
    rm_batcher *b = batcher(ds, 1, 3, 0, RM_LAST_DROP, 0, 1);
    float img[SZ];
    int32_t mask[HW];
    int count, mirrored = 0;
    rm_err e = {0};
    for (int i = 0; i < N; i++) {
        cr_assert_eq(rm_batcher_next(b, img, mask, &count, &e), RM_OK);
        int flip = img[0] != (float)(1000 * i + 1);
        mirrored += flip;
        for (int y = 0; y < GH; y++)
            for (int x = 0; x < GW; x++) {
                int sx = flip ? GW - 1 - x : x, src = y * GW + sx;
                cr_assert(img[y * GW + x] == (float)(1000 * i + src + 1));
                cr_assert(img[HW + y * GW + x] == -(float)(1000 * i + src + 1));
                cr_assert_eq(mask[y * GW + x], src % GK);
            }
    }
    cr_assert(mirrored > 4 && mirrored < N - 4, "%d of %d mirrored", mirrored, N);
    rm_batcher_free(b);
    rm_dataset_free(ds);
}

/* Sample 5 cannot be read. */
static int broken_load(void *ctx, float *image, int32_t *labels, int64_t index, rm_err *e)
{
    if (index == 5) return rm_errorf(e, RM_ERR_PARSE, "/data/cls/broken-5.png: corrupt image");
    return probe_load(ctx, image, labels, index, e);
}
static const rm_dataset_ops broken_ops = {broken_load, NULL, NULL};

Test(data_batches, failing_sample_fails_the_batch)
{
    rm_dataset_info info = {12, PC, PH, PW, 12, RM_TASK_CLASSIFICATION, "broken", "broken"};
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_wrap(&ds, &info, &broken_ops, NULL, &e), RM_OK);
    for (int aug = 0; aug < 2; aug++) {
        rm_batcher *b = batcher(ds, 4, 1, 0, RM_LAST_DROP, aug, aug);
        static float img[4 * PC * PH * PW];
        int32_t lab[4];
        int count = -1;
        cr_assert_eq(rm_batcher_next(b, img, lab, &count, &e), RM_OK);
        cr_assert_eq(count, 4);
        cr_assert_eq(rm_batcher_next(b, img, lab, &count, &e), RM_ERR_PARSE);
        cr_assert_eq(count, 0, "no partial batch on failure");
        cr_assert(strstr(e.msg, "broken-5.png") && strstr(e.msg, "sample 5") && strstr(e.msg, "batch 1"), "%s", e.msg);
        rm_batcher_free(b);
    }
    rm_dataset_free(ds);
}

Test(data_batches, mnist_end_to_end)
{
    char dir[FX_PATH];
    fx_tmpdir(dir);
    enum { N = 20, R = 3, C = 3 };
    uint8_t px[N * R * C], lab[N];
    for (int i = 0; i < N * R * C; i++) px[i] = (uint8_t)(i * 13);
    for (int i = 0; i < N; i++) lab[i] = (uint8_t)(i % 10);
    fx_write_idx3(dir, "train-images-idx3-ubyte", 0x803, N, R, C, px);
    fx_write_idx1(dir, "train-labels-idx1-ubyte", 0x801, N, lab);
    rm_dataset *ds;
    rm_err e = {0};
    cr_assert_eq(rm_dataset_mnist_open_dir(&ds, dir, RM_SPLIT_TRAIN, &e), RM_OK, "%s", e.msg);
    rm_batcher *b = batcher(ds, 6, 2024, 1, RM_LAST_PARTIAL, 0, 0);
    float img[6 * R * C], one[R * C];
    int32_t l[6], l1;
    int count, total = 0, seen[N] = {0};
    while (1) {
        cr_assert_eq(rm_batcher_next(b, img, l, &count, &e), RM_OK, "%s", e.msg);
        if (!count) break;
        for (int s = 0; s < count; s++) {
            int64_t idx = rm_batcher_sample_at(b, total + s);
            seen[idx]++;
            cr_assert_eq(rm_dataset_load(ds, one, &l1, idx, &e), RM_OK);
            cr_assert(memcmp(one, img + s * R * C, sizeof one) == 0);
            cr_assert_eq(l[s], lab[idx]);
        }
        total += count;
    }
    cr_assert_eq(total, N);
    for (int i = 0; i < N; i++) cr_assert_eq(seen[i], 1);
    rm_batcher_free(b);
    rm_dataset_free(ds);
    fx_rmtree(dir);
}

/* A rank's shard or a micro-batch (rm_batcher_get_part) is exactly its
 * slice of the whole batch, augmentation included; parts outside the batch
 * are refused. */
Test(data_batches, parts_are_slices_of_the_batch)
{
    enum { N = 40, BS = 12, P = 1, SZ = GC * GH * GW, HW = GH * GW };
    rm_dataset *ds = geo(N);
    rm_batcher *b = batcher(ds, BS, 5, 1, RM_LAST_PARTIAL, P, 1);
    static float whole[BS * SZ], part[BS * SZ];
    static int32_t wmask[BS * HW], pmask[BS * HW];
    rm_err e = {0};
    int count = 0;
    rm_batcher_set_epoch(b, 2);
    for (int64_t k = 0; k < rm_batcher_batches(b); k++) {
        int full = 0;
        cr_assert_eq(rm_batcher_get(b, whole, wmask, &full, k, &e), RM_OK, "%s", e.msg);
        for (int first = 0; first < BS; first += 4) {
            cr_assert_eq(rm_batcher_get_part(b, part, pmask, &count, k, first, 4, &e), RM_OK, "%s", e.msg);
            int expect = full - first < 0 ? 0 : full - first < 4 ? full - first : 4;
            cr_assert_eq(count, expect, "batch %lld from %d: %d samples, the batch has %d", (long long)k, first, count,
                         full);
            cr_assert_eq(memcmp(part, whole + first * SZ, (size_t)count * SZ * sizeof(float)), 0);
            cr_assert_eq(memcmp(pmask, wmask + first * HW, (size_t)count * HW * sizeof(int32_t)), 0);
        }
    }
    cr_assert_eq(rm_batcher_get_part(b, part, pmask, &count, 0, 10, 4, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "samples [10, 10 + 4) of a batch of 12"), "%s", e.msg);
    cr_assert_eq(rm_batcher_get_part(b, part, pmask, &count, 0, -1, 2, &e), RM_ERR_INVALID);
    rm_batcher_free(b);
    rm_dataset_free(ds);
}
