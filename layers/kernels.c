/* The layers' kernel registry: for every layer, the kernels each backend
 * runs besides the plain-C reference in the layer's own file, by the
 * backend registry's id (engine/backend.h). The kernels live in the
 * backend's folder (layers/cpu/, layers/cuda/); this table is the one place
 * that names them, so a layer file includes no backend's header, and a new
 * backend adds its column here (and its kernels in its folder). An entry
 * left out is all NULL: on the CPU the reference runs, on a device the
 * backend answers RM_ERR_UNSUPPORTED. */
#include "layer_cpu.h"
#include "layer_cuda.h"
#include "layers.h"

/* Layer l's CUDA kernels: the hand-written forward and backward, their
 * workspace bound (ws) and the per-library choice (lib), either NULL. */
#define CUDA(l, ws, lib)                                                                                               \
    [RM_BACKEND_CUDA] = {RM_CUDA_FN(rm_##l##_forward_cuda), RM_CUDA_FN(rm_##l##_backward_cuda), RM_CUDA_FN(ws),        \
                         RM_CUDA_FN(lib)}
/* Layer l's CPU kernel libraries beyond the reference (the fast one). */
#define CPU_LIBRARIES(l) [RM_BACKEND_CPU] = {NULL, NULL, NULL, rm_##l##_cpu_kernels}

const rm_layer_backend_kernels rm_conv2d_kernels[RM_BACKEND_KIND_COUNT] = {
    CPU_LIBRARIES(conv2d),
    CUDA(conv2d, rm_conv2d_workspace_cuda, rm_conv2d_cuda_kernels),
};
const rm_layer_backend_kernels rm_batchnorm2d_kernels[RM_BACKEND_KIND_COUNT] = {
    CUDA(batchnorm2d, rm_batchnorm2d_workspace_cuda, rm_batchnorm2d_cuda_kernels),
};
const rm_layer_backend_kernels rm_relu_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(relu, NULL, NULL)};
const rm_layer_backend_kernels rm_maxpool2d_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(maxpool2d, NULL, NULL)};
const rm_layer_backend_kernels rm_avgpool2d_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(avgpool2d, NULL, NULL)};
const rm_layer_backend_kernels rm_global_avgpool_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(global_avgpool, NULL, NULL)};
const rm_layer_backend_kernels rm_linear_kernels[RM_BACKEND_KIND_COUNT] = {
    CPU_LIBRARIES(linear),
    CUDA(linear, NULL, rm_linear_cuda_kernels),
};
const rm_layer_backend_kernels rm_add_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(add, NULL, NULL)};
const rm_layer_backend_kernels rm_concat_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(concat, NULL, NULL)};
const rm_layer_backend_kernels rm_upsample2x_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(upsample2x, NULL, NULL)};
const rm_layer_backend_kernels rm_conv_transpose2x2_kernels[RM_BACKEND_KIND_COUNT] = {
    CPU_LIBRARIES(conv_transpose2x2),
    CUDA(conv_transpose2x2, rm_conv_transpose2x2_workspace_cuda, rm_conv_transpose2x2_cuda_kernels),
};
const rm_layer_backend_kernels rm_dropout_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(dropout, NULL, NULL)};
const rm_layer_backend_kernels rm_flatten_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(flatten, NULL, NULL)};
const rm_layer_backend_kernels rm_softmax_xent_kernels[RM_BACKEND_KIND_COUNT] = {
    CUDA(softmax_xent, rm_softmax_xent_workspace_cuda, NULL),
};
const rm_layer_backend_kernels rm_pixel_softmax_xent_kernels[RM_BACKEND_KIND_COUNT] = {
    CUDA(pixel_softmax_xent, rm_pixel_softmax_xent_workspace_cuda, NULL),
};
const rm_layer_backend_kernels rm_dwconv2d_kernels[RM_BACKEND_KIND_COUNT] = {
    CPU_LIBRARIES(dwconv2d),
    CUDA(dwconv2d, NULL, NULL),
};
const rm_layer_backend_kernels rm_activation_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(activation, NULL, NULL)};
const rm_layer_backend_kernels rm_scale_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(scale, NULL, NULL)};
const rm_layer_backend_kernels rm_channel_layout_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(channel_layout, NULL, NULL)};
const rm_layer_backend_kernels rm_layernorm_kernels[RM_BACKEND_KIND_COUNT] = {
    CUDA(layernorm, rm_layernorm_workspace_cuda, NULL)};
const rm_layer_backend_kernels rm_attention_kernels[RM_BACKEND_KIND_COUNT] = {
    CPU_LIBRARIES(attention),
    CUDA(attention, rm_attention_workspace_cuda, NULL),
};
const rm_layer_backend_kernels rm_tokens_kernels[RM_BACKEND_KIND_COUNT] = {CUDA(tokens, NULL, NULL)};
