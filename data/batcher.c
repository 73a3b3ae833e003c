/* Mini-batches: per-epoch seeded Fisher-Yates permutations, fixed-size
 * batches written straight into caller buffers, and crop/flip augmentation
 * drawn from rm_uniform_at(seed, epoch stream, sample index) so that a
 * sample's augmentation does not depend on which batch or thread loads it. */
#include "batcher.h"

#include <stdlib.h>
#include <string.h>

#include "rng.h"

struct rm_batcher {
    rm_dataset *ds;
    rm_batcher_options o;
    int64_t n;       /* samples */
    int64_t batches; /* per epoch */
    int64_t *order;  /* n: this epoch's permutation */
    uint64_t epoch;
    int64_t next_batch; /* for rm_batcher_next */
    size_t image_numel, label_numel;
    float *image_tmp; /* one un-augmented sample, only when augmenting */
    int32_t *label_tmp;
};

/* Salts keep the shuffle and augmentation streams apart from each other and
 * from the other users of rm_hash64 with the same seed. */
#define SHUFFLE_SALT 0x73687566666c65ULL /* "shuffle" */
#define AUGMENT_SALT 0x6175676d656e74ULL /* "augment" */

void rm_batcher_options_default(rm_batcher_options *o, int batch_size)
{
    memset(o, 0, sizeof *o);
    o->batch_size = batch_size;
    o->shuffle = 1;
    o->last = RM_LAST_DROP;
}

static void make_order(rm_batcher *b)
{
    for (int64_t i = 0; i < b->n; i++) b->order[i] = i;
    if (!b->o.shuffle) return;
    /* Each epoch's permutation starts from the identity, so it depends only
     * on (seed, epoch), not on the epochs before it. The modulo's bias is
     * below n / 2^64: irrelevant. */
    rm_rng r = rm_rng_make(rm_hash64(b->o.seed ^ SHUFFLE_SALT) ^ rm_hash64(b->epoch));
    for (int64_t i = b->n - 1; i > 0; i--) {
        int64_t j = (int64_t)(rm_rng_next(&r) % (uint64_t)(i + 1));
        int64_t t = b->order[i];
        b->order[i] = b->order[j];
        b->order[j] = t;
    }
}

int rm_batcher_create(rm_batcher **out, rm_dataset *ds, const rm_batcher_options *o, rm_err *e)
{
    *out = NULL;
    if (!ds || !o) return rm_errorf(e, RM_ERR_INVALID, "batcher: needs a dataset and options");
    const char *src = ds->info.source;
    if (o->batch_size < 1)
        return rm_errorf(e, RM_ERR_INVALID, "%s: batch size %d must be positive", src, o->batch_size);
    if (o->last != RM_LAST_DROP && o->last != RM_LAST_PARTIAL && o->last != RM_LAST_WRAP)
        return rm_errorf(e, RM_ERR_INVALID, "%s: unknown last-batch policy %d", src, (int)o->last);
    if (o->crop_padding < 0 || o->crop_padding > 4096)
        return rm_errorf(e, RM_ERR_INVALID, "%s: crop padding %d must be 0 to 4096", src, o->crop_padding);
    if (ds->info.count < 1) return rm_errorf(e, RM_ERR_INVALID, "%s: the dataset is empty", src);
    int64_t n = ds->info.count, bs = o->batch_size;
    int64_t batches = o->last == RM_LAST_DROP ? n / bs : (n + bs - 1) / bs;
    if (batches == 0)
        return rm_errorf(e, RM_ERR_INVALID,
                         "%s: batch size %d exceeds the %lld samples and the incomplete batch is dropped: no batch "
                         "per epoch",
                         src, o->batch_size, (long long)n);
    rm_batcher *b = calloc(1, sizeof *b);
    if (!b) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", src);
    b->ds = ds;
    b->o = *o;
    b->n = n;
    b->batches = batches;
    b->image_numel = rm_dataset_image_numel(ds);
    b->label_numel = rm_dataset_label_count(ds);
    b->order = malloc((size_t)n * sizeof *b->order);
    int augment = o->crop_padding > 0 || o->hflip;
    if (augment) {
        b->image_tmp = malloc(b->image_numel * sizeof *b->image_tmp);
        b->label_tmp = malloc(b->label_numel * sizeof *b->label_tmp);
    }
    if (!b->order || (augment && (!b->image_tmp || !b->label_tmp))) {
        rm_batcher_free(b);
        return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory for the batcher", src);
    }
    make_order(b);
    *out = b;
    return RM_OK;
}

void rm_batcher_free(rm_batcher *b)
{
    if (!b) return;
    free(b->order);
    free(b->image_tmp);
    free(b->label_tmp);
    free(b);
}

int64_t rm_batcher_batches(const rm_batcher *b)
{
    return b->batches;
}
uint64_t rm_batcher_epoch(const rm_batcher *b)
{
    return b->epoch;
}

void rm_batcher_set_epoch(rm_batcher *b, uint64_t epoch)
{
    b->next_batch = 0;
    if (epoch == b->epoch) return;
    b->epoch = epoch;
    make_order(b);
}

int64_t rm_batcher_sample_at(const rm_batcher *b, int64_t pos)
{
    return b->order[pos];
}

/* Crops the H x W window at (dy, dx) of the sample zero-padded by p pixels,
 * then mirrors it when flip is set; the mask gets the same geometry with
 * class 0 in the padding. */
static void augment(float *image, int32_t *labels, const float *src_image, const int32_t *src_labels, int c, int h,
                    int w, int p, int dy, int dx, int flip, int seg)
{
    for (int y = 0; y < h; y++) {
        int sy = y + dy - p;
        for (int x = 0; x < w; x++) {
            int sx = (flip ? w - 1 - x : x) + dx - p;
            int inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
            size_t di = (size_t)y * (size_t)w + (size_t)x, si = inside ? (size_t)sy * (size_t)w + (size_t)sx : 0;
            for (int ch = 0; ch < c; ch++) {
                size_t plane = (size_t)ch * (size_t)h * (size_t)w;
                image[plane + di] = inside ? src_image[plane + si] : 0.0f;
            }
            if (seg) labels[di] = inside ? src_labels[si] : 0;
        }
    }
    if (!seg) labels[0] = src_labels[0];
}

static int load_slot(rm_batcher *b, float *image, int32_t *labels, int64_t index, rm_err *e)
{
    const rm_batcher_options *o = &b->o;
    if (o->crop_padding == 0 && !o->hflip) return rm_dataset_load(b->ds, image, labels, index, e);
    int rc = rm_dataset_load(b->ds, b->image_tmp, b->label_tmp, index, e);
    if (rc) return rc;
    uint64_t stream = rm_hash64(b->epoch ^ AUGMENT_SALT);
    uint64_t base = (uint64_t)index * 3;
    int span = 2 * o->crop_padding + 1;
    int dy = (int)(rm_uniform_at(o->seed, stream, base + 0) * (float)span);
    int dx = (int)(rm_uniform_at(o->seed, stream, base + 1) * (float)span);
    if (dy >= span) dy = span - 1; /* float rounding at the top end */
    if (dx >= span) dx = span - 1;
    int flip = o->hflip && rm_uniform_at(o->seed, stream, base + 2) < 0.5f;
    const rm_dataset_info *in = &b->ds->info;
    augment(image, labels, b->image_tmp, b->label_tmp, in->c, in->h, in->w, o->crop_padding, dy, dx, flip,
            in->task == RM_TASK_SEGMENTATION);
    return RM_OK;
}

int rm_batcher_get(rm_batcher *b, float *images, int32_t *labels, int *count, int64_t batch, rm_err *e)
{
    return rm_batcher_get_part(b, images, labels, count, batch, 0, b->o.batch_size, e);
}

int rm_batcher_get_part(rm_batcher *b, float *images, int32_t *labels, int *count, int64_t batch, int first, int n,
                        rm_err *e)
{
    *count = 0;
    if (!images || !labels)
        return rm_errorf(e, RM_ERR_INVALID, "%s: batch needs image and label buffers", b->ds->info.source);
    if (batch < 0 || batch >= b->batches)
        return rm_errorf(e, RM_ERR_INVALID, "%s: batch %lld out of range [0, %lld)", b->ds->info.source,
                         (long long)batch, (long long)b->batches);
    if (first < 0 || n < 0 || first > b->o.batch_size - n)
        return rm_errorf(e, RM_ERR_INVALID, "%s: samples [%d, %d + %d) of a batch of %d", b->ds->info.source, first,
                         first, n, b->o.batch_size);
    int64_t start = batch * b->o.batch_size + first, filled = n;
    if (b->o.last == RM_LAST_PARTIAL && start + filled > b->n) filled = start < b->n ? b->n - start : 0;
    for (int64_t s = 0; s < filled; s++) {
        int64_t index = b->order[(start + s) % b->n]; /* the modulo is RM_LAST_WRAP's wrap-around */
        int rc = load_slot(b, images + (size_t)s * b->image_numel, labels + (size_t)s * b->label_numel, index, e);
        if (rc) {
            rm_err_context(e, "epoch %llu, batch %lld, sample %lld", (unsigned long long)b->epoch, (long long)batch,
                           (long long)index);
            return rc;
        }
    }
    *count = (int)filled;
    return RM_OK;
}

int rm_batcher_next(rm_batcher *b, float *images, int32_t *labels, int *count, rm_err *e)
{
    *count = 0;
    if (b->next_batch >= b->batches) return RM_OK;
    int rc = rm_batcher_get(b, images, labels, count, b->next_batch, e);
    if (!rc) b->next_batch++;
    return rc;
}
