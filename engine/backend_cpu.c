/* The CPU reference backend: plain host memory. */
#include <stdlib.h>
#include <string.h>

#include "backend.h"

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

static const rm_backend_ops cpu_ops = {
    cpu_alloc, cpu_release, cpu_copy, cpu_copy, cpu_copy, cpu_zero, cpu_sync, cpu_destroy,
};

int rm_backend_cpu_create(rm_backend **out, rm_err *e)
{
    rm_backend *be = calloc(1, sizeof *be);
    if (!be) return rm_errorf(e, RM_ERR_NOMEM, "cpu backend: out of memory");
    be->kind = RM_BACKEND_CPU;
    be->name = "cpu";
    be->ops = &cpu_ops;
    *out = be;
    return RM_OK;
}

void rm_backend_free(rm_backend *be)
{
    if (!be) return;
    be->ops->destroy(be->ctx);
    free(be);
}
