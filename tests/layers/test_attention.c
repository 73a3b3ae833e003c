/* A vision transformer's layers (layers/attention.c, layers/tokens.c):
 * attention worked by hand on two tokens and against an independent
 * float64 softmax per row; gradient checks of attention (its input), tokens
 * (input, position embedding, class token) and token; descriptors, shape
 * errors, and backward overwriting its gradients. */
#include <criterion/criterion.h>
#include <math.h>

#include "layer_checks.h"

static rm_layer_config attn_cfg(int heads)
{
    return (rm_layer_config){.kind = RM_LAYER_ATTENTION, .heads = heads};
}

static void forward(const rm_layer_desc *d, rm_layer_config *cfg, rm_layer_params *prm, rm_tensor *x, rm_tensor *y)
{
    rm_layer_call call = {.cfg = cfg, .params = prm, .nin = 1, .in = {x}, .out = y};
    rm_err e = {0};
    cr_assert_eq(d->forward_ref(&call, &e), RM_OK, "%s", e.msg);
}

/* One head of one channel (scale 1), two tokens: q = (1, 2), k = (0, 1),
 * v = (3, 5). Token t's scores are q_t k_s = (0, q_t): weights 1/(1+e^q_t)
 * and e^q_t/(1+e^q_t) on v. */
Test(attention, hand_computed)
{
    float x[6] = {1, 2, 0, 1, 3, 5}, y[2];
    rm_tensor tx = rm_tensor_make(rm_shape_make(1, 3, 2, 1), x), ty = rm_tensor_make(rm_shape_make(1, 1, 2, 1), y);
    rm_layer_config cfg = attn_cfg(1);
    forward(&rm_attention_desc, &cfg, NULL, &tx, &ty);
    for (int t = 0; t < 2; t++) {
        double q = x[t], w1 = exp(q) / (1 + exp(q)), want = 3 * (1 - w1) + 5 * w1;
        cr_expect(fabs(y[t] - want) < 1e-6, "token %d: %.9g, want %.9g", t, (double)y[t], want);
    }
}

/* Two samples, 3 heads of 2 channels, 5 tokens laid out 5 x 1 and again as
 * a 1 x 5 map (the same tokens): every output against the definition. */
Test(attention, heads_against_the_definition)
{
    enum { N = 2, H = 3, HD = 2, D = H * HD, T = 5 };
    float x[N * 3 * D * T], y[N * D * T], y2[N * D * T];
    fill_uniform(x, sizeof x / sizeof *x, 7);
    rm_layer_config cfg = attn_cfg(H);
    rm_tensor tx = rm_tensor_make(rm_shape_make(N, 3 * D, T, 1), x), ty = rm_tensor_make(rm_shape_make(N, D, T, 1), y);
    forward(&rm_attention_desc, &cfg, NULL, &tx, &ty);
    rm_tensor tx2 = rm_tensor_make(rm_shape_make(N, 3 * D, 1, T), x),
              ty2 = rm_tensor_make(rm_shape_make(N, D, 1, T), y2);
    forward(&rm_attention_desc, &cfg, NULL, &tx2, &ty2);
    for (int n = 0; n < N; n++)
        for (int h = 0; h < H; h++)
            for (int t = 0; t < T; t++) {
#define X(part, j, s) x[((size_t)n * 3 * D + (part)*D + h * HD + (j)) * T + (s)]
                double w[T], sum = 0;
                for (int s = 0; s < T; s++) {
                    w[s] = exp((X(0, 0, t) * X(1, 0, s) + X(0, 1, t) * X(1, 1, s)) / sqrt(2.0));
                    sum += w[s];
                }
                for (int j = 0; j < HD; j++) {
                    double want = 0;
                    for (int s = 0; s < T; s++) want += w[s] / sum * X(2, j, s);
                    size_t i = ((size_t)n * D + h * HD + j) * T + t;
                    cr_expect(fabs(y[i] - want) < 1e-6, "n %d head %d token %d channel %d: %.9g, want %.9g", n, h, t, j,
                              (double)y[i], want);
                    cr_expect_eq(y[i], y2[i], "the 1 x 5 map gives other bits");
                }
#undef X
            }
}

Test(attention, gradcheck)
{
    gc_case c = one_input_case(&rm_attention_desc, rm_shape_make(2, 12, 3, 2));
    c.cfg = attn_cfg(2);
    run_gradcheck(&c);
    gc_case one = one_input_case(&rm_attention_desc, rm_shape_make(1, 3, 7, 1));
    one.cfg = attn_cfg(1);
    run_gradcheck(&one);
}

Test(attention, descriptor_and_errors)
{
    rm_layer_config cfg = attn_cfg(1);
    const rm_shape in = rm_shape_make(2, 6, 3, 5);
    check_desc_with(&rm_attention_desc, &cfg, "attention", RM_READS_INPUTS, 1, 1, &in, 1);
    check_backward_overwrites(&rm_attention_desc, &cfg, &in, 1, 1);
    rm_layer_config none = attn_cfg(0), four = attn_cfg(4);
    expect_shape_error(&rm_attention_desc, &none, &in, 1, "heads must be >= 1");
    expect_shape_error(&rm_attention_desc, &four, &in, 1, "3 x heads must divide");
    expect_input_count_errors(&rm_attention_desc);
}

/* tokens on 2 channels of a 1 x 2 map: the class token first, the
 * position embedding added; token 2 of that; and their gradients. */
Test(tokens, hand_computed)
{
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, pos[6] = {0.5f, 1, 2, 3, 4, 5}, cls[2] = {10, 20}, y[12];
    float dpos[6], dcls[2], dx[8], dy[12], t2[4], dt2[4] = {1, 2, 3, 4}, dx2[12];
    rm_layer_params prm = {.w = rm_tensor_make(rm_shape_make(2, 3, 1, 1), pos),
                           .b = rm_tensor_make(rm_shape_make(2, 1, 1, 1), cls),
                           .dw = rm_tensor_make(rm_shape_make(2, 3, 1, 1), dpos),
                           .db = rm_tensor_make(rm_shape_make(2, 1, 1, 1), dcls)};
    rm_tensor tx = rm_tensor_make(rm_shape_make(2, 2, 1, 2), x), ty = rm_tensor_make(rm_shape_make(2, 2, 3, 1), y);
    rm_layer_config cfg = {.kind = RM_LAYER_TOKENS};
    forward(&rm_tokens_desc, &cfg, &prm, &tx, &ty);
    const float want[12] = {10.5f, 2, 4, 23, 7, 9, 10.5f, 6, 8, 23, 11, 13};
    for (int i = 0; i < 12; i++) cr_expect_eq(y[i], want[i], "y[%d] = %g, want %g", i, (double)y[i], (double)want[i]);
    for (int i = 0; i < 12; i++) dy[i] = (float)(i + 1);
    rm_tensor tdy = rm_tensor_make(ty.shape, dy), tdx = rm_tensor_make(tx.shape, dx);
    rm_layer_call call = {.cfg = &cfg, .params = &prm, .nin = 1, .in = {&tx}, .out = &ty, .dout = &tdy, .din = {&tdx}};
    rm_err e = {0};
    cr_assert_eq(rm_tokens_desc.backward_ref(&call, &e), RM_OK, "%s", e.msg);
    const float wdx[8] = {2, 3, 5, 6, 8, 9, 11, 12}, wpos[6] = {8, 10, 12, 14, 16, 18};
    for (int i = 0; i < 8; i++) cr_expect_eq(dx[i], wdx[i], "dx[%d] = %g", i, (double)dx[i]);
    for (int i = 0; i < 6; i++) cr_expect_eq(dpos[i], wpos[i], "dpos[%d] = %g", i, (double)dpos[i]);
    cr_expect(dcls[0] == 8 && dcls[1] == 14, "dcls = %g %g", (double)dcls[0], (double)dcls[1]);
    /* token 2 of y (2 samples x 2 channels), and back */
    rm_layer_config tk = {.kind = RM_LAYER_TOKEN, .start = 2};
    rm_tensor tt = rm_tensor_make(rm_shape_make(2, 2, 1, 1), t2);
    forward(&rm_token_desc, &tk, NULL, &ty, &tt);
    cr_expect(t2[0] == 4 && t2[1] == 9 && t2[2] == 8 && t2[3] == 13, "token 2: %g %g %g %g", (double)t2[0],
              (double)t2[1], (double)t2[2], (double)t2[3]);
    rm_tensor tdt = rm_tensor_make(tt.shape, dt2), tdx2 = rm_tensor_make(ty.shape, dx2);
    rm_layer_call back = {.cfg = &tk, .nin = 1, .in = {&ty}, .out = &tt, .dout = &tdt, .din = {&tdx2}};
    cr_assert_eq(rm_token_desc.backward_ref(&back, &e), RM_OK, "%s", e.msg);
    for (int i = 0; i < 12; i++) cr_expect_eq(dx2[i], i % 3 == 2 ? dt2[i / 3] : 0.0f, "dx[%d] = %g", i, (double)dx2[i]);
}

Test(tokens, gradcheck)
{
    gc_case c = one_input_case(&rm_tokens_desc, rm_shape_make(2, 3, 2, 3));
    c.cfg = (rm_layer_config){.kind = RM_LAYER_TOKENS};
    run_gradcheck(&c);
    gc_case t = one_input_case(&rm_token_desc, rm_shape_make(2, 4, 5, 1));
    t.cfg = (rm_layer_config){.kind = RM_LAYER_TOKEN, .start = 3};
    run_gradcheck(&t);
}

Test(tokens, descriptor_and_errors)
{
    const rm_shape in = rm_shape_make(2, 6, 3, 5);
    rm_layer_config tk = {.kind = RM_LAYER_TOKEN, .start = 14}, past = {.kind = RM_LAYER_TOKEN, .start = 15};
    check_desc(&rm_token_desc, "token", RM_READS_NOTHING, 1, 1, &in, 1);
    check_backward_overwrites(&rm_token_desc, &tk, &in, 1, 1);
    expect_shape_error(&rm_token_desc, &past, &in, 1, "position 15 of an input with 15");
    expect_input_count_errors(&rm_token_desc);
    expect_input_count_errors(&rm_tokens_desc);
}
