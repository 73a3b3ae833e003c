/* Optimizers and learning-rate schedules. SGD (plain, momentum, Nesterov)
 * and Adam (L2 and decoupled decay) against the update rules evaluated here
 * in double, step by step, parameters and state; weight decay reaches only
 * the tensors meant to decay (conv/linear weights, not biases or batchnorm);
 * state sizes for the fixed-memory accounting; bad options are refused; and
 * each schedule at the steps where its formula changes. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "optim.h"
#include "train_fixtures.h"

#define N 4

/* float32 arithmetic against a double reference: a few ulps of values of order 1. */
static void expect_close(double got, double want, const char *what, int step, int j)
{
    double tol = 1e-6 * (1.0 > fabs(want) ? 1.0 : fabs(want));
    cr_expect(fabs(got - want) <= tol, "%s[%d] after step %d: %.9g, expected %.9g", what, j, step, got, want);
}

static const float w0[N] = {1.0f, -2.0f, 0.5f, 0.0f};
/* A different gradient at every step, so state that mixes steps is visible. */
static const float grads[3][N] = {{0.1f, 0.2f, -0.3f, 0.0f}, {-0.4f, 0.05f, 0.25f, 1.0f}, {0.3f, -0.1f, 0.0f, -0.5f}};

static rm_optim *make(float *w, float *g, int decay, const rm_optim_options *o)
{
    rm_optim_tensor t = {w, g, N, decay};
    rm_optim *opt = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_optim_create(&opt, &t, 1, o, &e), RM_OK, "%s", e.msg);
    return opt;
}

static void step(rm_optim *opt, double lr)
{
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_optim_step(opt, lr, &e), RM_OK, "%s", e.msg);
}

/* ---- SGD ------------------------------------------------------------------ */

Test(optim_sgd, plain_step_is_w_minus_lr_g)
{
    float w[N], g[N];
    memcpy(w, w0, sizeof w);
    memcpy(g, grads[0], sizeof g);
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_SGD);
    o.momentum = 0.0f;
    rm_optim *opt = make(w, g, 1, &o);
    cr_expect_eq(rm_optim_slots(opt), 0);
    cr_expect_eq(rm_optim_state_bytes(opt), 0u);
    step(opt, 0.1f);
    const double want[N] = {0.99, -2.02, 0.53, 0.0}; /* by hand: w - 0.1 g */
    for (int j = 0; j < N; j++) expect_close(w[j], want[j], "w", 1, j);
    cr_expect_null(rm_optim_state(opt, 0, 0));
    rm_optim_free(opt);
}

static void sgd_reference(int nesterov, double wd, int decay)
{
    float w[N], g[N];
    memcpy(w, w0, sizeof w);
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_SGD);
    o.momentum = 0.9f;
    o.nesterov = nesterov;
    o.weight_decay = wd;
    rm_optim *opt = make(w, g, decay, &o);
    cr_expect_eq(rm_optim_slots(opt), 1);
    double rw[N], rv[N] = {0};
    for (int j = 0; j < N; j++) rw[j] = w0[j];
    const double lr = 0.05, mu = 0.9, d = decay ? wd : 0.0;
    for (int s = 0; s < 3; s++) {
        memcpy(g, grads[s], sizeof g);
        step(opt, lr);
        for (int j = 0; j < N; j++) {
            double gj = (double)grads[s][j] + d * rw[j];
            rv[j] = mu * rv[j] + gj;
            rw[j] -= lr * (nesterov ? gj + mu * rv[j] : rv[j]);
        }
        const float *v = rm_optim_state(opt, 0, 0);
        cr_assert_not_null(v);
        for (int j = 0; j < N; j++) {
            expect_close(w[j], rw[j], "w", s + 1, j);
            expect_close(v[j], rv[j], "momentum", s + 1, j);
        }
    }
    cr_expect_eq(rm_optim_steps(opt), 3u);
    rm_optim_free(opt);
}

Test(optim_sgd, momentum_three_steps)
{
    sgd_reference(0, 0.0, 1);
}
Test(optim_sgd, nesterov_three_steps)
{
    sgd_reference(1, 0.0, 1);
}
Test(optim_sgd, weight_decay_three_steps)
{
    sgd_reference(0, 0.01, 1);
}
Test(optim_sgd, weight_decay_skips_tensors_not_marked)
{
    sgd_reference(0, 0.01, 0);
}

Test(optim_sgd, momentum_buffer_by_hand)
{
    /* One element, g = 1 every step, mu = 0.5, lr = 1: v = 1, 1.5, 1.75; w = -1, -2.5, -4.25. */
    float w = 0.0f, g = 1.0f;
    rm_optim_tensor t = {&w, &g, 1, 1};
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_SGD);
    o.momentum = 0.5f;
    rm_optim *opt = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_optim_create(&opt, &t, 1, &o, &e), RM_OK, "%s", e.msg);
    const float wv[3] = {-1.0f, -2.5f, -4.25f}, vv[3] = {1.0f, 1.5f, 1.75f};
    for (int s = 0; s < 3; s++) {
        step(opt, 1.0f);
        cr_expect_eq(w, wv[s], "step %d: w %g", s + 1, (double)w);
        cr_expect_eq(*rm_optim_state(opt, 0, 0), vv[s]);
    }
    rm_optim_reset(opt);
    cr_expect_eq(*rm_optim_state(opt, 0, 0), 0.0f);
    cr_expect_eq(rm_optim_steps(opt), 0u);
    rm_optim_free(opt);
}

Test(optim_sgd, decay_all_decays_every_tensor)
{
    /* Zero gradients, so only decay moves a parameter: w -= lr * wd * w. */
    float a = 2.0f, b = 2.0f, ga = 0.0f, gb = 0.0f;
    rm_optim_tensor t[2] = {{&a, &ga, 1, 1}, {&b, &gb, 1, 0}};
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_SGD);
    o.momentum = 0.0f;
    o.weight_decay = 0.5f;
    rm_optim *opt = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_optim_create(&opt, t, 2, &o, &e), RM_OK, "%s", e.msg);
    step(opt, 0.1f);
    cr_expect_float_eq(a, 1.9f, 1e-7f); /* 2 - 0.1 * 0.5 * 2 */
    cr_expect_eq(b, 2.0f, "a bias must not decay by default");
    rm_optim_free(opt);

    a = b = 2.0f;
    o.decay_all = 1;
    cr_assert_eq(rm_optim_create(&opt, t, 2, &o, &e), RM_OK, "%s", e.msg);
    step(opt, 0.1f);
    cr_expect_float_eq(a, 1.9f, 1e-7f);
    cr_expect_float_eq(b, 1.9f, 1e-7f);
    rm_optim_free(opt);
}

Test(optim_sgd, model_tensors_decay_conv_and_linear_weights_only)
{
    char text[512];
    tf_model_text(text, sizeof text, "conv1", 4, 5);
    tf_net n = tf_net_make(text, 1);
    rm_optim_tensor t[16];
    int count = 0;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_optim_tensors_from_model(t, &count, n.m, n.lpp, &e), RM_OK, "%s", e.msg);
    /* conv1.w, conv1.b, bn1.gamma, bn1.beta, fc.w, fc.b in the executor's order */
    cr_assert_eq(count, 6);
    const int decay[6] = {1, 0, 0, 0, 1, 0};
    const size_t numel[6] = {4 * 3 * 3 * 3, 4, 4, 4, 5 * 4 * 8 * 8, 5};
    size_t off = 0;
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(t[i].decay, decay[i], "tensor %d", i);
        cr_expect_eq(t[i].n, numel[i], "tensor %d", i);
        cr_expect_eq(t[i].w, n.params + off, "tensor %d", i);
        cr_expect_eq(t[i].dw, n.grads + off, "tensor %d", i);
        off += t[i].n;
    }
    cr_expect_eq(off, n.m->param_count);

    /* SGD with decay over the model: a zero gradient moves exactly the decaying tensors. */
    memset(n.grads, 0, n.m->param_count * sizeof(float));
    float *before = malloc(n.m->param_count * sizeof(float));
    memcpy(before, n.params, n.m->param_count * sizeof(float));
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_SGD);
    o.weight_decay = 0.1f;
    rm_optim *opt = NULL;
    cr_assert_eq(rm_optim_create(&opt, t, count, &o, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_optim_param_count(opt), n.m->param_count);
    step(opt, 0.5f);
    off = 0;
    for (int i = 0; i < 6; i++) {
        for (size_t j = 0; j < t[i].n; j++) {
            float want = decay[i] ? before[off + j] - 0.5f * (0.1f * before[off + j]) : before[off + j];
            cr_expect_eq(n.params[off + j], want, "tensor %d element %zu", i, j);
        }
        off += t[i].n;
    }
    rm_optim_free(opt);
    free(before);
    tf_net_free(&n);
}

/* ---- Adam ----------------------------------------------------------------- */

static void adam_reference(double wd, int decoupled)
{
    float w[N], g[N];
    memcpy(w, w0, sizeof w);
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_ADAM);
    o.weight_decay = wd;
    o.decoupled_wd = decoupled;
    rm_optim *opt = make(w, g, 1, &o);
    cr_expect_eq(rm_optim_slots(opt), 2);
    double rw[N], rm[N] = {0}, rv[N] = {0};
    for (int j = 0; j < N; j++) rw[j] = w0[j];
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8;
    for (int s = 0; s < 3; s++) {
        memcpy(g, grads[s], sizeof g);
        step(opt, lr);
        int t = s + 1;
        for (int j = 0; j < N; j++) {
            double gj = grads[s][j];
            if (decoupled)
                rw[j] *= 1.0 - lr * wd;
            else
                gj += wd * rw[j];
            rm[j] = b1 * rm[j] + (1 - b1) * gj;
            rv[j] = b2 * rv[j] + (1 - b2) * gj * gj;
            double mhat = rm[j] / (1 - pow(b1, t)), vhat = rv[j] / (1 - pow(b2, t));
            rw[j] -= lr * mhat / (sqrt(vhat) + eps);
        }
        const float *m = rm_optim_state(opt, 0, 0), *v = rm_optim_state(opt, 0, 1);
        cr_assert(m && v);
        for (int j = 0; j < N; j++) {
            expect_close(w[j], rw[j], "w", t, j);
            expect_close(m[j], rm[j], "m", t, j);
            expect_close(v[j], rv[j], "v", t, j);
        }
    }
    cr_expect_eq(rm_optim_steps(opt), 3u);
    rm_optim_free(opt);
}

Test(optim_adam, three_steps_bias_corrected)
{
    adam_reference(0.0, 0);
}
/* 0.05, not 0.1: 0.2 - 0.1 * 2 cancels to 0 in float but to 3e-9 in double, and Adam
 * normalises a gradient, so that 3e-9 would move the reference by a quarter of lr. */
Test(optim_adam, l2_weight_decay_three_steps)
{
    adam_reference(0.05, 0);
}
Test(optim_adam, decoupled_weight_decay_three_steps)
{
    adam_reference(0.1, 1);
}

Test(optim_adam, first_step_moves_each_weight_by_lr)
{
    /* Bias correction makes the first step lr * g / (|g| + eps): lr times the sign of g. */
    float w[N], g[N];
    memcpy(w, w0, sizeof w);
    memcpy(g, grads[0], sizeof g);
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_ADAM);
    rm_optim *opt = make(w, g, 1, &o);
    step(opt, 0.001f);
    const double want[N] = {0.999, -2.001, 0.501, 0.0};
    for (int j = 0; j < N; j++) expect_close(w[j], want[j], "w", 1, j);
    rm_optim_free(opt);
}

/* ---- state sizes and options ---------------------------------------------- */

Test(optim_state, bytes_for_fixed_memory)
{
    rm_optim_options sgd = rm_optim_options_default(RM_OPTIM_SGD), adam = rm_optim_options_default(RM_OPTIM_ADAM);
    cr_expect_eq(rm_optim_state_bytes_for(&sgd, 1000), 4000u);
    cr_expect_eq(rm_optim_state_bytes_for(&adam, 1000), 8000u);
    sgd.momentum = 0.0f;
    cr_expect_eq(rm_optim_state_bytes_for(&sgd, 1000), 0u);

    float w[N] = {0}, g[N] = {0};
    rm_optim *opt = make(w, g, 1, &adam);
    cr_expect_eq(rm_optim_state_bytes(opt), 2 * N * sizeof(float));
    cr_expect_eq(rm_optim_find(opt, w), 0);
    cr_expect_eq(rm_optim_find(opt, g), -1);
    cr_expect_null(rm_optim_state(opt, 0, 2));
    cr_expect_null(rm_optim_state(opt, 1, 0));
    rm_optim_free(opt);
}

Test(optim_state, bad_options_and_rates_are_refused)
{
    float w[N] = {0}, g[N] = {0};
    rm_optim_tensor t = {w, g, N, 1};
    rm_optim *opt = NULL;
    rm_err e = {RM_OK, ""};
    struct {
        rm_optim_options o;
        const char *needle;
    } bad[6];
    for (int i = 0; i < 6; i++) bad[i].o = rm_optim_options_default(i < 3 ? RM_OPTIM_SGD : RM_OPTIM_ADAM);
    bad[0].o.momentum = 1.0f, bad[0].needle = "momentum";
    bad[1].o.momentum = 0.0f, bad[1].o.nesterov = 1, bad[1].needle = "nesterov";
    bad[2].o.weight_decay = -1.0f, bad[2].needle = "weight decay";
    bad[3].o.beta1 = 1.0f, bad[3].needle = "beta1";
    bad[4].o.beta2 = -0.5f, bad[4].needle = "beta2";
    bad[5].o.eps = 0.0f, bad[5].needle = "eps";
    for (int i = 0; i < 6; i++) {
        cr_expect_eq(rm_optim_create(&opt, &t, 1, &bad[i].o, &e), RM_ERR_INVALID, "case %d", i);
        cr_expect_null(opt);
        cr_expect(strstr(e.msg, bad[i].needle), "case %d: %s", i, e.msg);
    }
    rm_optim_options o = rm_optim_options_default(RM_OPTIM_ADAM);
    o.kind = (rm_optim_kind)7;
    cr_expect_eq(rm_optim_create(&opt, &t, 1, &o, &e), RM_ERR_INVALID);

    opt = make(w, g, 1, NULL);
    cr_expect_eq(rm_optim_step(opt, -0.1, &e), RM_ERR_INVALID);
    cr_expect_eq(rm_optim_step(opt, NAN, &e), RM_ERR_INVALID);
    cr_expect_eq(rm_optim_steps(opt), 0u, "a refused step is not counted");
    rm_optim_free(opt);
}

/* ---- learning-rate schedules ---------------------------------------------- */

static void expect_lr(const rm_lr_schedule *s, uint64_t step, uint64_t total, double want)
{
    double got = rm_lr_at(s, step, total);
    cr_expect(fabs(got - want) <= 1e-12 * (1.0 + fabs(want)), "lr at step %llu of %llu: %.17g, expected %.17g",
              (unsigned long long)step, (unsigned long long)total, got, want);
}

Test(optim_lr, constant)
{
    rm_lr_schedule s = rm_lr_schedule_make(RM_LR_CONSTANT, 0.1);
    cr_assert_eq(rm_lr_schedule_check(&s, NULL), RM_OK);
    expect_lr(&s, 0, 100, 0.1);
    expect_lr(&s, 99, 100, 0.1);
    expect_lr(&s, 1000, 100, 0.1);
}

Test(optim_lr, step_decay)
{
    rm_lr_schedule s = rm_lr_schedule_make(RM_LR_STEP, 0.1);
    s.step_size = 30;
    s.gamma = 0.1;
    cr_assert_eq(rm_lr_schedule_check(&s, NULL), RM_OK);
    expect_lr(&s, 0, 90, 0.1);
    expect_lr(&s, 29, 90, 0.1);
    expect_lr(&s, 30, 90, 0.01);
    expect_lr(&s, 59, 90, 0.01);
    expect_lr(&s, 60, 90, 0.001);
    expect_lr(&s, 89, 90, 0.001);
}

Test(optim_lr, cosine_endpoints_and_midpoint)
{
    rm_lr_schedule s = rm_lr_schedule_make(RM_LR_COSINE, 0.1);
    s.min_lr = 0.001;
    cr_assert_eq(rm_lr_schedule_check(&s, NULL), RM_OK);
    expect_lr(&s, 0, 100, 0.1);
    expect_lr(&s, 50, 100, 0.001 + 0.099 * 0.5);
    expect_lr(&s, 25, 100, 0.001 + 0.099 * 0.5 * (1.0 + cos(M_PI / 4)));
    expect_lr(&s, 100, 100, 0.001);
    expect_lr(&s, 150, 100, 0.001); /* past the end: the last rate */
    s.min_lr = 0.0;
    expect_lr(&s, 100, 100, 0.0);
}

Test(optim_lr, linear_warmup_then_cosine)
{
    rm_lr_schedule s = rm_lr_schedule_make(RM_LR_COSINE, 0.4);
    s.warmup_steps = 4;
    cr_assert_eq(rm_lr_schedule_check(&s, NULL), RM_OK);
    expect_lr(&s, 0, 104, 0.1); /* (0 + 1) / 4 of base: the first step already moves */
    expect_lr(&s, 1, 104, 0.2);
    expect_lr(&s, 3, 104, 0.4);
    expect_lr(&s, 4, 104, 0.4); /* cosine starts at base right after warmup */
    expect_lr(&s, 54, 104, 0.2);
    expect_lr(&s, 104, 104, 0.0);
}

Test(optim_lr, warmup_applies_to_step_decay)
{
    rm_lr_schedule s = rm_lr_schedule_make(RM_LR_STEP, 1.0);
    s.warmup_steps = 2;
    s.step_size = 10;
    s.gamma = 0.5;
    expect_lr(&s, 0, 0, 0.5);
    expect_lr(&s, 1, 0, 1.0);
    expect_lr(&s, 9, 0, 1.0);
    expect_lr(&s, 10, 0, 0.5);
    expect_lr(&s, 25, 0, 0.25);
}

Test(optim_lr, bad_schedules_are_refused)
{
    rm_err e = {RM_OK, ""};
    rm_lr_schedule s = rm_lr_schedule_make(RM_LR_CONSTANT, 0.0);
    cr_expect_eq(rm_lr_schedule_check(&s, &e), RM_ERR_INVALID);
    s = rm_lr_schedule_make(RM_LR_STEP, 0.1);
    s.step_size = 0;
    cr_expect_eq(rm_lr_schedule_check(&s, &e), RM_ERR_INVALID);
    s = rm_lr_schedule_make(RM_LR_STEP, 0.1);
    s.gamma = 1.5;
    cr_expect_eq(rm_lr_schedule_check(&s, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "gamma"), "%s", e.msg);
    s = rm_lr_schedule_make(RM_LR_COSINE, 0.1);
    s.min_lr = 0.2;
    cr_expect_eq(rm_lr_schedule_check(&s, &e), RM_ERR_INVALID);
}
