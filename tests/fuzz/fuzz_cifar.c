/* Fuzz harness: CIFAR-10 binary batches (data/cifar.c). Input: one mode byte,
 * then the data; with bit 0 of the mode set it is cut into two batch files at
 * the record boundary nearest its middle, so the multi-file path (sizes
 * summed first, then every file read) is fuzzed too. Every sample of an
 * accepted dataset is loaded. */
#include <stdlib.h>

#include "dataset.h"
#include "harnesses.h"

#define RECORD 3073

int rm_fuzz_cifar(const uint8_t *data, size_t size)
{
    if (size < 1) return RM_ERR_INVALID;
    int two = data[0] & 1;
    data++, size--;
    size_t split = two ? (size / 2 + RECORD / 2) / RECORD * RECORD : size;
    if (split > size) split = size;
    rm_fuzz_clear();
    char a[256], b[256];
    rm_fuzz_write(a, sizeof a, "data_batch_1.bin", data, split);
    if (two) rm_fuzz_write(b, sizeof b, "data_batch_2.bin", data + split, size - split);
    const char *paths[2] = {a, b};
    rm_dataset *ds = NULL;
    rm_err e = {RM_OK, ""};
    int rc = rm_dataset_cifar10_open(&ds, paths, two ? 2 : 1, &e);
    rm_fuzz_check_err(rc, &e);
    if (rc) {
        if (ds) abort();
        return rc;
    }
    rm_err ve = {RM_OK, ""};
    if (rm_dataset_validate(ds, &ve)) abort();
    rm_dataset_free(ds);
    return RM_OK;
}
