/* Profiled cost files (docs/cost-format.md): the measured seconds of every
 * node of a training graph, written by `remat profile` and accepted by
 * `remat plan`, `maxbatch` and `train --costs FILE` in place of the FLOP
 * costs the problem is traced with. FLOPs are a poor proxy for time (a ReLU
 * has few FLOPs but moves as many bytes as a convolution's output; small
 * convolutions run far below peak), and the schedule that minimises
 * recomputed FLOPs is not always the one that minimises recomputed time.
 *
 * The file names the model, the batch it was measured at, the device and the
 * node count, then one line per node (index, name, seconds). Reading is
 * strict; applying a file to a problem checks it belongs to that problem
 * (same nodes, in order, with the same names; the same model; the same
 * batch, unless linear scaling is asked for), and every error names the
 * file and line. Lives in scheduler/ because it only touches rm_problem. */
#ifndef REMAT_COST_FILE_H
#define REMAT_COST_FILE_H

#include <stddef.h>

#include "error.h"
#include "problem.h"

#define RM_COST_FILE_VERSION 1

typedef struct rm_cost_entry {
    char name[RM_NAME_LEN]; /* the graph node's name ("" for none, "-" in the file) */
    double seconds;         /* finite, >= 0 */
    int line;               /* where it was read (0 when built in memory) */
} rm_cost_entry;

typedef struct rm_cost_file {
    char model[RM_NAME_LEN];  /* the model's name: its config's file name without ".cfg" */
    int batch;                /* the batch size it was measured at (>= 1) */
    char device[RM_NAME_LEN]; /* the backend that measured it: "cpu" or "cuda" */
    int n;
    rm_cost_entry *nodes; /* [n] */
    char path[256];       /* the file it was read from, for messages ("" when built in memory) */
    int header_line;
} rm_cost_file;

/* An empty cost file of n nodes (names empty, seconds 0). model and device
 * must be non-empty tokens without spaces or '#'. */
int rm_cost_file_create(rm_cost_file **out, int n, const char *model, int batch, const char *device, rm_err *e);
void rm_cost_file_free(rm_cost_file *c);

/* Strict reader: errors are RM_ERR_PARSE "FILE:LINE: what" (RM_ERR_IO when
 * the file cannot be opened). */
int rm_cost_file_read(rm_cost_file **out, const char *path, rm_err *e);
/* Writes atomically (base/atomic_file.h), seconds to 17 significant digits
 * so a written file reads back bit for bit. comment (may be NULL) is written
 * as '#' lines after the header: how the numbers were measured. */
int rm_cost_file_write(const rm_cost_file *c, const char *path, const char *comment, rm_err *e);

/* The model name a cost file records for a config path: its file name
 * without directories and without a ".cfg" extension ("models/vgg-tiny.cfg"
 * -> "vgg-tiny"). */
void rm_cost_model_name(char *buf, size_t len, const char *cfg_path);

/* How rm_cost_file_apply treats the problem's batch. */
typedef enum rm_cost_batch {
    RM_COST_SAME_BATCH = 0, /* the problem's batch must be the file's (else RM_ERR_INVALID) */
    RM_COST_SCALE_BATCH     /* costs are scaled by batch / file batch (a linear model of time) */
} rm_cost_batch;

/* Replaces p's node costs by c's seconds. model (NULL: not checked, e.g. a
 * problem file) must be c->model; batch (0: not checked) must be c->batch
 * unless mode is RM_COST_SCALE_BATCH. The node count and every node's name
 * must match, index by index. Nodes without dependencies are inputs, loaded
 * rather than computed: their cost is 0, and the file must say 0 for them.
 * Every check comes before any cost changes, so on error p is untouched.
 * Errors are RM_ERR_INVALID naming the file and line. */
int rm_cost_file_apply(rm_problem *p, const rm_cost_file *c, const char *model, int batch, rm_cost_batch mode,
                       rm_err *e);

#endif
