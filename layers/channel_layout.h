/* Where each output channel of a channel-layout layer comes from, shared by
 * the CPU reference (channel_layout.c) and the CUDA kernels
 * (cuda/channel_layout.cu). */
#ifndef REMAT_CHANNEL_LAYOUT_H
#define REMAT_CHANNEL_LAYOUT_H

#include "conv_taps.h" /* RM_HOST_DEVICE */
#include "layer.h"

/* shuffle: the channels viewed as groups x (C / groups), transposed
 * (ShuffleNet's channel shuffle): output j = b * groups + a reads input
 * a * (C / groups) + b. slice: output j reads input start + j. */
typedef struct channel_map {
    int shuffle;   /* 1: shuffle, 0: slice */
    int groups;    /* shuffle (a config's 0 reads as 1) */
    int per_group; /* shuffle: C / groups */
    int start;     /* slice */
} channel_map;

static RM_HOST_DEVICE inline channel_map channel_map_of(const rm_layer_config *cfg, int in_channels)
{
    channel_map m = {cfg->kind == RM_LAYER_CHANNEL_SHUFFLE, cfg->groups > 0 ? cfg->groups : 1, 0, cfg->start};
    m.per_group = in_channels / m.groups;
    return m;
}

static RM_HOST_DEVICE inline int channel_source(const channel_map *m, int j)
{
    return m->shuffle ? (j % m->groups) * m->per_group + j / m->groups : m->start + j;
}

#endif
