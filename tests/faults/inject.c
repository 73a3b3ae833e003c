/* The fault-injection wrappers of inject.h. Each __wrap_X is what the test
 * binary's calls to X reach (-Wl,--wrap=X); __real_X is the real one. The
 * state is plain globals: test code, one test per process. */
#include "inject.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#include <lp_lib.h>

/* ---- state ------------------------------------------------------------------ */

static long alloc_nth = -1, alloc_count, alloc_fired;
static const char *alloc_fired_name = "";
static int alloc_held;       /* a depth: lp_solve wrappers nest inside a test's hold */
static size_t alloc_largest; /* the largest single allocation asked (fi_alloc_largest) */

enum { IO_KINDS = 6 };
static int io_mask, io_err;
static long io_nth, io_calls[IO_KINDS], io_fired_count;

static long solve_nth = -1, solve_count;
static int solve_code, solve_sticky;
static fi_solve_mode solve_mode;
static fi_cbc_fault cbc_fault;

void fi_reset(void)
{
    alloc_nth = -1;
    alloc_count = alloc_fired = 0;
    alloc_held = 0;
    alloc_largest = 0;
    io_mask = io_err = 0;
    io_nth = io_fired_count = 0;
    memset(io_calls, 0, sizeof io_calls);
    solve_nth = -1;
    solve_count = 0;
    cbc_fault = FI_CBC_NONE;
}

void fi_alloc_fail_nth(long n)
{
    alloc_nth = n;
    alloc_count = 0;
    alloc_fired = 0;
    alloc_fired_name = "";
}

long fi_alloc_count(void)
{
    return alloc_count;
}
const char *fi_alloc_fired_in(void)
{
    return alloc_fired_name;
}
void fi_alloc_hold(int on)
{
    alloc_held += on ? 1 : -1;
}
int fi_alloc_fired(void)
{
    return alloc_fired > 0;
}

void fi_io_fail(int mask, long nth, int err)
{
    io_mask = mask;
    io_nth = nth;
    io_err = err;
    io_fired_count = 0;
    memset(io_calls, 0, sizeof io_calls);
}

long fi_io_fired(void)
{
    return io_fired_count;
}

void fi_solve_fail(long nth, int code, fi_solve_mode mode, int sticky)
{
    solve_nth = nth;
    solve_code = code;
    solve_mode = mode;
    solve_sticky = sticky;
    solve_count = 0;
}

long fi_solve_calls(void)
{
    return solve_count;
}

/* ---- allocation --------------------------------------------------------------- */

#define alloc_fails() alloc_fails_in(__func__ + 7) /* "__wrap_malloc" -> "malloc" */

/* Counts one allocation by fn; true when it is the one to fail. */
static int alloc_fails_in(const char *fn)
{
    if (alloc_held) return 0;
    long k = alloc_count++;
    if (alloc_nth >= 0 && k == alloc_nth) {
        alloc_fired++;
        alloc_fired_name = fn;
        errno = ENOMEM;
        return 1;
    }
    return 0;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t k, size_t n);
void *__real_realloc(void *p, size_t n);
void *__real_aligned_alloc(size_t a, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
ssize_t __real_getline(char **line, size_t *cap, FILE *f);
FILE *__real_fopen(const char *path, const char *mode);
FILE *__real_fdopen(int fd, const char *mode);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t k, size_t n);
void *__wrap_realloc(void *p, size_t n);
void *__wrap_aligned_alloc(size_t a, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
ssize_t __wrap_getline(char **line, size_t *cap, FILE *f);
FILE *__wrap_fopen(const char *path, const char *mode);
FILE *__wrap_fdopen(int fd, const char *mode);

/* Notes a size asked of an allocator (before a failure is injected, so
 * failed ones count too). */
static void asked(size_t n)
{
    if (n > alloc_largest) alloc_largest = n;
}

size_t fi_alloc_largest(void)
{
    return alloc_largest;
}

void fi_alloc_largest_reset(void)
{
    alloc_largest = 0;
}

void *__wrap_malloc(size_t n)
{
    asked(n);
    return alloc_fails() ? NULL : __real_malloc(n);
}
void *__wrap_calloc(size_t k, size_t n)
{
    asked(n && k > SIZE_MAX / n ? SIZE_MAX : k * n);
    return alloc_fails() ? NULL : __real_calloc(k, n);
}
void *__wrap_realloc(void *p, size_t n)
{
    asked(n);
    return alloc_fails() ? NULL : __real_realloc(p, n);
}
void *__wrap_aligned_alloc(size_t a, size_t n)
{
    asked(n);
    return alloc_fails() ? NULL : __real_aligned_alloc(a, n);
}
char *__wrap_strdup(const char *s)
{
    return alloc_fails() ? NULL : __real_strdup(s);
}
char *__wrap_strndup(const char *s, size_t n)
{
    return alloc_fails() ? NULL : __real_strndup(s, n);
}
FILE *__wrap_fopen(const char *path, const char *mode)
{
    return alloc_fails() ? NULL : __real_fopen(path, mode);
}
FILE *__wrap_fdopen(int fd, const char *mode)
{
    return alloc_fails() ? NULL : __real_fdopen(fd, mode);
}

/* getline grows its buffer with realloc inside libc: the failure is what
 * glibc reports then, -1 with errno ENOMEM, which looks like end of file to
 * a caller that does not check. */
ssize_t __wrap_getline(char **line, size_t *cap, FILE *f)
{
    return alloc_fails() ? -1 : __real_getline(line, cap, f);
}

/* ---- output I/O ------------------------------------------------------------------ */

static int io_index(int kind)
{
    int i = 0;
    while (kind > 1) {
        kind >>= 1;
        i++;
    }
    return i;
}

/* True when this call of kind on f is to fail (errno is then set). The
 * terminal streams never fail: the faults model the output disk, and the
 * tests read what the CLI printed. Nor do memory streams (open_memstream:
 * no file descriptor), which have no disk to fill: `remat lesson` captures
 * explain's text in them. */
static int io_fails(int kind, FILE *f, int fd)
{
    if (!(io_mask & kind)) return 0;
    if (f == stdout || f == stderr || fd == 1 || fd == 2 || (f && fileno(f) < 0)) return 0;
    if (io_calls[io_index(kind)]++ < io_nth) return 0;
    io_fired_count++;
    errno = io_err;
    return 1;
}

size_t __real_fwrite(const void *p, size_t size, size_t n, FILE *f);
int __real_fflush(FILE *f);
int __real_fclose(FILE *f);
int __real_fsync(int fd);
int __real_rename(const char *from, const char *to);
int __real_posix_fallocate(int fd, off_t offset, off_t len);

size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *f);
int __wrap_fflush(FILE *f);
int __wrap_fclose(FILE *f);
int __wrap_fsync(int fd);
int __wrap_rename(const char *from, const char *to);
int __wrap_posix_fallocate(int fd, off_t offset, off_t len);

/* A failed write sets the stream's error flag, as glibc's own failures do,
 * so writers that check ferror once at the end see it. */
static void set_error(FILE *f)
{
#ifdef _IO_ERR_SEEN
    f->_flags |= _IO_ERR_SEEN;
#else
    (void)f;
#endif
}

size_t __wrap_fwrite(const void *p, size_t size, size_t n, FILE *f)
{
    if (io_fails(FI_FWRITE, f, -1)) {
        set_error(f);
        return 0;
    }
    return __real_fwrite(p, size, n, f);
}

int __wrap_fflush(FILE *f)
{
    if (f && io_fails(FI_FFLUSH, f, -1)) {
        set_error(f);
        return EOF;
    }
    return __real_fflush(f);
}

/* The stream is released either way, as a real failing fclose does. */
int __wrap_fclose(FILE *f)
{
    int fail = io_fails(FI_FCLOSE, f, -1);
    int rc = __real_fclose(f);
    if (fail) {
        errno = io_err;
        return EOF;
    }
    return rc;
}

int __wrap_fsync(int fd)
{
    return io_fails(FI_FSYNC, NULL, fd) ? -1 : __real_fsync(fd);
}

int __wrap_rename(const char *from, const char *to)
{
    return io_fails(FI_RENAME, NULL, -1) ? -1 : __real_rename(from, to);
}

/* posix_fallocate reports its error as its result, leaving errno alone. */
int __wrap_posix_fallocate(int fd, off_t offset, off_t len)
{
    int saved = errno;
    if (!io_fails(FI_FALLOCATE, NULL, fd)) return __real_posix_fallocate(fd, offset, len);
    int err = errno;
    errno = saved;
    return err;
}

/* ---- lp_solve ---------------------------------------------------------------------- */

static int __WINAPI abort_now(lprec *lp, void *h)
{
    (void)lp;
    (void)h;
    return TRUE;
}

/* lp_solve 5.5 does not survive its own allocations failing (make_lp
 * dereferences what mempool_create could not allocate, for one), and
 * remat cannot change that. So lp_solve's internals never see an injected
 * allocation failure: each API call remat makes that allocates counts as
 * one allocation instead, and fails the way lp_solve documents (NULL,
 * FALSE, NOMEMORY), which is what remat must handle. */
#define LP_WRAP(ret, name, fail, params, args)                                                                         \
    ret __real_##name params;                                                                                          \
    ret __wrap_##name params;                                                                                          \
    ret __wrap_##name params                                                                                           \
    {                                                                                                                  \
        if (alloc_fails()) return fail;                                                                                \
        alloc_held++;                                                                                                  \
        ret r = __real_##name args;                                                                                    \
        alloc_held--;                                                                                                  \
        return r;                                                                                                      \
    }

LP_WRAP(lprec *, make_lp, NULL, (int rows, int columns), (rows, columns))
LP_WRAP(MYBOOL, set_obj_fnex, FALSE, (lprec * lp, int count, REAL *row, int *colno), (lp, count, row, colno))
LP_WRAP(MYBOOL, add_constraintex, FALSE, (lprec * lp, int count, REAL *row, int *colno, int type, REAL rh),
        (lp, count, row, colno, type, rh))
LP_WRAP(MYBOOL, set_add_rowmode, FALSE, (lprec * lp, MYBOOL on), (lp, on))
LP_WRAP(MYBOOL, add_columnex, FALSE, (lprec * lp, int count, REAL *column, int *rowno), (lp, count, column, rowno))
LP_WRAP(MYBOOL, set_constr_type, FALSE, (lprec * lp, int row, int type), (lp, row, type))
LP_WRAP(MYBOOL, set_rh, FALSE, (lprec * lp, int row, REAL value), (lp, row, value))
LP_WRAP(MYBOOL, set_bounds, FALSE, (lprec * lp, int col, REAL lo, REAL up), (lp, col, lo, up))
LP_WRAP(MYBOOL, set_int, FALSE, (lprec * lp, int col, MYBOOL on), (lp, col, on))
LP_WRAP(MYBOOL, set_var_weights, FALSE, (lprec * lp, REAL *w), (lp, w))
LP_WRAP(MYBOOL, set_outputfile, FALSE, (lprec * lp, char *name), (lp, name))

/* delete_lp shrinks LUSOL's arrays with realloc on its way out and leaks
 * them when that fails; it returns nothing remat could check, so it is
 * spared entirely. */
void __real_delete_lp(lprec *lp);
void __wrap_delete_lp(lprec *lp);
void __wrap_delete_lp(lprec *lp)
{
    alloc_held++;
    __real_delete_lp(lp);
    alloc_held--;
}

int __real_solve(lprec *lp);
int __wrap_solve(lprec *lp);

static int real_solve_held(lprec *lp)
{
    alloc_held++;
    int r = __real_solve(lp);
    alloc_held--;
    return r;
}

int __wrap_solve(lprec *lp)
{
    if (alloc_fails()) return NOMEMORY;
    long k = solve_count++;
    if (solve_nth < 0 || k < solve_nth || (!solve_sticky && k != solve_nth)) return real_solve_held(lp);
    if (solve_mode == FI_SOLVE_ABORTED) {
        /* lp_solve really runs and stops before finding anything, so the
         * model is in the state a real early stop leaves it in. */
        lphandle_intfunc *old = lp->ctrlc;
        void *oldh = lp->ctrlchandle;
        put_abortfunc(lp, abort_now, NULL);
        (void)real_solve_held(lp);
        put_abortfunc(lp, old, oldh);
    }
    return solve_code;
}

/* ---- CBC ---------------------------------------------------------------------------- */

void fi_cbc_fail(fi_cbc_fault f)
{
    cbc_fault = f;
}

#ifdef REMAT_HAVE_CBC
/* Runs in CBC's child (milp_cbc.c's child_solve), which inherits the fault
 * armed in the test's process. Cbc_Model is opaque here: no CBC header. */
int __real_Cbc_solve(void *model);
int __wrap_Cbc_solve(void *model);
int __wrap_Cbc_solve(void *model)
{
    switch (cbc_fault) {
    case FI_CBC_CRASH:
        signal(SIGSEGV, SIG_DFL); /* a crash, not a sanitizer's report and exit */
        raise(SIGSEGV);
        break;
    case FI_CBC_HANG:
        for (;;) pause();
    case FI_CBC_EXIT:
        _exit(3);
    default:
        break;
    }
    return __real_Cbc_solve(model);
}
#endif
