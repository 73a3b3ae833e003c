/* Which output a convolution tap reaches, for the backward passes that
 * gather into each input element (conv2d.cu, dwconv2d.c, dwconv2d.cu):
 * written once, for the host and the device. */
#ifndef REMAT_CONV_TAPS_H
#define REMAT_CONV_TAPS_H

#ifdef __CUDACC__
#define RM_HOST_DEVICE __host__ __device__
#else
#define RM_HOST_DEVICE
#endif

/* The output row (column) whose tap k reads input row (column) i, with
 * padding p and stride s, among [0, nout); -1 where no output reads it. */
static RM_HOST_DEVICE inline int rm_conv_tap_output(int i, int k, int p, int s, int nout)
{
    int t = i + p - k;
    if (t < 0 || t % s) return -1;
    int o = t / s;
    return o < nout ? o : -1;
}

#endif
