/* Optimizers (SGD with momentum, Adam) over a fixed list of parameter
 * tensors and their gradients, and learning-rate schedules.
 *
 * The parameters, their gradients and the optimizer state are fixed memory
 * too: the optimizer keeps pointers to the caller's
 * parameter and gradient storage (the executor's, which never moves) and
 * allocates its own state once at creation, so a step allocates nothing.
 * rm_optim_state_bytes_for tells the memory accounting how much state an
 * optimizer will need before it exists.
 *
 * Update rules (PyTorch's, so results can be compared with torch.optim):
 *   SGD:  g = dw + wd*w (for tensors that decay)
 *         v = mu*v + g                     (no dampening; momentum 0: v is g, no state)
 *         w -= lr * (nesterov ? g + mu*v : v)
 *   Adam: g = dw + wd*w (L2 style, as torch.optim.Adam; decoupled_wd selects
 *         AdamW instead: w *= 1 - lr*wd before the update, g = dw)
 *         m = b1*m + (1-b1)*g;  v = b2*v + (1-b2)*g*g;  t = t + 1
 *         w -= (lr / (1-b1^t)) * m / (sqrt(v) / sqrt(1-b2^t) + eps)
 *
 * Weight decay: by default only tensors marked `decay` are decayed, and
 * rm_optim_tensors_from_model marks the weights of conv, linear and
 * transposed conv layers only; biases and batchnorm gamma/beta are not
 * decayed, because shrinking them towards zero regularises nothing useful
 * (a bias or a BN scale does not add capacity) and hurts accuracy (Goyal et
 * al. 2017, "Accurate, Large Minibatch SGD", section 5.1). decay_all = 1
 * decays every tensor, which is what torch.optim does with one param group. */
#ifndef REMAT_TRAIN_OPTIM_H
#define REMAT_TRAIN_OPTIM_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "error.h"
#include "layer.h"
#include "model.h"

typedef enum rm_optim_kind {
    RM_OPTIM_NONE = 0, /* no optimizer (a snapshot of weights only) */
    RM_OPTIM_SGD = 1,
    RM_OPTIM_ADAM = 2
} rm_optim_kind;

/* One parameter tensor as the optimizer sees it: n floats at w, updated
 * from the n gradients at dw. */
typedef struct rm_optim_tensor {
    float *w;        /* [n] */
    const float *dw; /* [n] */
    size_t n;
    int decay; /* 1: weight decay applies (unless decay_all overrides) */
} rm_optim_tensor;

/* The largest learning rate or weight decay: the update kernels take them
 * as floats, and a larger double (--lr 1e308) became inf there, failing
 * only once the run had started. */
#define RM_OPTIM_MAX_RATE 3.4028234663852886e38 /* FLT_MAX */

/* Hyper-parameters are doubles, as in PyTorch, and derived constants such
 * as 1 - beta2 are computed in double before rounding to float: (float)(1 -
 * 0.999) is 0.001f, while 1 - 0.999f is 0.00099998713f, which would put the
 * second moment 1.3e-5 off PyTorch's. */
typedef struct rm_optim_options {
    rm_optim_kind kind;
    double weight_decay; /* >= 0 */
    int decay_all;       /* 1: decay every tensor, ignoring rm_optim_tensor.decay */
    /* SGD */
    double momentum; /* in [0, 1); 0 keeps no state */
    int nesterov;    /* needs momentum > 0 */
    /* Adam */
    double beta1, beta2; /* in [0, 1) */
    double eps;          /* > 0 */
    int decoupled_wd;    /* 1: AdamW's decoupled decay instead of L2 */
} rm_optim_options;

typedef struct rm_optim rm_optim;

/* PyTorch's defaults for a kind: SGD momentum 0.9 (torch's default is 0, but
 * momentum SGD is what anyone training a CNN means), Adam beta1 0.9, beta2
 * 0.999, eps 1e-8; no weight decay; decay_all 0. */
rm_optim_options rm_optim_options_default(rm_optim_kind kind);

/* RM_ERR_INVALID naming the first bad field. */
int rm_optim_options_check(const rm_optim_options *o, rm_err *e);

/* How many state floats an optimizer keeps per parameter: SGD 1 (momentum
 * buffer; 0 when momentum is 0), Adam 2 (m and v). */
int rm_optim_slots_for(const rm_optim_options *o);
/* State bytes for param_count parameters: what the fixed-memory accounting
 * subtracts from the budget (SGD 1x, Adam 2x the parameters' bytes). */
size_t rm_optim_state_bytes_for(const rm_optim_options *o, size_t param_count);

/* The trainable tensors of a model, in layer order, w then b (the executor's
 * parameter order): out needs room for 2 * m->nlayers entries. lp[i] is
 * layer i's parameters (NULL or tensors with NULL data for layers without
 * any). Weights of conv, linear and transposed conv layers get decay = 1;
 * biases and batchnorm gamma and beta decay = 0. RM_ERR_INVALID when the
 * tensors do not add up to m->param_count or a gradient is missing. */
int rm_optim_tensors_from_model(rm_optim_tensor *out, int *count, const rm_model *m, rm_layer_params *const *lp,
                                rm_err *e);

/* Copies the tensor list (the tensors' memory must outlive the optimizer)
 * and allocates the state, zeroed. opts NULL: SGD defaults. Host memory. */
int rm_optim_create(rm_optim **out, const rm_optim_tensor *tensors, int count, const rm_optim_options *opts, rm_err *e);
/* The same on a backend (NULL: the host backend, as rm_optim_create), which
 * must outlive the optimizer. The tensors' w and dw are memory of be (the
 * executor's, on the same backend; DEVICE pointers on a CUDA backend), the
 * state is allocated there once here, and a step calls be's sgd_update or
 * adam_update once per tensor (on a device: queued, without waiting; the
 * same float operations as the CPU loops, so the same bits). */
int rm_optim_create_on(rm_optim **out, const rm_optim_tensor *tensors, int count, const rm_optim_options *opts,
                       rm_backend *be, rm_err *e);
void rm_optim_free(rm_optim *o);
/* The backend of a device optimizer; NULL for one in host memory. */
rm_backend *rm_optim_backend(const rm_optim *o);
/* Copies the state and step count of src into dst, host or device either
 * side (a device optimizer's state to a host twin for a snapshot, and
 * back): same kind, slots and tensor sizes, else RM_ERR_INVALID. Returns
 * once the copy is complete. */
int rm_optim_state_copy(rm_optim *dst, const rm_optim *src, rm_err *e);

/* One update of every tensor from its current gradient at learning rate lr
 * (finite, >= 0; rm_lr_at's value). Allocates nothing. On CUDA the updates
 * are queued, not waited for (the next executor step orders after them). */
int rm_optim_step(rm_optim *o, double lr, rm_err *e);

/* Zeroes the state and the step count (a fresh optimizer; on CUDA queued). */
void rm_optim_reset(rm_optim *o);

const rm_optim_options *rm_optim_options_of(const rm_optim *o);
int rm_optim_slots(const rm_optim *o);
size_t rm_optim_state_bytes(const rm_optim *o);
size_t rm_optim_param_count(const rm_optim *o);
int rm_optim_tensor_count(const rm_optim *o);
const rm_optim_tensor *rm_optim_tensor_at(const rm_optim *o, int i);

/* Steps taken (Adam's t, which its bias correction depends on). Set by a
 * snapshot restore. */
uint64_t rm_optim_steps(const rm_optim *o);
void rm_optim_set_steps(rm_optim *o, uint64_t steps);

/* Index of the tensor whose parameters are at w, or -1. */
int rm_optim_find(const rm_optim *o, const float *w);
/* State slot `slot` of tensor i (SGD: 0 = momentum; Adam: 0 = m, 1 = v):
 * rm_optim_tensor_at(o, i)->n floats; NULL if out of range. A DEVICE pointer
 * for an optimizer on CUDA (read it through rm_optim_state_copy into a host
 * twin). Takes a const
 * optimizer, as strchr does, so a snapshot save can read the state of a
 * const one; only write through it when o is yours to modify. */
float *rm_optim_state(const rm_optim *o, int i, int slot);

/* ---- learning-rate schedules ---------------------------------------------- */

typedef enum rm_lr_kind {
    RM_LR_CONSTANT = 0,
    RM_LR_STEP,  /* base * gamma^floor(step / step_size) */
    RM_LR_COSINE /* min + (base - min) * (1 + cos(pi * progress)) / 2 */
} rm_lr_kind;

/* Steps are optimizer steps counted from 0. A schedule in epochs is the same
 * with step_size (and warmup_steps) multiplied by the steps per epoch. */
typedef struct rm_lr_schedule {
    rm_lr_kind kind;
    double base_lr;        /* > 0 */
    uint64_t warmup_steps; /* linear warmup: step s < warmup gets base * (s + 1) / warmup, any kind */
    /* step */
    uint64_t step_size; /* >= 1 */
    double gamma;       /* in (0, 1] */
    /* cosine: progress = (step - warmup) / (total - warmup), clamped to [0, 1],
     * so the rate is base right after warmup and min_lr at step total */
    double min_lr; /* in [0, base_lr] */
} rm_lr_schedule;

/* A schedule of a kind with base_lr and neutral settings (no warmup, step
 * size 1 and gamma 1, min_lr 0). */
rm_lr_schedule rm_lr_schedule_make(rm_lr_kind kind, double base_lr);
/* RM_ERR_INVALID naming the first bad field. */
int rm_lr_schedule_check(const rm_lr_schedule *s, rm_err *e);
/* The learning rate at step (0-based) of a run of total_steps steps: a pure
 * function, valid for a schedule that passes rm_lr_schedule_check. Steps past
 * the end keep the last rate. total_steps matters only to cosine. */
double rm_lr_at(const rm_lr_schedule *s, uint64_t step, uint64_t total_steps);

#endif
