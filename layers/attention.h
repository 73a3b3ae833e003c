/* Where attention's q, k and v of one sample and head lie in its input
 * (N x 3D x H x W: q in channels [0, D), k in [D, 2D), v in [2D, 3D), head h
 * owning hd = D / heads channels of each), shared by the CPU reference
 * (attention.c) and the fast library's kernels (cpu/attention_fast.c). */
#ifndef REMAT_ATTENTION_H
#define REMAT_ATTENTION_H

#include "layers.h"

/* Head h of sample n: hd rows each of q, k and v, each t (the positions)
 * long, row-major as they lie. */
typedef struct rm_attn_head {
    const float *q, *k, *v;
    size_t t, hd;
} rm_attn_head;

static inline rm_attn_head rm_attn_head_of(const float *x, rm_shape s, int heads, int n, int h)
{
    const size_t t = (size_t)s.h * s.w, d = (size_t)s.c / 3, hd = d / (size_t)heads;
    const float *xn = x + (size_t)n * s.c * t;
    rm_attn_head r = {xn + h * hd * t, xn + (d + h * hd) * t, xn + (2 * d + h * hd) * t, t, hd};
    return r;
}

#endif
