/* The executor, the one place a plan runs: one training step (forward, loss,
 * backward) of a model, or an inference pass (evaluation), by following a
 * plan (engine/plan.h) operation by operation, with every activation,
 * gradient and recomputed value at its planned offset in one arena. Fixed
 * memory (parameters, their gradients, batchnorm running statistics, labels,
 * the loss and the layers' scratch workspace) is allocated once at creation;
 * a run allocates nothing.
 *
 * It lives in engine/ beside the layer interface and calls layers only
 * through it (engine/layer.h, on the backend's ops), as Caffe's Net calls
 * Layer: it needs the model's structure (engine/model.h), never layers/ or
 * models/.
 *
 * Exactness: a recomputed forward is bit-identical to
 * the first computation because the CPU kernels are deterministic, dropout
 * masks are a pure function of (seed, step, forward node index) (the backward
 * of a layer uses its forward node's index too), and batchnorm folds batch
 * statistics into its running statistics only on the first computation of
 * its forward node in a step. Backward overwrites parameter gradients, so a
 * step under any valid schedule leaves the same gradients as checkpoint-all.
 *
 * Backends. On the CPU backend everything is host memory. On a CUDA backend
 * every fixed buffer and the arena are DEVICE memory
 * allocated once at creation, the kernels are the layers' CUDA ones (plus
 * the backend's own for gradient sums and poison), all queued on the
 * backend's stream; a step uploads the batch and labels and downloads only
 * the loss. The CUDA kernels are deterministic too, so recomputation stays
 * bit-exact on the GPU. Which functions return or take device pointers is
 * said at each one below: "(dev)" means device memory on CUDA, host memory
 * on the CPU backend. */
#ifndef REMAT_EXECUTOR_H
#define REMAT_EXECUTOR_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "graph.h"
#include "model.h"
#include "plan.h"

typedef struct rm_executor rm_executor;

typedef struct rm_executor_options {
    uint64_t seed;       /* parameter initialisation and dropout masks */
    size_t arena_budget; /* activation bytes allowed; 0 = exactly the plan's span */
    int poison;          /* fill every buffer with NaN when placed and when freed: a kernel that
                            reads a value the plan says is dead, or a placement that overlaps a
                            live value, then shows up as NaN (tests; costs a pass over memory) */
} rm_executor_options;

/* m and g (a trace of m at some batch) and plan (from g and a schedule's
 * operations) must outlive the executor; be too. Parameters are initialised
 * from opts->seed (each layer's init, in layer order), or copied from the
 * model's init_params and init_buffers when it carries them. Checks that g matches
 * m (shapes, dependencies as engine/graph.h describes them) and that the plan
 * is consistent (rm_plan_check). RM_ERR_BUDGET when the plan's span exceeds
 * arena_budget, or when the fixed bytes plus the arena (arena_budget, or the
 * span when it is 0) exceed the free memory the backend reports (checked
 * before allocating anything; the CPU backend reports no bound);
 * RM_ERR_UNSUPPORTED for a backend that does not compute, a gradient sum of
 * more terms than the backend takes, or a layer without kernels on the
 * backend (at the first step). opts may be NULL (seed 0, no budget, no
 * poison). */
int rm_executor_create(rm_executor **out, const rm_model *m, const rm_graph *g, rm_backend *be, const rm_plan *plan,
                       const rm_executor_options *opts, rm_err *e);
void rm_executor_free(rm_executor *ex);

/* One training step. input: the batch, N x C x H x W floats in host memory;
 * labels: rm_model_label_count(m, N) class ids in host memory; step: the
 * step number (dropout masks differ per step). Runs the plan's operations in
 * order, leaves every parameter's gradient in the gradient buffers and the
 * loss in *loss (host, if not NULL). Parameters are not updated: that is the
 * optimizer's job. On CUDA it returns after the stream has finished the
 * step's work (the loss download waits for it). */
int rm_executor_step(rm_executor *ex, float *loss, const float *input, const int32_t *labels, uint64_t step, rm_err *e);

/* Inference (evaluation) through the same executor and the same op loop as
 * a step. fg is the forward-only trace of the model (rm_model_trace_forward)
 * at a batch no larger than training's, and fp the plan of a schedule of it;
 * both must outlive the executor (or the next call). The pass runs in the
 * executor's arena and workspace, which hold nothing between steps, so
 * evaluation needs no memory beyond the budget: RM_ERR_BUDGET when fp's span
 * exceeds the arena or the pass needs more workspace than training's.
 * RM_ERR_INVALID when fg is not the training graph's forward part. */
int rm_executor_set_inference(rm_executor *ex, const rm_graph *fg, const rm_plan *fp, rm_err *e);
/* One inference pass over count samples (1 to fg's batch: the last batch of
 * a data set may end short, and in inference mode every layer is per
 * sample): batchnorm uses its running statistics, dropout keeps everything,
 * nothing is updated. input and labels are host memory as for a step; the
 * mean loss over the count samples' labels goes to *loss. */
int rm_executor_infer(rm_executor *ex, float *loss, const float *input, const int32_t *labels, int count, rm_err *e);

/* From now on every step and inference pass downloads the value of graph
 * node `node` (the graph the run follows), when it is first computed, into
 * host: its shape's bytes for the run's samples. The trainer fetches the
 * logits this way for accuracy, with no second forward pass. host NULL
 * turns it off. */
void rm_executor_set_fetch(rm_executor *ex, int node, float *host);

/* A per-node hook for profiling (train/profile.c): rm_executor_step calls
 * fn(ctx, node, 0, e) right before each computation of a node (the input's
 * upload included) and fn(ctx, node, 1, e) right after, outside the poison
 * fills, so what lies between the two calls is the node's own work. On CUDA
 * the node's kernels are only queued when the second call comes: a timer
 * records device events on the backend's stream there, it does not read a
 * host clock. A non-zero return stops the step with that code. fn NULL
 * removes the hook; without one a step pays a single branch per node. */
typedef int (*rm_executor_node_hook)(void *ctx, int node, int after, rm_err *e);
void rm_executor_set_node_hook(rm_executor *ex, rm_executor_node_hook fn, void *ctx);

/* All trainable parameters as one vector (layer order; each layer's w then b),
 * and their gradients laid out the same way: what an optimizer updates.
 * (dev): on CUDA these are DEVICE pointers, never to be dereferenced on the
 * host; use the download/upload functions below to read or write them. */
float *rm_executor_params(rm_executor *ex, size_t *count);
float *rm_executor_grads(rm_executor *ex, size_t *count);
/* Batchnorm running statistics (each batchnorm layer's mean then variance). (dev) */
float *rm_executor_buffers(rm_executor *ex, size_t *count);
/* One layer's parameter tensors (views into the vectors above). The struct
 * is host memory; its tensors' data pointers are (dev). */
rm_layer_params *rm_executor_layer_params(rm_executor *ex, int layer);

/* Host copies of the vectors above, on either backend: host must hold the
 * count rm_executor_params (grads: the same) or rm_executor_buffers reports.
 * Downloads return once the data is in host; uploads once the host buffer
 * may be reused (they synchronise the stream). For checkpoints and tests. */
int rm_executor_download_params(rm_executor *ex, float *host, rm_err *e);
int rm_executor_download_grads(rm_executor *ex, float *host, rm_err *e);
int rm_executor_download_buffers(rm_executor *ex, float *host, rm_err *e);
int rm_executor_upload_params(rm_executor *ex, const float *host, rm_err *e);
int rm_executor_upload_buffers(rm_executor *ex, const float *host, rm_err *e);

/* The backend the executor runs on (its memory is that backend's). */
rm_backend *rm_executor_backend(const rm_executor *ex);

/* The arena's measured high-water mark: equals the plan's span once a step
 * has run (every buffer is placed with its aligned size). */
size_t rm_executor_arena_high_water(const rm_executor *ex);
/* Bytes of fixed memory actually allocated (parameters, gradients, buffers,
 * labels, the loss slot on CUDA, workspace) and the workspace alone. */
size_t rm_executor_fixed_bytes(const rm_executor *ex);
size_t rm_executor_workspace_bytes(const rm_executor *ex);
/* The arena's memory (a device pointer on CUDA) and its size. It holds
 * nothing between steps: inference passes (rm_executor_infer, the trainer's
 * evaluation) run in it instead of allocating memory outside the budget, as
 * the tests check through this accessor. */
void *rm_executor_arena_memory(const rm_executor *ex, size_t *bytes);

/* The fixed memory rm_executor_create allocates for m at a batch on be
 * (NULL: the CPU), each part rounded up to RM_ARENA_ALIGN as allocated:
 * weights, their gradients, batchnorm statistics, labels (with the loss slot
 * on CUDA) and the layers' workspace. train/footprint.h adds the optimizer's
 * state and the backend's own memory to it. RM_ERR_INVALID, with the
 * message RM_FIXED_TOO_LARGE, when the parts add up to more than
 * RM_MAX_DEVICE_BYTES. */
/* The one message for fixed memory over RM_MAX_DEVICE_BYTES (arguments:
 * the config's path and the batch), here and in train/footprint.c, which
 * adds the optimizer's state. */
#define RM_FIXED_TOO_LARGE                                                                                             \
    "%s at batch %d: the fixed memory (weights, gradients, optimizer state, batchnorm statistics, labels, "            \
    "workspace) adds up to more than 2^62 bytes (4 EiB), more than any device holds"
typedef struct rm_executor_fixed {
    size_t weights, grads, buffers, labels, workspace;
    size_t workspace_bytes; /* the workspace before rounding */
    size_t total;
} rm_executor_fixed;
int rm_executor_fixed_needed(rm_executor_fixed *f, const rm_model *m, int batch, const rm_backend *be, rm_err *e);

/* The largest scratch any forward or backward of m needs at a batch size: the
 * workspace rm_executor_create allocates. The first is the CPU's (the layers'
 * workspace_bytes); _on is a backend kind's (rm_backend_kind_layer_workspace:
 * for CUDA the bound every kernel library fits in). */
int rm_executor_workspace_needed(size_t *out, const rm_model *m, int batch, rm_err *e);
int rm_executor_workspace_needed_on(size_t *out, const rm_model *m, int batch, rm_backend_kind kind, rm_err *e);

#endif
