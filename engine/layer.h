/* The layer interface (the abstract Layer the executor calls, as Caffe's Net
 * calls Layer). Every layer is one file in layers/ (<name>.c) exporting one
 * rm_layer_desc, registered in layers/layers.h: shape inference, parameter
 * shapes, FLOPs, initialisation, the plain-C reference forward and backward,
 * the exact set of forward tensors its backward reads, and a declaration of
 * its kernels on each backend (layers/kernels.c; the kernels themselves sit
 * in the backend's folder, layers/cpu/, layers/cuda/). No backend's header
 * is needed to write one. The scheduler's memory model is built
 * from `backward_reads`, so what the engine keeps alive and what the ILP
 * assumes are the same thing by construction. */
#ifndef REMAT_LAYER_H
#define REMAT_LAYER_H

#include <stdint.h>
#include <stdlib.h>

#include "backend.h"
#include "error.h"
#include "rng.h"
#include "tensor.h"

/* The most inputs a layer call takes: DenseNet-201's widest concat reads 49
 * tensors. Only calls hold arrays this long (on the stack); a model's
 * layers keep exactly their own inputs. */
#define RM_MAX_INPUTS 64

typedef enum rm_layer_kind {
    RM_LAYER_CONV2D = 0,
    RM_LAYER_BATCHNORM2D,
    RM_LAYER_RELU,
    RM_LAYER_MAXPOOL2D,
    RM_LAYER_AVGPOOL2D,
    RM_LAYER_GLOBAL_AVGPOOL,
    RM_LAYER_LINEAR,
    RM_LAYER_ADD,
    RM_LAYER_CONCAT,
    RM_LAYER_UPSAMPLE2X,
    RM_LAYER_CONV_TRANSPOSE2X2,
    RM_LAYER_DROPOUT,
    RM_LAYER_FLATTEN,
    RM_LAYER_SOFTMAX_XENT,       /* logits N x K x 1 x 1, labels N */
    RM_LAYER_PIXEL_SOFTMAX_XENT, /* logits N x K x H x W, labels N*H*W */
    RM_LAYER_DWCONV2D,           /* depthwise: one filter per channel */
    /* Element-wise activations (layers/activation.c). */
    RM_LAYER_RELU6,
    RM_LAYER_SIGMOID,
    RM_LAYER_TANH,
    RM_LAYER_SILU,
    RM_LAYER_HARDSIGMOID,
    RM_LAYER_HARDSWISH,
    RM_LAYER_GELU,      /* the erf form */
    RM_LAYER_GELU_TANH, /* the tanh approximation */
    RM_LAYER_SCALE,     /* x N x C x H x W times factors N x C x 1 x 1 (squeeze-and-excitation) */
    /* Channel layout (layers/channel_layout.c). */
    RM_LAYER_CHANNEL_SHUFFLE, /* ShuffleNet's: the channels as groups x C/groups, transposed */
    RM_LAYER_SLICE,           /* a range of channels */
    RM_LAYER_LAYERNORM,       /* over the channels at each position, a scale and a shift per channel */
    /* A vision transformer's (layers/attention.c, layers/tokens.c), on tokens N x D x T x 1. */
    RM_LAYER_ATTENTION, /* multi-head self-attention between the projections: q, k, v (N x 3D) to N x D */
    RM_LAYER_TOKENS,    /* the positions as tokens, a class token first, a position embedding added */
    RM_LAYER_TOKEN,     /* one token (the class token the head reads) */
    RM_LAYER_DROP_PATH, /* stochastic depth: dropout of whole samples (layers/dropout.c) */
    RM_LAYER_KIND_COUNT
} rm_layer_kind;

/* What a layer's backward reads besides the gradient of its output. */
enum {
    RM_READS_NOTHING = 0,
    RM_READS_INPUTS = 1 << 0, /* every forward input */
    RM_READS_OUTPUT = 1 << 1, /* its own forward output */
};

/* How a layer's weights start (layers/init.h has the rules). */
typedef enum rm_init {
    RM_INIT_KAIMING_IN = 0, /* the default */
    RM_INIT_KAIMING_OUT,
    RM_INIT_NORMAL_001,
    RM_INIT_PYTORCH,
    RM_INIT_COUNT
} rm_init;

/* A window's extent (or step, or padding) along the height and the width. */
typedef struct rm_hw {
    int h, w;
} rm_hw;

static inline rm_hw rm_hw_square(int v)
{
    rm_hw r = {v, v};
    return r;
}

/* Hyper-parameters, filled by the config parser. Unused fields stay 0. */
typedef struct rm_layer_config {
    rm_layer_kind kind;
    int out_channels; /* conv2d, conv_transpose2x2, linear (output features), slice (channels taken) */
    rm_hw kernel;     /* conv2d (any), dwconv2d, maxpool2d, avgpool2d (square) */
    rm_hw stride;     /* conv2d (any), dwconv2d, maxpool2d, avgpool2d (the same along both axes) */
    rm_hw pad;        /* conv2d (any), dwconv2d, maxpool2d, avgpool2d (the same along both axes): zeros added on
                         both sides, pad.h rows above and below, pad.w columns left and right */
    rm_hw dilation;   /* conv2d: the spacing of the kernel's taps; 0 reads as 1, so a zeroed config is a plain
                         convolution */
    int groups;       /* conv2d: input and output channels split into this many groups, each output reading
                         only its own group's inputs (PyTorch's groups); 0 reads as 1. shuffle: the groups */
    int start;        /* slice: the first channel taken (out_channels of them; 0: every one from start on).
                         token: the position taken */
    int heads;        /* attention: the heads the channels split into */
    int bias;         /* conv2d, dwconv2d, conv_transpose2x2, linear: 1 = has a bias */
    float eps;        /* batchnorm2d, layernorm */
    float momentum;   /* batchnorm2d: running = (1-m)*running + m*batch */
    float p;          /* dropout, drop_path: probability of dropping (an element; a whole sample) */
    int init;         /* conv2d, dwconv2d, linear: rm_init */
    int ceil_mode;    /* maxpool2d: the output size rounded up (PyTorch's ceil_mode): the last window of a row
                         or column may overhang the input, never start past it */
} rm_layer_config;

/* Parameter storage for one layer (fixed memory, owned by the model).
 * conv/linear/conv_t: w, b. batchnorm: w = gamma, b = beta, plus running
 * statistics. Tensors with data == NULL do not exist for this layer. */
typedef struct rm_layer_params {
    rm_tensor w, b;                      /* trainable */
    rm_tensor dw, db;                    /* their gradients: backward OVERWRITES them (see below) */
    rm_tensor running_mean, running_var; /* batchnorm buffers, not trained */
} rm_layer_params;

/* One forward or backward call. Fields a call does not need are NULL/0.
 *
 * Forward: reads in[0..nin), writes out (and may update running statistics
 * when update_stats is set).
 * Backward: reads dout (NULL for loss layers, which start the backward pass
 * with a loss scale of 1), plus in[] when the layer declares RM_READS_INPUTS
 * and out when it declares RM_READS_OUTPUT (only the shapes of the others are
 * valid: their data is NULL). Writes din[i] for every non-NULL din[i]
 * (overwriting, never accumulating: summing gradients of a tensor used twice
 * is the graph's job) and overwrites params->dw/db. Overwriting makes a
 * recomputed backward node harmless. */
typedef struct rm_layer_call {
    const rm_layer_config *cfg;
    rm_layer_params *params;
    const rm_backend *be;
    const rm_tensor *in[RM_MAX_INPUTS];
    int nin;
    rm_tensor *out;
    const rm_tensor *dout;
    rm_tensor *din[RM_MAX_INPUTS];
    const int32_t *labels; /* loss layers: N class ids, or N*H*W for pixels */
    int training;          /* batchnorm uses batch statistics; dropout drops */
    int update_stats;      /* batchnorm: fold batch statistics into running ones */
    uint64_t seed, step;   /* dropout mask = f(seed, step, node_id, index) */
    int node_id;
    /* Scratch for kernels that need it (rm_layer_desc.workspace_bytes): at
     * least that many bytes, 64-byte aligned, contents undefined on entry. An
     * executor allocates one workspace of the largest size once, so a
     * training step allocates nothing; NULL makes the layer allocate its own
     * (tests, one-off calls). */
    void *workspace;
    size_t workspace_size; /* bytes available at workspace */
} rm_layer_call;

/* A layer's kernels for one kernel library of a backend: what the backend's
 * kernel table holds per layer. */
typedef struct rm_layer_kernels {
    int (*forward)(const rm_layer_call *call, rm_err *e);
    int (*backward)(const rm_layer_call *call, rm_err *e);
    /* Exact scratch bytes of one call on be with these kernels (CUDA's cudnn
     * asks cuDNN, which chooses and caches the algorithms; be may be NULL on
     * the CPU). NULL: the declaration's workspace (below). */
    size_t (*workspace)(const rm_backend *be, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                        int backward);
} rm_layer_kernels;

/* A layer's kernels on one backend (rm_layer_desc.kernels[kind], kind the
 * registry's id, backend.h). Every pointer a call on a device backend holds
 * (tensors, parameters, running statistics, labels, workspace) is that
 * device's memory, and its kernels run in its order of work. */
typedef struct rm_layer_backend_kernels {
    /* The backend's own kernels of the layer, every kernel library's default
     * and the fallback of the others (CUDA: the hand-written ones). NULL:
     * the reference's on a host backend; none on a device (the backend
     * answers RM_ERR_UNSUPPORTED). */
    int (*forward)(const rm_layer_call *call, rm_err *e);
    int (*backward)(const rm_layer_call *call, rm_err *e);
    /* Scratch bytes of one call of these kernels, a bound that every kernel
     * library of the backend fits in, a function of the shapes alone, so
     * that planning needs no device and the algorithms chosen (and the bits)
     * never depend on how much workspace an executor holds. NULL: none (a
     * host backend: the reference's workspace_bytes). */
    size_t (*workspace)(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward);
    /* The kernels of the backend's kernel library lib (an id the backend
     * owns: its registry entry's kernel_libs), for layers with more than the
     * defaults: the one place that choice is made, called by the backend
     * once per layer and library (its kernel table), never per call. NULL:
     * the defaults serve every library. */
    rm_layer_kernels (*library)(int lib);
} rm_layer_backend_kernels;

typedef struct rm_layer_desc {
    rm_layer_kind kind;
    const char *name; /* the config section name, e.g. "conv" */
    unsigned backward_reads;
    int min_inputs, max_inputs;
    /* Output shape for the given inputs; RM_ERR_SHAPE with a reason if impossible. */
    int (*infer)(rm_shape *out, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_err *e);
    /* Shapes of w and b (all zero when absent). NULL for parameter-free layers. */
    void (*param_shapes)(rm_shape *w, rm_shape *b, const rm_layer_config *cfg, const rm_shape *in, int nin);
    /* Multiply-adds count as 2 FLOPs. backward = 1: FLOPs of the whole backward
     * (input gradients and parameter gradients). */
    double (*flops)(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward);
    /* Fills w, b (and running stats). NULL for parameter-free layers. */
    void (*init)(rm_layer_params *p, const rm_layer_config *cfg, const rm_shape *in, int nin, rm_rng *rng);
    /* The plain-C reference kernels: the layer's definition in code, the
     * test oracle, and what a host backend runs (the CPU backend's reference
     * kernel library, and the default of its others). They may split
     * independent outputs between the threads of call->be
     * (rm_backend_loop_threads), never a reduction, so their bits do not
     * depend on the thread count. */
    int (*forward_ref)(const rm_layer_call *call, rm_err *e);
    int (*backward_ref)(const rm_layer_call *call, rm_err *e);
    /* Scratch bytes one forward (backward = 0) or backward reference call
     * needs at these shapes (in with the batch in n), whatever the threads.
     * NULL: the layer needs none. */
    size_t (*workspace_bytes)(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward);
    /* Its kernels on each backend, by the registry's id (layers/kernels.c
     * declares them, pointing into each backend's folder); NULL, or an
     * all-NULL entry: none of its own there. */
    const rm_layer_backend_kernels *kernels;
} rm_layer_desc;

/* The scratch of one kernel call: call->workspace when the caller gave one
 * (RM_ERR_INVALID if it is smaller than bytes), else a fresh allocation that
 * is also returned in *owned for the kernel to free(). *ws is NULL when bytes
 * is 0. */
static inline int rm_layer_workspace(void **ws, void **owned, const rm_layer_call *call, size_t bytes, const char *who,
                                     rm_err *e)
{
    *ws = *owned = NULL;
    if (bytes == 0) return RM_OK;
    if (call->workspace) {
        if (call->workspace_size < bytes)
            return rm_errorf(e, RM_ERR_INVALID, "%s: workspace of %zu bytes given, %zu needed", who,
                             call->workspace_size, bytes);
        *ws = call->workspace;
        return RM_OK;
    }
    if (!(*ws = *owned = malloc(bytes)))
        return rm_errorf(e, RM_ERR_NOMEM, "%s: no memory for a %zu-byte workspace", who, bytes);
    return RM_OK;
}

/* One call on call->be (the CPU reference when be is NULL), through the
 * backend's layer ops; RM_ERR_UNSUPPORTED when the layer has no kernel there. */
int rm_layer_forward(const rm_layer_desc *d, const rm_layer_call *call, rm_err *e);
int rm_layer_backward(const rm_layer_desc *d, const rm_layer_call *call, rm_err *e);

/* Layer d's declaration on backend kind: its entry, or an all-NULL one. */
const rm_layer_backend_kernels *rm_layer_backend_of(const rm_layer_desc *d, rm_backend_kind kind);

/* Scratch bytes one call of layer d needs on backend be (NULL: the CPU),
 * exactly, for the kernels and settings be runs (be->ops->layer_workspace).
 * An executor sizes its one workspace with the bound of the backend's kind
 * instead (rm_backend_kind_layer_workspace), which every library fits in. */
size_t rm_layer_workspace_bytes_device(const rm_layer_desc *d, const rm_backend *be, const rm_layer_config *cfg,
                                       const rm_shape *in, int nin, rm_shape out, int backward);

/* Parameter count (w and b elements) for a layer with these inputs. */
size_t rm_layer_param_count(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in, int nin);

#endif
