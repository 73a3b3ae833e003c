/* The CPU backend: plain host memory, the layers' CPU kernels of its kernel
 * library (backend_cpu.h: reference or fast, chosen once per layer in the
 * kernel table below), its thread count, and the loops of
 * backend_cpu_compute.c. Every op is done when it returns. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cpu_internal.h"
#include "clock.h"
#include "cores.h"
#include "cpu_blas.h"
#include "log.h"

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

static void cpu_destroy(void *ctx)
{
    free(ctx);
}

/* Unbounded: the CPU backend sets no limit of its own; the operating system
 * refuses an allocation it cannot hold (RM_ERR_NOMEM from cpu_alloc). */
static int cpu_mem_info(void *ctx, size_t *free_bytes, size_t *total_bytes, rm_err *e)
{
    (void)ctx, (void)e;
    *free_bytes = *total_bytes = SIZE_MAX;
    return RM_OK;
}

/* ---- layers: the kernel table ---- */

/* Layer d's kernels for library lib: those it declares for the CPU
 * (layers/kernels.c), the reference's where it declares none. */
static rm_layer_kernels kernels_for(const rm_layer_desc *d, rm_cpu_kernel_lib lib)
{
    const rm_layer_backend_kernels *b = rm_layer_backend_of(d, RM_BACKEND_CPU);
    rm_layer_kernels k = {b->forward, b->backward, NULL};
    if (b->library) k = b->library((int)lib);
    if (!k.forward) k.forward = d->forward_ref;
    if (!k.backward) k.backward = d->backward_ref;
    return k;
}

/* Layer d's kernels for the backend's library: resolved at the first call
 * after the library was set, then taken from the table. The host backend
 * (no context) runs the reference. */
static rm_layer_kernels kernels_of(void *ctx, const rm_layer_desc *d)
{
    rm_cpu_ctx *c = ctx;
    if (!c) return kernels_for(d, RM_CPU_KERNELS_REFERENCE);
    if (!c->resolved[d->kind]) {
        c->kernels[d->kind] = kernels_for(d, c->lib);
        c->resolved[d->kind] = 1;
    }
    return c->kernels[d->kind];
}

/* Between layer calls, the governor may change the count (no kernel's bits
 * depend on it). */
static void govern(void *ctx)
{
    rm_cpu_ctx *c = ctx;
    if (c && c->gov.on) c->threads = rm_cpu_governor_tick(&c->gov, c->threads);
}

static int cpu_layer_forward(void *ctx, const rm_layer_desc *d, const rm_layer_call *call, rm_err *e)
{
    govern(ctx);
    rm_layer_kernels k = kernels_of(ctx, d);
    if (!k.forward) return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: no forward kernel for backend cpu", d->name);
    return k.forward(call, e);
}

static int cpu_layer_backward(void *ctx, const rm_layer_desc *d, const rm_layer_call *call, rm_err *e)
{
    govern(ctx);
    rm_layer_kernels k = kernels_of(ctx, d);
    if (!k.backward) return rm_errorf(e, RM_ERR_UNSUPPORTED, "%s: no backward kernel for backend cpu", d->name);
    return k.backward(call, e);
}

/* The exact need of kernels k of layer d: theirs, or the declaration's, or
 * the reference's. */
static size_t kernels_workspace(rm_layer_kernels k, const rm_layer_desc *d, const rm_layer_config *cfg,
                                const rm_shape *in, int nin, rm_shape out, int backward)
{
    if (k.workspace) return k.workspace(NULL, cfg, in, nin, out, backward);
    const rm_layer_backend_kernels *b = rm_layer_backend_of(d, RM_BACKEND_CPU);
    if (b->workspace) return b->workspace(cfg, in, nin, out, backward);
    return d->workspace_bytes ? d->workspace_bytes(cfg, in, nin, out, backward) : 0;
}

static size_t cpu_layer_workspace(void *ctx, const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in,
                                  int nin, rm_shape out, int backward)
{
    return kernels_workspace(kernels_of(ctx, d), d, cfg, in, nin, out, backward);
}

size_t rm_backend_cpu_layer_workspace_bound(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in,
                                            int nin, rm_shape out, int backward)
{
    size_t most = 0;
    for (int lib = 0; lib < RM_CPU_KERNELS_COUNT; lib++) {
        size_t w = kernels_workspace(kernels_for(d, (rm_cpu_kernel_lib)lib), d, cfg, in, nin, out, backward);
        if (w > most) most = w;
    }
    return most;
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
    t->t[k] = rm_now();
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

static size_t cpu_fixed_bytes(void *ctx)
{
    (void)ctx;
    return 0;
}

static int cpu_set_kernels_op(void *ctx, int lib, rm_err *e);
static int cpu_kernels_op(void *ctx)
{
    return ctx ? (int)((rm_cpu_ctx *)ctx)->lib : RM_CPU_KERNELS_REFERENCE;
}
static int cpu_set_threads_op(void *ctx, int threads, rm_err *e);
static int cpu_threads_op(void *ctx)
{
    return rm_cpu_ctx_threads(ctx);
}
static void cpu_describe(void *ctx, char *buf, size_t len);

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
    .fixed_bytes = cpu_fixed_bytes,
    .set_kernels = cpu_set_kernels_op,
    .kernels = cpu_kernels_op,
    .set_threads = cpu_set_threads_op,
    .threads = cpu_threads_op,
    .describe = cpu_describe,
    .layer_forward = cpu_layer_forward,
    .layer_backward = cpu_layer_backward,
    .layer_workspace = cpu_layer_workspace,
    .poison = rm_cpu_poison,
    .grad_sum = rm_cpu_grad_sum,
    .scale = rm_cpu_scale,
    .sgd_update = rm_cpu_sgd_update,
    .adam_update = rm_cpu_adam_update,
    .timer_create = cpu_timer_create,
    .timer_record = cpu_timer_record,
    .timer_elapsed = cpu_timer_elapsed,
    .timer_free = cpu_timer_free,
};

/* The backend of calls made without one: no context, so the reference on
 * one thread, and nothing to free. */
static rm_backend host_backend = {
    .kind = RM_BACKEND_CPU,
    .name = "cpu",
    .ops = &cpu_ops,
    .ctx = NULL,
    .max_grad_sum = 0,
    .queued = 0,
    .host_memory = 1,
};

rm_backend *rm_backend_host(void)
{
    return &host_backend;
}

/* A CPU backend's context, or NULL (the host backend, another kind). */
static rm_cpu_ctx *ctx_of(const rm_backend *be)
{
    return be && be->ops == &cpu_ops ? be->ctx : NULL;
}

static int cpu_set_kernels_op(void *ctx, int lib, rm_err *e)
{
    rm_cpu_ctx *c = ctx;
    if (!c) return rm_errorf(e, RM_ERR_INVALID, "set cpu kernel library: not a CPU backend of its own");
    if (lib < 0 || lib >= RM_CPU_KERNELS_COUNT)
        return rm_errorf(e, RM_ERR_INVALID, "set cpu kernel library: no library %d", lib);
    if (lib == RM_CPU_KERNELS_FAST) {
        int rc = rm_cpu_blas_init(e);
        if (rc) return rc;
    }
    c->lib = (rm_cpu_kernel_lib)lib;
    memset(c->resolved, 0, sizeof c->resolved);
    return RM_OK;
}

static int cpu_set_threads_op(void *ctx, int threads, rm_err *e)
{
    rm_cpu_ctx *c = ctx;
    if (!c) return rm_errorf(e, RM_ERR_INVALID, "set cpu threads: not a CPU backend of its own");
    if (threads < 1 || threads > RM_MAX_THREADS)
        return rm_errorf(e, RM_ERR_INVALID, "set cpu threads: %d threads (1 to %d)", threads, RM_MAX_THREADS);
    c->threads = threads;
    c->gov.on = 0;
    return RM_OK;
}

int rm_backend_cpu_set_kernels(rm_backend *be, rm_cpu_kernel_lib lib, rm_err *e)
{
    rm_cpu_ctx *c = ctx_of(be);
    if (!c) return rm_errorf(e, RM_ERR_INVALID, "set cpu kernel library: not a CPU backend of its own");
    return cpu_set_kernels_op(c, (int)lib, e);
}

int rm_backend_cpu_set_threads(rm_backend *be, int threads, rm_err *e)
{
    rm_cpu_ctx *c = ctx_of(be);
    if (!c) return rm_errorf(e, RM_ERR_INVALID, "set cpu threads: not a CPU backend of its own");
    return cpu_set_threads_op(c, threads, e);
}

int rm_backend_cpu_govern(rm_backend *be, rm_cpu_load_fn read, void *ctx, double window_s, rm_err *e)
{
    rm_cpu_ctx *c = ctx_of(be);
    if (!c) return rm_errorf(e, RM_ERR_INVALID, "cpu thread governor: not a CPU backend of its own");
    int most = c->gov.on ? c->gov.most : c->threads;
    if (c->gov.on && read) c->threads = most; /* a new reader starts from every thread */
    rm_cpu_governor_start(&c->gov, most, read, ctx, window_s);
    return RM_OK;
}

int rm_backend_cpu_adaptive(const rm_backend *be)
{
    const rm_cpu_ctx *c = ctx_of(be);
    return c && c->gov.on;
}

int rm_backend_cpu_max_threads(const rm_backend *be)
{
    const rm_cpu_ctx *c = ctx_of(be);
    return c && c->gov.on ? c->gov.most : rm_backend_cpu_threads(be);
}

rm_cpu_kernel_lib rm_backend_cpu_kernels(const rm_backend *be)
{
    const rm_cpu_ctx *c = ctx_of(be);
    return c ? c->lib : RM_CPU_KERNELS_REFERENCE;
}

int rm_backend_cpu_threads(const rm_backend *be)
{
    return rm_cpu_ctx_threads(ctx_of(be));
}

static void cpu_describe(void *ctx, char *buf, size_t len)
{
    char blas[96] = "";
    int nt = rm_cpu_ctx_threads(ctx);
    if (cpu_kernels_op(ctx) == RM_CPU_KERNELS_FAST)
        snprintf(buf, len, "fast kernels (%s), %d thread%s", rm_cpu_blas_describe(blas, sizeof blas), nt,
                 nt == 1 ? "" : "s");
    else
        snprintf(buf, len, "reference kernels, %d thread%s", nt, nt == 1 ? "" : "s");
}

/* Kernel library and threads from the options, else the environment, else
 * the defaults: an option wins, and the variable it replaces is not read. */
static int settings_from(rm_cpu_ctx *c, const rm_backend_options *o, rm_err *e)
{
    c->lib = RM_CPU_KERNELS_FAST;
    c->threads = rm_usable_cores();
    const char *v = getenv("REMAT_CPU_KERNELS");
    if (o && o->set_kernels) {
        if (o->kernels < 0 || o->kernels >= RM_CPU_KERNELS_COUNT)
            return rm_errorf(e, RM_ERR_INVALID, "cpu backend: no kernel library %d", o->kernels);
        c->lib = (rm_cpu_kernel_lib)o->kernels;
    } else if (v && *v && rm_cpu_kernel_lib_parse(&c->lib, v, e)) {
        return rm_err_context(e, "cpu backend: REMAT_CPU_KERNELS");
    }
    v = getenv("REMAT_THREADS");
    if (o && o->threads) {
        if (o->threads < 1 || o->threads > RM_MAX_THREADS)
            return rm_errorf(e, RM_ERR_INVALID, "cpu backend: %d threads (1 to %d)", o->threads, RM_MAX_THREADS);
        c->threads = o->threads;
    } else if (v && *v) {
        if (rm_backend_threads_parse(&c->threads, v, e)) return rm_err_context(e, "cpu backend: REMAT_THREADS");
    } else { /* the user left the count to the backend: every core while they are free */
        rm_cpu_governor_start(&c->gov, c->threads, rm_cpu_load_read_proc, NULL, RM_CPU_GOVERN_WINDOW_S);
    }
    return RM_OK;
}

int rm_backend_cpu_create_with(rm_backend **out, const rm_backend_options *o, rm_err *e)
{
    *out = NULL;
    rm_backend *be = malloc(sizeof *be);
    rm_cpu_ctx *c = calloc(1, sizeof *c);
    if (!be || !c) {
        free(be);
        free(c);
        return rm_errorf(e, RM_ERR_NOMEM, "cpu backend: out of memory");
    }
    *be = host_backend;
    be->ctx = c;
    int rc = settings_from(c, o, e);
    /* The BLAS is prepared now, so that a failure shows at creation. */
    if (!rc && c->lib == RM_CPU_KERNELS_FAST) rc = rm_cpu_blas_init(e);
    if (rc) {
        free(c);
        free(be);
        return rc;
    }
    RM_LOG_INFO("cpu backend: %s kernels, %d thread%s", rm_cpu_kernel_lib_name(c->lib), c->threads,
                c->threads == 1 ? "" : "s");
    *out = be;
    return RM_OK;
}

int rm_backend_cpu_create(rm_backend **out, rm_err *e)
{
    return rm_backend_cpu_create_with(out, NULL, e);
}
