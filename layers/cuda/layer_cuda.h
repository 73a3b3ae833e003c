/* The CUDA entry points of every layer (defined in layers/cuda/<name>.cu,
 * built only with CUDA). kernels.c references them through RM_CUDA_FN, so a build
 * without CUDA never names them. Included by the layers' kernel registry
 * (layers/kernels.c). */
#ifndef REMAT_LAYER_CUDA_H
#define REMAT_LAYER_CUDA_H

#include "layer.h"

#define RM_CUDA_LAYER_DECL(layer)                                                                                      \
    int rm_##layer##_forward_cuda(const rm_layer_call *call, rm_err *e);                                               \
    int rm_##layer##_backward_cuda(const rm_layer_call *call, rm_err *e)

RM_CUDA_LAYER_DECL(conv2d);
RM_CUDA_LAYER_DECL(batchnorm2d);
RM_CUDA_LAYER_DECL(relu);
RM_CUDA_LAYER_DECL(maxpool2d);
RM_CUDA_LAYER_DECL(avgpool2d);
RM_CUDA_LAYER_DECL(global_avgpool);
RM_CUDA_LAYER_DECL(linear);
RM_CUDA_LAYER_DECL(add);
RM_CUDA_LAYER_DECL(concat);
RM_CUDA_LAYER_DECL(upsample2x);
RM_CUDA_LAYER_DECL(conv_transpose2x2);
RM_CUDA_LAYER_DECL(dropout);
RM_CUDA_LAYER_DECL(flatten);
RM_CUDA_LAYER_DECL(softmax_xent);
RM_CUDA_LAYER_DECL(pixel_softmax_xent);
RM_CUDA_LAYER_DECL(dwconv2d);
RM_CUDA_LAYER_DECL(activation); /* every activation of layers/activation.c, by call->cfg->kind */
RM_CUDA_LAYER_DECL(scale);
RM_CUDA_LAYER_DECL(channel_layout);
RM_CUDA_LAYER_DECL(layernorm);
RM_CUDA_LAYER_DECL(attention);
RM_CUDA_LAYER_DECL(tokens); /* tokens and token, by call->cfg->kind */

/* The CPU reference's argument checks, which the CUDA batchnorm shares
 * (layers/batchnorm2d.c). */
int rm_batchnorm2d_check_call(const rm_layer_call *call, rm_shape s, const char *what, rm_err *e);

/* Device scratch of the layers that need some (their CUDA workspace bound, layers/kernels.c). */
size_t rm_layernorm_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward);
size_t rm_attention_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward);
size_t rm_batchnorm2d_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                     int backward);
size_t rm_softmax_xent_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                      int backward);
size_t rm_pixel_softmax_xent_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                            int backward);

/* The largest im2col / column buffer of the cuBLAS convolution paths, 64 MiB
 * by default: batches of images, or strips of one image's pixels, are sized
 * to fit it. Settable (0 restores the default) so that tests can send small
 * layers down the chunked paths; set it before any workspace is sized, never
 * while a plan made under another value is in use. */
size_t rm_cuda_gemm_ws_cap(void);
void rm_cuda_set_gemm_ws_cap(size_t bytes);

/* The convolutions' device scratch bound (their CUDA workspace bound): it
 * knows no backend, so every kernel library fits in it (cuda_kernel_libs.cuh). */
size_t rm_conv2d_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out, int backward);
size_t rm_conv_transpose2x2_workspace_cuda(const rm_layer_config *cfg, const rm_shape *in, int nin, rm_shape out,
                                           int backward);

/* The kernels of each kernel library for the layers that have more than the
 * hand-written ones (rm_layer_backend_kernels.library): the one place each layer's choice
 * is made, called by the CUDA backend once per library. */
rm_layer_kernels rm_conv2d_cuda_kernels(int lib);
rm_layer_kernels rm_conv_transpose2x2_cuda_kernels(int lib);
rm_layer_kernels rm_linear_cuda_kernels(int lib);
rm_layer_kernels rm_batchnorm2d_cuda_kernels(int lib);

#undef RM_CUDA_LAYER_DECL

#endif
