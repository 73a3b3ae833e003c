/* The fast CPU kernels' BLAS: BLIS (Debian's libblis, OpenMP build), behind
 * rm_cpu_sgemm (cpu_blas.h).
 *
 * Why BLIS (bench/cpu_gemm.c, the three products of every convolution of
 * ResNet-18 at batch 8, one product per image; Xeon family 6 model 207,
 * AVX-512, Debian 12's libopenblas 0.3.21 and libblis 0.9.0):
 *                                      1 thread     2 threads
 *   OpenBLAS as shipped ("Prescott")   2846 ms      1512 ms
 *   BLIS as shipped ("haswell")        1277 ms       993 ms
 *   OpenBLAS, OPENBLAS_CORETYPE=SkylakeX 694 ms      420 ms
 *   BLIS, AVX-512 kernels (skx)       804-872 ms     440 ms
 * Both libraries fail to recognise this CPU, OpenBLAS much worse (its SSE3
 * kernels, 30 GFLOP/s). OpenBLAS reads its override in a constructor, before
 * main, so only the user's environment can fix it; BLIS initialises on first
 * use, so the fast library itself can ask for the AVX-512 kernels (below), which
 * leaves OpenBLAS 5-15% ahead when both are at their best. BLIS also takes
 * the thread count with each call (rntm_t), so it runs on the caller's one
 * thread when asked, and the backend's own OpenMP threads run its products
 * (OpenBLAS's pthread build keeps a second pool spinning on the same cores
 * after every product).
 *
 * BLIS itself always runs on one thread: rm_cpu_sgemm splits a product
 * between the backend's threads (rows or columns of c, each thread one BLIS
 * call), so the only waits are OpenMP's, at the end of one region, where
 * libgomp spins and then sleeps. BLIS's own threads meet at
 * bli_thrcomm_barrier several times per product, a loop on a shared flag
 * with no pause, yield or sleep that no OMP_WAIT_POLICY or GOMP_SPINCOUNT
 * reaches: beside a process that keeps a core busy, a thread spinning
 * there can only wait for its descheduled sibling until the scheduler
 * preempts it (issue 23). On the AMD EPYC where this was changed, idle and
 * beside one busy process, the step took the same time either way (the
 * waits there were libgomp's: 45% of the cycles at 2 threads beside a busy
 * loop, BLIS's barrier under 0.1%); the thread governor
 * (backend_cpu_threads.c) is what keeps a busy machine at the one-thread
 * step.
 *
 * BLIS's small-matrix (sup) path is off: its blocking follows the shapes,
 * so with it a product's bits depended on how many columns it had (with
 * the zen3 kernels, which take that path for narrow products), and the
 * fast library differed between thread counts.
 *
 * Determinism: each element of c is one dot product of BLIS's microkernel
 * over the whole inner dimension, in the same order (the same kc blocks)
 * whatever the rows and columns around it, and no split here or in BLIS
 * ever divides the inner dimension: the same bits at any thread count
 * (tested against one thread, tests/layers/test_cpu_fast.c). */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include <blis.h>

#include "cpu_blas.h"
#include "log.h"
#include "parallel.h"

/* The BLAS is one per process, and so is its preparation: the result of the
 * first rm_cpu_blas_init, written once under pthread_once and read-only
 * after. */
#define GEMM_MIN_MACS 4e6
/* Rows or columns of a thread's slab of a product come in multiples of this
 * (a vector of floats: the slabs' edges cut few of BLIS's register tiles,
 * and the threads' shares stay within 16 of equal). */
#define GEMM_SLAB_ALIGN 16

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;
static rm_err blas_status;
static char blas_arch[32];

/* BLIS 0.9 takes a CPU for its AVX-512 (skx) kernels only when it knows the
 * model has two FMA units, from a list of Skylake-SP and Ice Lake models;
 * any later Xeon falls back to the AVX2 (haswell) kernels at about 60% of
 * the speed (68 against 109 GFLOP/s above). So when the user has not chosen
 * (BLIS_ARCH_TYPE unset) and the CPU has the AVX-512 subsets those kernels
 * use, ask for them, before BLIS initialises and reads the variable. */
static void blas_prepare(void)
{
    blas_status.code = RM_OK;
    const char *user = getenv("BLIS_ARCH_TYPE");
    /* BLIS 0.9 reads the variable with atoi and trusts it: "" or "haswell"
     * read as 0, its skx kernels, and a CPU without AVX-512 then dies of
     * SIGILL in the first product. An empty value means unset; any other
     * value must be an id, and one of the AVX-512 configurations only on a
     * CPU that has AVX-512. */
    if (user && !*user) {
        unsetenv("BLIS_ARCH_TYPE");
        user = NULL;
    }
    if (user) {
        char *end;
        long id = strtol(user, &end, 10);
        if (end == user || *end || id < 0 || id >= BLIS_NUM_ARCHS) {
            rm_errorf(&blas_status, RM_ERR_INVALID,
                      "cpu blas: BLIS_ARCH_TYPE='%.16s' is not one of BLIS %s's configuration ids (0 to %d; %d is "
                      "haswell): unset it to let BLIS choose",
                      user, bli_info_get_version_str(), (int)BLIS_NUM_ARCHS - 1, (int)BLIS_ARCH_HASWELL);
            return;
        }
        if ((id == BLIS_ARCH_SKX || id == BLIS_ARCH_KNL) && !__builtin_cpu_supports("avx512f")) {
            rm_errorf(&blas_status, RM_ERR_INVALID,
                      "cpu blas: BLIS_ARCH_TYPE=%ld chooses BLIS's %s kernels, which need AVX-512, and this CPU has "
                      "none: unset it to let BLIS choose",
                      id, id == BLIS_ARCH_SKX ? "skx" : "knl");
            return;
        }
    }
    if (!(user && *user) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512cd")) {
        char id[16];
        snprintf(id, sizeof id, "%d", (int)BLIS_ARCH_SKX); /* 0.9 reads the id as a number */
        if (setenv("BLIS_ARCH_TYPE", id, 0) != 0) {
            rm_errorf(&blas_status, RM_ERR_INVALID,
                      "cpu blas: cannot set BLIS_ARCH_TYPE to choose BLIS's AVX-512 kernels");
            return;
        }
    }
    bli_init();
    snprintf(blas_arch, sizeof blas_arch, "%s", bli_arch_string(bli_arch_query_id()));
    RM_LOG_INFO("cpu blas: BLIS %s, %s kernels%s", bli_info_get_version_str(), blas_arch,
                user && *user ? " (BLIS_ARCH_TYPE set by the user)" : "");
}

int rm_cpu_blas_init(rm_err *e)
{
    if (pthread_once(&blas_once, blas_prepare) != 0)
        return rm_errorf(e, RM_ERR_INVALID, "cpu blas: pthread_once failed preparing BLIS");
    if (blas_status.code) return rm_errorf(e, blas_status.code, "%s", blas_status.msg);
    return RM_OK;
}

const char *rm_cpu_blas_describe(char *buf, size_t len)
{
    rm_err e = {RM_OK, ""};
    if (rm_cpu_blas_init(&e))
        snprintf(buf, len, "BLIS %s (%s)", bli_info_get_version_str(), e.msg);
    else
        snprintf(buf, len, "BLIS %s, %s kernels", bli_info_get_version_str(), blas_arch);
    return buf;
}

/* One BLIS call on one thread (the product's threads are ours, see the
 * top of this file). */
static void sgemm_one(int trans_a, int trans_b, size_t m, size_t n, size_t k, const float *a, size_t lda,
                      const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    rntm_t rntm = BLIS_RNTM_INITIALIZER;
    bli_rntm_set_num_threads(1, &rntm);
    bli_rntm_disable_l3_sup(&rntm);
    float one = 1.0f;
    /* BLIS takes strides instead of a storage order: row-major is a row
     * stride of the leading dimension and a column stride of 1. Its typed
     * API is not const-qualified; it never writes a or b. */
    bli_sgemm_ex(trans_a ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, trans_b ? BLIS_TRANSPOSE : BLIS_NO_TRANSPOSE, (dim_t)m,
                 (dim_t)n, (dim_t)k, &one, (float *)a, (inc_t)lda, 1, (float *)b, (inc_t)ldb, 1, &beta, c, (inc_t)ldc,
                 1, NULL, &rntm);
}

int rm_cpu_sgemm(const rm_backend *be, int trans_a, int trans_b, size_t m, size_t n, size_t k, const float *a,
                 size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc, const char *what, rm_err *e)
{
    /* dim_t and inc_t are signed 64-bit: a size past that is no tensor. */
    const size_t most = (size_t)LLONG_MAX / 4;
    if (m > most || n > most || k > most || lda > most || ldb > most || ldc > most)
        return rm_errorf(e, RM_ERR_INVALID, "%s: matrix product %zu x %zu x %zu is too large for BLIS", what, m, n, k);
    if (!m || !n) return RM_OK;
    int rc = rm_cpu_blas_init(e);
    if (rc) return rc;
    /* A small product runs on one thread, as small loops do
     * (rm_backend_loop_threads): m n k multiply-adds below GEMM_MIN_MACS (about
     * 0.1 ms on one core) gain less from a second thread than waking it
     * costs. */
    int nt = (double)m * (double)n * (double)k < GEMM_MIN_MACS ? 1 : rm_backend_threads(be);
    /* The longer side is split, in slabs of whole GEMM_SLAB_ALIGN rows or
     * columns: each thread then packs its own slab of one operand and all
     * of the other, so the packing done twice is the smaller operand's. */
    int by_cols = n >= m;
    size_t len = by_cols ? n : m, per = (len + (size_t)nt - 1) / (size_t)nt;
    per = (per + GEMM_SLAB_ALIGN - 1) / GEMM_SLAB_ALIGN * GEMM_SLAB_ALIGN;
    if (nt < 2 || per >= len) {
        sgemm_one(trans_a, trans_b, m, n, k, a, lda, b, ldb, beta, c, ldc);
        return RM_OK;
    }
    int slabs = (int)((len + per - 1) / per);
    RM_CPU_PARALLEL_FOR(slabs)
    for (int s = 0; s < slabs; s++) {
        size_t lo = (size_t)s * per, cnt = len - lo < per ? len - lo : per;
        if (by_cols) /* columns lo.. of op(b) and c */
            sgemm_one(trans_a, trans_b, m, cnt, k, a, lda, trans_b ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
        else /* rows lo.. of op(a) and c */
            sgemm_one(trans_a, trans_b, cnt, n, k, trans_a ? a + lo : a + lo * lda, lda, b, ldb, beta, c + lo * ldc,
                      ldc);
    }
    return RM_OK;
}
