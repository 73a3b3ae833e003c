/* A write error on the output disk, at every step of the atomic write
 * protocol (base/atomic_file.h), for every file remat writes: snapshots,
 * `remat plan --out`, the SVG figures, the schedule cache, `remat graph
 * --dot`, `--problem-out` and the page of `remat lesson`. Each failure must
 * give a clear error (naming the file and the cause) and a non-zero exit,
 * leave the previous file at the path intact byte for byte, and leave no
 * temporary file behind. The faults are injected
 * by the wrappers of inject.h, and also made real: a file size limit
 * (RLIMIT_FSIZE, which the kernel enforces with EFBIG even for root) and
 * /dev/full (ENOSPC on every write). */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "builder.h"
#include "cli_fixture.h"
#include "faults/inject.h"
#include "snapshot.h"
#include "train/train_fixtures.h"
#include "trainer.h"

#define VGG_TINY CF_MODEL("vgg-tiny.cfg")

TestSuite(write_errors, .init = cf_setup, .fini = cf_teardown);

/* Every way a step of the protocol can fail, and what the message says. */
typedef struct io_case {
    int mask;
    int err;
    const char *step; /* the word the message uses for the step */
} io_case;

static const io_case io_cases[] = {
    {FI_FWRITE | FI_FFLUSH, ENOSPC, "write"}, /* the disk fills while writing */
    {FI_FFLUSH, ENOSPC, "write"},             /* ... or when stdio's last buffer goes out */
    {FI_FSYNC, EIO, "fsync"},                 /* the device fails the write-back */
    {FI_FCLOSE, EDQUOT, "close"},             /* NFS-like: the error comes at close */
    {FI_RENAME, EXDEV, "rename"},             /* the rename itself fails */
};
#define N_IO_CASES (sizeof io_cases / sizeof io_cases[0])

/* The message names the file, the step and the cause. */
static void expect_message(const char *msg, const char *path, const io_case *c)
{
    cr_expect(strstr(msg, path), "the message names %s: %s", path, msg);
    cr_expect(strstr(msg, c->step), "the message names the step '%s': %s", c->step, msg);
    cr_expect(strstr(msg, strerror(c->err)), "the message gives the cause '%s': %s", strerror(c->err), msg);
}

/* ---- the helper itself ----------------------------------------------------------- */

Test(write_errors, atomic_file_keeps_the_previous_file_at_every_step)
{
    const char *path = cf_path("out.txt");
    cf_write(path, "previous contents\n");
    for (size_t k = 0; k < N_IO_CASES; k++) {
        const io_case *c = &io_cases[k];
        rm_atomic_file af;
        rm_err e = {RM_OK, ""};
        cr_assert_eq(rm_atomic_open(&af, path, &e), RM_OK, "%s", e.msg);
        cr_assert_not_null(af.tmp);
        cr_assert_eq(cf_temporaries(cf_dir), 1, "the temporary sits next to the target");
        fi_io_fail(c->mask, 0, c->err);
        /* Large enough to pass through stdio's buffer: fwrite reaches the disk. */
        for (int i = 0; i < 2000; i++) fprintf(af.f, "new line %d\n", i);
        int rc = rm_atomic_commit(&af, &e);
        fi_io_fail(0, 0, 0);
        cr_expect_eq(rc, RM_ERR_IO, "case %zu: %d %s", k, rc, e.msg);
        expect_message(e.msg, path, c);
        cr_expect_null(af.f);
        cr_expect_null(af.tmp, "commit releases af even when it fails");
        cf_expect_bytes(path, (const unsigned char *)"previous contents\n", 18, c->step);
        cr_expect_eq(cf_temporaries(cf_dir), 0, "case %zu: a temporary file is left behind", k);
    }
    /* Abort leaves the previous file too; a commit without faults replaces it. */
    rm_atomic_file af;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_atomic_open(&af, path, &e), RM_OK, "%s", e.msg);
    fputs("never", af.f);
    rm_atomic_abort(&af);
    rm_atomic_abort(&af); /* twice is harmless */
    cf_expect_bytes(path, (const unsigned char *)"previous contents\n", 18, "abort");
    cr_expect_eq(cf_temporaries(cf_dir), 0);
    cr_assert_eq(rm_atomic_open(&af, path, &e), RM_OK, "%s", e.msg);
    fputs("replaced\n", af.f);
    cr_assert_eq(rm_atomic_commit(&af, &e), RM_OK, "%s", e.msg);
    cf_expect_bytes(path, (const unsigned char *)"replaced\n", 9, "commit");
    cr_expect_eq(cf_temporaries(cf_dir), 0);
    /* Committing what is not open is an error, not a crash. */
    cr_expect_eq(rm_atomic_commit(&af, &e), RM_ERR_INVALID);
}

Test(write_errors, atomic_file_follows_links_and_writes_devices_in_place)
{
    /* A link to a regular file: the file is replaced, the link kept. */
    const char *real = cf_path("real.txt"), *link = cf_path("link.txt");
    cf_write(real, "old\n");
    cr_assert_eq(symlink(real, link), 0);
    rm_atomic_file af;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_atomic_open(&af, link, &e), RM_OK, "%s", e.msg);
    fputs("new\n", af.f);
    cr_assert_eq(rm_atomic_commit(&af, &e), RM_OK, "%s", e.msg);
    struct stat st;
    cr_assert_eq(lstat(link, &st), 0);
    cr_expect(S_ISLNK(st.st_mode), "the link is still a link");
    cf_expect_bytes(real, (const unsigned char *)"new\n", 4, "through the link");
    /* /dev/null stays a device (a rename over it, as root, would replace it). */
    cr_assert_eq(rm_atomic_open(&af, "/dev/null", &e), RM_OK, "%s", e.msg);
    cr_expect(af.in_place);
    fputs("discarded\n", af.f);
    cr_assert_eq(rm_atomic_commit(&af, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(stat("/dev/null", &st), 0);
    cr_expect(S_ISCHR(st.st_mode), "/dev/null is still a character device");
    /* /dev/full: the real ENOSPC, reported. */
    cr_assert_eq(rm_atomic_open(&af, "/dev/full", &e), RM_OK, "%s", e.msg);
    fputs("no room\n", af.f);
    cr_expect_eq(rm_atomic_commit(&af, &e), RM_ERR_IO);
    cr_expect(strstr(e.msg, "/dev/full") && strstr(e.msg, strerror(ENOSPC)), "%s", e.msg);
    /* A missing directory: nothing created, the error names the temporary. */
    cr_expect_eq(rm_atomic_open(&af, cf_path("no/such/dir/x"), &e), RM_ERR_IO);
    cr_expect(strstr(e.msg, "no/such/dir/x.tmp") && strstr(e.msg, strerror(ENOENT)), "%s", e.msg);
    cr_expect_eq(rm_atomic_open(&af, "", &e), RM_ERR_INVALID);
}

/* Two writers of one path at once each get their own temporary (O_EXCL). */
Test(write_errors, atomic_file_temporaries_are_unique)
{
    const char *path = cf_path("x");
    rm_atomic_file a, b;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_atomic_open(&a, path, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_atomic_open(&b, path, &e), RM_OK, "%s", e.msg);
    cr_expect_str_neq(a.tmp, b.tmp);
    fputs("a\n", a.f);
    fputs("b\n", b.f);
    cr_assert_eq(rm_atomic_commit(&b, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_atomic_commit(&a, &e), RM_OK, "%s", e.msg);
    cf_expect_bytes(path, (const unsigned char *)"a\n", 2, "the last commit wins");
    cr_expect_eq(cf_temporaries(cf_dir), 0);
}

/* ---- snapshots --------------------------------------------------------------------- */

Test(write_errors, snapshot_save_keeps_the_previous_snapshot)
{
    char text[512];
    tf_model_text(text, sizeof text, "conv1", 4, 5);
    tf_net net = tf_net_make(text, 42);
    const char *path = cf_path("run.snap");
    rm_err e = {RM_OK, ""};
    rm_snapshot_counters k = {3, 1, 7, 0, 0};
    cr_assert_eq(rm_snapshot_save(path, net.m, net.lpp, NULL, &k, &e), RM_OK, "%s", e.msg);
    size_t n;
    unsigned char *old = cf_read(path, &n);
    cr_assert_not_null(old);
    tf_net_fill(&net, 43); /* other parameters: a save that went through would change the file */
    for (size_t c = 0; c < N_IO_CASES; c++) {
        /* fwrite alone too: the snapshot writes its chunks with fwrite. */
        for (int alone = 0; alone < 2; alone++) {
            io_case ic = io_cases[c];
            if (alone && !(ic.mask & FI_FWRITE)) continue;
            if (alone) ic.mask = FI_FWRITE;
            fi_io_fail(ic.mask, 0, ic.err);
            int rc = rm_snapshot_save(path, net.m, net.lpp, NULL, &k, &e);
            fi_io_fail(0, 0, 0);
            cr_expect_eq(rc, RM_ERR_IO, "case %zu: %d %s", c, rc, e.msg);
            expect_message(e.msg, path, &ic);
            cf_expect_bytes(path, old, n, ic.step);
            cr_expect_eq(cf_temporaries(cf_dir), 0, "case %zu: a temporary is left", c);
        }
    }
    /* The kernel's own error: writes past 4 KiB fail with EFBIG. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit r, saved;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    r = saved;
    r.rlim_cur = 4096;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &r), 0);
    cr_assert_gt(n, 4096, "the snapshot must be larger than the limit");
    int rc = rm_snapshot_save(path, net.m, net.lpp, NULL, &k, &e);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
    cr_expect_eq(rc, RM_ERR_IO, "%s", e.msg);
    cr_expect(strstr(e.msg, strerror(EFBIG)), "%s", e.msg);
    cf_expect_bytes(path, old, n, "file size limit");
    cr_expect_eq(cf_temporaries(cf_dir), 0);
    /* /dev/full. */
    cr_expect_eq(rm_snapshot_save("/dev/full", net.m, net.lpp, NULL, &k, &e), RM_ERR_IO);
    cr_expect(strstr(e.msg, "/dev/full") && strstr(e.msg, strerror(ENOSPC)), "%s", e.msg);
    /* And the previous snapshot still loads (its CRC is valid). */
    tf_net_fill(&net, 44);
    cr_expect_eq(rm_snapshot_load(NULL, path, net.m, net.lpp, NULL, &e), RM_OK, "%s", e.msg);
    free(old);
    tf_net_free(&net);
}

Test(write_errors, train_cli_fails_when_its_snapshot_cannot_be_written)
{
    const char *snap = cf_path("run.snap");
    cr_assert_eq(cf_remat("train", "--model", VGG_TINY, "--data", "synthetic", "--batch", "2", "--budget", "100%",
                          "--steps", "1", "--samples", "4", "--snapshot", snap, "--quiet", NULL),
                 0, "%s", cf_err);
    size_t n;
    unsigned char *old = cf_read(snap, &n);
    cr_assert_not_null(old);
    fi_io_fail(FI_FSYNC, 0, EIO);
    int rc = cf_remat("train", "--model", VGG_TINY, "--data", "synthetic", "--batch", "2", "--budget", "100%",
                      "--steps", "2", "--samples", "4", "--snapshot", snap, "--quiet", "--seed", "5", NULL);
    fi_io_fail(0, 0, 0);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, snap) && strstr(cf_err, strerror(EIO)), "%s", cf_err);
    cf_expect_bytes(snap, old, n, "train --snapshot");
    cr_expect_eq(cf_temporaries(cf_dir), 0);
    free(old);
}

/* Issue 13: a snapshot on a full disk failed only at the first save, after a
 * whole epoch of steps. The room a snapshot takes is reserved (and given
 * back) before anything is solved or trained: no step runs, nothing is
 * printed on stdout, the previous snapshot is intact and no temporary stays. */
Test(write_errors, train_cli_refuses_a_full_disk_before_the_first_step)
{
    const char *snap = cf_path("run.snap");
    cf_write(snap, "previous\n");
    char *before = cf_text(cf_path("stdout"));
    fi_io_fail(FI_FALLOCATE, 0, ENOSPC);
    int rc = cf_remat("train", "--model", VGG_TINY, "--data", "synthetic", "--batch", "2", "--budget", "100%",
                      "--steps", "2", "--samples", "4", "--snapshot", snap, NULL);
    long fired = fi_io_fired();
    fi_io_fail(0, 0, 0);
    cr_assert_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_assert_eq(fired, 1);
    /* vgg-tiny: 34,522 parameters and their SGD momentum, no buffers, as
     * floats, with the header, counters and trailer. */
    rm_model *m = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_model_load(&m, VGG_TINY, &e), RM_OK, "%s", e.msg);
    size_t bytes = rm_snapshot_min_bytes(m, 1);
    cr_assert_eq(bytes, 32 + 56 + 4 + 4 * 2 * m->param_count);
    rm_model_free(m);
    char want[600];
    snprintf(want, sizeof want, "remat train: %s: no room for the %zu bytes it will hold: %s\n", snap, bytes,
             strerror(ENOSPC));
    cr_assert_str_eq(cf_err, want);
    char *after = cf_text(cf_path("stdout"));
    cr_assert_str_eq(after, before, "nothing on stdout: no step ran");
    free(before), free(after);
    cf_expect_bytes(snap, (const unsigned char *)"previous\n", 9, "train --snapshot");
    cr_assert_eq(cf_temporaries(cf_dir), 0);
}

/* ---- schedules and figures ------------------------------------------------------------ */

Test(write_errors, plan_out_keeps_the_previous_schedule)
{
    /* The first plan writes the file; later ones would rewrite it with the
     * same schedule, so a marker line tells an untouched file from a rewrite. */
    const char *out = cf_path("s.txt");
    cr_assert_eq(cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "griewank",
                          "--quiet", "--out", out, NULL),
                 0, "%s", cf_err);
    FILE *mark = fopen(out, "a");
    cr_assert_not_null(mark);
    fputs("# the previous file\n", mark);
    cr_assert_eq(fclose(mark), 0);
    size_t n;
    unsigned char *old = cf_read(out, &n);
    cr_assert_not_null(old);
    for (size_t c = 0; c < N_IO_CASES; c++) {
        fi_io_fail(io_cases[c].mask, 0, io_cases[c].err);
        int rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "griewank",
                          "--quiet", "--out", out, NULL);
        fi_io_fail(0, 0, 0);
        cr_expect_eq(rc, 1, "case %zu: exit %d: %s", c, rc, cf_err);
        expect_message(cf_err, out, &io_cases[c]);
        cf_expect_bytes(out, old, n, io_cases[c].step);
        cr_expect_eq(cf_temporaries(cf_dir), 0, "case %zu", c);
    }
    /* The kernel's EFBIG, with no wrapper involved. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit r, saved;
    cr_assert_eq(getrlimit(RLIMIT_FSIZE, &saved), 0);
    r = saved;
    r.rlim_cur = 1024;
    cr_assert_gt(n, 1024);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &r), 0);
    int rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "griewank",
                      "--quiet", "--out", out, NULL);
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &saved), 0);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, strerror(EFBIG)), "%s", cf_err);
    cf_expect_bytes(out, old, n, "file size limit");
    cr_expect_eq(cf_temporaries(cf_dir), 0);
    /* /dev/full as the target: written in place, its ENOSPC reported. */
    rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "griewank", "--quiet",
                  "--out", "/dev/full", NULL);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, "/dev/full") && strstr(cf_err, strerror(ENOSPC)), "%s", cf_err);
    free(old);
}

/* A directory the user cannot write to. Root writes anywhere, so only an
 * unprivileged run can see this one. */
Test(write_errors, plan_out_into_a_read_only_directory)
{
    if (geteuid() == 0) cr_skip_test("running as root: permissions do not stop root");
    const char *ro = cf_path("ro"), *out = cf_path("ro/s.txt");
    cr_assert_eq(mkdir(ro, 0700), 0);
    cf_write(out, "previous\n");
    cr_assert_eq(chmod(ro, 0500), 0);
    int rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "griewank",
                      "--quiet", "--out", out, NULL);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, out) && strstr(cf_err, strerror(EACCES)), "%s", cf_err);
    cf_expect_bytes(out, (const unsigned char *)"previous\n", 9, "read-only directory");
}

Test(write_errors, svg_figures_keep_the_previous_files)
{
    const char *prefix = cf_path("fig"), *rs = cf_path("fig-rs.svg"), *mem = cf_path("fig-memory.svg");
    cf_write(rs, "<svg>old rs</svg>\n");
    cf_write(mem, "<svg>old memory</svg>\n");
    for (size_t c = 0; c < N_IO_CASES; c++) {
        fi_io_fail(io_cases[c].mask, 0, io_cases[c].err);
        int rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "griewank",
                          "--quiet", "--svg", prefix, NULL);
        fi_io_fail(0, 0, 0);
        cr_expect_eq(rc, 1, "case %zu: exit %d: %s", c, rc, cf_err);
        expect_message(cf_err, rs, &io_cases[c]);
        cr_expect(strstr(cf_err, "SVG"), "%s", cf_err);
        cf_expect_bytes(rs, (const unsigned char *)"<svg>old rs</svg>\n", 18, io_cases[c].step);
        cf_expect_bytes(mem, (const unsigned char *)"<svg>old memory</svg>\n", 22, io_cases[c].step);
        cr_expect_eq(cf_temporaries(cf_dir), 0, "case %zu", c);
    }
    /* The second figure failing leaves the first one written and the second as it was. */
    fi_io_fail(FI_FFLUSH, 1, ENOSPC);
    int rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "griewank",
                      "--quiet", "--svg", prefix, NULL);
    fi_io_fail(0, 0, 0);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, mem), "%s", cf_err);
    size_t n;
    unsigned char *now = cf_read(rs, &n);
    cr_assert_not_null(now);
    cr_expect(n > 100 && !memcmp(now, "<svg", 4), "the first figure was written");
    free(now);
    cf_expect_bytes(mem, (const unsigned char *)"<svg>old memory</svg>\n", 22, "the second figure");
    cr_expect_eq(cf_temporaries(cf_dir), 0);
}

Test(write_errors, graph_dot_keeps_the_previous_file)
{
    const char *dot = cf_path("g.dot");
    cf_write(dot, "digraph old {}\n");
    fi_io_fail(FI_FFLUSH, 0, ENOSPC);
    int rc = cf_remat("graph", "--model", VGG_TINY, "--batch", "2", "--dot", dot, NULL);
    fi_io_fail(0, 0, 0);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, dot) && strstr(cf_err, strerror(ENOSPC)), "%s", cf_err);
    cf_expect_bytes(dot, (const unsigned char *)"digraph old {}\n", 15, "graph --dot");
    cr_expect_eq(cf_temporaries(cf_dir), 0);
}

Test(write_errors, graph_problem_out_keeps_the_previous_file)
{
    const char *out = cf_path("p.txt");
    cf_write(out, "problem old\n");
    for (size_t c = 0; c < N_IO_CASES; c++) {
        fi_io_fail(io_cases[c].mask, 0, io_cases[c].err);
        int rc = cf_remat("graph", "--model", VGG_TINY, "--batch", "2", "--problem-out", out, NULL);
        fi_io_fail(0, 0, 0);
        cr_expect_eq(rc, 1, "case %zu: exit %d: %s", c, rc, cf_err);
        expect_message(cf_err, out, &io_cases[c]);
        cf_expect_bytes(out, (const unsigned char *)"problem old\n", 12, io_cases[c].step);
        cr_expect_eq(cf_temporaries(cf_dir), 0, "case %zu", c);
    }
}

/* --strategy all --svg writes the cheapest schedule's two figures, then the
 * comparison: the third write failing leaves the previous comparison. */
Test(write_errors, plan_compare_svg_keeps_the_previous_file)
{
    const char *prefix = cf_path("all"), *cmp = cf_path("all-compare.svg");
    cf_write(cmp, "<svg>old</svg>\n");
    fi_io_fail(FI_FFLUSH, 2, ENOSPC);
    int rc = cf_remat("plan", "--problem", REMAT_SOURCE_DIR "/docs/examples/two-layer.txt", "--strategy", "all",
                      "--time-limit", "0", "--node-limit", "100", "--svg", prefix, "--quiet", NULL);
    fi_io_fail(0, 0, 0);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, cmp) && strstr(cf_err, strerror(ENOSPC)), "%s", cf_err);
    cf_expect_bytes(cmp, (const unsigned char *)"<svg>old</svg>\n", 15, "plan --strategy all --svg");
    cr_expect_eq(cf_temporaries(cf_dir), 0);
}

Test(write_errors, lesson_page_keeps_the_previous_file)
{
    const char *page = cf_path("lesson.html");
    const char *old = "<html>the previous lesson</html>\n";
    cf_write(page, old);
    for (size_t c = 0; c < N_IO_CASES; c++) {
        fi_io_fail(io_cases[c].mask, 0, io_cases[c].err);
        int rc = cf_remat("lesson", "--problem", REMAT_SOURCE_DIR "/docs/examples/two-layer.txt", "--budgets", "2",
                          "--strategies", "checkpoint_all,ogc", "--quiet", "--out", page, NULL);
        fi_io_fail(0, 0, 0);
        cr_expect_eq(rc, 1, "case %zu: exit %d: %s", c, rc, cf_err);
        expect_message(cf_err, page, &io_cases[c]);
        cf_expect_bytes(page, (const unsigned char *)old, strlen(old), io_cases[c].step);
        cr_expect_eq(cf_temporaries(cf_dir), 0, "case %zu", c);
    }
    int rc = cf_remat("lesson", "--problem", REMAT_SOURCE_DIR "/docs/examples/two-layer.txt", "--budgets", "2",
                      "--quiet", "--out", "/dev/full", NULL);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, "/dev/full") && strstr(cf_err, strerror(ENOSPC)), "%s", cf_err);
}

/* ---- the schedule cache ---------------------------------------------------------------- */

static void note_of(void *ctx, const rm_trainer_event *ev)
{
    char *notes = ctx;
    if (ev->kind != RM_TRAINER_NOTE) return;
    size_t l = strlen(notes);
    snprintf(notes + l, 4096 - l, "%s\n", ev->text);
}

/* The cache only saves solver time: a failure to store it is a note and the
 * run goes on (trainer.c), but the file at the path must survive intact. */
Test(write_errors, schedule_cache_keeps_the_previous_file)
{
    static char notes[4096];
    rm_trainer_config c;
    rm_trainer_config_default(&c);
    c.model_path = VGG_TINY;
    c.batch = 2;
    c.budget_percent = 100;
    c.strategy = "chen_greedy";
    c.synthetic_samples = 8;
    c.cache_dir = cf_dir;
    c.event = note_of;
    c.event_ctx = notes;
    rm_trainer *t = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_create(&t, &c, &e), RM_OK, "%s", e.msg);
    char cache[512];
    snprintf(cache, sizeof cache, "%s", rm_trainer_summary_of(t)->cache_file);
    rm_trainer_free(t);
    /* A stale entry (the reader rejects it), so the next run solves and stores again. */
    cf_write(cache, "stale\n");
    for (size_t k = 0; k < N_IO_CASES; k++) {
        notes[0] = '\0';
        fi_io_fail(io_cases[k].mask, 0, io_cases[k].err);
        int rc = rm_trainer_create(&t, &c, &e);
        fi_io_fail(0, 0, 0);
        cr_expect_eq(rc, RM_OK, "case %zu: %s", k, e.msg);
        rm_trainer_free(t);
        cr_expect(strstr(notes, "schedule cache: not stored") && strstr(notes, strerror(io_cases[k].err)),
                  "case %zu: %s", k, notes);
        cf_expect_bytes(cache, (const unsigned char *)"stale\n", 6, io_cases[k].step);
        cr_expect_eq(cf_temporaries(cf_dir), 0, "case %zu", k);
    }
}
