/* The CPU backend's context and compute ops (backend_cpu_compute.c), named
 * so that backend_cpu.c can put them in its ops table. Internal to engine/cpu/
 * (and its tests). */
#ifndef REMAT_BACKEND_CPU_INTERNAL_H
#define REMAT_BACKEND_CPU_INTERNAL_H

#include "backend_cpu.h"
#include "layer.h"

/* The thread governor of a backend whose count the user left to it
 * (backend_cpu_threads.c): the readings it decides from and when it last
 * took one. */
typedef struct rm_cpu_governor {
    int on;   /* following the load; 0: the count is fixed */
    int most; /* the count it may go up to */
    rm_cpu_load_fn read;
    void *read_ctx;
    double window_s;   /* seconds of work between readings (0: every layer call) */
    double last_check; /* monotonic seconds of the last reading */
    rm_cpu_load last;
    int have_last;
    long windows; /* readings compared so far */
    long rose_at; /* the window of the last rise still on trial, 0: none */
    int strikes;  /* contended windows in a row */
    int hold;     /* windows left before a rise may be tried */
    int hold_len; /* the hold after the next drop */
    long drops;   /* drops so far (for tests and logs) */
} rm_cpu_governor;

/* The monotonic clock, this process's threads' summed run_delay and the idle
 * time of the CPUs it may use, from /proc (the default reader). */
int rm_cpu_load_read_proc(void *ctx, rm_cpu_load *out);
/* g follows the load from now on, up to `most` threads (off when most < 2
 * or read is NULL). */
void rm_cpu_governor_start(rm_cpu_governor *g, int most, rm_cpu_load_fn read, void *read_ctx, double window_s);
/* The count to run at after a window of `wall` seconds at `cur` threads in
 * which this process's threads waited `wait` seconds for a CPU and the
 * usable CPUs were idle `idle` seconds in all (updates g's hold). */
int rm_cpu_governor_decide(rm_cpu_governor *g, int cur, double wall, double wait, double idle);
/* Between layer calls: takes a reading once a window has passed and
 * returns the count to run at (cur when off or inside a window). */
int rm_cpu_governor_tick(rm_cpu_governor *g, int cur);

/* Seconds of work between the default governor's readings: a few per
 * ResNet-18 step, each a few tens of microseconds of /proc. */
#define RM_CPU_GOVERN_WINDOW_S 0.2

/* One CPU backend's settings and kernel table. rm_backend_host() has none
 * (ctx NULL): the reference on one thread. */
typedef struct rm_cpu_ctx {
    rm_cpu_kernel_lib lib;
    int threads; /* the count the kernels run at now */
    rm_cpu_governor gov;
    /* Each layer kind's kernels for lib, resolved at its first call after
     * the library is set (the one place the choice is made), then reused. */
    rm_layer_kernels kernels[RM_LAYER_KIND_COUNT];
    unsigned char resolved[RM_LAYER_KIND_COUNT];
} rm_cpu_ctx;

/* The threads of a context (1 for the host backend's NULL). */
static inline int rm_cpu_ctx_threads(const void *ctx)
{
    return ctx ? ((const rm_cpu_ctx *)ctx)->threads : 1;
}
/* rm_backend_loop_threads for a context. */
static inline int rm_cpu_ctx_loop_threads(const void *ctx, size_t work)
{
    return work < RM_LOOP_MIN ? 1 : rm_cpu_ctx_threads(ctx);
}

/* The workspace bound of the CPU kind (rm_backend_kind_layer_workspace):
 * the largest exact need over the CPU kernel libraries, so that planning
 * needs no backend and every command sees the same fixed bytes whichever
 * library trains (as the CUDA kind's bound covers its libraries). */
size_t rm_backend_cpu_layer_workspace_bound(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in,
                                            int nin, rm_shape out, int backward);

int rm_cpu_poison(void *ctx, void *dst, size_t bytes, rm_err *e);
int rm_cpu_grad_sum(void *ctx, float *out, const float *const *src, int nsrc, size_t count, rm_err *e);
int rm_cpu_scale(void *ctx, float *x, size_t count, float a, rm_err *e);
int rm_cpu_sgd_update(void *ctx, float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
                      int nesterov, rm_err *e);
int rm_cpu_adam_update(void *ctx, float *w, const float *dw, float *m, float *v, size_t n, const rm_adam_scalars *k,
                       rm_err *e);

#endif
