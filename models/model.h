/* A model built from a config file: named layers in file order (which is a
 * topological order), each with its rm_layer_config, the layers it reads,
 * its per-sample shapes and its parameter count. Building it is where the
 * config's semantics are checked: known sections and keys, value ranges,
 * references to earlier layers only, shapes (through each layer's infer),
 * every output used, a loss last. The format is docs/config-format.md. */
#ifndef REMAT_MODELS_MODEL_H
#define REMAT_MODELS_MODEL_H

#include <stddef.h>

#include "config.h"
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

/* Loads and checks a config file. Every error is RM_ERR_IO, RM_ERR_PARSE or
 * RM_ERR_SHAPE with a message "path:line: what". */
int rm_model_load(rm_model **out, const char *path, rm_err *e);
/* The same from text in memory (tests); path is used in messages only. */
int rm_model_parse(rm_model **out, const char *text, const char *path, rm_err *e);
/* The same from an already tokenized file. */
int rm_model_build(rm_model **out, const rm_cfg_file *f, rm_err *e);
void rm_model_free(rm_model *m);

/* Index of the layer with this name, or -1. */
int rm_model_find(const rm_model *m, const char *name);

/* Layer shapes at a batch size: in[i * RM_MAX_INPUTS + k] and out[i] for every
 * layer i (either may be NULL). Re-runs each layer's infer, so a model that
 * is only valid per sample would be caught. */
int rm_model_shapes(rm_shape *in, rm_shape *out, const rm_model *m, int batch, rm_err *e);

#endif
