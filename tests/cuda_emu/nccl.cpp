/* The emulated NCCL (include/nccl.h): the ranks are processes of this
 * machine sharing one POSIX shared-memory segment, named by the unique id.
 * The segment holds a header (a barrier, what each rank called, a failure
 * flag) and one slot of SLOT bytes per rank: a collective goes through it a
 * slot at a time (each rank writes its part, a barrier, each reads what it
 * needs, a barrier). */
#include <nccl.h>

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

static const int MAX_RANKS = 8;
static const size_t SLOT = (size_t)1 << 20;
static const size_t HEADER = 4096;

struct call_record {
    int what; /* 1 allreduce, 2 broadcast */
    int type, root;
    size_t count;
};

struct shared {
    int nranks;              /* set by rank 0, then ready */
    int ready;               /* rank 0 has set the segment up */
    int arrived, generation; /* the barrier */
    int failed;              /* a rank aborted or gave up waiting */
    call_record calls[MAX_RANKS];
};

struct ncclComm {
    shared *s;
    char *slots;
    int rank, nranks;
    ncclResult_t async; /* the first failure, for ncclCommGetAsyncError */
    char last[160];
};

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double timeout_s(void)
{
    const char *v = std::getenv("REMAT_CUDA_EMU_NCCL_TIMEOUT");
    double t = v && *v ? std::atof(v) : 30.0;
    return t > 0 ? t : 30.0;
}

static ncclResult_t failed(ncclComm *c, ncclResult_t r, const char *msg)
{
    std::snprintf(c->last, sizeof c->last, "%s", msg);
    if (c->async == ncclSuccess) c->async = r;
    __atomic_store_n(&c->s->failed, 1, __ATOMIC_RELEASE);
    return r;
}

/* Every rank waits here until all have arrived, or a rank failed, or the
 * timeout passed (then this rank fails the communicator for all). */
static ncclResult_t barrier(ncclComm *c)
{
    shared *s = c->s;
    int gen = __atomic_load_n(&s->generation, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&s->arrived, 1, __ATOMIC_ACQ_REL) == c->nranks) {
        __atomic_store_n(&s->arrived, 0, __ATOMIC_RELAXED);
        __atomic_add_fetch(&s->generation, 1, __ATOMIC_RELEASE);
        return ncclSuccess;
    }
    double deadline = now_s() + timeout_s();
    while (__atomic_load_n(&s->generation, __ATOMIC_ACQUIRE) == gen) {
        if (__atomic_load_n(&s->failed, __ATOMIC_ACQUIRE))
            return failed(c, ncclRemoteError, "another rank of the communicator failed");
        if (now_s() > deadline) return failed(c, ncclRemoteError, "a rank did not join the collective in time");
        struct timespec nap = {0, 20000};
        nanosleep(&nap, NULL);
    }
    return ncclSuccess;
}

static void segment_name(const ncclUniqueId &id, char *name, size_t len)
{
    std::snprintf(name, len, "%.*s", (int)(len - 1), id.internal);
}

static size_t segment_bytes(void)
{
    return HEADER + (size_t)MAX_RANKS * SLOT;
}

extern "C" ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static unsigned serial;
    if (!id) return ncclInvalidArgument;
    std::memset(id, 0, sizeof *id);
    std::snprintf(id->internal, sizeof id->internal, "/remat-nccl-emu-%ld-%u", (long)getpid(), serial++);
    int fd = shm_open(id->internal, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return ncclSystemError;
    int rc = ftruncate(fd, (off_t)segment_bytes()); /* sparse: pages appear when touched */
    close(fd);
    if (rc) {
        shm_unlink(id->internal);
        return ncclSystemError;
    }
    return ncclSuccess;
}

extern "C" ncclResult_t ncclCommInitRank(ncclComm_t *out, int nranks, ncclUniqueId id, int rank)
{
    if (!out || nranks < 1 || nranks > MAX_RANKS || rank < 0 || rank >= nranks) return ncclInvalidArgument;
    *out = NULL;
    char name[NCCL_UNIQUE_ID_BYTES];
    segment_name(id, name, sizeof name);
    int fd = shm_open(name, O_RDWR, 0600);
    if (fd < 0) return ncclSystemError;
    void *m = mmap(NULL, segment_bytes(), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) return ncclSystemError;
    ncclComm *c = new ncclComm();
    c->s = (shared *)m, c->slots = (char *)m + HEADER, c->rank = rank, c->nranks = nranks;
    if (rank == 0) {
        c->s->nranks = nranks;
        __atomic_store_n(&c->s->ready, 1, __ATOMIC_RELEASE);
    } else {
        double deadline = now_s() + timeout_s();
        while (!__atomic_load_n(&c->s->ready, __ATOMIC_ACQUIRE) && now_s() < deadline) {
            struct timespec nap = {0, 100000};
            nanosleep(&nap, NULL);
        }
    }
    ncclResult_t r = !__atomic_load_n(&c->s->ready, __ATOMIC_ACQUIRE) ? ncclRemoteError
                     : c->s->nranks != nranks                         ? ncclInvalidUsage
                                                                      : barrier(c);
    if (rank == 0) shm_unlink(name); /* every rank has it mapped (or gave up): the name is no longer needed */
    if (r != ncclSuccess) {
        munmap(m, segment_bytes());
        delete c;
        return r;
    }
    *out = c;
    return ncclSuccess;
}

static void release(ncclComm *c)
{
    munmap(c->s, segment_bytes());
    delete c;
}

extern "C" ncclResult_t ncclCommDestroy(ncclComm_t c)
{
    if (!c) return ncclInvalidArgument;
    release(c);
    return ncclSuccess;
}

extern "C" ncclResult_t ncclCommAbort(ncclComm_t c)
{
    if (!c) return ncclInvalidArgument;
    __atomic_store_n(&c->s->failed, 1, __ATOMIC_RELEASE);
    release(c);
    return ncclSuccess;
}

extern "C" ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *err)
{
    if (!c || !err) return ncclInvalidArgument;
    *err = c->async;
    return ncclSuccess;
}

extern "C" const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess:
        return "no error";
    case ncclUnhandledCudaError:
        return "unhandled cuda error";
    case ncclSystemError:
        return "unhandled system error";
    case ncclInternalError:
        return "internal error";
    case ncclInvalidArgument:
        return "invalid argument";
    case ncclInvalidUsage:
        return "invalid usage";
    case ncclRemoteError:
        return "remote process exited or there was a network error";
    case ncclInProgress:
        return "NCCL operation in progress";
    default:
        return "unknown result code";
    }
}

extern "C" const char *ncclGetLastError(ncclComm_t c)
{
    return c ? c->last : "";
}

extern "C" ncclResult_t ncclGroupStart(void)
{
    return ncclSuccess;
}
extern "C" ncclResult_t ncclGroupEnd(void)
{
    return ncclSuccess;
}

static size_t type_size(ncclDataType_t t)
{
    return t == ncclFloat ? 4 : t == ncclDouble ? 8 : t == ncclChar ? 1 : 0;
}

/* Records this rank's call and checks, after a barrier, that every rank made the same one. */
static ncclResult_t same_call(ncclComm *c, int what, ncclDataType_t type, int root, size_t count)
{
    c->s->calls[c->rank] = call_record{what, (int)type, root, count};
    ncclResult_t r = barrier(c);
    if (r != ncclSuccess) return r;
    for (int k = 0; k < c->nranks; k++) {
        const call_record &o = c->s->calls[k];
        if (o.what != what || o.type != (int)type || o.root != root || o.count != count)
            return failed(c, ncclInvalidUsage, "the ranks called different collectives or counts");
    }
    return barrier(c); /* nobody records the next call before all have checked this one */
}

template <typename T> static void sum_slots(const ncclComm *c, T *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        T acc = ((const T *)c->slots)[i];
        for (int r = 1; r < c->nranks; r++) acc += ((const T *)(c->slots + (size_t)r * SLOT))[i];
        out[i] = acc;
    }
}

extern "C" ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count, ncclDataType_t type, ncclRedOp_t op,
                                      ncclComm_t c, cudaStream_t stream)
{
    (void)stream;
    size_t es = type_size(type);
    if (!c || op != ncclSum || (type != ncclFloat && type != ncclDouble)) return ncclInvalidArgument;
    rm_emu_check_device_range(send, count * es, "ncclAllReduce (send buffer)");
    rm_emu_check_device_range(recv, count * es, "ncclAllReduce (receive buffer)");
    ncclResult_t r = same_call(c, 1, type, 0, count);
    const size_t per = SLOT / es;
    for (size_t off = 0; off < count && r == ncclSuccess; off += per) {
        size_t n = count - off < per ? count - off : per;
        std::memcpy(c->slots + (size_t)c->rank * SLOT, (const char *)send + off * es, n * es);
        if ((r = barrier(c)) != ncclSuccess) break;
        if (type == ncclFloat)
            sum_slots(c, (float *)recv + off, n);
        else
            sum_slots(c, (double *)recv + off, n);
        r = barrier(c);
    }
    return r;
}

extern "C" ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count, ncclDataType_t type, int root,
                                      ncclComm_t c, cudaStream_t stream)
{
    (void)stream;
    size_t es = type_size(type);
    if (!c || !es || root < 0 || root >= c->nranks) return ncclInvalidArgument;
    if (c->rank == root) rm_emu_check_device_range(send, count * es, "ncclBroadcast (send buffer)");
    rm_emu_check_device_range(recv, count * es, "ncclBroadcast (receive buffer)");
    ncclResult_t r = same_call(c, 2, type, root, count);
    const size_t bytes = count * es;
    for (size_t off = 0; off < bytes && r == ncclSuccess; off += SLOT) {
        size_t n = bytes - off < SLOT ? bytes - off : SLOT;
        if (c->rank == root) std::memcpy(c->slots, (const char *)send + off, n);
        if ((r = barrier(c)) != ncclSuccess) break;
        if (c->rank != root || send != recv) std::memcpy((char *)recv + off, c->slots, n);
        r = barrier(c);
    }
    return r;
}
