/* The forward pass of an imported network through remat's executor (see
 * onnx_forward.h). */
#include "onnx_forward.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "executor.h"
#include "plan.h"
#include "schedule.h"
#include "trace.h"

size_t onnx_output_numel(const rm_model *m)
{
    const rm_model_layer *loss = &m->layers[m->nlayers - 1];
    return rm_shape_numel(loss->in_shape[0]);
}

int onnx_forward(float *out, const rm_model *m, const float *in, int batch, rm_err *e)
{
    rm_graph g, fg;
    memset(&g, 0, sizeof g);
    memset(&fg, 0, sizeof fg);
    rm_plan *plan = NULL, *fplan = NULL;
    rm_backend *be = NULL;
    rm_executor *ex = NULL;
    size_t nlabels = rm_model_label_count(m, batch);
    int32_t *labels = calloc(nlabels ? nlabels : 1, sizeof *labels); /* class 0: every loss takes it */
    int rc = labels ? RM_OK : rm_errorf(e, RM_ERR_NOMEM, "out of memory");
    /* The executor needs a training graph and plan; inference follows the forward trace. */
    if (!rc) rc = rm_model_trace(&g, m, batch, e);
    if (!rc) rc = rm_model_trace_forward(&fg, m, batch, e);
    if (!rc) rc = rm_schedule_plan_all(&plan, &g, e);
    if (!rc) rc = rm_schedule_plan_all(&fplan, &fg, e);
    if (!rc) rc = rm_backend_cpu_create(&be, e);
    rm_executor_options o = {1, 0, 0};
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

long onnx_compare(const float *got, const float *want, size_t n, double rtol, double atol)
{
    for (size_t i = 0; i < n; i++) {
        double a = got[i], b = want[i];
        if (isnan(a) || isnan(b)) {
            if (isnan(a) && isnan(b)) continue;
            return (long)i;
        }
        if (!(fabs(a - b) <= atol + rtol * fabs(b))) return (long)i;
    }
    return -1;
}
