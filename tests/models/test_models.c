/* The built-in model configs (every one parses; parameter counts equal
 * torchvision's exactly) and the `remat graph` command driven like a user
 * would, through rm_cli_main. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"
#include "commands.h"

static rm_model *load_builtin(const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/%s.cfg", REMAT_SOURCE_DIR, name);
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, path, &e), RM_OK, "%s: %s", name, e.msg);
    return m;
}

Test(models_builtin, every_config_parses)
{
    const char *names[] = {"vgg11",       "vgg13",     "vgg16",        "vgg19",           "resnet18",
                           "resnet34",    "resnet50",  "resnet101",    "resnet152",       "resnext50_32x4d",
                           "densenet121", "mobilenet", "mobilenet_v2", "efficientnet_b0", "vit_b_16",
                           "unet",        "vgg-tiny",  "resnet-tiny",  "unet-tiny",       "mobilenet-tiny"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        rm_model *m = load_builtin(names[k]);
        const rm_model_layer *last = &m->layers[m->nlayers - 1];
        cr_assert(last->desc->kind == RM_LAYER_SOFTMAX_XENT || last->desc->kind == RM_LAYER_PIXEL_SOFTMAX_XENT);
        rm_model_free(m);
    }
}

Test(models_builtin, torchvision_parameter_counts)
{
    const struct {
        const char *name;
        size_t params;
    } want[] = {
        {"vgg11", 132863336},
        {"vgg13", 133047848},
        {"vgg16", 138357544},
        {"vgg19", 143667240},
        {"resnet18", 11689512},
        {"resnet34", 21797672},
        {"resnet50", 25557032},
        {"resnet101", 44549160},
        {"resnet152", 60192808},
        /* grouped convolutions, 64-input-wide dense blocks, inverted residuals, squeeze-and-excitation */
        {"resnext50_32x4d", 25028904},
        {"densenet121", 7978856},
        {"mobilenet_v2", 3504872},
        {"efficientnet_b0", 5288548},
        /* tokens, attention */
        {"vit_b_16", 86567656},
    };
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        rm_model *m = load_builtin(want[k].name);
        cr_assert(rm_shape_equal(m->input, rm_shape_make(1, 3, 224, 224)));
        cr_assert_eq(m->layers[m->nlayers - 1].in_shape[0].c, 1000);
        cr_assert_eq(m->param_count, want[k].params, "%s: %zu parameters, torchvision has %zu", want[k].name,
                     m->param_count, want[k].params);
        rm_model_free(m);
    }
}

/* Keras' MobileNet(alpha=1.0, include_top=True) reports 4,253,864 parameters:
 * 4,231,976 trainable (convolution and depthwise weights, batchnorm gamma and
 * beta, the classifier's weights and bias) and 21,888 not (batchnorm running
 * means and variances), which remat keeps as buffers, not parameters. */
Test(models_builtin, keras_mobilenet)
{
    rm_model *m = load_builtin("mobilenet");
    cr_assert(rm_shape_equal(m->input, rm_shape_make(1, 3, 224, 224)));
    cr_assert_eq(m->param_count, 4231976, "mobilenet: %zu parameters, Keras has 4,231,976 trainable", m->param_count);
    cr_assert_eq(m->buffer_count, 21888);
    cr_assert_eq(m->layers[m->nlayers - 1].in_shape[0].c, 1000);
    int dw = 0, stride2 = 0;
    for (int k = 0; k < m->nlayers; k++)
        if (m->layers[k].desc->kind == RM_LAYER_DWCONV2D) {
            dw++;
            stride2 += m->layers[k].cfg.stride.h == 2;
            cr_assert_eq(m->layers[k].cfg.bias, 0);
        }
    cr_assert_eq(dw, 13);
    cr_assert_eq(stride2, 4);
    /* 224 -> 112 (conv1) -> 56 -> 28 -> 14 -> 7, as Keras' asymmetric "same" padding gives. */
    const struct {
        const char *name;
        rm_shape out;
    } want[] = {{"conv1_relu", rm_shape_make(1, 32, 112, 112)}, {"conv_dw_2", rm_shape_make(1, 64, 56, 56)},
                {"conv_pw_2", rm_shape_make(1, 128, 56, 56)},   {"conv_dw_4", rm_shape_make(1, 128, 28, 28)},
                {"conv_dw_6", rm_shape_make(1, 256, 14, 14)},   {"conv_pw_11_relu", rm_shape_make(1, 512, 14, 14)},
                {"conv_dw_12", rm_shape_make(1, 512, 7, 7)},    {"conv_pw_13_relu", rm_shape_make(1, 1024, 7, 7)},
                {"conv_preds", rm_shape_make(1, 1000, 1, 1)}};
    for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
        int i = rm_model_find(m, want[k].name);
        cr_assert_geq(i, 0, "%s", want[k].name);
        char a[64], b[64];
        cr_assert(rm_shape_equal(m->layers[i].out_shape, want[k].out), "%s: %s, want %s", want[k].name,
                  rm_shape_str(m->layers[i].out_shape, a, sizeof a), rm_shape_str(want[k].out, b, sizeof b));
    }
    rm_model_free(m);
}

Test(models_builtin, shapes_of_the_big_models)
{
    rm_model *m = load_builtin("resnet50");
    int i = rm_model_find(m, "layer4.2.relu3");
    cr_assert_geq(i, 0);
    cr_assert(rm_shape_equal(m->layers[i].out_shape, rm_shape_make(1, 2048, 7, 7)));
    i = rm_model_find(m, "layer3.0.downsample");
    cr_assert_geq(i, 0);
    cr_assert_eq(m->layers[i].cfg.stride.h, 2);
    cr_assert_eq(m->layers[i].inputs[0], rm_model_find(m, "layer2.3.relu3"));
    rm_model_free(m);

    m = load_builtin("unet");
    cr_assert(rm_shape_equal(m->input, rm_shape_make(1, 3, 256, 256)));
    i = rm_model_find(m, "bottom.relu2");
    cr_assert(rm_shape_equal(m->layers[i].out_shape, rm_shape_make(1, 1024, 16, 16)));
    i = rm_model_find(m, "up4.concat");
    cr_assert(rm_shape_equal(m->layers[i].out_shape, rm_shape_make(1, 1024, 32, 32)));
    cr_assert(rm_shape_equal(m->layers[m->nlayers - 1].in_shape[0], rm_shape_make(1, 2, 256, 256)));
    rm_model_free(m);

    m = load_builtin("resnet-tiny");
    int proj = 0, ident = 0;
    for (int k = 0; k < m->nlayers; k++)
        if (m->layers[k].desc->kind == RM_LAYER_ADD) {
            const rm_model_layer *other = &m->layers[m->layers[k].inputs[1]];
            if (other->desc->kind == RM_LAYER_BATCHNORM2D)
                proj++;
            else
                ident++;
        }
    cr_assert_eq(proj, 1);
    cr_assert_eq(ident, 1);
    rm_model_free(m);
}

static int run_cli(int argc, const char **args)
{
    char *argv[16];
    for (int i = 0; i < argc; i++) argv[i] = (char *)args[i];
    argv[argc] = NULL;
    return rm_cli_main(argc, argv);
}

static void quiet(void)
{
    cr_redirect_stdout();
    cr_redirect_stderr();
}

TestSuite(models_cli, .init = quiet);

Test(models_cli, bad_config_fails)
{
    char dir[] = "/tmp/remat_cli_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/bad.cfg", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("[net]\nchannels=3\nheight=8\nwidth=8\n[conv]\nfilterz=3\n", f);
    fclose(f);
    cr_assert_eq(run_cli(6, (const char *[]){"remat", "graph", "--model", path, "--batch", "2"}), 1);
    remove(path);
    rmdir(dir);
}

/* Each tensor addressable, but their sum past 2^64 bytes: the totals wrapped
 * around (an activation sum below the peak) and graph exited 0. */
Test(models_cli, byte_totals_that_would_wrap_fail)
{
    char dir[] = "/tmp/remat_cli_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/wide.cfg", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("[net]\nchannels=4\nheight=1048576\nwidth=1048576\n", f);
    for (int i = 0; i < 30; i++) fputs("[relu]\n", f);
    fputs("[global_avgpool]\n[linear]\nout=10\n[softmax_xent]\n", f);
    fclose(f);
    cr_assert_eq(run_cli(6, (const char *[]){"remat", "graph", "--model", path, "--batch", "60000"}), 1);
    cr_assert_eq(run_cli(10, (const char *[]){"remat", "plan", "--model", path, "--batch", "60000", "--budget", "50%",
                                              "--strategy", "checkpoint_all"}),
                 1);
    remove(path);
    rmdir(dir);
}

Test(models_cli, bad_arguments_fail)
{
    char model[512];
    snprintf(model, sizeof model, "%s/models/vgg-tiny.cfg", REMAT_SOURCE_DIR);
    cr_assert_eq(run_cli(6, (const char *[]){"remat", "graph", "--model", "/nonexistent.cfg", "--batch", "2"}), 1);
    cr_assert_eq(run_cli(4, (const char *[]){"remat", "graph", "--model", model}), 1);
    cr_assert_eq(run_cli(6, (const char *[]){"remat", "graph", "--model", model, "--batch", "0"}), 1);
    cr_assert_eq(run_cli(6, (const char *[]){"remat", "graph", "--model", model, "--batch", "2x"}), 1);
    cr_assert_eq(run_cli(5, (const char *[]){"remat", "graph", "--model", model, "--batch"}), 1);
    cr_assert_eq(run_cli(7, (const char *[]){"remat", "graph", "--model", model, "--batch", "2", "--bogus"}), 1);
    cr_assert_eq(run_cli(3, (const char *[]){"remat", "graph", "--help"}), 0);
}

Test(models_cli, report_and_dot)
{
    char model[512], dot[256];
    snprintf(model, sizeof model, "%s/models/resnet-tiny.cfg", REMAT_SOURCE_DIR);
    char dir[] = "/tmp/remat_cli_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    snprintf(dot, sizeof dot, "%s/g.dot", dir);
    int rc = run_cli(8, (const char *[]){"remat", "graph", "--model", model, "--batch", "4", "--dot", dot});
    cr_assert_eq(rc, 0);
    FILE *f = fopen(dot, "r");
    cr_assert_not_null(f);
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    cr_assert(!strncmp(buf, "digraph", 7));
    cr_assert(strstr(buf, "\"loss\\n"));
    cr_assert(strstr(buf, "layer1.0.relu1.gradsum") == NULL, "only outputs read twice get a grad-sum");
    cr_assert(strstr(buf, "layer1.0.add.grad"));
    cr_assert(strstr(buf, "penwidth=3"), "the loss is highlighted");
    remove(dot);
    rmdir(dir);
}
