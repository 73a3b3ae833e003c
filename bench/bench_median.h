/* What the timing benchmarks share (gpu_layers.c, gpu_step.c, cpu_step.c,
 * cpu_gemm.c): the median they report (METHOD.md: medians, not means; it
 * sorts v in place) and the monotonic clock they read. */
#ifndef REMAT_BENCH_MEDIAN_H
#define REMAT_BENCH_MEDIAN_H

#include <stdlib.h>
#include <time.h>

static inline int rm_bench_cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static inline float median(float *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, rm_bench_cmp_float);
    return n % 2 ? v[n / 2] : 0.5f * (v[n / 2 - 1] + v[n / 2]);
}

#endif
