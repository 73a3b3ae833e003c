/* Internal helpers shared by the data loaders: files, folders and the image
 * pipeline (bounded stb_image decoding, cover-resize + center-crop). Not part
 * of the public API; the names carry a data_ prefix to keep them apart. */
#ifndef REMAT_DATA_UTIL_H
#define REMAT_DATA_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dataset.h"

/* ---- Files and folders (data_util.c) ---- */

static inline uint32_t data_be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* Size of a regular file; RM_ERR_IO naming the path when it is missing, not a
 * regular file or cannot be inspected. */
int data_file_size(int64_t *size, const char *path, rm_err *e);
/* Opens path for reading and returns its size (RM_ERR_IO naming the path). */
int data_open(FILE **fp, int64_t *size, const char *path, rm_err *e);
/* Reads exactly n bytes or fails naming the path and what was being read. */
int data_read_exact(FILE *fp, void *buf, size_t n, const char *path, const char *what, rm_err *e);
/* Reads a whole file into buf (capacity cap); the file must be exactly
 * expect bytes long (its size when the dataset was opened). */
int data_read_whole(unsigned char *buf, size_t cap, int64_t expect, const char *path, rm_err *e);

int data_is_dir(const char *path);
/* a "/" b, malloc'd (NULL when out of memory). */
char *data_path_join(const char *a, const char *b);
/* The visible (not dot-prefixed) entries of dir that are folders
 * (want_dirs) or regular files (!want_dirs), sorted by byte order. A visible
 * entry that cannot be inspected (a broken symbolic link) is an error naming
 * it. */
int data_list_dir(char ***names, int *count, const char *dir, int want_dirs, rm_err *e);
void data_free_names(char **names, int count);
/* The extension is one stb_image decodes here: png jpg jpeg bmp
 * (case-insensitive). */
int data_is_image_name(const char *name);
int data_is_lossy_name(const char *name);

/* ---- Image folders (image_folder.c) ---- */

/* rm_dataset_image_folder_open, with the classes (names and numbers) of
 * class_root's sub-folders when it is not NULL: a held-out split is numbered
 * as the training split it is evaluated against, may lack classes, and
 * refuses a class folder the training split does not have. */
int data_image_folder_open_as(rm_dataset **out, const char *root, const char *class_root, const rm_image_options *o,
                              rm_err *e);

/* ---- The image pipeline (image.c) ---- */

typedef struct data_image_header {
    int w, h;
    int comp;          /* channels in the file */
    int is16;          /* 16 bits per channel (PNG) */
    int64_t file_size; /* bytes */
} data_image_header;

/* Checks the caller's options (channels 1 or 3, a sane size, positive
 * finite stds) and fills in the default pixel limit; root names the data. */
int data_image_options_resolve(rm_image_options *dst, const rm_image_options *src, const char *root, rm_err *e);

/* Reads the header of an image file (stb_image's info) and checks it against
 * the size limits, before anything is decoded. */
int data_image_probe(data_image_header *hd, const char *path, int64_t max_pixels, rm_err *e);

/* Decodes an image already read into buf, requesting `channels` channels of 8
 * bits (or, with want16, one 16-bit channel), after re-checking its header
 * against hd (the file must not have changed since open). *pixels is
 * interleaved HWC and must be released with data_image_release. */
int data_image_decode(void **pixels, const unsigned char *buf, size_t len, int channels, int want16,
                      const data_image_header *hd, int64_t max_pixels, const char *path, rm_err *e);
void data_image_release(void *pixels);

/* The part of a w x h image that a cover-resize + center-crop maps onto the
 * out_w x out_h output: the image is scaled by max(out_w/w, out_h/h) so that
 * it covers the output, and the centred out_w x out_h window is kept. */
typedef struct data_crop {
    double x0, y0, cw, ch; /* in source pixels; pixel i spans [i, i+1) */
} data_crop;
data_crop data_crop_cover(int w, int h, int out_w, int out_h);

/* Preallocated state of the bilinear resampler for inputs up to max_w x
 * max_h and a fixed out_w x out_h x c output. */
typedef struct data_resampler {
    int out_w, out_h, c;
    int max_w, max_h;
    int taps_x, taps_y; /* weights per output pixel, upper bound */
    int *x_start, *x_count;
    float *x_weight; /* out_w x taps_x */
    int *y_start, *y_count;
    float *y_weight;  /* out_h x taps_y */
    float *tmp;       /* c x max_h x out_w: the horizontal pass */
    int *nn_x, *nn_y; /* nearest-neighbour source columns / rows (masks) */
} data_resampler;

int data_resampler_init(data_resampler *r, int max_w, int max_h, int out_w, int out_h, int c, rm_err *e);
void data_resampler_destroy(data_resampler *r);
/* out (c x out_h x out_w) = the cover-resized, center-cropped 8-bit HWC image
 * (w x h, c channels), bilinear (a triangle filter widened by the scale
 * factor when shrinking, so that downscaling averages instead of aliasing),
 * then normalized: (v/255 - mean[k]) / std[k]. */
void data_resample_bilinear(data_resampler *r, float *out, const uint8_t *in, int w, int h, const float *mean,
                            const float *std);
/* Prepares r->nn_x / r->nn_y: the source column/row that the nearest
 * neighbour rule picks for each output column/row, for the same crop. */
void data_resample_nearest_map(data_resampler *r, int w, int h);

#endif
