/* The CUDA runtime of the CPU emulator (see include/cuda_runtime.h): device
 * memory as tracked host allocations, synchronous streams, events on the
 * host clock, and kernels run thread by thread, each block's threads as
 * fibers so that __syncthreads is a real barrier (include/cuda_runtime.h
 * says what that checks). */
#include <cuda_runtime.h>

#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <ucontext.h>
#include <vector>

uint3 rm_emu_thread_idx, rm_emu_block_idx;
dim3 rm_emu_block_dim, rm_emu_grid_dim;

static cudaError_t last_error = cudaSuccess;
static cudaError_t fail(cudaError_t err)
{
    last_error = err;
    return err;
}

void rm_emu_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    std::fprintf(stderr, "cuda emulator: ");
    std::vfprintf(stderr, fmt, ap);
    std::fprintf(stderr, "\n");
    va_end(ap);
    std::fflush(stderr);
    std::abort();
}

/* ---- device memory ---- */
static std::map<uintptr_t, size_t> allocations; /* base -> bytes */
static size_t allocated, allocation_calls;

size_t rm_emu_allocation_count(void)
{
    return allocation_calls;
}

static size_t device_total(void)
{
    static size_t total = 0;
    if (!total) {
        const char *v = std::getenv("REMAT_CUDA_EMU_MEM");
        total = v && *v ? (size_t)std::strtoull(v, NULL, 10) : (size_t)16 << 30;
        if (!total) total = (size_t)16 << 30;
    }
    return total;
}

/* The allocation holding p, or allocations.end(). */
static std::map<uintptr_t, size_t>::const_iterator holder(const void *p)
{
    uintptr_t a = (uintptr_t)p;
    auto it = allocations.upper_bound(a);
    if (it == allocations.begin()) return allocations.end();
    --it;
    return a < it->first + it->second ? it : allocations.end();
}

int rm_emu_is_device(const void *p)
{
    return p && holder(p) != allocations.end();
}

void rm_emu_check_device_range(const void *p, size_t bytes, const char *what)
{
    if (!bytes) return;
    auto it = holder(p);
    if (it == allocations.end()) rm_emu_die("%s: %p is not device memory", what, p);
    if ((uintptr_t)p + bytes > it->first + it->second)
        rm_emu_die("%s: the range at %p runs past its device allocation", what, p);
}

cudaError_t cudaMalloc(void **ptr, size_t bytes)
{
    if (!ptr) return fail(cudaErrorInvalidValue);
    *ptr = NULL;
    if (!bytes) return cudaSuccess;
    if (bytes > device_total() - allocated) return fail(cudaErrorMemoryAllocation);
    /* 256-byte aligned like cudaMalloc, and exactly bytes long, so that
     * AddressSanitizer (scripts/test builds the emulator with it) sees a
     * kernel's access one element past a buffer. */
    void *p = NULL;
    if (posix_memalign(&p, 256, bytes)) return fail(cudaErrorMemoryAllocation);
    std::memset(p, 0xff, bytes); /* NaN floats: fresh device memory is garbage */
    allocations[(uintptr_t)p] = bytes;
    allocated += bytes;
    allocation_calls++;
    *ptr = p;
    return cudaSuccess;
}

cudaError_t cudaFree(void *ptr)
{
    if (!ptr) return cudaSuccess;
    auto it = allocations.find((uintptr_t)ptr);
    if (it == allocations.end()) return fail(cudaErrorInvalidDevicePointer);
    allocated -= it->second;
    allocations.erase(it);
    std::free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **ptr, size_t bytes, cudaStream_t)
{
    return cudaMalloc(ptr, bytes);
}
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t)
{
    return cudaFree(ptr);
}

cudaError_t cudaMallocHost(void **ptr, size_t bytes)
{
    if (!ptr) return fail(cudaErrorInvalidValue);
    *ptr = std::malloc(bytes ? bytes : 1);
    return *ptr ? cudaSuccess : fail(cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void *ptr)
{
    std::free(ptr);
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    *free_bytes = device_total() - allocated;
    *total_bytes = device_total();
    return cudaSuccess;
}

/* A copy's direction must match where its pointers are. */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind)
{
    if (!bytes) return cudaSuccess;
    bool dst_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    bool src_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
    if (kind == cudaMemcpyDefault) {
        dst_dev = rm_emu_is_device(dst);
        src_dev = rm_emu_is_device(src);
    } else if (kind != cudaMemcpyHostToHost && kind != cudaMemcpyHostToDevice && kind != cudaMemcpyDeviceToHost &&
               kind != cudaMemcpyDeviceToDevice) {
        return fail(cudaErrorInvalidMemcpyDirection);
    }
    if (dst_dev)
        rm_emu_check_device_range(dst, bytes, "cudaMemcpy destination");
    else if (rm_emu_is_device(dst))
        rm_emu_die("%s: destination %p is device memory", "cudaMemcpy (host destination)", dst);
    if (src_dev)
        rm_emu_check_device_range(src, bytes, "cudaMemcpy source");
    else if (rm_emu_is_device(src))
        rm_emu_die("%s: source %p is device memory", "cudaMemcpy (host source)", src);
    std::memmove(dst, src, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind, cudaStream_t)
{
    return cudaMemcpy(dst, src, bytes, kind);
}

cudaError_t cudaMemset(void *dst, int value, size_t bytes)
{
    rm_emu_check_device_range(dst, bytes, "cudaMemset");
    if (bytes) std::memset(dst, value, bytes);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t)
{
    return cudaMemset(dst, value, bytes);
}

/* ---- device, errors ---- */
const char *cudaGetErrorName(cudaError_t err)
{
    switch (err) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
        return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer:
        return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidMemcpyDirection:
        return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorNoDevice:
        return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
        return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
        return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
        return "cudaErrorNotReady";
    }
    return "unrecognized error code";
}

const char *cudaGetErrorString(cudaError_t err)
{
    switch (err) {
    case cudaSuccess:
        return "no error";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";
    case cudaErrorNoDevice:
        return "no CUDA-capable device is detected";
    default:
        return cudaGetErrorName(err);
    }
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

/* REMAT_CUDA_EMU_DEVICES=0 makes the emulator a machine without a GPU. */
cudaError_t cudaGetDeviceCount(int *count)
{
    const char *v = std::getenv("REMAT_CUDA_EMU_DEVICES");
    *count = v && *v ? std::atoi(v) : 1;
    return *count ? cudaSuccess : fail(cudaErrorNoDevice);
}

static cudaError_t device_ok(int device)
{
    int n = 0;
    cudaGetDeviceCount(&n);
    return device >= 0 && device < n ? cudaSuccess : fail(cudaErrorInvalidDevice);
}

static int current_device;
cudaError_t cudaSetDevice(int device)
{
    cudaError_t st = device_ok(device);
    if (st == cudaSuccess) current_device = device;
    return st;
}
cudaError_t cudaGetDevice(int *device)
{
    *device = current_device;
    return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize(void)
{
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device)
{
    if (device_ok(device) != cudaSuccess) return cudaErrorInvalidDevice;
    std::memset(prop, 0, sizeof *prop);
    std::snprintf(prop->name, sizeof prop->name, "remat CUDA emulator (CPU)");
    prop->totalGlobalMem = device_total();
    prop->sharedMemPerBlock = 48 << 10;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 0x7fffffff;
    prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
    prop->major = 9; /* as the H200 the project targets: the cuBLAS workspace size follows it */
    prop->minor = 0;
    prop->multiProcessorCount = 1;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device)
{
    cudaDeviceProp p;
    if (cudaGetDeviceProperties(&p, device) != cudaSuccess) return cudaErrorInvalidDevice;
    switch (attr) {
    case cudaDevAttrMaxThreadsPerBlock:
        *value = p.maxThreadsPerBlock;
        return cudaSuccess;
    case cudaDevAttrMultiProcessorCount:
        *value = p.multiProcessorCount;
        return cudaSuccess;
    case cudaDevAttrComputeCapabilityMajor:
        *value = p.major;
        return cudaSuccess;
    case cudaDevAttrComputeCapabilityMinor:
        *value = p.minor;
        return cudaSuccess;
    }
    return fail(cudaErrorInvalidValue);
}

/* ---- streams and events: synchronous, so only handles ---- */
struct rm_emu_stream {
    int magic;
};
struct rm_emu_event {
    double ms;
    int recorded;
};
static const int STREAM_MAGIC = 0x57ea;

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned)
{
    *stream = new rm_emu_stream{STREAM_MAGIC};
    return cudaSuccess;
}
cudaError_t cudaStreamCreate(cudaStream_t *stream)
{
    return cudaStreamCreateWithFlags(stream, 0);
}
cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    if (!stream || stream->magic != STREAM_MAGIC) return fail(cudaErrorInvalidResourceHandle);
    stream->magic = 0;
    delete stream;
    return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    if (stream && stream->magic != STREAM_MAGIC) return fail(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}

static double now_ms(void)
{
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    *event = new rm_emu_event{0.0, 0};
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned)
{
    return cudaEventCreate(event);
}
cudaError_t cudaEventQuery(cudaEvent_t event)
{
    return event->recorded ? cudaSuccess : fail(cudaErrorInvalidResourceHandle);
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned)
{
    if ((stream && stream->magic != STREAM_MAGIC) || !event) return fail(cudaErrorInvalidResourceHandle);
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    delete event;
    return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t)
{
    event->ms = now_ms();
    event->recorded = 1;
    return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t)
{
    return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!start->recorded || !end->recorded) return fail(cudaErrorInvalidResourceHandle);
    *ms = (float)(end->ms - start->ms);
    return cudaSuccess;
}

/* ---- kernels ---- */
int rm_emu_config_ok(const rm_emu_cfg &c)
{
    unsigned long long threads = (unsigned long long)c.block.x * c.block.y * c.block.z;
    bool ok = threads >= 1 && threads <= 1024 && c.block.x <= 1024 && c.block.y <= 1024 && c.block.z <= 64 &&
              c.grid.x >= 1 && c.grid.y >= 1 && c.grid.z >= 1 && c.grid.x <= 0x7fffffffu && c.grid.y <= 65535 &&
              c.grid.z <= 65535 && c.shmem <= (48u << 10);
    if (!ok) fail(cudaErrorInvalidConfiguration);
    if (c.stream && c.stream->magic != STREAM_MAGIC) {
        fail(cudaErrorInvalidResourceHandle);
        return 0;
    }
    return ok;
}

/* A block's threads as fibers. A fiber runs until it reaches a barrier or
 * ends; a phase runs every live fiber once, in turn. Fibers are made once
 * (makecontext) and then switched with GCC's __builtin_setjmp and
 * __builtin_longjmp, which save no signal mask (swapcontext makes a system
 * call per switch) and are not intercepted by AddressSanitizer (its longjmp
 * hook clears the shadow of a whole thread stack per jump). Each fiber
 * loops, running the kernel body once per block it is given. */
typedef void *jump_buf[5];
/* The functions that switch stacks are not instrumented: AddressSanitizer
 * would clear a whole stack's shadow (with a system call) around every
 * setjmp and no-return jump; the switch annotations below tell it of the
 * switches instead. */
#define NO_ASAN __attribute__((no_sanitize_address))
/* And the compiler must not assume what registers they keep: GCC's
 * interprocedural register allocation would let a caller keep values in
 * registers the callee's own code leaves alone, but a switch runs other
 * code in between. */
#if defined(__clang__)
#define SWITCH_FN __attribute__((noinline)) NO_ASAN
#else
#define SWITCH_FN __attribute__((noinline, noipa)) NO_ASAN
#endif
/* __builtin_longjmp may not share a function with the __builtin_setjmp of
 * its caller: a function of its own. */
SWITCH_FN static void jump(jump_buf buf)
{
    __builtin_longjmp(buf, 1);
}
enum { FIBER_STACK = 256 << 10 };
struct fiber {
    jump_buf jb;
    void *fake; /* AddressSanitizer's saved fake stack while switched out */
    char *stack;
    uint3 tid;
    int done;
};
/* Never destroyed (no exit-time destructor), so LeakSanitizer sees the fibers
 * as reachable for the whole run. */
static std::vector<fiber *> &fibers = *new std::vector<fiber *>;
/* AddressSanitizer must be told of every stack switch, or it reports false
 * errors on the fiber stacks; without it these do nothing. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
static void switch_start(void **fake, const void *bottom, size_t size)
{
    __sanitizer_start_switch_fiber(fake, bottom, size);
}
static void switch_finish(void *fake, const void **bottom_old, size_t *size_old)
{
    __sanitizer_finish_switch_fiber(fake, bottom_old, size_old);
}
#else
static void switch_start(void **, const void *, size_t) {}
static void switch_finish(void *, const void **, size_t *) {}
#endif
static const void *sched_bottom; /* the scheduler's stack, as the sanitizer saw it */
static size_t sched_size;
static jump_buf sched_jb, boot_jb;
static fiber *current;
static rm_emu_body cur_body;
static void *cur_closure;
static int in_fibers; /* 1 while a block runs as fibers; 0 in direct mode */
static int barriers_seen;
static const char *cur_kernel;

/* From the running fiber back to the scheduler; returns when resumed. */
SWITCH_FN static void to_scheduler(void)
{
    fiber *self = current;
    switch_start(&self->fake, sched_bottom, sched_size);
    if (!__builtin_setjmp(self->jb)) jump(sched_jb);
    switch_finish(self->fake, &sched_bottom, &sched_size);
}

void rm_emu_syncthreads(void)
{
    barriers_seen = 1;
    if (!in_fibers)
        rm_emu_die("kernel %s: __syncthreads in a launch the emulator ran without fibers (a barrier reached by only "
                   "some launches of a kernel)",
                   cur_kernel);
    to_scheduler();
}

SWITCH_FN static void fiber_main(void)
{
    fiber *self = current;
    switch_finish(NULL, &sched_bottom, &sched_size);
    /* Booted: hand control back to fiber_new with this stack's state saved. */
    switch_start(&self->fake, sched_bottom, sched_size);
    if (!__builtin_setjmp(self->jb)) jump(boot_jb);
    switch_finish(self->fake, &sched_bottom, &sched_size);
    for (;;) {
        cur_body(cur_closure);
        self->done = 1;
        to_scheduler();
    }
}

SWITCH_FN static fiber *fiber_new(void)
{
    fiber *f = new fiber();
    f->stack = (char *)std::malloc(FIBER_STACK);
    if (!f->stack) rm_emu_die("out of memory for fiber stacks");
    static ucontext_t boot;
    getcontext(&boot);
    boot.uc_stack.ss_sp = f->stack;
    boot.uc_stack.ss_size = FIBER_STACK;
    boot.uc_link = NULL;
    makecontext(&boot, fiber_main, 0);
    current = f;
    void *fake = NULL;
    switch_start(&fake, f->stack, FIBER_STACK);
    /* setcontext, not swapcontext (which AddressSanitizer warns of): the
     * fiber comes back through boot_jb. */
    if (!__builtin_setjmp(boot_jb)) setcontext(&boot);
    switch_finish(fake, NULL, NULL);
    return f;
}

/* From the scheduler into f until it reaches a barrier or ends. A function
 * of its own so the scheduler's loop variables are never live across the
 * setjmp. */
SWITCH_FN static void resume(fiber *f)
{
    current = f;
    rm_emu_thread_idx = f->tid;
    void *fake = NULL;
    switch_start(&fake, f->stack, FIBER_STACK);
    if (!__builtin_setjmp(sched_jb)) jump(f->jb);
    switch_finish(fake, NULL, NULL);
}

static uint64_t order_state = 0x9e3779b97f4a7c15ull;

static void run_block_fibers(unsigned nthreads)
{
    while (fibers.size() < nthreads) fibers.push_back(fiber_new());
    unsigned n = 0;
    for (unsigned z = 0; z < rm_emu_block_dim.z; z++)
        for (unsigned y = 0; y < rm_emu_block_dim.y; y++)
            for (unsigned x = 0; x < rm_emu_block_dim.x; x++, n++) {
                fibers[n]->tid = uint3{x, y, z};
                fibers[n]->done = 0;
            }
    in_fibers = 1;
    static std::vector<unsigned> order;
    order.resize(nthreads);
    for (unsigned k = 0; k < nthreads; k++) order[k] = k;
    for (;;) {
        /* A fresh order every phase (Fisher-Yates on a fixed-seed xorshift):
         * a kernel that reads what another thread writes in the same phase
         * gets different bits from run to run, which the bit-equality tests
         * see. */
        for (unsigned k = nthreads - 1; k > 0; k--) {
            order_state ^= order_state << 13;
            order_state ^= order_state >> 7;
            order_state ^= order_state << 17;
            unsigned j = (unsigned)(order_state % (k + 1)), t = order[k];
            order[k] = order[j];
            order[j] = t;
        }
        unsigned live = 0, waiting = 0;
        for (unsigned k = 0; k < nthreads; k++) {
            fiber *f = fibers[order[k]];
            if (f->done) continue;
            resume(f);
            live++;
            waiting += !f->done;
        }
        if (!live) break;
        if (waiting && waiting != live)
            rm_emu_die("kernel %s: some threads of a block ended while others wait at __syncthreads", cur_kernel);
        if (!waiting) break;
    }
    in_fibers = 0;
}

/* Kernels seen to reach no barrier run thread by thread on this stack. */
static std::map<const void *, int> uses_barrier;

void rm_emu_run(const void *kernel_id, const char *name, const rm_emu_cfg &cfg, rm_emu_body body, void *closure)
{
    cur_body = body;
    cur_closure = closure;
    cur_kernel = name;
    rm_emu_grid_dim = cfg.grid;
    rm_emu_block_dim = cfg.block;
    unsigned nthreads = cfg.block.x * cfg.block.y * cfg.block.z;
    auto known = uses_barrier.find(kernel_id);
    for (unsigned bz = 0; bz < cfg.grid.z; bz++)
        for (unsigned by = 0; by < cfg.grid.y; by++)
            for (unsigned bx = 0; bx < cfg.grid.x; bx++) {
                rm_emu_block_idx = uint3{bx, by, bz};
                if (known != uses_barrier.end() && !known->second) {
                    for (unsigned z = 0; z < cfg.block.z; z++)
                        for (unsigned y = 0; y < cfg.block.y; y++)
                            for (unsigned x = 0; x < cfg.block.x; x++) {
                                rm_emu_thread_idx = uint3{x, y, z};
                                body(closure);
                            }
                } else {
                    barriers_seen = 0;
                    run_block_fibers(nthreads);
                    /* Decided by the first block; a kernel known to use barriers stays in fibers. */
                    if (known == uses_barrier.end()) known = uses_barrier.emplace(kernel_id, barriers_seen).first;
                }
            }
}
