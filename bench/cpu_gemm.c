/* The BLAS choice of the fast CPU kernel library (docs/cpu-kernels.md), measured: the
 * three single-precision products of every convolution of ResNet-18 at
 * batch 8 (3x224x224), as the fast library issues them (one product per image,
 * row-major, the im2col matrix K x N beside the weights M x K):
 *   forward          Y[M,N]  = W[M,K] . C[K,N]
 *   backward data    dC[K,N] = W^T . dY[M,N]
 *   backward weight  dW[M,K] += dY[M,N] . C^T
 * and the same with the batch's 8 images in one product (N x 8), to see
 * whether chunking images would pay. Built once per BLAS found
 * (remat_bench_cpu_gemm_openblas, remat_bench_cpu_gemm_blis): the same
 * cblas calls, only the thread setter differs.
 *
 *   remat_bench_cpu_gemm_<blas> [--threads N] [--reps R]
 *
 * Prints one row per convolution shape (milliseconds for the 8 images of
 * the step, the median of R repetitions) and the step's total. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cblas.h>

#include "bench_median.h"
#include "clock.h"

#ifdef BENCH_BLIS
#include <blis.h>
static void set_threads(int n)
{
    bli_thread_set_num_threads(n);
}
static const char *const blas_name = "blis";
#else
void openblas_set_num_threads(int n);
static void set_threads(int n)
{
    openblas_set_num_threads(n);
}
static const char *const blas_name = "openblas";
#endif

#define BATCH 8

typedef struct conv_shape {
    const char *name;
    int m, n, k; /* Cout, Ho*Wo, Cin*k*k */
    int count;   /* convolutions of this shape in ResNet-18 */
} conv_shape;

static const conv_shape shapes[] = {
    {"conv1 7x7/2 3->64", 64, 112 * 112, 3 * 49, 1},     {"layer1 3x3 64->64", 64, 56 * 56, 64 * 9, 4},
    {"layer2.0 3x3/2 64->128", 128, 28 * 28, 64 * 9, 1}, {"layer2 3x3 128->128", 128, 28 * 28, 128 * 9, 3},
    {"layer2 1x1/2 64->128", 128, 28 * 28, 64, 1},       {"layer3.0 3x3/2 128->256", 256, 14 * 14, 128 * 9, 1},
    {"layer3 3x3 256->256", 256, 14 * 14, 256 * 9, 3},   {"layer3 1x1/2 128->256", 256, 14 * 14, 128, 1},
    {"layer4.0 3x3/2 256->512", 512, 7 * 7, 256 * 9, 1}, {"layer4 3x3 512->512", 512, 7 * 7, 512 * 9, 3},
    {"layer4 1x1/2 256->512", 512, 7 * 7, 256, 1},
};

static float *filled(size_t count)
{
    float *p = malloc(count * sizeof *p);
    if (!p) {
        fprintf(stderr, "remat_bench_cpu_gemm: out of memory\n");
        exit(2);
    }
    for (size_t i = 0; i < count; i++) p[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    return p;
}

/* Milliseconds of the three products of one shape, images one at a time
 * (chunk 1) or all in one product (chunk BATCH: N grows by BATCH). */
static void time_shape(double ms[3], const conv_shape *s, int chunk, int reps)
{
    size_t m = (size_t)s->m, n = (size_t)s->n * (size_t)chunk, k = (size_t)s->k;
    float *w = filled(m * k), *col = filled(k * n), *y = filled(m * n), *dw = filled(m * k);
    int calls = BATCH / chunk;
    float t[3][64];
    for (int r = 0; r < reps + 1; r++) { /* the first is a warm-up */
        double t0 = rm_now();
        for (int i = 0; i < calls; i++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, w, (int)k, col, (int)n,
                        0.0f, y, (int)n);
        double t1 = rm_now();
        for (int i = 0; i < calls; i++)
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)k, (int)n, (int)m, 1.0f, w, (int)k, y, (int)n,
                        0.0f, col, (int)n);
        double t2 = rm_now();
        for (int i = 0; i < calls; i++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m, (int)k, (int)n, 1.0f, y, (int)n, col, (int)n,
                        i ? 1.0f : 0.0f, dw, (int)k);
        double t3 = rm_now();
        if (r) t[0][r - 1] = (float)(t1 - t0), t[1][r - 1] = (float)(t2 - t1), t[2][r - 1] = (float)(t3 - t2);
    }
    for (int d = 0; d < 3; d++) ms[d] = 1e3 * median(t[d], reps);
    free(w), free(col), free(y), free(dw);
}

int main(int argc, char **argv)
{
    int threads = 1, reps = 5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--threads") && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: remat_bench_cpu_gemm_%s [--threads N] [--reps R]\n", blas_name);
            return 1;
        }
    }
    if (threads < 1 || reps < 1 || reps > 64) {
        fprintf(stderr, "remat_bench_cpu_gemm: --threads >= 1, --reps 1..64\n");
        return 1;
    }
    set_threads(threads);
    printf("%s, %d thread%s, ResNet-18 convolutions at batch %d, ms per step (median of %d)\n", blas_name, threads,
           threads == 1 ? "" : "s", BATCH, reps);
    printf("%-26s %5s %5s %5s %9s %9s %9s %9s %8s\n", "shape", "M", "N", "K", "fwd", "bwd_data", "bwd_w", "chunk8",
           "GFLOP/s");
    double total[4] = {0, 0, 0, 0}, flops = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const conv_shape *s = &shapes[i];
        double one[3], all[3];
        time_shape(one, s, 1, reps);
        time_shape(all, s, BATCH, reps);
        double f = 3.0 * 2.0 * s->m * (double)s->n * s->k * BATCH, sum = one[0] + one[1] + one[2];
        double chunked = all[0] + all[1] + all[2];
        printf("%-26s %5d %5d %5d %9.2f %9.2f %9.2f %9.2f %8.1f  x%d\n", s->name, s->m, s->n, s->k, one[0], one[1],
               one[2], chunked, f / (sum * 1e-3) * 1e-9, s->count);
        for (int d = 0; d < 3; d++) total[d] += s->count * one[d];
        total[3] += s->count * chunked;
        flops += s->count * f;
    }
    double sum = total[0] + total[1] + total[2];
    printf("%-26s %17s %9.1f %9.1f %9.1f %9.1f %8.1f\n", "step total (ms)", "", total[0], total[1], total[2], total[3],
           flops / (sum * 1e-3) * 1e-9);
    printf("all three products, images one at a time: %.1f ms; in one product per convolution: %.1f ms\n", sum,
           total[3]);
    return 0;
}
