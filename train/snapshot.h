/* Training snapshots: every parameter tensor, the batchnorm running
 * statistics, the optimizer's kind, step count and state, and the run's
 * counters and seed, in one versioned little-endian binary file
 * (docs/snapshot-format.md) that identifies the model it belongs to by the
 * names and shapes of its tensors.
 *
 * A resumed run must continue exactly where the saved one stopped, so the
 * format stores bits, not decimal text, and a file that is not exactly what
 * was written (another file, a newer version, another model, a truncated
 * copy, a flipped byte, appended data) is refused with an error naming the
 * file and what is wrong, never half-loaded: a load checks the whole file
 * before it writes to any parameter.
 *
 * A save never destroys the previous snapshot: it writes FILE.tmp, flushes
 * and fsyncs it, and renames it over FILE, so a crash or a full disk leaves
 * either the old file or the new one. */
#ifndef REMAT_TRAIN_SNAPSHOT_H
#define REMAT_TRAIN_SNAPSHOT_H

#include <stdint.h>

#include "error.h"
#include "layer.h"
#include "model.h"
#include "optim.h"

#define RM_SNAPSHOT_MAGIC "RMATCKPT" /* 8 bytes, no terminator in the file */
#define RM_SNAPSHOT_VERSION 1u
#define RM_SNAPSHOT_HEADER_BYTES 32

/* Where a run stands, saved beside the tensors. */
typedef struct rm_snapshot_counters {
    uint64_t step;        /* optimizer steps taken (the next step's number) */
    uint64_t epoch;       /* completed epochs */
    uint64_t seed;        /* the run's seed: initialisation, dropout masks, data order */
    uint64_t rng_counter; /* position of the run's sequential rm_rng (rng.h), 0 if none */
    uint32_t batch;       /* the run's global batch (samples per optimizer step), which decides what a step
                             is; 0: not recorded (files written before it was: flags bit 0 clear) */
} rm_snapshot_counters;

/* Header flags: bit 0, the counters' last word holds the global batch. */
#define RM_SNAPSHOT_FLAG_BATCH 1u

/* Writes a snapshot of model m to path, atomically (see above). lp[i] is
 * layer i's parameters (NULL for layers without any): their w and b, and the
 * running mean and variance of batchnorm layers, are saved under the names
 * "<layer>.w", "<layer>.b", "<layer>.running_mean", "<layer>.running_var".
 * opt (NULL: none saved) must update exactly the model's trainable tensors
 * (found by their w pointers). c NULL: all counters 0. On any error the
 * temporary file is removed and path is left as it was; RM_ERR_IO names the
 * file and the failing call. */
int rm_snapshot_save(const char *path, const rm_model *m, rm_layer_params *const *lp, const rm_optim *opt,
                     const rm_snapshot_counters *c, rm_err *e);

/* The least a snapshot of m takes with optim_slots optimizer state slots
 * per parameter: header, counters and trailer, and 4 bytes for each stored
 * float (the tensor table adds a few bytes per tensor). What a run checks
 * the disk has room for before its first step. */
size_t rm_snapshot_min_bytes(const rm_model *m, int optim_slots);

/* Restores a snapshot written by rm_snapshot_save for the same model:
 * parameters and running statistics into lp, the optimizer's state and step
 * count into opt (NULL: the file's optimizer state is skipped; an opt given
 * for a file without optimizer state, or of another kind or slot count, is
 * RM_ERR_INVALID), the counters into *c (may be NULL). The whole file is
 * verified first, so on any error nothing has been written (unless the file
 * changes while it is being read). Errors, each naming the file:
 *   RM_ERR_IO           cannot open or read; not a regular file (a FIFO
 *                       or a device is refused without waiting on it); a
 *                       link not followed (rm_file_open_read, atomic_file.h)
 *   RM_ERR_PARSE        wrong magic, truncated, trailing bytes, checksum
 *                       mismatch, inconsistent sizes
 *   RM_ERR_UNSUPPORTED  a version this build does not read
 *   RM_ERR_INVALID      another model (naming the first differing tensor),
 *                       or an optimizer that does not fit the saved state */
int rm_snapshot_load(rm_snapshot_counters *c, const char *path, const rm_model *m, rm_layer_params *const *lp,
                     rm_optim *opt, rm_err *e);

/* The checks rm_snapshot_load makes before it needs the model: the file
 * opens, is a regular file, and its header is a snapshot of this version
 * whose sizes match the file's (the payload checksum is left to the load).
 * Cheap, so a run can refuse a wrong --resume before a long solve. Errors
 * as rm_snapshot_load's, naming the file. */
int rm_snapshot_check_header(const char *path, rm_err *e);

/* CRC-32 (IEEE 802.3, the polynomial of zlib and PNG) of n bytes, continuing
 * from crc (0 to start): the checksum the format uses, for tests and tools. */
uint32_t rm_snapshot_crc32(uint32_t crc, const void *data, size_t n);

#endif
