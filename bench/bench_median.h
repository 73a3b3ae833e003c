/* The median the GPU benchmarks report (METHOD.md: medians, not means), in
 * one place for gpu_layers.c and gpu_step.c. Sorts v in place. */
#ifndef REMAT_BENCH_MEDIAN_H
#define REMAT_BENCH_MEDIAN_H

#include <stdlib.h>

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
