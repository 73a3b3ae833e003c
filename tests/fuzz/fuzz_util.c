/* Shared helpers of the fuzz harnesses: a per-process temporary folder (in
 * /dev/shm, else /tmp) the inputs are written to (the loaders take paths;
 * keying it by pid keeps parallel test workers and fuzzing jobs apart), and
 * the checks every harness applies to a loader's result. */
#define _GNU_SOURCE /* nftw's FTW_DEPTH / FTW_PHYS */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harnesses.h"
#include "model.h"
#include "trace.h"

const rm_fuzz_harness rm_fuzz_harnesses[] = {
    {"config", rm_fuzz_config},     {"problem", rm_fuzz_problem},
    {"schedule", rm_fuzz_schedule}, {"snapshot", rm_fuzz_snapshot},
    {"mnist", rm_fuzz_mnist},       {"cifar", rm_fuzz_cifar},
    {"image", rm_fuzz_image},       {"costs", rm_fuzz_costs},
    {"onnx", rm_fuzz_onnx},         {NULL, NULL},
};

/* Per process: a forked test worker must not reuse its parent's folder, so
 * the pid the folder was made for is remembered with it. */
static char fuzz_dir[64];
static pid_t fuzz_dir_pid;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag;
    if (ftw->level == 0) return 0; /* keep the folder itself */
    return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

static void remove_dir(void)
{
    if (fuzz_dir_pid != getpid()) return;
    rm_fuzz_clear();
    rmdir(fuzz_dir);
}

const char *rm_fuzz_dir(void)
{
    if (fuzz_dir_pid != getpid()) {
        /* tmpfs when there is one: on ext4, rewriting a truncated file forces
         * its blocks out at close (auto_da_alloc), which made every run wait
         * on the disk (250 runs/s instead of thousands). */
        struct stat st;
        const char *base =
            stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(fuzz_dir, sizeof fuzz_dir, "%s/remat-fuzz-%ld", base, (long)getpid());
        if (mkdir(fuzz_dir, 0700) != 0 && errno != EEXIST) {
            fprintf(stderr, "fuzz: cannot create %s: %s\n", fuzz_dir, strerror(errno));
            abort();
        }
        if (fuzz_dir_pid == 0) atexit(remove_dir); /* once per image; remove_dir checks the pid */
        fuzz_dir_pid = getpid();
    }
    return fuzz_dir;
}

void rm_fuzz_clear(void)
{
    const char *dir = rm_fuzz_dir();
    if (nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0) {
        fprintf(stderr, "fuzz: cannot clear %s\n", dir);
        abort();
    }
}

void rm_fuzz_write(char *path, size_t len, const char *rel, const uint8_t *data, size_t size)
{
    int n = snprintf(path, len, "%s/%s", rm_fuzz_dir(), rel);
    if (n < 0 || (size_t)n >= len) abort();
    /* mkdir -p of the parents inside the temp dir. */
    for (char *s = path + strlen(rm_fuzz_dir()) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        int ok = mkdir(path, 0700) == 0 || errno == EEXIST;
        *s = '/';
        if (!ok) {
            fprintf(stderr, "fuzz: cannot create the parent of %s: %s\n", path, strerror(errno));
            abort();
        }
    }
    FILE *fp = fopen(path, "wb");
    if (!fp || (size && fwrite(data, 1, size, fp) != size) || fclose(fp) != 0) {
        fprintf(stderr, "fuzz: cannot write %s\n", path);
        abort();
    }
}

void rm_fuzz_check_err(int rc, const rm_err *e)
{
    size_t len = strnlen(e->msg, sizeof e->msg);
    /* RM_FUZZ_VERBOSE=1: say why each input was refused (triage, seeds). */
    const char *verbose = getenv("RM_FUZZ_VERBOSE");
    if (rc && verbose && *verbose == '1') fprintf(stderr, "fuzz: refused (%d): %.*s\n", rc, (int)len, e->msg);
    if (rc == RM_OK && e->code != RM_OK) {
        fprintf(stderr, "fuzz: success but an error was recorded: %s\n", e->msg);
        abort();
    }
    if (rc != RM_OK && (len == 0 || len == sizeof e->msg || (int)e->code != rc)) {
        fprintf(stderr, "fuzz: error %d without a proper message (code %d, %zu chars)\n", rc, (int)e->code, len);
        abort();
    }
}

void rm_fuzz_check_model(const rm_model *m)
{
    rm_shape *in = malloc(((size_t)m->ninputs + 1) * sizeof *in);
    rm_shape *out = malloc((size_t)m->nlayers * sizeof *out);
    if (!in || !out) abort();
    rm_err se = {RM_OK, ""};
    int src = rm_model_shapes(in, out, m, 2, &se);
    rm_fuzz_check_err(src, &se);
    /* Tracing sizes every tensor; bounded to small models so a 1000-layer
     * ResNet seed does not dominate the fuzzing time. */
    if (!src && m->nlayers <= 256) {
        rm_graph g;
        rm_err te = {RM_OK, ""};
        int trc = rm_model_trace(&g, m, 1, &te);
        rm_fuzz_check_err(trc, &te);
        if (!trc) rm_graph_free(&g);
    }
    free(in);
    free(out);
}
