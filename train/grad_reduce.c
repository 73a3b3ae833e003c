/* The gradient of a step from its micro-batches and ranks (grad_reduce.h). */
#include "grad_reduce.h"

#include <stdlib.h>

#include "arena.h"

struct rm_grad_reduce {
    rm_backend *be;
    float *grads; /* (dev) the executor's */
    size_t count;
    int accum;
    rm_comm *comm;
    float *sum;  /* (dev) the micro-batches' sum so far; NULL for accum 1 */
    float *host; /* host staging of device gradients for the ranks' sum; NULL when not needed */
};

size_t rm_grad_reduce_bytes(size_t count, int accum)
{
    return accum > 1 ? rm_align_up(count * sizeof(float)) : 0;
}

int rm_grad_reduce_create(rm_grad_reduce **out, rm_backend *be, float *grads, size_t count, int accum, rm_comm *comm,
                          rm_err *e)
{
    *out = NULL;
    if (accum < 1) return rm_errorf(e, RM_ERR_INVALID, "%d micro-batches per step", accum);
    rm_grad_reduce *r = calloc(1, sizeof *r);
    if (!r) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    *r = (rm_grad_reduce){be, grads, count, accum, comm && comm->size > 1 ? comm : NULL, NULL, NULL};
    int rc = RM_OK;
    if (accum > 1 && count) rc = be->ops->alloc(be->ctx, (void **)&r->sum, rm_grad_reduce_bytes(count, accum), e);
    if (rc == RM_OK && r->comm && !be->host_memory && count && !(r->host = malloc(count * sizeof(float))))
        rc = rm_errorf(e, RM_ERR_NOMEM, "out of memory for the gradients' host copy");
    if (rc) {
        rm_grad_reduce_free(r);
        return rc;
    }
    *out = r;
    return RM_OK;
}

void rm_grad_reduce_free(rm_grad_reduce *r)
{
    if (!r) return;
    if (r->sum) r->be->ops->release(r->be->ctx, r->sum);
    free(r->host);
    free(r);
}

int rm_grad_reduce_micro(rm_grad_reduce *r, int k, rm_err *e)
{
    if (r->accum == 1 || !r->count) return RM_OK;
    const rm_backend_ops *o = r->be->ops;
    if (k == 0) return o->copy(r->be->ctx, r->sum, r->grads, r->count * sizeof(float), e);
    /* The running sum first, then this micro-batch: a + b, in order. */
    const float *src[2] = {r->sum, r->grads};
    return o->grad_sum(r->be->ctx, k == r->accum - 1 ? r->grads : r->sum, src, 2, r->count, e);
}

int rm_grad_reduce_finish(rm_grad_reduce *r, rm_err *e)
{
    int rc = RM_OK, parts = r->accum;
    if (r->comm && r->count) {
        parts *= r->comm->size;
        float *buf = r->host ? r->host : r->grads;
        if (r->host) rc = r->be->ops->download(r->be->ctx, r->host, r->grads, r->count * sizeof(float), e);
        if (rc == RM_OK) rc = rm_comm_allreduce(r->comm, buf, r->count, e);
        if (rc == RM_OK && r->host) rc = r->be->ops->upload(r->be->ctx, r->grads, r->host, r->count * sizeof(float), e);
        if (rc) return rm_err_context(e, "the gradients' sum over %d ranks", r->comm->size);
    }
    if (parts == 1 || !r->count) return rc;
    return r->be->ops->scale(r->be->ctx, r->grads, r->count, (float)(1.0 / parts), e);
}
