/* STUB: pixel_softmax_xent layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_pixel_softmax_xent_desc = {
    .kind = RM_LAYER_PIXEL_SOFTMAX_XENT,
    .name = "pixel_softmax_xent",
};
