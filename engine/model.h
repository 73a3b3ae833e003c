/* A model: named layers in a topological order, each with its layer
 * descriptor (engine/layer.h) and rm_layer_config, the layers it reads, its
 * per-sample shapes and its parameter count. models/ builds one from a config
 * file (models/builder.h) and traces it into a training graph; the executor
 * runs it. */
#ifndef REMAT_MODEL_H
#define REMAT_MODEL_H

#include <stddef.h>

#include "graph.h"
#include "layer.h"

/* An input reference to the input batch rather than to a layer. */
#define RM_MODEL_INPUT (-1)

typedef struct rm_model_layer {
    char name[RM_NAME_LEN]; /* unique; short enough for "<name>.gradsum" to fit */
    const rm_layer_desc *desc;
    rm_layer_config cfg;
    int nin;
    int inputs[RM_MAX_INPUTS];        /* earlier layer indices, or RM_MODEL_INPUT; no repeats */
    rm_shape in_shape[RM_MAX_INPUTS]; /* per sample: n = 1 */
    rm_shape out_shape;               /* per sample: n = 1 */
    size_t param_count;  /* trainable elements: w and b */
    size_t buffer_count; /* non-trainable state elements: batchnorm running mean and variance */
    int uses;            /* how many (consumer, input position) pairs read this output */
    int line;            /* line of the layer's [section] in the config */
} rm_model_layer;

typedef struct rm_model {
    char *path;      /* the config it came from, for messages */
    rm_shape input;  /* 1 x channels x height x width */
    int input_uses;  /* (consumer, position) pairs that read the input batch */
    int nlayers;
    rm_model_layer *layers; /* the last one is the loss */
    size_t param_count, buffer_count;
} rm_model;

void rm_model_free(rm_model *m);

/* Index of the layer with this name, or -1. */
int rm_model_find(const rm_model *m, const char *name);

/* The largest batch size any command takes (--batch, --max-batch, a cost
 * file's batch): 2^30. Shapes hold it in an int, and a tensor's bytes
 * (elements x batch x 4) are counted in size_t; a batch whose tensors would
 * not fit in memory anyway is refused later, by size. */
#define RM_MAX_BATCH (1 << 30)

/* Layer shapes at a batch size: in[i * RM_MAX_INPUTS + k] and out[i] for every
 * layer i (either may be NULL). Re-runs each layer's infer, so a model that
 * is only valid per sample would be caught. */
int rm_model_shapes(rm_shape *in, rm_shape *out, const rm_model *m, int batch, rm_err *e);

/* Labels per batch: one int32 per sample, or one per pixel of the loss
 * input for pixel_softmax_xent. */
size_t rm_model_label_count(const rm_model *m, int batch);

#endif
