/* A model's forward pass on one batch through the executor (see infer.h). */
#include "infer.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "executor.h"
#include "plan.h"
#include "schedule.h"
#include "trace.h"

size_t rm_model_output_numel(const rm_model *m)
{
    return rm_shape_numel(m->layers[m->nlayers - 1].in_shape[0]);
}

int rm_model_infer(float *out, const rm_model *m, const float *in, int batch, uint64_t seed, rm_err *e)
{
    rm_graph g, fg;
    memset(&g, 0, sizeof g);
    memset(&fg, 0, sizeof fg);
    rm_plan *plan = NULL, *fplan = NULL;
    rm_backend *be = NULL;
    rm_executor *ex = NULL;
    size_t nlabels = rm_model_label_count(m, batch);
    int32_t *labels = calloc(nlabels ? nlabels : 1, sizeof *labels); /* class 0: every loss takes it */
    int rc = labels ? RM_OK : rm_errorf(e, RM_ERR_NOMEM, "out of memory for %zu labels", nlabels);
    /* An executor is made for a training graph and its plan; inference then
     * follows the forward trace in the same arena. */
    if (!rc) rc = rm_model_trace(&g, m, batch, e);
    if (!rc) rc = rm_model_trace_forward(&fg, m, batch, e);
    if (!rc) rc = rm_schedule_plan_all(&plan, &g, e);
    if (!rc) rc = rm_schedule_plan_all(&fplan, &fg, e);
    if (!rc) rc = rm_backend_create(&be, RM_BACKEND_DEFAULT, e);
    rm_executor_options o = {seed, 0, 0};
    if (!rc) rc = rm_executor_create(&ex, m, &g, be, plan, &o, e);
    if (!rc) rc = rm_executor_set_inference(ex, &fg, fplan, e);
    if (!rc) {
        rm_executor_set_fetch(ex, rm_trace_forward_node(m->layers[m->nlayers - 1].inputs[0]), out);
        float loss;
        rc = rm_executor_infer(ex, &loss, in, labels, batch, e);
    }
    rm_executor_free(ex);
    rm_backend_free(be);
    rm_plan_free(plan);
    rm_plan_free(fplan);
    rm_graph_free(&g);
    rm_graph_free(&fg);
    free(labels);
    return rc;
}
