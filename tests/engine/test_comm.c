/* The communication layer (engine/comm.h) in one process: the single
 * backend's collectives are the identity; the launcher's environment
 * (base/launcher.h) picks the backend and keeps other ranks' logs quiet;
 * and a build without MPI started by mpirun as one of several processes
 * says so instead of running N copies of a one-process job. The
 * mpi backend across processes is tested by tests/mpi (scripts/test's MPI
 * pass). */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "launcher.h"
#include "log.h"

static const char *const launcher_vars[] = {
    "OMPI_COMM_WORLD_SIZE",       "PMI_SIZE",        "PMIX_SIZE",    "PMIX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};

static void clear_launcher(void)
{
    for (size_t i = 0; i < sizeof launcher_vars / sizeof *launcher_vars; i++) unsetenv(launcher_vars[i]);
}

Test(comm, single_collectives_are_the_identity)
{
    clear_launcher();
    rm_comm *c = NULL;
    rm_err e = {0};
    cr_assert_eq(rm_comm_create_auto(&c, &e), RM_OK, "%s", e.msg);
    cr_assert_str_eq(c->name, "single");
    cr_assert_eq(c->rank, 0);
    cr_assert_eq(c->size, 1);
    float x[3] = {1.5f, -2.0f, 3.25f}, y[3];
    memcpy(y, x, sizeof x);
    cr_assert_eq(rm_comm_allreduce(c, x, 3, &e), RM_OK);
    cr_assert_eq(memcmp(x, y, sizeof x), 0, "a sum over one rank is the value");
    rm_comm_request *req = (rm_comm_request *)&e; /* must be overwritten */
    cr_assert_eq(c->ops->allreduce_start(c->ctx, x, 3, &req, &e), RM_OK);
    cr_assert_null(req, "done at once: no request to wait for");
    double dd[2] = {1e300, -0.125};
    cr_assert_eq(c->ops->allreduce_f64(c->ctx, dd, 2, &e), RM_OK);
    cr_assert(dd[0] == 1e300 && dd[1] == -0.125, "a double sum over one rank is the value");
    cr_assert_eq(c->ops->broadcast(c->ctx, x, sizeof x, 0, &e), RM_OK);
    cr_assert_eq(c->ops->broadcast(c->ctx, x, sizeof x, 1, &e), RM_ERR_INVALID, "there is no rank 1");
    cr_assert_eq(rm_comm_check_same(c, "plan", 4, "schedule", &e), RM_OK);
    rm_comm_free(c);
}

Test(comm, the_launcher_environment_picks_the_backend)
{
    clear_launcher();
    int size = -1;
    cr_assert_eq(rm_launched(&size), 0);
    cr_assert_eq(size, 0);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    cr_assert_eq(rm_launched(&size), 1);
    cr_assert_eq(size, 3);
    clear_launcher();
    setenv("PMI_SIZE", "2", 1);
    cr_assert_eq(rm_launched(&size), 1);
    cr_assert_eq(size, 2);
    clear_launcher();
    setenv("PMIX_RANK", "0", 1);
    cr_assert_eq(rm_launched(&size), 1, "PMIx alone says launched");
    cr_assert_eq(size, 0, "but not how many");
    clear_launcher();
    cr_assert_eq(rm_launched_rank(), 0);
    setenv("OMPI_COMM_WORLD_RANK", "3", 1);
    cr_assert_eq(rm_launched_rank(), 3);
    clear_launcher();
    setenv("PMI_RANK", "1", 1);
    cr_assert_eq(rm_launched_rank(), 1);
    clear_launcher();
    /* The rank on this machine (which GPU a rank takes): Open MPI's, MPICH's, Slurm's. */
    cr_assert_eq(rm_launched_local_rank(), 0);
    setenv("SLURM_LOCALID", "2", 1);
    cr_assert_eq(rm_launched_local_rank(), 2);
    setenv("MPI_LOCALRANKID", "1", 1);
    cr_assert_eq(rm_launched_local_rank(), 1, "MPICH's before Slurm's");
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "3", 1);
    cr_assert_eq(rm_launched_local_rank(), 3, "Open MPI's first");
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "-4", 1);
    cr_assert_eq(rm_launched_local_rank(), 0, "not a rank");
    clear_launcher();
}

Test(comm, mpirun_without_mpi_is_an_error_that_says_so)
{
    if (rm_comm_have_mpi()) cr_skip_test("this build has MPI: tests/mpi runs it under mpirun");
    clear_launcher();
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    rm_comm *c = (rm_comm *)&c;
    rm_err e = {0};
    cr_assert_eq(rm_comm_create_auto(&c, &e), RM_ERR_UNSUPPORTED);
    cr_assert_null(c);
    cr_assert(strstr(e.msg, "as one of 2 processes, but this remat was built without MPI"), "%s", e.msg);
    cr_assert_eq(rm_comm_create(&c, RM_COMM_MPI, &e), RM_ERR_UNSUPPORTED);
    /* One process under a launcher runs alone. */
    setenv("OMPI_COMM_WORLD_SIZE", "1", 1);
    cr_assert_eq(rm_comm_create_auto(&c, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(c->size, 1);
    rm_comm_free(c);
    clear_launcher();
}

/* Under mpirun rank 0 tells the story (base/log.c): another rank's info and
 * debug lines are dropped, its warnings name it. */
Test(comm, under_a_launcher_rank_0_alone_logs_below_warnings, .init = cr_redirect_stderr)
{
    clear_launcher();
    setenv("REMAT_LOG", "debug", 1);
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    rm_log(RM_LOG_DEBUG, "quiet %d", 1);
    rm_log(RM_LOG_INFO, "quiet %d", 2);
    rm_log(RM_LOG_WARN, "loud %d", 3);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    rm_log(RM_LOG_DEBUG, "rank zero %d", 4);
    clear_launcher();
    unsetenv("REMAT_LOG");
    fflush(stderr);
    cr_assert_stderr_eq_str("remat warn (rank 1): loud 3\nremat debug: rank zero 4\n");
}
