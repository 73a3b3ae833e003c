/* STUB: add layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_add_desc = {
    .kind = RM_LAYER_ADD,
    .name = "add",
};
