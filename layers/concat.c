/* STUB: concat layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_concat_desc = {
    .kind = RM_LAYER_CONCAT,
    .name = "concat",
};
