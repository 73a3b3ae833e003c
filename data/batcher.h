/* Mini-batches over a dataset: a seeded permutation per epoch (Fisher-Yates
 * driven by rm_rng), a fixed batch size, and light augmentation (random crop
 * from a zero-padded image, horizontal flip) applied identically to an image
 * and its segmentation mask. Everything is a pure function of (seed, epoch,
 * sample index), so a run can be replayed or resumed mid-epoch exactly. The
 * batcher allocates at create only; filling a batch allocates nothing. */
#ifndef REMAT_BATCHER_H
#define REMAT_BATCHER_H

#include <stdint.h>

#include "dataset.h"

/* What happens to the last batch when the sample count is not a multiple of
 * the batch size. */
typedef enum rm_last_batch {
    RM_LAST_DROP = 0, /* drop it: every batch is full (training) */
    RM_LAST_PARTIAL,  /* return it short: *count < batch size (evaluation) */
    RM_LAST_WRAP      /* complete it from the start of the same epoch's order: full batches, every sample seen */
} rm_last_batch;

typedef struct rm_batcher_options {
    int batch_size;
    uint64_t seed;
    int shuffle; /* nonzero: a new permutation every epoch; zero: dataset order */
    rm_last_batch last;
    int crop_padding; /* > 0: pad by this many pixels (0 after normalization, i.e. the mean colour; mask
                         class 0) and crop a random H x W window */
    int hflip;        /* nonzero: mirror left-right with probability 1/2 */
} rm_batcher_options;

/* batch_size, seed 0, shuffling on, last batch dropped, no augmentation. */
void rm_batcher_options_default(rm_batcher_options *o, int batch_size);

typedef struct rm_batcher rm_batcher;

/* ds stays owned by the caller and must outlive the batcher. Starts at epoch 0. */
int rm_batcher_create(rm_batcher **out, rm_dataset *ds, const rm_batcher_options *o, rm_err *e);
void rm_batcher_free(rm_batcher *b);

/* Batches in one epoch (0 is refused at create). */
int64_t rm_batcher_batches(const rm_batcher *b);
/* Selects the epoch (its permutation) and rewinds rm_batcher_next to batch 0. */
void rm_batcher_set_epoch(rm_batcher *b, uint64_t epoch);
uint64_t rm_batcher_epoch(const rm_batcher *b);
/* The dataset index at position pos (0 <= pos < count) of this epoch's order. */
int64_t rm_batcher_sample_at(const rm_batcher *b, int64_t pos);

/* Fills batch `batch` of the current epoch: images (batch_size x C x H x W,
 * NCHW) and labels (batch_size, or batch_size x H x W for segmentation).
 * *count is the number of samples written: batch_size, or fewer for the last
 * batch with RM_LAST_PARTIAL. On error *count is 0 and the buffers must not
 * be used. */
int rm_batcher_get(rm_batcher *b, float *images, int32_t *labels, int *count, int64_t batch, rm_err *e);
/* Samples first .. first + n - 1 of batch `batch` (0 <= first, first + n
 * <= batch_size), the same samples and augmentation as rm_batcher_get puts
 * there: one rank's shard of a global batch, or one micro-batch. *count as
 * for rm_batcher_get (fewer than n only at the end of a partial batch). */
int rm_batcher_get_part(rm_batcher *b, float *images, int32_t *labels, int *count, int64_t batch, int first, int n,
                        rm_err *e);
/* The next batch of the current epoch; *count is 0 (and RM_OK) once the
 * epoch is exhausted: call rm_batcher_set_epoch for the next one. */
int rm_batcher_next(rm_batcher *b, float *images, int32_t *labels, int *count, rm_err *e);

#endif
