/* The checks every parameter-free layer's tests share (layer_checks.h). */
#include "layer_checks.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const rm_shape odd = {2, 3, 7, 5};

float *floats(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof(float));
    cr_assert_not_null(p);
    return p;
}

void fill_uniform(float *x, size_t n, uint64_t seed)
{
    rm_rng rng = rm_rng_make(seed);
    for (size_t i = 0; i < n; i++) x[i] = (float)rm_rng_range(&rng, -1.0, 1.0);
}

gc_case one_input_case(const rm_layer_desc *d, rm_shape s)
{
    gc_case c;
    memset(&c, 0, sizeof c);
    c.desc = d;
    c.cfg.kind = d->kind;
    c.in[0] = s;
    c.nin = 1;
    c.seed = 42;
    c.tol = LAYER_TOL;
    return c;
}

double run_gradcheck(const gc_case *c)
{
    double worst = gradcheck(c);
    cr_log_info("%s: worst gradient error %.3g", c->desc->name, worst);
    return worst;
}

/* The descriptor fields the config parser and the scheduler rely on. */
void check_desc(const rm_layer_desc *d, const char *name, unsigned reads, int min_in, int max_in, const rm_shape *in,
                int nin)
{
    rm_layer_config cfg = {.kind = d->kind};
    check_desc_with(d, &cfg, name, reads, min_in, max_in, in, nin);
}

void check_desc_with(const rm_layer_desc *d, const rm_layer_config *config, const char *name, unsigned reads,
                     int min_in, int max_in, const rm_shape *in, int nin)
{
    cr_assert_eq(rm_layer_desc_by_name(name), d, "section \"%s\" does not map to its descriptor", name);
    cr_assert_eq(rm_layer_desc_of(d->kind), d);
    cr_assert_eq(d->backward_reads, reads, "%s: backward_reads", name);
    cr_assert_eq(d->min_inputs, min_in, "%s: min_inputs", name);
    cr_assert_eq(d->max_inputs, max_in, "%s: max_inputs", name);
    cr_assert_null(d->param_shapes, "%s has no parameters", name);
    cr_assert_null(d->init, "%s has no parameters", name);
    rm_layer_config cfg = *config;
    cr_assert_eq(rm_layer_param_count(d, &cfg, in, nin), 0);
    rm_shape out;
    rm_err e = {0};
    cr_assert_eq(d->infer(&out, &cfg, in, nin, &e), RM_OK, "%s: %s", name, e.msg);
    double ff = d->flops(&cfg, in, nin, out, 0), fb = d->flops(&cfg, in, nin, out, 1);
    cr_assert(ff > 0 && isfinite(ff), "%s: forward FLOPs %g", name, ff);
    cr_assert(fb > 0 && isfinite(fb), "%s: backward FLOPs %g", name, fb);
}

/* Expects infer to fail with RM_ERR_SHAPE and a message containing `needle`. */
void expect_shape_error(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in, int nin,
                        const char *needle)
{
    rm_shape out;
    rm_err e = {0};
    int rc = d->infer(&out, cfg, in, nin, &e);
    cr_assert_eq(rc, RM_ERR_SHAPE, "%s: expected a shape error, got %d (%s)", d->name, rc, e.msg);
    cr_assert_eq(e.code, RM_ERR_SHAPE);
    cr_assert(strstr(e.msg, d->name) != NULL, "message does not name the layer: %s", e.msg);
    if (needle) cr_assert(strstr(e.msg, needle) != NULL, "message lacks \"%s\": %s", needle, e.msg);
}

void expect_input_count_errors(const rm_layer_desc *d)
{
    rm_shape in[RM_MAX_INPUTS + 1];
    for (int i = 0; i <= RM_MAX_INPUTS; i++) in[i] = odd;
    rm_layer_config cfg = {.kind = d->kind};
    if (d->min_inputs > 0) expect_shape_error(d, &cfg, in, d->min_inputs - 1, NULL);
    expect_shape_error(d, &cfg, in, d->max_inputs + 1, NULL);
}

/* Backward must overwrite din, never accumulate into it, and skip a NULL
 * din[i]. It runs three times: into zeroed gradients, into garbage-filled ones
 * (results must be bit-equal), and, with several inputs, with din[0] missing
 * (its buffer must stay untouched, the others must not change). Only the
 * forward tensors the layer declares are visible to backward. */
void check_backward_overwrites(const rm_layer_desc *d, const rm_layer_config *cfg, const rm_shape *in, int nin,
                               int training)
{
    rm_shape os;
    rm_err e = {0};
    cr_assert_eq(d->infer(&os, cfg, in, nin, &e), RM_OK, "%s", e.msg);
    int is_loss = d->kind == RM_LAYER_SOFTMAX_XENT || d->kind == RM_LAYER_PIXEL_SOFTMAX_XENT;
    int32_t *labels = NULL;
    if (is_loss) {
        size_t nl = (size_t)in[0].n * (size_t)in[0].h * (size_t)in[0].w;
        labels = calloc(nl, sizeof *labels);
        cr_assert_not_null(labels);
        for (size_t i = 0; i < nl; i++) labels[i] = (int32_t)(i * 7 % (size_t)in[0].c);
    }
    rm_layer_call call = {
        .cfg = cfg, .nin = nin, .labels = labels, .training = training, .seed = 9, .step = 11, .node_id = 5};
    rm_tensor x[RM_MAX_INPUTS], xh[RM_MAX_INPUTS], dx[3][RM_MAX_INPUTS];
    for (int i = 0; i < nin; i++) {
        size_t n = rm_shape_numel(in[i]);
        x[i] = rm_tensor_make(in[i], floats(n));
        fill_uniform(x[i].data, n, 100 + (uint64_t)i);
        for (int k = 0; k < 3; k++) {
            dx[k][i] = rm_tensor_make(in[i], floats(n));
            for (size_t j = 0; k > 0 && j < n; j++) dx[k][i].data[j] = 1e30f;
        }
        call.in[i] = &x[i];
    }
    rm_tensor y = rm_tensor_make(os, floats(rm_shape_numel(os)));
    rm_tensor dy = rm_tensor_make(os, floats(rm_shape_numel(os)));
    fill_uniform(dy.data, rm_shape_numel(os), 200);
    call.out = &y;
    cr_assert_eq(d->forward_ref(&call, &e), RM_OK, "%s", e.msg);

    rm_tensor yh = y;
    if (!(d->backward_reads & RM_READS_OUTPUT)) yh.data = NULL;
    for (int i = 0; i < nin; i++) {
        xh[i] = x[i];
        if (!(d->backward_reads & RM_READS_INPUTS)) xh[i].data = NULL;
        call.in[i] = &xh[i];
    }
    call.out = &yh;
    call.dout = is_loss ? NULL : &dy;
    for (int k = 0; k < (nin > 1 ? 3 : 2); k++) {
        for (int i = 0; i < nin; i++) call.din[i] = &dx[k][i];
        if (k == 2) call.din[0] = NULL;
        cr_assert_eq(d->backward_ref(&call, &e), RM_OK, "%s", e.msg);
    }
    for (int i = 0; i < nin; i++) {
        size_t bytes = rm_shape_bytes(in[i]);
        cr_assert(!memcmp(dx[0][i].data, dx[1][i].data, bytes), "%s: din[%d] accumulates", d->name, i);
        if (nin > 1 && i == 0)
            for (size_t j = 0; j < rm_shape_numel(in[0]); j++)
                cr_assert_eq(dx[2][0].data[j], 1e30f, "%s: wrote through a NULL din[0]", d->name);
        if (nin > 1 && i > 0)
            cr_assert(!memcmp(dx[0][i].data, dx[2][i].data, bytes), "%s: din[%d] depends on din[0]", d->name, i);
        free(x[i].data);
        for (int k = 0; k < 3; k++) free(dx[k][i].data);
    }
    free(y.data);
    free(dy.data);
    free(labels);
}
