/* The CPU backend's context and compute ops (backend_cpu_compute.c), named
 * so that backend_cpu.c can put them in its ops table. Internal to engine/. */
#ifndef REMAT_BACKEND_CPU_INTERNAL_H
#define REMAT_BACKEND_CPU_INTERNAL_H

#include "backend_cpu.h"
#include "layer.h"

/* One CPU backend's settings and kernel table. rm_backend_host() has none
 * (ctx NULL): the reference on one thread. */
typedef struct rm_cpu_ctx {
    rm_cpu_kernels lib;
    int threads;
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
/* rm_cpu_loop_threads for a context. */
static inline int rm_cpu_ctx_loop_threads(const void *ctx, size_t work)
{
    return work < RM_CPU_LOOP_MIN ? 1 : rm_cpu_ctx_threads(ctx);
}

/* The workspace bound of the CPU kind (rm_backend_kind_layer_workspace):
 * the largest exact need over the CPU kernel libraries, so that planning
 * needs no backend and every command sees the same fixed bytes whichever
 * library trains (as the CUDA kind's bound covers its libraries). */
size_t rm_backend_cpu_layer_workspace_bound(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in,
                                            int nin, rm_shape out, int backward);

int rm_cpu_poison(void *ctx, void *dst, size_t bytes, rm_err *e);
int rm_cpu_grad_sum(void *ctx, float *out, const float *const *src, int nsrc, size_t count, rm_err *e);
int rm_cpu_sgd_update(void *ctx, float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
                      int nesterov, rm_err *e);
int rm_cpu_adam_update(void *ctx, float *w, const float *dw, float *m, float *v, size_t n, const rm_adam_scalars *k,
                       rm_err *e);

#endif
