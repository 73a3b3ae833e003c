/* The libFuzzer entry point of one harness, chosen at compile time by
 * RM_FUZZ_TARGET (tests/fuzz/CMakeLists.txt builds this file once per
 * harness, only in a REMAT_FUZZ=ON build). Errors are normal results; only
 * crashes, sanitizer reports and the harness's own abort()s are findings. */
#include "harnesses.h"

#ifndef RM_FUZZ_TARGET
#error "RM_FUZZ_TARGET names the harness function"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    (void)RM_FUZZ_TARGET(data, size);
    return 0;
}

#ifdef RM_FUZZ_MUTATOR
/* A harness with a structure-aware mutator (fuzz_onnx.c) gets it as
 * libFuzzer's custom mutator; libFuzzer's own byte mutation is what it
 * falls back to. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
    return RM_FUZZ_MUTATOR(data, size, max_size, seed, LLVMFuzzerMutate);
}
#endif
