/* See cli_fixture.h. */
#include "cli_fixture.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builder.h"
#include "commands.h"
#include "footprint.h"

char cf_dir[64];
char cf_err[8192];
static char paths[32][192];
static int npaths;
static long out_before, err_before; /* where the last cf_remat call began writing */

void cf_setup(void)
{
    npaths = 0;
    out_before = err_before = 0;
    snprintf(cf_dir, sizeof cf_dir, "/tmp/remat_test_XXXXXX");
    cr_assert_not_null(mkdtemp(cf_dir));
    cr_assert_not_null(freopen(cf_path("stdout"), "w", stdout));
    cr_assert_not_null(freopen(cf_path("stderr"), "w", stderr));
}

void cf_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "chmod -R u+rwx %s; rm -rf %s", cf_dir, cf_dir);
    if (system(cmd)) {
    }
}

const char *cf_path(const char *name)
{
    cr_assert_lt(npaths, 32, "too many paths in one test");
    char *p = paths[npaths++];
    snprintf(p, sizeof paths[0], "%s/%s", cf_dir, name);
    return p;
}

int cf_remat(const char *first, ...)
{
    const char *args[48];
    int n = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a; a = va_arg(ap, const char *)) {
        cr_assert_lt(n, 46);
        args[n++] = a;
    }
    va_end(ap);
    args[n] = NULL;
    return cf_remat_args(args);
}

int cf_remat_args(const char *const *args)
{
    char *argv[48];
    int argc = 0;
    argv[argc++] = (char *)"remat";
    for (int i = 0; args[i]; i++) {
        cr_assert_lt(argc, 47);
        argv[argc++] = (char *)args[i];
    }
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    out_before = ftell(stdout);
    err_before = ftell(stderr);
    int rc = rm_cli_main(argc, argv);
    fflush(stdout);
    fflush(stderr);
    char path[128];
    snprintf(path, sizeof path, "%s/stderr", cf_dir);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    fseek(f, err_before > 0 ? err_before : 0, SEEK_SET);
    size_t n = fread(cf_err, 1, sizeof cf_err - 1, f);
    cf_err[n] = '\0';
    fclose(f);
    return rc;
}

int cf_said(int err, const char *s)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", cf_dir, err ? "stderr" : "stdout");
    fflush(err ? stderr : stdout);
    char *t = cf_text(path);
    size_t n = strlen(t), from = (size_t)(err ? err_before : out_before);
    int found = strstr(t + (from < n ? from : n), s) != NULL;
    free(t);
    return found;
}

/* The buffer keeps at least one spare byte past the data (cf_text's NUL). */
unsigned char *cf_read(const char *path, size_t *n)
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
    cr_assert(!ferror(f), "read error on %s", path);
    fclose(f);
    *n = len;
    return buf;
}

char *cf_text(const char *path)
{
    size_t n;
    unsigned char *buf = cf_read(path, &n);
    cr_assert_not_null(buf, "cannot open %s", path);
    buf[n] = '\0';
    return (char *)buf;
}

void cf_write(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "cannot write %s", path);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

void cf_expect_bytes(const char *path, const unsigned char *want, size_t n, const char *what)
{
    size_t m;
    unsigned char *got = cf_read(path, &m);
    cr_expect_not_null(got, "%s: %s is gone", what, path);
    if (got) {
        cr_expect_eq(m, n, "%s: %s has %zu bytes, had %zu", what, path, m, n);
        cr_expect(m == n && memcmp(got, want, n) == 0, "%s: %s changed", what, path);
    }
    free(got);
}

int cf_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "cannot list %s", dir);
    int count = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (strstr(ent->d_name, ".tmp")) count++;
    }
    closedir(d);
    return count;
}

rm_problem *cf_training_problem(const char *cfg, int batch)
{
    rm_err e = {RM_OK, ""};
    rm_model *m;
    cr_assert_eq(rm_model_load(&m, cfg, &e), RM_OK, "%s", e.msg);
    rm_optim_options sgd = rm_optim_options_default(RM_OPTIM_SGD);
    rm_problem *p;
    cr_assert_eq(rm_training_problem(&p, NULL, m, batch, &sgd, NULL, NULL, RM_COST_SAME_BATCH, &e), RM_OK, "%s", e.msg);
    rm_model_free(m);
    return p;
}
