/* The forward pass of an imported ONNX network through remat itself, for
 * the ONNX suites (test_onnx.c, test_onnx_backend.c): the model's forward
 * trace, checkpoint-all's plan, the one executor on the CPU reference
 * backend in inference mode (batchnorm's running statistics, no dropout),
 * and the value of the layer the loss reads, fetched as it is computed. */
#ifndef REMAT_TESTS_ONNX_FORWARD_H
#define REMAT_TESTS_ONNX_FORWARD_H

#include <stddef.h>

#include "error.h"
#include "model.h"

/* out: batch x the loss input's per-sample elements; in: batch x the
 * model's input. Returns an rm_code with the reason in e. */
int onnx_forward(float *out, const rm_model *m, const float *in, int batch, rm_err *e);

/* Elements of the loss input (the graph output) per sample. */
size_t onnx_output_numel(const rm_model *m);

/* |got - want| <= atol + rtol |want| everywhere (NaN only against NaN).
 * Returns the index of the first element outside, or -1. */
long onnx_compare(const float *got, const float *want, size_t n, double rtol, double atol);

#endif
