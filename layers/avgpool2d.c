/* STUB: avgpool2d layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_avgpool2d_desc = {
    .kind = RM_LAYER_AVGPOOL2D,
    .name = "avgpool",
};
