/* Helpers shared by the CUDA layer kernels (see cuda_common.cuh). */
#include "cuda_common.cuh"

cudaStream_t rm_cuda_stream(const rm_backend *be)
{
    return (cudaStream_t)rm_backend_cuda_stream(be);
}

int rm_cuda_workspace(void **ws, void **owned, const rm_layer_call *call, size_t bytes, const char *who, rm_err *e)
{
    *ws = *owned = NULL;
    if (bytes == 0) return RM_OK;
    if (call->workspace) {
        if (call->workspace_size < bytes)
            return rm_errorf(e, RM_ERR_INVALID, "%s: workspace of %zu bytes given, %zu needed", who,
                             call->workspace_size, bytes);
        *ws = call->workspace;
        return RM_OK;
    }
    cudaError_t st = cudaMallocAsync(owned, bytes, rm_cuda_stream(call->be));
    if (st != cudaSuccess)
        return rm_errorf(e, RM_ERR_NOMEM, "%s: no device memory for a %zu-byte workspace: %s", who, bytes,
                         cudaGetErrorString(st));
    *ws = *owned;
    return RM_OK;
}

int rm_cuda_workspace_release(void *owned, const rm_layer_call *call, rm_err *e)
{
    if (owned) RM_CUDA_CHECK(cudaFreeAsync(owned, rm_cuda_stream(call->be)), e, "workspace release");
    return RM_OK;
}

/* One block: each thread finds the first bad label of its strided slice, then
 * a fixed tree takes the minimum. */
__global__ void loss_labels_check_kernel(unsigned long long *first_bad, const int32_t *labels, size_t count, int k)
{
    __shared__ unsigned long long sh[RM_THREADS];
    unsigned long long mine = ~0ULL;
    for (size_t i = threadIdx.x; i < count; i += RM_THREADS)
        if (labels[i] < 0 || labels[i] >= k) {
            mine = i;
            break;
        }
    sh[threadIdx.x] = mine;
    __syncthreads();
    for (unsigned s = RM_THREADS / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s && sh[threadIdx.x + s] < sh[threadIdx.x]) sh[threadIdx.x] = sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) *first_bad = sh[0];
}

int rm_cuda_check_labels(long long *bad, int *bad_label, const int32_t *labels, size_t count, int k,
                         unsigned long long *flag, cudaStream_t stream, rm_err *e)
{
    *bad = -1;
    *bad_label = 0;
    loss_labels_check_kernel<<<1, RM_THREADS, 0, stream>>>(flag, labels, count, k);
    RM_CUDA_LAUNCHED(e, "loss_labels_check_kernel");
    unsigned long long first = 0;
    RM_CUDA_CHECK(cudaMemcpyAsync(&first, flag, sizeof first, cudaMemcpyDeviceToHost, stream), e, "labels flag copy");
    RM_CUDA_CHECK(cudaStreamSynchronize(stream), e, "labels flag sync");
    if (first == ~0ULL) return RM_OK;
    int32_t label = 0;
    RM_CUDA_CHECK(cudaMemcpyAsync(&label, labels + first, sizeof label, cudaMemcpyDeviceToHost, stream), e,
                  "bad label copy");
    RM_CUDA_CHECK(cudaStreamSynchronize(stream), e, "bad label sync");
    *bad = (long long)first;
    *bad_label = label;
    return RM_OK;
}
