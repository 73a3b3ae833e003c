/* SGD with momentum and Adam over a fixed tensor list, and learning-rate
 * schedules as pure functions of the step. The update rules and why weight
 * decay skips biases and batchnorm are in optim.h. */
#include "optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct rm_optim {
    rm_optim_options opts;
    int count;
    rm_optim_tensor *tensors; /* [count], a copy of the caller's list */
    size_t *offset;           /* [count]: first element of tensor i in each state slot */
    size_t total;             /* parameters over all tensors */
    int slots;
    float *state; /* [slots][total], zeroed at creation; memory of be */
    uint64_t steps;
    rm_backend *be; /* where tensors and state live and updates run (the host backend by default) */
};

rm_optim_options rm_optim_options_default(rm_optim_kind kind)
{
    rm_optim_options o;
    memset(&o, 0, sizeof o);
    o.kind = kind;
    o.momentum = 0.9;
    o.beta1 = 0.9;
    o.beta2 = 0.999;
    o.eps = 1e-8;
    return o;
}

static int in_unit(double x)
{
    return isfinite(x) && x >= 0.0 && x < 1.0;
}

int rm_optim_options_check(const rm_optim_options *o, rm_err *e)
{
    if (o->kind != RM_OPTIM_SGD && o->kind != RM_OPTIM_ADAM)
        return rm_errorf(e, RM_ERR_INVALID, "optimizer: unknown kind %d (expected sgd or adam)", (int)o->kind);
    if (!(o->weight_decay >= 0.0 && o->weight_decay <= RM_OPTIM_MAX_RATE))
        return rm_errorf(e, RM_ERR_INVALID, "optimizer: weight decay %g must be in [0, %g]", o->weight_decay,
                         RM_OPTIM_MAX_RATE);
    if (o->kind == RM_OPTIM_SGD) {
        if (!in_unit(o->momentum))
            return rm_errorf(e, RM_ERR_INVALID, "optimizer: sgd momentum %g must be in [0, 1)", o->momentum);
        if (o->nesterov && o->momentum == 0.0)
            return rm_errorf(e, RM_ERR_INVALID, "optimizer: nesterov momentum needs momentum > 0");
    } else {
        if (!in_unit(o->beta1))
            return rm_errorf(e, RM_ERR_INVALID, "optimizer: adam beta1 %g must be in [0, 1)", o->beta1);
        if (!in_unit(o->beta2))
            return rm_errorf(e, RM_ERR_INVALID, "optimizer: adam beta2 %g must be in [0, 1)", o->beta2);
        if (!isfinite(o->eps) || o->eps <= 0.0 || (float)o->eps <= 0.0f)
            return rm_errorf(e, RM_ERR_INVALID, "optimizer: adam eps %g must be finite and > 0 in float", o->eps);
    }
    return RM_OK;
}

int rm_optim_slots_for(const rm_optim_options *o)
{
    switch (o->kind) {
    case RM_OPTIM_SGD:
        return o->momentum != 0.0 ? 1 : 0;
    case RM_OPTIM_ADAM:
        return 2;
    default:
        return 0;
    }
}

size_t rm_optim_state_bytes_for(const rm_optim_options *o, size_t param_count)
{
    return (size_t)rm_optim_slots_for(o) * param_count * sizeof(float);
}

/* Only the weights of layers that multiply (conv, linear, conv_t) decay.
 * Depthwise filters do not: MobileNet's authors put "very little or no
 * weight decay" on them, since they hold so few parameters (Howard et al.
 * 2017, "Network Structure and Training"). */
static int layer_weight_decays(rm_layer_kind kind)
{
    return kind == RM_LAYER_CONV2D || kind == RM_LAYER_LINEAR || kind == RM_LAYER_CONV_TRANSPOSE2X2;
}

int rm_optim_tensors_from_model(rm_optim_tensor *out, int *count, const rm_model *m, rm_layer_params *const *lp,
                                rm_err *e)
{
    int k = 0;
    size_t total = 0;
    *count = 0;
    for (int i = 0; i < m->nlayers; i++) {
        rm_layer_params *p = lp[i];
        if (!p) continue;
        const rm_tensor *ws[2] = {&p->w, &p->b}, *ds[2] = {&p->dw, &p->db};
        for (int j = 0; j < 2; j++) {
            if (!ws[j]->data) continue;
            size_t n = rm_tensor_numel(ws[j]);
            if (!ds[j]->data || rm_tensor_numel(ds[j]) != n)
                return rm_errorf(e, RM_ERR_INVALID, "optimizer: layer %s: %s has no gradient of %zu elements",
                                 m->layers[i].name, j ? "b" : "w", n);
            out[k].w = ws[j]->data;
            out[k].dw = ds[j]->data;
            out[k].n = n;
            out[k].decay = j == 0 && layer_weight_decays(m->layers[i].desc->kind);
            k++;
            total += n;
        }
    }
    if (total != m->param_count)
        return rm_errorf(e, RM_ERR_INVALID, "optimizer: the layers' tensors hold %zu parameters, the model %s has %zu",
                         total, m->path ? m->path : "(unnamed)", m->param_count);
    *count = k;
    return RM_OK;
}

int rm_optim_create(rm_optim **out, const rm_optim_tensor *tensors, int count, const rm_optim_options *opts, rm_err *e)
{
    return rm_optim_create_on(out, tensors, count, opts, NULL, e);
}

int rm_optim_create_on(rm_optim **out, const rm_optim_tensor *tensors, int count, const rm_optim_options *opts,
                       rm_backend *be, rm_err *e)
{
    *out = NULL;
    if (!be) be = rm_backend_host();
    if (!be->ops->sgd_update || !be->ops->adam_update)
        return rm_errorf(e, RM_ERR_UNSUPPORTED, "optimizer: backend %s has no optimizer updates", be->name);
    rm_optim_options o = opts ? *opts : rm_optim_options_default(RM_OPTIM_SGD);
    int rc = rm_optim_options_check(&o, e);
    if (rc) return rc;
    if (count < 0 || (count > 0 && !tensors)) return rm_errorf(e, RM_ERR_INVALID, "optimizer: %d tensors given", count);
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        if (tensors[i].n && (!tensors[i].w || !tensors[i].dw))
            return rm_errorf(e, RM_ERR_INVALID, "optimizer: tensor %d has %zu elements but no %s", i, tensors[i].n,
                             tensors[i].w ? "gradient" : "parameters");
        total += tensors[i].n;
    }
    rm_optim *op = calloc(1, sizeof *op);
    if (!op) return rm_errorf(e, RM_ERR_NOMEM, "optimizer: no memory");
    op->opts = o;
    op->count = count;
    op->total = total;
    op->slots = rm_optim_slots_for(&o);
    op->be = be;
    size_t nt = count ? (size_t)count : 1;
    op->tensors = malloc(nt * sizeof *op->tensors);
    op->offset = malloc(nt * sizeof *op->offset);
    size_t nstate = (size_t)op->slots * total;
    if (!op->tensors || !op->offset) {
        rm_optim_free(op);
        return rm_errorf(e, RM_ERR_NOMEM, "optimizer: no memory for %d tensors", count);
    }
    if (nstate) { /* the state, allocated and zeroed once */
        rc = rm_backend_alloc(op->be, (void **)&op->state, nstate * sizeof(float), e);
        if (!rc) rc = op->be->ops->zero(op->be->ctx, op->state, nstate * sizeof(float), e);
        if (rc) {
            rm_err_context(e, "optimizer: %zu state bytes on %s", nstate * sizeof(float), op->be->name);
            rm_optim_free(op);
            return rc;
        }
    }
    size_t off = 0;
    for (int i = 0; i < count; i++) {
        op->tensors[i] = tensors[i];
        op->offset[i] = off;
        off += tensors[i].n;
    }
    *out = op;
    return RM_OK;
}

void rm_optim_free(rm_optim *o)
{
    if (!o) return;
    free(o->tensors);
    free(o->offset);
    if (o->state) rm_backend_release(o->be, o->state);
    free(o);
}

int rm_optim_step(rm_optim *o, double lr, rm_err *e)
{
    if (!(lr >= 0.0 && lr <= RM_OPTIM_MAX_RATE))
        return rm_errorf(e, RM_ERR_INVALID, "optimizer: learning rate %g must be in [0, %g]", lr, RM_OPTIM_MAX_RATE);
    const rm_optim_options *p = &o->opts;
    uint64_t t = o->steps + 1;
    for (int i = 0; i < o->count; i++) {
        rm_optim_tensor *tn = &o->tensors[i];
        if (!tn->n) continue;
        double wd = (p->decay_all || tn->decay) ? p->weight_decay : 0.0;
        if (p->kind == RM_OPTIM_SGD) {
            float *v = o->slots ? o->state + o->offset[i] : NULL;
            int rc = o->be->ops->sgd_update(o->be->ctx, tn->w, tn->dw, v, tn->n, (float)lr, (float)wd,
                                            (float)p->momentum, p->nesterov, e);
            if (rc) return rc; /* steps not advanced: the update was not (fully) queued */
        } else {
            rm_adam_scalars k; /* computed here, so that every backend uses the same floats */
            k.b1 = (float)p->beta1;
            k.one_minus_b1 = (float)(1.0 - p->beta1);
            k.b2 = (float)p->beta2;
            k.one_minus_b2 = (float)(1.0 - p->beta2);
            k.eps = (float)p->eps;
            k.step_size = (float)(lr / (1.0 - pow(p->beta1, (double)t)));
            k.bc2_sqrt = (float)sqrt(1.0 - pow(p->beta2, (double)t));
            /* AdamW scales w by (1 - lr*wd) and adds nothing to g; Adam adds wd*w to g. */
            k.l2 = p->decoupled_wd ? 0.0f : (float)wd;
            k.shrink = p->decoupled_wd ? (float)(1.0 - lr * wd) : 1.0f;
            float *m = o->state + o->offset[i], *v = o->state + o->total + o->offset[i];
            int rc = o->be->ops->adam_update(o->be->ctx, tn->w, tn->dw, m, v, tn->n, &k, e);
            if (rc) return rc;
        }
    }
    o->steps = t;
    return RM_OK;
}

void rm_optim_reset(rm_optim *o)
{
    if (o->state) {
        rm_err e = {RM_OK, ""};
        /* Queued like every update; a failure here would also fail the next
         * update or download, which report it. */
        (void)o->be->ops->zero(o->be->ctx, o->state, (size_t)o->slots * o->total * sizeof(float), &e);
    }
    o->steps = 0;
}

rm_backend *rm_optim_backend(const rm_optim *o)
{
    return o->be->host_memory ? NULL : o->be;
}

int rm_optim_state_copy(rm_optim *dst, const rm_optim *src, rm_err *e)
{
    if (dst->opts.kind != src->opts.kind || dst->slots != src->slots || dst->total != src->total ||
        dst->count != src->count)
        return rm_errorf(e, RM_ERR_INVALID,
                         "optimizer: state of %d slots over %zu parameters cannot be copied into one of %d slots over "
                         "%zu",
                         src->slots, src->total, dst->slots, dst->total);
    for (int i = 0; i < src->count; i++)
        if (dst->tensors[i].n != src->tensors[i].n)
            return rm_errorf(e, RM_ERR_INVALID, "optimizer: tensor %d has %zu elements here, %zu in the source", i,
                             dst->tensors[i].n, src->tensors[i].n);
    size_t bytes = (size_t)src->slots * src->total * sizeof(float);
    int rc = RM_OK;
    if (bytes) {
        int src_dev = !src->be->host_memory, dst_dev = !dst->be->host_memory;
        if (src_dev && dst_dev)
            rc = src->be->ops->copy(src->be->ctx, dst->state, src->state, bytes, e);
        else if (src_dev)
            rc = src->be->ops->download(src->be->ctx, dst->state, src->state, bytes, e);
        else if (dst_dev) {
            rc = dst->be->ops->upload(dst->be->ctx, dst->state, src->state, bytes, e);
            if (!rc) rc = dst->be->ops->sync(dst->be->ctx, e); /* src may be changed once this returns */
        } else
            memcpy(dst->state, src->state, bytes);
    }
    if (rc) {
        rm_err_context(e, "optimizer: copying the state");
        return rc;
    }
    dst->steps = src->steps;
    return RM_OK;
}

const rm_optim_options *rm_optim_options_of(const rm_optim *o)
{
    return &o->opts;
}
int rm_optim_slots(const rm_optim *o)
{
    return o->slots;
}
size_t rm_optim_state_bytes(const rm_optim *o)
{
    return (size_t)o->slots * o->total * sizeof(float);
}
size_t rm_optim_param_count(const rm_optim *o)
{
    return o->total;
}
int rm_optim_tensor_count(const rm_optim *o)
{
    return o->count;
}
uint64_t rm_optim_steps(const rm_optim *o)
{
    return o->steps;
}
void rm_optim_set_steps(rm_optim *o, uint64_t steps)
{
    o->steps = steps;
}

const rm_optim_tensor *rm_optim_tensor_at(const rm_optim *o, int i)
{
    return i >= 0 && i < o->count ? &o->tensors[i] : NULL;
}

int rm_optim_find(const rm_optim *o, const float *w)
{
    for (int i = 0; i < o->count; i++)
        if (o->tensors[i].w == w) return i;
    return -1;
}

float *rm_optim_state(const rm_optim *o, int i, int slot)
{
    if (i < 0 || i >= o->count || slot < 0 || slot >= o->slots) return NULL;
    return o->state + (size_t)slot * o->total + o->offset[i];
}

/* ---- learning-rate schedules ---------------------------------------------- */

rm_lr_schedule rm_lr_schedule_make(rm_lr_kind kind, double base_lr)
{
    rm_lr_schedule s;
    memset(&s, 0, sizeof s);
    s.kind = kind;
    s.base_lr = base_lr;
    s.step_size = 1;
    s.gamma = 1.0;
    return s;
}

int rm_lr_schedule_check(const rm_lr_schedule *s, rm_err *e)
{
    if (s->kind != RM_LR_CONSTANT && s->kind != RM_LR_STEP && s->kind != RM_LR_COSINE)
        return rm_errorf(e, RM_ERR_INVALID, "lr schedule: unknown kind %d", (int)s->kind);
    if (!isfinite(s->base_lr) || s->base_lr <= 0.0)
        return rm_errorf(e, RM_ERR_INVALID, "lr schedule: base learning rate %g must be finite and > 0", s->base_lr);
    if (s->kind == RM_LR_STEP) {
        if (s->step_size < 1) return rm_errorf(e, RM_ERR_INVALID, "lr schedule: step size must be >= 1");
        if (!isfinite(s->gamma) || s->gamma <= 0.0 || s->gamma > 1.0)
            return rm_errorf(e, RM_ERR_INVALID, "lr schedule: gamma %g must be in (0, 1]", s->gamma);
    }
    if (s->kind == RM_LR_COSINE && (!isfinite(s->min_lr) || s->min_lr < 0.0 || s->min_lr > s->base_lr))
        return rm_errorf(e, RM_ERR_INVALID, "lr schedule: minimum learning rate %g must be in [0, %g]", s->min_lr,
                         s->base_lr);
    return RM_OK;
}

double rm_lr_at(const rm_lr_schedule *s, uint64_t step, uint64_t total_steps)
{
    /* (step + 1) / warmup: the first step already moves (a rate of 0 would
     * waste it) and the last warmup step reaches base exactly. */
    if (step < s->warmup_steps) return s->base_lr * (double)(step + 1) / (double)s->warmup_steps;
    switch (s->kind) {
    case RM_LR_STEP: {
        uint64_t k = s->step_size ? step / s->step_size : 0;
        return s->base_lr * pow(s->gamma, (double)k);
    }
    case RM_LR_COSINE: {
        double span = total_steps > s->warmup_steps ? (double)(total_steps - s->warmup_steps) : 0.0;
        double progress = span > 0.0 ? (double)(step - s->warmup_steps) / span : 1.0;
        if (progress > 1.0) progress = 1.0;
        return s->min_lr + (s->base_lr - s->min_lr) * 0.5 * (1.0 + cos(3.14159265358979323846 * progress));
    }
    case RM_LR_CONSTANT:
    default:
        return s->base_lr;
    }
}
