/* Fault injection for the fault suites, by linker wrapping: the test binary
 * is linked with -Wl,--wrap=malloc,... (tests/faults/CMakeLists.txt), so
 * every call the remat libraries (static archives, lp_solve included) and
 * the tests make to these functions reaches the fi wrappers in inject.c,
 * which pass it through to the real function unless a test armed a fault.
 * Criterion runs each test in its own process, so whatever a test arms dies
 * with it; fi_reset is for tests that arm several faults in turn. Library
 * code is untouched: the faults reach it exactly where a real failure would.
 *
 * Allocation faults cover malloc, calloc, realloc, aligned_alloc, strdup,
 * strndup, getline, fopen and fdopen (the last three allocate inside libc
 * and fail with ENOMEM), and the lp_solve API calls remat makes that
 * allocate (make_lp, add_constraintex, set_int, solve, ...: each counts as
 * one allocation and fails as lp_solve documents, NULL, FALSE or NOMEMORY;
 * lp_solve's own internals are spared, see inject.c). I/O faults make fwrite, fflush, fclose (after
 * really closing), fsync, rename or posix_fallocate fail with a chosen errno on files other
 * than stdout, stderr and memory streams, as a full or failing output disk would.
 * CBC faults (built with CBC only: Cbc_solve is wrapped) make the child
 * process milp_cbc.c runs CBC in crash, hang or exit without an answer. */
#ifndef REMAT_TESTS_FAULTS_INJECT_H
#define REMAT_TESTS_FAULTS_INJECT_H

#include <stddef.h>

/* Disarms everything and zeroes the counters. */
void fi_reset(void);

/* ---- allocation ----------------------------------------------------------- */

/* The nth allocation from now (0 = the next one) fails, once; n < 0 disarms.
 * Counting restarts at 0. */
void fi_alloc_fail_nth(long n);
/* Allocations seen since the last fi_alloc_fail_nth / fi_reset. */
long fi_alloc_count(void);
/* Whether the armed allocation failure has happened, and in which
 * function ("malloc", "getline", "make_lp", ...; "" before it has). */
int fi_alloc_fired(void);
const char *fi_alloc_fired_in(void);
/* While held, allocations are neither counted nor failed: for a test's own
 * checks in the middle of an armed run. */
void fi_alloc_hold(int on);
/* The largest single allocation asked of malloc, calloc, realloc or
 * aligned_alloc since the last fi_alloc_largest_reset or fi_reset (failed
 * ones included): the fuzz replays (tests/fuzz/test_fuzz_regress.c) hold
 * every input to scripts/fuzz's -malloc_limit_mb. */
size_t fi_alloc_largest(void);
void fi_alloc_largest_reset(void);

/* ---- output I/O ----------------------------------------------------------- */

typedef enum fi_io {
    FI_FWRITE = 1,
    FI_FFLUSH = 2,
    FI_FCLOSE = 4,
    FI_FSYNC = 8,
    FI_RENAME = 16,
    FI_FALLOCATE = 32 /* posix_fallocate: returns err, as it does (errno untouched) */
} fi_io;

/* From the nth call on (0 = the next one) of each function in mask, calls
 * fail with err. mask 0 disarms. */
void fi_io_fail(int mask, long nth, int err);
/* Failures injected so far. */
long fi_io_fired(void);

/* ---- lp_solve ------------------------------------------------------------- */

typedef enum fi_solve_mode {
    FI_SOLVE_FAKE,   /* return code without solving: the model holds no solution */
    FI_SOLVE_ABORTED /* solve under an abort that stops lp_solve at once, then return code */
} fi_solve_mode;

/* The nth call of lp_solve's solve() from now (0 = the next one; for the
 * MILP, 0 is the LP relaxation and 1 the branch and bound) returns code,
 * as do all later ones when sticky. n < 0 disarms. */
void fi_solve_fail(long nth, int code, fi_solve_mode mode, int sticky);
/* solve() calls since arming. */
long fi_solve_calls(void);

/* ---- CBC ------------------------------------------------------------------ */

typedef enum fi_cbc_fault {
    FI_CBC_NONE,
    FI_CBC_CRASH, /* CBC's process dies of SIGSEGV in Cbc_solve, as a crashing CBC would */
    FI_CBC_HANG,  /* Cbc_solve never returns, its time limit ignored: only a kill ends it */
    FI_CBC_EXIT,  /* CBC's process exits with status 3 before it answers */
} fi_cbc_fault;

/* Every Cbc_solve from now on (in the children forked after this call)
 * does that; FI_CBC_NONE disarms. Nothing happens in a build without CBC. */
void fi_cbc_fail(fi_cbc_fault f);

#endif
