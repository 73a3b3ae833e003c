/* One exported network checked by remat (bench/onnx_torchvision.sh): the
 * ONNX file imported as `remat --onnx` imports it, its parameter count, and
 * its forward pass on the exporter's input against the exporter's output.
 *
 *   remat_bench_onnx_check MODEL.onnx INPUT.pb OUTPUT.pb [softmax_xent|pixel_softmax_xent]
 *
 * Prints one line of key=value pairs (params, buffers, layers, folded,
 * max_abs, max_rel: the largest |remat - reference| and that over
 * |reference| + 1e-6) and exits 0 when every element is within
 * |d| <= 1e-4 s + 1e-3 |reference|, s the output's scale (its largest
 * magnitude, at least 1), 1 when one is not, 2 on an error. The tolerance
 * is looser than the unit tests' (1e-5 + 1e-4 |ref|) because these nets
 * are 20 to 100 layers deep: float32 rounding in a different summation
 * order grows with depth, and with the size of the activations a logit is
 * the difference of (PyTorch's own float32 logits of Inception v3, up to
 * 7.2, differ from its float64 ones by 2.5e-4). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "infer.h"
#include "onnx.h"

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: %s MODEL.onnx INPUT.pb OUTPUT.pb [softmax_xent|pixel_softmax_xent]\n", argv[0]);
        return 2;
    }
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    if (argc == 5 && rm_onnx_loss_parse(&o.loss, argv[4])) {
        fprintf(stderr, "unknown loss '%s'\n", argv[4]);
        return 2;
    }
    rm_err e = {RM_OK, ""};
    rm_model *m = NULL;
    rm_onnx_summary s;
    rm_onnx_tensor x, y;
    if (rm_onnx_load(&m, &s, argv[1], &o, &e) || rm_onnx_tensor_load(&x, argv[2], &e) ||
        rm_onnx_tensor_load(&y, argv[3], &e)) {
        fprintf(stderr, "%s\n", e.msg);
        rm_model_free(m);
        return 2;
    }
    int batch = x.rank ? (int)x.dims[0] : 0;
    size_t n = (size_t)batch * rm_model_output_numel(m);
    if (!x.data || !y.data || batch < 1 || x.count != (size_t)batch * rm_shape_numel(m->input) || y.count != n) {
        fprintf(stderr, "%s: the input (%zu values) or output (%zu) does not fit the network at batch %d\n", argv[1],
                x.count, y.count, batch);
        return 2;
    }
    float *got = malloc(n * sizeof *got);
    if (!got || rm_model_infer(got, m, x.data, batch, 1, &e)) {
        fprintf(stderr, "%s: %s\n", argv[1], got ? e.msg : "out of memory");
        return 2;
    }
    double max_abs = 0, max_rel = 0, scale = 1;
    for (size_t i = 0; i < n; i++)
        if (fabs((double)y.data[i]) > scale) scale = fabs((double)y.data[i]);
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)got[i] - (double)y.data[i]), r = d / (fabs((double)y.data[i]) + 1e-6);
        if (!(d <= 1e-4 * scale + 1e-3 * fabs((double)y.data[i]))) ok = 0;
        if (d > max_abs || isnan(d)) max_abs = d;
        if (r > max_rel || isnan(r)) max_rel = r;
    }
    printf("params=%zu buffers=%zu layers=%d nodes=%d folded=%d aliases=%d max_abs=%.3g max_rel=%.3g match=%s\n",
           m->param_count, m->buffer_count, s.layers, s.nodes, s.folded, s.aliases, max_abs, max_rel,
           ok ? "yes" : "no");
    free(got);
    rm_onnx_tensor_free(&x);
    rm_onnx_tensor_free(&y);
    rm_model_free(m);
    return ok ? 0 : 1;
}
