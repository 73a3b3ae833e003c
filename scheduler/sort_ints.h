/* Sorting small int arrays without qsort's overhead: the schedule code sorts
 * one short list per stage (a stage's computes, the values it frees), and
 * glibc's qsort (a merge sort through a temporary buffer and a comparison
 * call per step) dominated whole simulations of 100,000-stage schedules. */
#ifndef REMAT_SORT_INTS_H
#define REMAT_SORT_INTS_H

#include <stdlib.h>

static int rm_cmp_int(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* Ascending; insertion sort below 32 elements (the usual case), qsort above
 * unless already sorted (a recomputed segment usually is). */
static inline void rm_sort_ints(int *a, int n)
{
    if (n > 32) {
        int sorted = 1;
        for (int i = 1; i < n && sorted; i++) sorted = a[i - 1] <= a[i];
        if (sorted) return;
        qsort(a, (size_t)n, sizeof *a, rm_cmp_int);
        return;
    }
    for (int i = 1; i < n; i++) {
        int x = a[i], j = i;
        for (; j > 0 && a[j - 1] > x; j--) a[j] = a[j - 1];
        a[j] = x;
    }
}

#endif
