/* A training run killed at any moment leaves a snapshot that loads.
 *
 * A child process trains vgg-tiny on the CPU with one-step epochs, so it
 * saves a snapshot after every step (the trainer saves at every epoch's
 * end); the parent SIGKILLs it after a seeded random 50-400 ms, several
 * rounds in a row on the same snapshot path. After each kill the
 * snapshot, if one was written yet, must load (header and CRC valid: the
 * trainer refuses anything else), and a run resumed from it must continue
 * from its step and complete. A kill inside a save leaves the previous
 * snapshot in place (engine/atomic_file.h) and at most a stale temporary
 * file next to it, which nothing reads. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

Test(kill_faults, killed_training_resumes_from_its_checkpoint, .timeout = 30)
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
    /* Kills inside a save leave their temporary (unique per process) behind. */
    cr_log_info("kill: %d of 8 rounds left a snapshot that loaded; last at step %llu; %d stale temporaries",
                loaded, (unsigned long long)last_step, cf_temporaries(cf_dir));
    cr_assert_geq(loaded, 4, "too few rounds got as far as a snapshot: the kill times are too short");
    cr_assert_gt(last_step, 1, "the runs never got past their first step");
}
