/* Layer normalisation over the channels (layers/layernorm.c): one position
 * worked by hand, gradient checks of the input, scale and shift (the
 * harness fills the gradients with NaN first: backward must overwrite
 * them), and the shape errors. */
#include <criterion/criterion.h>
#include <math.h>

#include "layer_checks.h"

static rm_layer_config ln_cfg(float eps)
{
    return (rm_layer_config){.kind = RM_LAYER_LAYERNORM, .eps = eps};
}

/* One position of 4 channels x = 1, 2, 3, 6: mean 3, biased variance 3.5;
 * gamma 2 1 1 1, beta 0 0 0 1. The other position (x = 5 everywhere) has
 * variance 0: y is beta there, and its x-hat 0, so dx = r (gx - mean(gx))
 * with r = 1/sqrt(eps). */
Test(layernorm, hand_computed)
{
    float x[8] = {1, 5, 2, 5, 3, 5, 6, 5}, g[4] = {2, 1, 1, 1}, b[4] = {0, 0, 0, 1}, y[8], dy[8], dx[8], dg[4], db[4];
    for (int i = 0; i < 8; i++) dy[i] = (i % 2) ? 0.5f : (float)(i / 2 + 1); /* 1 2 3 4 at position 0 */
    const rm_shape s = rm_shape_make(1, 4, 1, 2), ps = rm_shape_make(4, 1, 1, 1);
    rm_tensor tx = rm_tensor_make(s, x), ty = rm_tensor_make(s, y), tdy = rm_tensor_make(s, dy),
              tdx = rm_tensor_make(s, dx);
    rm_layer_params prm = {.w = rm_tensor_make(ps, g),
                           .b = rm_tensor_make(ps, b),
                           .dw = rm_tensor_make(ps, dg),
                           .db = rm_tensor_make(ps, db)};
    rm_layer_config cfg = ln_cfg(1e-5f);
    rm_layer_call call = {.cfg = &cfg, .params = &prm, .nin = 1, .in = {&tx}, .out = &ty, .dout = &tdy, .din = {&tdx}};
    rm_err e = {0};
    cr_assert_eq(rm_layernorm_desc.forward_ref(&call, &e), RM_OK, "%s", e.msg);
    const double r = 1.0 / sqrt(3.5 + 1e-5), xh[4] = {-2 * r, -r, 0, 3 * r};
    for (int c = 0; c < 4; c++) {
        cr_expect(fabs(y[2 * c] - (xh[c] * g[c] + b[c])) < 1e-6, "y[%d] = %g", c, (double)y[2 * c]);
        cr_expect(fabs(y[2 * c + 1] - b[c]) < 1e-6, "constant position: y = beta, got %g", (double)y[2 * c + 1]);
    }
    cr_assert_eq(rm_layernorm_desc.backward_ref(&call, &e), RM_OK, "%s", e.msg);
    /* gx = dy gamma = 2 2 3 4: mean 2.75; mean(gx xh) = (-4 - 2 + 0 + 12) r / 4 = 1.5 r */
    const double gx[4] = {2, 2, 3, 4};
    for (int c = 0; c < 4; c++) {
        double want = r * (gx[c] - 2.75 - xh[c] * 1.5 * r);
        cr_expect(fabs(dx[2 * c] - want) < 1e-6, "dx[%d] = %g, want %g", c, (double)dx[2 * c], want);
        const double r0 = 1.0 / sqrt((double)1e-5f), gx0 = 0.5 * g[c];
        cr_expect(fabs(dx[2 * c + 1] - r0 * (gx0 - 0.625)) < 1e-4, "constant position: dx[%d] = %g", c,
                  (double)dx[2 * c + 1]);
        cr_expect(fabs(dg[c] - (c + 1) * xh[c]) < 1e-6, "dgamma[%d] = %g", c, (double)dg[c]); /* x-hat 0 there */
        cr_expect(fabs(db[c] - (c + 1 + 0.5)) < 1e-6, "dbeta[%d] = %g", c, (double)db[c]);
    }
}

Test(layernorm, gradcheck)
{
    /* Curved (a position of few, close values has a large 1/sigma): a smaller step than the harness's, at its
     * default tolerance. */
    gc_case c = one_input_case(&rm_layernorm_desc, rm_shape_make(2, 6, 3, 5));
    c.cfg = ln_cfg(1e-5f), c.eps = 1e-3, c.tol = 2e-3;
    run_gradcheck(&c);
    /* tokens as columns: N x D x T x 1 */
    gc_case t = one_input_case(&rm_layernorm_desc, rm_shape_make(2, 8, 5, 1));
    t.cfg = ln_cfg(1e-6f), t.eps = 1e-3, t.tol = 2e-3;
    run_gradcheck(&t);
}

Test(layernorm, shape_errors)
{
    rm_layer_config zero = ln_cfg(0), nan_eps = ln_cfg(NAN);
    expect_shape_error(&rm_layernorm_desc, &zero, &odd, 1, "eps must be > 0");
    expect_shape_error(&rm_layernorm_desc, &nan_eps, &odd, 1, "eps must be > 0");
    expect_input_count_errors(&rm_layernorm_desc);
}
