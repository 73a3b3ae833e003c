/* The mpi communication backend (comm.h), over MPI_COMM_WORLD: built when
 * MPI is found (-DREMAT_MPI). MPI is initialised here, with
 * MPI_THREAD_FUNNELED (only the main thread calls MPI; the CPU backend's
 * own threads never do), and finalised by destroy. Errors are returned, not
 * fatal (MPI_ERRORS_RETURN), so that a failed call becomes a message and the
 * caller's rm_comm_abort, not MPI's own abort without one. */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm.h"

int rm_comm_have_mpi(void)
{
    return 1;
}

/* MPI counts are ints: longer buffers go in pieces, each its own request. */
#define PIECE ((size_t)1 << 30)

struct rm_comm_request {
    int n;
    MPI_Request r[]; /* n of them */
};

static int mpi_failed(int code, const char *what, rm_err *e)
{
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(code, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "MPI error %d", code);
    return rm_errorf(e, RM_ERR_IO, "%s failed: %s", what, msg);
}

static int mpi_allreduce_start(void *ctx, float *buf, size_t count, rm_comm_request **req, rm_err *e)
{
    (void)ctx;
    *req = NULL;
    if (count == 0) return RM_OK;
    int n = (int)((count + PIECE - 1) / PIECE);
    rm_comm_request *q = malloc(sizeof *q + (size_t)n * sizeof q->r[0]);
    if (!q) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    q->n = 0;
    for (size_t off = 0; off < count; off += PIECE) {
        int len = (int)(count - off < PIECE ? count - off : PIECE);
        int rc = MPI_Iallreduce(MPI_IN_PLACE, buf + off, len, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q->r[q->n]);
        if (rc != MPI_SUCCESS) {
            /* Those started must finish before buf may be reused. */
            MPI_Waitall(q->n, q->r, MPI_STATUSES_IGNORE);
            free(q);
            return mpi_failed(rc, "MPI_Iallreduce", e);
        }
        q->n++;
    }
    *req = q;
    return RM_OK;
}

static int mpi_test(void *ctx, rm_comm_request *req, int *done, rm_err *e)
{
    (void)ctx;
    int flag = 0, rc = MPI_Testall(req->n, req->r, &flag, MPI_STATUSES_IGNORE);
    *done = 0;
    if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Testall", e);
    if (flag) {
        free(req);
        *done = 1;
    }
    return RM_OK;
}

static int mpi_wait(void *ctx, rm_comm_request *req, rm_err *e)
{
    (void)ctx;
    int rc = MPI_Waitall(req->n, req->r, MPI_STATUSES_IGNORE);
    free(req);
    return rc == MPI_SUCCESS ? RM_OK : mpi_failed(rc, "MPI_Waitall", e);
}

static int mpi_allreduce_f64(void *ctx, double *buf, size_t count, rm_err *e)
{
    (void)ctx;
    for (size_t off = 0; off < count; off += PIECE) {
        int len = (int)(count - off < PIECE ? count - off : PIECE);
        int rc = MPI_Allreduce(MPI_IN_PLACE, buf + off, len, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Allreduce", e);
    }
    return RM_OK;
}

static int mpi_broadcast(void *ctx, void *buf, size_t bytes, int root, rm_err *e)
{
    (void)ctx;
    for (size_t off = 0; off < bytes; off += PIECE) {
        int len = (int)(bytes - off < PIECE ? bytes - off : PIECE);
        int rc = MPI_Bcast((char *)buf + off, len, MPI_BYTE, root, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) return mpi_failed(rc, "MPI_Bcast", e);
    }
    return RM_OK;
}

static void mpi_abort(void *ctx, int code)
{
    (void)ctx;
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code); /* MPI_Abort does not return; should it, the process still ends */
}

static void mpi_destroy(void *ctx)
{
    (void)ctx;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

static const rm_comm_ops mpi_ops = {mpi_allreduce_start, mpi_test,  mpi_wait,   mpi_allreduce_f64,
                                    mpi_broadcast,       mpi_abort, mpi_destroy};

int rm_comm_mpi_create(rm_comm **out, rm_err *e)
{
    *out = NULL;
    int inited = 0, provided = 0, rc;
    MPI_Initialized(&inited);
    if (inited) return rm_errorf(e, RM_ERR_INVALID, "MPI is already initialised in this process");
    if ((rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided)) != MPI_SUCCESS)
        return mpi_failed(rc, "MPI_Init_thread", e);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    rm_comm *c = calloc(1, sizeof *c);
    if (!c) {
        MPI_Finalize();
        return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    }
    *c = (rm_comm){RM_COMM_MPI, "mpi", 0, 1, &mpi_ops, NULL, 0};
    if ((rc = MPI_Comm_rank(MPI_COMM_WORLD, &c->rank)) != MPI_SUCCESS ||
        (rc = MPI_Comm_size(MPI_COMM_WORLD, &c->size)) != MPI_SUCCESS) {
        free(c);
        MPI_Finalize();
        return mpi_failed(rc, "MPI_Comm_rank/size", e);
    }
    *out = c;
    return RM_OK;
}
