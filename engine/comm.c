/* The communication registry (comm.h): creation by kind or from the
 * launcher's environment, the single-process backend, and the helpers over
 * the ops. The mpi backend lives in comm_mpi.c, built only with MPI
 * (comm_mpi_none.c otherwise). */
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "launcher.h"

/* comm_mpi.c or comm_mpi_none.c. */
int rm_comm_mpi_create(rm_comm **out, rm_err *e);
int rm_comm_have_mpi(void);

/* ---- single: one process, every collective the identity ------------------- */

static int single_allreduce_start(void *ctx, float *buf, size_t count, rm_comm_request **req, rm_err *e)
{
    (void)ctx, (void)buf, (void)count, (void)e;
    *req = NULL;
    return RM_OK;
}

static int single_test(void *ctx, rm_comm_request *req, int *done, rm_err *e)
{
    (void)ctx, (void)req, (void)e;
    *done = 1;
    return RM_OK;
}

static int single_wait(void *ctx, rm_comm_request *req, rm_err *e)
{
    (void)ctx, (void)req, (void)e;
    return RM_OK;
}

static int single_allreduce_f64(void *ctx, double *buf, size_t count, rm_err *e)
{
    (void)ctx, (void)buf, (void)count, (void)e;
    return RM_OK;
}

static int single_broadcast(void *ctx, void *buf, size_t bytes, int root, rm_err *e)
{
    (void)ctx, (void)buf, (void)bytes;
    return root == 0 ? RM_OK : rm_errorf(e, RM_ERR_INVALID, "broadcast from rank %d in a job of one", root);
}

static void single_abort(void *ctx, int code)
{
    (void)ctx;
    exit(code);
}

static void single_destroy(void *ctx)
{
    (void)ctx;
}

static const rm_comm_ops single_ops = {single_allreduce_start, single_test,  single_wait,   single_allreduce_f64,
                                       single_broadcast,       single_abort, single_destroy};

int rm_comm_create(rm_comm **out, rm_comm_kind kind, rm_err *e)
{
    *out = NULL;
    if (kind == RM_COMM_MPI) return rm_comm_mpi_create(out, e);
    if (kind == RM_COMM_NCCL)
        return rm_errorf(e, RM_ERR_INVALID, "the nccl communicator is made by a CUDA backend over an mpi one");
    if (kind != RM_COMM_SINGLE) return rm_errorf(e, RM_ERR_INVALID, "unknown communication backend %d", (int)kind);
    rm_comm *c = calloc(1, sizeof *c);
    if (!c) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    *c = (rm_comm){RM_COMM_SINGLE, "single", 0, 1, &single_ops, NULL, 0};
    *out = c;
    return RM_OK;
}

int rm_comm_create_auto(rm_comm **out, rm_err *e)
{
    *out = NULL;
    int size = 0;
    if (!rm_launched(&size)) return rm_comm_create(out, RM_COMM_SINGLE, e);
    if (!rm_comm_have_mpi() && size > 1)
        return rm_errorf(e, RM_ERR_UNSUPPORTED,
                         "started by an MPI launcher as one of %d processes, but this remat was built without MPI "
                         "(install libopenmpi-dev and rebuild; scripts/setup does)",
                         size);
    return rm_comm_create(out, rm_comm_have_mpi() ? RM_COMM_MPI : RM_COMM_SINGLE, e);
}

void rm_comm_free(rm_comm *c)
{
    if (!c) return;
    c->ops->destroy(c->ctx);
    free(c);
}

int rm_comm_allreduce(rm_comm *c, float *buf, size_t count, rm_err *e)
{
    rm_comm_request *req = NULL;
    int rc = c->ops->allreduce_start(c->ctx, buf, count, &req, e);
    if (rc == RM_OK && req) rc = c->ops->wait(c->ctx, req, e);
    return rc;
}

int rm_comm_check_same(rm_comm *c, const void *buf, size_t bytes, const char *what, rm_err *e)
{
    if (c->size == 1) return RM_OK;
    unsigned char *root = malloc(bytes ? bytes : 1);
    if (!root) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    if (c->rank == 0) memcpy(root, buf, bytes);
    int rc = c->ops->broadcast(c->ctx, root, bytes, 0, e);
    /* How many ranks differ: a sum of 0s and 1s, exact in a float. */
    float differ = rc == RM_OK && memcmp(root, buf, bytes) != 0;
    free(root);
    if (rc == RM_OK) rc = rm_comm_allreduce(c, &differ, 1, e);
    if (rc == RM_OK && differ > 0)
        rc = rm_errorf(e, RM_ERR_INVALID, "%d of %d ranks computed a different %s than rank 0", (int)differ, c->size,
                       what);
    return rc;
}
