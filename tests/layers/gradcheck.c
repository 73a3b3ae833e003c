/* Finite-difference gradient checker shared by the layer tests. */
#include "gradcheck.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gc_state {
    const gc_case *c;
    rm_layer_params params;
    rm_tensor in[RM_MAX_INPUTS];
    rm_tensor out;
    float *r; /* objective weights, one per output element */
    int32_t *labels;
    int is_loss;
} gc_state;

static float *alloc_floats(size_t n)
{
    float *p = calloc(n ? n : 1, sizeof(float));
    cr_assert_not_null(p);
    return p;
}

static void fill(float *x, size_t n, gc_fill kind, rm_rng *rng)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)rm_rng_range(rng, -1.0, 1.0);
    if (kind != GC_FILL_SPACED) return;
    /* Distinct magnitudes in [0.1, 1], random signs and order. */
    for (size_t i = 0; i < n; i++) {
        double v = 0.1 + 0.9 * (double)i / (double)(n > 1 ? n - 1 : 1);
        x[i] = (float)(rm_rng_uniform(rng) < 0.5 ? -v : v);
    }
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)(rm_rng_uniform(rng) * (double)i);
        float t = x[i - 1];
        x[i - 1] = x[j];
        x[j] = t;
    }
}

static rm_layer_call make_call(gc_state *s)
{
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &s->c->cfg;
    call.params = &s->params;
    call.nin = s->c->nin;
    for (int i = 0; i < s->c->nin; i++) call.in[i] = &s->in[i];
    call.out = &s->out;
    call.labels = s->labels;
    call.training = s->c->training;
    call.seed = s->c->seed;
    call.step = 3;
    call.node_id = 7;
    return call;
}

/* L in double: the loss itself, or sum(r * y). */
static double objective(gc_state *s)
{
    rm_layer_call call = make_call(s);
    rm_err e = {0};
    int rc = s->c->desc->forward_ref(&call, &e);
    cr_assert_eq(rc, RM_OK, "%s forward failed: %s", s->c->desc->name, e.msg);
    size_t n = rm_tensor_numel(&s->out);
    double L = 0;
    for (size_t i = 0; i < n; i++) L += s->is_loss ? (double)s->out.data[i] : (double)s->r[i] * s->out.data[i];
    return L;
}

static double check_tensor(gc_state *s, const char *what, float *x, const float *grad, size_t n, rm_rng *rng)
{
    const gc_case *c = s->c;
    double eps = c->eps > 0 ? c->eps : 1e-2, tol = c->tol > 0 ? c->tol : 2e-3, worst = 0;
    int checks = c->max_checks > 0 ? c->max_checks : 64;
    for (int k = 0; k < checks && (size_t)k < n; k++) {
        size_t i = n <= (size_t)checks ? (size_t)k : (size_t)(rm_rng_uniform(rng) * (double)n);
        float x0 = x[i];
        x[i] = (float)(x0 + eps);
        double xp = x[i], Lp = objective(s);
        x[i] = (float)(x0 - eps);
        double xm = x[i], Lm = objective(s);
        x[i] = x0;
        double num = (Lp - Lm) / (xp - xm), ana = grad[i];
        double err = fabs(num - ana) / fmax(1.0, fmax(fabs(num), fabs(ana)));
        if (err > worst) worst = err;
        cr_assert(err <= tol, "%s: d%s[%zu]: analytic %.6g, numeric %.6g (error %.3g > %.3g)", c->desc->name, what, i,
                  ana, num, err, tol);
    }
    return worst;
}

static void alloc_param(rm_tensor *t, rm_tensor *g, rm_shape s)
{
    if (!rm_shape_numel(s)) return;
    *t = rm_tensor_make(s, alloc_floats(rm_shape_numel(s)));
    *g = rm_tensor_make(s, alloc_floats(rm_shape_numel(s)));
}

double gradcheck(const gc_case *c)
{
    const rm_layer_desc *d = c->desc;
    cr_assert_not_null(d->forward_ref, "%s has no forward", d->name);
    cr_assert_not_null(d->backward_ref, "%s has no backward", d->name);
    gc_state s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.is_loss = d->kind == RM_LAYER_SOFTMAX_XENT || d->kind == RM_LAYER_PIXEL_SOFTMAX_XENT;
    rm_rng rng = rm_rng_make(c->seed);
    rm_err e = {0};

    rm_shape out_shape;
    int rc = d->infer(&out_shape, &c->cfg, c->in, c->nin, &e);
    cr_assert_eq(rc, RM_OK, "%s infer failed: %s", d->name, e.msg);
    for (int i = 0; i < c->nin; i++) {
        s.in[i] = rm_tensor_make(c->in[i], alloc_floats(rm_shape_numel(c->in[i])));
        fill(s.in[i].data, rm_shape_numel(c->in[i]), c->fill, &rng);
    }
    s.out = rm_tensor_make(out_shape, alloc_floats(rm_shape_numel(out_shape)));
    if (d->param_shapes) {
        rm_shape ws = {0, 0, 0, 0}, bs = {0, 0, 0, 0};
        d->param_shapes(&ws, &bs, &c->cfg, c->in, c->nin);
        alloc_param(&s.params.w, &s.params.dw, ws);
        alloc_param(&s.params.b, &s.params.db, bs);
        if (d->kind == RM_LAYER_BATCHNORM2D) {
            s.params.running_mean = rm_tensor_make(bs, alloc_floats(rm_shape_numel(bs)));
            s.params.running_var = rm_tensor_make(bs, alloc_floats(rm_shape_numel(bs)));
        }
        if (d->init) d->init(&s.params, &c->cfg, c->in, c->nin, &rng);
        /* NaN gradients: backward must overwrite them (see din below). */
        for (size_t j = 0; s.params.dw.data && j < rm_tensor_numel(&s.params.dw); j++) s.params.dw.data[j] = NAN;
        for (size_t j = 0; s.params.db.data && j < rm_tensor_numel(&s.params.db); j++) s.params.db.data[j] = NAN;
        /* Biases and beta start at 0: make them non-zero so their use is tested. */
        if (s.params.b.data)
            for (size_t i = 0; i < rm_tensor_numel(&s.params.b); i++)
                s.params.b.data[i] = (float)rm_rng_range(&rng, -0.5, 0.5);
    }
    if (s.is_loss) {
        size_t nl = (size_t)c->in[0].n * (size_t)c->in[0].h * (size_t)c->in[0].w;
        s.labels = calloc(nl, sizeof(int32_t));
        for (size_t i = 0; i < nl; i++) s.labels[i] = (int32_t)(rm_rng_uniform(&rng) * c->in[0].c);
    }
    size_t nout = rm_shape_numel(out_shape);
    s.r = alloc_floats(nout);
    for (size_t i = 0; i < nout; i++) s.r[i] = (float)rm_rng_range(&rng, -1.0, 1.0);

    /* Analytic gradients, with only the declared forward tensors visible. */
    objective(&s);
    rm_tensor dout = rm_tensor_make(out_shape, s.r);
    rm_tensor din[RM_MAX_INPUTS], in_hidden[RM_MAX_INPUTS], out_hidden = s.out;
    rm_layer_call call = make_call(&s);
    for (int i = 0; i < c->nin; i++) {
        din[i] = rm_tensor_make(c->in[i], alloc_floats(rm_shape_numel(c->in[i])));
        /* NaN everywhere: a backward that accumulates instead of overwriting fails. */
        for (size_t j = 0; j < rm_shape_numel(c->in[i]); j++) din[i].data[j] = NAN;
        call.din[i] = &din[i];
        in_hidden[i] = s.in[i];
        if (!(d->backward_reads & RM_READS_INPUTS)) in_hidden[i].data = NULL;
        call.in[i] = &in_hidden[i];
    }
    if (!(d->backward_reads & RM_READS_OUTPUT)) out_hidden.data = NULL;
    call.out = &out_hidden;
    call.dout = s.is_loss ? NULL : &dout;
    rc = d->backward_ref(&call, &e);
    cr_assert_eq(rc, RM_OK, "%s backward failed: %s", d->name, e.msg);

    double worst = 0;
    for (int i = 0; i < c->nin; i++) {
        char what[16];
        snprintf(what, sizeof what, "in%d", i);
        worst = fmax(worst, check_tensor(&s, what, s.in[i].data, din[i].data, rm_shape_numel(c->in[i]), &rng));
    }
    if (s.params.w.data)
        worst =
            fmax(worst, check_tensor(&s, "w", s.params.w.data, s.params.dw.data, rm_tensor_numel(&s.params.w), &rng));
    if (s.params.b.data)
        worst =
            fmax(worst, check_tensor(&s, "b", s.params.b.data, s.params.db.data, rm_tensor_numel(&s.params.b), &rng));

    for (int i = 0; i < c->nin; i++) {
        free(s.in[i].data);
        free(din[i].data);
    }
    free(s.out.data);
    free(s.r);
    free(s.labels);
    free(s.params.w.data);
    free(s.params.dw.data);
    free(s.params.b.data);
    free(s.params.db.data);
    free(s.params.running_mean.data);
    free(s.params.running_var.data);
    return worst;
}
