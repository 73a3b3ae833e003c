/* Host loops split between threads: the OpenMP macros of every plain-C
 * kernel (the layers' reference kernels, the CPU backend's own loops and
 * its fast kernels). Not a backend's header: a loop asks the backend it runs
 * on for its threads (rm_backend_loop_threads, backend.h). */
#ifndef REMAT_PARALLEL_H
#define REMAT_PARALLEL_H

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

#endif
