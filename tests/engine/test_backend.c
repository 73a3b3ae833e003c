/* The backend interface on the CPU backend: the compute ops the executor and
 * the optimizer call (poison, gradient sum, SGD, Adam, timers, memory info)
 * and the layer dispatch through them. The CUDA backend's ops are checked
 * against these in the GPU suite (tests/cuda). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cpu.h"
#include "layers.h"
#ifdef REMAT_CUBLAS_LAZY
#include "cublas_lazy.h"
#endif

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
    rm_adam_scalars k = {.b1 = 0.9f,
                         .one_minus_b1 = 0.1f,
                         .b2 = 0.999f,
                         .one_minus_b2 = 0.001f,
                         .eps = 1e-8f,
                         .step_size = 0.01f / 0.1f,
                         .bc2_sqrt = sqrtf(0.001f),
                         .l2 = 0.0f,
                         .shrink = 1.0f};
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

/* The registry: each backend found by its name and its id, an unknown name
 * refused naming the choices, and each backend's kernel libraries parsed by
 * that backend (so --kernels means the library of the --device chosen). */
Test(backend, registry_finds_each_backend_by_name)
{
    rm_err e = {0};
    rm_backend_kind k = RM_BACKEND_KIND_COUNT;
    cr_assert_eq(rm_backend_find(&k, "cpu", &e), RM_OK, "%s", e.msg);
    cr_expect_eq(k, RM_BACKEND_CPU);
    cr_assert_eq(rm_backend_find(&k, "cuda", &e), RM_OK, "%s", e.msg);
    cr_expect_eq(k, RM_BACKEND_CUDA);
    for (int i = 0; i < RM_BACKEND_KIND_COUNT; i++) {
        const rm_backend_info *b = rm_backend_info_of((rm_backend_kind)i);
        cr_assert_not_null(b, "backend %d", i);
        cr_expect_eq(b->kind, (rm_backend_kind)i);
        cr_expect_str_eq(b->name, rm_backend_kind_name((rm_backend_kind)i));
        cr_expect_gt(b->nkernel_libs, 0, "%s", b->name);
        cr_expect_not_null(b->create, "%s", b->name);
    }
    cr_expect_eq(RM_BACKEND_DEFAULT, RM_BACKEND_CPU, "the default device is the CPU");
    cr_expect_eq(rm_backend_find(&k, "tpu", &e), RM_ERR_INVALID);
    cr_expect_str_eq(e.msg, "unknown device 'tpu' (cpu or cuda)");
    cr_expect_eq(rm_backend_find(&k, NULL, &e), RM_ERR_INVALID);
    cr_expect_null(rm_backend_info_of(RM_BACKEND_KIND_COUNT));
    rm_backend *be = NULL;
    cr_expect_eq(rm_backend_create(&be, RM_BACKEND_KIND_COUNT, &e), RM_ERR_INVALID);
    cr_expect_null(be);
    char buf[64];
    cr_expect_str_eq(rm_backend_list(buf, sizeof buf), "cpu or cuda");

    int lib = -1;
    cr_expect_eq(rm_backend_kernels_parse(&lib, RM_BACKEND_CPU, "reference", &e), RM_OK, "%s", e.msg);
    cr_expect_eq(lib, RM_CPU_KERNELS_REFERENCE);
    cr_expect_eq(rm_backend_kernels_parse(&lib, RM_BACKEND_CUDA, "handwritten", &e), RM_OK, "%s", e.msg);
    cr_expect_eq(lib, 0);
    cr_expect_eq(rm_backend_kernels_parse(&lib, RM_BACKEND_CUDA, "cudnn", &e), RM_OK, "%s", e.msg);
    cr_expect_eq(lib, 2);
    cr_expect_str_eq(rm_backend_kernels_name(RM_BACKEND_CUDA, 1), "cublas");
    cr_expect_str_eq(rm_backend_kernels_name(RM_BACKEND_CPU, RM_CPU_KERNELS_FAST), "fast");
    cr_expect_str_eq(rm_backend_kernels_name(RM_BACKEND_CPU, 9), "unknown");
    cr_expect_eq(rm_backend_kernels_parse(&lib, RM_BACKEND_CPU, "cublas", &e), RM_ERR_INVALID);
    cr_expect_str_eq(e.msg, "unknown cpu kernel library 'cublas' (reference or fast)");
    cr_expect_eq(rm_backend_kernels_parse(&lib, RM_BACKEND_CUDA, "fast", &e), RM_ERR_INVALID);
    cr_expect_str_eq(e.msg, "unknown cuda kernel library 'fast' (handwritten, cublas or cudnn)");
}

#ifdef REMAT_CUBLAS_LAZY
/* Whether this process has mapped a file whose name holds what. */
static int mapped(const char *what)
{
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert_not_null(f);
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) found = strstr(line, what) != NULL;
    fclose(f);
    return found;
}

/* The build with the CUDA toolkit opens cuBLAS when the CUDA backend first
 * asks for it (engine/cuda/cublas_lazy.c), not when a program starts: the
 * library it was built against opens, with every function remat calls, on
 * a machine without a GPU too. It needs a process of its own (Criterion's
 * default): an earlier test in the same process may have opened cuBLAS. */
Test(backend, cublas_opens_on_first_use)
{
    cr_expect_not(mapped("libcublas"), "cuBLAS mapped before anything asked for it");
    rm_err e = {0};
    cr_assert_eq(rm_cublas_load(&e), RM_OK, "%s", e.msg);
    cr_expect(mapped("libcublasLt"), "cuBLAS loaded, but libcublasLt not mapped");
    cr_assert_eq(rm_cublas_load(&e), RM_OK, "%s", e.msg);
}
#endif

/* Options given at creation win over the environment, which is then not
 * read; a thread count is refused for a backend without host threads. */
Test(backend, cpu_options_win_over_the_environment)
{
    rm_err e = {0};
    setenv("REMAT_CPU_KERNELS", "blas", 1); /* no such library: read, it would fail */
    rm_backend *be = NULL;
    cr_expect_eq(rm_backend_create(&be, RM_BACKEND_CPU, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "REMAT_CPU_KERNELS") != NULL, "%s", e.msg);
    rm_backend_options o = {.set_kernels = 1, .kernels = RM_CPU_KERNELS_REFERENCE, .threads = 3};
    cr_assert_eq(rm_backend_create_with(&be, RM_BACKEND_CPU, &o, &e), RM_OK, "%s", e.msg);
    unsetenv("REMAT_CPU_KERNELS");
    char buf[160];
    cr_expect_str_eq(rm_backend_describe(be, buf, sizeof buf), "reference kernels, 3 threads");
    cr_expect_eq(rm_backend_kernels(be), RM_CPU_KERNELS_REFERENCE);
    cr_expect_eq(rm_backend_fixed_bytes(be), 0, "the CPU holds nothing outside the arena");
    cr_expect_eq(rm_backend_threads(be), 3);
    cr_expect_eq(rm_backend_loop_threads(be, RM_LOOP_MIN - 1), 1);
    cr_expect_eq(rm_backend_loop_threads(be, RM_LOOP_MIN), 3);
    rm_backend_free(be);
    o.threads = 2;
    cr_expect_eq(rm_backend_create_with(&be, RM_BACKEND_CUDA, &o, &e), RM_ERR_INVALID);
    cr_expect(strstr(e.msg, "thread count") != NULL, "%s", e.msg);
}

/* A layer that declares no kernels for a backend (and, on the CPU, has no
 * reference either) is refused with RM_ERR_UNSUPPORTED naming the layer
 * and the backend, never called through a NULL pointer. */
Test(backend, layer_without_kernels_is_unsupported)
{
    rm_layer_desc d = *rm_layer_desc_of(RM_LAYER_RELU);
    d.name = "bare";
    d.forward_ref = d.backward_ref = NULL;
    d.kernels = NULL;
    cr_expect_null(rm_layer_backend_of(&d, RM_BACKEND_CUDA)->forward);
    float x[4] = {0}, y[4];
    rm_tensor in = rm_tensor_make(rm_shape_make(1, 4, 1, 1), x), out = rm_tensor_make(in.shape, y);
    rm_layer_config cfg = {.kind = RM_LAYER_RELU};
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &cfg, call.in[0] = &in, call.nin = 1, call.out = &out;
    rm_backend *be = cpu();
    call.be = be;
    rm_err e = {0};
    cr_expect_eq(rm_layer_forward(&d, &call, &e), RM_ERR_UNSUPPORTED);
    cr_expect_str_eq(e.msg, "bare: no forward kernel for backend cpu");
    cr_expect_eq(rm_layer_backward(&d, &call, &e), RM_ERR_UNSUPPORTED);
    cr_expect_str_eq(e.msg, "bare: no backward kernel for backend cpu");
    rm_backend_free(be);
}
