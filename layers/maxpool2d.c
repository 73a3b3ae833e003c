/* STUB: maxpool2d layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_maxpool2d_desc = {
    .kind = RM_LAYER_MAXPOOL2D,
    .name = "maxpool",
};
