/* Weight initialisation of the layers with weights (conv2d, dwconv2d,
 * linear), by cfg->init (engine/layer.h's rm_init): one place, so that the
 * built-in models can start as torchvision's do (the configs' key init=). */
#ifndef REMAT_LAYERS_INIT_H
#define REMAT_LAYERS_INIT_H

#include "layer.h"
#include "rng.h"

/* Fills p->w (and p->b when it exists) for a layer whose weights see fan_in
 * inputs and feed fan_out outputs, PyTorch's fans (_calculate_fan_in_and_fan_out):
 *   kaiming_in   w ~ N(0, 2 / fan_in), b = 0 (the default)
 *   kaiming_out  w ~ N(0, 2 / fan_out), b = 0 (torchvision's convolutions:
 *                kaiming_normal_(mode="fan_out", nonlinearity="relu"))
 *   normal_0.01  w ~ N(0, 0.01^2), b = 0 (torchvision's VGG and MobileNet classifiers)
 *   pytorch      w, b ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (nn.Linear's and nn.Conv2d's own
 *                reset_parameters: ResNet's classifier)
 * w is drawn first, then b, from rng. */
void rm_init_weights(rm_layer_params *p, const rm_layer_config *cfg, double fan_in, double fan_out, rm_rng *rng);

/* "kaiming_in", ...; NULL for no such init. */
const char *rm_init_name(int init);
/* The init named s: RM_OK, or RM_ERR_INVALID (e->msg lists the names). */
int rm_init_parse(int *out, const char *s, rm_err *e);

#endif
