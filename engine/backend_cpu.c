/* The CPU reference backend: plain host memory, the layers' CPU kernels, and
 * the reference loops of backend_cpu_compute.c. Every op is done when it
 * returns. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cpu.h"
#include "layer.h"

static int cpu_alloc(void *ctx, void **ptr, size_t bytes, rm_err *e)
{
    (void)ctx;
    /* 64-byte alignment keeps vector loads aligned and matches the arena. */
    size_t rounded = (bytes + 63) / 64 * 64;
    *ptr = rounded ? aligned_alloc(64, rounded) : NULL;
    if (rounded && !*ptr) return rm_errorf(e, RM_ERR_NOMEM, "cpu backend: cannot allocate %zu bytes", bytes);
    return RM_OK;
}

static void cpu_release(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static int cpu_copy(void *ctx, void *dst, const void *src, size_t bytes, rm_err *e)
{
    (void)ctx;
    (void)e;
    if (bytes) memmove(dst, src, bytes);
    return RM_OK;
}

static int cpu_zero(void *ctx, void *dst, size_t bytes, rm_err *e)
{
    (void)ctx;
    (void)e;
    if (bytes) memset(dst, 0, bytes);
    return RM_OK;
}

static int cpu_sync(void *ctx, rm_err *e)
{
    (void)ctx;
    (void)e;
    return RM_OK;
}

static void cpu_destroy(void *ctx) { (void)ctx; }

/* Unbounded: the CPU backend sets no limit of its own; the operating system
 * refuses an allocation it cannot hold (RM_ERR_NOMEM from cpu_alloc). */
static int cpu_mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes, rm_err *e)
{
    (void)ctx, (void)e;
    *free_bytes = *total_bytes = SIZE_MAX;
    return RM_OK;
}

static int cpu_layer_forward(void *ctx, const rm_layer_desc *d, const rm_layer_call *call, rm_err *e)
{
    (void)ctx;
    return d->forward_cpu(call, e);
}

static int cpu_layer_backward(void *ctx, const rm_layer_desc *d, const rm_layer_call *call, rm_err *e)
{
    (void)ctx;
    return d->backward_cpu(call, e);
}

static size_t cpu_layer_workspace(void *ctx, const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in,
                                  int nin, rm_shape out, int backward)
{
    (void)ctx;
    return d->workspace_bytes ? d->workspace_bytes(cfg, in, nin, out, backward) : 0;
}

/* ---- timers: the host clock ---- */

struct rm_backend_timer {
    int n;
    double t[]; /* [n] seconds on CLOCK_MONOTONIC */
};

static int cpu_timer_create(void *ctx, rm_backend_timer **out, int nevents, rm_err *e)
{
    (void)ctx;
    *out = NULL;
    if (nevents < 1) return rm_errorf(e, RM_ERR_INVALID, "cpu timer: %d events", nevents);
    rm_backend_timer *t = calloc(1, sizeof *t + (size_t)nevents * sizeof(double));
    if (!t) return rm_errorf(e, RM_ERR_NOMEM, "cpu timer: out of memory");
    t->n = nevents;
    *out = t;
    return RM_OK;
}

static int cpu_timer_record(void *ctx, rm_backend_timer *t, int k, rm_err *e)
{
    (void)ctx;
    if (k < 0 || k >= t->n) return rm_errorf(e, RM_ERR_INVALID, "cpu timer: event %d of %d", k, t->n);
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    t->t[k] = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    return RM_OK;
}

static int cpu_timer_elapsed(void *ctx, rm_backend_timer *t, int a, int b, double *seconds, rm_err *e)
{
    (void)ctx;
    if (a < 0 || a >= t->n || b < 0 || b >= t->n)
        return rm_errorf(e, RM_ERR_INVALID, "cpu timer: events %d, %d of %d", a, b, t->n);
    *seconds = t->t[b] - t->t[a];
    return RM_OK;
}

static void cpu_timer_free(void *ctx, rm_backend_timer *t)
{
    (void)ctx;
    free(t);
}

static const rm_backend_ops cpu_ops = {
    .alloc = cpu_alloc,
    .release = cpu_release,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .destroy = cpu_destroy,
    .mem_info = cpu_mem_info,
    .layer_forward = cpu_layer_forward,
    .layer_backward = cpu_layer_backward,
    .layer_workspace = cpu_layer_workspace,
    .poison = rm_cpu_poison,
    .grad_sum = rm_cpu_grad_sum,
    .sgd_update = rm_cpu_sgd_update,
    .adam_update = rm_cpu_adam_update,
    .timer_create = cpu_timer_create,
    .timer_record = cpu_timer_record,
    .timer_elapsed = cpu_timer_elapsed,
    .timer_free = cpu_timer_free,
};

/* No state: every CPU backend is this one with its own allocation, so
 * rm_backend_free can free any backend alike. */
static rm_backend host_backend = {
    .kind = RM_BACKEND_CPU, .name = "cpu", .ops = &cpu_ops, .ctx = NULL,
    .max_grad_sum = 0, .queued = 0, .host_memory = 1,
};

rm_backend *rm_backend_host(void) { return &host_backend; }

int rm_backend_cpu_create(rm_backend **out, rm_err *e)
{
    rm_backend *be = malloc(sizeof *be);
    if (!be) return rm_errorf(e, RM_ERR_NOMEM, "cpu backend: out of memory");
    *be = host_backend;
    *out = be;
    return RM_OK;
}
