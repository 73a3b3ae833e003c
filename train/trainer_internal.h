/* What the trainer's files share (trainer.c: creation, the loop and
 * evaluation; trainer_schedule.c: the problem, the budget checks, the solve,
 * the schedule cache and --batch auto; trainer_snapshot.c: snapshots and the
 * host twins of device state): the trainer's state and its messages. Not
 * part of the library's interface (trainer.h is). */
#ifndef REMAT_TRAIN_TRAINER_INTERNAL_H
#define REMAT_TRAIN_TRAINER_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "batcher.h"
#include "comm.h"
#include "grad_reduce.h"
#include "plan.h"
#include "schedule.h"
#include "snapshot.h"
#include "trainer.h"

struct rm_trainer {
    rm_trainer_config cfg;
    rm_trainer_summary sum;
    rm_model *m;
    rm_backend *be;
    rm_task task;
    int classes, batch; /* batch: one executor step's (rm_trainer_summary.batch) */
    int accum, rank, ranks;
    int slices;       /* executor steps in an optimizer step, over all ranks: accum x ranks */
    int global_batch; /* batch x slices */
    rm_comm *comm;    /* NULL: one process */
    rm_comm *dcomm;   /* the device's own transport for the gradients (NCCL), over comm; NULL: comm's */
    rm_grad_reduce *gr;

    /* Data. base_*: what was opened (owned); train/test: what is used (a base, or a view of one). */
    rm_dataset *base_train, *base_test;
    rm_dataset *train, *test;
    rm_batcher *batcher;
    float *images;   /* host batch */
    int32_t *labels; /* host labels */

    /* The schedule and its plan (independent of the seed). */
    rm_graph g;
    rm_problem *p;
    rm_schedule *s;
    rm_plan *plan;

    /* Seeded state. */
    uint64_t seed;
    rm_executor *ex;
    rm_optim *opt;
    rm_layer_params **lpp;
    rm_graph eval_g; /* evaluation: the forward-only graph at the evaluation batch */
    rm_plan *eval_plan;
    float *logits; /* host: the logits of a batch, fetched for accuracy */
    /* CUDA: host twins of the device parameters, statistics and optimizer
     * state, laid out alike, which snapshots are written from and read
     * into (snapshot.c reads and writes host memory). NULL on the CPU. */
    float *host_params, *host_buffers;
    rm_layer_params *host_lp;
    rm_layer_params **host_lpp;
    rm_optim *host_opt;
    int synthetic;

    rm_lr_schedule lr;
    uint64_t lr_total;
    uint64_t step;
    int finished;
};

/* Binary units for messages, "12.34 MiB", returned by value so that a
 * message can hold several: MB(x).s lives until the end of the full
 * expression that formats it (C11 6.2.4p8). */
typedef struct rm_mbuf {
    char s[24];
} rm_mbuf;
rm_mbuf rm_trainer_mb(size_t bytes);
#define MB(bytes) rm_trainer_mb(bytes)

void rm_trainer_emit(const rm_trainer *t, const rm_trainer_event *ev);
/* A RM_TRAINER_NOTE event with a formatted line. */
void rm_trainer_note(const rm_trainer *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* trainer_schedule.c: the problem at t->batch, the budget and its checks,
 * and the schedule and plan that fit it (t->g, t->p, t->s, t->plan and the
 * summary's memory fields). */
int rm_trainer_plan_memory(rm_trainer *t, rm_err *e);
/* --batch auto: t->batch becomes the largest batch the strategy fits. */
int rm_trainer_auto_batch(rm_trainer *t, rm_err *e);
/* The training samples the run will have, when known before the batch is
 * (--samples, or a data folder); 0 when they grow with the batch (synthetic
 * data by default). */
int64_t rm_trainer_known_samples(const rm_trainer *t);

/* trainer_snapshot.c: on CUDA, host twins of the device parameters,
 * statistics and optimizer state that snapshots are written from and read
 * into (snapshot.c reads and writes host memory). */
int rm_trainer_mirror_build(rm_trainer *t, rm_err *e);
void rm_trainer_mirror_free(rm_trainer *t);
/* A snapshot into the parameters and optimizer, wherever they live. */
int rm_trainer_load_snapshot(rm_trainer *t, rm_snapshot_counters *k, const char *path, rm_err *e);

#endif
