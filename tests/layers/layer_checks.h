/* What the tests of parameter-free layers share (layer_checks.c): an odd
 * shape, buffers and fills, a gradient check of one input, and the checks of
 * a descriptor, of shape errors, and that backward overwrites its gradients
 * and reads only what it declares. */
#ifndef REMAT_TEST_LAYER_CHECKS_H
#define REMAT_TEST_LAYER_CHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "gradcheck.h"

/* Tighter than the harness default: these layers are (piecewise) linear or
 * smooth, and the objective is accumulated in double, so the finite
 * differences are accurate to ~1e-5. */
#define LAYER_TOL 1e-4

/* 2 x 3 x 7 x 5: no loop gets away with assuming even or square sizes. */
extern const rm_shape odd;

/* n zeroed floats (at least one), asserted. */
float *floats(size_t n);
/* Uniform in [-1, 1] from seed. */
void fill_uniform(float *x, size_t n, uint64_t seed);
/* A gradient check of d on one input of shape s, at LAYER_TOL. */
gc_case one_input_case(const rm_layer_desc *d, rm_shape s);
/* gradcheck, logging the worst error. */
double run_gradcheck(const gc_case *c);
/* The descriptor fields the config parser and the scheduler rely on: its
 * section name, what backward reads, its input counts, no parameters,
 * finite positive FLOPs. */
void check_desc(const rm_layer_desc *d, const char *name, unsigned reads, int min_in, int max_in, const rm_shape *in,
                int nin);
/* The same under a config (a layer whose zeroed config is no layer: attention's heads). */
void check_desc_with(const rm_layer_desc *d, const rm_layer_config *cfg, const char *name, unsigned reads, int min_in,
                     int max_in, const rm_shape *in, int nin);
/* infer fails with RM_ERR_SHAPE, naming the layer (and needle when given). */
void expect_shape_error(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in, int nin,
                        const char *needle);
/* One input too few and one too many are shape errors. */
void expect_input_count_errors(const rm_layer_desc *d);
/* Backward overwrites din (never accumulates), skips a NULL din[i], and
 * sees only the forward tensors it declares. */
void check_backward_overwrites(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in, int nin,
                               int training);

#endif
