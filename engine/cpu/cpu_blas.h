/* The fast CPU kernels' matrix product, the one place remat calls a BLAS
 * (BLIS, cpu_blas.c): the fast kernels (layers/cpu/) call rm_cpu_sgemm and
 * never see blis.h. It asks a backend only for its threads, through the
 * generic interface, so the CPU backend calls it and not the reverse. */
#ifndef REMAT_CPU_BLAS_H
#define REMAT_CPU_BLAS_H

#include <stddef.h>

#include "backend.h"

/* Prepares the BLAS once per process (its kernel set, see cpu_blas.c); every
 * later call returns the first call's result. rm_cpu_sgemm calls it too. */
int rm_cpu_blas_init(rm_err *e);

/* The BLAS the fast library runs on, in words for summaries and logs, e.g.
 * "BLIS 0.9.0, skx kernels". */
const char *rm_cpu_blas_describe(char *buf, size_t len);

/* c = op(a) . op(b) + beta * c in single precision, row-major, on the
 * threads of backend be (rm_backend_threads): op(a) is m x k, op(b) is
 * k x n, c is m x n with leading dimensions lda, ldb, ldc (elements between
 * rows as stored; a stored k x m when trans_a). `what` names the caller in
 * errors. RM_ERR_INVALID for sizes the BLAS cannot index. */
int rm_cpu_sgemm(const rm_backend *be, int trans_a, int trans_b, size_t m, size_t n, size_t k, const float *a,
                 size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc, const char *what, rm_err *e);

#endif
