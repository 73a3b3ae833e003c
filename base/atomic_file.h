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
 * and the same checks still turn a failed write into an error.
 *
 * What a symbolic link at the path means depends on whose name it is
 * (rm_path_kind; docs/reliability.md, "Links and special files"): remat
 * resolves a link itself to replace the file it names, where the kernel's
 * protected_symlinks check never sees it, so the check is made here. */
#ifndef REMAT_ATOMIC_FILE_H
#define REMAT_ATOMIC_FILE_H

#include <stdio.h>

#include "error.h"

/* Whose name a path is. */
typedef enum rm_path_kind {
    /* Named by the user (--out, --snapshot, --svg, --dot, --resume). A
     * symbolic link at the end of the path is followed only where the
     * kernel's protected_symlinks rule would follow it: the link belongs to
     * this process's user or to its folder's owner, or the folder is not
     * both world-writable and sticky. Otherwise (another user's link in
     * /tmp) it is refused, RM_ERR_IO "PATH: a symbolic link of another user
     * (uid N) in the world-writable folder DIR: not followed". A link that
     * is followed to a regular file: that file is replaced, the link kept. */
    RM_PATH_NAMED = 0,
    /* An entry of a folder remat keeps for itself (the schedule cache),
     * whose names anyone sharing the folder can predict: nothing there is
     * followed or written in place. A write replaces whatever the entry is
     * (a link, a FIFO) by a regular file; the rename replaces the entry,
     * never what a link names. A read refuses all but a regular file with
     * one link. */
    RM_PATH_ENTRY = 1,
} rm_path_kind;

typedef struct rm_atomic_file {
    FILE *f;      /* write here, in binary mode */
    char *path;   /* the target (a followed symbolic link resolved) */
    char *tmp;    /* the temporary file; NULL when writing in place */
    int in_place; /* the target is a device or FIFO: no rename */
} rm_atomic_file;

/* Creates a unique temporary file next to path (path.tmp.<pid>.<k>, created
 * exclusively, permissions 0666 less the umask like fopen) and opens af->f
 * on it. First removes path's temporaries whose <pid> no longer runs (left
 * by a killed writer; those of live processes stay). On failure af holds
 * nothing and the error is RM_ERR_IO (or RM_ERR_NOMEM) naming the file. */
int rm_atomic_open(rm_atomic_file *af, const char *path, rm_err *e);
/* The same for a path of the given kind (rm_atomic_open: RM_PATH_NAMED). */
int rm_atomic_open_kind(rm_atomic_file *af, const char *path, rm_path_kind kind, rm_err *e);

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

/* Opens a file remat wrote (a snapshot, a cache entry) to read it back, in
 * binary mode, following links as rm_path_kind says. Never blocks: a FIFO
 * is opened without waiting for a writer, and anything but a regular file
 * (a FIFO, a device such as /dev/zero, a folder) is refused, RM_ERR_IO
 * "PATH: not a regular file (a FIFO)". An RM_PATH_ENTRY that is a link is
 * "PATH: a symbolic link: not followed", one with other hard links "PATH:
 * has N hard links: not a file remat wrote". Other failures: "PATH: cannot
 * open: <strerror>". NULL on failure. */
FILE *rm_file_open_read(const char *path, rm_path_kind kind, rm_err *e);

/* Checks a path the user named (a file or a folder, such as the schedule
 * cache's) by RM_PATH_NAMED's rules without opening it: a link at its end
 * that the kernel's protected_symlinks rule would not follow, and a FIFO or
 * device of another user in a sticky world-writable folder (protected_fifos)
 * are refused, RM_ERR_IO naming the path. Trailing slashes are ignored. A
 * path that does not exist is RM_OK. */
int rm_path_check_named(const char *path, rm_err *e);

#endif
