/* Tensors: NCHW float32, always four dimensions (a vector of features is
 * N x C x 1 x 1). The data pointer belongs to whoever placed the tensor (an
 * arena, a backend allocation, a test); a tensor never owns memory. */
#ifndef REMAT_TENSOR_H
#define REMAT_TENSOR_H

#include <stddef.h>
#include <stdint.h>

typedef struct rm_shape {
    int n, c, h, w;
} rm_shape;

typedef struct rm_tensor {
    rm_shape shape;
    float *data; /* [n][c][h][w], contiguous */
} rm_tensor;

static inline rm_shape rm_shape_make(int n, int c, int h, int w)
{
    rm_shape s = {n, c, h, w};
    return s;
}

static inline size_t rm_shape_numel(rm_shape s)
{
    return (size_t)s.n * (size_t)s.c * (size_t)s.h * (size_t)s.w;
}

static inline size_t rm_shape_bytes(rm_shape s)
{
    return rm_shape_numel(s) * sizeof(float);
}

/* The most bytes remat counts in one memory total (a problem's fixed bytes
 * and outputs, the fixed memory of training): 2^62, 4 EiB, more than any
 * device holds. Below it, sums of a few such totals cannot wrap a size_t. */
#define RM_MAX_DEVICE_BYTES ((size_t)1 << 62)

static inline int rm_shape_equal(rm_shape a, rm_shape b)
{
    return a.n == b.n && a.c == b.c && a.h == b.h && a.w == b.w;
}

static inline rm_tensor rm_tensor_make(rm_shape s, float *data)
{
    rm_tensor t = {s, data};
    return t;
}

static inline size_t rm_tensor_numel(const rm_tensor *t)
{
    return rm_shape_numel(t->shape);
}

/* Writes "NxCxHxW" into buf (at least 64 bytes); returns buf. */
const char *rm_shape_str(rm_shape s, char *buf, size_t len);

#endif
