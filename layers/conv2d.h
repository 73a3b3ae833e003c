/* What conv2d's reference kernels (conv2d.c) and its fast ones
 * (cpu/conv2d_fast.c) share besides the geometry (conv_geom.h): the
 * reference's workspace, which bounds the fast library's blocks. */
#ifndef REMAT_LAYERS_CONV2D_H
#define REMAT_LAYERS_CONV2D_H

#include "conv_geom.h"
#include "cpu_kernels.h"

/* Forward: one im2col strip of one group's pixels (none when direct).
 * Backward: the dx accumulator of one image, one dcol row and the dw
 * accumulator (doubles, first, so every part stays aligned), then one
 * im2col strip of one group's taps. */
static inline size_t conv_ref_workspace(const conv_geom *g, int backward)
{
    if (!backward) return conv_direct(g) ? 0 : g->kdim * RM_TILE * sizeof(float);
    size_t xsize = (size_t)g->cin * g->h * g->w;
    return (xsize + g->pdim + (size_t)g->cout * g->kdim) * sizeof(double) + g->pdim * RM_TILE * sizeof(float);
}

#endif
