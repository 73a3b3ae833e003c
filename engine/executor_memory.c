/* The executor's fixed memory: what it needs for a model at a batch, one
 * allocation each on the backend, the parameters laid out and initialised,
 * and host copies of them. */
#include <stdlib.h>
#include <string.h>

#include "executor_internal.h"
#include "rng.h"

int rm_executor_workspace_needed(size_t *out, const rm_model *m, int batch, rm_err *e)
{
    return rm_executor_workspace_needed_on(out, m, batch, RM_BACKEND_CPU, e);
}

int rm_executor_workspace_needed_on(size_t *out, const rm_model *m, int batch, rm_backend_kind kind, rm_err *e)
{
    *out = 0;
    rm_shape *ins = malloc(((size_t)m->ninputs + 1) * sizeof *ins);
    rm_shape *outs = malloc((size_t)m->nlayers * sizeof *outs);
    int rc =
        !ins || !outs ? rm_errorf(e, RM_ERR_NOMEM, "executor: out of memory") : rm_model_shapes(ins, outs, m, batch, e);
    for (int i = 0; !rc && i < m->nlayers; i++) {
        const rm_model_layer *ly = &m->layers[i];
        for (int backward = 0; backward < 2; backward++) {
            size_t w =
                rm_backend_kind_layer_workspace(kind, ly->desc, &ly->cfg, &ins[ly->in_at], ly->nin, outs[i], backward);
            if (w > *out) *out = w;
        }
    }
    free(ins);
    free(outs);
    return rc;
}

/* *total += count elements of size bytes, aligned as allocated (*part); -1
 * (and nothing added) when the sum would pass RM_MAX_DEVICE_BYTES: a config
 * may declare layers of 2^60 weights each, and a total wrapped around 2^64
 * once printed as "fixed 80 MiB". *total stays at most the bound, so
 * nothing here wraps. */
static int add_aligned(size_t *total, size_t *part, size_t count, size_t size)
{
    size_t room = RM_MAX_DEVICE_BYTES - *total;
    if (count > room / size || rm_align_up(count * size) > room) return -1;
    *part = rm_align_up(count * size);
    *total += *part;
    return 0;
}

int rm_executor_fixed_needed(rm_executor_fixed *f, const rm_model *m, int batch, const rm_backend *be, rm_err *e)
{
    memset(f, 0, sizeof *f);
    rm_backend_kind kind = be ? be->kind : RM_BACKEND_CPU;
    int rc = rm_executor_workspace_needed_on(&f->workspace_bytes, m, batch, kind, e);
    if (rc) return rc;
    size_t loss_slot = 0; /* the loss slot: a download per run waits for its work */
    if (add_aligned(&f->total, &f->weights, m->param_count, sizeof(float)) ||
        add_aligned(&f->total, &f->grads, m->param_count, sizeof(float)) ||
        add_aligned(&f->total, &f->buffers, m->buffer_count, sizeof(float)) ||
        add_aligned(&f->total, &f->labels, rm_model_label_count(m, batch), sizeof(int32_t)) ||
        (be && be->queued && add_aligned(&f->total, &loss_slot, 1, sizeof(float))) ||
        add_aligned(&f->total, &f->workspace, f->workspace_bytes, 1))
        return rm_errorf(e, RM_ERR_INVALID, RM_FIXED_TOO_LARGE, m->path, batch);
    f->labels += loss_slot;
    return RM_OK;
}

int rm_executor_alloc_fixed(rm_executor *ex, void **ptr, size_t bytes, rm_err *e)
{
    *ptr = NULL;
    if (bytes == 0) return RM_OK;
    int rc = rm_backend_alloc(ex->be, ptr, bytes, e);
    if (rc) {
        rm_err_context(e, "executor: fixed memory");
        return rc;
    }
    ex->fixed_bytes += rm_align_up(bytes);
    return RM_OK;
}

/* Lays the parameters out (layer order, w then b; gradients mirror them)
 * over the vectors params, grads and buffers, and initialises them from the
 * seed when init is set (then the vectors must be host memory). */
static int layout_params(rm_executor *ex, float *params, float *grads, float *buffers, int init, rm_err *e)
{
    const rm_model *m = ex->m;
    size_t pc = 0, bc = 0;
    rm_rng rng = rm_rng_make(ex->seed);
    for (int i = 0; i < ex->L; i++) {
        const rm_model_layer *ly = &m->layers[i];
        rm_layer_params *p = &ex->lp[i];
        memset(p, 0, sizeof *p);
        if (ly->desc->param_shapes) {
            rm_shape w = {0, 0, 0, 0}, b = {0, 0, 0, 0};
            ly->desc->param_shapes(&w, &b, &ly->cfg, ly->in_shape, ly->nin);
            size_t nw = rm_shape_numel(w), nb = rm_shape_numel(b);
            if (pc + nw + nb > ex->nparams)
                return rm_errorf(e, RM_ERR_INVALID, "executor: layer %s has more parameters than the model counts",
                                 ly->name);
            if (nw) {
                p->w = rm_tensor_make(w, params + pc);
                p->dw = rm_tensor_make(w, grads + pc);
            }
            if (nb) {
                p->b = rm_tensor_make(b, params + pc + nw);
                p->db = rm_tensor_make(b, grads + pc + nw);
            }
            pc += nw + nb;
        }
        if (ly->buffer_count) { /* batchnorm: mean then variance, one per channel */
            size_t c = ly->buffer_count / 2;
            if (bc + 2 * c > ex->nbuffers)
                return rm_errorf(e, RM_ERR_INVALID, "executor: layer %s has more buffers than the model counts",
                                 ly->name);
            rm_shape s = rm_shape_make((int)c, 1, 1, 1);
            p->running_mean = rm_tensor_make(s, buffers + bc);
            p->running_var = rm_tensor_make(s, buffers + bc + c);
            bc += 2 * c;
        }
        if (init && ly->desc->init) ly->desc->init(p, &ly->cfg, ly->in_shape, ly->nin, &rng);
    }
    if (pc != ex->nparams || bc != ex->nbuffers)
        return rm_errorf(e, RM_ERR_INVALID,
                         "executor: %zu parameters and %zu buffers laid out, the model counts %zu and %zu", pc, bc,
                         ex->nparams, ex->nbuffers);
    return RM_OK;
}

int rm_executor_init_params(rm_executor *ex, rm_err *e)
{
    /* The layers' init writes host memory, so initialise host copies
     * (grads too, which init never reads), upload them, then lay the
     * tensors out over the device vectors. Creation only: a step never
     * allocates. */
    size_t np = ex->nparams ? ex->nparams : 1, nb = ex->nbuffers ? ex->nbuffers : 1;
    float *hp = calloc(np, sizeof(float)), *hg = calloc(np, sizeof(float)), *hb = calloc(nb, sizeof(float));
    int rc = !hp || !hg || !hb ? rm_errorf(e, RM_ERR_NOMEM, "executor: no host memory to initialise the parameters")
                               : layout_params(ex, hp, hg, hb, 1, e);
    /* A model that carries its weights (an imported network) starts from
     * them; the layers' init above still ran, so the seed's stream is the
     * same whichever way a model is initialised. */
    if (!rc && ex->m->init_params) memcpy(hp, ex->m->init_params, ex->nparams * sizeof(float));
    if (!rc && ex->m->init_buffers) memcpy(hb, ex->m->init_buffers, ex->nbuffers * sizeof(float));
    const rm_backend_ops *ops = ex->be->ops;
    if (!rc && ex->nparams) rc = ops->upload(ex->be->ctx, ex->params, hp, ex->nparams * sizeof(float), e);
    if (!rc && ex->nbuffers) rc = ops->upload(ex->be->ctx, ex->buffers, hb, ex->nbuffers * sizeof(float), e);
    if (!rc && ex->nparams) rc = ops->zero(ex->be->ctx, ex->grads, ex->nparams * sizeof(float), e);
    /* The uploads read host memory asynchronously: wait before freeing it. */
    if (!rc) rc = ops->sync(ex->be->ctx, e);
    free(hp);
    free(hg);
    free(hb);
    if (rc) {
        rm_err_context(e, "executor: initialising the parameters on %s", ex->be->name);
        return rc;
    }
    return layout_params(ex, ex->params, ex->grads, ex->buffers, 0, e);
}

/* Host <-> device copies of the fixed vectors (memcpy on the CPU backend). */
static int fixed_copy(rm_executor *ex, void *host, float *dev, size_t count, int up, const char *what, rm_err *e)
{
    if (!count) return RM_OK;
    if (!host) return rm_errorf(e, RM_ERR_INVALID, "executor: no host buffer for the %s", what);
    const rm_backend_ops *ops = ex->be->ops;
    size_t bytes = count * sizeof(float);
    int rc = up ? ops->upload(ex->be->ctx, dev, host, bytes, e) : ops->download(ex->be->ctx, host, dev, bytes, e);
    /* An upload reads host memory asynchronously: done before returning. */
    if (!rc && up) rc = ops->sync(ex->be->ctx, e);
    if (rc) rm_err_context(e, "executor: %s the %s", up ? "uploading" : "downloading", what);
    return rc;
}

int rm_executor_download_params(rm_executor *ex, float *host, rm_err *e)
{
    return fixed_copy(ex, host, ex->params, ex->nparams, 0, "parameters", e);
}

int rm_executor_download_grads(rm_executor *ex, float *host, rm_err *e)
{
    return fixed_copy(ex, host, ex->grads, ex->nparams, 0, "gradients", e);
}

int rm_executor_download_buffers(rm_executor *ex, float *host, rm_err *e)
{
    return fixed_copy(ex, host, ex->buffers, ex->nbuffers, 0, "batchnorm statistics", e);
}

int rm_executor_upload_params(rm_executor *ex, const float *host, rm_err *e)
{
    return fixed_copy(ex, (void *)host, ex->params, ex->nparams, 1, "parameters", e);
}

int rm_executor_upload_buffers(rm_executor *ex, const float *host, rm_err *e)
{
    return fixed_copy(ex, (void *)host, ex->buffers, ex->nbuffers, 1, "batchnorm statistics", e);
}
