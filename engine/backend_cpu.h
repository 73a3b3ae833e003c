/* The CPU backend's own settings: its kernel library and its thread count,
 * as backend_cuda.h has the CUDA backend's. Generic code never needs these
 * (it calls the backend's ops); the CLI, the benchmarks and the tests set
 * them, and the layers' CPU kernels read the thread count of the backend
 * they run on.
 *
 * Kernel libraries of the CPU backend:
 *   reference  plain C loops accumulating in double, single-threaded
 *              convolution and linear: the test oracle, and what the CUDA
 *              kernels are checked against;
 *   fast       convolution (im2col / col2im around the product) and linear
 *              as single-precision BLIS products on the backend's threads;
 *              every other layer is the reference's kernel, threaded.
 * Each layer's kernels for the library are chosen once per backend and
 * library (the backend's kernel table), never per call. Default: fast; the
 * environment variable REMAT_CPU_KERNELS = reference|fast overrides it when
 * a backend is created.
 *
 * Threads: the element-wise, pooling, batch-norm, loss, gradient-sum and
 * optimizer loops of BOTH libraries split independent outputs between
 * threads (OpenMP), each output's reduction staying in one thread in the
 * order of the code, so their bits never depend on the thread count; the
 * fast library's BLIS products use the same threads (BLIS never splits a
 * product's inner dimension, and rm_cpu_sgemm splits the rows or columns
 * of a product between the threads, so they give the same bits at any
 * count too). Default: the cores this process may run on, fewer while
 * other processes keep them busy (the thread governor,
 * backend_cpu_threads.c, adjusts the count between layer calls; the bits do
 * not depend on it); REMAT_THREADS = N, like rm_backend_cpu_set_threads,
 * fixes the count at N.
 *
 * rm_backend_host() (the backend of calls made without one) is the
 * reference on one thread, always. */
#ifndef REMAT_BACKEND_CPU_H
#define REMAT_BACKEND_CPU_H

#include "backend.h"

typedef enum rm_cpu_kernels { RM_CPU_KERNELS_REFERENCE = 0, RM_CPU_KERNELS_FAST, RM_CPU_KERNELS_COUNT } rm_cpu_kernels;

/* The most threads a backend takes (a bound on what a user may ask for,
 * not on the machine). */
#define RM_CPU_MAX_THREADS 1024

/* Threads for a loop over `work` independent outputs on backend be: its
 * thread count, or 1 below RM_CPU_LOOP_MIN outputs (tens of microseconds
 * of work), where waking threads costs more than they save, and far more
 * on a machine whose cores are busy with other work: a parallel region
 * lasts until its last thread is scheduled. */
#define RM_CPU_LOOP_MIN 65536
int rm_cpu_loop_threads(const rm_backend *be, size_t work);

/* `RM_CPU_PARALLEL_FOR(nt) for (...)` runs the loop's iterations on nt
 * threads in fixed contiguous blocks (OpenMP, static schedule), inline when
 * nt is 1. The iterations must be independent: no reduction may cross them,
 * which is what keeps the bits independent of nt. */
/* RM_CPU_PARALLEL_FOR_SIMD: the same for a flat element-wise loop, also
 * vectorised (each lane computes its element with the same IEEE operations,
 * so the bits do not change; at -O2 GCC leaves such loops scalar). The if
 * clause names the parallel part: a bare one would turn the vectorisation
 * off on one thread too. */
#ifdef _OPENMP
#define RM_CPU_PRAGMA(x) _Pragma(#x)
#define RM_CPU_PARALLEL_FOR(nt) RM_CPU_PRAGMA(omp parallel for num_threads(nt) if ((nt) > 1) schedule(static))
#define RM_CPU_PARALLEL_FOR_SIMD(nt)                                                                                   \
    RM_CPU_PRAGMA(omp parallel for simd num_threads(nt) if (parallel : (nt) > 1) schedule(static))
/* RM_CPU_SIMD: vectorise one loop in the thread that runs it (same rule:
 * independent elements, each computed with the same operations). */
#define RM_CPU_SIMD RM_CPU_PRAGMA(omp simd)
#else /* a compiler without OpenMP (clang without libomp): one thread */
#define RM_CPU_PARALLEL_FOR(nt) (void)(nt);
#define RM_CPU_PARALLEL_FOR_SIMD(nt) (void)(nt);
#define RM_CPU_SIMD
#endif

/* "reference" or "fast" (kernel_lib.c, in every build). */
const char *rm_cpu_kernels_name(rm_cpu_kernels lib);
/* RM_ERR_INVALID naming the value and the choices when name is neither. */
int rm_cpu_kernels_parse(rm_cpu_kernels *out, const char *name, rm_err *e);
/* A thread count from text: an integer from 1 to RM_CPU_MAX_THREADS. */
int rm_cpu_threads_parse(int *out, const char *text, rm_err *e);
/* The cores this process may run on (its CPU affinity), at least 1. */
int rm_cpu_cores(void);

/* Kernel library and threads of a CPU backend (not rm_backend_host()).
 * Change them between steps, never inside one. Setting the threads fixes
 * the count (the governor stops). RM_ERR_INVALID for another backend or a
 * value out of range. */
int rm_backend_cpu_set_kernels(rm_backend *be, rm_cpu_kernels lib, rm_err *e);
int rm_backend_cpu_set_threads(rm_backend *be, int threads, rm_err *e);
/* The settings a backend runs with: for NULL, rm_backend_host() and non-CPU
 * backends, the reference on 1 thread. */
rm_cpu_kernels rm_backend_cpu_kernels(const rm_backend *be);
int rm_backend_cpu_threads(const rm_backend *be);

/* One reading of the machine for the thread governor: the monotonic clock,
 * the time this process's threads have waited for a CPU while runnable, and
 * the idle time of the CPUs it may run on, summed, in seconds since any
 * fixed origin (only differences are used). */
typedef struct rm_cpu_load {
    double wall_s, wait_s, idle_s;
} rm_cpu_load;
/* Fills *out; non-zero when the machine cannot be read (the governor then
 * keeps its count). */
typedef int (*rm_cpu_load_fn)(void *ctx, rm_cpu_load *out);

/* Lets be's thread count follow the load, from 1 up to its present count,
 * taking a reading from `read` (NULL: fix the count where it is) after each
 * window_s seconds of work (0: at every layer call). A backend created
 * without REMAT_THREADS does this with /proc's readings; tests and programs
 * that simulate or measure the load otherwise call it. RM_ERR_INVALID for
 * another backend. */
int rm_backend_cpu_govern(rm_backend *be, rm_cpu_load_fn read, void *ctx, double window_s, rm_err *e);
/* Whether be's thread count follows the load (0 for a fixed count, the host
 * backend and other kinds), and the count it may go up to. */
int rm_backend_cpu_adaptive(const rm_backend *be);
int rm_backend_cpu_max_threads(const rm_backend *be);

/* What a command asks of a CPU backend (--cpu-kernels, --threads); all
 * zero keeps the backend's defaults (the environment's, else fast on every
 * core). */
typedef struct rm_cpu_options {
    int set_kernels; /* 1: use kernels */
    rm_cpu_kernels kernels;
    int threads; /* 0: the default */
} rm_cpu_options;

/* Applies o to be: RM_ERR_INVALID when o asks for something and be is not
 * a CPU backend. */
int rm_backend_cpu_apply(rm_backend *be, const rm_cpu_options *o, rm_err *e);
/* The settings of be in words for summaries: "fast kernels (BLIS 0.9.0, skx
 * kernels), 2 threads". */
const char *rm_backend_cpu_describe(const rm_backend *be, char *buf, size_t len);

/* The BLAS the fast library runs on, in words for summaries and logs, e.g.
 * "BLIS 0.9.0, skx kernels" (cpu_blas.c). */
const char *rm_cpu_blas_describe(char *buf, size_t len);

#endif
