/* The footprint and the training problem (see footprint.h). */
#include "footprint.h"

#include <string.h>

#include "arena.h"
#include "executor.h"
#include "grad_reduce.h"
#include "trace.h"

int rm_footprint_of(rm_footprint *f, const rm_model *m, int batch, const rm_optim_options *o, const rm_backend *be,
                    rm_err *e)
{
    memset(f, 0, sizeof *f);
    rm_executor_fixed x;
    int rc = rm_executor_fixed_needed(&x, m, batch, be, e);
    if (rc) return rc;
    f->weights = x.weights;
    f->grads = x.grads;
    f->buffers = x.buffers;
    f->labels = x.labels;
    f->workspace = x.workspace;
    /* x.total is at most 2^62, so the optimizer's state (at most two copies
     * of the weights: 2^61) and the backend's own memory (a cuBLAS
     * workspace of megabytes) cannot make the sum wrap; it is then held to
     * the same bound. */
    f->optim = rm_align_up(rm_optim_state_bytes_for(o, m->param_count));
    f->backend = rm_align_up(rm_backend_fixed_bytes(be));
    f->total = x.total + f->optim + f->backend;
    if (f->total > RM_MAX_DEVICE_BYTES) return rm_errorf(e, RM_ERR_INVALID, RM_FIXED_TOO_LARGE, m->path, batch);
    return RM_OK;
}

int rm_footprint_add_grad_sum(rm_footprint *f, rm_problem *p, const rm_model *m, int accum, rm_err *e)
{
    size_t add = rm_grad_reduce_bytes(m->param_count, accum);
    if (f->total + add > RM_MAX_DEVICE_BYTES) return rm_errorf(e, RM_ERR_INVALID, RM_FIXED_TOO_LARGE, m->path, 0);
    f->grad_sum += add;
    f->total += add;
    if (p) p->fixed_bytes += add;
    return RM_OK;
}

/* The problem of g (m traced at batch) with its footprint fp. */
static int problem_of(rm_problem **out, rm_footprint *f, const rm_footprint *fp, const rm_model *m, const rm_graph *g,
                      int batch, const rm_cost_file *costs, rm_cost_batch mode, rm_err *e)
{
    int rc;
    rm_problem *p = NULL;
    if ((rc = rm_problem_from_graph(&p, g, e))) return rm_err_context(e, "%s at batch %d", m->path, batch);
    /* Aligned as the plan places them, so the simulator's peak is the plan's live peak. */
    for (int i = 0; i < p->n; i++) p->nodes[i].bytes = rm_align_up(p->nodes[i].bytes);
    p->fixed_bytes = fp->total;
    p->budget = 0;
    /* Again with the fixed bytes and the alignment: their total must not wrap either. */
    if ((rc = rm_problem_validate(p, e))) {
        rm_problem_free(p);
        return rm_err_context(e, "%s at batch %d", m->path, batch);
    }
    if (costs) {
        char name[RM_NAME_LEN];
        rm_cost_model_name(name, sizeof name, m->path);
        if ((rc = rm_cost_file_apply(p, costs, name, batch, mode, e))) {
            rm_problem_free(p);
            return rc;
        }
    }
    if (f) *f = *fp;
    *out = p;
    return RM_OK;
}

int rm_training_problem(rm_problem **out, rm_footprint *f, const rm_model *m, int batch, const rm_optim_options *o,
                        const rm_backend *be, const rm_cost_file *costs, rm_cost_batch mode, rm_err *e)
{
    *out = NULL;
    rm_footprint fp;
    int rc = rm_footprint_of(&fp, m, batch, o, be, e);
    if (rc) return rc;
    rm_graph g;
    if ((rc = rm_model_trace(&g, m, batch, e))) return rc;
    rc = problem_of(out, f, &fp, m, &g, batch, costs, mode, e);
    rm_graph_free(&g);
    return rc;
}

int rm_training_problem_of(rm_problem **out, rm_footprint *f, const rm_model *m, const rm_graph *g,
                           const rm_optim_options *o, const rm_backend *be, const rm_cost_file *costs,
                           rm_cost_batch mode, rm_err *e)
{
    *out = NULL;
    rm_footprint fp;
    int rc = rm_footprint_of(&fp, m, g->batch, o, be, e);
    if (rc) return rc;
    return problem_of(out, f, &fp, m, g, g->batch, costs, mode, e);
}
