/* The bias gradient of the convolutions (conv2d.cu, dwconv2d.cu), written
 * once: a kernel, so only the files that launch it include this. */
#ifndef REMAT_CHANNEL_SUM_CUH
#define REMAT_CHANNEL_SUM_CUH

#include "cuda_common.cuh"

/* One block per channel: db[c] = sum over images and pixels of dy[n][c][..]
 * (the bias gradient of conv2d and dwconv2d), by rm_block_sum's fixed tree. */
static __global__ void rm_channel_sum_kernel(float *db, const float *dy, int n_img, int channels, size_t pdim)
{
    size_t c = blockIdx.x, m = (size_t)n_img * pdim;
    double acc = 0.0;
    for (size_t j = threadIdx.x; j < m; j += RM_THREADS) acc += dy[(j / pdim * channels + c) * pdim + j % pdim];
    acc = rm_block_sum(acc);
    if (threadIdx.x == 0) db[c] = (float)acc;
}

#endif
