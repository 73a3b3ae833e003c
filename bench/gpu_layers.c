/* Per-layer GPU timing of the convolution kernel libraries: forward and
 * backward (data + weight gradient) of every distinct convolution of
 * ResNet-50 and VGG-16 at 224x224, for each CUDA kernel library
 * (handwritten, cublas, cudnn),
 * timed with CUDA events on the backend's stream after a warm-up, median of
 * N repetitions. Prints one table row per layer and a per-model total
 * (each layer's time times its count in the model: convolutions only).
 *
 *   remat_bench_gpu_layers [--model resnet50|vgg16|all] [--batch N]
 *                          [--reps N] [--kernels handwritten,cublas,cudnn]
 *
 * (--engines is the older name of --kernels.) The hand-written library is
 * exact but slow (direct convolution summed in double): it runs min(reps, 3)
 * repetitions. Without a GPU it says so and exits 0. Settings: deterministic, precise (REMAT_DETERMINISTIC /
 * REMAT_FAST_MATH override, e.g. REMAT_FAST_MATH=1 to compare with a
 * framework's TF32 default). */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda.h"
#include "bench_median.h"
#include "layers.h"

typedef struct conv_shape {
    const char *model;
    const char *name;
    int cin, hw, cout, k, s, p;
    int count; /* occurrences in the model */
} conv_shape;

/* torchvision's ResNet-50 (v1.5: stride in the 3x3) and VGG-16, as models/resnet50.cfg and vgg16.cfg. */
static const conv_shape shapes[] = {
    {"resnet50", "conv1", 3, 224, 64, 7, 2, 3, 1},       {"resnet50", "l1.1x1a", 64, 56, 64, 1, 1, 0, 1},
    {"resnet50", "l1.3x3", 64, 56, 64, 3, 1, 1, 3},      {"resnet50", "l1.1x1b", 64, 56, 256, 1, 1, 0, 3},
    {"resnet50", "l1.down", 64, 56, 256, 1, 1, 0, 1},    {"resnet50", "l1.1x1a'", 256, 56, 64, 1, 1, 0, 2},
    {"resnet50", "l2.1x1a", 256, 56, 128, 1, 1, 0, 1},   {"resnet50", "l2.3x3s2", 128, 56, 128, 3, 2, 1, 1},
    {"resnet50", "l2.1x1b", 128, 28, 512, 1, 1, 0, 4},   {"resnet50", "l2.down", 256, 56, 512, 1, 2, 0, 1},
    {"resnet50", "l2.1x1a'", 512, 28, 128, 1, 1, 0, 3},  {"resnet50", "l2.3x3", 128, 28, 128, 3, 1, 1, 3},
    {"resnet50", "l3.1x1a", 512, 28, 256, 1, 1, 0, 1},   {"resnet50", "l3.3x3s2", 256, 28, 256, 3, 2, 1, 1},
    {"resnet50", "l3.1x1b", 256, 14, 1024, 1, 1, 0, 6},  {"resnet50", "l3.down", 512, 28, 1024, 1, 2, 0, 1},
    {"resnet50", "l3.1x1a'", 1024, 14, 256, 1, 1, 0, 5}, {"resnet50", "l3.3x3", 256, 14, 256, 3, 1, 1, 5},
    {"resnet50", "l4.1x1a", 1024, 14, 512, 1, 1, 0, 1},  {"resnet50", "l4.3x3s2", 512, 14, 512, 3, 2, 1, 1},
    {"resnet50", "l4.1x1b", 512, 7, 2048, 1, 1, 0, 3},   {"resnet50", "l4.down", 1024, 14, 2048, 1, 2, 0, 1},
    {"resnet50", "l4.1x1a'", 2048, 7, 512, 1, 1, 0, 2},  {"resnet50", "l4.3x3", 512, 7, 512, 3, 1, 1, 2},
    {"vgg16", "conv1_1", 3, 224, 64, 3, 1, 1, 1},        {"vgg16", "conv1_2", 64, 224, 64, 3, 1, 1, 1},
    {"vgg16", "conv2_1", 64, 112, 128, 3, 1, 1, 1},      {"vgg16", "conv2_2", 128, 112, 128, 3, 1, 1, 1},
    {"vgg16", "conv3_1", 128, 56, 256, 3, 1, 1, 1},      {"vgg16", "conv3_x", 256, 56, 256, 3, 1, 1, 2},
    {"vgg16", "conv4_1", 256, 28, 512, 3, 1, 1, 1},      {"vgg16", "conv4_x", 512, 28, 512, 3, 1, 1, 2},
    {"vgg16", "conv5_x", 512, 14, 512, 3, 1, 1, 3},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

#define CHECK(call)                                                                                                    \
    do {                                                                                                               \
        cudaError_t st_ = (call);                                                                                      \
        if (st_ != cudaSuccess) {                                                                                      \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(st_));                    \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

static __attribute__((noreturn)) void die(const char *what, const rm_err *e)
{
    fprintf(stderr, "remat_bench_gpu_layers: %s: %s\n", what, e->msg);
    exit(1);
}

/* Device buffer of n floats with small non-zero values (the same every run). */
static float *dev_random(size_t n, unsigned seed)
{
    float *h = malloc(n * sizeof *h), *d = NULL;
    if (!h) exit(1);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        h[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.2f + 0.01f;
    }
    CHECK(cudaMalloc((void **)&d, n * sizeof *d));
    CHECK(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice));
    free(h);
    return d;
}

/* Median forward and backward milliseconds of one shape in one kernel library. */
static void time_shape(float *fwd_ms, float *bwd_ms, unsigned long long *fallbacks, rm_backend *be,
                       const conv_shape *cs, int batch, int warmup, int reps)
{
    rm_err e = {0};
    rm_layer_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.kind = RM_LAYER_CONV2D, cfg.out_channels = cs->cout, cfg.kernel = rm_hw_square(cs->k),
    cfg.stride = rm_hw_square(cs->s), cfg.pad = rm_hw_square(cs->p);
    rm_shape xs = rm_shape_make(batch, cs->cin, cs->hw, cs->hw), ys, wsh, bsh;
    const rm_layer_desc *d = &rm_conv2d_desc;
    if (d->infer(&ys, &cfg, &xs, 1, &e)) die("infer", &e);
    d->param_shapes(&wsh, &bsh, &cfg, &xs, 1);
    size_t ws_f = rm_layer_workspace_bytes_device(d, be, &cfg, &xs, 1, ys, 0);
    size_t ws_b = rm_layer_workspace_bytes_device(d, be, &cfg, &xs, 1, ys, 1), ws_bytes = ws_f > ws_b ? ws_f : ws_b;
    float *x = dev_random(rm_shape_numel(xs), 1), *w = dev_random(rm_shape_numel(wsh), 2);
    float *dy = dev_random(rm_shape_numel(ys), 3), *y = NULL, *dx = NULL, *dw = NULL;
    void *ws = NULL;
    CHECK(cudaMalloc((void **)&y, rm_shape_numel(ys) * sizeof(float)));
    CHECK(cudaMalloc((void **)&dx, rm_shape_numel(xs) * sizeof(float)));
    CHECK(cudaMalloc((void **)&dw, rm_shape_numel(wsh) * sizeof(float)));
    CHECK(cudaMalloc(&ws, ws_bytes ? ws_bytes : 64));
    rm_layer_params prm;
    memset(&prm, 0, sizeof prm);
    prm.w = rm_tensor_make(wsh, w);
    prm.dw = rm_tensor_make(wsh, dw);
    rm_tensor tx = rm_tensor_make(xs, x), ty = rm_tensor_make(ys, y), tdy = rm_tensor_make(ys, dy);
    rm_tensor tdx = rm_tensor_make(xs, dx);
    rm_layer_call call;
    memset(&call, 0, sizeof call);
    call.cfg = &cfg, call.params = &prm, call.be = be, call.nin = 1, call.in[0] = &tx, call.out = &ty;
    call.training = 1, call.workspace = ws, call.workspace_size = ws_bytes;
    cudaStream_t st = (cudaStream_t)rm_backend_cuda_stream(be);
    cudaEvent_t t0, t1, t2;
    CHECK(cudaEventCreate(&t0));
    CHECK(cudaEventCreate(&t1));
    CHECK(cudaEventCreate(&t2));
    float *fw = malloc((size_t)reps * sizeof *fw), *bw = malloc((size_t)reps * sizeof *bw);
    unsigned long long fb0 = rm_backend_cuda_fallbacks(be);
    for (int r = -warmup; r < reps; r++) {
        CHECK(cudaEventRecord(t0, st));
        call.dout = NULL, call.din[0] = NULL;
        if (rm_layer_forward(d, &call, &e)) die("forward", &e);
        CHECK(cudaEventRecord(t1, st));
        call.dout = &tdy, call.din[0] = &tdx;
        if (rm_layer_backward(d, &call, &e)) die("backward", &e);
        CHECK(cudaEventRecord(t2, st));
        CHECK(cudaEventSynchronize(t2));
        if (r >= 0) {
            CHECK(cudaEventElapsedTime(&fw[r], t0, t1));
            CHECK(cudaEventElapsedTime(&bw[r], t1, t2));
        }
    }
    *fallbacks = rm_backend_cuda_fallbacks(be) - fb0;
    *fwd_ms = median(fw, reps);
    *bwd_ms = median(bw, reps);
    free(fw), free(bw);
    cudaEventDestroy(t0), cudaEventDestroy(t1), cudaEventDestroy(t2);
    cudaFree(x), cudaFree(w), cudaFree(dy), cudaFree(y), cudaFree(dx), cudaFree(dw), cudaFree(ws);
}

int main(int argc, char **argv)
{
    const char *model = "all", *libs = "handwritten,cublas,cudnn";
    int batch = 32, reps = 20, warmup = 3;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc)
            model = argv[++i];
        else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
            batch = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if ((!strcmp(argv[i], "--kernels") || !strcmp(argv[i], "--engines")) && i + 1 < argc)
            libs = argv[++i];
        else {
            fprintf(stderr,
                    "usage: %s [--model resnet50|vgg16|all] [--batch N] [--reps N] "
                    "[--kernels handwritten,cublas,cudnn]\n",
                    argv[0]);
            return 2;
        }
    }
    if (batch < 1 || reps < 1) {
        fprintf(stderr, "remat_bench_gpu_layers: --batch and --reps must be >= 1\n");
        return 2;
    }
    rm_err e = {0};
    rm_backend *be = NULL;
    int rc = rm_backend_cuda_create(&be, 0, &e);
    if (rc == RM_ERR_UNSUPPORTED) {
        printf("remat_bench_gpu_layers: no GPU: nothing timed (%s)\n", e.msg);
        return 0;
    }
    if (rc) die("cuda backend", &e);

    rm_cuda_kernel_lib lib[RM_CUDA_KERNELS_COUNT];
    int nlib = 0;
    char list[128];
    snprintf(list, sizeof list, "%s", libs);
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ",")) {
        if (rm_cuda_kernel_lib_parse(&lib[nlib], tok, &e)) die("--kernels", &e);
        if (lib[nlib] == RM_CUDA_KERNELS_CUDNN && !rm_backend_cuda_has_cudnn()) {
            fprintf(stderr, "remat_bench_gpu_layers: this build has no cuDNN: cudnn skipped\n");
            continue;
        }
        if (nlib < RM_CUDA_KERNELS_COUNT) nlib++;
    }
    struct cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, 0));
    printf("# %s, batch %d, median of %d (handwritten: %d) after %d warm-up, deterministic %d, fast_math %d\n",
           prop.name, batch, reps, reps < 3 ? reps : 3, warmup, rm_backend_cuda_deterministic(be),
           rm_backend_cuda_fast_math(be));
    printf("%-9s %-10s %-22s", "model", "layer", "shape (cin>cout k s @hw)");
    for (int k = 0; k < nlib; k++)
        printf(" %11s_fwd %11s_bwd", rm_cuda_kernel_lib_name(lib[k]), rm_cuda_kernel_lib_name(lib[k]));
    printf("   (ms)\n");
    double total[2][RM_CUDA_KERNELS_COUNT][2];
    memset(total, 0, sizeof total);
    const char *models[2] = {"resnet50", "vgg16"};
    for (size_t i = 0; i < NSHAPES; i++) {
        const conv_shape *cs = &shapes[i];
        if (strcmp(model, "all") && strcmp(model, cs->model)) continue;
        char shape[48];
        snprintf(shape, sizeof shape, "%d>%d k%d s%d @%d x%d", cs->cin, cs->cout, cs->k, cs->s, cs->hw, cs->count);
        printf("%-9s %-10s %-22s", cs->model, cs->name, shape);
        for (int k = 0; k < nlib; k++) {
            if (rm_backend_cuda_set_kernels(be, lib[k], &e)) die("set kernel library", &e);
            float f, b;
            unsigned long long fb;
            int n = lib[k] == RM_CUDA_KERNELS_HANDWRITTEN && reps > 3 ? 3 : reps;
            time_shape(&f, &b, &fb, be, cs, batch, lib[k] == RM_CUDA_KERNELS_HANDWRITTEN ? 1 : warmup, n);
            printf(" %15.3f %15.3f%s", f, b, fb ? "*" : "");
            int m = strcmp(cs->model, "resnet50") ? 1 : 0;
            total[m][k][0] += (double)cs->count * f, total[m][k][1] += (double)cs->count * b;
        }
        printf("\n");
        fflush(stdout);
    }
    for (int m = 0; m < 2; m++) {
        if (strcmp(model, "all") && strcmp(model, models[m])) continue;
        printf("%-9s %-10s %-22s", models[m], "TOTAL", "(all convolutions)");
        for (int k = 0; k < nlib; k++) printf(" %15.3f %15.3f", total[m][k][0], total[m][k][1]);
        printf("\n");
    }
    printf("# *: some calls fell back to the hand-written kernels (cuDNN rejected the shape or no algorithm fit)\n");
    rm_backend_free(be);
    return 0;
}
