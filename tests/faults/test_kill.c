/* A training run killed at any moment leaves a snapshot that loads.
 *
 * A child process trains vgg-tiny on the CPU with one-step epochs, so it
 * saves a snapshot after every step (the trainer saves at every epoch's
 * end); the parent SIGKILLs it after a seeded random 50-400 ms, several
 * rounds in a row on the same snapshot path. After each kill the
 * snapshot, if one was written yet, must load (header and CRC valid: the
 * trainer refuses anything else), and a run resumed from it must continue
 * from its step and complete. A kill inside a save leaves the previous
 * snapshot in place (base/atomic_file.h) and at most a stale temporary
 * file next to it, which nothing reads. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "atomic_file.h"
#include "cli_fixture.h"
#include "rng.h"
#include "trainer.h"

TestSuite(kill_faults, .init = cf_setup, .fini = cf_teardown);

static rm_trainer_config config(const char *snap)
{
    rm_trainer_config c;
    rm_trainer_config_default(&c);
    c.model_path = CF_MODEL("vgg-tiny.cfg");
    c.batch = 2;
    c.budget_percent = 100;
    c.strategy = "checkpoint_all";
    c.synthetic_samples = 2; /* one step an epoch: a snapshot after every step */
    c.epochs = 1000000;
    c.train_accuracy_every = 0;
    c.seed = 3;
    c.seed_given = 1;
    c.snapshot_path = snap;
    return c;
}

/* The child: trains until killed, resuming from the snapshot when there is one. */
static void child(const char *snap, int resume)
{
    rm_trainer_config c = config(snap);
    if (resume) c.resume_path = snap;
    rm_trainer *t = NULL;
    rm_err e = {RM_OK, ""};
    int rc = rm_trainer_create(&t, &c, &e);
    if (!rc) rc = rm_trainer_run(t, &e);
    _exit(rc ? 3 : 4); /* never reached: the parent kills it first */
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

Test(kill_faults, killed_training_resumes_from_its_snapshot, .timeout = 30)
{
    const char *snap = cf_path("run.snap");
    rm_rng rng = rm_rng_make(20240611);
    int loaded = 0;
    uint64_t last_step = 0;
    for (int round = 0; round < 8; round++) {
        int have = access(snap, F_OK) == 0;
        long delay = 50 + (long)(rm_rng_next(&rng) % 351);
        fflush(stdout);
        fflush(stderr);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) child(snap, have);
        sleep_ms(delay);
        cr_assert_eq(kill(pid, SIGKILL), 0);
        int status;
        cr_assert_eq(waitpid(pid, &status, 0), pid);
        cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                  "round %d: the child ended by itself (status %d) before the kill at %ld ms", round, status, delay);
        if (access(snap, F_OK) != 0) {
            cr_assert(!have, "round %d: the snapshot disappeared", round);
            continue; /* killed before its first save */
        }
        /* The snapshot loads: a resumed run accepts it (the trainer checks
         * the header, the CRC and the model before anything else). */
        rm_trainer_config c = config(snap);
        c.resume_path = snap;
        rm_trainer *t = NULL;
        rm_err e = {RM_OK, ""};
        cr_assert_eq(rm_trainer_create(&t, &c, &e), RM_OK, "round %d (killed at %ld ms): %s", round, delay, e.msg);
        uint64_t start = rm_trainer_summary_of(t)->start_step;
        rm_trainer_free(t);
        cr_assert_geq(start, last_step, "round %d: the snapshot went back from step %llu to %llu", round,
                      (unsigned long long)last_step, (unsigned long long)start);
        last_step = start;
        loaded++;
        /* ... and a run resumed from it continues from its step and completes. */
        c.snapshot_path = NULL; /* the next round kills the run that owns the file */
        c.max_steps = start + 2;
        c.epochs = start + 2;
        cr_assert_eq(rm_trainer_create(&t, &c, &e), RM_OK, "%s", e.msg);
        cr_assert_eq(rm_trainer_run(t, &e), RM_OK, "round %d: resumed at step %llu: %s", round,
                     (unsigned long long)start, e.msg);
        cr_assert_eq(rm_trainer_steps(t), start + 2);
        rm_trainer_free(t);
    }
    /* A kill inside a save leaves its temporary behind, and the next run's
     * first save removes it (its writer is gone): one at most remains. */
    int stale = cf_temporaries(cf_dir);
    cr_log_info("kill: %d of 8 rounds left a snapshot that loaded; last at step %llu; %d stale temporaries", loaded,
                (unsigned long long)last_step, stale);
    cr_assert_leq(stale, 1, "%d stale temporaries piled up", stale);
    cr_assert_geq(loaded, 4, "too few rounds got as far as a snapshot: the kill times are too short");
    cr_assert_gt(last_step, 1, "the runs never got past their first step");
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s", path);
    fclose(f);
}

/* Issue 13: 20 kills of a snapshotting run left 3 stale TARGET.tmp.<pid>.<k>
 * files; nothing ever removed them. Opening a write to TARGET removes those
 * of processes that no longer run, and nothing else: not a live process's
 * (it may be writing), not another target's, not names of another form. */
Test(kill_faults, stale_temporaries_of_dead_writers_are_removed)
{
    pid_t dead = fork();
    cr_assert_geq(dead, 0);
    if (dead == 0) _exit(0);
    cr_assert_eq(waitpid(dead, NULL, 0), dead);
    const char *target = cf_path("run.snap");
    char gone[2][300], kept[6][300];
    snprintf(gone[0], sizeof gone[0], "%s.tmp.%d.0", target, (int)dead);
    snprintf(gone[1], sizeof gone[1], "%s.tmp.%d.17", target, (int)dead);
    snprintf(kept[0], sizeof kept[0], "%s.tmp.%d.0", target, (int)getppid()); /* alive */
    snprintf(kept[1], sizeof kept[1], "%s/other.snap.tmp.%d.0", cf_dir, (int)dead);
    snprintf(kept[2], sizeof kept[2], "%s.tmp.%d.0.old", target, (int)dead);
    snprintf(kept[3], sizeof kept[3], "%s.tmp.%d.", target, (int)dead);
    snprintf(kept[4], sizeof kept[4], "%s.tmp.+%d.0", target, (int)dead);
    snprintf(kept[5], sizeof kept[5], "%s.tmp.%d.1", target, (int)dead); /* a folder */
    for (int k = 0; k < 2; k++) touch(gone[k]);
    for (int k = 0; k < 5; k++) touch(kept[k]);
    cr_assert_eq(mkdir(kept[5], 0755), 0);
    rm_atomic_file af;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_atomic_open(&af, target, &e), RM_OK, "%s", e.msg);
    fputs("new\n", af.f);
    cr_assert_eq(rm_atomic_commit(&af, &e), RM_OK, "%s", e.msg);
    for (int k = 0; k < 2; k++) cr_assert_neq(access(gone[k], F_OK), 0, "%s was left", gone[k]);
    for (int k = 0; k < 6; k++) cr_assert_eq(access(kept[k], F_OK), 0, "%s was removed", kept[k]);
    char *text = cf_text(target);
    cr_assert_str_eq(text, "new\n");
    free(text);
    rmdir(kept[5]);
}
