/* The strict config parser: every kind of mistake is an error that names the
 * file and the line, and the [repeat] construct names and wires its layers as
 * documented in docs/config-format.md. Bad configs are written to a fresh
 * temporary directory so the messages carry a real path. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builder.h"

static char tmpdir[256];

static void make_tmpdir(void)
{
    snprintf(tmpdir, sizeof tmpdir, "/tmp/remat_models_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(models_config, .init = make_tmpdir, .fini = remove_tmpdir);

static void write_file(char *path, size_t len, const char *name, const char *text)
{
    snprintf(path, len, "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
}

/* Loads text from a file and expects code, "path:line:" and `what` in the message. */
static void expect_error(const char *text, rm_code code, int line, const char *what)
{
    char path[512];
    write_file(path, sizeof path, "bad.cfg", text);
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    int rc = rm_model_load(&m, path, &e);
    cr_assert_eq(rc, (int)code, "expected %s, got %s: %s", rm_code_name(code), rm_code_name((rm_code)rc), e.msg);
    cr_assert_null(m);
    char prefix[600];
    snprintf(prefix, sizeof prefix, "%s:%d: ", path, line);
    cr_assert(!strncmp(e.msg, prefix, strlen(prefix)), "message '%s' should start with '%s'", e.msg, prefix);
    cr_assert(strstr(e.msg, what), "message '%s' should mention '%s'", e.msg, what);
}

static rm_model *load_text(const char *text)
{
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    int rc = rm_model_parse(&m, text, "test.cfg", &e);
    cr_assert_eq(rc, RM_OK, "%s", e.msg);
    return m;
}

/* Lines 1-5; a layer section added after it starts at line 6. */
#define NET "[net]\nchannels=3\nheight=8\nwidth=8\n\n"
#define HEAD "[global_avgpool]\nname=gap\n[linear]\nname=fc\nout=4\n[softmax_xent]\nname=loss\n"

Test(models_config, minimal_model_and_defaults)
{
    rm_model *m = load_text(NET "[conv]\nname=c\nfilters=4\nsize=3\n"
                                "[batchnorm]\n[relu]\n[maxpool]\nsize=2\n[dropout]\n" HEAD);
    cr_assert_eq(m->nlayers, 8);
    cr_assert(rm_shape_equal(m->input, rm_shape_make(1, 3, 8, 8)));
    const rm_model_layer *c = &m->layers[0];
    cr_assert_str_eq(c->name, "c");
    cr_assert_eq(c->cfg.kind, RM_LAYER_CONV2D);
    cr_assert_eq(c->cfg.stride.h, 1);
    cr_assert_eq(c->cfg.pad.h, 0);
    cr_assert_eq(c->cfg.bias, 1);
    cr_assert_eq(c->inputs[0], RM_MODEL_INPUT);
    cr_assert(rm_shape_equal(c->out_shape, rm_shape_make(1, 4, 6, 6)));
    cr_assert_eq(c->param_count, 4 * 3 * 9 + 4);
    /* Automatic names: section type and a count within the scope. */
    cr_assert_str_eq(m->layers[1].name, "batchnorm1");
    cr_assert_eq(m->layers[1].cfg.eps, 1e-5f);
    cr_assert_eq(m->layers[1].cfg.momentum, 0.1f);
    cr_assert_eq(m->layers[1].param_count, 8);
    cr_assert_eq(m->layers[1].buffer_count, 8);
    cr_assert_str_eq(m->layers[2].name, "relu1");
    cr_assert_eq(m->layers[3].cfg.stride.h, 1);
    cr_assert(rm_shape_equal(m->layers[3].out_shape, rm_shape_make(1, 4, 5, 5)));
    cr_assert_eq(m->layers[4].cfg.p, 0.5f);
    cr_assert_eq(m->layers[2].inputs[0], 1);
    cr_assert_eq(m->param_count, 112 + 8 + 4 * 4 + 4);
    cr_assert_eq(m->buffer_count, 8);
    cr_assert_eq(rm_model_find(m, "fc"), 6);
    cr_assert_eq(rm_model_find(m, "nope"), -1);
    rm_model_free(m);
}

Test(models_config, comments_whitespace_and_crlf)
{
    rm_model *m = load_text("# a comment\r\n[net]   # trailing\r\n  channels = 3 ; another\r\nheight=8\r\n"
                            "width=8\r\n\r\n[ conv ]\r\nfilters = 4\r\nsize=1\r\n" HEAD);
    cr_assert_eq(m->layers[0].cfg.out_channels, 4);
    rm_model_free(m);
}

Test(models_config, repeat_names_and_iteration_input)
{
    rm_model *m = load_text(NET "[conv]\nname=stem\nfilters=4\nsize=3\npad=1\n"
                                "[repeat]\nname=block\ncount=3\n"
                                "[conv]\nfilters=4\nsize=3\npad=1\n"
                                "[relu]\nname=act\n"
                                "[add]\ninputs=act, @in\n"
                                "[end]\n"
                                "[repeat]\ncount=1\nstart=7\n[relu]\n[end]\n" HEAD);
    cr_assert_eq(m->nlayers, 1 + 9 + 1 + 3);
    const char *names[] = {
        "stem",         "block.0.conv1", "block.0.act", "block.0.add1", "block.1.conv1",   "block.1.act",
        "block.1.add1", "block.2.conv1", "block.2.act", "block.2.add1", "repeat2.7.relu1", "gap",
        "fc",           "loss"};
    for (int i = 0; i < m->nlayers; i++) cr_assert_str_eq(m->layers[i].name, names[i]);
    for (int it = 0; it < 3; it++) {
        int conv = 1 + 3 * it, add = conv + 2;
        cr_assert_eq(m->layers[conv].inputs[0], conv - 1, "the first layer reads the previous block");
        cr_assert_eq(m->layers[add].nin, 2);
        cr_assert_eq(m->layers[add].inputs[0], conv + 1, "a bare name is this iteration's layer");
        cr_assert_eq(m->layers[add].inputs[1], conv - 1, "@in is the iteration's input");
    }
    cr_assert_eq(m->layers[0].uses, 2);
    rm_model_free(m);
}

/* 100,000 layers from one [repeat], each iteration reading its own layer by
 * name. Checking names for uniqueness and looking up references were linear
 * scans, which took about a minute here; now it is a fraction of a second, so
 * a quadratic step back would show as this test taking minutes again. */
Test(models_config, repeat_of_100000_layers)
{
    rm_model *m = load_text(NET "[repeat]\nname=deep\ncount=50000\n[relu]\nname=a\n[relu]\ninput=a\n[end]\n"
                                "[add]\ninputs=deep.49999.relu2, deep.0.a\n" HEAD);
    cr_assert_eq(m->nlayers, 100000 + 4);
    for (int i = 0; i < 100000; i += 2) {
        cr_assert_eq(m->layers[i].inputs[0], i - 1, "'a' reads the previous iteration");
        cr_assert_eq(m->layers[i + 1].inputs[0], i, "a bare name is this iteration's layer");
    }
    cr_assert_str_eq(m->layers[99998].name, "deep.49999.a");
    cr_assert_str_eq(m->layers[99999].name, "deep.49999.relu2");
    const rm_model_layer *add = &m->layers[100000];
    cr_assert_eq(add->inputs[0], 99999);
    cr_assert_eq(add->inputs[1], 0);
    cr_assert_eq(m->layers[0].uses, 2);
    rm_model_free(m);
}

/* A config expands to at most 1,000,000 layers: a [repeat] that would pass
 * that is refused at its count, before it expands. */
Test(models_config, layer_limit)
{
    expect_error(NET "[repeat]\ncount=100000\n[relu]\n[relu]\n[relu]\n[relu]\n[relu]\n[relu]\n[relu]\n[relu]\n"
                     "[relu]\n[relu]\n[relu]\n[end]\n" HEAD,
                 RM_ERR_PARSE, 7, "more than 1000000 layers: the config reaches 1100000 here");
    expect_error(NET "[repeat]\ncount=100001\n[relu]\n[end]\n" HEAD, RM_ERR_PARSE, 7,
                 "value 100001 for key 'count' in [repeat] is out of range [1, 100000]");
}

Test(models_config, inputs_by_full_name_and_the_input_batch)
{
    rm_model *m = load_text(NET "[repeat]\nname=r\ncount=2\n[conv]\nname=c\nfilters=3\nsize=1\n[end]\n"
                                "[add]\nname=a\ninputs=r.0.c, input, r.1.c\n" HEAD);
    const rm_model_layer *a = &m->layers[2];
    cr_assert_eq(a->nin, 3);
    cr_assert_eq(a->inputs[0], 0);
    cr_assert_eq(a->inputs[1], RM_MODEL_INPUT);
    cr_assert_eq(a->inputs[2], 1);
    cr_assert_eq(m->input_uses, 2);
    rm_model_free(m);
}

/* A dense block's concat: 30 inputs, each layer's place among the model's
 * inputs (in_at) after every earlier layer's. 64 is the most a layer takes. */
Test(models_config, concat_of_thirty_and_the_limit)
{
    char text[4096], names[1024] = "";
    size_t used = 0;
    for (int k = 0; k < 30; k++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%sr.%d.c", k ? ", " : "", k);
    snprintf(text, sizeof text,
             NET "[repeat]\nname=r\ncount=30\n[conv]\nname=c\nfilters=2\nsize=1\ninput=input\n"
                 "[end]\n[concat]\nname=cat\ninputs=%s\n" HEAD,
             names);
    rm_model *m = load_text(text);
    const rm_model_layer *cat = &m->layers[30];
    cr_assert_eq(cat->nin, 30);
    for (int k = 0; k < 30; k++) cr_assert_eq(cat->inputs[k], k);
    cr_assert(rm_shape_equal(cat->out_shape, rm_shape_make(1, 60, 8, 8)));
    cr_assert_eq(cat->in_at, 30);          /* the 30 convs read one input each */
    cr_assert_eq(m->layers[31].in_at, 60); /* then the concat's 30 */
    cr_assert_eq(m->ninputs, 60 + 3);      /* gap, fc, loss */
    rm_model_free(m);

    used = 0;
    for (int k = 0; k < 65; k++)
        used += (size_t)snprintf(names + used, sizeof names - used, "%sr.%d.c", k ? ", " : "", k);
    snprintf(text, sizeof text,
             NET "[repeat]\nname=r\ncount=65\n[conv]\nname=c\nfilters=2\nsize=1\ninput=input\n"
                 "[end]\n[concat]\nname=cat\ninputs=%s\n" HEAD,
             names);
    expect_error(text, RM_ERR_PARSE, 17, "more than 64 inputs");
}

Test(models_config, unknown_key)
{
    expect_error(NET "[conv]\nfilterz=4\nsize=3\n" HEAD, RM_ERR_PARSE, 7, "unknown key 'filterz' in [conv]");
    expect_error("[net]\nchannels=3\nheight=8\nwidth=8\nbatch=4\n", RM_ERR_PARSE, 5, "command line");
    expect_error(NET "[relu]\nsize=3\n" HEAD, RM_ERR_PARSE, 7, "unknown key 'size' in [relu]");
    expect_error(NET "[repeat]\ncount=1\ntimes=2\n[relu]\n[end]\n" HEAD, RM_ERR_PARSE, 8, "unknown key 'times'");
}

Test(models_config, unknown_section)
{
    expect_error(NET "[relu]\n[convv]\nfilters=4\n" HEAD, RM_ERR_PARSE, 7, "unknown section [convv]");
    expect_error("[conv]\nfilters=4\nsize=3\n" HEAD, RM_ERR_PARSE, 1, "first section must be [net]");
    expect_error(NET "[relu]\n[net]\n" HEAD, RM_ERR_PARSE, 7, "second [net]");
}

Test(models_config, key_given_twice_and_syntax)
{
    expect_error(NET "[conv]\nfilters=4\nsize=3\nfilters=8\n" HEAD, RM_ERR_PARSE, 9,
                 "key 'filters' given twice in [conv] (first at line 7)");
    expect_error(NET "[conv]\nfilters 4\n" HEAD, RM_ERR_PARSE, 7, "expected key=value");
    expect_error(NET "[conv\nfilters=4\n" HEAD, RM_ERR_PARSE, 6, "malformed section header");
    expect_error(NET "[conv]\nfilters=\n" HEAD, RM_ERR_PARSE, 7, "has no value");
    expect_error("channels=3\n[net]\n", RM_ERR_PARSE, 1, "outside of any section");
}

Test(models_config, bad_numbers)
{
    expect_error(NET "[conv]\nfilters=4x\nsize=3\n" HEAD, RM_ERR_PARSE, 7, "bad value '4x' for key 'filters'");
    expect_error(NET "[conv]\nfilters=4\nsize=3.5\n" HEAD, RM_ERR_PARSE, 8, "bad value '3.5'");
    expect_error(NET "[conv]\nfilters=0\nsize=3\n" HEAD, RM_ERR_PARSE, 7, "out of range");
    expect_error(NET "[conv]\nfilters=99999999999999999999\nsize=3\n" HEAD, RM_ERR_PARSE, 7, "bad value");
    expect_error(NET "[conv]\nfilters=4\nsize=3\nbias=2\n" HEAD, RM_ERR_PARSE, 9, "out of range");
    expect_error(NET "[conv]\nfilters=+4\nsize=3\n" HEAD, RM_ERR_PARSE, 7, "bad value");
    expect_error(NET "[batchnorm]\neps=0\n" HEAD, RM_ERR_PARSE, 7, "out of range");
    expect_error(NET "[batchnorm]\nmomentum=1e-2junk\n" HEAD, RM_ERR_PARSE, 7, "bad value");
    expect_error(NET "[dropout]\np=1\n" HEAD, RM_ERR_PARSE, 7, "out of range");
    expect_error(NET "[dropout]\np=nan\n" HEAD, RM_ERR_PARSE, 7, "bad value");
    expect_error("[net]\nchannels=3\nheight=-8\nwidth=8\n", RM_ERR_PARSE, 3, "out of range");
}

/* size, stride and pad take N or HxW; dilation and groups are conv's. */
Test(models_config, conv_windows_dilation_and_groups)
{
    rm_model *m = load_text(NET "[conv]\nfilters=6\nsize=1x7\npad=0x3\n[conv]\nfilters=6\nsize=3\nstride=2x1\npad=2"
                                "\ndilation=2\ngroups=3\nbias=0\n" HEAD);
    const rm_model_layer *a = &m->layers[0], *b = &m->layers[1];
    cr_assert(a->cfg.kernel.h == 1 && a->cfg.kernel.w == 7 && a->cfg.pad.h == 0 && a->cfg.pad.w == 3);
    cr_assert(a->cfg.dilation.h == 1 && a->cfg.groups == 1); /* the defaults */
    cr_assert(rm_shape_equal(a->out_shape, rm_shape_make(1, 6, 8, 8)));
    cr_assert_eq(a->param_count, 6 * 3 * 7 + 6);
    cr_assert(b->cfg.stride.h == 2 && b->cfg.stride.w == 1 && b->cfg.dilation.w == 2 && b->cfg.groups == 3);
    /* extent (3 - 1) * 2 + 1 = 5: rows (8 + 4 - 5) / 2 + 1 = 4, columns 8 */
    cr_assert(rm_shape_equal(b->out_shape, rm_shape_make(1, 6, 4, 8)));
    cr_assert_eq(b->param_count, 6 * 2 * 9);
    rm_model_free(m);

    expect_error(NET "[conv]\nfilters=4\nsize=3x\n" HEAD, RM_ERR_PARSE, 8, "expected N or HxW");
    expect_error(NET "[conv]\nfilters=4\nsize=3x0\n" HEAD, RM_ERR_PARSE, 8, "expected N or HxW, each 1 to 1024");
    expect_error(NET "[conv]\nfilters=4\nsize=3x3x3\n" HEAD, RM_ERR_PARSE, 8, "expected N or HxW");
    expect_error(NET "[conv]\nfilters=4\nsize=3\ngroups=0\n" HEAD, RM_ERR_PARSE, 9, "out of range");
    expect_error(NET "[conv]\nfilters=4\nsize=3\ngroups=2\n" HEAD, RM_ERR_SHAPE, 6,
                 "2 groups do not divide 3 input and 4 output channels");
    expect_error(NET "[maxpool]\nsize=3x1\n" HEAD, RM_ERR_SHAPE, 6, "kernel 3x1 differs between height and width");
    expect_error(NET "[maxpool]\nsize=3\ngroups=2\n" HEAD, RM_ERR_PARSE, 8, "groups");
}

Test(models_config, dwconv_keys_defaults_and_errors)
{
    /* [dwconv] takes conv's keys minus filters, with conv's defaults: stride 1, pad 0, bias 1. */
    rm_model *m = load_text(NET "[dwconv]\nname=d\nsize=3\n[dwconv]\nsize=3\nstride=2\npad=1\nbias=0\n" HEAD);
    const rm_model_layer *d = &m->layers[0], *d2 = &m->layers[1];
    cr_assert_eq(d->cfg.kind, RM_LAYER_DWCONV2D);
    cr_assert_eq(d->cfg.stride.h, 1);
    cr_assert_eq(d->cfg.pad.h, 0);
    cr_assert_eq(d->cfg.bias, 1);
    cr_assert(rm_shape_equal(d->out_shape, rm_shape_make(1, 3, 6, 6)));
    cr_assert_eq(d->param_count, 3 * 9 + 3);
    cr_assert_str_eq(d2->name, "dwconv2"); /* the count includes the named one */
    cr_assert_eq(d2->cfg.stride.h, 2);
    cr_assert_eq(d2->cfg.pad.h, 1);
    cr_assert_eq(d2->cfg.bias, 0);
    cr_assert(rm_shape_equal(d2->out_shape, rm_shape_make(1, 3, 3, 3)));
    cr_assert_eq(d2->param_count, 3 * 9);
    rm_model_free(m);

    expect_error(NET "[dwconv]\nfilters=4\nsize=3\n" HEAD, RM_ERR_PARSE, 7,
                 "unknown key 'filters' in [dwconv] (valid keys: name, input, inputs, size, stride, pad, bias, init)");
    expect_error(NET "[dwconv]\npad=1\n" HEAD, RM_ERR_PARSE, 6, "[dwconv] needs the key 'size'");
    expect_error(NET "[dwconv]\nsize=0\n" HEAD, RM_ERR_PARSE, 7, "out of range");
    expect_error(NET "[dwconv]\nsize=3\nstride=0\n" HEAD, RM_ERR_PARSE, 8, "out of range");
    expect_error(NET "[dwconv]\nsize=3\npad=-1\n" HEAD, RM_ERR_PARSE, 8, "out of range");
    expect_error(NET "[dwconv]\nsize=3\nbias=2\n" HEAD, RM_ERR_PARSE, 8, "out of range");
    expect_error(NET "[dwconv]\nsize=3x\n" HEAD, RM_ERR_PARSE, 7, "bad value '3x' for key 'size'");
    expect_error(NET "[dwconv]\nsize=11\n" HEAD, RM_ERR_SHAPE, 6, "shape mismatch in [dwconv] 'dwconv1'");
}

Test(models_config, missing_required_key)
{
    expect_error(NET "[conv]\nfilters=4\n" HEAD, RM_ERR_PARSE, 6, "[conv] needs the key 'size'");
    expect_error("[net]\nchannels=3\nheight=8\n[relu]\n" HEAD, RM_ERR_PARSE, 1, "needs the key 'width'");
    expect_error(NET "[repeat]\n[relu]\n[end]\n" HEAD, RM_ERR_PARSE, 6, "needs the key 'count'");
}

Test(models_config, dangling_and_forward_references)
{
    expect_error(NET "[relu]\nname=a\n[relu]\ninput=nosuch\n" HEAD, RM_ERR_PARSE, 9, "unknown layer 'nosuch'");
    expect_error(NET "[relu]\nname=a\ninput=b\n[relu]\nname=b\ninput=input\n[add]\ninputs=a, b\n" HEAD, RM_ERR_PARSE, 8,
                 "forward reference to 'b' (defined at line 9)");
    expect_error(NET "[relu]\nname=a\ninput=a\n" HEAD, RM_ERR_PARSE, 8, "reads itself");
    expect_error(NET "[relu]\n[add]\ninputs=@in, relu1\n" HEAD, RM_ERR_PARSE, 8, "outside [repeat]");
    expect_error(NET "[repeat]\ncount=2\n[relu]\nname=x\ninput=y\n[relu]\nname=y\n[end]\n" HEAD, RM_ERR_PARSE, 10,
                 "forward reference to 'y'");
    expect_error(NET "[relu]\nname=a\n[add]\ninputs=a, a\n" HEAD, RM_ERR_PARSE, 9, "listed twice");
    expect_error(NET "[relu]\n[add]\ninputs=relu1\n" HEAD, RM_ERR_PARSE, 8, "takes 2 to 64 inputs");
}

Test(models_config, duplicate_name)
{
    expect_error(NET "[relu]\nname=a\n[relu]\nname=a\n" HEAD, RM_ERR_PARSE, 9,
                 "duplicate layer name 'a' (first defined at line 6)");
    /* An explicit name equal to an automatic one. */
    expect_error(NET "[relu]\n[relu]\nname=relu1\n" HEAD, RM_ERR_PARSE, 8, "duplicate layer name 'relu1'");
    expect_error(NET "[relu]\nname=input\n" HEAD, RM_ERR_PARSE, 7, "reserved");
    /* An automatic name inside a repeat equal to an earlier explicit one. */
    expect_error(NET "[relu]\nname=r.1.relu1\n[repeat]\nname=r\ncount=2\n[relu]\n[end]\n" HEAD, RM_ERR_PARSE, 11,
                 "duplicate layer name 'r.1.relu1' (the automatic name of this section) (first defined at line 6)");
    /* Among many: the later definition is the one named. */
    expect_error(NET "[repeat]\nname=deep\ncount=50000\n[relu]\n[end]\n[relu]\nname=deep.4999.relu1\n" HEAD,
                 RM_ERR_PARSE, 12, "duplicate layer name 'deep.4999.relu1' (first defined at line 9)");
}

Test(models_config, shape_mismatch)
{
    expect_error(NET "[conv]\nname=a\nfilters=4\nsize=3\n[conv]\nname=b\nfilters=4\nsize=1\ninput=input\n"
                     "[add]\ninputs=a, b\n" HEAD,
                 RM_ERR_SHAPE, 15, "shape mismatch in [add] 'add1'");
    expect_error(NET "[conv]\nfilters=4\nsize=9\n" HEAD, RM_ERR_SHAPE, 6, "kernel 9x9 is larger");
    /* softmax_xent needs N x K x 1 x 1 logits. */
    expect_error(NET "[conv]\nfilters=4\nsize=3\n[softmax_xent]\n", RM_ERR_SHAPE, 9, "softmax_xent");
}

Test(models_config, empty_file)
{
    expect_error("", RM_ERR_PARSE, 1, "empty config");
    expect_error("# only a comment\n\n", RM_ERR_PARSE, 2, "empty config");
    expect_error(NET, RM_ERR_PARSE, 1, "no layers");
}

Test(models_config, missing_loss)
{
    expect_error(NET "[global_avgpool]\n[linear]\nout=4\n", RM_ERR_PARSE, 7, "is not a loss");
    /* Two losses are said to be two (the first was told it "must be the last layer"). */
    expect_error(NET "[global_avgpool]\n[softmax_xent]\nname=l1\n[softmax_xent]\ninput=global_avgpool1\n", RM_ERR_PARSE,
                 9, "a second loss layer 'softmax_xent2' (the first is 'l1', line 7): a model has one loss");
    expect_error(NET "[global_avgpool]\n[softmax_xent]\nname=l1\n[relu]\ninput=global_avgpool1\n", RM_ERR_PARSE, 7,
                 "loss layer 'l1' must be the last layer; 'relu1' (line 9) comes after it");
}

Test(models_config, unused_output)
{
    expect_error(NET "[conv]\nname=side\nfilters=2\nsize=1\n[relu]\ninput=input\n" HEAD, RM_ERR_PARSE, 6,
                 "the output of 'side' is never used");
}

Test(models_config, repeat_structure)
{
    expect_error(NET "[repeat]\ncount=2\n[relu]\n" HEAD, RM_ERR_PARSE, 6, "never closed by [end]");
    expect_error(NET "[relu]\n[end]\n" HEAD, RM_ERR_PARSE, 7, "[end] without a [repeat]");
    expect_error(NET "[repeat]\ncount=2\n[end]\n" HEAD, RM_ERR_PARSE, 6, "no layers");
    expect_error(NET "[repeat]\ncount=2\n[repeat]\ncount=2\n[relu]\n[end]\n[end]\n" HEAD, RM_ERR_PARSE, 8,
                 "inside [repeat]");
    expect_error(NET "[repeat]\ncount=0\n[relu]\n[end]\n" HEAD, RM_ERR_PARSE, 7, "out of range");
}

Test(models_config, missing_file)
{
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, "/nonexistent/x.cfg", &e), RM_ERR_IO);
    cr_assert(strstr(e.msg, "/nonexistent/x.cfg"));
}

/* A folder opens but cannot be read: the message said only "read error". */
Test(models_config, folder_instead_of_a_file)
{
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, "/tmp", &e), RM_ERR_IO);
    cr_assert_null(m);
    cr_assert_str_eq(e.msg, "/tmp: is a directory, not a model config");
}

/* A UTF-8 byte-order mark (what Windows editors write first) was called an
 * "unexpected control character"; at the start it is skipped, elsewhere it
 * is still refused. */
Test(models_config, byte_order_mark_at_the_start_is_skipped)
{
    char path[512];
    write_file(path, sizeof path, "bom.cfg",
               "\xEF\xBB\xBF[net]\nchannels=1\nheight=4\nwidth=4\n[linear]\nout=2\n"
               "[softmax_xent]\n");
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, path, &e), RM_OK, "%s", e.msg);
    rm_model_free(m);
    write_file(path, sizeof path, "bom2.cfg",
               "[net]\n\xEF\xBB\xBF"
               "channels=1\nheight=4\nwidth=4\n");
    cr_assert_eq(rm_model_load(&m, path, &e), RM_ERR_PARSE);
    cr_assert(strstr(e.msg, ":2:"), "%s", e.msg);
}
