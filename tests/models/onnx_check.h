/* Comparing a network's output with what another framework computed, for
 * the ONNX suites (test_onnx.c, test_onnx_backend.c). */
#ifndef REMAT_TESTS_ONNX_CHECK_H
#define REMAT_TESTS_ONNX_CHECK_H

#include <stddef.h>

/* |got - want| <= atol + rtol |want| everywhere (NaN only against NaN).
 * Returns the index of the first element outside, or -1. */
long onnx_compare(const float *got, const float *want, size_t n, double rtol, double atol);

#endif
