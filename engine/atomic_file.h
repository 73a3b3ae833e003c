/* Atomic file replacement: the one way remat writes a file it may later read
 * back (checkpoints, schedule files, the schedule cache, problem files, SVG
 * figures, Graphviz files).
 *
 * The caller writes through af.f into a temporary file next to the target
 * (same directory, so the same file system and rename(2) is atomic);
 * rm_atomic_commit checks the stream, flushes stdio, fsyncs the data, closes,
 * renames the temporary over the target and fsyncs the directory. A process
 * killed at any moment therefore leaves either the previous file or the new
 * one at the path, never a mixture, and a failed write (a full disk, an I/O
 * error) leaves the previous file untouched and no temporary behind.
 *
 * A target that is a device or a FIFO (/dev/null, /dev/stdout, a pipe)
 * cannot be replaced by a rename and should not be: it is written in place,
 * and the same checks still turn a failed write into an error. A symbolic
 * link to a regular file is followed, so the file it names is replaced and
 * the link kept. */
#ifndef REMAT_ATOMIC_FILE_H
#define REMAT_ATOMIC_FILE_H

#include <stdio.h>

#include "error.h"

typedef struct rm_atomic_file {
    FILE *f;       /* write here, in binary mode */
    char *path;    /* the target (a symbolic link resolved) */
    char *tmp;     /* the temporary file; NULL when writing in place */
    int in_place;  /* the target is a device or FIFO: no rename */
} rm_atomic_file;

/* Creates a unique temporary file next to path (path.tmp.<pid>.<k>, created
 * exclusively, permissions 0666 less the umask like fopen) and opens af->f
 * on it. First removes path's temporaries whose <pid> no longer runs (left
 * by a killed writer; those of live processes stay). On failure af holds
 * nothing and the error is RM_ERR_IO (or RM_ERR_NOMEM) naming the file. */
int rm_atomic_open(rm_atomic_file *af, const char *path, rm_err *e);

/* Finishes the write: ferror, fflush, fsync, fclose, rename, then a
 * best-effort fsync of the directory. Releases af whatever happens; on
 * failure the temporary file is removed, the target is as it was and the
 * error is RM_ERR_IO naming the target, the step and strerror. */
int rm_atomic_commit(rm_atomic_file *af, rm_err *e);

/* Gives up: closes and removes the temporary file, releases af. The target
 * is as it was. Safe on an af whose open failed or that was released. */
void rm_atomic_abort(rm_atomic_file *af);

/* Checks, without writing it, that path could be written: it is not a
 * folder, and a temporary file can be created next to it (created and
 * removed at once). A device or FIFO is not opened (a FIFO would block).
 * For a run that writes path only later (a snapshot after an epoch), to
 * fail at once instead. RM_OK, or the error rm_atomic_open would give. */
int rm_atomic_probe(const char *path, rm_err *e);
/* The same, and the file system has room for bytes more: they are reserved
 * in the temporary file (posix_fallocate) before it is removed, so a full
 * disk fails now with RM_ERR_IO "PATH: no room for the N bytes it will
 * hold: No space left on device". Not checked on devices, or where the
 * file system cannot reserve space. */
int rm_atomic_probe_room(const char *path, size_t bytes, rm_err *e);

#endif
