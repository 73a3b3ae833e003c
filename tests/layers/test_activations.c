/* The activations of layers/activation.c: each one's descriptor (its
 * config section, what its backward reads), its values against formulas
 * written here another way, its derivative against central differences of
 * those formulas in every region (saturated ones included), PyTorch's
 * choices at the kinks, a gradient check of the layer, and backward that
 * overwrites. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "layer_checks.h"

typedef double (*ref_fn)(double);

/* The definitions, written independently of activation.h. */
static double ref_relu6(double x)
{
    return fmin(fmax(x, 0.0), 6.0);
}
static double ref_sigmoid(double x)
{
    return 0.5 * (1.0 + tanh(0.5 * x));
}
static double ref_tanh(double x)
{
    return (exp(2 * x) - 1) / (exp(2 * x) + 1);
}
static double ref_silu(double x)
{
    return x / (1.0 + exp(-x));
}
static double ref_hardsigmoid(double x)
{
    return fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0;
}
static double ref_hardswish(double x)
{
    return x * fmin(fmax(x + 3.0, 0.0), 6.0) / 6.0;
}
static double ref_gelu(double x)
{
    return 0.5 * x * erfc(-x / sqrt(2.0));
}
static double ref_gelu_tanh(double x)
{
    double u = sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    return x * ref_sigmoid(2.0 * u); /* (1 + tanh u) / 2 = sigmoid(2u) */
}

typedef struct act {
    const rm_layer_desc *d;
    const char *name;
    unsigned reads;
    ref_fn f;
} act;

static const act acts[] = {
    {&rm_relu6_desc, "relu6", RM_READS_OUTPUT, ref_relu6},
    {&rm_sigmoid_desc, "sigmoid", RM_READS_OUTPUT, ref_sigmoid},
    {&rm_tanh_desc, "tanh", RM_READS_OUTPUT, ref_tanh},
    {&rm_silu_desc, "silu", RM_READS_INPUTS, ref_silu},
    {&rm_hardsigmoid_desc, "hardsigmoid", RM_READS_INPUTS, ref_hardsigmoid},
    {&rm_hardswish_desc, "hardswish", RM_READS_INPUTS, ref_hardswish},
    {&rm_gelu_desc, "gelu", RM_READS_INPUTS, ref_gelu},
    {&rm_gelu_tanh_desc, "gelu_tanh", RM_READS_INPUTS, ref_gelu_tanh},
};
#define NACTS (sizeof acts / sizeof *acts)

/* Points in every region: deep negative, around the kinks, the middle,
 * beyond relu6's 6. None is a kink itself (those are below). */
static const float xs[] = {-9.5f, -4.0f, -3.25f, -2.75f, -1.5f, -0.3f, 0.2f, 0.9f, 2.5f, 3.5f, 5.75f, 6.5f, 11.0f};
#define NX ((int)(sizeof xs / sizeof *xs))

/* y = f(x) and dx = f'(.) * dyv by the layer's reference, at the n points x. */
static void run(const act *a, const float *x, int n, float *y, float *dx, float dyv)
{
    float dy[NX];
    for (int i = 0; i < n; i++) dy[i] = dyv;
    rm_layer_config cfg = {.kind = a->d->kind};
    rm_tensor tx = rm_tensor_make(rm_shape_make(1, n, 1, 1), (float *)x), ty = rm_tensor_make(tx.shape, y),
              tdy = rm_tensor_make(tx.shape, dy), tdx = rm_tensor_make(tx.shape, dx);
    rm_layer_call call = {.cfg = &cfg, .nin = 1, .in = {&tx}, .out = &ty};
    rm_err e = {0};
    cr_assert_eq(a->d->forward_ref(&call, &e), RM_OK, "%s: %s", a->name, e.msg);
    call.dout = &tdy;
    call.din[0] = &tdx;
    cr_assert_eq(a->d->backward_ref(&call, &e), RM_OK, "%s: %s", a->name, e.msg);
}

Test(activations, descriptors)
{
    for (size_t k = 0; k < NACTS; k++) check_desc(acts[k].d, acts[k].name, acts[k].reads, 1, 1, &odd, 1);
}

Test(activations, values_and_derivatives_in_every_region)
{
    for (size_t k = 0; k < NACTS; k++) {
        const act *a = &acts[k];
        float y[NX], dx[NX];
        run(a, xs, NX, y, dx, 0.75f);
        for (int i = 0; i < NX; i++) {
            double x = xs[i], want = a->f(x);
            cr_expect(fabs(y[i] - want) <= 1e-6 * fmax(1.0, fabs(want)), "%s(%g) = %.9g, want %.9g", a->name, x,
                      (double)y[i], want);
            /* The derivative: central differences of the formula, in double. */
            const double h = 1e-5;
            double want_d = 0.75 * (a->f(x + h) - a->f(x - h)) / (2 * h);
            cr_expect(fabs(dx[i] - want_d) <= 2e-6 * fmax(1.0, fabs(want_d)), "%s'(%g) * 0.75 = %.9g, want %.9g",
                      a->name, x, (double)dx[i], want_d);
        }
    }
}

/* At the kinks, PyTorch's one-sided choices (hardtanh_backward,
 * hardsigmoid_backward, hardswish_backward). */
Test(activations, kinks_follow_pytorch)
{
    const struct {
        const act *a;
        float x, dx;
    } k[] = {
        {&acts[0], 0.0f, 0.0f},   {&acts[0], 6.0f, 0.0f}, /* relu6: 0 at both ends */
        {&acts[4], -3.0f, 0.0f},  {&acts[4], 3.0f, 0.0f}, /* hardsigmoid: open (-3, 3) */
        {&acts[5], -3.0f, -0.5f}, {&acts[5], 3.0f, 1.5f}, /* hardswish: x/3 + 1/2 on [-3, 3] */
    };
    for (size_t i = 0; i < sizeof k / sizeof *k; i++) {
        float y, dx;
        run(k[i].a, &k[i].x, 1, &y, &dx, 1.0f);
        cr_expect_eq(dx, k[i].dx, "%s'(%g) = %g, PyTorch's %g", k[i].a->name, (double)k[i].x, (double)dx,
                     (double)k[i].dx);
        cr_expect_eq(y, (float)k[i].a->f(k[i].x), "%s(%g)", k[i].a->name, (double)k[i].x);
    }
}

Test(activations, gradcheck)
{
    for (size_t k = 0; k < NACTS; k++) {
        gc_case c = one_input_case(acts[k].d, odd);
        c.fill = GC_FILL_SPACED; /* no value at relu6's kink at 0 */
        c.eps = 1e-3;
        run_gradcheck(&c);
    }
}

Test(activations, backward_overwrites_and_reads_what_it_declares)
{
    for (size_t k = 0; k < NACTS; k++) {
        rm_layer_config cfg = {.kind = acts[k].d->kind};
        check_backward_overwrites(acts[k].d, &cfg, &odd, 1, 1);
        expect_input_count_errors(acts[k].d);
    }
}

/* A section name ending in a digit numbers its layers after an underscore:
 * relu6's first is relu6_1, so relu's 61st, relu61, is free. */
Test(activations, automatic_names_after_a_digit)
{
    char text[4096] = "[net]\nchannels=2\nheight=2\nwidth=2\n[relu6]\n";
    for (int k = 0; k < 61; k++) strcat(text, "[relu]\n");
    strcat(text, "[global_avgpool]\n[softmax_xent]\n");
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_parse(&m, text, "names.cfg", &e), RM_OK, "%s", e.msg);
    cr_expect_str_eq(m->layers[0].name, "relu6_1");
    cr_expect_str_eq(m->layers[61].name, "relu61");
    rm_model_free(m);
}
