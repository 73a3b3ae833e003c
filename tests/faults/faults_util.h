/* Helpers shared by the fault suites: a scratch directory per test with
 * stdout and stderr redirected into it (the CLI's messages are checked, and
 * the suite's output stays readable), the CLI run like a user would, and
 * byte-exact file snapshots for "the previous file is intact" checks. */
#ifndef REMAT_TESTS_FAULTS_UTIL_H
#define REMAT_TESTS_FAULTS_UTIL_H

#include <stddef.h>

#define FU_MODEL(name) REMAT_SOURCE_DIR "/models/" name

/* Creates the test's directory (fu_dir) and redirects stdout and stderr
 * into files in it; fu_teardown removes it. For TestSuite .init/.fini. */
void fu_setup(void);
void fu_teardown(void);
extern char fu_dir[64];

/* fu_dir/name in one of 32 static slots (no heap: LeakSanitizer checks
 * every test process). */
const char *fu_path(const char *name);

/* Runs `remat ARGS...` (NULL-terminated); returns the exit code. What it
 * wrote to stderr from this call on is in fu_err (truncated to its size). */
int fu_remat(const char *first, ...);
extern char fu_err[8192];

/* A file's bytes (NULL if it cannot be read); *n its size. Free with free(). */
unsigned char *fu_read(const char *path, size_t *n);
/* Writes text to path (asserting success). */
void fu_write(const char *path, const char *text);
/* Asserts path holds exactly n bytes equal to want. */
void fu_expect_bytes(const char *path, const unsigned char *want, size_t n, const char *what);
/* Entries of dir whose name contains ".tmp": temporaries left behind. */
int fu_temporaries(const char *dir);

#endif
