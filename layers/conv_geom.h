/* The geometry of one conv2d call, shared by its CPU reference (conv2d.c),
 * its fast CPU kernels (cpu/conv2d_fast.c) and its CUDA kernels
 * (cuda/conv2d.cu), so all three read the config one way.
 *
 * Channels split into `groups` groups: output channel co reads only the
 * input channels of its group, co / cog. The weights are cout x cig x kh x
 * kw (PyTorch's layout), so group gi's weights are the rows gi*cog .. of a
 * cout x kdim matrix. The im2col matrix of one image has a row per tap
 * (ci, ky, kx) of every input channel, krows = groups * kdim rows, group
 * gi's kdim rows after group gi-1's: each group's product is the ungrouped
 * one over its own rows of every operand. */
#ifndef REMAT_CONV_GEOM_H
#define REMAT_CONV_GEOM_H

#include <stddef.h>

#include "conv_taps.h"
#include "layer.h"

typedef struct conv_geom {
    int n, cin, h, w;   /* input */
    int cout, groups;   /* output channels, channel groups */
    int cig, cog;       /* input and output channels per group */
    int kh, kw, sh, sw; /* kernel, stride */
    int ph, pw;         /* zeros on each side */
    int dil_h, dil_w;   /* spacing of the taps */
    int ho, wo;         /* output */
    size_t kdim;        /* cig * kh * kw: one output channel's weights, one group's im2col rows */
    size_t krows;       /* cin * kh * kw: the rows of the im2col matrix, every group's */
    size_t pdim;        /* ho * wo: its columns */
} conv_geom;

static RM_HOST_DEVICE inline int conv_at_least_1(int v)
{
    return v > 0 ? v : 1;
}

static RM_HOST_DEVICE inline conv_geom conv_geom_of(const rm_layer_config *cfg, rm_shape x, rm_shape y)
{
    conv_geom g;
    g.n = x.n, g.cin = x.c, g.h = x.h, g.w = x.w;
    g.cout = cfg->out_channels, g.groups = conv_at_least_1(cfg->groups);
    g.cig = g.cin / g.groups, g.cog = g.cout / g.groups;
    g.kh = cfg->kernel.h, g.kw = cfg->kernel.w, g.sh = cfg->stride.h, g.sw = cfg->stride.w;
    g.ph = cfg->pad.h, g.pw = cfg->pad.w;
    g.dil_h = conv_at_least_1(cfg->dilation.h), g.dil_w = conv_at_least_1(cfg->dilation.w);
    g.ho = y.h, g.wo = y.w;
    g.kdim = (size_t)g.cig * (size_t)g.kh * (size_t)g.kw;
    g.krows = (size_t)g.cin * (size_t)g.kh * (size_t)g.kw;
    g.pdim = (size_t)g.ho * (size_t)g.wo;
    return g;
}

/* The same call restricted to one group (the pointers offset by the
 * caller): groups 1, cig inputs, cog outputs. */
static RM_HOST_DEVICE inline conv_geom conv_group_geom(const conv_geom *g)
{
    conv_geom s = *g;
    s.cin = g->cig, s.cout = g->cog, s.groups = 1, s.krows = g->kdim;
    return s;
}

/* A 1x1, stride-1, unpadded convolution reads its input as the im2col matrix. */
static RM_HOST_DEVICE inline int conv_direct(const conv_geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
}

/* Where tap (ky, kx) of output pixel (oy, ox) reads: input row oy*sh + tap_y,
 * column ox*sw + tap_x. */
static RM_HOST_DEVICE inline int conv_tap_y(const conv_geom *g, int ky)
{
    return ky * g->dil_h - g->ph;
}

static RM_HOST_DEVICE inline int conv_tap_x(const conv_geom *g, int kx)
{
    return kx * g->dil_w - g->pw;
}

#endif
