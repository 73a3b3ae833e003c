/* Importing ONNX networks (exported from PyTorch, say) as remat models: the
 * graph's operators become remat layers, its initializers the model's
 * initial parameters, and a loss chosen by the caller is appended to its
 * output, since an exported network has none. What the constant parts of an
 * export compute (Constant, Shape -> Gather -> Unsqueeze -> Concat chains
 * feeding a Reshape, Resize scales) is folded at import. Anything remat's
 * layers cannot compute exactly (an operator, an attribute, a padding, a
 * broadcast) is an error naming the node, its operator and what would be
 * needed; nothing is approximated. The operators and attributes supported
 * are listed in docs/onnx.md.
 *
 * The file is decoded with protobuf-c from onnx.proto (models/onnx.proto);
 * nothing here prints: what each node became reaches the caller through
 * rm_onnx_options.note. */
#ifndef REMAT_MODELS_ONNX_H
#define REMAT_MODELS_ONNX_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model.h"

/* Dimensions a tensor file or a constant may have. */
#define RM_ONNX_MAX_RANK 8

/* What the reader promises to refuse before decoding (docs/onnx.md):
 * - a file larger than protobuf's limit for one message, 2 GiB - 1 bytes:
 *   a regular file by its size, before anything is read; a pipe or device
 *   as soon as it passes it (or at its first byte that is no protobuf field);
 * - messages nested deeper than RM_ONNX_MAX_DEPTH (the model at depth 0),
 *   onnx.load's limit: protobuf-c decodes sub-messages recursively, and a
 *   few kilobytes nested thousands deep would overflow the stack;
 * - more nodes than a model may have layers (RM_MODEL_MAX_LAYERS, the loss
 *   included), counted in the bytes before the graph is decoded;
 * - bytes that would decode into more than the file's size plus
 *   RM_ONNX_MAX_DECODE_BYTES plus RM_ONNX_DECODE_NODE_BYTES for each node
 *   (at most about 1.25 GiB with the file's size, nodes being bounded),
 *   estimated from the bytes before decoding (an empty attribute, 2 bytes,
 *   decodes into about 300: 6 MB of them took 1 GB). */
#define RM_ONNX_MAX_FILE_BYTES ((size_t)INT32_MAX)
#define RM_ONNX_MAX_DEPTH 100
#define RM_ONNX_MAX_NODES (RM_MODEL_MAX_LAYERS - 1)
#define RM_ONNX_MAX_DECODE_BYTES ((uint64_t)256 << 20)
#define RM_ONNX_DECODE_NODE_BYTES 1024

/* A tensor read from a TensorProto file (the input_0.pb and output_0.pb of
 * ONNX's test data) or given as a binding: FLOAT values, or integers (a
 * shape, axes, sizes), widened to int64. */
typedef struct rm_onnx_tensor {
    char *name; /* the TensorProto's name ("" when it has none); owned */
    int rank;
    int64_t dims[RM_ONNX_MAX_RANK];
    size_t count;  /* product of dims */
    float *data;   /* count floats, owned; NULL for integers */
    int64_t *ints; /* count integers (INT64, INT32, BOOL), owned; NULL for floats */
} rm_onnx_tensor;

/* Reads a serialized TensorProto of FLOAT (or DOUBLE, narrowed) or integer
 * elements, from raw_data or the typed fields. RM_ERR_IO when the file
 * cannot be read, RM_ERR_PARSE naming the file when it is not a TensorProto
 * (truncated, corrupt), RM_ERR_UNSUPPORTED for another element type. */
int rm_onnx_tensor_load(rm_onnx_tensor *out, const char *path, rm_err *e);
void rm_onnx_tensor_free(rm_onnx_tensor *t);

typedef enum rm_onnx_loss {
    RM_ONNX_SOFTMAX_XENT = 0,   /* logits N x K: classification (the default) */
    RM_ONNX_PIXEL_SOFTMAX_XENT, /* logits N x K x H x W: segmentation */
    RM_ONNX_LOSS_AUTO           /* softmax_xent for an N x K output, pixel_softmax_xent otherwise (tests) */
} rm_onnx_loss;

typedef struct rm_onnx_options {
    rm_onnx_loss loss;
    int random_init;   /* 1: the initializers' values are not kept (`--init random`): the layers' own
                          initialisation from the seed, as for a config */
    int height, width; /* > 0: the input's height and width replace the file's (a fully convolutional
                          net at another size); what was folded from shapes is folded at the new size */
    /* Values for graph inputs other than the data input, by name: ONNX's node tests pass a layer's
       weights as graph inputs. A bound input is a constant, like an initializer. */
    const rm_onnx_tensor *bind;
    int nbind;
    /* Called once per node with what it became ("node 3 Conv 'conv1' -> conv 'conv1' ...") and once
       for the loss; NULL: no notes. */
    void (*note)(void *ctx, const char *line);
    void *note_ctx;
} rm_onnx_options;

/* Softmax cross-entropy, initializers kept, the file's input size, no notes. */
void rm_onnx_options_default(rm_onnx_options *o);

typedef struct rm_onnx_summary {
    int nodes;         /* in the graph */
    int layers;        /* remat layers made, the loss included */
    int folded;        /* nodes computed at import (constants, shape arithmetic) */
    int aliases;       /* nodes that pass a tensor through (Identity, Flatten of N x F, a folded bias Add) */
    int dropped;       /* nodes whose outputs the graph output does not depend on */
    size_t weights;    /* parameter and statistic values taken from initializers (0 with random_init) */
    int64_t opset;     /* of the default domain */
    char producer[64]; /* "pytorch 2.1.0" */
    char input[64];    /* the data input's name */
    char output[64];   /* the graph output's name */
    int output_rank;   /* of the graph output: 2 (N x K), 3 or 4 */
    int fixed_batch;   /* the batch size the file declares for its input, or 0 when it is symbolic */
} rm_onnx_summary;

/* Imports the ONNX file at path. sum (may be NULL) says what the import did.
 * The model's path is the file's, and each layer's line is its node's
 * position in the graph (1-based), so messages read "net.onnx:12: ...".
 * Errors: RM_ERR_IO (cannot read), RM_ERR_PARSE (not a valid ONNX model:
 * truncated, corrupt, a dangling name), RM_ERR_UNSUPPORTED (an operator,
 * attribute or value remat cannot compute, with the node named),
 * RM_ERR_SHAPE (a layer refuses its input shapes), RM_ERR_NOMEM. */
int rm_onnx_load(rm_model **out, rm_onnx_summary *sum, const char *path, const rm_onnx_options *o, rm_err *e);

/* "softmax_xent" or "pixel_softmax_xent" (or "auto") to a loss; -1 for any other name. */
int rm_onnx_loss_parse(rm_onnx_loss *out, const char *name);

#endif
