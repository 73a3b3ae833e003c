/* What the GPU suite's files share: a case's device buffers, freed
 * together; random and constant host data; the relative error every
 * GPU-vs-CPU comparison uses; and the REMAT_CUDA_REPORT lines that
 * scripts/gpu-check tabulates. */
#ifndef REMAT_TESTS_CUDA_FIXTURE_H
#define REMAT_TESTS_CUDA_FIXTURE_H

#include <stddef.h>

#include "backend_cuda.h"
#include "rng.h"

typedef struct devmem {
    rm_backend *be;
    void *ptr[64];
    int n;
} devmem;

/* A device buffer of bytes (at least 4), holding host's bytes when host is
 * given; released by devmem_free. */
void *dev_upload(devmem *m, const void *host, size_t bytes);
void dev_download(devmem *m, void *host, const void *dev, size_t bytes);
void devmem_free(devmem *m);

/* n floats, non-zero, both signs, magnitudes 0.1 .. 1 (never zeros as test data). */
float *host_random(size_t n, rm_rng *rng);
/* n copies of v (garbage that a kernel must overwrite). */
float *host_fill(size_t n, float v);

/* max_i |got_i - want_i| / max(|want_i|, 1e-2 max_j |want_j|); NaN counts as
 * worst. *worst is the index of the largest error. */
double rel_err(const float *got, const float *want, size_t n, size_t *worst);

/* Appends one line (printf format, newline added) to $REMAT_CUDA_REPORT, if set. */
void report_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
