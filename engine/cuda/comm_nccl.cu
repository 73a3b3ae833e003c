/* The nccl communication backend (engine/comm.h): sums of a CUDA backend's
 * device buffers over the processes of a job, GPU to GPU, with no copy
 * through host memory. The CUDA backend makes it (its device_comm op, over
 * the job's mpi communicator, which carries NCCL's unique id from rank 0 and
 * ends the job on abort).
 *
 * A reduction runs on a stream of its own, so that a bucket's sum overlaps
 * the backward kernels queued after it: it first waits (an event) for the
 * work queued before it on the backend's stream, which wrote the bucket, and
 * finishing it makes the backend's stream wait (another event) before
 * anything queued later, the optimizer included, reads the sum. Nothing
 * blocks the host.
 *
 * This has never run on a GPU: it compiles with nvcc against the toolkit's
 * NCCL, and it runs in CI against the emulator's (tests/cuda_emu/nccl.h),
 * whose ranks are processes sharing memory. */
#include <stdlib.h>
#include <string.h>

#include <nccl.h>

#include "backend_cuda.cuh"
extern "C" {
#include "comm.h"
}

#define RM_NCCL_CHECK(call, e, what)                                                                                   \
    do {                                                                                                               \
        ncclResult_t nr_ = (call);                                                                                     \
        if (nr_ != ncclSuccess)                                                                                        \
            return rm_errorf((e), RM_ERR_DEVICE, "nccl: %s failed: %s", (what), ncclGetErrorString(nr_));              \
    } while (0)

typedef struct nccl_ctx {
    ncclComm_t nc;
    cudaStream_t compute; /* the backend's; not owned */
    cudaStream_t stream;  /* the reductions' */
    cudaEvent_t ready;    /* recorded on compute before each reduction */
    rm_comm *host;        /* the bootstrap; not owned */
} nccl_ctx;

struct rm_comm_request {
    cudaEvent_t done; /* recorded on the reductions' stream after it */
};

/* A reduction found done or waited for: the backend's later work waits for it. */
static int finish(nccl_ctx *c, rm_comm_request *r, rm_err *e)
{
    cudaError_t st = cudaStreamWaitEvent(c->compute, r->done, 0);
    cudaEventDestroy(r->done);
    free(r);
    RM_CUDA_CHECK(st, e, "cudaStreamWaitEvent (a sum's end)");
    return RM_OK;
}

static int async_error(nccl_ctx *c, rm_err *e)
{
    ncclResult_t async = ncclSuccess;
    RM_NCCL_CHECK(ncclCommGetAsyncError(c->nc, &async), e, "ncclCommGetAsyncError");
    RM_NCCL_CHECK(async, e, "a reduction");
    return RM_OK;
}

static int nccl_allreduce_start(void *ctx, float *buf, size_t count, rm_comm_request **req, rm_err *e)
{
    nccl_ctx *c = (nccl_ctx *)ctx;
    *req = NULL;
    RM_CUDA_CHECK(cudaEventRecord(c->ready, c->compute), e, "cudaEventRecord");
    RM_CUDA_CHECK(cudaStreamWaitEvent(c->stream, c->ready, 0), e, "cudaStreamWaitEvent (a sum's start)");
    RM_NCCL_CHECK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, c->nc, c->stream), e, "ncclAllReduce");
    rm_comm_request *r = (rm_comm_request *)calloc(1, sizeof *r);
    if (!r) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    cudaError_t st = cudaEventCreateWithFlags(&r->done, cudaEventDisableTiming);
    if (st == cudaSuccess && (st = cudaEventRecord(r->done, c->stream)) != cudaSuccess) cudaEventDestroy(r->done);
    if (st != cudaSuccess) {
        free(r);
        RM_CUDA_CHECK(st, e, "cudaEventRecord (a sum's end)");
    }
    *req = r;
    return RM_OK;
}

static int nccl_test(void *ctx, rm_comm_request *req, int *done, rm_err *e)
{
    nccl_ctx *c = (nccl_ctx *)ctx;
    *done = 0;
    cudaError_t st = cudaEventQuery(req->done);
    if (st == cudaErrorNotReady) return async_error(c, e);
    RM_CUDA_CHECK(st, e, "cudaEventQuery");
    *done = 1;
    return finish(c, req, e);
}

static int nccl_wait(void *ctx, rm_comm_request *req, rm_err *e)
{
    nccl_ctx *c = (nccl_ctx *)ctx;
    int rc = async_error(c, e);
    int rc2 = finish(c, req, rc ? NULL : e);
    return rc ? rc : rc2;
}

/* Statistics and broadcasts are rare and small: on the backend's stream, waited for. */
static int nccl_allreduce_f64(void *ctx, double *buf, size_t count, rm_err *e)
{
    nccl_ctx *c = (nccl_ctx *)ctx;
    RM_NCCL_CHECK(ncclAllReduce(buf, buf, count, ncclDouble, ncclSum, c->nc, c->compute), e, "ncclAllReduce");
    RM_CUDA_CHECK(cudaStreamSynchronize(c->compute), e, "cudaStreamSynchronize");
    return async_error(c, e);
}

static int nccl_broadcast(void *ctx, void *buf, size_t bytes, int root, rm_err *e)
{
    nccl_ctx *c = (nccl_ctx *)ctx;
    RM_NCCL_CHECK(ncclBroadcast(buf, buf, bytes, ncclChar, root, c->nc, c->compute), e, "ncclBroadcast");
    RM_CUDA_CHECK(cudaStreamSynchronize(c->compute), e, "cudaStreamSynchronize");
    return async_error(c, e);
}

static void nccl_abort(void *ctx, int code)
{
    nccl_ctx *c = (nccl_ctx *)ctx;
    ncclCommAbort(c->nc); /* no waiting on ranks that are gone; the job ends next */
    c->nc = NULL;
    c->host->ops->abort(c->host->ctx, code);
}

static void nccl_destroy(void *ctx)
{
    nccl_ctx *c = (nccl_ctx *)ctx;
    if (!c) return;
    if (c->nc) ncclCommDestroy(c->nc);
    if (c->ready) cudaEventDestroy(c->ready);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

static const rm_comm_ops nccl_ops = {nccl_allreduce_start, nccl_test,  nccl_wait,   nccl_allreduce_f64,
                                     nccl_broadcast,       nccl_abort, nccl_destroy};

/* The communicator: rank 0's unique id (or its failure) reaches every rank
 * over host before any rank starts NCCL, so a failure is said by all. */
static int bootstrap(nccl_ctx *c, int device, rm_err *e)
{
    struct {
        int ok;
        ncclUniqueId id;
    } boot;
    memset(&boot, 0, sizeof boot);
    if (c->host->rank == 0) boot.ok = ncclGetUniqueId(&boot.id) == ncclSuccess;
    int rc = c->host->ops->broadcast(c->host->ctx, &boot, sizeof boot, 0, e);
    if (rc) return rm_err_context(e, "sending NCCL's unique id");
    if (!boot.ok) return rm_errorf(e, RM_ERR_DEVICE, "nccl: ncclGetUniqueId failed on rank 0");
    RM_CUDA_CHECK(cudaSetDevice(device), e, "cudaSetDevice");
    RM_NCCL_CHECK(ncclCommInitRank(&c->nc, c->host->size, boot.id, c->host->rank), e, "ncclCommInitRank");
    RM_CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking), e, "cudaStreamCreate");
    RM_CUDA_CHECK(cudaEventCreateWithFlags(&c->ready, cudaEventDisableTiming), e, "cudaEventCreate");
    return RM_OK;
}

int rm_comm_nccl_create(rm_comm **out, rm_comm *host, int device, cudaStream_t compute, rm_err *e)
{
    *out = NULL;
    nccl_ctx *c = (nccl_ctx *)calloc(1, sizeof *c);
    rm_comm *comm = (rm_comm *)calloc(1, sizeof *comm);
    int rc = c && comm ? RM_OK : rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    if (rc == RM_OK) {
        c->compute = compute, c->host = host;
        rc = bootstrap(c, device, e);
    }
    if (rc) {
        nccl_destroy(c);
        free(comm);
        return rc;
    }
    *comm = rm_comm{RM_COMM_NCCL, "nccl", host->rank, host->size, &nccl_ops, c, 1};
    *out = comm;
    return RM_OK;
}
