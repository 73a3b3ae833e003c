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
    int *inputs;         /* [nin]: earlier layer indices, or RM_MODEL_INPUT; no repeats */
    rm_shape *in_shape;  /* [nin]: per sample, n = 1 */
    int in_at;           /* the model-wide number of its first input: layer i's inputs are in_at .. in_at + nin - 1
                            of rm_model_shapes' `in` (every earlier layer's inputs before them) */
    rm_shape out_shape;  /* per sample: n = 1 */
    size_t param_count;  /* trainable elements: w and b */
    size_t buffer_count; /* non-trainable state elements: batchnorm running mean and variance */
    int uses;            /* how many (consumer, input position) pairs read this output */
    int line;            /* line of the layer's [section] in the config */
} rm_model_layer;

typedef struct rm_model {
    char *path;     /* the config (or ONNX file) it came from, for messages */
    rm_shape input; /* 1 x channels x height x width */
    int input_uses; /* (consumer, position) pairs that read the input batch */
    int nlayers;
    rm_model_layer *layers; /* the last one is the loss */
    int ninputs;            /* every layer's nin, summed */
    size_t param_count, buffer_count;
    /* Initial values, or NULL: the layers' init from the seed. In the
     * executor's layouts (rm_executor_params, rm_executor_buffers): every
     * layer's w then b in layer order (param_count floats), every
     * batchnorm's running mean then variance (buffer_count floats). An
     * imported network's weights (models/onnx.h), so that a pretrained
     * network is fine-tuned rather than retrained. Owned by the model. */
    float *init_params, *init_buffers;
} rm_model;

void rm_model_free(rm_model *m);

/* Completes layer i, whose name, desc and cfg are set, reading the nin
 * inputs given (copied into the layer), earlier layers (or the input batch)
 * already completed: its input and output shapes per sample (through the layer's infer), its
 * parameter and buffer counts, the uses of what it reads, and the model's
 * totals; m->nlayers becomes i + 1. The one place a layer joins a model,
 * whether from a config or an ONNX file. RM_ERR_SHAPE with "shape mismatch
 * in [conv] 'c1' (inputs: input 1x3x8x8): <the layer's reason>", or
 * RM_ERR_UNSUPPORTED for a layer this build lacks; the caller prefixes where
 * the layer was defined. */
int rm_model_layer_complete(rm_model *m, int i, const int *inputs, int nin, rm_err *e);

/* Index of the layer with this name, or -1. */
int rm_model_find(const rm_model *m, const char *name);

/* The largest batch size any command takes (--batch, --max-batch, a cost
 * file's batch): 2^30. Shapes hold it in an int, and a tensor's bytes
 * (elements x batch x 4) are counted in size_t; a batch whose tensors would
 * not fit in memory anyway is refused later, by size. */
#define RM_MAX_BATCH (1 << 30)

/* The most layers a model may have, the loss included: a config stops there
 * (models/builder.c, checked before a [repeat] expands) and so does an ONNX
 * file (models/onnx_read.c, its nodes counted before it is decoded). A bound
 * on the memory and time a small hostile file can cost. */
#define RM_MODEL_MAX_LAYERS 1000000

/* Layer shapes at a batch size: in[layers[i].in_at + k] (m->ninputs shapes)
 * and out[i] for every layer i (either may be NULL). Re-runs each layer's infer, so a model that
 * is only valid per sample would be caught. */
int rm_model_shapes(rm_shape *in, rm_shape *out, const rm_model *m, int batch, rm_err *e);

/* Labels per batch: one int32 per sample, or one per pixel of the loss
 * input for pixel_softmax_xent. */
size_t rm_model_label_count(const rm_model *m, int batch);

#endif
