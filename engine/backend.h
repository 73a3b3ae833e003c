/* Device backends: the interface only. A backend owns device memory and the
 * compute an executor and an optimizer ask of it (layer kernels, poison
 * fill, gradient sums, optimizer updates, timers), as ggml's ggml_backend_i
 * does, so no caller branches on the kind of device: it calls be->ops. The
 * CPU backend (backend_cpu.c, backend_cpu_compute.c) is the reference every
 * other backend is tested against; the CUDA backend (backend_cuda.cu,
 * backend_cuda_kernels.cu) has its own settings in backend_cuda.h.
 *
 * Every pointer an op takes is memory of that backend (device memory on a
 * device backend) unless named host. Ops queue their work: on a device
 * backend nothing waits until sync or a download, so an execution error of
 * a kernel may surface there. */
#ifndef REMAT_BACKEND_H
#define REMAT_BACKEND_H

#include <stddef.h>

#include "error.h"
#include "tensor.h"

typedef enum rm_backend_kind { RM_BACKEND_CPU = 0, RM_BACKEND_CUDA, RM_BACKEND_KIND_COUNT } rm_backend_kind;

typedef struct rm_backend rm_backend;
/* Declared in layer.h; the backend runs layers through these. */
struct rm_layer_desc;
struct rm_layer_call;
struct rm_layer_config;

/* Adam's per-step constants, computed on the host by the optimizer so that
 * every backend evaluates the same float operations. */
typedef struct rm_adam_scalars {
    float b1, one_minus_b1, b2, one_minus_b2, eps;
    float step_size; /* lr / (1 - b1^t) */
    float bc2_sqrt;  /* sqrt(1 - b2^t) */
    float l2;        /* wd added to the gradient (Adam) */
    float shrink;    /* 1 - lr*wd applied to w first (AdamW), else 1 */
} rm_adam_scalars;

/* Timestamps in the backend's order of work (the profiler's): on a device,
 * events on its stream (they time the device's work, not the host's
 * queuing); on the CPU, the host clock. */
typedef struct rm_backend_timer rm_backend_timer;

typedef struct rm_backend_ops {
    /* ---- memory ---- */
    int (*alloc)(void *ctx, void **ptr, size_t bytes, rm_err *e);
    void (*release)(void *ctx, void *ptr);
    /* Host <-> device copies; on the CPU backend both are memcpy. */
    int (*upload)(void *ctx, void *dst_dev, const void *src_host, size_t bytes, rm_err *e);
    int (*download)(void *ctx, void *dst_host, const void *src_dev, size_t bytes, rm_err *e);
    int (*copy)(void *ctx, void *dst_dev, const void *src_dev, size_t bytes, rm_err *e);
    int (*zero)(void *ctx, void *dst_dev, size_t bytes, rm_err *e);
    int (*sync)(void *ctx, rm_err *e);
    void (*destroy)(void *ctx);
    /* Free and total memory, so a budget larger than the device holds is
     * refused before anything is allocated. The CPU backend answers SIZE_MAX
     * for both: it sets no bound of its own (the operating system does). */
    int (*mem_info)(void *ctx, size_t *free_bytes, size_t *total_bytes, rm_err *e);

    /* ---- layers (rm_layer_forward / rm_layer_backward call these) ---- */
    /* One forward or backward of layer d (layer.h's contract); call->be is
     * this backend. RM_ERR_UNSUPPORTED when the layer has no kernel here. */
    int (*layer_forward)(void *ctx, const struct rm_layer_desc *d, const struct rm_layer_call *call, rm_err *e);
    int (*layer_backward)(void *ctx, const struct rm_layer_desc *d, const struct rm_layer_call *call, rm_err *e);
    /* Scratch bytes one call of d needs with this backend's kernels and
     * settings, exactly (CUDA: of its kernel library). */
    size_t (*layer_workspace)(void *ctx, const struct rm_layer_desc *d, const struct rm_layer_config *cfg,
                              const rm_shape *in, int nin, rm_shape out, int backward);

    /* ---- the executor's own nodes ---- */
    /* Fills bytes at dst so that every float there reads as a NaN (poison
     * for values a plan has freed). */
    int (*poison)(void *ctx, void *dst, size_t bytes, rm_err *e);
    /* out[i] = (float)(sum over d in order of (double)src[d][i]), i < count:
     * the same bits on every backend and under every schedule. nsrc is at
     * most max_grad_sum when that is set (the executor checks at creation). */
    int (*grad_sum)(void *ctx, float *out, const float *const *src, int nsrc, size_t count, rm_err *e);

    /* ---- the optimizer (optim.h has the rules) ---- */
    /* w -= lr * (dw + wd*w), or with momentum v (NULL: none) and Nesterov. */
    int (*sgd_update)(void *ctx, float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
                      int nesterov, rm_err *e);
    /* Adam (or AdamW) with moments m, v. */
    int (*adam_update)(void *ctx, float *w, const float *dw, float *m, float *v, size_t n, const rm_adam_scalars *k,
                       rm_err *e);

    /* ---- timers (the profiler) ---- */
    int (*timer_create)(void *ctx, rm_backend_timer **out, int nevents, rm_err *e);
    /* Marks event k now (in the backend's order of work). */
    int (*timer_record)(void *ctx, rm_backend_timer *t, int k, rm_err *e);
    /* Seconds from event a to event b, waiting for b to be reached. */
    int (*timer_elapsed)(void *ctx, rm_backend_timer *t, int a, int b, double *seconds, rm_err *e);
    void (*timer_free)(void *ctx, rm_backend_timer *t);
} rm_backend_ops;

struct rm_backend {
    /* What the backend is, for names and creation: nothing outside the
     * backends branches on it (the ops and the properties below say what
     * differs). */
    rm_backend_kind kind;
    const char *name;
    const rm_backend_ops *ops;
    void *ctx;
    /* Most sources one grad_sum takes (a CUDA kernel takes their pointers as
     * one argument); 0: no limit. */
    int max_grad_sum;
    /* 1: work is queued on a device and a download waits for all of it, so
     * an executor keeps the step's loss in a device slot and downloads it
     * once, at the end of the step. 0: every op is done when it returns. */
    int queued;
    /* 1: the backend's memory is host memory (the host may read and write
     * it directly, as optimizer state copies do). */
    int host_memory;
};

int rm_backend_cpu_create(rm_backend **out, rm_err *e);
/* Fails with RM_ERR_UNSUPPORTED when built without CUDA or with no device. */
int rm_backend_cuda_create(rm_backend **out, int device, rm_err *e);
/* A backend of kind (CUDA: device 0), for callers that hold a kind. */
int rm_backend_create(rm_backend **out, rm_backend_kind kind, rm_err *e);
/* "cpu" or "cuda" (what rm_backend.name says once one is created). */
const char *rm_backend_kind_name(rm_backend_kind kind);
/* The device in words for messages: "the CPU", "the GPU". */
const char *rm_backend_kind_device(rm_backend_kind kind);
void rm_backend_free(rm_backend *be);
/* The CPU backend of calls made without one (a layer call with be NULL, an
 * optimizer created on the host): static, never freed. */
rm_backend *rm_backend_host(void);

/* Scratch bytes one call of d needs on ANY backend of kind, before one
 * exists (planning for a device): the CPU kernels' need, or for CUDA the
 * bound every kernel library fits in (layer.h, workspace_bytes_cuda). */
size_t rm_backend_kind_layer_workspace(rm_backend_kind kind, const struct rm_layer_desc *d,
                                       const struct rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                       int backward);

static inline int rm_backend_alloc(rm_backend *be, void **ptr, size_t bytes, rm_err *e)
{
    return be->ops->alloc(be->ctx, ptr, bytes, e);
}
static inline void rm_backend_release(rm_backend *be, void *ptr) { be->ops->release(be->ctx, ptr); }

#endif
