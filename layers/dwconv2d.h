/* The depthwise convolution's call geometry, shared by its CPU reference
 * (dwconv2d.c) and its CUDA kernels (dwconv2d.cu). */
#ifndef REMAT_DWCONV2D_H
#define REMAT_DWCONV2D_H

#include "layers.h"

/* Sizes of one call, derived once from the config and the input shape. */
typedef struct dw_geom {
    int n, c, h, w; /* input; the output has n and c too */
    int k, s, p;    /* layer */
    int ho, wo;     /* output */
} dw_geom;

static inline dw_geom dw_geom_of(const rm_layer_config *cfg, rm_shape x, rm_shape y)
{
    dw_geom g = {x.n, x.c, x.h, x.w, cfg->kernel.h, cfg->stride.h, cfg->pad.h, y.h, y.w};
    return g;
}

#endif
