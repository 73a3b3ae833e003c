/* CIFAR-10 in its binary version: files of 3073-byte records, one label byte
 * (0-9) then 1024 red, 1024 green and 1024 blue bytes of a 32x32 image in
 * row-major order (already CHW). Every file is checked and read into memory
 * at open (150 MB for the five training batches). */
#include <stdlib.h>
#include <string.h>

#include "data_util.h"

#define CIFAR_SIDE 32
#define CIFAR_PIXELS (3 * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD (1 + CIFAR_PIXELS)

/* Training-set statistics of the pixels scaled to [0, 1]. The std
 * (0.2023, 0.1994, 0.2010) found in many scripts is a different statistic
 * (the mean of per-image stds); these are the per-channel stds. */
const float rm_cifar10_mean[3] = {0.4914f, 0.4822f, 0.4465f};
const float rm_cifar10_std[3] = {0.2470f, 0.2435f, 0.2616f};

typedef struct cifar {
    int64_t count;
    unsigned char *records; /* count x CIFAR_RECORD */
    float lut[3][256];
    char *source;
} cifar;

static int cifar_load(void *ctx, float *image, int32_t *labels, int64_t index, rm_err *e)
{
    (void)e;
    const cifar *c = ctx;
    const unsigned char *r = c->records + (size_t)index * CIFAR_RECORD;
    labels[0] = r[0];
    for (int ch = 0; ch < 3; ch++) {
        const unsigned char *p = r + 1 + ch * CIFAR_SIDE * CIFAR_SIDE;
        float *dst = image + ch * CIFAR_SIDE * CIFAR_SIDE;
        for (int i = 0; i < CIFAR_SIDE * CIFAR_SIDE; i++) dst[i] = c->lut[ch][p[i]];
    }
    return RM_OK;
}

static const char *cifar_class_name(void *ctx, int k)
{
    (void)ctx;
    static const char *const names[10] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                          "dog",      "frog",       "horse", "ship", "truck"};
    return names[k];
}

static void cifar_destroy(void *ctx)
{
    cifar *c = ctx;
    if (!c) return;
    free(c->records);
    free(c->source);
    free(c);
}

static const rm_dataset_ops cifar_ops = {cifar_load, cifar_class_name, cifar_destroy};

int rm_dataset_cifar10_open(rm_dataset **out, const char *const *paths, int npaths, rm_err *e)
{
    *out = NULL;
    if (npaths < 1 || !paths) return rm_errorf(e, RM_ERR_INVALID, "cifar10: no batch files given");
    /* Sizes first, so nothing is allocated before every file is known good
     * in length: a truncated last record is an error, never dropped. */
    int64_t total = 0;
    for (int i = 0; i < npaths; i++) {
        int64_t size;
        int rc = data_file_size(&size, paths[i], e);
        if (rc) return rc;
        if (size == 0)
            return rm_errorf(e, RM_ERR_PARSE, "%s: empty file, expected %d-byte records", paths[i], CIFAR_RECORD);
        if (size % CIFAR_RECORD != 0)
            return rm_errorf(e, RM_ERR_PARSE,
                             "%s: %lld bytes is not a whole number of %d-byte records: record %lld is truncated "
                             "(%lld bytes)",
                             paths[i], (long long)size, CIFAR_RECORD, (long long)(size / CIFAR_RECORD),
                             (long long)(size % CIFAR_RECORD));
        total += size / CIFAR_RECORD;
    }
    cifar *c = calloc(1, sizeof *c);
    int rc = RM_OK;
    if (!c || !(c->records = malloc((size_t)total * CIFAR_RECORD)) || !(c->source = strdup(paths[0])))
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory for %lld records", paths[0], (long long)total);
    int64_t at = 0;
    for (int i = 0; !rc && i < npaths; i++) {
        FILE *fp;
        int64_t size;
        rc = data_open(&fp, &size, paths[i], e);
        if (rc) break;
        int64_t n = size / CIFAR_RECORD;
        /* A file that changed between the size check and here is caught by
         * the exact read and by the record count. */
        if (at + n > total)
            rc = rm_errorf(e, RM_ERR_IO, "%s: grew while being opened", paths[i]);
        else
            rc = data_read_exact(fp, c->records + (size_t)at * CIFAR_RECORD, (size_t)n * CIFAR_RECORD, paths[i],
                                 "the records", e);
        fclose(fp);
        for (int64_t r = 0; !rc && r < n; r++) {
            unsigned label = c->records[(size_t)(at + r) * CIFAR_RECORD];
            if (label > 9)
                rc = rm_errorf(e, RM_ERR_PARSE, "%s: record %lld has label %u, not a class 0-9", paths[i], (long long)r,
                               label);
        }
        at += n;
    }
    if (!rc && at != total) rc = rm_errorf(e, RM_ERR_IO, "%s: files changed while being opened", paths[0]);
    if (rc) {
        cifar_destroy(c);
        return rc;
    }
    c->count = total;
    for (int ch = 0; ch < 3; ch++)
        for (int p = 0; p < 256; p++) c->lut[ch][p] = ((float)p / 255.0f - rm_cifar10_mean[ch]) / rm_cifar10_std[ch];
    rm_dataset_info info = {c->count, 3, CIFAR_SIDE, CIFAR_SIDE, 10, RM_TASK_CLASSIFICATION, "cifar10", c->source};
    return rm_dataset_wrap(out, &info, &cifar_ops, c, e);
}

int rm_dataset_cifar10_open_dir(rm_dataset **out, const char *dir, rm_split split, rm_err *e)
{
    *out = NULL;
    /* The official archive unpacks into cifar-10-batches-bin/. */
    char *base = data_path_join(dir, "cifar-10-batches-bin");
    if (!base) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", dir);
    char *probe = data_path_join(dir, split == RM_SPLIT_TEST ? "test_batch.bin" : "data_batch_1.bin");
    int64_t size;
    const char *root = (probe && data_file_size(&size, probe, NULL) != RM_OK && data_is_dir(base)) ? base : dir;
    free(probe);
    char *paths[5] = {0};
    int n = split == RM_SPLIT_TEST ? 1 : 5, rc = RM_OK;
    for (int i = 0; i < n && !rc; i++) {
        char name[32];
        if (split == RM_SPLIT_TEST)
            snprintf(name, sizeof name, "test_batch.bin");
        else
            snprintf(name, sizeof name, "data_batch_%d.bin", i + 1);
        paths[i] = data_path_join(root, name);
        if (!paths[i]) rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", dir);
    }
    if (!rc) rc = rm_dataset_cifar10_open(out, (const char *const *)paths, n, e);
    for (int i = 0; i < n; i++) free(paths[i]);
    free(base);
    return rc;
}
