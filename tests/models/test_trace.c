/* The tracer: a small residual model checked node by node against the
 * contract of engine/graph.h, and every built-in model checked for the
 * structural invariants of that contract at batch 2. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "trace.h"

/* c1 -> r1 -> c2 -> sum(c2, r1) -> gap -> fc -> loss: r1 has two uses. */
static const char *residual_cfg = "[net]\nchannels=2\nheight=4\nwidth=4\n"
                                  "[conv]\nname=c1\nfilters=2\nsize=3\npad=1\n"
                                  "[relu]\nname=r1\n"
                                  "[conv]\nname=c2\nfilters=2\nsize=3\npad=1\n"
                                  "[add]\nname=sum\ninputs=c2, r1\n"
                                  "[global_avgpool]\nname=gap\n"
                                  "[linear]\nname=fc\nout=3\n"
                                  "[softmax_xent]\nname=loss\n";

static rm_model *parse(const char *text)
{
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_parse(&m, text, "test.cfg", &e), RM_OK, "%s", e.msg);
    return m;
}

static void expect_deps(const rm_graph_node *nd, const int *deps, const int *slots, int n)
{
    cr_assert_eq(nd->ndeps, n, "%s: %d deps, expected %d", nd->name, nd->ndeps, n);
    for (int k = 0; k < n; k++) {
        cr_assert_eq(nd->deps[k], deps[k], "%s dep %d: %d, expected %d", nd->name, k, nd->deps[k], deps[k]);
        cr_assert_eq(nd->dep_slot[k], slots[k], "%s slot %d: %d, expected %d", nd->name, k, nd->dep_slot[k], slots[k]);
    }
}

Test(models_trace, residual_graph_node_by_node)
{
    rm_model *m = parse(residual_cfg);
    rm_graph g;
    rm_err e = {RM_OK, ""};
    const int B = 3;
    cr_assert_eq(rm_model_trace(&g, m, B, &e), RM_OK, "%s", e.msg);
    /* input + 7 forward + 7 backward + 1 grad-sum */
    cr_assert_eq(g.n, 16);
    cr_assert_eq(g.batch, B);
    const char *names[] = {"input",   "c1",         "r1",        "c2",      "sum",      "gap",
                           "fc",      "loss",       "loss.grad", "fc.grad", "gap.grad", "sum.grad",
                           "c2.grad", "r1.gradsum", "r1.grad",   "c1.grad"};
    for (int i = 0; i < g.n; i++) cr_assert_str_eq(g.nodes[i].name, names[i]);

    const size_t act = (size_t)B * 2 * 4 * 4 * 4; /* one B x 2 x 4 x 4 float tensor */
    const rm_graph_node *in = &g.nodes[0];
    cr_assert_eq(in->op, RM_OP_INPUT);
    cr_assert_eq(in->tag, RM_TAG_FORWARD);
    cr_assert_eq(in->layer, -1);
    cr_assert_eq(in->bytes, act);
    cr_assert_eq(in->flops, (double)(B * 2 * 4 * 4));
    cr_assert(rm_shape_equal(in->shape, rm_shape_make(B, 2, 4, 4)));
    cr_assert_eq(in->ndeps, 0);

    for (int i = 1; i <= 7; i++) {
        cr_assert_eq(g.nodes[i].op, RM_OP_FORWARD);
        cr_assert_eq(g.nodes[i].layer, i - 1);
        cr_assert_eq(g.nodes[i].tag, i == 7 ? RM_TAG_LOSS : RM_TAG_FORWARD);
    }
    for (int i = 8; i < 16; i++) {
        cr_assert_eq(g.nodes[i].tag, RM_TAG_BACKWARD);
        cr_assert_eq(g.nodes[i].op, i == 13 ? RM_OP_GRAD_SUM : RM_OP_BACKWARD);
    }
    cr_assert_eq(g.nodes[1].bytes, act);
    cr_assert(rm_shape_equal(g.nodes[4].shape, rm_shape_make(B, 2, 4, 4)));
    cr_assert(rm_shape_equal(g.nodes[5].shape, rm_shape_make(B, 2, 1, 1)));
    cr_assert(rm_shape_equal(g.nodes[6].shape, rm_shape_make(B, 3, 1, 1)));
    cr_assert_eq(g.nodes[6].bytes, (size_t)B * 3 * 4);

    /* Forward deps: the layer inputs in order. */
    expect_deps(&g.nodes[1], (int[]){0}, (int[]){-1}, 1);
    expect_deps(&g.nodes[4], (int[]){3, 2}, (int[]){-1, -1}, 2);
    expect_deps(&g.nodes[7], (int[]){6}, (int[]){-1}, 1);

    /* Backward deps: [gradient source] + inputs if read + own output if read. */
    expect_deps(&g.nodes[8], (int[]){6}, (int[]){-1}, 1);          /* loss: no gradient source, logits */
    expect_deps(&g.nodes[9], (int[]){8, 5}, (int[]){0, -1}, 2);    /* fc: dloss, its input */
    expect_deps(&g.nodes[10], (int[]){9}, (int[]){0}, 1);          /* gap reads nothing */
    expect_deps(&g.nodes[11], (int[]){10}, (int[]){0}, 1);         /* add reads nothing */
    expect_deps(&g.nodes[12], (int[]){11, 2}, (int[]){0, -1}, 2);  /* c2: dsum slot 0, its input r1 */
    expect_deps(&g.nodes[13], (int[]){12, 11}, (int[]){0, 1}, 2);  /* r1.gradsum: c2.grad[0] + sum.grad[1] */
    expect_deps(&g.nodes[14], (int[]){13, 2}, (int[]){-1, -1}, 2); /* relu reads its output */
    expect_deps(&g.nodes[15], (int[]){14, 0}, (int[]){0, -1}, 2);  /* c1: dr1, the input batch */

    /* Backward output: the gradients of the inputs that need one. */
    cr_assert_eq(g.nodes[8].bytes, (size_t)B * 3 * 4);
    cr_assert_eq(g.nodes[9].bytes, (size_t)B * 2 * 4);
    cr_assert_eq(g.nodes[10].bytes, act);
    cr_assert_eq(g.nodes[11].bytes, 2 * act);
    cr_assert_eq(g.nodes[12].bytes, act);
    cr_assert_eq(g.nodes[13].bytes, act);
    cr_assert(rm_shape_equal(g.nodes[13].shape, rm_shape_make(B, 2, 4, 4)));
    cr_assert_eq(g.nodes[13].flops, (double)(B * 2 * 4 * 4));
    cr_assert_eq(g.nodes[13].layer, 1);
    cr_assert_eq(g.nodes[14].bytes, act);
    cr_assert_eq(g.nodes[15].bytes, 0, "the input batch needs no gradient");
    cr_assert(rm_shape_equal(g.nodes[15].shape, rm_shape_make(0, 0, 0, 0)));

    /* FLOPs come from the layers. */
    const rm_model_layer *c1 = &m->layers[0];
    rm_shape cin = rm_shape_make(B, 2, 4, 4);
    cr_assert_eq(g.nodes[1].flops, c1->desc->flops(&c1->cfg, &cin, 1, cin, 0));
    cr_assert_eq(g.nodes[15].flops, c1->desc->flops(&c1->cfg, &cin, 1, cin, 1));
    double fwd = 0, bwd = 0;
    for (int i = 1; i < g.n; i++) {
        if (g.nodes[i].tag == RM_TAG_BACKWARD)
            bwd += g.nodes[i].flops;
        else
            fwd += g.nodes[i].flops;
    }
    cr_assert_float_eq(g.forward_flops, fwd, 1e-9 * fwd);
    cr_assert_float_eq(g.backward_flops, bwd, 1e-9 * bwd);

    /* Params: 2 convs of 2*2*9+2 and a linear of 3*2+3; labels: B int32. */
    cr_assert_eq(g.param_count, 85);
    cr_assert_eq(rm_graph_edge_count(&g), 8 + 13); /* forward 8, backward 13 */
    cr_assert_eq(rm_graph_validate(&g, &e), RM_OK);
    rm_graph_free(&g);
    rm_model_free(m);
}

Test(models_trace, bad_batch)
{
    rm_model *m = parse(residual_cfg);
    rm_graph g;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_trace(&g, m, 0, &e), RM_ERR_INVALID);
    cr_assert_eq(g.n, 0);
    rm_model_free(m);
}

/* Checks every rule of engine/graph.h that can be checked from the model. */
static void check_contract(const rm_model *m, const rm_graph *g, int batch)
{
    const int L = m->nlayers;
    int nsum = 0;
    for (int i = 0; i < L; i++) nsum += m->layers[i].uses > 1;
    cr_assert_eq(g->n, 1 + 2 * L + nsum, "%s", m->path);
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_graph_validate(g, &e), RM_OK, "%s: %s", m->path, e.msg);
    rm_shape input = m->input;
    input.n = batch;
    cr_assert(rm_shape_equal(g->nodes[0].shape, input));
    int *bwd_of = malloc((size_t)L * sizeof *bwd_of);
    cr_assert_not_null(bwd_of);
    for (int i = 0; i < L; i++) {
        const rm_graph_node *f = &g->nodes[1 + i];
        cr_assert_str_eq(f->name, m->layers[i].name);
        cr_assert_eq(f->tag, i == L - 1 ? RM_TAG_LOSS : RM_TAG_FORWARD);
        if (i < L - 1) cr_assert_eq(f->shape.n, batch); /* the loss is a scalar */
        cr_assert_eq(f->bytes, rm_shape_bytes(f->shape));
    }
    for (int t = L + 1; t < g->n; t++) {
        const rm_graph_node *nd = &g->nodes[t];
        cr_assert_eq(nd->tag, RM_TAG_BACKWARD);
        int i = nd->layer;
        const rm_model_layer *ly = &m->layers[i];
        if (nd->op == RM_OP_GRAD_SUM) {
            /* Just before the backward of its layer, one dep per use. */
            cr_assert_eq(g->nodes[t + 1].layer, i);
            cr_assert_eq(g->nodes[t + 1].op, RM_OP_BACKWARD);
            cr_assert_eq(nd->ndeps, ly->uses);
            for (int k = 0; k < nd->ndeps; k++) {
                const rm_graph_node *src = &g->nodes[nd->deps[k]];
                cr_assert_eq(src->op, RM_OP_BACKWARD);
                cr_assert_eq(m->layers[src->layer].inputs[nd->dep_slot[k]], i);
                /* In consumer order: later consumers' backward nodes come earlier. */
                if (k) cr_assert_lt(nd->deps[k], nd->deps[k - 1], "%s", nd->name);
            }
            cr_assert_eq(nd->bytes, g->nodes[1 + i].bytes);
            continue;
        }
        cr_assert_eq(nd->op, RM_OP_BACKWARD);
        bwd_of[i] = t;
        int k = 0;
        if (i < L - 1) {
            const rm_graph_node *src = &g->nodes[nd->deps[0]];
            if (ly->uses > 1) {
                cr_assert_eq(src->op, RM_OP_GRAD_SUM);
                cr_assert_eq(nd->deps[0], t - 1);
            } else {
                cr_assert_eq(src->op, RM_OP_BACKWARD);
                cr_assert_eq(m->layers[src->layer].inputs[nd->dep_slot[0]], i);
                cr_assert_eq(bwd_of[src->layer], nd->deps[0]);
            }
            k = 1;
        }
        size_t bytes = 0;
        for (int q = 0; q < ly->nin; q++)
            if (ly->inputs[q] != RM_MODEL_INPUT) bytes += g->nodes[1 + ly->inputs[q]].bytes;
        cr_assert_eq(nd->bytes, bytes, "%s", nd->name);
        if (ly->desc->backward_reads & RM_READS_INPUTS)
            for (int q = 0; q < ly->nin; q++, k++) {
                cr_assert_eq(nd->deps[k], 1 + ly->inputs[q], "%s", nd->name);
                cr_assert_eq(nd->dep_slot[k], -1);
            }
        if (ly->desc->backward_reads & RM_READS_OUTPUT) {
            cr_assert_eq(nd->deps[k], 1 + i, "%s", nd->name);
            k++;
        }
        cr_assert_eq(nd->ndeps, k, "%s reads more than it declares", nd->name);
    }
    /* Backward nodes come in reverse layer order. */
    for (int i = 0; i + 1 < L; i++) cr_assert_gt(bwd_of[i], bwd_of[i + 1]);
    free(bwd_of);
}

Test(models_trace, every_builtin_model_at_batch_2)
{
    const char *names[] = {"vgg11",     "vgg13",     "vgg16", "vgg19",    "resnet18",    "resnet34", "resnet50",
                           "resnet101", "resnet152", "unet",  "vgg-tiny", "resnet-tiny", "unet-tiny"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        char path[512];
        snprintf(path, sizeof path, "%s/models/%s.cfg", REMAT_SOURCE_DIR, names[k]);
        rm_model *m = NULL;
        rm_err e = {RM_OK, ""};
        cr_assert_eq(rm_model_load(&m, path, &e), RM_OK, "%s", e.msg);
        rm_graph g;
        cr_assert_eq(rm_model_trace(&g, m, 2, &e), RM_OK, "%s", e.msg);
        check_contract(m, &g, 2);
        cr_assert_eq(g.param_count, m->param_count);
        rm_graph_free(&g);
        rm_model_free(m);
    }
}

/* 100,000 layers with 50,000 gradient sums, traced and checked. Finding each
 * layer's readers among all later layers made tracing quadratic (about half
 * a minute here); a step back would show as this test taking that long. */
Test(models_trace, residual_chain_of_100000_layers)
{
    rm_model *m = parse("[net]\nchannels=1\nheight=2\nwidth=2\n"
                        "[relu]\nname=stem\n"
                        "[repeat]\nname=block\ncount=50000\n[relu]\nname=a\n[add]\ninputs=a, @in\n[end]\n"
                        "[linear]\nout=2\n[softmax_xent]\n");
    cr_assert_eq(m->nlayers, 1 + 100000 + 2);
    rm_graph g;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_trace(&g, m, 1, &e), RM_OK, "%s", e.msg);
    /* The stem and every block's sum but the last feed the next block twice. */
    cr_assert_eq(g.n, 1 + 2 * m->nlayers + 50000);
    check_contract(m, &g, 1);
    cr_assert_str_eq(g.nodes[g.n - 2].name, "stem.gradsum");
    rm_graph_free(&g);
    rm_model_free(m);
}

Test(models_trace, pixel_labels_and_skip_gradient_sums)
{
    char path[512];
    snprintf(path, sizeof path, "%s/models/unet-tiny.cfg", REMAT_SOURCE_DIR);
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_model_label_count(m, 5), 5 * 32 * 32);
    rm_graph g;
    cr_assert_eq(rm_model_trace(&g, m, 5, &e), RM_OK, "%s", e.msg);
    /* The concatenations' inputs each feed two layers: one grad-sum per skip. */
    int nsum = 0;
    for (int i = 0; i < g.n; i++) nsum += g.nodes[i].op == RM_OP_GRAD_SUM;
    cr_assert_eq(nsum, 2);
    cr_assert_neq(rm_model_find(m, "up1.concat"), -1);
    rm_graph_free(&g);
    rm_model_free(m);
}
