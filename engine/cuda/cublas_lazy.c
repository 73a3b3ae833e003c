/* cuBLAS, opened when the CUDA backend first creates its handle rather than
 * when a program starts (the build with the CUDA toolkit; the emulator has
 * its own cuBLAS, tests/cuda_emu).
 *
 * Why: libcublas brings libcublasLt (about 540 MB), and loading the two
 * costs every process about 0.17 CPU-s (mapping, relocations and their
 * initialisers: an empty program linked with them, against one without),
 * GPU or none. Every `remat` command paid it, and every test of the CPU
 * suite: Criterion starts a process per test (about 130 of the suite's 330
 * CPU-s in CI). cuDNN, NCCL and the runtime cost a few milliseconds and stay
 * linked.
 *
 * How: remat defines the few cuBLAS functions the backend calls, with the
 * header's names and types; each calls the library's own, which
 * rm_cublas_load finds with dlsym. Nothing may link libcublas as well (the
 * linker would take these silently). */
#include "cublas_lazy.h"

#include <cublas_v2.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

/* The cuBLAS functions remat calls: name, parameters, arguments. */
#define RM_CUBLAS_FUNCS(X)                                                                                             \
    X(cublasCreate_v2, (cublasHandle_t * h), (h))                                                                      \
    X(cublasDestroy_v2, (cublasHandle_t h), (h))                                                                       \
    X(cublasSetStream_v2, (cublasHandle_t h, cudaStream_t s), (h, s))                                                  \
    X(cublasSetWorkspace_v2, (cublasHandle_t h, void *ws, size_t bytes), (h, ws, bytes))                               \
    X(cublasSetPointerMode_v2, (cublasHandle_t h, cublasPointerMode_t mode), (h, mode))                                \
    X(cublasSetAtomicsMode, (cublasHandle_t h, cublasAtomicsMode_t mode), (h, mode))                                   \
    X(cublasSetMathMode, (cublasHandle_t h, cublasMath_t mode), (h, mode))                                             \
    X(cublasSgemm_v2,                                                                                                  \
      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *alpha,          \
       const float *a, int lda, const float *b, int ldb, const float *beta, float *c, int ldc),                        \
      (h, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc))                                                       \
    X(cublasSgemmStridedBatched,                                                                                       \
      (cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, const float *alpha,          \
       const float *a, int lda, long long sa, const float *b, int ldb, long long sb, const float *beta, float *c,      \
       int ldc, long long sc, int count),                                                                              \
      (h, ta, tb, m, n, k, alpha, a, lda, sa, b, ldb, sb, beta, c, ldc, sc, count))

#define POINTER(name, params, args) static cublasStatus_t(*real_##name) params;
RM_CUBLAS_FUNCS(POINTER)
#undef POINTER

/* Until loaded, each call fails as cuBLAS does before its initialisation.
 * Hidden: no binary exports them, so no library can bind to them. */
#define STAND_IN(name, params, args)                                                                                   \
    __attribute__((visibility("hidden"))) cublasStatus_t CUBLASWINAPI name params                                      \
    {                                                                                                                  \
        return real_##name ? real_##name args : CUBLAS_STATUS_NOT_INITIALIZED;                                         \
    }
RM_CUBLAS_FUNCS(STAND_IN)
#undef STAND_IN

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[768]; /* why loading failed; empty when it did not */

static void load(void)
{
    /* The soname of the toolkit built against, then its full path there. */
    static const char *const paths[] = {REMAT_CUBLAS_SONAME, REMAT_CUBLAS_PATH};
    char why[2][320];
    void *lib = NULL;
    for (size_t i = 0; i < 2 && !lib; i++) {
        lib = dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);
        const char *msg = lib ? "" : dlerror();
        snprintf(why[i], sizeof why[i], "%s", msg ? msg : "unknown error");
    }
    if (!lib) {
        snprintf(failure, sizeof failure, "cannot open %s (%s), nor %s (%s)", paths[0], why[0], paths[1], why[1]);
        return;
    }
    failure[0] = 0;
    /* A function pointer from dlsym's void *, as POSIX allows. */
#define LOOKUP(name, params, args)                                                                                     \
    if (!failure[0] && !(real_##name = (cublasStatus_t(*) params)dlsym(lib, #name)))                                   \
        snprintf(failure, sizeof failure, "libcublas has no %s", #name);
    RM_CUBLAS_FUNCS(LOOKUP)
#undef LOOKUP
    if (!failure[0]) return;
#define FORGET(name, params, args) real_##name = NULL;
    RM_CUBLAS_FUNCS(FORGET)
#undef FORGET
}

int rm_cublas_load(rm_err *e)
{
    pthread_once(&once, load);
    return failure[0] ? rm_errorf(e, RM_ERR_DEVICE, "cublas: %s", failure) : RM_OK;
}
