/* The model's own queries: lookup by name, shapes at a batch size, label
 * counts. */
#include "model.h"

#include <stdlib.h>
#include <string.h>

void rm_model_free(rm_model *m)
{
    if (!m) return;
    free(m->layers);
    free(m->path);
    free(m);
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
            for (int k = 0; k < RM_MAX_INPUTS; k++)
                in[(size_t)i * RM_MAX_INPUTS + (size_t)k] = k < L->nin ? ins[k] : rm_shape_make(0, 0, 0, 0);
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
