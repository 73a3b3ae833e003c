/* The CLI test fixture shared by the suites that drive `remat` like a user
 * would (scheduling commands, profile, train, the fault suites): a scratch
 * directory per test with stdout and stderr redirected into it (the CLI's
 * messages are checked, and the suite's output stays readable), the CLI run
 * in-process, and file helpers, down to byte-exact snapshots for "the
 * previous file is intact" checks. */
#ifndef REMAT_TESTS_CLI_FIXTURE_H
#define REMAT_TESTS_CLI_FIXTURE_H

#include <stddef.h>

#define CF_MODEL(name) REMAT_SOURCE_DIR "/models/" name

/* The example problem of docs/problem-format.md (budget 20000, fixed 4096):
 * its header line, and its node lines. */
#define CF_EXAMPLE_HEADER "problem 7 4096 20000\n"
#define CF_EXAMPLE_NODES                                                                                               \
    "0 input forward 0 1024 -\n"                                                                                       \
    "1 fc1 forward 2048 2048 0\n"                                                                                      \
    "2 relu1 forward 512 2048 1\n"                                                                                     \
    "3 loss loss 64 4 2\n"                                                                                             \
    "4 loss.grad backward 64 2048 2,3\n"                                                                               \
    "5 relu1.grad backward 512 2048 2,4\n"                                                                             \
    "6 fc1.grad backward 4096 0 0,5\n"

struct rm_problem;
/* The problem the scheduling commands build for `--model cfg --batch N`:
 * the training accounting with SGD momentum, costs in FLOPs, budget 0
 * (asserting success). Free with rm_problem_free. */
struct rm_problem *cf_training_problem(const char *cfg, int batch);

/* Creates the test's directory (cf_dir) and redirects stdout and stderr
 * into files in it; cf_teardown removes it. For TestSuite .init/.fini. */
void cf_setup(void);
void cf_teardown(void);
extern char cf_dir[64];

/* cf_dir/name in one of 32 static slots (no heap: LeakSanitizer checks
 * every test process), valid for the whole test. */
const char *cf_path(const char *name);

/* Runs `remat ARGS...` (NULL-terminated) in-process; returns the exit code.
 * What it wrote to stderr from this call on is in cf_err (truncated to its
 * size); the call allocates nothing after the command returns (the fault
 * suites may still have a fault armed). cf_remat_args takes the arguments
 * as a NULL-terminated array. */
int cf_remat(const char *first, ...);
int cf_remat_args(const char *const *args);
extern char cf_err[8192];

/* 1 when what the last cf_remat call (and anything after it) wrote to
 * stdout (err = 0) or stderr (err = 1) contains s. */
int cf_said(int err, const char *s);

/* A file's text, NUL-terminated (asserting it can be read). Free with free(). */
char *cf_text(const char *path);
/* A file's bytes (NULL if it cannot be opened; a read error fails the test); *n its
 * size. Free with free(). */
unsigned char *cf_read(const char *path, size_t *n);
/* Writes text to path (asserting success). */
void cf_write(const char *path, const char *text);
/* Asserts path holds exactly n bytes equal to want. */
void cf_expect_bytes(const char *path, const unsigned char *want, size_t n, const char *what);
/* Entries of dir whose name contains ".tmp": temporaries left behind. */
int cf_temporaries(const char *dir);

#endif
