/* What every layers/<name>.cu shares: error checks, the backend's stream,
 * device scratch, launch geometry and the deterministic block reduction.
 *
 * Determinism is the only mode: no kernel uses atomics. Every output element
 * is computed by one thread, or by one block whose threads take fixed strided
 * slices and are summed by a fixed tree (rm_block_sum), so the same shapes
 * give the same bits on every run and every recomputation. Sums accumulate in
 * double, like the CPU reference, so the two agree to float rounding. */
#ifndef REMAT_CUDA_COMMON_CUH
#define REMAT_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>

#include "backend_cuda.cuh" /* RM_CUDA_CHECK, RM_CUDA_FOR, RM_THREADS, rm_cuda_blocks */

extern "C" {
#include "layer_cuda.h"
#include "layers.h"
}

/* The sum of v over the block, in a fixed tree order: identical bits for
 * identical inputs. Every thread of the block must call it; all get the sum. */
__device__ inline double rm_block_sum(double v)
{
    __shared__ double sh[RM_THREADS];
    sh[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = RM_THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    double r = sh[0];
    __syncthreads();
    return r;
}

/* The stream every kernel of call->be runs on. */
cudaStream_t rm_cuda_stream(const rm_backend *be);

/* Device scratch of one call: call->workspace when given (RM_ERR_INVALID when
 * smaller than bytes), else a stream-ordered allocation returned in *owned,
 * to be handed back with rm_cuda_workspace_release after the last kernel
 * using it has been queued. */
int rm_cuda_workspace(void **ws, void **owned, const rm_layer_call *call, size_t bytes, const char *who, rm_err *e);
int rm_cuda_workspace_release(void *owned, const rm_layer_call *call, rm_err *e);

/* Validates count device labels against [0, k) before a loss writes anything:
 * a kernel finds the first bad index into the 8-byte device flag, which is
 * copied back (this synchronises the stream). *bad is -1 when all are valid,
 * else that index, with its label in *bad_label. */
int rm_cuda_check_labels(long long *bad, int *bad_label, const int32_t *labels, size_t count, int k,
                         unsigned long long *flag, cudaStream_t stream, rm_err *e);

#endif
