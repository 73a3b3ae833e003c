/* Fuzz harness: ONNX files (models/onnx_read.c, protobuf-c's decoder, and
 * the importer, models/onnx_import.c and onnx_ops.c). The same bytes are
 * also read as a tensor file (rm_onnx_tensor_load, what the backend tests
 * read). An accepted model is re-inferred at a batch size and traced, as a
 * config is in fuzz_config.c: a network that imports but breaks those is as
 * much an importer bug as a crash. The loss is chosen to fit the output
 * (RM_ONNX_LOSS_AUTO) so that more inputs get through to the end. */
#include <stdio.h>
#include <stdlib.h>

#include "harnesses.h"
#include "onnx.h"

int rm_fuzz_onnx(const uint8_t *data, size_t size)
{
    char path[256];
    rm_fuzz_write(path, sizeof path, "model.onnx", data, size);
    rm_onnx_tensor t;
    rm_err te = {RM_OK, ""};
    int trc = rm_onnx_tensor_load(&t, path, &te);
    rm_fuzz_check_err(trc, &te);
    if (!trc) {
        if (!t.name || (!t.data == !t.ints && t.count)) abort(); /* exactly one kind of values */
        rm_onnx_tensor_free(&t);
    }
    rm_onnx_options o;
    rm_onnx_options_default(&o);
    o.loss = RM_ONNX_LOSS_AUTO;
    rm_err e = {RM_OK, ""};
    rm_model *m = NULL;
    rm_onnx_summary sum;
    int rc = rm_onnx_load(&m, &sum, path, &o, &e);
    rm_fuzz_check_err(rc, &e);
    if (rc) {
        if (m) abort(); /* a failed import hands back nothing */
        return rc;
    }
    if (m->nlayers < 2 || sum.layers != m->nlayers || !m->init_params || !m->init_buffers) abort();
    rm_fuzz_check_model(m);
    rm_model_free(m);
    return RM_OK;
}
