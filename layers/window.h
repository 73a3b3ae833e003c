/* Sliding-window geometry shared by the pooling layers (and the square
 * check the depthwise convolution shares too). */
#ifndef REMAT_WINDOW_H
#define REMAT_WINDOW_H

#include "layers.h"

/* Output shape of a square window (cfg->kernel, stride, pad) slid over one
 * input, with PyTorch's rule pad <= kernel/2 (so every window holds a real
 * element), rounded down, or up with cfg->ceil_mode as PyTorch's ceil_mode
 * (an extra window that would start past the input and its left padding is
 * dropped). `layer` names the layer in error messages. */
/* The layers with square windows (pools, dwconv) refuse a config whose
 * kernel, stride or padding differ between the axes (only conv2d has
 * rectangular ones). */
int rm_window_square(const char *layer, const rm_layer_config *cfg, rm_err *e);

int rm_window_infer(rm_shape *out, const char *layer, const rm_layer_config *cfg, const rm_shape *in, int nin,
                    rm_err *e);

#endif
