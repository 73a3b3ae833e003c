/* The CPU emulator's cuBLAS (include/cublas_v2.h): column-major SGEMM,
 * C = alpha op(A) op(B) + beta C, op(A) m x k, op(B) k x n, C m x n, with
 * element (i, j) of an ld-strided column-major matrix at [i + j * ld]. Sums
 * run in double (cuBLAS sums in float; the kernel libraries' tests allow for it). */
#include <cublas_v2.h>

#include <cstdio>

struct rm_emu_cublas {
    int magic;
    cublasPointerMode_t pointer_mode;
};
static const int MAGIC = 0xb1a5;

cublasStatus_t cublasCreate(cublasHandle_t *handle)
{
    *handle = new rm_emu_cublas{MAGIC, CUBLAS_POINTER_MODE_HOST};
    return CUBLAS_STATUS_SUCCESS;
}

static bool live(cublasHandle_t h)
{
    return h && h->magic == MAGIC;
}

cublasStatus_t cublasDestroy(cublasHandle_t handle)
{
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    handle->magic = 0;
    delete handle;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetStream(cublasHandle_t handle, cudaStream_t)
{
    return live(handle) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t handle, void *workspace, size_t bytes)
{
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (bytes && workspace) rm_emu_check_device_range(workspace, bytes, "cublasSetWorkspace");
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode(cublasHandle_t handle, cublasPointerMode_t mode)
{
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
    handle->pointer_mode = mode;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetAtomicsMode(cublasHandle_t handle, cublasAtomicsMode_t)
{
    return live(handle) ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_NOT_INITIALIZED;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode)
{
    if (!live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
    int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
    return base >= CUBLAS_DEFAULT_MATH && base <= CUBLAS_TF32_TENSOR_OP_MATH ? CUBLAS_STATUS_SUCCESS
                                                                             : CUBLAS_STATUS_INVALID_VALUE;
}

/* The bytes an ld-strided column-major rows x cols matrix spans. */
static size_t span(int rows, int cols, int ld)
{
    return rows && cols ? ((size_t)(cols - 1) * ld + rows) * sizeof(float) : 0;
}

cublasStatus_t cublasSgemmStridedBatched(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n,
                                         int k, const float *alpha, const float *A, int lda, long long sa,
                                         const float *B, int ldb, long long sb, const float *beta, float *C, int ldc,
                                         long long sc, int batch)
{
    if (!live(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
    /* cuBLAS's own checks (its documentation's "Error Values"). */
    bool ta_t = ta != CUBLAS_OP_N, tb_t = tb != CUBLAS_OP_N;
    int a_rows = ta_t ? k : m, a_cols = ta_t ? m : k, b_rows = tb_t ? n : k, b_cols = tb_t ? k : n;
    if (m < 0 || n < 0 || k < 0 || batch < 0 || lda < (a_rows > 1 ? a_rows : 1) || ldb < (b_rows > 1 ? b_rows : 1) ||
        ldc < (m > 1 ? m : 1) || (ta != CUBLAS_OP_N && ta != CUBLAS_OP_T) || (tb != CUBLAS_OP_N && tb != CUBLAS_OP_T))
        return CUBLAS_STATUS_INVALID_VALUE;
    if (h->pointer_mode != CUBLAS_POINTER_MODE_HOST) return CUBLAS_STATUS_NOT_SUPPORTED;
    if (!m || !n || !batch) return CUBLAS_STATUS_SUCCESS;
    const double al = *alpha, be = *beta;
    for (int b = 0; b < batch; b++) {
        const float *a = A + b * sa, *bb = B + b * sb;
        float *c = C + b * sc;
        if (k && al != 0.0) {
            rm_emu_check_device_range(a, span(a_rows, a_cols, lda), "cublasSgemm A");
            rm_emu_check_device_range(bb, span(b_rows, b_cols, ldb), "cublasSgemm B");
        }
        rm_emu_check_device_range(c, span(m, n, ldc), "cublasSgemm C");
        for (int j = 0; j < n; j++)
            for (int i = 0; i < m; i++) {
                double acc = 0.0;
                if (al != 0.0)
                    for (int l = 0; l < k; l++) {
                        double av = ta_t ? a[l + (size_t)i * lda] : a[i + (size_t)l * lda];
                        double bv = tb_t ? bb[j + (size_t)l * ldb] : bb[l + (size_t)j * ldb];
                        acc += av * bv;
                    }
                float &out = c[i + (size_t)j * ldc];
                /* beta == 0: C is not read, so NaN garbage there does not leak in. */
                out = (float)(al * acc + (be != 0.0 ? be * out : 0.0));
            }
    }
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                           const float *alpha, const float *A, int lda, const float *B, int ldb, const float *beta,
                           float *C, int ldc)
{
    return cublasSgemmStridedBatched(h, ta, tb, m, n, k, alpha, A, lda, 0, B, ldb, 0, beta, C, ldc, 0, 1);
}
