/* The CPU backend's compute ops (backend_cpu_compute.c), named so that
 * backend_cpu.c can put them in its ops table. Internal to engine/. */
#ifndef REMAT_BACKEND_CPU_H
#define REMAT_BACKEND_CPU_H

#include "backend.h"

int rm_cpu_poison(void *ctx, void *dst, size_t bytes, rm_err *e);
int rm_cpu_grad_sum(void *ctx, float *out, const float *const *src, int nsrc, size_t count, rm_err *e);
int rm_cpu_sgd_update(void *ctx, float *w, const float *dw, float *v, size_t n, float lr, float wd, float mu,
                      int nesterov, rm_err *e);
int rm_cpu_adam_update(void *ctx, float *w, const float *dw, float *m, float *v, size_t n, const rm_adam_scalars *k,
                       rm_err *e);

#endif
