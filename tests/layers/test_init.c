/* Weight initialisation (layers/init.h): each rule's distribution on layers
 * large enough to measure it, PyTorch's fans for conv, depthwise conv and
 * linear, the default's draws unchanged, the config key, and the built-in
 * torchvision models initialised as torchvision does: VGG-16 starts at a
 * loss near ln(1000), where He-initialised classifiers sent it past 16. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "infer.h"
#include "init.h"
#include "layers.h"
#include "sanitized.h"

typedef struct moments {
    double mean, sd, lo, hi;
} moments;

static moments measure(const float *x, size_t n)
{
    moments m = {0, 0, INFINITY, -INFINITY};
    for (size_t i = 0; i < n; i++) m.mean += x[i], m.lo = fmin(m.lo, x[i]), m.hi = fmax(m.hi, x[i]);
    m.mean /= (double)n;
    for (size_t i = 0; i < n; i++) m.sd += (x[i] - m.mean) * (x[i] - m.mean);
    m.sd = sqrt(m.sd / (double)n);
    return m;
}

/* Layer d's parameters at cfg on input in, initialised from seed. */
static void init_layer(const rm_layer_desc *d, const rm_layer_config *cfg, rm_shape in, float **w, size_t *nw,
                       float **b, size_t *nb)
{
    rm_shape ws, bs;
    d->param_shapes(&ws, &bs, cfg, &in, 1);
    *nw = rm_shape_numel(ws), *nb = rm_shape_numel(bs);
    *w = calloc(*nw, sizeof **w), *b = calloc(*nb ? *nb : 1, sizeof **b);
    cr_assert(*w && *b);
    rm_layer_params p;
    memset(&p, 0, sizeof p);
    p.w = rm_tensor_make(ws, *w);
    if (*nb) p.b = rm_tensor_make(bs, *b);
    rm_rng rng = rm_rng_make(11);
    d->init(&p, cfg, &in, 1, &rng);
}

/* The weights' sd within 2% of want (about 9 standard errors over 100k+ values), mean near 0. */
static void expect_init(const rm_layer_desc *d, rm_layer_config cfg, rm_shape in, double want_sd, int bias_uniform)
{
    float *w, *b;
    size_t nw, nb;
    init_layer(d, &cfg, in, &w, &nw, &b, &nb);
    moments m = measure(w, nw);
    const char *name = rm_init_name(cfg.init);
    cr_expect(fabs(m.sd / want_sd - 1) < 0.02, "%s %s: sd %.5g, want %.5g", d->name, name, m.sd, want_sd);
    cr_expect(fabs(m.mean) < 5 * want_sd / sqrt((double)nw), "%s %s: mean %.3g", d->name, name, m.mean);
    if (cfg.init == RM_INIT_PYTORCH) {
        double bound = want_sd * sqrt(3.0); /* U(-a, a) has sd a / sqrt 3 */
        cr_expect(m.lo >= -bound && m.hi <= bound && m.hi > 0.99 * bound, "%s: [%g, %g] in +-%g", d->name, m.lo, m.hi,
                  bound);
    }
    moments mb = measure(b, nb ? nb : 1);
    if (bias_uniform)
        cr_expect(mb.hi > 0 && mb.lo < 0 && mb.hi <= want_sd * sqrt(3.0), "%s %s: bias in [%g, %g]", d->name, name,
                  mb.lo, mb.hi);
    else if (nb)
        cr_expect(mb.lo == 0 && mb.hi == 0, "%s %s: bias not 0", d->name, name);
    free(w), free(b);
}

Test(init, each_rule_with_pytorchs_fans)
{
    /* conv 16 -> 64, 3x3: fan-in 144, fan-out 576 */
    rm_layer_config conv = {
        .kind = RM_LAYER_CONV2D, .out_channels = 64, .kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1}, .bias = 1};
    const rm_shape cin = rm_shape_make(1, 16, 8, 8);
    conv.init = RM_INIT_KAIMING_IN;
    expect_init(&rm_conv2d_desc, conv, cin, sqrt(2.0 / 144), 0);
    conv.init = RM_INIT_KAIMING_OUT;
    expect_init(&rm_conv2d_desc, conv, cin, sqrt(2.0 / 576), 0);
    conv.init = RM_INIT_PYTORCH;
    expect_init(&rm_conv2d_desc, conv, cin, 1 / sqrt(144.0) / sqrt(3.0), 1);
    /* linear 512 -> 256 */
    rm_layer_config lin = {.kind = RM_LAYER_LINEAR, .out_channels = 256, .bias = 1};
    const rm_shape lin_in = rm_shape_make(1, 512, 1, 1);
    lin.init = RM_INIT_KAIMING_IN;
    expect_init(&rm_linear_desc, lin, lin_in, sqrt(2.0 / 512), 0);
    lin.init = RM_INIT_KAIMING_OUT;
    expect_init(&rm_linear_desc, lin, lin_in, sqrt(2.0 / 256), 0);
    lin.init = RM_INIT_NORMAL_001;
    expect_init(&rm_linear_desc, lin, lin_in, 0.01, 0);
    lin.init = RM_INIT_PYTORCH;
    expect_init(&rm_linear_desc, lin, lin_in, 1 / sqrt(512.0) / sqrt(3.0), 1);
    /* depthwise 4096 channels, 5x5: a filter sees one channel (fan-in 25), fan-out 4096 x 25 */
    rm_layer_config dw = {.kind = RM_LAYER_DWCONV2D, .kernel = {5, 5}, .stride = {1, 1}, .pad = {2, 2}, .bias = 1};
    const rm_shape dw_in = rm_shape_make(1, 4096, 8, 8);
    dw.init = RM_INIT_KAIMING_IN;
    expect_init(&rm_dwconv2d_desc, dw, dw_in, sqrt(2.0 / 25), 0);
    dw.init = RM_INIT_KAIMING_OUT;
    expect_init(&rm_dwconv2d_desc, dw, dw_in, sqrt(2.0 / (4096 * 25)), 0);
}

/* The default draws exactly what every model drew before the rule had a name. */
Test(init, the_default_draws_as_before)
{
    rm_layer_config lin = {.kind = RM_LAYER_LINEAR, .out_channels = 7, .bias = 1};
    float *w, *b;
    size_t nw, nb;
    init_layer(&rm_linear_desc, &lin, rm_shape_make(1, 5, 2, 3), &w, &nw, &b, &nb);
    rm_rng rng = rm_rng_make(11);
    for (size_t i = 0; i < nw; i++) cr_assert_eq(w[i], (float)(sqrt(2.0 / 30) * rm_rng_normal(&rng)), "weight %zu", i);
    for (size_t i = 0; i < nb; i++) cr_assert_eq(b[i], 0.0f);
    free(w), free(b);
}

Test(init, the_config_key)
{
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(
        rm_model_parse(&m,
                       "[net]\nchannels=3\nheight=4\nwidth=4\n[conv]\nfilters=2\nsize=3\npad=1\ninit=kaiming_out\n"
                       "[dwconv]\nsize=3\ninit=pytorch\n[linear]\nout=3\ninit=normal_0.01\n[softmax_xent]\n",
                       "t.cfg", &e),
        RM_OK, "%s", e.msg);
    cr_expect_eq(m->layers[0].cfg.init, RM_INIT_KAIMING_OUT);
    cr_expect_eq(m->layers[1].cfg.init, RM_INIT_PYTORCH);
    cr_expect_eq(m->layers[2].cfg.init, RM_INIT_NORMAL_001);
    rm_model_free(m);
    m = NULL;
    cr_assert_eq(
        rm_model_parse(&m, "[net]\nchannels=3\nheight=4\nwidth=4\n[linear]\nout=3\ninit=xavier\n", "t.cfg", &e),
        RM_ERR_PARSE);
    cr_expect(strstr(e.msg, "t.cfg:7: in [linear]: init must be kaiming_in, kaiming_out, normal_0.01 or pytorch, "
                            "got 'xavier'"),
              "%s", e.msg);
    cr_assert_eq(
        rm_model_parse(&m, "[net]\nchannels=3\nheight=4\nwidth=4\n[maxpool]\nsize=2\ninit=pytorch\n", "t.cfg", &e),
        RM_ERR_PARSE, "maxpool has no weights to initialise");
}

static void expect_model_inits(const char *cfg, int conv, int linear)
{
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, cfg, &e), RM_OK, "%s", e.msg);
    int convs = 0, linears = 0;
    for (int i = 0; i < m->nlayers; i++) {
        const rm_model_layer *L = &m->layers[i];
        if (L->desc->kind == RM_LAYER_CONV2D) {
            convs++;
            cr_expect_eq(L->cfg.init, conv, "%s: %s", cfg, L->name);
        }
        if (L->desc->kind == RM_LAYER_LINEAR) {
            linears++;
            cr_expect_eq(L->cfg.init, linear, "%s: %s", cfg, L->name);
        }
    }
    cr_expect(convs > 0 && linears > 0, "%s", cfg);
    rm_model_free(m);
}

Test(init, the_torchvision_models_start_as_torchvision_starts_them)
{
    static const char *const vgg[] = {"vgg11", "vgg13", "vgg16", "vgg19"}, *const resnet[] = {"resnet18", "resnet34",
                                                                                              "resnet50", "resnet101",
                                                                                              "resnet152"};
    char path[512];
    for (size_t k = 0; k < 4; k++) {
        snprintf(path, sizeof path, "%s/models/%s.cfg", REMAT_SOURCE_DIR, vgg[k]);
        expect_model_inits(path, RM_INIT_KAIMING_OUT, RM_INIT_NORMAL_001);
    }
    for (size_t k = 0; k < 5; k++) {
        snprintf(path, sizeof path, "%s/models/%s.cfg", REMAT_SOURCE_DIR, resnet[k]);
        expect_model_inits(path, RM_INIT_KAIMING_OUT, RM_INIT_PYTORCH);
    }
}

/* VGG-16's logits at initialisation are small: the loss on random labels is
 * near ln(1000) = 6.91 (torchvision's too), not the 16.5 He-initialised
 * classifiers gave. */
Test(init, vgg16_starts_near_ln_1000, .timeout = 120)
{
    RM_SKIP_WHEN_SANITIZED();
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, REMAT_SOURCE_DIR "/models/vgg16.cfg", &e), RM_OK, "%s", e.msg);
    enum { B = 2 };
    const size_t in = rm_shape_numel(m->input), k = rm_model_output_numel(m);
    float *x = malloc(B * in * sizeof *x), *z = malloc(B * k * sizeof *z);
    cr_assert(x && z);
    rm_rng rng = rm_rng_make(3);
    for (size_t i = 0; i < B * in; i++) x[i] = (float)rm_rng_normal(&rng);
    cr_assert_eq(rm_model_infer(z, m, x, B, 7, &e), RM_OK, "%s", e.msg);
    for (int n = 0; n < B; n++) {
        double top = -INFINITY, sum = 0;
        for (size_t j = 0; j < k; j++) top = fmax(top, z[n * k + j]);
        for (size_t j = 0; j < k; j++) sum += exp(z[n * k + j] - top);
        double loss = top + log(sum) - z[n * k + (size_t)n * 17]; /* label 0 and 17 */
        cr_expect(loss > 6.0 && loss < 8.0, "sample %d: loss %.3f at initialisation, ln(1000) = 6.91", n, loss);
    }
    free(x), free(z);
    rm_model_free(m);
}
