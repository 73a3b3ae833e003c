/* Building blocks shared by the plain-C kernels: the layers' reference and
 * the CPU backend's fast library (cpu/). */
#ifndef REMAT_CPU_KERNELS_H
#define REMAT_CPU_KERNELS_H

#include <stddef.h>

#include "layer.h"
#include "parallel.h"

/* Output values per register tile. A constant trip count, unrolled, is what
 * lets GCC keep the tile in registers and vectorise it at -O2 (its cheap cost
 * model leaves runtime-length loops scalar): about twice the speed. */
#define RM_TILE 16

/* acc[j] += sum_r a[r * a_stride] * b[r * b_stride + j] for j < n <= RM_TILE,
 * in double, r ascending: every matrix product of the reference kernels is a
 * sequence of these, so each output's sum runs in the same order whatever the
 * tiling. (The fast library's products are single-precision BLIS ones,
 * rm_cpu_sgemm.) */
void rm_madd_tile(double *restrict acc, size_t n, const float *restrict a, size_t a_stride, const float *restrict b,
                  size_t b_stride, size_t rows);

/* db[c] = (float)(sum over images and the plane of dy[n][c][:]) in double,
 * images then elements in order, the channels split between nt threads:
 * the bias gradient of every layer with one bias per channel (a linear
 * layer's plane is 1). */
void rm_cpu_bias_grad(float *db, const float *dy /* n x c x plane */, int n, int c, size_t plane, int nt);

/* The threads a call's loop over `work` independent outputs runs on
 * (rm_backend_loop_threads of call->be). */
static inline int rm_call_threads(const rm_layer_call *call, size_t work)
{
    return rm_backend_loop_threads(call->be, work);
}

#endif
