/* Training steps of an exported network in remat beside PyTorch's
 * (bench/onnx_torchvision.sh; PyTorch's side is train() in
 * bench/onnx_export.py): the same starting weights (the ONNX file's), the
 * same batches in the same order, the same optimizer, then each step's loss
 * and the final weights and batchnorm statistics compared.
 *
 *   remat_bench_train_parity MODEL.onnx X.pb Y.pb STEM LOSS sgd|adam LR MOMENTUM WD BATCH
 *
 * X.pb: steps x batch images; Y.pb: their int64 labels. PyTorch trained in
 * float32 and in float64: STEM.f32.losses.pb and STEM.f64.losses.pb hold its
 * loss at each step, STEM.f32.final.onnx and STEM.f64.final.onnx its network
 * after the last step, exported as MODEL.onnx was (so remat imports their
 * tensors in the same order). Weight decay as torch.optim's one parameter
 * group: every tensor (remat train decays conv and linear weights only;
 * train/optim.h says why). Every step under checkpoint-all: a step under any
 * schedule is bit-identical to it (tests/engine).
 *
 * The float64 run is the reference: on random labels with batch-2
 * batchnorm, float32 rounding alone moves PyTorch's own losses by 1e-3 to
 * 1e-2 within 20 steps, so remat is held to what PyTorch's float32 run
 * achieves. Prints one line of key=value pairs: steps; loss_rel and
 * torch_loss_rel, the largest relative difference over the steps of
 * remat's and PyTorch's float32 losses from the float64 ones; param_rel and
 * torch_param_rel, the largest difference of a final parameter from the
 * float64 run's over the largest magnitude among them; stats_rel and
 * torch_stats_rel the same for the batchnorm statistics; vs_torch, remat's largest loss
 * difference from PyTorch's float32 run; first_loss and last_loss
 * (remat's); match=yes when remat's loss, parameter and statistics errors are each
 * within 4 times PyTorch's float32 one plus 1e-5. Exits 0 on a match, 1
 * otherwise, 2 on an error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "executor.h"
#include "onnx.h"
#include "optim.h"
#include "plan.h"
#include "schedule.h"
#include "trace.h"

static int fail(const char *what, const rm_err *e)
{
    fprintf(stderr, "%s: %s\n", what, e->msg);
    return 2;
}

/* The largest |a - b| over the largest |b|. */
static double rel_diff(const float *a, const float *b, size_t n)
{
    double d = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        double x = fabs((double)a[i] - (double)b[i]);
        if (x > d || isnan(x)) d = x;
        if (fabs((double)b[i]) > scale) scale = fabs((double)b[i]);
    }
    return scale > 0 ? d / scale : d;
}

/* The largest |a[s] - b[s]| / |b[s]| over n steps. */
static double max_rel_each(const float *a, const float *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double r = fabs((double)a[i] - (double)b[i]) / fabs((double)b[i]);
        if (r > worst || isnan(r)) worst = r;
    }
    return worst;
}

static int load_run(rm_model **final, rm_onnx_tensor *losses, const char *stem, const char *prec,
                    const rm_onnx_options *o, rm_err *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s.%s.final.onnx", stem, prec);
    int rc = rm_onnx_load(final, NULL, path, o, e);
    snprintf(path, sizeof path, "%s.%s.losses.pb", stem, prec);
    return rc ? rc : rm_onnx_tensor_load(losses, path, e);
}

int main(int argc, char **argv)
{
    if (argc != 11) {
        fprintf(stderr, "usage: %s MODEL.onnx X.pb Y.pb STEM LOSS sgd|adam LR MOMENTUM WD BATCH\n", argv[0]);
        return 2;
    }
    rm_err e = {RM_OK, ""};
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    if (rm_onnx_loss_parse(&o.loss, argv[5])) {
        fprintf(stderr, "unknown loss '%s'\n", argv[5]);
        return 2;
    }
    rm_optim_options oo = rm_optim_options_default(!strcmp(argv[6], "adam") ? RM_OPTIM_ADAM : RM_OPTIM_SGD);
    double lr = atof(argv[7]);
    oo.momentum = atof(argv[8]);
    oo.weight_decay = atof(argv[9]);
    oo.decay_all = 1;
    int batch = atoi(argv[10]);
    rm_model *m = NULL, *f32 = NULL, *f64 = NULL;
    rm_onnx_tensor x, y, l32, l64;
    if (rm_onnx_load(&m, NULL, argv[1], &o, &e) || rm_onnx_tensor_load(&x, argv[2], &e) ||
        rm_onnx_tensor_load(&y, argv[3], &e) || load_run(&f32, &l32, argv[4], "f32", &o, &e) ||
        load_run(&f64, &l64, argv[4], "f64", &o, &e))
        return fail(argv[1], &e);
    size_t per_image = rm_shape_numel(m->input), per_label = rm_model_label_count(m, 1);
    int steps = (int)l64.count;
    if (batch < 1 || steps < 1 || !x.data || !y.ints || !l32.data || !l64.data || l32.count != l64.count ||
        x.count != (size_t)steps * batch * per_image || y.count != (size_t)steps * batch * per_label ||
        m->param_count != f64->param_count || m->buffer_count != f64->buffer_count ||
        m->param_count != f32->param_count || m->buffer_count != f32->buffer_count) {
        fprintf(stderr, "%s: the batches, labels, losses or final networks do not fit the network at batch %d\n",
                argv[1], batch);
        return 2;
    }
    int32_t *labels = malloc(y.count * sizeof *labels);
    float *params = malloc((m->param_count + 1) * sizeof *params),
          *stats = malloc((m->buffer_count + 1) * sizeof *stats);
    float *losses = malloc((size_t)steps * sizeof *losses);
    rm_optim_tensor *ts = malloc(2 * (size_t)m->nlayers * sizeof *ts);
    rm_layer_params **lp = malloc((size_t)m->nlayers * sizeof *lp);
    if (!labels || !params || !stats || !losses || !ts || !lp) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    for (size_t i = 0; i < y.count; i++) labels[i] = (int32_t)y.ints[i];

    rm_graph g;
    rm_plan *plan = NULL;
    rm_backend *be = NULL;
    rm_executor *ex = NULL;
    rm_optim *opt = NULL;
    int nts = 0;
    rm_executor_options xo = {1, 0, 0};
    if (rm_model_trace(&g, m, batch, &e) || rm_schedule_plan_all(&plan, &g, &e) ||
        rm_backend_create(&be, RM_BACKEND_DEFAULT, &e) || rm_executor_create(&ex, m, &g, be, plan, &xo, &e))
        return fail(argv[1], &e);
    for (int i = 0; i < m->nlayers; i++) lp[i] = rm_executor_layer_params(ex, i);
    if (rm_optim_tensors_from_model(ts, &nts, m, lp, &e) || rm_optim_create_on(&opt, ts, nts, &oo, be, &e))
        return fail(argv[1], &e);
    for (int s = 0; s < steps; s++) {
        if (rm_executor_step(ex, &losses[s], x.data + (size_t)s * batch * per_image,
                             labels + (size_t)s * batch * per_label, (uint64_t)s, &e) ||
            rm_optim_step(opt, lr, &e))
            return fail(argv[1], &e);
        if (getenv("REMAT_PARITY_VERBOSE"))
            fprintf(stderr, "step %2d: remat %.9g, pytorch float32 %.9g, float64 %.9g\n", s + 1, (double)losses[s],
                    (double)l32.data[s], (double)l64.data[s]);
    }
    if (rm_executor_download_params(ex, params, &e) || rm_executor_download_buffers(ex, stats, &e))
        return fail(argv[1], &e);
    double lrel = max_rel_each(losses, l64.data, (size_t)steps),
           tlrel = max_rel_each(l32.data, l64.data, (size_t)steps);
    double prel = rel_diff(params, f64->init_params, m->param_count);
    double tprel = rel_diff(f32->init_params, f64->init_params, m->param_count);
    double srel = m->buffer_count ? rel_diff(stats, f64->init_buffers, m->buffer_count) : 0;
    double tsrel = m->buffer_count ? rel_diff(f32->init_buffers, f64->init_buffers, m->buffer_count) : 0;
    double vs = max_rel_each(losses, l32.data, (size_t)steps);
    int ok = lrel <= 4 * tlrel + 1e-5 && prel <= 4 * tprel + 1e-5 && srel <= 4 * tsrel + 1e-5;
    printf("steps=%d loss_rel=%.3g torch_loss_rel=%.3g param_rel=%.3g torch_param_rel=%.3g stats_rel=%.3g "
           "torch_stats_rel=%.3g vs_torch=%.3g first_loss=%.6g last_loss=%.6g match=%s\n",
           steps, lrel, tlrel, prel, tprel, srel, tsrel, vs, (double)losses[0], (double)losses[steps - 1],
           ok ? "yes" : "no");
    rm_optim_free(opt);
    rm_executor_free(ex);
    rm_backend_free(be);
    rm_plan_free(plan);
    rm_graph_free(&g);
    rm_onnx_tensor_free(&x);
    rm_onnx_tensor_free(&y);
    rm_onnx_tensor_free(&l32);
    rm_onnx_tensor_free(&l64);
    rm_model_free(m);
    rm_model_free(f32);
    rm_model_free(f64);
    free(labels), free(params), free(stats), free(losses), free(ts), free(lp);
    return ok ? 0 : 1;
}
