/* Shared CPU kernel building blocks (see cpu_kernels.h). */
#include "cpu_kernels.h"

void rm_madd_tile(double *restrict acc, size_t n, const float *restrict a, size_t a_stride, const float *restrict b,
                  size_t b_stride, size_t rows)
{
    if (n == RM_TILE) {
        double t[RM_TILE];
        for (int j = 0; j < RM_TILE; j++) t[j] = acc[j];
        for (size_t r = 0; r < rows; r++) {
            double av = a[r * a_stride];
            const float *br = b + r * b_stride;
#pragma GCC unroll 16
            for (int j = 0; j < RM_TILE; j++) t[j] += av * (double)br[j];
        }
        for (int j = 0; j < RM_TILE; j++) acc[j] = t[j];
        return;
    }
    for (size_t r = 0; r < rows; r++) {
        double av = a[r * a_stride];
        const float *br = b + r * b_stride;
        for (size_t j = 0; j < n; j++) acc[j] += av * (double)br[j];
    }
}

void rm_cpu_bias_grad(float *db, const float *dy, int n, int c, size_t plane, int nt)
{
    RM_CPU_PARALLEL_FOR(nt)
    for (int ch = 0; ch < c; ch++) {
        double sum = 0.0;
        for (int i = 0; i < n; i++) {
            const float *p = dy + ((size_t)i * c + ch) * plane;
            for (size_t j = 0; j < plane; j++) sum += p[j];
        }
        db[ch] = (float)sum;
    }
}
