/* Datasets: a small vtable plus a context, like engine/backend.h. A dataset
 * knows its sample count, the shape of one input (C x H x W), its class count
 * and task, and loads sample i into caller-provided buffers already
 * normalized. Every opener validates what it can up front and preallocates its
 * buffers, so loading a sample never allocates (image decoding inside
 * stb_image excepted, see docs/data-formats.md). Every failure is an rm_err
 * whose message starts with the offending file.
 *
 * A dataset is not thread-safe: load uses per-dataset scratch buffers. Open
 * one dataset per loading thread. */
#ifndef REMAT_DATASET_H
#define REMAT_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum rm_task {
    RM_TASK_CLASSIFICATION = 0, /* one int32 class id per sample */
    RM_TASK_SEGMENTATION        /* one int32 class id per pixel, H*W, row-major */
} rm_task;

typedef enum rm_split { RM_SPLIT_TRAIN = 0, RM_SPLIT_TEST } rm_split;

typedef struct rm_dataset_info {
    int64_t count; /* samples */
    int c, h, w;   /* one input image, CHW float32 */
    int classes;   /* labels lie in [0, classes) */
    rm_task task;
    const char *kind;   /* "synthetic", "mnist", "cifar10", "image-folder", "segmentation" */
    const char *source; /* the path it was opened from (or a description); owned by the dataset */
} rm_dataset_info;

typedef struct rm_dataset_ops {
    /* image: c*h*w floats; labels: 1 (classification) or h*w (segmentation)
     * int32. index is already range-checked. On failure the buffers' contents
     * are unspecified. */
    int (*load)(void *ctx, float *image, int32_t *labels, int64_t index, rm_err *e);
    /* Name of class k (already range-checked); NULL when the data has none. */
    const char *(*class_name)(void *ctx, int k);
    void (*destroy)(void *ctx);
} rm_dataset_ops;

typedef struct rm_dataset {
    rm_dataset_info info;
    const rm_dataset_ops *ops;
    void *ctx;
} rm_dataset;

/* Generic operations (dataset.c). */
int rm_dataset_load(rm_dataset *ds, float *image, int32_t *labels, int64_t index, rm_err *e);
void rm_dataset_free(rm_dataset *ds);
/* Labels per sample: 1, or h*w for segmentation. */
size_t rm_dataset_label_count(const rm_dataset *ds);
size_t rm_dataset_image_numel(const rm_dataset *ds);
/* "k" as text when the dataset has no names; buf holds at least 16 bytes. */
const char *rm_dataset_class_name(const rm_dataset *ds, int k, char *buf, size_t len);
/* One line: "mnist <path>: 60000 samples, 1x28x28, 10 classes, classification". */
const char *rm_dataset_describe(const rm_dataset *ds, char *buf, size_t len);
/* Loads every sample once (into buffers it allocates and frees) so that a
 * corrupt file deep in a lazily decoded dataset fails now, not mid-epoch. */
int rm_dataset_validate(rm_dataset *ds, rm_err *e);
/* Wraps a caller-built vtable and context into a dataset (tests, adapters).
 * On failure ops->destroy(ctx) has already been called. */
int rm_dataset_wrap(rm_dataset **out, const rm_dataset_info *info, const rm_dataset_ops *ops, void *ctx, rm_err *e);

/* ---- Synthetic data (synthetic.c) ---------------------------------------
 * Classification: each class is a fixed random prototype (two oriented
 * sinusoidal gratings and a colour offset per channel); a sample is its
 * class's prototype plus noise. Segmentation: a background of class
 * 0 with 1-4 rectangles and discs of classes 1..K-1; every pixel shows its
 * class's prototype plus noise, and the mask is the ground truth. Every sample
 * is a pure function of (seed, index). */
typedef struct rm_synthetic_options {
    rm_task task;
    int64_t count;
    int c, h, w;
    int classes; /* >= 2 */
    uint64_t seed;
    float noise; /* std of the additive, near-Gaussian noise; prototypes have amplitude ~1 */
} rm_synthetic_options;

void rm_synthetic_options_default(rm_synthetic_options *o, rm_task task, int64_t count, int c, int h, int w,
                                  int classes);
int rm_dataset_synthetic_create(rm_dataset **out, const rm_synthetic_options *o, rm_err *e);

/* ---- MNIST idx files (mnist.c) -------------------------------------------
 * 1 x rows x cols inputs, 10 classes; pixels p become (p/255 - 0.1307)/0.3081. */
#define RM_MNIST_MEAN 0.1307f
#define RM_MNIST_STD 0.3081f
int rm_dataset_mnist_open(rm_dataset **out, const char *images_path, const char *labels_path, rm_err *e);
/* dir/train-images-idx3-ubyte + dir/train-labels-idx1-ubyte, or t10k-* for
 * the test split (the "train-images.idx3-ubyte" spelling is accepted too). */
int rm_dataset_mnist_open_dir(rm_dataset **out, const char *dir, rm_split split, rm_err *e);

/* ---- CIFAR-10 binary batches (cifar.c) -----------------------------------
 * 3 x 32 x 32 inputs, 10 classes; channel c pixels p become
 * (p/255 - mean[c])/std[c] with the training-set statistics below. */
extern const float rm_cifar10_mean[3], rm_cifar10_std[3];
int rm_dataset_cifar10_open(rm_dataset **out, const char *const *paths, int npaths, rm_err *e);
/* data_batch_1.bin .. data_batch_5.bin (all required) or test_batch.bin, in
 * dir or in dir/cifar-10-batches-bin. */
int rm_dataset_cifar10_open_dir(rm_dataset **out, const char *dir, rm_split split, rm_err *e);

/* ---- Image folders and segmentation pairs (image_folder.c, segmentation.c) */
#define RM_IMAGE_MAX_SIDE 16384                  /* larger width or height is refused */
#define RM_IMAGE_MAX_PIXELS (64LL * 1024 * 1024) /* default width*height limit */

typedef struct rm_image_options {
    int c, h, w;   /* model input; c is 1 (stb_image luma) or 3 (RGB) */
    float mean[3]; /* per channel, after scaling pixels to [0, 1] */
    float std[3];
    int64_t max_pixels; /* width*height limit of any image or mask; <= 0: RM_IMAGE_MAX_PIXELS */
} rm_image_options;

/* ImageNet statistics: mean (0.485, 0.456, 0.406), std (0.229, 0.224, 0.225);
 * for one channel their averages, 0.449 and 0.226. */
void rm_image_options_default(rm_image_options *o, int c, int h, int w);

/* root/<class>/<image>: classes are the sub-folders sorted by name (byte
 * order), images are the .png/.jpg/.jpeg/.bmp files of each, sorted
 * by name. Every header is read at open (size limits, corrupt headers). */
int rm_dataset_image_folder_open(rm_dataset **out, const char *root, const rm_image_options *o, rm_err *e);

/* root/images/<name>.<ext> with root/masks/<name>.<ext> (same name, the
 * extension may differ): single-channel masks whose pixel values are class
 * ids in [0, classes), of the image's size. */
int rm_dataset_segmentation_open(rm_dataset **out, const char *root, int classes, const rm_image_options *o, rm_err *e);

/* ---- Detection by content (dataset.c) ------------------------------------
 * Opens dir as MNIST, CIFAR-10, segmentation pairs or an image folder, in
 * that order of detection, for the given split (dir/train, dir/val or
 * dir/test sub-folders are used when present). img gives the input size for
 * image data (ignored by MNIST and CIFAR-10, whose shape is fixed); classes
 * is required for segmentation and ignored otherwise. */
int rm_dataset_open_dir(rm_dataset **out, const char *dir, rm_split split, const rm_image_options *img, int classes,
                        rm_err *e);

/* Views of base holding `held` samples chosen by a permutation seeded with
 * seed (test) and the others (train), each in index order, so a lazily
 * decoded dataset reads its files in order. Both borrow base, which must
 * outlive them. */
int rm_dataset_split(rm_dataset **train, rm_dataset **test, rm_dataset *base, int64_t held, uint64_t seed, rm_err *e);

#endif
