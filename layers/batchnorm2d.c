/* STUB: batchnorm2d layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_batchnorm2d_desc = {
    .kind = RM_LAYER_BATCHNORM2D,
    .name = "batchnorm",
};
