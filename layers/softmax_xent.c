/* STUB: softmax_xent layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_softmax_xent_desc = {
    .kind = RM_LAYER_SOFTMAX_XENT,
    .name = "softmax_xent",
};
