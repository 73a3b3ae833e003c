/* What conv2d's reference kernels (conv2d.c) and its fast ones
 * (cpu/conv2d_fast.c) share: the geometry of a call and the reference's
 * workspace, which bounds the fast library's blocks. */
#ifndef REMAT_LAYERS_CONV2D_H
#define REMAT_LAYERS_CONV2D_H

#include "cpu_kernels.h"

/* Sizes of one call, derived once from the config and the input shape. */
typedef struct conv_geom {
    int n, cin, h, w;  /* input */
    int cout, k, s, p; /* layer */
    int ho, wo;        /* output */
    size_t kdim;       /* cin * k * k: rows of the im2col matrix */
    size_t pdim;       /* ho * wo: its columns */
} conv_geom;

static inline conv_geom conv_geom_of(const rm_layer_config *cfg, rm_shape x, rm_shape y)
{
    conv_geom g;
    g.n = x.n, g.cin = x.c, g.h = x.h, g.w = x.w;
    g.cout = cfg->out_channels, g.k = cfg->kernel, g.s = cfg->stride, g.p = cfg->pad;
    g.ho = y.h, g.wo = y.w;
    g.kdim = (size_t)g.cin * (size_t)g.k * (size_t)g.k;
    g.pdim = (size_t)g.ho * (size_t)g.wo;
    return g;
}

/* A 1x1, stride-1, unpadded convolution reads its input as the im2col matrix. */
static inline int conv_direct(const conv_geom *g)
{
    return g->k == 1 && g->s == 1 && g->p == 0;
}

/* Forward: one im2col strip of pixels (none when direct). Backward: the dx
 * accumulator of one image, one dcol row and the dw accumulator (doubles,
 * first, so every part stays aligned), then one im2col strip of taps. */
static inline size_t conv_ref_workspace(const conv_geom *g, int backward)
{
    if (!backward) return conv_direct(g) ? 0 : g->kdim * RM_TILE * sizeof(float);
    size_t xsize = (size_t)g->cin * g->h * g->w;
    return (xsize + g->pdim + (size_t)g->cout * g->kdim) * sizeof(double) + g->pdim * RM_TILE * sizeof(float);
}

#endif
