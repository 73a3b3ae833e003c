/* STUB: conv2d layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_conv2d_desc = {
    .kind = RM_LAYER_CONV2D,
    .name = "conv",
};
