/* The GPU suite's shared helpers (cuda_fixture.h). */
#include "cuda_fixture.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void *dev_upload(devmem *m, const void *host, size_t bytes)
{
    rm_err e = {0};
    void *p = NULL;
    cr_assert_eq(rm_backend_alloc(m->be, &p, bytes ? bytes : 4, &e), RM_OK, "%s", e.msg);
    cr_assert_lt(m->n, 64);
    m->ptr[m->n++] = p;
    if (host && bytes) cr_assert_eq(m->be->ops->upload(m->be->ctx, p, host, bytes, &e), RM_OK, "%s", e.msg);
    return p;
}

void dev_download(devmem *m, void *host, const void *dev, size_t bytes)
{
    rm_err e = {0};
    if (bytes) cr_assert_eq(m->be->ops->download(m->be->ctx, host, dev, bytes, &e), RM_OK, "%s", e.msg);
}

void devmem_free(devmem *m)
{
    for (int i = 0; i < m->n; i++) rm_backend_release(m->be, m->ptr[i]);
    m->n = 0;
}

float *host_random(size_t n, rm_rng *rng)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) {
        double v = rm_rng_range(rng, 0.1, 1.0);
        p[i] = (float)(rm_rng_uniform(rng) < 0.5 ? -v : v);
    }
    return p;
}

float *host_fill(size_t n, float v)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    cr_assert_not_null(p);
    for (size_t i = 0; i < n; i++) p[i] = v;
    return p;
}

double rel_err(const float *got, const float *want, size_t n, size_t *worst)
{
    double maxabs = 0, err = 0;
    *worst = 0;
    for (size_t i = 0; i < n; i++) maxabs = fmax(maxabs, fabs((double)want[i]));
    for (size_t i = 0; i < n; i++) {
        double den = fmax(fabs((double)want[i]), 1e-2 * maxabs);
        double r = den > 0 ? fabs((double)got[i] - want[i]) / den : fabs((double)got[i]);
        if (!(r <= err)) err = r, *worst = i;
    }
    return err;
}

void report_line(const char *fmt, ...)
{
    const char *path = getenv("REMAT_CUDA_REPORT");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (!f) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fputc('\n', f);
    fclose(f);
}
