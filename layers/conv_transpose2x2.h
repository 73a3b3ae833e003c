/* What conv_transpose2x2's reference kernels (conv_transpose2x2.c) and its
 * fast ones (cpu/conv_transpose2x2_fast.c) share: the geometry of a call
 * and where each tap lands in the output. */
#ifndef REMAT_LAYERS_CONV_TRANSPOSE2X2_H
#define REMAT_LAYERS_CONV_TRANSPOSE2X2_H

#include "cpu_kernels.h"

/* Sizes of one call. q = (co, a, b) indexes the Cout*4 weight taps of an input channel. */
typedef struct convt_geom {
    int n, cin, h, w, cout;
    size_t hw;   /* input pixels per plane */
    size_t qdim; /* cout * 4 */
} convt_geom;

static inline convt_geom convt_geom_of(const rm_layer_config *cfg, rm_shape x)
{
    convt_geom g;
    g.n = x.n, g.cin = x.c, g.h = x.h, g.w = x.w, g.cout = cfg->out_channels;
    g.hw = (size_t)g.h * g.w;
    g.qdim = (size_t)g.cout * 4;
    return g;
}

/* Output pixel (2i+a, 2j+b) of channel co, as an offset into one image of y. */
static inline size_t convt_out_index(const convt_geom *g, size_t q, size_t ij)
{
    size_t co = q / 4, a = (q / 2) % 2, b = q % 2, i = ij / (size_t)g->w, j = ij % (size_t)g->w;
    return (co * 2 * g->h + 2 * i + a) * 2 * (size_t)g->w + 2 * j + b;
}

#endif
