/* The CPU backend's own settings: its kernel library and its thread count,
 * as backend_cuda.h has the CUDA backend's. Generic code never needs these
 * (it calls the backend's ops and rm_backend_apply); the CPU benchmarks and
 * tests use them.
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
 * option --kernels (rm_backend_options), else the environment variable
 * REMAT_CPU_KERNELS = reference|fast, chooses another when a backend is
 * created.
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
 * not depend on it); --threads N, else REMAT_THREADS = N, like
 * rm_backend_cpu_set_threads, fixes the count at N.
 *
 * rm_backend_host() (the backend of calls made without one) is the
 * reference on one thread, always. */
#ifndef REMAT_BACKEND_CPU_H
#define REMAT_BACKEND_CPU_H

#include "backend.h"
#include "parallel.h"

/* The CPU backend's kernel library ids (its registry entry's kernel_libs). */
typedef enum rm_cpu_kernel_lib {
    RM_CPU_KERNELS_REFERENCE = 0,
    RM_CPU_KERNELS_FAST,
    RM_CPU_KERNELS_COUNT
} rm_cpu_kernel_lib;

/* A CPU backend with the environment's settings, or with o's (NULL: the
 * environment's), as rm_backend_create makes one. */
int rm_backend_cpu_create(rm_backend **out, rm_err *e);
int rm_backend_cpu_create_with(rm_backend **out, const rm_backend_options *o, rm_err *e);

/* "reference" or "fast" (cpu_info.c). */
const char *rm_cpu_kernel_lib_name(rm_cpu_kernel_lib lib);
/* RM_ERR_INVALID naming the value and the choices when name is neither. */
int rm_cpu_kernel_lib_parse(rm_cpu_kernel_lib *out, const char *name, rm_err *e);

/* Kernel library and threads of a CPU backend (not rm_backend_host()), as
 * rm_backend_apply sets them. Change them between steps, never inside one.
 * Setting the threads fixes the count (the governor stops). RM_ERR_INVALID
 * for another backend or a value out of range. */
int rm_backend_cpu_set_kernels(rm_backend *be, rm_cpu_kernel_lib lib, rm_err *e);
int rm_backend_cpu_set_threads(rm_backend *be, int threads, rm_err *e);
/* The settings a backend runs with: for NULL, rm_backend_host() and non-CPU
 * backends, the reference on 1 thread. */
rm_cpu_kernel_lib rm_backend_cpu_kernels(const rm_backend *be);
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

#endif
