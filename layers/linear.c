/* STUB: linear layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_linear_desc = {
    .kind = RM_LAYER_LINEAR,
    .name = "linear",
};
