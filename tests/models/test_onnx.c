/* The ONNX importer on the fixtures of tests/models/onnx (written by
 * gen_fixtures.py with onnx.helper, no PyTorch): each network's layers,
 * parameter counts and forward output, which must match the output numpy
 * computed for it independently (NAME.output.pb, within rtol 1e-4 and atol
 * 1e-5: see test_onnx_backend.c for why); the weights as the executor's
 * starting point; the broken files, each refused with a message that names
 * the node, its operator and what would be needed; and the commands with
 * --onnx. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "builder.h"
#include "cli_fixture.h"
#include "executor.h"
#include "infer.h"
#include "onnx.h"
#include "onnx_check.h"
#include "schedule.h"
#include "trace.h"

#define FIXTURE(name) REMAT_SOURCE_DIR "/tests/models/onnx/" name

TestSuite(onnx, .init = cf_setup, .fini = cf_teardown);

static rm_model *import(const char *file, rm_onnx_loss loss, rm_onnx_summary *sum)
{
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    o.loss = loss;
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_onnx_load(&m, sum, file, &o, &e), RM_OK, "%s", e.msg);
    return m;
}

/* The fixture's forward pass at batch 2 against numpy's output. */
static void expect_forward_matches(const char *name, rm_onnx_loss loss)
{
    char path[512], in[512], out[512];
    snprintf(path, sizeof path, "%s/tests/models/onnx/%s.onnx", REMAT_SOURCE_DIR, name);
    snprintf(in, sizeof in, "%s/tests/models/onnx/%s.input.pb", REMAT_SOURCE_DIR, name);
    snprintf(out, sizeof out, "%s/tests/models/onnx/%s.output.pb", REMAT_SOURCE_DIR, name);
    rm_model *m = import(path, loss, NULL);
    rm_onnx_tensor x, y;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_onnx_tensor_load(&x, in, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_onnx_tensor_load(&y, out, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(x.dims[0], 2);
    cr_assert_eq(x.count, 2 * rm_shape_numel(m->input), "%s: input of %zu values", name, x.count);
    cr_assert_eq(y.count, 2 * rm_model_output_numel(m), "%s: numpy computed %zu values, remat %zu", name, y.count,
                 2 * rm_model_output_numel(m));
    float *got = malloc(y.count * sizeof *got);
    cr_assert(got);
    cr_assert_eq(rm_model_infer(got, m, x.data, 2, 1, &e), RM_OK, "%s", e.msg);
    long bad = onnx_compare(got, y.data, y.count, 1e-4, 1e-5);
    cr_expect_eq(bad, -1, "%s: output %ld is %.9g, numpy says %.9g", name, bad, bad >= 0 ? (double)got[bad] : 0.0,
                 bad >= 0 ? (double)y.data[bad] : 0.0);
    free(got);
    rm_onnx_tensor_free(&x);
    rm_onnx_tensor_free(&y);
    rm_model_free(m);
}

Test(onnx, forward_passes_match_numpy)
{
    expect_forward_matches("cbr_pool_gemm", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("residual", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("unet_tiny", RM_ONNX_PIXEL_SOFTMAX_XENT);
    expect_forward_matches("depthwise", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("fixed_batch", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("upsample_opset9", RM_ONNX_PIXEL_SOFTMAX_XENT);
    expect_forward_matches("activations", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("training_export", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("gelu_tanh", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("conv_dilation", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("conv_group", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("grouped", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("shuffle", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("convnext", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("layernorm17", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("tiny_vit", RM_ONNX_SOFTMAX_XENT);
    expect_forward_matches("stochastic_depth", RM_ONNX_SOFTMAX_XENT);
}

/* Parameter counts worked out by hand from gen_fixtures.py's shapes. */
Test(onnx, layers_and_parameter_counts)
{
    static const struct {
        const char *file;
        rm_onnx_loss loss;
        size_t params, buffers;
        int layers, folded, aliases;
        const char *kinds;
    } cases[] = {
        /* conv 4x3x3x3 + 4, bn 4 + 4, linear 5x64 + 5; the view(N, -1) chain folded */
        {FIXTURE("cbr_pool_gemm.onnx"), RM_ONNX_SOFTMAX_XENT, 112 + 8 + 325, 8, 7, 5, 0,
         "conv batchnorm relu maxpool flatten linear softmax_xent"},
        /* conv 148, bn 8, conv 144 (no bias), bn 8, linear 4x3 + 3 (the Add's bias) */
        {FIXTURE("residual.onnx"), RM_ONNX_SOFTMAX_XENT, 148 + 8 + 144 + 8 + 15, 16, 11, 0, 1,
         "conv batchnorm relu conv batchnorm add relu global_avgpool flatten linear softmax_xent"},
        /* convs 76, 296, 292, 15; conv_transpose 8x4x2x2 + 4 */
        {FIXTURE("unet_tiny.onnx"), RM_ONNX_PIXEL_SOFTMAX_XENT, 76 + 296 + 132 + 292 + 15, 0, 11, 1, 0,
         "conv relu maxpool conv relu conv_transpose concat conv upsample conv pixel_softmax_xent"},
        /* dwconv 4x1x3x3, bn 8, conv 6x4 + 6, bn 12, linear 6x4 + 4 */
        {FIXTURE("depthwise.onnx"), RM_ONNX_SOFTMAX_XENT, 36 + 8 + 30 + 12 + 28, 20, 12, 0, 1,
         "dwconv batchnorm relu conv batchnorm relu dropout avgpool global_avgpool flatten linear softmax_xent"},
        {FIXTURE("fixed_batch.onnx"), RM_ONNX_SOFTMAX_XENT, 51, 0, 3, 0, 0, "flatten linear softmax_xent"},
        /* conv 4x3x3x3 + 4, linear 5x12 + 5; PyTorch's opset-13 forms: Clip to [0, 6], x * Sigmoid(x),
         * HardSigmoid(x) * x, the 5 nodes of GELU (its 3 Constants folded, its chain and the two Muls
         * aliases), then Tanh, a Sigmoid and a HardSigmoid alone */
        {FIXTURE("activations.onnx"), RM_ONNX_SOFTMAX_XENT, 112 + 65, 0, 13, 3, 3,
         "conv relu6 silu hardswish gelu tanh sigmoid hardsigmoid concat global_avgpool flatten linear softmax_xent"},
        /* conv 6x3x3x3 (no bias), SE convs 2x6 + 2 and 6x2 + 6, linear 4x6 + 4; MaxPool ceil_mode,
         * squeeze-and-excitation's Mul, Dropout training_mode true (its ratio and mode folded), ReduceMean over
         * H, W without keepdims */
        {FIXTURE("training_export.onnx"), RM_ONNX_SOFTMAX_XENT, 162 + 14 + 18 + 28, 0, 12, 2, 0,
         "conv maxpool global_avgpool conv relu conv hardsigmoid scale dropout global_avgpool linear softmax_xent"},
        /* linear 3x6 (no bias); nn.GELU(approximate="tanh")'s nine opset-13 nodes, their 4 Constants folded */
        {FIXTURE("gelu_tanh.onnx"), RM_ONNX_SOFTMAX_XENT, 18, 0, 3, 4, 1, "gelu_tanh linear softmax_xent"},
        /* convs 6x4x1x3 + 6, 6x6x3x1 + 6, 6x2x3x3 + 6 (3 groups), 8x6x3x3 + 8 (dilated), 16x1x3x3 + 16
         * (8 groups: two filters per channel, not a dwconv) */
        {FIXTURE("grouped.onnx"), RM_ONNX_SOFTMAX_XENT, 78 + 114 + 114 + 440 + 160, 0, 8, 0, 0,
         "conv conv conv conv conv global_avgpool flatten softmax_xent"},
        /* conv 3x3x1x1; ShuffleNet's chunk as two Slices, its channel shuffle as Reshape, Transpose, Reshape
         * (the shapes' Shape, Gather, Unsqueeze, Concat folded, 16 nodes) */
        {FIXTURE("shuffle.onnx"), RM_ONNX_SOFTMAX_XENT, 9, 0, 10, 16, 0,
         "slice slice conv concat shuffle shuffle slice global_avgpool flatten softmax_xent"},
        /* ConvNeXt: stem conv 8x3x2x2 + 8, LayerNorms 3 x (8 + 8), dwconv 8x1x3x3 + 8, the MatMuls over the
         * channels-last axis as 1x1 convs 32x8 + 32 and 8x32 + 8, the layer scale 8 (a 1x1 dwconv), linear 5x8 +
         * 5; each LayerNorm's nine nodes one layer (their 2 Constants folded), the weights' Transposes folded,
         * the six channel moves, the two bias Adds, GELU's chain and the LayerNorms' last nodes aliases */
        {FIXTURE("convnext.onnx"), RM_ONNX_SOFTMAX_XENT, 104 + 48 + 80 + 288 + 264 + 8 + 45, 0, 14, 11, 12,
         "conv layernorm dwconv layernorm conv gelu conv dwconv add global_avgpool layernorm flatten linear "
         "softmax_xent"},
        /* opset 17's LayerNormalization on the channels-last view: 5 + 5 */
        {FIXTURE("layernorm17.onnx"), RM_ONNX_SOFTMAX_XENT, 10, 0, 4, 0, 2,
         "layernorm global_avgpool flatten softmax_xent"},
        /* PyTorch's own export of a 1-layer VisionTransformer (gen_torch_fixtures.py): patches conv 8x3x4x4 + 8,
         * class token 8 and position embedding 5 x 8 (tokens), LayerNorms 3 x 16, in_proj 24x8 + 24, out_proj
         * 8x8 + 8, MLP 16x8 + 16 and 8x16 + 8, head 5x8 + 5; the attention's ~150 nodes three layers, its shape
         * arithmetic covered; x[:, 0] a token layer */
        /* conv 3x3x1x1; stochastic depth's RandomUniformLike, Less, Cast, Div, Mul one drop_path of p 0.25 (its
         * 3 Constants folded, the chain's last 4 nodes covered) */
        {FIXTURE("stochastic_depth.onnx"), RM_ONNX_SOFTMAX_XENT, 9, 0, 6, 3, 1,
         "conv drop_path add global_avgpool flatten softmax_xent"},
        {FIXTURE("tiny_vit.onnx"), RM_ONNX_SOFTMAX_XENT, 392 + 48 + 48 + 216 + 72 + 144 + 136 + 45, 0, 16, 61, 9,
         "conv tokens layernorm conv attention conv add layernorm conv gelu conv add layernorm token linear "
         "softmax_xent"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        rm_onnx_summary s;
        rm_model *m = import(cases[k].file, cases[k].loss, &s);
        char kinds[512] = "";
        size_t used = 0;
        for (int i = 0; i < m->nlayers; i++)
            used += (size_t)snprintf(kinds + used, sizeof kinds - used, "%s%s", i ? " " : "", m->layers[i].desc->name);
        cr_expect_str_eq(kinds, cases[k].kinds, "%s", cases[k].file);
        cr_expect_eq(m->param_count, cases[k].params, "%s: %zu parameters", cases[k].file, m->param_count);
        cr_expect_eq(m->buffer_count, cases[k].buffers, "%s: %zu buffers", cases[k].file, m->buffer_count);
        cr_expect_eq(s.layers, cases[k].layers, "%s", cases[k].file);
        cr_expect_eq(s.folded, cases[k].folded, "%s: %d folded", cases[k].file, s.folded);
        cr_expect_eq(s.aliases, cases[k].aliases, "%s: %d aliases", cases[k].file, s.aliases);
        cr_expect_eq(s.weights, m->param_count + m->buffer_count);
        cr_expect(m->init_params && m->init_buffers);
        rm_model_free(m);
    }
}

/* PyTorch's names become remat's: the path with '.' for '/', the operator
 * dropped unless that name is taken. */
Test(onnx, layer_names_follow_the_exported_names)
{
    rm_model *m = import(FIXTURE("unet_tiny.onnx"), RM_ONNX_PIXEL_SOFTMAX_XENT, NULL);
    cr_expect_geq(rm_model_find(m, "down.conv"), 0);
    cr_expect_geq(rm_model_find(m, "bottom"), 0);
    cr_expect_geq(rm_model_find(m, "bottom.Relu"), 0);
    cr_expect_geq(rm_model_find(m, "loss"), 0);
    rm_model_free(m);
}

/* The executor starts from the file's weights; --init random from the seed. */
Test(onnx, the_executor_starts_from_the_initializers)
{
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    for (int random = 0; random < 2; random++) {
        o.random_init = random;
        rm_model *m = NULL;
        rm_err e = {RM_OK, ""};
        cr_assert_eq(rm_onnx_load(&m, NULL, FIXTURE("residual.onnx"), &o, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(m->init_params == NULL, random);
        rm_graph g;
        rm_plan *plan;
        rm_backend *be;
        rm_executor *ex;
        cr_assert_eq(rm_model_trace(&g, m, 2, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_schedule_plan_all(&plan, &g, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_executor_create(&ex, m, &g, be, plan, NULL, &e), RM_OK, "%s", e.msg);
        float *p = malloc(m->param_count * sizeof *p), *b = malloc(m->buffer_count * sizeof *b);
        cr_assert(p && b);
        cr_assert_eq(rm_executor_download_params(ex, p, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_executor_download_buffers(ex, b, &e), RM_OK, "%s", e.msg);
        if (!random) {
            cr_expect_eq(memcmp(p, m->init_params, m->param_count * sizeof *p), 0, "parameters differ from the file's");
            cr_expect_eq(memcmp(b, m->init_buffers, m->buffer_count * sizeof *b), 0,
                         "statistics differ from the file's");
        } else {
            /* The layers' init: batchnorm's running variance starts at 1. */
            cr_expect_eq(b[4], 1.0f);
        }
        free(p);
        free(b);
        rm_executor_free(ex);
        rm_backend_free(be);
        rm_plan_free(plan);
        rm_graph_free(&g);
        rm_model_free(m);
    }
}

/* A fully convolutional net imported at another input size: what was
 * folded from shapes is folded at the new size. */
Test(onnx, another_input_size)
{
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    o.loss = RM_ONNX_PIXEL_SOFTMAX_XENT;
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_open(&m, FIXTURE("unet_tiny.onnx"), &o, 16, 24, NULL, &e), RM_OK, "%s", e.msg);
    rm_shape out = m->layers[m->nlayers - 1].in_shape[0];
    cr_expect(out.c == 3 && out.h == 32 && out.w == 48, "output %dx%dx%d", out.c, out.h, out.w);
    rm_model_free(m);
}

static void expect_refused(const char *file, rm_onnx_loss loss, rm_code code, const char *const *parts)
{
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    o.loss = loss;
    rm_model *m = (rm_model *)1;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_onnx_load(&m, NULL, file, &o, &e), code, "%s: %s", file, e.msg);
    cr_expect_null(m);
    cr_expect(strstr(e.msg, file), "the message does not name the file: %s", e.msg);
    for (const char *const *p = parts; *p; p++) cr_expect(strstr(e.msg, *p), "'%s' not in: %s", *p, e.msg);
}

Test(onnx, what_remat_cannot_compute_is_refused_naming_the_node)
{
    expect_refused(FIXTURE("bad_autopad.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"'/conv/Conv' (Conv)", "auto_pad SAME_UPPER", "explicit symmetric", NULL});
    expect_refused(FIXTURE("bad_asymmetric.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"node 1 '/conv/Conv' (Conv)", "asymmetric padding (pads 1, 1, 0, 0", NULL});
    expect_refused(
        FIXTURE("bad_op.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_UNSUPPORTED,
        (const char *const[]){"node 1 '/act/LeakyRelu' (LeakyRelu)", "operator 'LeakyRelu' is not supported", NULL});
    expect_refused(FIXTURE("bad_clip.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"node 1 '/features.0/Clip' (Clip)", "Clip to [-1, 1]",
                                         "relu6 (Clip to [0, 6]), no other clipping layer", NULL});
    expect_refused(FIXTURE("bad_view.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"'/Relu' (Relu)", "5-D view of a computed tensor",
                                         "only as ShuffleNet's channel shuffle", NULL});
    expect_refused(FIXTURE("bad_transpose.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"'/t/Transpose' (Transpose)", "transposes 'input' (rank 4)",
                                         "only to move its channels last and back", NULL});
    expect_refused(FIXTURE("bad_channels_last.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"'/conv/Conv' (Conv)", "transposed to put its channels last",
                                         "LayerNorm and MatMul over the last axis", NULL});
    /* nn.MultiheadAttention with a causal attn_mask, as PyTorch exports it (gen_torch_fixtures.py) */
    expect_refused(FIXTURE("bad_masked_attention.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"'/attn/Transpose' (Transpose)", "as nn.MultiheadAttention begins",
                                         "with nothing between them, such as a mask", NULL});
    expect_refused(FIXTURE("bad_softmax.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_UNSUPPORTED,
                   (const char *const[]){"(Softmax)", "export the logits", NULL});
    /* A segmentation output under the classification loss: the message says which loss fits. */
    expect_refused(FIXTURE("unet_tiny.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_SHAPE,
                   (const char *const[]){"the loss on the graph output 'logits'", "pixel_softmax_xent", NULL});
}

Test(onnx, a_truncated_or_missing_file_is_a_clear_error)
{
    expect_refused(FIXTURE("truncated.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_PARSE,
                   (const char *const[]){"not a valid ONNX model", "truncated or corrupt", NULL});
    /* A text file, refused at its first byte as it is read ('#' is no field). */
    expect_refused(FIXTURE("gen_fixtures.py"), RM_ONNX_SOFTMAX_XENT, RM_ERR_PARSE,
                   (const char *const[]){"not an ONNX model: byte 0 does not start a protobuf field", NULL});
    expect_refused(FIXTURE("no-such-file.onnx"), RM_ONNX_SOFTMAX_XENT, RM_ERR_IO,
                   (const char *const[]){"cannot open", NULL});
    rm_onnx_tensor t;
    rm_err e = {RM_OK, ""};
    cr_expect_eq(rm_onnx_tensor_load(&t, FIXTURE("truncated.onnx"), &e), RM_ERR_PARSE, "%s", e.msg);
}

/* ---- the commands ---- */

Test(onnx, graph_shows_the_import_node_by_node)
{
    cr_assert_eq(cf_remat("graph", "--onnx", FIXTURE("cbr_pool_gemm.onnx"), "--batch", "4", NULL), 0, "%s", cf_err);
    cr_expect(cf_said(0, "node 5 Shape '/flatten/Shape' -> folded: [N, 4, 4, 4]"));
    cr_expect(cf_said(0, "node 10 Reshape '/flatten/Reshape' -> flatten 'flatten'"));
    cr_expect(cf_said(0, "loss -> softmax_xent 'loss' on 'logits'"));
    cr_expect(cf_said(0, "11 nodes -> 7 layers (the loss added), 5 folded"));
    cr_expect(cf_said(0, "parameters   445"));
}

Test(onnx, plan_and_maxbatch_take_an_onnx_network)
{
    cr_assert_eq(cf_remat("plan", "--onnx", FIXTURE("residual.onnx"), "--batch", "8", "--budget", "80%", "--strategy",
                          "chen_greedy", "--quiet", NULL),
                 0, "%s", cf_err);
    cr_expect(cf_said(1, "remat: imported"));
    cr_expect(cf_said(0, "residual.onnx at batch 8"));
    cr_assert_eq(cf_remat("maxbatch", "--onnx", FIXTURE("unet_tiny.onnx"), "--loss", "pixel_softmax_xent", "--budget",
                          "4MiB", "--strategies", "chen_sqrtn", "--quiet", NULL),
                 0, "%s", cf_err);
}

Test(onnx, train_fine_tunes_the_imported_weights)
{
    cr_assert_eq(cf_remat("train", "--onnx", FIXTURE("depthwise.onnx"), "--data", "synthetic", "--samples", "64",
                          "--batch", "8", "--steps", "4", "--budget", "90%", "--strategy", "chen_greedy", "--quiet",
                          NULL),
                 0, "%s", cf_err);
    cr_expect(cf_said(0, "ONNX: its weights to fine-tune"));
    cr_assert_eq(cf_remat("train", "--onnx", FIXTURE("depthwise.onnx"), "--init", "random", "--data", "synthetic",
                          "--samples", "64", "--batch", "8", "--steps", "2", "--budget", "90%", "--strategy",
                          "chen_greedy", "--quiet", NULL),
                 0, "%s", cf_err);
    cr_expect(cf_said(0, "ONNX: weights initialised afresh"));
}

Test(onnx, usage_errors)
{
    cr_expect_eq(cf_remat("graph", "--model", CF_MODEL("vgg-tiny.cfg"), "--loss", "softmax_xent", "--batch", "2", NULL),
                 1);
    cr_expect(cf_said(1, "--loss goes with --onnx"));
    cr_expect_eq(cf_remat("plan", "--onnx", FIXTURE("residual.onnx"), "--model", CF_MODEL("vgg-tiny.cfg"), "--batch",
                          "2", "--budget", "80%", NULL),
                 1);
    cr_expect(cf_said(1, "give --model or --onnx, not both"));
    cr_expect_eq(cf_remat("maxbatch", "--onnx", FIXTURE("residual.onnx"), "--loss", "mse", "--budget", "1GiB", NULL),
                 1);
    cr_expect(cf_said(1, "--loss must be softmax_xent or pixel_softmax_xent, got 'mse'"));
    cr_expect_eq(cf_remat("train", "--onnx", FIXTURE("residual.onnx"), "--init", "zeros", "--data", "synthetic",
                          "--budget", "90%", NULL),
                 1);
    cr_expect(cf_said(1, "--init must be onnx or random"));
    cr_expect_eq(cf_remat("explain", "--onnx", FIXTURE("bad_op.onnx"), "--batch", "2", "--budget", "80%", NULL), 1);
    cr_expect(cf_said(1, "remat explain:"));
    cr_expect(cf_said(1, "operator 'LeakyRelu' is not supported"));
    /* An ONNX file given as a config: the parser's error, then the hint. */
    cr_expect_eq(cf_remat("graph", "--model", FIXTURE("residual.onnx"), "--batch", "2", NULL), 1);
    cr_expect(cf_said(1, "an ONNX file is given with --onnx, not --model"), "%s", cf_err);
}
