/* The gradient of a step from its micro-batches and ranks (grad_reduce.h). */
#include "grad_reduce.h"

#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "clock.h"
#include "log.h"

/* A bucket: a contiguous range of the gradients, reduced over the ranks as
 * one allreduce once the last backward compute writing it is done. */
typedef struct bucket {
    size_t off, len; /* floats */
    int ready_after; /* computes of the step's plan after which every gradient in it is final */
    rm_comm_request *req;
} bucket;

struct rm_grad_reduce {
    rm_backend *be;
    float *grads; /* (dev) the executor's */
    size_t count;
    int accum;
    rm_comm *comm;
    float *sum;  /* (dev) the micro-batches' sum so far; NULL for accum 1 */
    float *host; /* host staging of device gradients for the ranks' sum; NULL when not needed */
    /* Overlap (one micro-batch, host memory, several ranks): buckets in the
     * order they become final, started from the executor's node hook. */
    bucket *b;
    int nb, next, armed, computes, last_backward;
    int first_started; /* computes done when the step's first bucket started; -1: none yet */
};

size_t rm_grad_reduce_bytes(size_t count, int accum)
{
    return accum > 1 ? rm_align_up(count * sizeof(float)) : 0;
}

size_t rm_grad_reduce_device_bytes(const rm_grad_reduce *r)
{
    return r && r->sum ? rm_grad_reduce_bytes(r->count, r->accum) : 0;
}

/* The bucket size: PyTorch DDP's 25 MiB on large models, and at least a
 * few buckets on small ones, so that something is reduced early. */
static size_t bucket_floats(size_t count)
{
    size_t target = count / 8;
    if (target < 4096) target = 4096;
    if (target > (25u << 20) / sizeof(float)) target = (25u << 20) / sizeof(float);
    return target;
}

typedef struct layer_grads {
    size_t off, len; /* this layer's dw then db, contiguous in the executor's layout */
    int last;        /* the last compute (0-based, in plan order) of its backward node */
} layer_grads;

static int by_last(const void *a, const void *b)
{
    const layer_grads *x = a, *y = b;
    return (x->last > y->last) - (x->last < y->last);
}

/* Buckets of p's gradients in the order the plan finishes them: layers
 * taken by their last backward compute, joined while their ranges touch and
 * the bucket is under bucket_floats. */
static int make_buckets(rm_grad_reduce *r, const rm_grad_reduce_step *st, rm_err *e)
{
    const rm_graph *g = st->g;
    const rm_plan *p = st->plan;
    rm_executor *ex = st->ex;
    const int L = st->nlayers;
    layer_grads *lg = calloc((size_t)L + 1, sizeof *lg);
    int *last = malloc(((size_t)L + 1) * sizeof *last);
    r->b = calloc((size_t)L + 1, sizeof *r->b);
    if (!lg || !last || !r->b) {
        free(lg), free(last);
        return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    }
    for (int i = 0; i < L; i++) last[i] = -1;
    int c = 0;
    r->last_backward = -1;
    for (int o = 0; o < p->nops; o++) {
        if (p->ops[o].kind != RM_OP_COMPUTE) continue;
        const rm_graph_node *nd = &g->nodes[p->ops[o].node];
        if (nd->op == RM_OP_BACKWARD && nd->layer >= 0 && nd->layer < L) last[nd->layer] = c, r->last_backward = c;
        c++;
    }
    int n = 0;
    for (int i = 0; i < L; i++) {
        rm_layer_params *lp = rm_executor_layer_params(ex, i);
        size_t nw = lp && lp->dw.data ? rm_tensor_numel(&lp->dw) : 0,
               nbias = lp && lp->db.data ? rm_tensor_numel(&lp->db) : 0;
        if (!nw && !nbias) continue;
        const float *start = nw ? lp->dw.data : lp->db.data;
        lg[n] = (layer_grads){(size_t)(start - r->grads), nw + nbias, last[i]};
        if (last[i] < 0) {
            free(lg), free(last);
            return rm_errorf(e, RM_ERR_INVALID, "the plan never computes the backward node of layer %d", i);
        }
        n++;
    }
    qsort(lg, (size_t)n, sizeof *lg, by_last);
    const size_t target = bucket_floats(r->count);
    for (int k = 0; k < n; k++) {
        bucket *cur = r->nb ? &r->b[r->nb - 1] : NULL;
        int touches = cur && (lg[k].off + lg[k].len == cur->off || cur->off + cur->len == lg[k].off);
        if (touches && cur->len + lg[k].len <= target) {
            if (lg[k].off < cur->off) cur->off = lg[k].off;
            cur->len += lg[k].len;
            cur->ready_after = lg[k].last + 1;
        } else {
            r->b[r->nb++] = (bucket){lg[k].off, lg[k].len, lg[k].last + 1, NULL};
        }
    }
    free(lg), free(last);
    return RM_OK;
}

int rm_grad_reduce_create(rm_grad_reduce **out, rm_backend *be, float *grads, size_t count, int accum, rm_comm *comm,
                          const rm_grad_reduce_step *step, rm_err *e)
{
    *out = NULL;
    if (accum < 1) return rm_errorf(e, RM_ERR_INVALID, "%d micro-batches per step", accum);
    rm_grad_reduce *r = calloc(1, sizeof *r);
    if (!r) return rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    r->be = be, r->grads = grads, r->count = count, r->accum = accum;
    r->comm = comm && comm->size > 1 ? comm : NULL;
    r->first_started = -1;
    int rc = RM_OK;
    if (accum > 1 && count) rc = be->ops->alloc(be->ctx, (void **)&r->sum, rm_grad_reduce_bytes(count, accum), e);
    /* The transport reads the gradients where they are (host memory, or a
     * device communicator such as NCCL on the device), or from a host copy. */
    const int in_place = r->comm && (be->host_memory || r->comm->device_buffers);
    if (rc == RM_OK && r->comm && !in_place && count && !(r->host = malloc(count * sizeof(float))))
        rc = rm_errorf(e, RM_ERR_NOMEM, "out of memory for the gradients' host copy");
    /* Overlap where the gradients are final when the backward pass writes
     * them (one micro-batch) and the transport reads them in place. */
    if (rc == RM_OK && in_place && accum == 1 && count && step && !step->no_overlap) rc = make_buckets(r, step, e);
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
    for (int k = 0; k < r->nb; k++)
        if (r->b[k].req) r->comm->ops->wait(r->comm->ctx, r->b[k].req, NULL);
    free(r->b);
    free(r->host);
    free(r);
}

void rm_grad_reduce_begin(rm_grad_reduce *r)
{
    r->armed = r->nb > 0;
    r->next = 0;
    r->computes = 0;
    r->first_started = -1;
}

/* Starts every bucket that is final after r->computes computes, and moves
 * the ones in flight along (MPI progresses only inside its calls). */
static int progress(rm_grad_reduce *r, rm_err *e)
{
    int rc;
    while (r->next < r->nb && r->b[r->next].ready_after <= r->computes) {
        bucket *b = &r->b[r->next++];
        if ((rc = r->comm->ops->allreduce_start(r->comm->ctx, r->grads + b->off, b->len, &b->req, e))) return rc;
        if (r->first_started < 0) r->first_started = r->computes;
        RM_LOG_DEBUG("grad_reduce: bucket %d of %d (%zu floats) started after compute %d", r->next, r->nb, b->len,
                     r->computes);
    }
    for (int k = 0; k < r->next; k++) {
        int done = 0;
        if (r->b[k].req && (rc = r->comm->ops->test(r->comm->ctx, r->b[k].req, &done, e))) return rc;
        if (done) r->b[k].req = NULL;
    }
    return RM_OK;
}

int rm_grad_reduce_hook(void *ctx, int node, int after, rm_err *e)
{
    (void)node;
    rm_grad_reduce *r = ctx;
    if (!r->armed) return RM_OK;
    if (after) r->computes++;
    return progress(r, e);
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

/* The ranks' sum of the buckets started during the step (the rest now). */
static int finish_buckets(rm_grad_reduce *r, rm_err *e)
{
    r->computes = r->last_backward + 1; /* whatever the hook saw, every gradient is final now */
    int rc = progress(r, e);
    double t0 = rm_now();
    for (int k = 0; k < r->nb && rc == RM_OK; k++)
        if (r->b[k].req) {
            rc = r->comm->ops->wait(r->comm->ctx, r->b[k].req, e);
            r->b[k].req = NULL;
        }
    r->armed = 0;
    RM_LOG_DEBUG("grad_reduce: %d buckets; the first started after compute %d, the backward pass ends with compute "
                 "%d; %.3f ms waited after it",
                 r->nb, r->first_started, r->last_backward + 1, 1e3 * (rm_now() - t0));
    return rc;
}

int rm_grad_reduce_finish(rm_grad_reduce *r, rm_err *e)
{
    int rc = RM_OK, parts = r->accum;
    if (r->comm && r->count) {
        parts *= r->comm->size;
        if (r->nb) {
            rc = finish_buckets(r, e);
        } else {
            float *buf = r->host ? r->host : r->grads;
            double t0 = rm_now();
            if (r->host) rc = r->be->ops->download(r->be->ctx, r->host, r->grads, r->count * sizeof(float), e);
            if (rc == RM_OK) rc = rm_comm_allreduce(r->comm, buf, r->count, e);
            if (rc == RM_OK && r->host)
                rc = r->be->ops->upload(r->be->ctx, r->grads, r->host, r->count * sizeof(float), e);
            RM_LOG_DEBUG("grad_reduce: one sum of %zu floats after the backward pass: %.3f ms", r->count,
                         1e3 * (rm_now() - t0));
        }
        if (rc) return rm_err_context(e, "the gradients' sum over %d ranks", r->comm->size);
    }
    if (parts == 1 || !r->count) return rc;
    return r->be->ops->scale(r->be->ctx, r->grads, r->count, (float)(1.0 / parts), e);
}
