/* The CUDA backend's own settings and queries, C-callable (the layers' CUDA
 * kernels, layers/cuda/, see its handles through backend_cuda.cuh).
 * Generic code never needs these: it calls the backend's ops and the
 * registry (backend.h), which answer the device questions (fixed bytes,
 * free memory, kernel library); the GPU suite and the GPU benchmarks use
 * them. In a build without CUDA (backend_cuda_none.c) no CUDA backend
 * exists; creation and the setters answer RM_ERR_UNSUPPORTED and the
 * queries their defaults. */
#ifndef REMAT_BACKEND_CUDA_H
#define REMAT_BACKEND_CUDA_H

#include <stddef.h>

#include "backend.h"

/* A CUDA backend on GPU device with the environment's settings, or with
 * o's (NULL: the environment's; an option wins over its variable, which is
 * then not read). RM_ERR_UNSUPPORTED when built without CUDA or with no
 * device. Device -1 (the registry's): this process's, by its rank on this
 * machine under an MPI launcher (launcher.h), modulo the GPUs it sees; 0
 * otherwise. */
int rm_backend_cuda_create(rm_backend **out, int device, rm_err *e);
int rm_backend_cuda_create_with(rm_backend **out, int device, const rm_backend_options *o, rm_err *e);

/* The cudaStream_t every kernel of a CUDA backend runs on (as void *, so C
 * callers need no CUDA headers); NULL for other backends. */
void *rm_backend_cuda_stream(const rm_backend *be);
/* Kernel libraries of the CUDA backend:
 *   handwritten  the hand-written kernels alone (exact: double accumulation);
 *   cublas       hand-written kernels, plus cuBLAS SGEMM for linear and for
 *                convolution (im2col / col2im around the product);
 *   cudnn        cuDNN convolution (conv, conv_transpose2x2) and batch norm,
 *                cuBLAS for linear, hand-written for the rest.
 * Each layer's kernels for the library are chosen once per backend and
 * library (the backend's kernel table), never per call. A configuration a
 * library rejects at run time runs on the hand-written kernels
 * (rm_backend_cuda_fallbacks counts those calls). Default: cudnn when this
 * build has cuDNN, else cublas; the option --kernels (rm_backend_options),
 * else the environment variable REMAT_KERNELS (REMAT_ENGINE, its older
 * name, is an alias) = handwritten|cublas|cudnn, chooses another when a
 * backend is created. */
typedef enum rm_cuda_kernel_lib {
    RM_CUDA_KERNELS_HANDWRITTEN = 0,
    RM_CUDA_KERNELS_CUBLAS,
    RM_CUDA_KERNELS_CUDNN,
    RM_CUDA_KERNELS_COUNT
} rm_cuda_kernel_lib;

/* Names of the kernel libraries (cuda_info.c, in every build: the CLI and
 * the benchmarks parse them). */
const char *rm_cuda_kernel_lib_name(rm_cuda_kernel_lib lib);
/* "handwritten", "cublas" or "cudnn"; RM_ERR_INVALID naming the value otherwise. */
int rm_cuda_kernel_lib_parse(rm_cuda_kernel_lib *out, const char *name, rm_err *e);
/* 1 when this build has the cudnn kernel library (cudnn.h and libcudnn were found). */
int rm_backend_cuda_has_cudnn(void);

/* Kernel library and numerics of a CUDA backend. Change them between steps,
 * never inside one: cached algorithm choices and the kernel table are
 * dropped. set_* answer RM_ERR_INVALID for a non-CUDA backend,
 * RM_ERR_UNSUPPORTED for cudnn in a build without cuDNN.
 *   deterministic (default 1; REMAT_DETERMINISTIC=0|1): every kernel of every
 *     library gives the same bits for the same inputs: cuDNN algorithms are
 *     restricted to CUDNN_DETERMINISTIC ones, cuBLAS runs with
 *     CUBLAS_ATOMICS_NOT_ALLOWED on one stream and a fixed workspace.
 *   fast_math (default 0; REMAT_FAST_MATH=0|1): allows TF32 tensor-core math
 *     in cuBLAS and cuDNN and cuDNN's Winograd and FFT algorithms. Off, every
 *     library stays within float32 rounding of the CPU reference. */
int rm_backend_cuda_set_kernels(rm_backend *be, rm_cuda_kernel_lib lib, rm_err *e);
rm_cuda_kernel_lib rm_backend_cuda_kernels(const rm_backend *be);
int rm_backend_cuda_set_deterministic(rm_backend *be, int on, rm_err *e);
int rm_backend_cuda_deterministic(const rm_backend *be);
int rm_backend_cuda_set_fast_math(rm_backend *be, int on, rm_err *e);
int rm_backend_cuda_fast_math(const rm_backend *be);
/* Layer calls that fell back from the chosen library to the hand-written
 * kernels (cuDNN rejected the configuration, or no algorithm fit the
 * workspace) since the backend was created. */
unsigned long long rm_backend_cuda_fallbacks(const rm_backend *be);

#endif
