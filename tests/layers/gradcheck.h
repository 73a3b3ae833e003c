/* Finite-difference gradient checks for layers. The layer runs in float32 as
 * the engine does; the objective L = sum(r * y) (or the loss itself for loss
 * layers) is accumulated in double and differentiated by central differences
 * in double, using the perturbation actually stored in float. The analytic
 * gradient must match within |a - n| <= tol * max(1, |a|, |n|).
 * Backward gets only the tensors the layer declares in backward_reads (the
 * others have data == NULL), so a layer that reads more than it declares
 * crashes the test instead of silently misleading the scheduler. */
#ifndef REMAT_TEST_GRADCHECK_H
#define REMAT_TEST_GRADCHECK_H

#include <stdint.h>

#include "layers.h"

typedef enum gc_fill {
    GC_FILL_UNIFORM = 0, /* uniform in [-1, 1] */
    GC_FILL_SPACED,      /* a random permutation of distinct magnitudes 0.1 + 0.9 k/(n-1) with
                            random signs: no value near 0 (relu's kink), and no two values
                            closer than 0.9/(n-1), so pick eps below half of that for max */
} gc_fill;

typedef struct gc_case {
    const rm_layer_desc *desc;
    rm_layer_config cfg;
    rm_shape in[RM_MAX_INPUTS];
    int nin;
    gc_fill fill;
    int training;   /* passed to the layer (batchnorm, dropout) */
    uint64_t seed;  /* inputs, parameters, labels, dropout */
    double eps;     /* perturbation; 0 means 1e-2 */
    double tol;     /* 0 means 2e-3 */
    int max_checks; /* elements checked per tensor (random subset); 0 means 64 */
} gc_case;

/* Runs the check with Criterion assertions; returns the worst error seen. */
double gradcheck(const gc_case *c);

#endif
