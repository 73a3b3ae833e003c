/* Fuzz harness: MNIST idx files (data/mnist.c). The input is the image file
 * followed by the label file, split where the image file's own header says
 * it ends (16 + count*rows*cols bytes, or the whole input when that is
 * beyond it), so a valid pair is a valid input and every header field steers
 * both files. Every sample of an accepted dataset is loaded. */
#include <stdlib.h>

#include "dataset.h"
#include "harnesses.h"

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int rm_fuzz_mnist(const uint8_t *data, size_t size)
{
    size_t split = size;
    if (size >= 16) {
        uint64_t body = (uint64_t)be32(data + 4) * be32(data + 8) * be32(data + 12); /* < 2^96: may wrap, harmless */
        if (body <= size - 16) split = 16 + (size_t)body;
    }
    rm_fuzz_clear();
    char images[256], labels[256];
    rm_fuzz_write(images, sizeof images, "images-idx3-ubyte", data, split);
    rm_fuzz_write(labels, sizeof labels, "labels-idx1-ubyte", data + split, size - split);
    rm_dataset *ds = NULL;
    rm_err e = {RM_OK, ""};
    int rc = rm_dataset_mnist_open(&ds, images, labels, &e);
    rm_fuzz_check_err(rc, &e);
    if (rc) {
        if (ds) abort();
        return rc;
    }
    rm_err ve = {RM_OK, ""};
    if (rm_dataset_validate(ds, &ve)) abort(); /* checked at open: every sample must load */
    rm_dataset_free(ds);
    return RM_OK;
}
