/* STUB: conv_transpose2x2 layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_conv_transpose2x2_desc = {
    .kind = RM_LAYER_CONV_TRANSPOSE2X2,
    .name = "conv_transpose",
};
