/* Data parallel on GPUs with NCCL (engine/cuda/comm_nccl.cu), against the
 * emulator's NCCL (tests/cuda_emu/nccl.h), whose ranks are processes: each
 * test forks its ranks, which meet through a shared-memory stand-in for MPI
 * (the bootstrap: NCCL's unique id travels over it, as over MPI in a job).
 * Checked: the sum of device buffers over 2 and 3 ranks, in more pieces
 * than one (the emulator's 1 MiB slot), the broadcast and the double sum;
 * a rank that never joins makes the others fail, not hang; and 3 steps of
 * training on 2 ranks through NCCL, the buckets' sums started from the
 * backward pass, leave parameters byte-equal to one process's with
 * --accum 2, as over MPI on the CPU (tests/mpi). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend_cuda.h"
#include "comm.h"
#include "rng.h"
#include "trainer.h"

/* ---- a job of forked processes: the host communicator ---------------------- */

enum { MAX_RANKS = 4, SLOT = 4096 };

typedef struct job {
    int arrived, generation;
    double slot[MAX_RANKS][SLOT]; /* each rank's part of a sum */
    unsigned char bytes[SLOT * 8];
} job;

static void barrier(job *j, int size)
{
    int gen = __atomic_load_n(&j->generation, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&j->arrived, 1, __ATOMIC_ACQ_REL) == size) {
        __atomic_store_n(&j->arrived, 0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&j->generation, 1, __ATOMIC_RELEASE);
        return;
    }
    for (int spins = 0; __atomic_load_n(&j->generation, __ATOMIC_ACQUIRE) == gen; spins++) {
        if (spins > 60 * 20000) _exit(70); /* a minute: a rank is gone */
        struct timespec nap = {0, 50000};
        nanosleep(&nap, NULL);
    }
}

typedef struct host_rank {
    job *j;
    int rank, size;
} host_rank;

/* Sums in rank order, in double, then back: exact for what the trainer sums (counts, small sums). */
static int host_sum(host_rank *h, void *buf, size_t count, int is_double, rm_err *e)
{
    if (count > SLOT) return rm_errorf(e, RM_ERR_INVALID, "the test's host sum takes at most %d values", SLOT);
    for (size_t i = 0; i < count; i++)
        h->j->slot[h->rank][i] = is_double ? ((double *)buf)[i] : (double)((float *)buf)[i];
    barrier(h->j, h->size);
    for (size_t i = 0; i < count; i++) {
        double s = 0;
        for (int r = 0; r < h->size; r++) s += h->j->slot[r][i];
        if (is_double)
            ((double *)buf)[i] = s;
        else
            ((float *)buf)[i] = (float)s;
    }
    barrier(h->j, h->size);
    return RM_OK;
}

static int host_start(void *ctx, float *buf, size_t count, rm_comm_request **req, rm_err *e)
{
    *req = NULL;
    return host_sum(ctx, buf, count, 0, e);
}
static int host_test(void *ctx, rm_comm_request *req, int *done, rm_err *e)
{
    (void)ctx, (void)req, (void)e;
    *done = 1;
    return RM_OK;
}
static int host_wait(void *ctx, rm_comm_request *req, rm_err *e)
{
    (void)ctx, (void)req, (void)e;
    return RM_OK;
}
static int host_f64(void *ctx, double *buf, size_t count, rm_err *e)
{
    return host_sum(ctx, buf, count, 1, e);
}
static int host_broadcast(void *ctx, void *buf, size_t bytes, int root, rm_err *e)
{
    host_rank *h = ctx;
    if (bytes > sizeof h->j->bytes) return rm_errorf(e, RM_ERR_INVALID, "the test's broadcast is too long");
    if (h->rank == root) memcpy(h->j->bytes, buf, bytes);
    barrier(h->j, h->size);
    if (h->rank != root) memcpy(buf, h->j->bytes, bytes);
    barrier(h->j, h->size);
    return RM_OK;
}
static void host_abort(void *ctx, int code)
{
    (void)ctx;
    _exit(code ? code : 1);
}
static void host_destroy(void *ctx)
{
    (void)ctx;
}
static const rm_comm_ops host_ops = {host_start,     host_test,  host_wait,   host_f64,
                                     host_broadcast, host_abort, host_destroy};

typedef int (*rank_fn)(rm_comm *host, void *shared);

/* Runs fn as each of size forked ranks; every one must exit 0. shared:
 * memory all ranks and the caller see. */
static void run_ranks(int size, rank_fn fn, void *shared)
{
    job *j = mmap(NULL, sizeof *j, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(j, MAP_FAILED);
    pid_t pid[MAX_RANKS];
    fflush(NULL);
    for (int r = 0; r < size; r++) {
        pid[r] = fork();
        cr_assert_geq(pid[r], 0, "fork");
        if (pid[r] == 0) {
            host_rank h = {j, r, size};
            rm_comm host = {RM_COMM_MPI, "forked", r, size, &host_ops, &h, 0};
            int rc = fn(&host, shared);
            fflush(NULL);
            _exit(rc);
        }
    }
    for (int r = 0; r < size; r++) {
        int st = 0;
        cr_assert_eq(waitpid(pid[r], &st, 0), pid[r]);
        cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d of %d ended with %s %d (its message is above)", r,
                  size, WIFEXITED(st) ? "exit status" : "signal", WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
    munmap(j, sizeof *j);
}

/* In a rank: a failed check prints and ends the rank with status 1. */
#define RANK_CHECK(cond, host, ...)                                                                                    \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "rank %d: ", (host)->rank);                                                                \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
            return 1;                                                                                                  \
        }                                                                                                              \
    } while (0)

/* ---- the collectives ---------------------------------------------------------- */

enum { N = 300000 }; /* floats: more than one of the emulator's 1 MiB pieces */

static void rank_data(float *x, int rank)
{
    rm_rng r = rm_rng_make(100 + (uint64_t)rank);
    for (size_t i = 0; i < N; i++) x[i] = (float)(rm_rng_uniform(&r) * 2 - 1);
}

static int collectives(rm_comm *host, void *shared)
{
    (void)shared;
    rm_err e = {RM_OK, ""};
    rm_backend *be = NULL;
    RANK_CHECK(rm_backend_create(&be, RM_BACKEND_CUDA, &e) == RM_OK, host, "%s", e.msg);
    rm_comm *dc = NULL;
    RANK_CHECK(be->ops->device_comm && be->ops->device_comm(be->ctx, host, &dc, &e) == RM_OK, host, "%s", e.msg);
    RANK_CHECK(dc && !strcmp(dc->name, "nccl") && dc->device_buffers == 1 && dc->kind == RM_COMM_NCCL, host,
               "no nccl communicator");
    RANK_CHECK(dc->rank == host->rank && dc->size == host->size, host, "rank %d of %d", dc->rank, dc->size);

    /* The sum: every rank gets the same bits, the ranks' values added in order. */
    float *mine = malloc(N * sizeof *mine), *want = calloc(N, sizeof *want), *got = malloc(N * sizeof *got),
          *part = malloc(N * sizeof *part);
    RANK_CHECK(mine && want && got && part, host, "out of memory");
    for (int r = 0; r < host->size; r++) {
        rank_data(part, r);
        for (size_t i = 0; i < N; i++) want[i] = r ? want[i] + part[i] : part[i];
    }
    rank_data(mine, host->rank);
    float *dev = NULL;
    RANK_CHECK(be->ops->alloc(be->ctx, (void **)&dev, N * sizeof *dev, &e) == RM_OK, host, "%s", e.msg);
    RANK_CHECK(be->ops->upload(be->ctx, dev, mine, N * sizeof *dev, &e) == RM_OK, host, "%s", e.msg);
    rm_comm_request *req = NULL;
    RANK_CHECK(dc->ops->allreduce_start(dc->ctx, dev, N, &req, &e) == RM_OK && req, host, "start: %s", e.msg);
    int done = 0;
    RANK_CHECK(dc->ops->test(dc->ctx, req, &done, &e) == RM_OK, host, "test: %s", e.msg);
    if (!done) RANK_CHECK(dc->ops->wait(dc->ctx, req, &e) == RM_OK, host, "wait: %s", e.msg);
    RANK_CHECK(be->ops->download(be->ctx, got, dev, N * sizeof *got, &e) == RM_OK, host, "%s", e.msg);
    RANK_CHECK(!memcmp(got, want, N * sizeof *got), host, "the sum over %d ranks differs from the ranks' values added",
               host->size);
    /* Two ranks: a + b, the bits one process's sum of two micro-batches gives. */
    if (host->size == 2) {
        rank_data(part, 0);
        rank_data(mine, 1);
        for (size_t i = 0; i < N; i++) RANK_CHECK(got[i] == part[i] + mine[i], host, "element %zu is not a + b", i);
    }

    /* The broadcast from the last rank, and the sum of doubles. */
    unsigned char bytes[1000];
    for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (unsigned char)(i * 7 + (size_t)host->rank);
    RANK_CHECK(be->ops->upload(be->ctx, dev, bytes, sizeof bytes, &e) == RM_OK, host, "%s", e.msg);
    RANK_CHECK(dc->ops->broadcast(dc->ctx, dev, sizeof bytes, host->size - 1, &e) == RM_OK, host, "%s", e.msg);
    RANK_CHECK(be->ops->download(be->ctx, bytes, dev, sizeof bytes, &e) == RM_OK, host, "%s", e.msg);
    for (size_t i = 0; i < sizeof bytes; i++)
        RANK_CHECK(bytes[i] == (unsigned char)(i * 7 + (size_t)(host->size - 1)), host, "broadcast byte %zu", i);
    double d[2] = {host->rank + 0.5, 1e-300 * (host->rank + 1)};
    RANK_CHECK(be->ops->upload(be->ctx, dev, d, sizeof d, &e) == RM_OK, host, "%s", e.msg);
    RANK_CHECK(dc->ops->allreduce_f64(dc->ctx, (double *)dev, 2, &e) == RM_OK, host, "%s", e.msg);
    RANK_CHECK(be->ops->download(be->ctx, d, dev, sizeof d, &e) == RM_OK, host, "%s", e.msg);
    const int n = host->size;
    RANK_CHECK(d[0] == n * (n - 1) / 2.0 + 0.5 * n && d[1] > 0, host, "double sum %.17g %.3g", d[0], d[1]);

    be->ops->release(be->ctx, dev);
    rm_comm_free(dc);
    rm_backend_free(be);
    free(mine), free(want), free(got), free(part);
    return 0;
}

Test(cuda_comm, nccl_sums_device_buffers_over_ranks, .timeout = 120)
{
    run_ranks(2, collectives, NULL);
    run_ranks(3, collectives, NULL);
}

/* A rank that dies before a sum: the other's sum fails within the
 * emulator's timeout, with NCCL's message, instead of waiting forever. */
static int one_gone(rm_comm *host, void *shared)
{
    (void)shared;
    rm_err e = {RM_OK, ""};
    rm_backend *be = NULL;
    RANK_CHECK(rm_backend_create(&be, RM_BACKEND_CUDA, &e) == RM_OK, host, "%s", e.msg);
    rm_comm *dc = NULL;
    RANK_CHECK(be->ops->device_comm(be->ctx, host, &dc, &e) == RM_OK && dc, host, "%s", e.msg);
    if (host->rank == 1) _exit(0); /* gone, without a word */
    float *dev = NULL;
    RANK_CHECK(be->ops->alloc(be->ctx, (void **)&dev, 64 * sizeof *dev, &e) == RM_OK, host, "%s", e.msg);
    RANK_CHECK(be->ops->zero(be->ctx, dev, 64 * sizeof *dev, &e) == RM_OK, host, "%s", e.msg);
    rm_comm_request *req = NULL;
    int rc = dc->ops->allreduce_start(dc->ctx, dev, 64, &req, &e);
    RANK_CHECK(rc == RM_ERR_DEVICE, host, "the sum with a rank gone gave %d: %s", rc, e.msg);
    RANK_CHECK(strstr(e.msg, "nccl: ncclAllReduce failed: remote process exited"), host, "message: %s", e.msg);
    be->ops->release(be->ctx, dev);
    rm_comm_free(dc);
    rm_backend_free(be);
    return 0;
}

Test(cuda_comm, a_rank_gone_fails_the_sum_instead_of_hanging, .timeout = 60)
{
    setenv("REMAT_CUDA_EMU_NCCL_TIMEOUT", "2", 1);
    run_ranks(2, one_gone, NULL);
}

/* ---- training --------------------------------------------------------------- */

enum { MAX_PARAMS = 1 << 16 };

typedef struct trained {
    size_t n[MAX_RANKS];
    float params[MAX_RANKS][MAX_PARAMS];
} trained;

static rm_trainer_config dp_config(int accum, rm_comm *comm)
{
    rm_trainer_config c;
    rm_trainer_config_default(&c);
    c.model_path = REMAT_SOURCE_DIR "/models/cnn-tiny.cfg";
    c.batch = 8;
    c.accum = accum;
    c.comm = comm;
    c.strategy = "checkpoint_all";
    c.budget_percent = 150;
    c.synthetic_samples = 32;
    c.max_steps = 3;
    c.train_accuracy_every = 0;
    c.optim = rm_optim_options_default(RM_OPTIM_SGD);
    c.optim.momentum = 0.9;
    c.lr = 0.05;
    c.device = RM_BACKEND_CUDA;
    /* The hand-written kernels' sums do not depend on the batch's size. */
    c.backend.set_kernels = 1;
    c.backend.kernels = RM_CUDA_KERNELS_HANDWRITTEN;
    return c;
}

static int params_of(rm_trainer *t, float *out, size_t *n, rm_err *e)
{
    rm_executor *ex = rm_trainer_executor(t);
    rm_executor_params(ex, n);
    if (*n > MAX_PARAMS) return rm_errorf(e, RM_ERR_INVALID, "%zu parameters", *n);
    return rm_executor_download_params(ex, out, e);
}

static int train_rank(rm_comm *host, void *shared)
{
    trained *tr = shared;
    rm_trainer_config c = dp_config(1, host);
    rm_trainer *t = NULL;
    rm_err e = {RM_OK, ""};
    RANK_CHECK(rm_trainer_create(&t, &c, &e) == RM_OK, host, "%s", e.msg);
    const rm_trainer_summary *s = rm_trainer_summary_of(t);
    RANK_CHECK(s->transport && !strcmp(s->transport, "nccl"), host, "gradients summed by %s",
               s->transport ? s->transport : "(none)");
    RANK_CHECK(s->batch == 4 && s->global_batch == 8 && s->ranks == 2, host, "batch %d of %d", s->batch,
               s->global_batch);
    RANK_CHECK(rm_trainer_run(t, &e) == RM_OK, host, "%s", e.msg);
    RANK_CHECK(params_of(t, tr->params[host->rank], &tr->n[host->rank], &e) == RM_OK, host, "%s", e.msg);
    rm_trainer_free(t);
    return 0;
}

Test(cuda_comm, two_ranks_through_nccl_train_as_one_process_with_accum_2, .timeout = 300)
{
    trained *tr = mmap(NULL, sizeof *tr, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(tr, MAP_FAILED);
    run_ranks(2, train_rank, tr);
    rm_trainer_config c = dp_config(2, NULL);
    rm_trainer *t = NULL;
    rm_err e = {RM_OK, ""};
    cr_assert_eq(rm_trainer_create(&t, &c, &e), RM_OK, "%s", e.msg);
    cr_assert_eq(rm_trainer_run(t, &e), RM_OK, "%s", e.msg);
    static float want[MAX_PARAMS];
    size_t n = 0;
    cr_assert_eq(params_of(t, want, &n, &e), RM_OK, "%s", e.msg);
    rm_trainer_free(t);
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(tr->n[r], n, "rank %d: %zu parameters, one process %zu", r, tr->n[r], n);
        size_t differ = 0;
        for (size_t i = 0; i < n; i++) differ += memcmp(&tr->params[r][i], &want[i], sizeof want[i]) != 0;
        cr_expect_eq(differ, 0, "rank %d: %zu of %zu parameters differ from one process's with --accum 2", r, differ,
                     n);
    }
    munmap(tr, sizeof *tr);
}
