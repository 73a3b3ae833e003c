/* Fuzz harness: model config files (models/config.c tokenizer, models/builder.c
 * builder). An accepted model is also re-inferred at a batch size and traced
 * into its training graph, since a config that loads but breaks those (an
 * overflowing shape, say) is as much a parser bug as a crash. */
#include <stdio.h>
#include <stdlib.h>

#include "builder.h"
#include "harnesses.h"

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
    rm_fuzz_check_model(m);
    rm_model_free(m);
    return RM_OK;
}
