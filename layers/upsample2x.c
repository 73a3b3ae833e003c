/* STUB: upsample2x layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_upsample2x_desc = {
    .kind = RM_LAYER_UPSAMPLE2X,
    .name = "upsample",
};
