/* STUB: dropout layer, to be implemented. */
#include "layer.h"

const rm_layer_desc rm_dropout_desc = {
    .kind = RM_LAYER_DROPOUT,
    .name = "dropout",
};
