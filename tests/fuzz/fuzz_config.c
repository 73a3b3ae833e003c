/* Fuzz harness: model config files (models/config.c tokenizer, models/builder.c
 * builder). An accepted model is also re-inferred at a batch size and traced
 * into its training graph, since a config that loads but breaks those (an
 * overflowing shape, say) is as much a parser bug as a crash. */
#include <stdio.h>
#include <stdlib.h>

#include "harnesses.h"
#include "builder.h"
#include "trace.h"

int rm_fuzz_config(const uint8_t *data, size_t size)
{
    char path[256];
    rm_fuzz_write(path, sizeof path, "model.cfg", data, size);
    rm_err e = {RM_OK, ""};
    rm_model *m = NULL;
    int rc = rm_model_load(&m, path, &e);
    rm_fuzz_check_err(rc, &e);
    if (rc) {
        if (m) abort(); /* a failed load hands back nothing */
        return rc;
    }
    if (m->nlayers < 1) abort();
    rm_shape *in = malloc((size_t)m->nlayers * RM_MAX_INPUTS * sizeof *in);
    rm_shape *out = malloc((size_t)m->nlayers * sizeof *out);
    if (!in || !out) abort();
    rm_err se = {RM_OK, ""};
    int src = rm_model_shapes(in, out, m, 2, &se);
    rm_fuzz_check_err(src, &se);
    /* Tracing sizes every tensor; bounded to small models so a 1000-layer
     * ResNet seed does not dominate the fuzzing time. */
    if (!src && m->nlayers <= 256) {
        rm_graph g;
        rm_err te = {RM_OK, ""};
        int trc = rm_model_trace(&g, m, 1, &te);
        rm_fuzz_check_err(trc, &te);
        if (!trc) rm_graph_free(&g);
    }
    free(in);
    free(out);
    rm_model_free(m);
    return RM_OK;
}
