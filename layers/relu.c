/* STUB: relu layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_relu_desc = {
    .kind = RM_LAYER_RELU,
    .name = "relu",
};
