/* Snapshots of a training run (train/snapshot.c writes and reads the files)
 * and, on CUDA, the host twins of device state they go through. */
#include <stdlib.h>
#include <string.h>

#include "trainer_internal.h"

/* ---- host twins of device state, for snapshots ---------------------------- */

void rm_trainer_mirror_free(rm_trainer *t)
{
    rm_optim_free(t->host_opt);
    free(t->host_params);
    free(t->host_buffers);
    free(t->host_lp);
    free(t->host_lpp);
    t->host_opt = NULL, t->host_params = t->host_buffers = NULL, t->host_lp = NULL, t->host_lpp = NULL;
}

/* A device pointer inside [dev, dev + n) mapped to the same element of host. */
static float *remap(float *p, float *dev, float *host)
{
    return p ? host + (p - dev) : NULL;
}

/* Host copies of the executor's layer parameters (same layout) and a host
 * optimizer over them, with the device optimizer's kind and slots. Its
 * gradients point at the host parameters: it never steps, it only holds
 * state for rm_snapshot_save/load. */
int rm_trainer_mirror_build(rm_trainer *t, rm_err *e)
{
    const rm_model *m = t->m;
    size_t np = 0, nb = 0;
    float *dp = rm_executor_params(t->ex, &np), *dg = rm_executor_grads(t->ex, NULL);
    float *db = rm_executor_buffers(t->ex, &nb);
    t->host_params = calloc(np ? np : 1, sizeof(float));
    t->host_buffers = calloc(nb ? nb : 1, sizeof(float));
    t->host_lp = calloc((size_t)m->nlayers, sizeof *t->host_lp);
    t->host_lpp = calloc((size_t)m->nlayers, sizeof *t->host_lpp);
    rm_optim_tensor *ts = calloc(2 * (size_t)m->nlayers + 1, sizeof *ts);
    if (!t->host_params || !t->host_buffers || !t->host_lp || !t->host_lpp || !ts) {
        free(ts);
        return rm_errorf(e, RM_ERR_NOMEM, "out of host memory for the snapshot copies of the parameters");
    }
    for (int i = 0; i < m->nlayers; i++) {
        rm_layer_params *d = t->lpp[i], *h = &t->host_lp[i];
        *h = *d;
        h->w.data = remap(d->w.data, dp, t->host_params);
        h->b.data = remap(d->b.data, dp, t->host_params);
        h->dw.data = remap(d->dw.data, dg, t->host_params);
        h->db.data = remap(d->db.data, dg, t->host_params);
        h->running_mean.data = remap(d->running_mean.data, db, t->host_buffers);
        h->running_var.data = remap(d->running_var.data, db, t->host_buffers);
        t->host_lpp[i] = h;
    }
    int nts = 0;
    int rc = rm_optim_tensors_from_model(ts, &nts, m, t->host_lpp, e);
    if (!rc) rc = rm_optim_create(&t->host_opt, ts, nts, &t->cfg.optim, e);
    free(ts);
    return rc;
}

/* Device -> host twins (before a save). */
static int mirror_pull(rm_trainer *t, rm_err *e)
{
    int rc = rm_executor_download_params(t->ex, t->host_params, e);
    if (!rc) rc = rm_executor_download_buffers(t->ex, t->host_buffers, e);
    if (!rc) rc = rm_optim_state_copy(t->host_opt, t->opt, e);
    return rc;
}

/* Host twins -> device (after a load). */
static int mirror_push(rm_trainer *t, rm_err *e)
{
    int rc = rm_executor_upload_params(t->ex, t->host_params, e);
    if (!rc) rc = rm_executor_upload_buffers(t->ex, t->host_buffers, e);
    if (!rc) rc = rm_optim_state_copy(t->opt, t->host_opt, e);
    return rc;
}

/* A snapshot into the parameters and optimizer, wherever they live. */
int rm_trainer_load_snapshot(rm_trainer *t, rm_snapshot_counters *k, const char *path, rm_err *e)
{
    if (!t->host_opt) return rm_snapshot_load(k, path, t->m, t->lpp, t->opt, e);
    int rc = rm_snapshot_load(k, path, t->m, t->host_lpp, t->host_opt, e);
    if (!rc) rc = mirror_push(t, e);
    return rc;
}

int rm_trainer_save(rm_trainer *t, const char *path, rm_err *e)
{
    rm_snapshot_counters k = {t->step, t->step / (uint64_t)t->sum.epoch_steps, t->seed, 0, (uint32_t)t->global_batch};
    if (!t->host_opt) return rm_snapshot_save(path, t->m, t->lpp, t->opt, &k, e);
    int rc = mirror_pull(t, e); /* CUDA: the file is written from host copies */
    return rc ? rc : rm_snapshot_save(path, t->m, t->host_lpp, t->host_opt, &k, e);
}
