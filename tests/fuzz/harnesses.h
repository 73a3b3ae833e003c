/* Fuzz harnesses: one per parser of outside input. Each takes arbitrary
 * bytes, feeds them to the real public loader (through a temporary file,
 * since the loaders take paths), checks what must hold whatever the input,
 * and frees everything. A parse error is a normal result, not a finding:
 * findings are crashes, sanitizer reports, leaks and the abort()s below.
 *
 * The same functions run in two places: libFuzzer executables (fuzz_main.c,
 * only in a REMAT_FUZZ build) and the Criterion test test_fuzz_regress.c,
 * which replays every corpus file and every saved crash in the normal suites.
 *
 * Return value: the loader's rm_code (RM_OK when the input was accepted), so
 * the regression test can also assert that ok-* seeds load and bad-* ones
 * are refused. RM_FUZZ_VERBOSE=1 in the environment prints every refusal. */
#ifndef REMAT_TESTS_FUZZ_HARNESSES_H
#define REMAT_TESTS_FUZZ_HARNESSES_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

int rm_fuzz_config(const uint8_t *data, size_t size);   /* model configs: config.c + model.c */
int rm_fuzz_problem(const uint8_t *data, size_t size);  /* problem files: scheduler/problem.c */
int rm_fuzz_schedule(const uint8_t *data, size_t size); /* schedule files: scheduler/schedule_file.c */
int rm_fuzz_snapshot(const uint8_t *data, size_t size); /* snapshots: train/snapshot.c */
int rm_fuzz_mnist(const uint8_t *data, size_t size);    /* idx3 + idx1 files: data/mnist.c */
int rm_fuzz_cifar(const uint8_t *data, size_t size);    /* CIFAR-10 binary batches: data/cifar.c */
int rm_fuzz_image(const uint8_t *data, size_t size);    /* images and masks: data/image*.c, segmentation.c */
int rm_fuzz_costs(const uint8_t *data, size_t size);    /* profiled cost files: scheduler/cost_file.c */
int rm_fuzz_onnx(const uint8_t *data, size_t size);     /* ONNX models and tensors: models/onnx_*.c */

/* The ONNX harness's structure-aware mutator (libFuzzer's
 * LLVMFuzzerCustomMutator in fuzz_onnx's executable): one change to the
 * protobuf structure of data (size bytes, room for max_size), chosen by
 * seed: a message nested in itself up to 3000 times, a field duplicated or
 * dropped, an extreme int64 or a NaN or infinite float put in a tensor or
 * an attribute, a string or bytes field changed by byte_mutate; every
 * enclosing length prefix rewritten to match. byte_mutate (libFuzzer's
 * LLVMFuzzerMutate; NULL in tests, which then get only the structural
 * mutations) also serves when a change does not fit. Returns the new size. */
size_t rm_fuzz_onnx_mutate(uint8_t *data, size_t size, size_t max_size, unsigned seed,
                           size_t (*byte_mutate)(uint8_t *data, size_t size, size_t max_size));

typedef struct rm_fuzz_harness {
    const char *name; /* "config": corpus tests/fuzz/corpus/config, executable fuzz_config */
    int (*run)(const uint8_t *data, size_t size);
} rm_fuzz_harness;

/* Every harness, ended by a {NULL, NULL} entry. */
extern const rm_fuzz_harness rm_fuzz_harnesses[];

/* ---- shared helpers (fuzz_util.c) ---- */

/* Writes size bytes to <per-process temp dir>/name and puts its path in
 * path (capacity len). Aborts on failure: a harness that cannot write its
 * input tests nothing. rel may contain '/': parent folders are created. */
void rm_fuzz_write(char *path, size_t len, const char *rel, const uint8_t *data, size_t size);
/* The per-process temp dir itself (created on first use), e.g.
 * /dev/shm/remat-fuzz-1234 (or under /tmp when there is no /dev/shm). */
const char *rm_fuzz_dir(void);
/* Removes everything under the temp dir (between inputs: stale files from
 * the previous input must not be seen by the next). */
void rm_fuzz_clear(void);
/* What must hold for every result: an error has a code and a terminated,
 * non-empty message; success leaves no error code. Aborts otherwise. */
void rm_fuzz_check_err(int rc, const rm_err *e);

/* What must hold for every model a parser accepts: it re-infers its
 * shapes at batch 2 and (up to 256 layers) traces into a training graph,
 * or refuses with a proper error. Aborts otherwise. */
struct rm_model;
void rm_fuzz_check_model(const struct rm_model *m);

/* The fixed tiny model the snapshot harness loads against, with its
 * parameter tensors laid out as the trainer does; gen_seeds.c saves the seed
 * snapshots from the same net. */
typedef struct rm_fuzz_net rm_fuzz_net;
rm_fuzz_net *rm_fuzz_net_make(void);
void rm_fuzz_net_free(rm_fuzz_net *n);
/* kind: 0 none, 1 SGD with momentum, 2 Adam, 3 SGD without momentum.
 * Returns the checkpoint_load/save result. */
int rm_fuzz_net_save(rm_fuzz_net *n, const char *path, int kind, rm_err *e);

/* The fixed problem the schedule harness validates schedules against: the
 * two-layer example docs/examples/two-layer.txt. */
struct rm_problem;
int rm_fuzz_schedule_problem(struct rm_problem **out, rm_err *e);

#endif
