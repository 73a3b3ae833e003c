/* The gradient of one optimizer step from its parts: the micro-batches one
 * process runs (--accum K) summed in order, then the ranks' sums summed
 * over the job (engine/comm.h), then divided into the mean over the global
 * batch. Each part's gradient is the mean over its own samples (the loss is
 * a mean), so dividing the sum of the K x R parts by K x R gives the mean
 * over all of them.
 *
 * Exactness: the sum of two parts is a + b in float either way, a
 * micro-batch sum (the backend's grad_sum of two sources) or a reduction
 * over two ranks (MPI's float sum), and the division is the same float
 * multiplication, so two ranks give the bits of one process running two
 * micro-batches. More parts are summed in another order (MPI's), within
 * rounding.
 *
 * Memory: with K > 1 a buffer of every gradient on the backend holds the
 * sum so far (the executor overwrites the gradients each micro-batch):
 * rm_grad_reduce_bytes, which the trainer counts as fixed memory. Device
 * gradients reduce over the ranks through host memory (outside the device
 * budget), one download and one upload per step. */
#ifndef REMAT_TRAIN_GRAD_REDUCE_H
#define REMAT_TRAIN_GRAD_REDUCE_H

#include <stddef.h>

#include "backend.h"
#include "comm.h"
#include "error.h"
#include "executor.h"
#include "graph.h"
#include "plan.h"

typedef struct rm_grad_reduce rm_grad_reduce;

/* The training step whose backward pass the ranks' sums overlap: its graph
 * and plan, and the executor whose layers' gradients they are. */
typedef struct rm_grad_reduce_step {
    const rm_graph *g;
    const rm_plan *plan;
    rm_executor *ex;
    int nlayers;
    int no_overlap; /* 1: one sum after the backward pass (what the overlap is measured against) */
} rm_grad_reduce_step;

/* grads: count gradients in be's memory (the executor's), reduced in
 * place; accum >= 1 micro-batches per step; comm NULL: one process. step
 * (NULL: no overlap) must describe the executor the trainer steps; with
 * several ranks, one micro-batch and host memory the gradients are then
 * cut into buckets, contiguous ranges in the order the plan finishes them
 * (PyTorch DDP's 25 MiB at most, and at least 8 of them on models of over
 * 32,768 parameters), each reduced over the ranks as soon as the last
 * backward compute writing it is done (rm_grad_reduce_hook). be, grads,
 * comm and what step points to must outlive it. */
int rm_grad_reduce_create(rm_grad_reduce **out, rm_backend *be, float *grads, size_t count, int accum, rm_comm *comm,
                          const rm_grad_reduce_step *step, rm_err *e);
void rm_grad_reduce_free(rm_grad_reduce *r);
/* Device bytes create allocates for count gradients and accum
 * micro-batches (aligned as the arena aligns): 0 for accum 1. */
size_t rm_grad_reduce_bytes(size_t count, int accum);
/* The device bytes r holds (its sum buffer; 0 for NULL or accum 1): what
 * the trainer's measured memory counts. */
size_t rm_grad_reduce_device_bytes(const rm_grad_reduce *r);

/* Before a training step of the executor: arms the hook for its computes. */
void rm_grad_reduce_begin(rm_grad_reduce *r);
/* The executor's node hook (rm_executor_set_node_hook, ctx r): after each
 * compute of an armed step, starts the buckets it made final and tests the
 * ones in flight (MPI makes no progress by itself). A no-op when disarmed
 * (evaluation passes run other plans). */
int rm_grad_reduce_hook(void *ctx, int node, int after, rm_err *e);
/* After micro-batch k (0 .. accum - 1) of a step has left its gradient. */
int rm_grad_reduce_micro(rm_grad_reduce *r, int k, rm_err *e);
/* After the last micro-batch: the gradients become the mean over every
 * micro-batch of every rank (waiting for the buckets in flight; with
 * REMAT_LOG=debug it says when the first one started against the last
 * backward compute). */
int rm_grad_reduce_finish(rm_grad_reduce *r, rm_err *e);

#endif
