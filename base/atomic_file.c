/* Atomic file replacement (see atomic_file.h): temporary file, flush, fsync,
 * rename. Every step is checked, because each one is where a full disk or a
 * failing device shows up: fwrite and fflush report ENOSPC when stdio hands
 * its buffer to the kernel, fsync reports EIO when the kernel's write-back
 * fails (and only then: the data is not on the disk until it succeeds), and
 * NFS-like file systems report errors as late as close. */
#define _GNU_SOURCE /* strndup */
#include "atomic_file.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Stale temporaries of killed processes may hold our pid's names (those of
 * live pids are not removed: the pid may have been reused); this many
 * suffixes are tried before giving up. */
#define TMP_TRIES 100

static const char *errno_text(int err)
{
    return err ? strerror(err) : "write error";
}

static void release(rm_atomic_file *af)
{
    free(af->path);
    free(af->tmp);
    af->f = NULL;
    af->path = NULL;
    af->tmp = NULL;
    af->in_place = 0;
}

/* The folder a file is in ("." for a bare name); NULL without memory. */
static char *parent_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
}

/* Whether the kernel's protected_symlinks rule (fs.protected_symlinks=1)
 * lets this process follow the link at path, lstat'ed as ls: the link is
 * ours, or its folder is not both world-writable and sticky (only there can
 * another user plant a name we may use), or the folder's owner made the
 * link. Checked here because remat resolves a link itself (readlink is not
 * following, to the kernel) and the sysctl may be off. A folder that cannot
 * be examined does not vouch for the link. The same rule, protected_fifos,
 * decides whether a FIFO or device at path may be written (planted_special). */
static int link_trusted(const char *path, const struct stat *ls)
{
    if (ls->st_uid == geteuid()) return 1;
    char *dir = parent_of(path);
    struct stat ds;
    int known = dir && stat(dir, &ds) == 0;
    free(dir);
    if (!known) return 0;
    return !((ds.st_mode & S_ISVTX) && (ds.st_mode & S_IWOTH)) || ds.st_uid == ls->st_uid;
}

/* Where the link at path leads, in *out: its text, relative to the link's
 * folder; NULL when it cannot be read (no longer a link, or longer than a
 * path). -1 without memory. */
static int link_destination(char **out, const char *path)
{
    *out = NULL;
    char buf[PATH_MAX];
    ssize_t n = readlink(path, buf, sizeof buf);
    if (n <= 0 || (size_t)n >= sizeof buf) return 0;
    buf[n] = '\0';
    if (buf[0] == '/') return (*out = strdup(buf)) ? 0 : -1;
    char *dir = parent_of(path);
    size_t len = dir ? strlen(dir) + 1 + (size_t)n + 1 : 0;
    if (dir && (*out = malloc(len)) != NULL) snprintf(*out, len, "%s/%s", dir, buf);
    free(dir);
    return *out ? 0 : -1;
}

/* The file a write to (or read of) path really goes to, in *out. An
 * RM_PATH_ENTRY is the path itself. An RM_PATH_NAMED has the links at its
 * end followed, one at a time, each only if link_trusted (the folders on
 * the way are left to the kernel's own resolution); a link that leads to
 * nothing, or to a name only /proc understands (/dev/stdout on a pipe is
 * /proc/self/fd/1 -> "pipe:[N]"), is the target itself, and *is_link says
 * so: opening it follows it, a rename replaces it. */
static int resolve(char **out, int *is_link, const char *path, rm_path_kind kind, rm_err *e)
{
    *out = NULL;
    *is_link = 0;
    char *cur = strdup(path);
    if (!cur) return rm_errorf(e, RM_ERR_NOMEM, "%s: no memory to open the file", path);
    for (int hops = 0; kind == RM_PATH_NAMED; hops++) {
        struct stat ls;
        if (lstat(cur, &ls) != 0 || !S_ISLNK(ls.st_mode)) break;
        int rc = RM_OK;
        if (hops == 40) /* the kernel's own limit */
            rc = rm_errorf(e, RM_ERR_IO, "%s: %s", path, strerror(ELOOP));
        else if (!link_trusted(cur, &ls))
            rc = rm_errorf(e, RM_ERR_IO,
                           "%s: a symbolic link of another user (uid %lu) in a world-writable folder: not "
                           "followed (remove it, or name another file)",
                           cur, (unsigned long)ls.st_uid);
        if (rc) {
            free(cur);
            return rc;
        }
        char *next;
        if (link_destination(&next, cur)) {
            free(cur);
            return rm_errorf(e, RM_ERR_NOMEM, "%s: no memory to open the file", path);
        }
        struct stat ns;
        if (!next || lstat(next, &ns) != 0) {
            free(next);
            *is_link = 1;
            break;
        }
        free(cur);
        cur = next;
    }
    *out = cur;
    return RM_OK;
}

static int is_special(mode_t m)
{
    return S_ISCHR(m) || S_ISBLK(m) || S_ISFIFO(m);
}

/* The kernel's protected_fifos idea (fs.protected_fifos): a FIFO or device
 * of another user in a sticky world-writable folder is a name planted for
 * us, whose reader (or driver) would hang or take what we write. Refused,
 * RM_ERR_IO, unless it is ours or the folder owner's (link_trusted's rule);
 * checked before anything is solved or trained (rm_atomic_probe). */
static int planted_special(const char *path, const char *target, const struct stat *st, rm_err *e)
{
    if (!is_special(st->st_mode) || link_trusted(target, st)) return RM_OK;
    return rm_errorf(e, RM_ERR_IO,
                     "%s: a %s of another user (uid %lu) in a world-writable folder: not opened (remove it, or "
                     "name another file)",
                     path, S_ISFIFO(st->st_mode) ? "FIFO" : "device", (unsigned long)st->st_uid);
}

int rm_path_check_named(const char *path, rm_err *e)
{
    if (!path || !*path) return rm_errorf(e, RM_ERR_INVALID, "no file name given");
    /* "DIR/" would make lstat follow a link at DIR: its last component is
     * checked without the slashes. */
    char *p = strdup(path);
    if (!p) return rm_errorf(e, RM_ERR_NOMEM, "%s: no memory", path);
    for (size_t n = strlen(p); n > 1 && p[n - 1] == '/'; n--) p[n - 1] = '\0';
    char *target;
    int is_link, rc = resolve(&target, &is_link, p, RM_PATH_NAMED, e);
    struct stat st;
    if (!rc && stat(target, &st) == 0) rc = planted_special(path, target, &st, e);
    if (!rc) free(target);
    free(p);
    return rc;
}

/* Opens af->f on fd, the temporary file or (in place) the target. On
 * failure fd is closed, the temporary removed and af released. */
static int stream_on(rm_atomic_file *af, int fd, const char *path, rm_err *e)
{
    errno = 0;
    af->f = fdopen(fd, "wb");
    if (af->f) return RM_OK;
    int err = errno;
    const char *why = err ? strerror(err) : "out of memory";
    (void)close(fd);
    if (af->tmp) {
        (void)unlink(af->tmp);
        rm_errorf(e, RM_ERR_IO, "%s: cannot open the temporary file %s: %s", path, af->tmp, why);
    } else {
        rm_errorf(e, RM_ERR_IO, "%s: cannot open for writing: %s", path, why);
    }
    release(af);
    return err == ENOMEM || !err ? RM_ERR_NOMEM : RM_ERR_IO;
}

/* A device or FIFO named by the user, written in place (see rm_atomic_open
 * below). Opened without O_TRUNC or O_CREAT and checked again once open: a
 * name swapped for a regular file in between is refused, not truncated.
 * O_NONBLOCK: a FIFO without a reader would block the open forever (after
 * a whole solve or training run); this way it fails at once, ENXIO, said
 * plainly. Blocking mode is restored once open, so writes wait for the
 * reader as usual. */
static int open_in_place(rm_atomic_file *af, const char *path, int is_link, rm_err *e)
{
    errno = 0;
    int fd = open(af->path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | (is_link ? 0 : O_NOFOLLOW));
    int err = errno, flags;
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !is_special(st.st_mode) || (flags = fcntl(fd, F_GETFL)) < 0 ||
                    fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)) {
        (void)close(fd);
        fd = -1;
        err = 0;
    }
    if (fd < 0) {
        if (err == ENXIO)
            rm_errorf(e, RM_ERR_IO, "%s: a FIFO with no reader: not written (start its reader first)", path);
        else if (err)
            rm_errorf(e, RM_ERR_IO, "%s: cannot open for writing: %s", path, strerror(err));
        else
            rm_errorf(e, RM_ERR_IO, "%s: changed while it was opened: not written", path);
        release(af);
        return RM_ERR_IO;
    }
    af->in_place = 1;
    return stream_on(af, fd, path, e);
}

/* 1 when suffix is "<pid>.<k>" (decimal) and that process no longer runs. A
 * process that exists, even one we may not signal (EPERM), is alive: its
 * writer may be in the middle of a write. */
static int writer_is_gone(const char *suffix)
{
    if (!isdigit((unsigned char)suffix[0])) return 0;
    char *end;
    errno = 0;
    long pid = strtol(suffix, &end, 10);
    if (errno || *end != '.' || !isdigit((unsigned char)end[1]) || end[1 + strspn(end + 1, "0123456789")]) return 0;
    if (pid <= 0 || pid > INT_MAX || pid == (long)getpid()) return 0;
    return kill((pid_t)pid, 0) == -1 && errno == ESRCH;
}

/* Removes path's temporaries left by processes that no longer run: a kill
 * between open and rename (SIGKILL gives no chance to clean up) leaves one,
 * and a run killed again and again piled them up. Only regular files named
 * exactly TARGET.tmp.<pid>.<k> go. Best effort: a folder that cannot be
 * listed, or a file that cannot be removed, is left as it is. */
static void remove_stale_temporaries(const char *path)
{
    char *dir = parent_of(path);
    DIR *d = dir ? opendir(dir) : NULL;
    free(dir);
    if (!d) return;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t n = strlen(base);
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (strncmp(name, base, n) || strncmp(name + n, ".tmp.", 5) || !writer_is_gone(name + n + 5)) continue;
        struct stat st;
        if (fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            (void)unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

int rm_atomic_open(rm_atomic_file *af, const char *path, rm_err *e)
{
    return rm_atomic_open_kind(af, path, RM_PATH_NAMED, e);
}

int rm_atomic_open_kind(rm_atomic_file *af, const char *path, rm_path_kind kind, rm_err *e)
{
    memset(af, 0, sizeof *af);
    if (!path || !*path) return rm_errorf(e, RM_ERR_INVALID, "no file name to write");
    int is_link, rc;
    if ((rc = resolve(&af->path, &is_link, path, kind, e))) return rc;

    /* A device or FIFO: renaming over it would replace /dev/null with a
     * regular file. It holds no previous contents to protect. (A directory
     * takes the usual way: its rename fails, clearly.) Not in a folder
     * remat keeps: a FIFO planted there is replaced, not written to. */
    struct stat st;
    if (kind == RM_PATH_NAMED && stat(af->path, &st) == 0 && is_special(st.st_mode)) {
        if ((rc = planted_special(path, af->path, &st, e))) {
            release(af);
            return rc;
        }
        return open_in_place(af, path, is_link, e);
    }

    remove_stale_temporaries(af->path);
    size_t cap = strlen(af->path) + 48;
    af->tmp = malloc(cap);
    if (!af->tmp) {
        release(af);
        return rm_errorf(e, RM_ERR_NOMEM, "%s: no memory to write the file", path);
    }
    int fd = -1, err = 0;
    for (int k = 0; k < TMP_TRIES && fd < 0; k++) {
        snprintf(af->tmp, cap, "%s.tmp.%ld.%d", af->path, (long)getpid(), k);
        /* O_EXCL: never truncate a file another writer (or another thread of
         * this process) is still writing, nor open a link planted under the
         * name (O_EXCL fails on any link; O_NOFOLLOW says so twice). */
        fd = open(af->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        err = errno;
        if (fd < 0 && err != EEXIST) break;
    }
    if (fd < 0) {
        rm_errorf(e, RM_ERR_IO, "%s: cannot create the temporary file %s: %s", path, af->tmp, errno_text(err));
        release(af);
        return RM_ERR_IO;
    }
    return stream_on(af, fd, path, e);
}

int rm_atomic_probe(const char *path, rm_err *e)
{
    return rm_atomic_probe_room(path, 0, e);
}

int rm_atomic_probe_room(const char *path, size_t bytes, rm_err *e)
{
    if (!path || !*path) return rm_errorf(e, RM_ERR_INVALID, "no file name to write");
    char *target;
    int is_link, rc;
    if ((rc = resolve(&target, &is_link, path, RM_PATH_NAMED, e))) return rc;
    struct stat st;
    int exists = stat(target, &st) == 0;
    rc = exists ? planted_special(path, target, &st, e) : RM_OK;
    free(target);
    if (rc) return rc;
    if (exists && S_ISDIR(st.st_mode)) return rm_errorf(e, RM_ERR_IO, "%s: is a directory, not a file", path);
    if (exists && is_special(st.st_mode)) return RM_OK;
    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, path, e))) return rc;
    /* Reserved, not written: a full disk says so now (ENOSPC). A file
     * system that cannot reserve (EOPNOTSUPP) is given the benefit of the
     * doubt; the write will check every step. */
    int err = bytes ? posix_fallocate(fileno(af.f), 0, (off_t)bytes) : 0;
    rm_atomic_abort(&af);
    if (err && err != EOPNOTSUPP && err != EINVAL && err != ENOSYS)
        return rm_errorf(e, RM_ERR_IO, "%s: no room for the %zu bytes it will hold: %s", path, bytes, strerror(err));
    return RM_OK;
}

/* Makes the rename itself durable. Best effort: some file systems refuse to
 * fsync a directory (EINVAL), and by now the new file is complete and in
 * place, so a failure here is no reason to report the write as failed. */
static void fsync_parent(const char *path)
{
    char *dir = parent_of(path);
    if (!dir) return;
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        (void)fsync(fd);
        (void)close(fd);
    }
    free(dir);
}

/* Records the failure of step `what`, removes the temporary file, releases af. */
static int fail(rm_atomic_file *af, int err, const char *what, rm_err *e)
{
    if (af->tmp) {
        rm_errorf(e, RM_ERR_IO, "%s: cannot %s the temporary file %s: %s", af->path, what, af->tmp, errno_text(err));
        (void)unlink(af->tmp);
    } else {
        rm_errorf(e, RM_ERR_IO, "%s: cannot %s: %s", af->path, what, errno_text(err));
    }
    release(af);
    return RM_ERR_IO;
}

int rm_atomic_commit(rm_atomic_file *af, rm_err *e)
{
    if (!af || !af->f) {
        if (af) rm_atomic_abort(af);
        return rm_errorf(e, RM_ERR_INVALID, "atomic write: the file is not open");
    }
    FILE *f = af->f;
    af->f = NULL;
    /* An earlier fwrite/fprintf may have failed silently (the callers write
     * with fprintf and check once, here). fflush retries what is still
     * buffered and usually reports the cause again; without one the message
     * says "write error". */
    int bad = ferror(f);
    errno = 0;
    int flushed = fflush(f);
    int err = errno;
    if (bad || flushed != 0) {
        (void)fclose(f);
        return fail(af, err, "write", e);
    }
    /* Not for devices and FIFOs, which reject fsync (EINVAL) and have no
     * contents to make durable. */
    if (!af->in_place && fsync(fileno(f)) != 0) {
        err = errno;
        (void)fclose(f);
        return fail(af, err, "fsync", e);
    }
    errno = 0;
    if (fclose(f) != 0) { /* the stream is released even when fclose fails */
        err = errno;
        return fail(af, err, "close", e);
    }
    if (af->in_place) {
        release(af);
        return RM_OK;
    }
    if (rename(af->tmp, af->path) != 0) {
        err = errno;
        rm_errorf(e, RM_ERR_IO, "%s: cannot rename the temporary file %s over it: %s", af->path, af->tmp,
                  strerror(err));
        (void)unlink(af->tmp);
        release(af);
        return RM_ERR_IO;
    }
    fsync_parent(af->path);
    release(af);
    return RM_OK;
}

void rm_atomic_abort(rm_atomic_file *af)
{
    if (!af) return;
    if (af->f) (void)fclose(af->f);
    if (af->tmp) (void)unlink(af->tmp); /* set only while the temporary exists */
    release(af);
}

/* What a file that is not regular is, for the message. */
static const char *file_type(mode_t m)
{
    return S_ISDIR(m)                 ? "a directory"
           : S_ISFIFO(m)              ? "a FIFO"
           : S_ISCHR(m) || S_ISBLK(m) ? "a device"
           : S_ISSOCK(m)              ? "a socket"
           : S_ISLNK(m)               ? "a symbolic link"
                                      : "a special file";
}

FILE *rm_file_open_read(const char *path, rm_path_kind kind, rm_err *e)
{
    if (!path || !*path) {
        rm_errorf(e, RM_ERR_INVALID, "no file name to read");
        return NULL;
    }
    char *target;
    int is_link;
    if (resolve(&target, &is_link, path, kind, e)) return NULL;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer,
     * forever; this way it opens at once and is refused below. */
    errno = 0;
    int fd = open(target, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (is_link ? 0 : O_NOFOLLOW));
    int err = errno;
    struct stat st;
    if (fd < 0) {
        if (err == ELOOP && lstat(target, &st) == 0 && S_ISLNK(st.st_mode))
            rm_errorf(e, RM_ERR_IO, "%s: a symbolic link: not followed", path);
        else
            rm_errorf(e, RM_ERR_IO, "%s: cannot open: %s", path, strerror(err));
        free(target);
        return NULL;
    }
    free(target);
    int flags;
    if (fstat(fd, &st) != 0 || (flags = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
        rm_errorf(e, RM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    else if (!S_ISREG(st.st_mode))
        rm_errorf(e, RM_ERR_IO, "%s: not a regular file (%s)", path, file_type(st.st_mode));
    /* remat's own rename leaves a file with one link; another one is a
     * name planted (a hard link to a file the planter may not read). */
    else if (kind == RM_PATH_ENTRY && st.st_nlink != 1)
        rm_errorf(e, RM_ERR_IO, "%s: has %lu hard links: not a file remat wrote", path, (unsigned long)st.st_nlink);
    else {
        errno = 0;
        FILE *f = fdopen(fd, "rb");
        if (f) return f;
        err = errno;
        rm_errorf(e, err == ENOMEM || !err ? RM_ERR_NOMEM : RM_ERR_IO, "%s: cannot open: %s", path,
                  err ? strerror(err) : "out of memory");
    }
    (void)close(fd);
    return NULL;
}
