/* A seeded split of a dataset into two views (see dataset.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset.h"
#include "rng.h"

typedef struct subset {
    rm_dataset *base; /* not owned */
    int64_t *idx;
    char source[300];
} subset;

static int subset_load(void *ctx, float *image, int32_t *labels, int64_t i, rm_err *e)
{
    subset *s = ctx;
    return rm_dataset_load(s->base, image, labels, s->idx[i], e);
}

static const char *subset_class_name(void *ctx, int k)
{
    subset *s = ctx;
    return s->base->ops->class_name ? s->base->ops->class_name(s->base->ctx, k) : NULL;
}

static void subset_destroy(void *ctx)
{
    subset *s = ctx;
    free(s->idx);
    free(s);
}

static const rm_dataset_ops subset_ops = {subset_load, subset_class_name, subset_destroy};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int subset_make(rm_dataset **out, rm_dataset *base, const int64_t *idx, int64_t n, const char *what, rm_err *e)
{
    subset *s = calloc(1, sizeof *s);
    if (s) s->idx = malloc((size_t)(n ? n : 1) * sizeof *s->idx);
    if (!s || !s->idx) {
        if (s) free(s);
        return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", base->info.source);
    }
    memcpy(s->idx, idx, (size_t)n * sizeof *idx);
    /* In index order: a lazily decoded dataset then reads its files in order. */
    qsort(s->idx, (size_t)n, sizeof *s->idx, cmp_i64);
    s->base = base;
    snprintf(s->source, sizeof s->source, "%s (%s)", base->info.source, what);
    rm_dataset_info info = base->info;
    info.count = n;
    info.source = s->source;
    return rm_dataset_wrap(out, &info, &subset_ops, s, e);
}

int rm_dataset_split(rm_dataset **train, rm_dataset **test, rm_dataset *base, int64_t held, uint64_t seed, rm_err *e)
{
    *train = *test = NULL;
    int64_t n = base->info.count;
    int64_t *perm = malloc((size_t)n * sizeof *perm);
    if (!perm) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", base->info.source);
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    rm_rng r = rm_rng_make(seed);
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(rm_rng_next(&r) % (uint64_t)(i + 1));
        int64_t x = perm[i];
        perm[i] = perm[j], perm[j] = x;
    }
    int rc = subset_make(test, base, perm, held, "held-out split", e);
    if (!rc) rc = subset_make(train, base, perm + held, n - held, "training split", e);
    free(perm);
    if (rc) {
        rm_dataset_free(*test);
        *test = NULL;
    }
    return rc;
}
