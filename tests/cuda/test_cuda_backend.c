/* The CUDA backend's compute ops against the CPU backend's (engine/backend.h):
 * the same bits from the gradient sum and the optimizer updates, NaN poison,
 * its properties and timers, and its kernel table: each layer's kernels for
 * the library chosen once, and chosen again after the library changes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "comm.h"
#include "cuda_fixture.h"
#include "grad_reduce.h"
#include "layers.h"

static rm_backend *gpu(void)
{
    rm_backend *be = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_backend_create(&be, RM_BACKEND_CUDA, &e), RM_OK, "cuda backend: %s", e.msg);
    return be;
}

Test(cuda_backend, properties)
{
    rm_backend *be = gpu();
    rm_err e = {0};
    cr_expect_gt(be->max_grad_sum, 0, "a kernel argument holds the sources: bounded");
    cr_expect_eq(be->queued, 1);
    cr_expect_eq(be->host_memory, 0);
    size_t f = 0, t = 0, f2 = 0, t2 = 0;
    cr_expect_eq(be->ops->mem_info(be->ctx, &f, &t, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(be->ops->mem_info(be->ctx, &f2, &t2, &e), RM_OK, "%s", e.msg);
    cr_expect(t > 0 && t == t2 && f <= t);
    rm_backend_timer *tm = NULL;
    cr_assert_eq(be->ops->timer_create(be->ctx, &tm, 2, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(be->ops->timer_record(be->ctx, tm, 0, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(be->ops->timer_record(be->ctx, tm, 1, &e), RM_OK, "%s", e.msg);
    double s = -1;
    cr_expect_eq(be->ops->timer_elapsed(be->ctx, tm, 0, 1, &s, &e), RM_OK, "%s", e.msg);
    cr_expect_geq(s, 0.0);
    be->ops->timer_free(be->ctx, tm);
    rm_backend_free(be);
}

/* Gradient sum, scale, poison, SGD and Adam: the device's bits are the CPU's. */
Test(cuda_backend, compute_ops_match_the_cpu)
{
    enum { N = 1000, NSRC = 5 };
    rm_backend *be = gpu(), *cpu = rm_backend_host();
    devmem m = {.be = be};
    rm_rng r = rm_rng_make(42);
    rm_err e = {0};
    float *src[NSRC], *dsrc[NSRC], got[N], want[N];
    for (int d = 0; d < NSRC; d++) {
        src[d] = host_random(N, &r);
        dsrc[d] = dev_upload(&m, src[d], N * sizeof(float));
    }
    float *dout = dev_upload(&m, NULL, N * sizeof(float));
    cr_assert_eq(be->ops->grad_sum(be->ctx, dout, (const float *const *)dsrc, NSRC, N, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(cpu->ops->grad_sum(cpu->ctx, want, (const float *const *)src, NSRC, N, &e), RM_OK);
    dev_download(&m, got, dout, sizeof got);
    cr_expect_eq(memcmp(got, want, sizeof got), 0, "gradient sum: not the CPU's bits");

    /* The mean of micro-batches or ranks (train/grad_reduce.c), in place:
     * one float product per element. */
    float sum[N];
    memcpy(sum, want, sizeof sum);
    cr_assert_eq(be->ops->scale(be->ctx, dout, N, 1.0f / 3, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(cpu->ops->scale(cpu->ctx, want, N, 1.0f / 3, &e), RM_OK);
    dev_download(&m, got, dout, sizeof got);
    cr_expect_eq(memcmp(got, want, sizeof got), 0, "scale: not the CPU's bits");
    for (int i = 0; i < N; i++) cr_assert_eq(want[i], sum[i] * (1.0f / 3), "scale: element %d", i);

    cr_assert_eq(be->ops->poison(be->ctx, dout, N * sizeof(float), &e), RM_OK, "%s", e.msg);
    dev_download(&m, got, dout, sizeof got);
    for (int i = 0; i < N; i++) cr_assert(isnan(got[i]), "poison: element %d is %g", i, got[i]);

    /* SGD with Nesterov momentum (momentum mu), then Adam (moments m1, v2),
     * from the same state on both backends. */
    float *h[4], *dh[4]; /* w, mu, m1, v2 */
    for (int q = 0; q < 4; q++) h[q] = host_random(N, &r);
    for (int i = 0; i < N; i++) h[3][i] = fabsf(h[3][i]); /* a second moment is >= 0 */
    for (int q = 0; q < 4; q++) dh[q] = dev_upload(&m, h[q], sizeof got);
    float *dw = host_random(N, &r), *ddw = dev_upload(&m, dw, sizeof got);
    rm_adam_scalars k = {.b1 = 0.9f,
                         .one_minus_b1 = 0.1f,
                         .b2 = 0.999f,
                         .one_minus_b2 = 0.001f,
                         .eps = 1e-8f,
                         .step_size = 0.3f,
                         .bc2_sqrt = 0.05f,
                         .l2 = 0.01f,
                         .shrink = 0.999f};
    rm_backend *bes[2] = {be, cpu};
    for (int b = 0; b < 2; b++) {
        float **p = b ? h : dh;
        const float *g = b ? dw : ddw;
        cr_assert_eq(bes[b]->ops->sgd_update(bes[b]->ctx, p[0], g, p[1], N, 0.1f, 1e-4f, 0.9f, 1, &e), RM_OK);
        cr_assert_eq(bes[b]->ops->adam_update(bes[b]->ctx, p[0], g, p[2], p[3], N, &k, &e), RM_OK);
    }
    static const char *const names[4] = {"weights", "sgd momentum", "adam m", "adam v"};
    for (int q = 0; q < 4; q++) {
        dev_download(&m, got, dh[q], sizeof got);
        cr_expect_eq(memcmp(got, h[q], sizeof got), 0, "%s after sgd + adam: not the CPU's bits", names[q]);
        free(h[q]);
    }
    free(dw);
    for (int d = 0; d < NSRC; d++) free(src[d]);
    devmem_free(&m);
    rm_backend_free(be);
}

/* The kernel table: a 3x3 convolution needs no workspace with the
 * hand-written kernels and im2col columns with cuBLAS; the layer's kernels
 * are chosen again when the library changes. */
Test(cuda_backend, kernel_table_follows_the_library)
{
    rm_backend *be = gpu();
    rm_err e = {0};
    const rm_layer_desc *d = rm_layer_desc_of(RM_LAYER_CONV2D);
    rm_layer_config cfg = {
        .kind = RM_LAYER_CONV2D, .out_channels = 8, .kernel = {3, 3}, .stride = {1, 1}, .pad = {1, 1}};
    rm_shape in = rm_shape_make(2, 4, 8, 8), out = rm_shape_make(2, 8, 8, 8);
    cr_assert_eq(rm_backend_cuda_set_kernels(be, RM_CUDA_KERNELS_HANDWRITTEN, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_layer_workspace_bytes_device(d, be, &cfg, &in, 1, out, 1), 0);
    cr_assert_eq(rm_backend_cuda_set_kernels(be, RM_CUDA_KERNELS_CUBLAS, &e), RM_OK, "%s", e.msg);
    size_t ws = rm_layer_workspace_bytes_device(d, be, &cfg, &in, 1, out, 1);
    cr_expect_gt(ws, 0);
    cr_expect_leq(ws, rm_backend_kind_layer_workspace(RM_BACKEND_CUDA, d, &cfg, &in, 1, out, 1),
                  "the kind's bound holds every library");
    cr_assert_eq(rm_backend_cuda_set_kernels(be, RM_CUDA_KERNELS_HANDWRITTEN, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_layer_workspace_bytes_device(d, be, &cfg, &in, 1, out, 1), 0);
    rm_backend_free(be);
}

/* A layer that declares no CUDA kernels is refused with RM_ERR_UNSUPPORTED
 * naming the layer and the backend (its reference is no CUDA kernel). */
Test(cuda_backend, layer_without_kernels_is_unsupported)
{
    rm_backend *be = gpu();
    rm_layer_desc d = *rm_layer_desc_of(RM_LAYER_RELU);
    d.kernels = NULL;
    rm_layer_config cfg = {.kind = RM_LAYER_RELU};
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &cfg, call.be = be;
    rm_err e = {0};
    cr_expect_eq(rm_layer_forward(&d, &call, &e), RM_ERR_UNSUPPORTED);
    cr_expect_str_eq(e.msg, "relu: no forward kernel for backend cuda");
    cr_expect_eq(rm_layer_backward(&d, &call, &e), RM_ERR_UNSUPPORTED);
    cr_expect_str_eq(e.msg, "relu: no backward kernel for backend cuda");
    rm_backend_free(be);
}

/* Under mpirun each rank takes the GPU of its rank on the machine, modulo
 * the GPUs it sees; alone, GPU 0. */
Test(cuda_backend, a_rank_takes_the_gpu_of_its_local_rank)
{
    setenv("REMAT_CUDA_EMU_DEVICES", "2", 1);
    const char *local[] = {NULL, "0", "1", "3"};
    const char *want[] = {"GPU 0,", "GPU 0,", "GPU 1,", "GPU 1,"};
    for (int k = 0; k < 4; k++) {
        if (local[k])
            setenv("OMPI_COMM_WORLD_LOCAL_RANK", local[k], 1);
        else
            unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
        rm_backend *be = NULL;
        rm_err e = {0};
        cr_assert_eq(rm_backend_create(&be, RM_BACKEND_CUDA, &e), RM_OK, "%s", e.msg);
        char what[128];
        rm_backend_describe(be, what, sizeof what);
        cr_expect_eq(strncmp(what, want[k], strlen(want[k])), 0, "local rank %s: %s", local[k] ? local[k] : "none",
                     what);
        rm_backend_free(be);
    }
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    unsetenv("REMAT_CUDA_EMU_DEVICES");
}

/* A stand-in for a job of two ranks holding the same gradients (engine/comm.h):
 * the sum over them doubles the buffer, which must be host memory. */
typedef struct two_ranks {
    const float *device; /* the gradients on the device: never handed to the transport */
    int sums;
} two_ranks;

static int two_start(void *ctx, float *buf, size_t count, rm_comm_request **req, rm_err *e)
{
    two_ranks *t = ctx;
    (void)e;
    t->sums++;
    cr_assert_neq(buf, t->device, "device memory handed to MPI");
    for (size_t i = 0; i < count; i++) buf[i] += buf[i];
    *req = NULL;
    return RM_OK;
}
static int two_test(void *ctx, rm_comm_request *req, int *done, rm_err *e)
{
    (void)ctx, (void)req, (void)e;
    *done = 1;
    return RM_OK;
}
static int two_wait(void *ctx, rm_comm_request *req, rm_err *e)
{
    (void)ctx, (void)req, (void)e;
    return RM_OK;
}

/* Data parallel on a device without NCCL (train/grad_reduce.c): the ranks'
 * sum goes through host memory, one download and one upload, and the mean
 * lands back on the device: two equal ranks give the gradients back, bit
 * for bit. */
Test(cuda_backend, ranks_sum_device_gradients_through_host_memory)
{
    enum { N = 3000 };
    rm_backend *be = gpu();
    cr_assert_eq(be->host_memory, 0);
    devmem m = {.be = be};
    rm_rng r = rm_rng_make(7);
    float *want = host_random(N, &r), got[N];
    float *dgrads = dev_upload(&m, want, N * sizeof(float));
    two_ranks two = {dgrads, 0};
    static const rm_comm_ops ops = {two_start, two_test, two_wait, NULL, NULL, NULL, NULL};
    rm_comm comm = {RM_COMM_MPI, "two ranks", 0, 2, &ops, &two, 0};
    rm_grad_reduce *gr = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_grad_reduce_create(&gr, be, dgrads, N, 1, &comm, NULL, &e), RM_OK, "%s", e.msg);
    rm_grad_reduce_begin(gr);
    cr_assert_eq(rm_grad_reduce_micro(gr, 0, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_grad_reduce_finish(gr, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(two.sums, 1, "one sum of the whole gradient");
    dev_download(&m, got, dgrads, sizeof got);
    cr_assert_eq(memcmp(got, want, sizeof got), 0, "(g + g) / 2 is g");
    rm_grad_reduce_free(gr);
    free(want);
    devmem_free(&m);
    rm_backend_free(be);
}
