/* cuBLAS opened on first use (cublas_lazy.c): the build with the CUDA
 * toolkit links no libcublas. */
#ifndef REMAT_CUBLAS_LAZY_H
#define REMAT_CUBLAS_LAZY_H

#ifdef __cplusplus
extern "C" {
#endif

#include "error.h"

/* Opens cuBLAS and finds the functions remat calls, once per process;
 * RM_ERR_DEVICE naming the library and the loader's reason when it cannot.
 * Until it has succeeded every cuBLAS call answers
 * CUBLAS_STATUS_NOT_INITIALIZED. */
int rm_cublas_load(rm_err *e);

#ifdef __cplusplus
}
#endif

#endif
