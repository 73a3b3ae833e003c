/* See faults_util.h. */
#include "faults_util.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

char fu_dir[64];
char fu_err[8192];
static char paths[32][192];
static int npaths;

void fu_setup(void)
{
    npaths = 0;
    snprintf(fu_dir, sizeof fu_dir, "/tmp/remat_faults_XXXXXX");
    cr_assert_not_null(mkdtemp(fu_dir));
    cr_assert_not_null(freopen(fu_path("stdout"), "w", stdout));
    cr_assert_not_null(freopen(fu_path("stderr"), "w", stderr));
}

void fu_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx %s; rm -rf %s", fu_dir, fu_dir);
    if (system(cmd)) {
    }
}

const char *fu_path(const char *name)
{
    cr_assert_lt(npaths, 32, "too many paths in one test");
    char *p = paths[npaths++];
    snprintf(p, sizeof paths[0], "%s/%s", fu_dir, name);
    return p;
}

int fu_remat(const char *first, ...)
{
    char *argv[48];
    int argc = 0;
    argv[argc++] = (char *)"remat";
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        cr_assert_lt(argc, 47);
        argv[argc++] = (char *)a;
    }
    va_end(ap);
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    long before = ftell(stderr);
    int rc = rm_cli_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    char path[128];
    snprintf(path, sizeof path, "%s/stderr", fu_dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    fseek(f, before > 0 ? before : 0, SEEK_SET);
    size_t n = fread(fu_err, 1, sizeof fu_err - 1, f);
    fu_err[n] = '\0';
    fclose(f);
    return rc;
}

unsigned char *fu_read(const char *path, size_t *n)
{
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    unsigned char *buf = malloc(cap);
    cr_assert_not_null(buf);
    size_t k;
    while ((k = fread(buf + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) {
            buf = realloc(buf, cap *= 2);
            cr_assert_not_null(buf);
        }
    }
    fclose(f);
    *n = len;
    return buf;
}

void fu_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

void fu_expect_bytes(const char *path, const unsigned char *want, size_t n, const char *what)
{
    size_t m;
    unsigned char *got = fu_read(path, &m);
    cr_expect_not_null(got, "%s: %s is gone", what, path);
    if (got) {
        cr_expect_eq(m, n, "%s: %s has %zu bytes, had %zu", what, path, m, n);
        cr_expect(m == n && memcmp(got, want, n) == 0, "%s: %s changed", what, path);
    }
    free(got);
}

int fu_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot list %s", dir);
    int count = 0;
    struct dirent *ent;
    while ((ent = readdir(d)))
        if (strstr(ent->d_name, ".tmp")) count++;
    closedir(d);
    return count;
}
