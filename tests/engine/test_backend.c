/* The backend interface on the CPU backend: the compute ops the executor and
 * the optimizer call (poison, gradient sum, SGD, Adam, timers, memory info)
 * and the layer dispatch through them. The CUDA backend's ops are checked
 * against these in the GPU suite (tests/cuda). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "layers.h"

static rm_backend *cpu(void)
{
    rm_backend *be = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_backend_create(&be, RM_BACKEND_CPU, &e), RM_OK, "%s", e.msg);
    return be;
}

Test(backend, cpu_properties_and_memory_info)
{
    rm_backend *be = cpu();
    cr_expect_str_eq(be->name, rm_backend_kind_name(RM_BACKEND_CPU));
    cr_expect_eq(be->max_grad_sum, 0, "the CPU sums any number of sources");
    cr_expect_eq(be->queued, 0);
    cr_expect_eq(be->host_memory, 1);
    size_t free_b = 0, total_b = 0;
    rm_err e = {0};
    cr_expect_eq(be->ops->mem_info(be->ctx, &free_b, &total_b, &e), RM_OK);
    cr_expect_eq(free_b, SIZE_MAX, "unbounded: the operating system decides");
    cr_expect_eq(total_b, SIZE_MAX);
    rm_backend_free(be);
    rm_backend_free(rm_backend_host()); /* static: freeing it is a no-op */
    cr_expect_eq(rm_backend_host()->ops->mem_info(NULL, &free_b, &total_b, &e), RM_OK);
}

Test(backend, cpu_poison_and_grad_sum)
{
    rm_backend *be = cpu();
    rm_err e = {0};
    float buf[300];
    cr_assert_eq(be->ops->poison(be->ctx, buf, sizeof buf, &e), RM_OK);
    for (int i = 0; i < 300; i++) cr_assert(isnan(buf[i]), "element %d is %g", i, buf[i]);
    /* Sums in double, in source order: 1e8 + 1 - 1e8 is 1 (in float it would be 0). */
    float a[300], b[300], c[300], out[300];
    for (int i = 0; i < 300; i++) a[i] = 1e8f, b[i] = (float)i, c[i] = -1e8f;
    const float *src[3] = {a, b, c};
    cr_assert_eq(be->ops->grad_sum(be->ctx, out, src, 3, 300, &e), RM_OK);
    for (int i = 0; i < 300; i++) cr_assert_eq(out[i], (float)i, "element %d: %g", i, out[i]);
    rm_backend_free(be);
}

Test(backend, cpu_optimizer_updates)
{
    rm_backend *be = cpu();
    rm_err e = {0};
    float w[2] = {1.0f, -2.0f}, dw[2] = {0.5f, 0.25f}, v[2] = {0.0f, 0.0f};
    cr_assert_eq(be->ops->sgd_update(be->ctx, w, dw, NULL, 2, 0.1f, 0.0f, 0.0f, 0, &e), RM_OK);
    cr_expect_eq(w[0], 1.0f - 0.1f * 0.5f);
    cr_expect_eq(w[1], -2.0f - 0.1f * 0.25f);
    float w0 = w[0];
    cr_assert_eq(be->ops->sgd_update(be->ctx, w, dw, v, 2, 0.1f, 0.0f, 0.9f, 0, &e), RM_OK);
    cr_expect_eq(v[0], 0.5f, "v = mu*0 + g");
    cr_expect_eq(w[0], w0 - 0.1f * 0.5f);
    float aw[1] = {1.0f}, adw[1] = {0.5f}, m[1] = {0.0f}, av[1] = {0.0f};
    rm_adam_scalars k = {.b1 = 0.9f, .one_minus_b1 = 0.1f, .b2 = 0.999f, .one_minus_b2 = 0.001f, .eps = 1e-8f,
                         .step_size = 0.01f / 0.1f, .bc2_sqrt = sqrtf(0.001f), .l2 = 0.0f, .shrink = 1.0f};
    cr_assert_eq(be->ops->adam_update(be->ctx, aw, adw, m, av, 1, &k, &e), RM_OK);
    cr_expect_eq(m[0], 0.1f * 0.5f);
    cr_expect(fabsf(aw[0] - (1.0f - 0.01f)) < 1e-6f, "the first Adam step moves by lr: %g", aw[0]);
    rm_backend_free(be);
}

Test(backend, cpu_timer)
{
    rm_backend *be = cpu();
    rm_err e = {0};
    rm_backend_timer *t = NULL;
    cr_assert_eq(be->ops->timer_create(be->ctx, &t, 2, &e), RM_OK);
    cr_assert_eq(be->ops->timer_record(be->ctx, t, 0, &e), RM_OK);
    volatile double x = 0;
    for (int i = 0; i < 100000; i++) x += i;
    cr_assert_eq(be->ops->timer_record(be->ctx, t, 1, &e), RM_OK);
    double s = -1;
    cr_assert_eq(be->ops->timer_elapsed(be->ctx, t, 0, 1, &s, &e), RM_OK);
    cr_expect(s >= 0 && s < 10, "%g s", s);
    cr_expect_eq(be->ops->timer_record(be->ctx, t, 2, &e), RM_ERR_INVALID);
    be->ops->timer_free(be->ctx, t);
    rm_backend_free(be);
}

/* rm_layer_forward goes through the backend's ops; be NULL is the CPU. */
Test(backend, layer_calls_go_through_the_backend)
{
    const rm_layer_desc *d = rm_layer_desc_of(RM_LAYER_RELU);
    float x[4] = {-1.0f, 2.0f, -3.0f, 4.0f}, y[4], z[4];
    rm_tensor in = rm_tensor_make(rm_shape_make(1, 4, 1, 1), x), out = rm_tensor_make(in.shape, y);
    rm_layer_config cfg = {.kind = RM_LAYER_RELU};
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &cfg, call.in[0] = &in, call.nin = 1, call.out = &out;
    rm_err e = {0};
    cr_assert_eq(rm_layer_forward(d, &call, &e), RM_OK, "%s", e.msg);
    rm_backend *be = cpu();
    call.be = be;
    out.data = z;
    cr_assert_eq(rm_layer_forward(d, &call, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(memcmp(y, z, sizeof y), 0);
    cr_expect_eq(y[0], 0.0f);
    cr_expect_eq(y[3], 4.0f);
    rm_shape s = in.shape;
    cr_expect_eq(rm_layer_workspace_bytes_device(d, be, &cfg, &s, 1, s, 1),
                 rm_backend_kind_layer_workspace(RM_BACKEND_CPU, d, &cfg, &s, 1, s, 1));
    rm_backend_free(be);
}
