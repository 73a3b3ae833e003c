/* What the two pooling layers' kernels (maxpool2d.cu, avgpool2d.cu) share:
 * the window geometry and, for the gathering backward passes, which outputs'
 * windows cover an input coordinate. */
#ifndef REMAT_POOL_WINDOW_CUH
#define REMAT_POOL_WINDOW_CUH

#include "cuda_common.cuh"

typedef struct pool_geom {
    int h, w, ho, wo, k, s, p;
} pool_geom;

static inline pool_geom pool_geom_of(const rm_layer_config *cfg, rm_shape in, rm_shape out)
{
    pool_geom g = {in.h, in.w, out.h, out.w, cfg->kernel.h, cfg->stride.h, cfg->pad.h};
    return g;
}

/* Outputs [*lo, *hi] along one axis whose windows cover input coordinate i. */
__device__ inline void pool_covering(int *lo, int *hi, int i, int k, int s, int p, int n_out)
{
    int first = i + p - k + 1;
    *lo = first <= 0 ? 0 : (first + s - 1) / s;
    int last = (i + p) / s;
    *hi = last < n_out - 1 ? last : n_out - 1;
}

#endif
