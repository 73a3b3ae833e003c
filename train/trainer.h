/* The training loop as a library: everything `remat train` does, without
 * printing. rm_trainer_create turns a configuration into a runnable job
 * (model, data, batch size, the fixed-memory accounting, a rematerialization
 * schedule that fits the budget, its plan, the executor and the optimizer,
 * and a resumed snapshot); rm_trainer_run trains it. What a person should
 * see (the summary, a progress bar, evaluations, saved snapshots) reaches
 * the caller through one event callback, so the CLI prints and tests record.
 *
 * Memory accounting. The device budget is the total: the footprint first
 * (train/footprint.h: weights, gradients, optimizer state, batchnorm
 * statistics, labels, the layers' scratch workspace, each rounded up to the
 * arena alignment as the executor allocates them), and what remains is the
 * activation budget the schedule is solved for. The schedule is solved on the training graph with
 * every node's bytes rounded up to RM_ARENA_ALIGN, so the simulator's peak is
 * exactly the plan's live peak; the plan's span (live peak plus
 * fragmentation) is what the executor allocates, and it is what is checked
 * against the budget. When fragmentation pushes the span over, the schedule
 * is solved again for a budget smaller by the overshoot.
 *
 * Reproducibility. Everything random is a function of the run's seed: the
 * parameters, the dropout masks (of (seed, step, node)), the synthetic data,
 * the held-out split and each epoch's batch order (of (seed, epoch)). The
 * step counter is the only state of the loop, so a run resumed from a
 * snapshot follows the uninterrupted run's loss trajectory bit for bit,
 * and a run under any valid schedule follows checkpoint-all's (the executor
 * makes one step exact, the optimizer is deterministic). */
#ifndef REMAT_TRAIN_TRAINER_H
#define REMAT_TRAIN_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "comm.h"
#include "cost_file.h"
#include "dataset.h"
#include "error.h"
#include "executor.h"
#include "footprint.h"
#include "model.h"
#include "onnx.h"
#include "optim.h"
#include "problem.h"
#include "strategy.h"

/* ---- events --------------------------------------------------------------- */

typedef enum rm_trainer_event_kind {
    RM_TRAINER_NOTE = 0, /* a line worth showing: the held-out split, a cache miss, a re-solve */
    RM_TRAINER_SOLVING,  /* a schedule is about to be solved (a MILP can take a while) */
    RM_TRAINER_PROBE,    /* --batch auto: one batch size was tried (batch, fits) */
    RM_TRAINER_STEP,     /* one training step is done */
    RM_TRAINER_EVAL,     /* an evaluation on the held-out data is done */
    RM_TRAINER_EPOCH,    /* an epoch is done (after its evaluation) */
    RM_TRAINER_SNAPSHOT, /* a snapshot was saved (path) */
    RM_TRAINER_ALLOCATE  /* the executor is about to allocate the training memory (fixed bytes, arena):
                            where a measurement of the process's memory for training starts */
} rm_trainer_event_kind;

typedef struct rm_trainer_eval {
    double loss;     /* mean over the samples (segmentation: over the pixels) */
    double accuracy; /* fraction of samples (pixels) whose argmax is the label */
    int64_t samples;
    double seconds;
} rm_trainer_eval;

typedef struct rm_trainer_event {
    rm_trainer_event_kind kind;
    const char *text;     /* NOTE, SOLVING: the line; SNAPSHOT: the path */
    int batch, fits;      /* PROBE */
    uint64_t step;        /* steps done (global) */
    uint64_t total_steps; /* steps this run will have done when it stops */
    uint64_t epoch;       /* 0-based epoch of the step */
    uint64_t epochs;
    int64_t epoch_step;   /* steps done in this epoch */
    int64_t epoch_steps;  /* steps per epoch */
    double loss;          /* STEP: this step's loss */
    double running_loss;  /* STEP, EPOCH: mean loss over this epoch's steps so far */
    double running_acc;   /* STEP, EPOCH: training accuracy over this epoch so far; < 0 when not measured */
    double images_per_s;  /* STEP, EPOCH: training throughput of this invocation */
    double eta_s;         /* STEP: until the run stops */
    double elapsed_s;     /* training time of this invocation so far */
    rm_trainer_eval eval; /* EVAL, and EPOCH when an evaluation ran (eval.samples > 0) */
} rm_trainer_event;

typedef void (*rm_trainer_event_fn)(void *ctx, const rm_trainer_event *ev);

/* ---- configuration -------------------------------------------------------- */

typedef struct rm_trainer_config {
    const char *model_path;
    const rm_onnx_options *onnx; /* NULL: model_path is a config; else an ONNX file imported with these
                                    options (models/onnx.h), its initializers the starting weights */
    const char *data;            /* "synthetic", or a folder (rm_dataset_open_dir) */
    int64_t synthetic_samples;   /* training samples of synthetic data; 0: max(2048, 8 x batch).
                                    A quarter as many more are held out */
    int batch;                   /* the global batch of an optimizer step: split evenly between the ranks
                                    (comm), each rank's share between its accum micro-batches; 0: the
                                    largest micro-batch the strategy fits in the budget, times both */
    int accum;                   /* micro-batches per optimizer step (--accum; 0 or 1: one): their gradients
                                    are summed, then averaged (train/grad_reduce.h) */
    int check_ranks;             /* 1: after every step each rank checks that its parameters are rank 0's,
                                    bit for bit, and that its arena reached exactly the plan's span
                                    (REMAT_DP_CHECK=1; tests/mpi) */
    int no_overlap;              /* 1: the ranks' gradient sum after the backward pass, not overlapping it
                                    (REMAT_DP_OVERLAP=0; for measuring the overlap, bench/dp.sh) */
    int no_device_comm;          /* 1: device gradients go through host memory and comm even where the
                                    device has its own transport (REMAT_DP_NCCL=0) */
    rm_comm *comm;               /* the job's processes (engine/comm.h); NULL: this one alone. Every rank
                                    builds the same trainer; rank 0 solves the schedule, the others check
                                    theirs against it */
    size_t budget;               /* total device bytes, fixed included; used when budget_percent is 0 */
    double budget_percent;       /* > 0: the budget is this % of the no-remat peak at the batch */
    const char *strategy;        /* a name rm_strategy_find knows */
    rm_strategy_options solver;  /* limits for lp_round / milp */
    uint64_t epochs;             /* >= 1 */
    uint64_t max_steps;          /* 0: none; else stop once the global step count reaches it */
    rm_optim_options optim;
    double lr;          /* > 0 */
    rm_lr_kind lr_kind; /* step: x0.1 every third of the run; cosine: to 0 at the end */
    uint64_t seed;
    int seed_given;             /* 0: a resumed run adopts its snapshot's seed */
    const char *snapshot_path;  /* NULL: none; else saved (atomically) after every epoch and at the end */
    const char *resume_path;    /* NULL: start fresh */
    const char *cache_dir;      /* NULL: no schedule cache */
    uint64_t eval_every;        /* 0: evaluate after each epoch only; else also every this many steps */
    int train_accuracy_every;   /* measure training accuracy on every this many steps (0: never); each
                                   measurement replays the step's forward pass (see trainer.c) */
    const rm_cost_file *costs;  /* NULL: node costs are FLOPs; else profiled seconds (cost_file.h) for
                                   the model at the batch (a different batch is refused, except with
                                   --batch auto: then scaled linearly to each batch tried) */
    rm_backend_kind device;     /* the backend (rm_backend_find; 0, the default: the CPU): where the
                                   weights, the arena and every kernel live; a device this build or
                                   machine lacks is RM_ERR_UNSUPPORTED */
    rm_backend_options backend; /* its kernel library and threads (all 0: its defaults) */
    rm_trainer_event_fn event;
    void *event_ctx;
} rm_trainer_config;

/* Defaults: synthetic data, batch 32, checkpoint_all, 1 epoch, SGD momentum
 * 0.9, lr 0.05 constant, seed 1, training accuracy on every 4th step. model_path, the
 * budget and the strategy are for the caller to set. */
void rm_trainer_config_default(rm_trainer_config *c);

/* ---- what the job looks like --------------------------------------------- */

typedef struct rm_trainer_summary {
    /* model and data */
    int layers, classes;
    rm_task task;
    size_t params;
    char train_data[256]; /* where the data comes from */
    char test_data[256];  /* where the held-out data comes from; "" for a split of the training data */
    int64_t train_samples, test_samples;
    int held_out_split; /* the held-out data is a seeded split of the training data */
    /* batch */
    int batch, batch_auto; /* the batch one executor step runs (a micro-batch of one rank: the schedule's,
                              the budget's); batch_auto: chosen by the max-batch search */
    int global_batch;      /* samples per optimizer step: batch x accum x ranks */
    int accum, ranks;      /* micro-batches per step on each rank; processes in the job */
    const char *transport; /* ranks > 1: how gradients are summed: "mpi", "nccl", "mpi through host memory" */
    int bound_batch;       /* batch_auto: no strategy fits a larger batch (trivial lower bound), or search_cap */
    int search_cap;        /* batch_auto: the largest batch searched; bound_batch == search_cap: the bound was
                              not reached, larger batches were not tried */
    int batch_is_samples;  /* batch_auto: the search stopped at the number of training samples */
    /* memory: totals include the fixed bytes */
    size_t budget;
    rm_footprint fp;     /* the fixed bytes (train/footprint.h); fp.total is all of them */
    size_t noremat_peak; /* fixed + checkpoint-all's activation peak */
    size_t lower_bound;  /* fixed + the largest node with its inputs: no schedule needs less */
    size_t sched_peak;   /* fixed + the schedule's simulated activation peak */
    size_t plan_span;    /* the arena the executor allocates (activations only) */
    size_t eval_span;    /* evaluation's plan span: it runs in the training arena */
    int eval_batch;
    /* the schedule */
    const char *strategy; /* its canonical name */
    const char *source;   /* the strategy whose schedule it is (rm_strategy_stats.source); NULL: strategy's */
    const char *status;   /* rm_strategy_stats.status, or "cached" */
    double solve_s;
    int has_bound;
    double gap;
    double cost, base_cost; /* base: checkpoint-all's, every node once */
    long recomputations;    /* computes beyond the first */
    int recomputed_nodes;   /* nodes computed more than once */
    int resolves;           /* extra solves to absorb fragmentation */
    int cache;              /* -1 no cache, 0 miss (solved; stored when cache_stored), 1 hit */
    int cache_stored;       /* a miss's schedule was written to cache_file (else a note says why not) */
    char cache_file[512];
    /* the run */
    int64_t epoch_steps;
    uint64_t total_steps; /* where the run stops: epochs x epoch_steps, or max_steps */
    uint64_t start_step;  /* > 0 when resumed */
    uint64_t seed;
    int train_accuracy;        /* measured on every this many steps; 0: not (not asked, or no memory for it) */
    const char *device;        /* the backend's name: "cpu" or "cuda" */
    char device_settings[160]; /* the backend's settings in words (rm_backend_describe) */
} rm_trainer_summary;

typedef struct rm_trainer rm_trainer;

/* Builds the whole job; on any error *out is NULL and e says what, in words
 * a user can act on. The budget errors (RM_ERR_BUDGET: not even the fixed
 * bytes fit, or the plan does not; RM_ERR_INFEASIBLE: no schedule exists or
 * the strategy finds none) say what would fit. c's strings must outlive the
 * trainer. */
int rm_trainer_create(rm_trainer **out, const rm_trainer_config *c, rm_err *e);
void rm_trainer_free(rm_trainer *t);

const rm_trainer_summary *rm_trainer_summary_of(const rm_trainer *t);

/* What --batch auto's bound says, for its note and the summary: "no
 * schedule fits more than BOUND", or, when the bound reached the search's
 * cap, that the search stops there. Returns buf. */
const char *rm_trainer_batch_limit(char *buf, size_t len, int bound, int search_cap);

/* Trains until the run stops (the last epoch, or max_steps), evaluating
 * after each epoch (and every eval_every steps) and saving snapshots when
 * configured. Calling it again after it returned does nothing. */
int rm_trainer_run(rm_trainer *t, rm_err *e);

/* One evaluation pass over the held-out data with the current parameters
 * (inference mode: batchnorm running statistics, no dropout). In a job of
 * several ranks every rank must call it: each evaluates every ranks-th
 * batch, and the figures are the job's. */
int rm_trainer_evaluate(rm_trainer *t, rm_trainer_eval *out, rm_err *e);

/* Saves a snapshot of the current state now (atomically). */
int rm_trainer_save(rm_trainer *t, const char *path, rm_err *e);

/* Steps done; the executor (parameters, gradients) and the schedule. */
uint64_t rm_trainer_steps(const rm_trainer *t);
rm_executor *rm_trainer_executor(rm_trainer *t);
/* The memory training holds on its device, as allocated: fixed, the
 * executor's fixed bytes, the optimizer's state, the backend's own
 * memory and the gradient sum of --accum (the footprint's fixed bytes,
 * measured); arena, the arena's high-water mark so far. */
void rm_trainer_memory_used(const rm_trainer *t, size_t *fixed, size_t *arena);
/* The optimizer updating the executor's parameters: a benchmark drives
 * rm_executor_step and rm_optim_step itself (bench/gpu_step.c) to time a
 * step without the data pipeline. Steps taken that way do not advance
 * rm_trainer_steps. */
rm_optim *rm_trainer_optimizer(rm_trainer *t);
const rm_model *rm_trainer_model(const rm_trainer *t);

/* The class count and task a model trains on, from its loss layer: the
 * channels of the loss layer's input (the last linear's outputs, or the last
 * convolution's filters). */
void rm_trainer_model_task(int *classes, rm_task *task, const rm_model *m);

#endif
