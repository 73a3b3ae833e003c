/* The model's own queries: lookup by name, shapes at a batch size, label
 * counts. */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rm_model_free(rm_model *m)
{
    if (!m) return;
    for (int i = 0; i < m->nlayers; i++) free(m->layers[i].inputs), free(m->layers[i].in_shape);
    free(m->layers);
    free(m->path);
    free(m->init_params);
    free(m->init_buffers);
    free(m);
}

/* The layer's part of completing: its inputs, shapes and counts. */
static int layer_complete(rm_model *m, rm_model_layer *L, rm_err *e)
{
    const rm_layer_desc *d = L->desc;
    if (!d->infer || !d->flops)
        return rm_errorf(e, RM_ERR_UNSUPPORTED, "layer [%s] is not implemented in this build", d->name);
    for (int k = 0; k < L->nin; k++)
        L->in_shape[k] = L->inputs[k] == RM_MODEL_INPUT ? m->input : m->layers[L->inputs[k]].out_shape;
    rm_err ie = {RM_OK, ""};
    if (d->infer(&L->out_shape, &L->cfg, L->in_shape, L->nin, &ie)) {
        char ins[RM_MAX_INPUTS * 80] = "";
        size_t used = 0;
        for (int k = 0; k < L->nin && used < sizeof ins; k++) {
            char sh[64];
            const char *src = L->inputs[k] == RM_MODEL_INPUT ? "input" : m->layers[L->inputs[k]].name;
            used += (size_t)snprintf(ins + used, sizeof ins - used, "%s%s %s", k ? ", " : "", src,
                                     rm_shape_str(L->in_shape[k], sh, sizeof sh));
        }
        return rm_errorf(e, RM_ERR_SHAPE, "shape mismatch in [%s] '%s' (inputs: %s): %s", d->name, L->name, ins,
                         ie.msg);
    }
    L->param_count = rm_layer_param_count(d, &L->cfg, L->in_shape, L->nin);
    /* Running mean and variance: fixed memory, but not trained. */
    L->buffer_count = d->kind == RM_LAYER_BATCHNORM2D ? 2 * (size_t)L->in_shape[0].c : 0;
    return RM_OK;
}

int rm_model_layer_complete(rm_model *m, int i, const int *inputs, int nin, rm_err *e)
{
    rm_model_layer *L = &m->layers[i];
    if (nin < 0 || nin > RM_MAX_INPUTS)
        return rm_errorf(e, RM_ERR_INVALID, "'%s' has %d inputs; a layer takes at most %d", L->name, nin,
                         RM_MAX_INPUTS);
    L->nin = nin;
    L->inputs = malloc(((size_t)nin + 1) * sizeof *L->inputs);
    L->in_shape = malloc(((size_t)nin + 1) * sizeof *L->in_shape);
    int rc = !L->inputs || !L->in_shape ? rm_errorf(e, RM_ERR_NOMEM, "out of memory") : RM_OK;
    if (!rc) {
        memcpy(L->inputs, inputs, (size_t)nin * sizeof *inputs);
        rc = layer_complete(m, L, e);
    }
    if (rc) { /* not part of the model: rm_model_free never sees it */
        free(L->inputs), free(L->in_shape);
        L->inputs = NULL, L->in_shape = NULL;
        return rc;
    }
    L->in_at = i ? m->layers[i - 1].in_at + m->layers[i - 1].nin : 0;
    m->ninputs = L->in_at + L->nin;
    for (int k = 0; k < L->nin; k++) {
        if (L->inputs[k] == RM_MODEL_INPUT)
            m->input_uses++;
        else
            m->layers[L->inputs[k]].uses++;
    }
    m->param_count += L->param_count;
    m->buffer_count += L->buffer_count;
    m->nlayers = i + 1;
    return RM_OK;
}

int rm_model_find(const rm_model *m, const char *name)
{
    for (int i = 0; i < m->nlayers; i++)
        if (!strcmp(m->layers[i].name, name)) return i;
    return -1;
}

int rm_model_shapes(rm_shape *in, rm_shape *out, const rm_model *m, int batch, rm_err *e)
{
    if (batch < 1) return rm_errorf(e, RM_ERR_INVALID, "%s: batch must be at least 1, got %d", m->path, batch);
    rm_shape *outs = malloc((size_t)m->nlayers * sizeof *outs);
    if (!outs) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", m->path);
    rm_shape input = m->input;
    input.n = batch;
    int rc = RM_OK;
    for (int i = 0; i < m->nlayers && !rc; i++) {
        const rm_model_layer *L = &m->layers[i];
        rm_shape ins[RM_MAX_INPUTS];
        for (int k = 0; k < L->nin; k++) ins[k] = L->inputs[k] == RM_MODEL_INPUT ? input : outs[L->inputs[k]];
        rm_err ie = {RM_OK, ""};
        rc = L->desc->infer(&outs[i], &L->cfg, ins, L->nin, &ie);
        if (rc) {
            rc = rm_errorf(e, RM_ERR_SHAPE, "%s:%d: '%s' at batch %d: %s", m->path, L->line, L->name, batch, ie.msg);
            break;
        }
        if (in)
            for (int k = 0; k < L->nin; k++) in[L->in_at + k] = ins[k];
        if (out) out[i] = outs[i];
    }
    free(outs);
    return rc;
}

size_t rm_model_label_count(const rm_model *m, int batch)
{
    const rm_model_layer *loss = &m->layers[m->nlayers - 1];
    size_t per_sample = 1;
    if (loss->desc->kind == RM_LAYER_PIXEL_SOFTMAX_XENT)
        per_sample = (size_t)loss->in_shape[0].h * (size_t)loss->in_shape[0].w;
    return per_sample * (size_t)batch;
}
