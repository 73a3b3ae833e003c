/* A model's forward pass on a batch, for checking an imported network's
 * outputs against another framework's (the ONNX tests, bench/onnx_check.c):
 * the forward trace, checkpoint-all's plan, the one executor on the CPU
 * reference backend in inference mode (batchnorm's running statistics, no
 * dropout), and the value of the layer the loss reads, fetched as it is
 * computed. Not for training loops: it builds and frees its executor each
 * call. */
#ifndef REMAT_TRAIN_INFER_H
#define REMAT_TRAIN_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "model.h"

/* Elements per sample of the loss's input: the network's output. */
size_t rm_model_output_numel(const rm_model *m);

/* out: batch x rm_model_output_numel(m) floats; in: batch x the model's
 * input, NCHW. The parameters are the model's own (init_params) or the
 * layers' initialisation from seed. */
int rm_model_infer(float *out, const rm_model *m, const float *in, int batch, uint64_t seed, rm_err *e);

#endif
