/* The layers' kernels in the CPU backend's kernel libraries beyond the
 * reference (defined in layers/cpu/<name>_fast.c), as cuda/layer_cuda.h has
 * the CUDA ones. Included by the layers' kernel registry (layers/kernels.c). */
#ifndef REMAT_LAYER_CPU_H
#define REMAT_LAYER_CPU_H

#include "layer.h"

/* The kernels of CPU kernel library lib (rm_cpu_kernel_lib, backend_cpu.h)
 * of the layers whose fast kernels are not the reference's: the one place
 * each choice is made, called once per backend and library (the CPU
 * backend's kernel table). All NULL for the reference library (the layer's
 * own kernels run). Their workspace is that library's exact need (be may be
 * NULL); the CPU's bound is the largest over the libraries. */
rm_layer_kernels rm_conv2d_cpu_kernels(int lib);
rm_layer_kernels rm_linear_cpu_kernels(int lib);
rm_layer_kernels rm_conv_transpose2x2_cpu_kernels(int lib);
rm_layer_kernels rm_dwconv2d_cpu_kernels(int lib);
rm_layer_kernels rm_attention_cpu_kernels(int lib);

#endif
