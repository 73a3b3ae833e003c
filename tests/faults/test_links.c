/* Links and special files where remat reads and writes (issue 23; the rule
 * is in docs/reliability.md, "Links and special files", and
 * base/atomic_file.h). The schedule cache is remat's own folder, with
 * names anyone can predict: nothing planted there (a symbolic link to a
 * victim, a FIFO, a hard link) is followed, written through or waited on,
 * and the entry is replaced by a regular file. A file the user names
 * (--out, --dot, --snapshot, --svg, --resume) follows a link only where the
 * kernel's protected_symlinks rule would: another user's link in a sticky
 * world-writable folder such as /tmp is refused and its target untouched.
 * Nothing waits on a FIFO it reads, and --svg, whose figures are created
 * beside the prefix, refuses a prefix that is a device or FIFO. Every
 * victim is checked byte for byte. No test creates anything in /dev: the
 * device cases go through a link in the test's own folder. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic_file.h"
#include "cli_fixture.h"
#include "trainer.h"

#define VGG_TINY CF_MODEL("vgg-tiny.cfg")
#define VICTIM "the victim's own contents\n"
#define OTHER_UID 4242 /* a user that is not this process's */

TestSuite(links, .init = cf_setup, .fini = cf_teardown);

static void expect_victim_intact(const char *victim, const char *what)
{
    cf_expect_bytes(victim, (const unsigned char *)VICTIM, strlen(VICTIM), what);
}

/* The number of entries in dir (without . and ..). */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n;
}

static int is_regular_entry(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1;
}

/* ---- the schedule cache ----------------------------------------------------------- */

static char notes[4096];

static void note_of(void *ctx, const rm_trainer_event *ev)
{
    (void)ctx;
    if (ev->kind != RM_TRAINER_NOTE) return;
    size_t l = strlen(notes);
    snprintf(notes + l, sizeof notes - l, "%s\n", ev->text);
}

static void cache_config(rm_trainer_config *c)
{
    rm_trainer_config_default(c);
    c->model_path = VGG_TINY;
    c->batch = 2;
    c->budget_percent = 100;
    c->strategy = "chen_greedy";
    c->synthetic_samples = 8;
    c->cache_dir = cf_path("cache");
    c->event = note_of;
}

/* Creates a trainer (its schedule solved or read from the cache), returns
 * its cache state (-1, 0 miss, 1 hit), and the entry's name in entry. */
static int cache_run(char *entry, size_t len, int *stored)
{
    rm_trainer_config c;
    cache_config(&c);
    notes[0] = '\0';
    rm_trainer *t = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_create(&t, &c, &e), RM_OK, "%s", e.msg);
    const rm_trainer_summary *s = rm_trainer_summary_of(t);
    int hit = s->cache;
    if (stored) *stored = s->cache_stored;
    if (entry) snprintf(entry, len, "%s", s->cache_file);
    rm_trainer_free(t);
    return hit;
}

/* The attack: the entry replaced by a link to a file of the victim
 * (here one beside the cache). The run said "ignoring ...; solving again"
 * and then renamed its schedule over the link's target. Now the link is
 * ignored, the victim untouched, and the link itself replaced by the
 * entry, which the next run uses. */
Test(links, a_linked_cache_entry_is_replaced_not_written_through)
{
    char entry[512];
    cr_assert_eq(cache_run(entry, sizeof entry, NULL), 0, "a miss: %s", notes);
    const char *victim = cf_path("victim");
    cf_write(victim, VICTIM);
    cr_assert_eq(unlink(entry), 0);
    cr_assert_eq(symlink(victim, entry), 0);
    int stored = 0;
    cr_expect_eq(cache_run(NULL, 0, &stored), 0, "the link is no entry: %s", notes);
    cr_expect(strstr(notes, "schedule cache: ignoring") && strstr(notes, "a symbolic link: not followed"), "%s", notes);
    cr_expect_eq(stored, 1, "%s", notes);
    expect_victim_intact(victim, "the link's target");
    cr_expect(is_regular_entry(entry), "the link itself was replaced by the entry");
    cr_expect_eq(cache_run(NULL, 0, NULL), 1, "and that entry is used: %s", notes);

    /* A link to a good schedule is not followed either: remat did not put
     * it there, so it is not its entry. */
    const char *copy = cf_path("good.schedule");
    cr_assert_eq(rename(entry, copy), 0);
    cr_assert_eq(symlink(copy, entry), 0);
    cr_expect_eq(cache_run(NULL, 0, NULL), 0, "a link to a valid schedule is not read: %s", notes);
    cr_expect(strstr(notes, "a symbolic link: not followed"), "%s", notes);
    cr_expect(is_regular_entry(entry));
}

/* A FIFO under the entry's name blocked the run forever in open (the
 * timeout catches that); a hard link to a file the planter could not read
 * was parsed, its first words quoted in the note. Both are refused as what
 * they are, and replaced by the entry. */
Test(links, a_fifo_or_hard_link_cache_entry_is_refused_without_waiting, .timeout = 60)
{
    char entry[512];
    cr_assert_eq(cache_run(entry, sizeof entry, NULL), 0, "%s", notes);
    cr_assert_eq(unlink(entry), 0);
    cr_assert_eq(mkfifo(entry, 0666), 0);
    int stored = 0;
    cr_expect_eq(cache_run(NULL, 0, &stored), 0, "%s", notes);
    cr_expect(strstr(notes, "not a regular file (a FIFO)"), "%s", notes);
    cr_expect_eq(stored, 1, "%s", notes);
    cr_expect(is_regular_entry(entry), "the FIFO was replaced, not written to");

    const char *victim = cf_path("victim");
    cf_write(victim, VICTIM);
    cr_assert_eq(unlink(entry), 0);
    cr_assert_eq(link(victim, entry), 0);
    cr_expect_eq(cache_run(NULL, 0, NULL), 0, "%s", notes);
    cr_expect(strstr(notes, "has 2 hard links: not a file remat wrote"), "%s", notes);
    cr_expect_null(strstr(notes, "victim's"), "nothing of the victim is quoted: %s", notes);
    expect_victim_intact(victim, "the hard link's other name");
    cr_expect(is_regular_entry(entry));
}

/* The command line: `remat train --schedule-cache DIR` with a
 * planted link leaves its target as it was. */
Test(links, train_cli_schedule_cache_leaves_a_links_target_intact)
{
    const char *cache = cf_path("cache"), *victim = cf_path("victim");
    const char *args[] = {"train", "--model",    VGG_TINY,      "--data",           "synthetic", "--batch",
                          "2",     "--budget",   "100%",        "--steps",          "1",         "--samples",
                          "4",     "--strategy", "chen_greedy", "--schedule-cache", cache,       NULL};
    cr_assert_eq(cf_remat_args(args), 0, "%s", cf_err);
    DIR *d = opendir(cache);
    cr_assert_not_null(d);
    char entry[512] = "";
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if (strstr(de->d_name, ".schedule")) snprintf(entry, sizeof entry, "%s/%s", cache, de->d_name);
    closedir(d);
    cr_assert(entry[0], "the run stored its schedule");
    cf_write(victim, VICTIM);
    cr_assert_eq(unlink(entry), 0);
    cr_assert_eq(symlink(victim, entry), 0);
    cr_assert_eq(cf_remat_args(args), 0, "%s", cf_err);
    cr_expect(strstr(cf_err, "schedule cache: ignoring") && strstr(cf_err, "a symbolic link: not followed"), "%s",
              cf_err);
    expect_victim_intact(victim, "train --schedule-cache");
    cr_expect(is_regular_entry(entry));
}

/* ---- files the user names ----------------------------------------------------------- */

/* A sticky world-writable folder (like /tmp) holding a link to victim owned
 * by another user (as another user would plant it). Only root can give a
 * link away, so unprivileged runs skip. */
static const char *planted_link(const char *name, const char *victim)
{
    if (geteuid() != 0) cr_skip_test("a link of another user needs root to make");
    const char *shared = cf_path("shared");
    struct stat st;
    if (stat(shared, &st) != 0) {
        cr_assert_eq(mkdir(shared, 0777), 0);
        cr_assert_eq(chmod(shared, 01777), 0);
    }
    char rel[64];
    snprintf(rel, sizeof rel, "shared/%s", name);
    const char *link = cf_path(rel);
    cr_assert_eq(symlink(victim, link), 0);
    cr_assert_eq(lchown(link, OTHER_UID, OTHER_UID), 0, "%s", strerror(errno));
    return link;
}

static void expect_refused(int rc, const char *link, const char *what)
{
    cr_expect_eq(rc, 1, "%s: exit %d: %s", what, rc, cf_err);
    cr_expect(strstr(cf_err, link) && strstr(cf_err, "a symbolic link of another user (uid 4242)") &&
                  strstr(cf_err, "not followed"),
              "%s: %s", what, cf_err);
}

Test(links, another_users_link_in_a_sticky_folder_is_never_written_through)
{
    const char *victim = cf_path("victim");
    cf_write(victim, VICTIM);

    /* The writer itself: refused at open, nothing created. */
    const char *link = planted_link("out", victim);
    rm_atomic_file af;
    rm_err e = {RM_OK, ""};
    cr_expect_eq(rm_atomic_open(&af, link, &e), RM_ERR_IO);
    cr_expect(strstr(e.msg, "a symbolic link of another user (uid 4242)"), "%s", e.msg);
    cr_expect_eq(rm_atomic_probe(link, &e), RM_ERR_IO, "and the probe says so up front");

    int rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "griewank",
                      "--quiet", "--out", link, NULL);
    expect_refused(rc, link, "plan --out");
    rc = cf_remat("graph", "--model", VGG_TINY, "--batch", "2", "--dot", link, NULL);
    expect_refused(rc, link, "graph --dot");
    rc = cf_remat("train", "--model", VGG_TINY, "--data", "synthetic", "--batch", "2", "--budget", "100%", "--steps",
                  "1", "--samples", "4", "--snapshot", link, "--quiet", NULL);
    expect_refused(rc, link, "train --snapshot");
    cr_expect(!cf_said(0, "done"), "refused before the first step");
    const char *rs = planted_link("fig-rs.svg", victim);
    rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "griewank", "--quiet",
                  "--svg", cf_path("shared/fig"), NULL);
    expect_refused(rc, rs, "plan --svg");
    /* Reading through it is refused the same way. */
    rc = cf_remat("train", "--model", VGG_TINY, "--data", "synthetic", "--batch", "2", "--budget", "100%", "--steps",
                  "1", "--samples", "4", "--resume", link, "--quiet", NULL);
    expect_refused(rc, link, "train --resume");
    expect_victim_intact(victim, "every writer");
    cr_expect_eq(entries(cf_path("shared")), 2, "nothing created beside the links");
}

/* Where the kernel would follow the link, remat does, as before: its own
 * link in the sticky folder, the folder owner's, and anyone's in a folder
 * that is not sticky (anyone could rename the file itself there). */
Test(links, a_link_the_kernel_would_follow_is_followed)
{
    const char *victim = cf_path("victim");
    cf_write(victim, VICTIM);
    const char *link = planted_link("out", victim);
    const char *shared = cf_path("shared");
    rm_atomic_file af;
    rm_err e = {RM_OK, ""};
    struct {
        uid_t link_owner, folder_owner;
        mode_t mode;
    } cases[] = {{0, 0, 01777}, {OTHER_UID, OTHER_UID, 01777}, {OTHER_UID, 0, 0777}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cf_write(victim, VICTIM);
        cr_assert_eq(lchown(link, cases[i].link_owner, cases[i].link_owner), 0);
        cr_assert_eq(chown(shared, cases[i].folder_owner, cases[i].folder_owner), 0);
        cr_assert_eq(chmod(shared, cases[i].mode), 0);
        cr_assert_eq(rm_atomic_open(&af, link, &e), RM_OK, "case %zu: %s", i, e.msg);
        fputs("new\n", af.f);
        cr_assert_eq(rm_atomic_commit(&af, &e), RM_OK, "case %zu: %s", i, e.msg);
        cf_expect_bytes(victim, (const unsigned char *)"new\n", 4, "followed");
        struct stat st;
        cr_expect(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "case %zu: the link kept", i);
    }
}

/* A FIFO given to --resume blocked the run in open; it is refused at once. */
Test(links, resume_from_a_fifo_does_not_wait, .timeout = 60)
{
    const char *fifo = cf_path("run.snap");
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    int rc = cf_remat("train", "--model", VGG_TINY, "--data", "synthetic", "--batch", "2", "--budget", "100%",
                      "--steps", "1", "--samples", "4", "--resume", fifo, "--quiet", NULL);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, fifo) && strstr(cf_err, "not a regular file (a FIFO)"), "%s", cf_err);
    /* A device behind a link (what /dev/zero would give) the same way. */
    const char *dev = cf_path("zero.snap");
    cr_assert_eq(symlink("/dev/zero", dev), 0);
    rc = cf_remat("train", "--model", VGG_TINY, "--data", "synthetic", "--batch", "2", "--budget", "100%", "--steps",
                  "1", "--samples", "4", "--resume", dev, "--quiet", NULL);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, "not a regular file (a device)"), "%s", cf_err);
}

/* --svg PREFIX creates PREFIX-rs.svg and PREFIX-memory.svg beside the
 * prefix: `--svg /dev/full` made regular files in /dev. A prefix that is a
 * device (here through a link to /dev/full, so that nothing can land in
 * /dev) or a FIFO is refused before anything is solved, and the folder
 * keeps only what it held. */
Test(links, an_svg_prefix_that_is_a_device_or_fifo_creates_nothing)
{
    const char *dir = cf_path("figs");
    cr_assert_eq(mkdir(dir, 0700), 0);
    const char *full = cf_path("figs/full"), *fifo = cf_path("figs/pipe");
    cr_assert_eq(symlink("/dev/full", full), 0);
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    const char *prefixes[] = {full, fifo};
    for (size_t i = 0; i < 2; i++) {
        int rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "griewank",
                          "--svg", prefixes[i], NULL);
        cr_expect_eq(rc, 1, "%s: exit %d: %s", prefixes[i], rc, cf_err);
        cr_expect(strstr(cf_err, prefixes[i]) && strstr(cf_err, "a device or FIFO, not a prefix"), "%s", cf_err);
        cr_expect(!cf_said(0, "griewank"), "refused before the solve");
        cr_expect_eq(entries(dir), 2, "%s: nothing created beside it", prefixes[i]);
    }
}

/* ---- what stays as it was ---------------------------------------------------------- */

/* A link planted under a temporary's name (TARGET.tmp.<pid>.<k>) is never
 * opened: O_EXCL (and O_NOFOLLOW) move on to the next name. */
Test(links, a_link_under_a_temporarys_name_is_not_opened)
{
    const char *victim = cf_path("victim"), *out = cf_path("out");
    cf_write(victim, VICTIM);
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.0", out, (long)getpid());
    cr_assert_eq(symlink(victim, tmp), 0);
    rm_atomic_file af;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_atomic_open(&af, out, &e), RM_OK, "%s", e.msg);
    cr_expect_str_neq(af.tmp, tmp);
    fputs("new\n", af.f);
    cr_assert_eq(rm_atomic_commit(&af, &e), RM_OK, "%s", e.msg);
    cf_expect_bytes(out, (const unsigned char *)"new\n", 4, "written");
    expect_victim_intact(victim, "the planted temporary's target");
}

/* /dev/stdout on a pipe is /proc/self/fd/1 -> "pipe:[N]", a link to no
 * path: still written in place (here as /dev/fd/N of a pipe of our own). */
Test(links, a_pipe_named_through_proc_is_written_in_place)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    char name[64];
    snprintf(name, sizeof name, "/dev/fd/%d", p[1]);
    rm_atomic_file af;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_atomic_open(&af, name, &e), RM_OK, "%s", e.msg);
    cr_expect(af.in_place);
    fputs("through the pipe\n", af.f);
    cr_assert_eq(rm_atomic_commit(&af, &e), RM_OK, "%s", e.msg);
    char buf[64] = "";
    cr_assert_eq(read(p[0], buf, sizeof buf - 1), 17);
    cr_expect_str_eq(buf, "through the pipe\n");
    close(p[0]);
    close(p[1]);
}

/* ---- the cache folder, and FIFOs planted for a writer --------------------------- */

/* The --schedule-cache folder itself as another user's link in a sticky
 * world-writable folder: entries were written into (and read from) the
 * folder it names. Refused like --out's link, nothing created there. */
Test(links, another_users_link_as_the_cache_folder_is_refused)
{
    const char *victim = cf_path("victim2");
    cr_assert_eq(mkdir(victim, 0777), 0);
    const char *link = planted_link("c2", victim);
    rm_trainer_config c;
    cache_config(&c);
    char slashed[256];
    snprintf(slashed, sizeof slashed, "%s/", link);
    const char *dirs[] = {link, slashed};
    for (int i = 0; i < 2; i++) {
        c.cache_dir = dirs[i];
        rm_trainer *t = NULL;
        rm_err e = {RM_OK, ""};
        cr_expect_neq(rm_trainer_create(&t, &c, &e), RM_OK, "%s", dirs[i]);
        cr_expect(strstr(e.msg, "a symbolic link of another user (uid 4242)"), "%s", e.msg);
        rm_trainer_free(t);
    }
    cr_expect_eq(entries(victim), 0, "nothing written through the link");
}

/* A FIFO of another user in a sticky world-writable folder hung --out (after
 * the solve) and --snapshot (after training) in open, waiting for a reader.
 * It is refused up front, by the probe (protected_fifos); our own FIFO with
 * no reader fails at once (ENXIO) instead of blocking. */
Test(links, a_planted_fifo_is_refused_up_front, .timeout = 60)
{
    planted_link("unused", cf_path("victim")); /* makes the sticky folder (root only) */
    const char *fifo = cf_path("shared/ff");
    cr_assert_eq(mkfifo(fifo, 0666), 0);
    cr_assert_eq(chown(fifo, OTHER_UID, OTHER_UID), 0);
    rm_err e = {RM_OK, ""};
    cr_expect_eq(rm_atomic_probe(fifo, &e), RM_ERR_IO);
    cr_expect(strstr(e.msg, "a FIFO of another user (uid 4242)"), "%s", e.msg);
    rm_atomic_file af;
    cr_expect_eq(rm_atomic_open(&af, fifo, &e), RM_ERR_IO, "the writer too");
    int rc = cf_remat("plan", "--model", VGG_TINY, "--batch", "2", "--budget", "100%", "--strategy", "checkpoint_all",
                      "--out", fifo, NULL);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(strstr(cf_err, fifo) && strstr(cf_err, "a FIFO of another user"), "%s", cf_err);
    cr_expect(!cf_said(0, "checkpoint_all"), "refused before the solve");
    rc = cf_remat("train", "--model", VGG_TINY, "--data", "synthetic", "--batch", "2", "--budget", "100%", "--steps",
                  "1", "--samples", "4", "--snapshot", fifo, "--quiet", NULL);
    cr_expect_eq(rc, 1, "exit %d: %s", rc, cf_err);
    cr_expect(!cf_said(0, "done"), "refused before the first step");
    /* Ours, in a folder of our own, with no reader: an error, not a hang. */
    const char *own = cf_path("own.fifo");
    cr_assert_eq(mkfifo(own, 0666), 0);
    cr_expect_eq(rm_atomic_probe(own, &e), RM_OK, "%s", e.msg);
    cr_expect_eq(rm_atomic_open(&af, own, &e), RM_ERR_IO);
    cr_expect(strstr(e.msg, "a FIFO with no reader"), "%s", e.msg);
}
