/* Communication between the processes of one training job (data parallel
 * training, the README's "gradient accumulation and data parallel over MPI"): the interface and the registry, as
 * backend.h is for devices. A job is `size` processes, each its rank; every
 * rank calls the same collectives in the same order.
 *
 * Backends: "single" (one process; always built; every collective is the
 * identity, so the trainer has one code path) and "mpi" (built when MPI is
 * found, -DREMAT_MPI=AUTO|ON|OFF; the job is started by mpirun, one rank per
 * process). rm_comm_create_auto picks mpi exactly when the process was
 * started by an MPI launcher, so `remat train` and `mpirun -np N remat
 * train` run the same binary.
 *
 * Buffers are host memory, except in a device communicator (device_buffers:
 * "nccl", which a CUDA backend makes over an mpi one, backend.h's
 * device_comm): there every buffer is device memory of that backend and a
 * reduction is queued on the device, ordered before the backend's later
 * work. Errors are return codes with a message, as
 * everywhere; what ends a job whose rank failed is rm_comm_abort, which
 * takes every rank down with it instead of leaving them waiting in a
 * collective for a rank that is gone. */
#ifndef REMAT_COMM_H
#define REMAT_COMM_H

#include <stddef.h>

#include "error.h"

typedef enum rm_comm_kind { RM_COMM_SINGLE = 0, RM_COMM_MPI, RM_COMM_NCCL, RM_COMM_KIND_COUNT } rm_comm_kind;

/* A reduction in flight (rm_comm_ops.allreduce_start). */
typedef struct rm_comm_request rm_comm_request;

typedef struct rm_comm_ops {
    /* Sums count floats of buf over the ranks, in place, without waiting:
     * *req is the reduction in flight (NULL when it is already done, as on
     * one process). buf must not be touched until it is done. The sum of
     * two ranks is a + b, the same bits as one process adding them; of
     * more, MPI's order (rounding may differ from a sequential sum). */
    int (*allreduce_start)(void *ctx, float *buf, size_t count, rm_comm_request **req, rm_err *e);
    /* *done = 1 once req is complete (req is freed then and must not be
     * used again), else 0. MPI makes no progress on its own: calling this
     * now and then is what moves a reduction along. */
    int (*test)(void *ctx, rm_comm_request *req, int *done, rm_err *e);
    /* Waits for req to complete and frees it. */
    int (*wait)(void *ctx, rm_comm_request *req, rm_err *e);
    /* Sums count doubles of buf over the ranks, in place, waiting: for
     * statistics (held-out losses and counts) a float would round. */
    int (*allreduce_f64)(void *ctx, double *buf, size_t count, rm_err *e);
    /* bytes of buf from rank root to every rank. */
    int (*broadcast)(void *ctx, void *buf, size_t bytes, int root, rm_err *e);
    /* Ends every process of the job with exit status code; does not
     * return. The caller prints its message first. */
    void (*abort)(void *ctx, int code);
    void (*destroy)(void *ctx);
} rm_comm_ops;

typedef struct rm_comm {
    rm_comm_kind kind;
    const char *name; /* "single", "mpi", "nccl" */
    int rank, size;   /* 0 <= rank < size */
    const rm_comm_ops *ops;
    void *ctx;
    int device_buffers; /* 1: buffers are the device memory of the backend that made it */
} rm_comm;

/* The backend kind (RM_ERR_UNSUPPORTED for mpi in a build without MPI;
 * RM_ERR_INVALID for nccl, which only a device backend makes). */
int rm_comm_create(rm_comm **out, rm_comm_kind kind, rm_err *e);
/* mpi when an MPI launcher started this process (base/launcher.h), else
 * single. Launched by mpirun in a build without MPI is an error that says
 * so, not N copies of a one-process job. */
int rm_comm_create_auto(rm_comm **out, rm_err *e);
/* Whether this build has the mpi backend. */
int rm_comm_have_mpi(void);
void rm_comm_free(rm_comm *c);

/* allreduce_start then wait. */
int rm_comm_allreduce(rm_comm *c, float *buf, size_t count, rm_err *e);
/* Every rank gets rank 0's bytes and checks they equal its own: RM_OK when
 * all agree, else RM_ERR_INVALID on every rank, saying how many ranks
 * differ from rank 0 in what. For what every rank must compute alike (the
 * schedule's digest). */
int rm_comm_check_same(rm_comm *c, const void *buf, size_t bytes, const char *what, rm_err *e);

#endif
