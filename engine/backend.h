/* Device backends: the interface and the registry. A backend owns device
 * memory, the compute an executor and an optimizer ask of it (layer kernels,
 * poison fill, gradient sums, optimizer updates, timers) and the answers to
 * every device question (its own fixed bytes, its free memory, its kernel
 * library, its threads), as ggml's ggml_backend_i does, so no caller
 * branches on the kind of device: it calls be->ops, or looks a backend up by
 * name in the registry (backend.c). Each backend lives in a folder of its
 * own: engine/cpu/ (the reference every other backend is tested against)
 * and engine/cuda/, with the layers' kernels for it in layers/cpu/ and
 * layers/cuda/; their own settings headers (backend_cpu.h, backend_cuda.h)
 * are for their tests and benchmarks, never for generic code.
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

/* The registry's ids, one per backend (the index of its entry in backend.c
 * and of its kernels in a layer's declaration, layer.h). Only the registry
 * and the backends name them; callers hold one from rm_backend_find. */
typedef enum rm_backend_kind { RM_BACKEND_CPU = 0, RM_BACKEND_CUDA, RM_BACKEND_KIND_COUNT } rm_backend_kind;
/* The backend of commands that name none: the registry's first, the CPU. */
#define RM_BACKEND_DEFAULT ((rm_backend_kind)0)

typedef struct rm_backend rm_backend;
/* Declared in layer.h; the backend runs layers through these. */
struct rm_layer_desc;
struct rm_layer_call;
struct rm_layer_config;
struct rm_comm; /* comm.h */

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
    /* Device memory the backend itself holds outside any arena (CUDA: the
     * cuBLAS workspace), so that a memory budget counts it. NULL: none. */
    size_t (*fixed_bytes)(void *ctx);

    /* ---- settings (rm_backend_options) ---- */
    /* The kernel library the layer kernels run (an id among the registry
     * entry's kernel_libs), set between steps, never inside one. */
    int (*set_kernels)(void *ctx, int lib, rm_err *e);
    int (*kernels)(void *ctx);
    /* Host threads of the backend's loops: set (fixing the count), and the
     * count now. NULL: a backend without host threads (a device runs its own
     * kernels): rm_backend_apply refuses a count, loops run on one thread. */
    int (*set_threads)(void *ctx, int threads, rm_err *e);
    int (*threads)(void *ctx);
    /* Its settings in words for summaries, e.g. "fast kernels (BLIS 0.9.0,
     * skx kernels), 2 threads" or "GPU 0, cudnn kernels". */
    void (*describe)(void *ctx, char *buf, size_t len);

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
    /* x[i] = x[i] * a in float, i < count: the mean of gradients summed over
     * micro-batches or ranks (train/trainer.c). */
    int (*scale)(void *ctx, float *x, size_t count, float a, rm_err *e);

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

    /* ---- data parallel (comm.h) ---- */
    /* A communicator over the same ranks as host whose buffers are this
     * backend's memory (NCCL on CUDA), bootstrapped over host; *out is NULL
     * when this build has none. NULL op: the backend's memory is host memory,
     * or it has no transport of its own (host: gradients go through host memory). */
    int (*device_comm)(void *ctx, struct rm_comm *host, struct rm_comm **out, rm_err *e);
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

/* What a command asks of a backend (--kernels, --threads); all zero keeps
 * the backend's defaults (its environment variables', else its own). Given
 * at creation they win over the environment, which is then not read. */
typedef struct rm_backend_options {
    int set_kernels; /* 1: use kernels */
    int kernels;     /* a kernel library id of the backend (rm_backend_kernels_parse) */
    int threads;     /* host threads; 0: the default */
} rm_backend_options;

/* One entry of the registry (backend.c): what is known of a backend before
 * one exists. Defined in the backend's folder, in every build (a build
 * without the device still names it and parses its settings). */
typedef struct rm_backend_info {
    rm_backend_kind kind;
    const char *name;   /* "cpu", "cuda": --device's value, rm_backend.name */
    const char *device; /* for messages: "the CPU", "the GPU" */
    /* Its kernel libraries by id (0 .. nkernel_libs-1), and the
     * environment variable that chooses one when no option does. */
    const char *const *kernel_libs;
    int nkernel_libs;
    const char *kernels_env;
    int has_threads; /* 1: takes a host thread count */
    /* A backend (device 0) with o's settings (NULL: the defaults);
     * RM_ERR_UNSUPPORTED when this build or machine has no such device. */
    int (*create)(rm_backend **out, const rm_backend_options *o, rm_err *e);
    /* Scratch bytes one call of d needs on ANY backend of this kind, a
     * function of the shapes alone (planning without a device): a bound
     * every kernel library of the backend fits in. */
    size_t (*layer_workspace_bound)(const struct rm_layer_desc *d, const struct rm_layer_config *cfg,
                                    const rm_shape *in, int nin, rm_shape out, int backward);
} rm_backend_info;

/* The entry of kind, or NULL for none. */
const rm_backend_info *rm_backend_info_of(rm_backend_kind kind);
/* The backend called name ("cpu", "cuda"); RM_ERR_INVALID naming the value
 * and the choices otherwise. */
int rm_backend_find(rm_backend_kind *out, const char *name, rm_err *e);
/* Every backend's name for messages: "cpu or cuda". */
const char *rm_backend_list(char *buf, size_t len);
/* A kernel library of kind by name; RM_ERR_INVALID naming the value and the
 * backend's choices otherwise. */
int rm_backend_kernels_parse(int *lib, rm_backend_kind kind, const char *name, rm_err *e);
/* The name of kernel library lib of kind ("unknown" for none). */
const char *rm_backend_kernels_name(rm_backend_kind kind, int lib);
/* A host thread count from text: an integer from 1 to RM_MAX_THREADS. */
int rm_backend_threads_parse(int *out, const char *text, rm_err *e);
/* The index of name among names[0..count), or RM_ERR_INVALID naming what
 * was asked for and the choices ("unknown WHAT 'x' (a, b or c)"). */
int rm_backend_name_parse(int *out, const char *name, const char *const *names, int count, const char *what, rm_err *e);

/* The most host threads a backend takes (a bound on what a user may ask
 * for, not on the machine). */
#define RM_MAX_THREADS 1024

/* A backend of kind (CUDA: device 0), for callers that hold a kind: with
 * the defaults, or with o's settings. */
int rm_backend_create(rm_backend **out, rm_backend_kind kind, rm_err *e);
int rm_backend_create_with(rm_backend **out, rm_backend_kind kind, const rm_backend_options *o, rm_err *e);
/* "cpu" or "cuda" (what rm_backend.name says once one is created). */
const char *rm_backend_kind_name(rm_backend_kind kind);
/* The device in words for messages: "the CPU", "the GPU". */
const char *rm_backend_kind_device(rm_backend_kind kind);
void rm_backend_free(rm_backend *be);
/* The CPU backend of calls made without one (a layer call with be NULL, an
 * optimizer created on the host): static, never freed. */
rm_backend *rm_backend_host(void);

/* Applies o to be (between steps): RM_ERR_INVALID naming the backend when o
 * asks for a thread count of a backend without host threads. */
int rm_backend_apply(rm_backend *be, const rm_backend_options *o, rm_err *e);
/* be's settings in words (be->ops->describe). */
const char *rm_backend_describe(const rm_backend *be, char *buf, size_t len);
/* be->ops->fixed_bytes, 0 for NULL. */
size_t rm_backend_fixed_bytes(const rm_backend *be);
/* The kernel library be runs, by id (rm_backend_kernels_name). */
int rm_backend_kernels(const rm_backend *be);

/* Scratch bytes one call of d needs on ANY backend of kind, before one
 * exists (the registry entry's layer_workspace_bound). */
size_t rm_backend_kind_layer_workspace(rm_backend_kind kind, const struct rm_layer_desc *d,
                                       const struct rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                       int backward);

/* Loops over fewer independent outputs than this run on one thread (tens of
 * microseconds of work), where waking threads costs more than they save,
 * and far more on a machine whose cores are busy with other work: a
 * parallel region lasts until its last thread is scheduled. */
#define RM_LOOP_MIN 65536
/* The host threads of be (NULL: the host backend): 1 for a backend
 * without host threads. */
static inline int rm_backend_threads(const rm_backend *be)
{
    return be && be->ops->threads ? be->ops->threads(be->ctx) : 1;
}
/* Threads for a host loop over `work` independent outputs on be: its
 * threads, or 1 below RM_LOOP_MIN. */
static inline int rm_backend_loop_threads(const rm_backend *be, size_t work)
{
    return work < RM_LOOP_MIN ? 1 : rm_backend_threads(be);
}

static inline int rm_backend_alloc(rm_backend *be, void **ptr, size_t bytes, rm_err *e)
{
    return be->ops->alloc(be->ctx, ptr, bytes, e);
}
static inline void rm_backend_release(rm_backend *be, void *ptr)
{
    be->ops->release(be->ctx, ptr);
}

#endif
