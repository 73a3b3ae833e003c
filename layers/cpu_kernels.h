/* Building blocks shared by the CPU reference kernels. */
#ifndef REMAT_CPU_KERNELS_H
#define REMAT_CPU_KERNELS_H

#include <stddef.h>

/* Output values per register tile. A constant trip count, unrolled, is what
 * lets GCC keep the tile in registers and vectorise it at -O2 (its cheap cost
 * model leaves runtime-length loops scalar): about twice the speed. */
#define RM_TILE 16

/* acc[j] += sum_r a[r * a_stride] * b[r * b_stride + j] for j < n <= RM_TILE,
 * in double, r ascending: every matrix product of the CPU layers is a sequence
 * of these, so each output's sum runs in the same order whatever the tiling. */
void rm_madd_tile(double *restrict acc, size_t n, const float *restrict a, size_t a_stride, const float *restrict b,
                  size_t b_stride, size_t rows);

#endif
