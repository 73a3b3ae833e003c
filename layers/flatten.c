/* STUB: flatten layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_flatten_desc = {
    .kind = RM_LAYER_FLATTEN,
    .name = "flatten",
};
