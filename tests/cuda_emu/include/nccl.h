/* NCCL as the CPU emulator gives it (tests/cuda_emu/nccl.cpp): the subset
 * remat's nccl communication backend (engine/cuda/comm_nccl.cu) calls, with
 * the toolkit header's names and values, so the same source compiles against
 * either.
 *
 * The ranks of an emulated communicator are processes on this machine (the
 * GPU suite forks them): ncclGetUniqueId names a shared-memory segment, and
 * every collective goes through it. Like the emulated streams, a collective
 * completes before it returns; every rank must call it, as with NCCL. What it
 * checks that a host stand-in would not: every buffer must lie in device
 * memory (a host pointer aborts the run with a message), the ranks must call
 * the same collective with the same count, and a rank that never arrives
 * (it died, or called something else) makes the others fail with
 * ncclRemoteError after REMAT_CUDA_EMU_NCCL_TIMEOUT seconds (default 30)
 * instead of hanging. Sums add the ranks' values in rank order, so every
 * rank gets the same bits (real NCCL's order depends on its algorithm). */
#ifndef REMAT_CUDA_EMU_NCCL_H
#define REMAT_CUDA_EMU_NCCL_H

#include "cuda_runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
typedef struct ncclComm *ncclComm_t;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4 } ncclRedOp_t;
typedef enum {
    ncclInt8 = 0,
    ncclChar = 0,
    ncclFloat32 = 7,
    ncclFloat = 7,
    ncclFloat64 = 8,
    ncclDouble = 8
} ncclDataType_t;

ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclCommAbort(ncclComm_t comm);
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError);
const char *ncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);
/* Only ncclSum, of ncclFloat or ncclDouble (ncclChar too for broadcast). */
ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif
