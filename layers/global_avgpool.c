/* STUB: global_avgpool layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_global_avgpool_desc = {
    .kind = RM_LAYER_GLOBAL_AVGPOOL,
    .name = "global_avgpool",
};
