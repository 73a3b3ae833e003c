/* Test fixtures for the train/ suites: a small model parsed from text with
 * its parameters, gradients and batchnorm buffers laid out the way the
 * executor lays them out (layer order, w then b), filled with deterministic
 * values; and a scratch directory. */
#ifndef REMAT_TESTS_TRAIN_FIXTURES_H
#define REMAT_TESTS_TRAIN_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

#include "layer.h"
#include "model.h"

typedef struct tf_net {
    rm_model *m;
    float *params, *grads, *buffers; /* [m->param_count], [m->param_count], [m->buffer_count] */
    rm_layer_params *lp;             /* [m->nlayers] */
    rm_layer_params **lpp;           /* [m->nlayers]: &lp[i], or NULL for layers without any tensor */
} tf_net;

/* conv (3 -> conv_filters, 3x3, bias) + batchnorm + relu + linear (-> classes) + softmax_xent on 3x8x8
 * inputs, the convolution named conv_name: the arguments let tests build models that differ in one
 * tensor. The usual one is ("conv1", 4, 5). */
void tf_model_text(char *out, size_t len, const char *conv_name, int conv_filters, int classes);

/* Parses text (asserting success), lays out and fills every tensor from seed. */
tf_net tf_net_make(const char *text, uint64_t seed);
void tf_net_free(tf_net *n);

/* Fills params, grads and buffers with fresh values from seed. */
void tf_net_fill(tf_net *n, uint64_t seed);

/* A fresh directory under /tmp (asserting success), and removing one with its plain files. */
void tf_tmpdir(char *out, size_t len);
void tf_rmdir(const char *dir);

#endif
