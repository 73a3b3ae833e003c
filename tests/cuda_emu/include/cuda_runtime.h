/* The CUDA runtime as the CPU emulator (tests/cuda_emu) gives it: the subset
 * of the runtime API and of the kernel language that remat's .cu files use,
 * for host C++. A build with REMAT_CUDA_EMU=ON compiles every .cu file as C++
 * against this header (after tests/cuda_emu/launch.sed has turned each
 * kernel<<<grid, block, shmem, stream>>>(args) into rm_emu_launch(...)), so
 * the hand-written kernels, the kernel libraries' plumbing and the GPU executor run in
 * CI, where there is no GPU.
 *
 * What it checks that a plain host port would not:
 *  - every thread of a block runs as a fiber and __syncthreads() is a real
 *    barrier; between barriers the threads run one after another in a new
 *    pseudo-random order each time, so a missing barrier (a read of shared
 *    memory another thread writes in the same phase) changes the result, and
 *    from one run of the kernel to the next;
 *  - launch configurations beyond the hardware limits fail like on a GPU
 *    (cudaGetLastError returns cudaErrorInvalidConfiguration);
 *  - every pointer passed to a kernel, cudaMemcpy, cudaMemset or cuBLAS must
 *    lie inside a live device allocation (a host pointer aborts the run with
 *    a message naming the call);
 *  - device memory is finite (REMAT_CUDA_EMU_MEM bytes, 16 GiB by default;
 *    cudaMalloc beyond it fails with cudaErrorMemoryAllocation) and starts
 *    as NaN bytes (0xff), as garbage would.
 * What it cannot check: warp-level timing, memory-model races across blocks,
 * the speed of anything, and device code paths nvcc would compile
 * differently (FMA contraction, fast-math intrinsics). Streams are
 * synchronous: every call completes before it returns. */
#ifndef REMAT_CUDA_EMU_RUNTIME_H
#define REMAT_CUDA_EMU_RUNTIME_H

#ifdef __cplusplus
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <utility>
#define RM_EMU_DEFAULT(v) = v
#else
/* C sources (the GPU benchmarks) see the runtime API only. */
#include <stddef.h>
#include <stdint.h>
#define RM_EMU_DEFAULT(v)
#endif

#ifdef __cplusplus
/* ---- the kernel language ---- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
/* One block runs at a time, so a function-static array is the block's
 * shared memory. */
#define __shared__ static

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x, y, z;
    dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
};

/* The running thread's coordinates (set by the scheduler before it resumes
 * a thread). */
extern uint3 rm_emu_thread_idx, rm_emu_block_idx;
extern dim3 rm_emu_block_dim, rm_emu_grid_dim;
#define threadIdx rm_emu_thread_idx
#define blockIdx rm_emu_block_idx
#define blockDim rm_emu_block_dim
#define gridDim rm_emu_grid_dim

void rm_emu_syncthreads(void);
#define __syncthreads() rm_emu_syncthreads()

/* Round-to-nearest intrinsics: plain IEEE operations on the host (the emu
 * build is compiled with -ffp-contract=off, so none is fused). */
static inline float __fadd_rn(float a, float b)
{
    return a + b;
}
static inline float __fsub_rn(float a, float b)
{
    return a - b;
}
static inline float __fmul_rn(float a, float b)
{
    return a * b;
}
static inline float __fdiv_rn(float a, float b)
{
    return a / b;
}
static inline float __fsqrt_rn(float a)
{
    return std::sqrt(a);
}
static inline double __dadd_rn(double a, double b)
{
    return a + b;
}
using std::isnan;
#endif

/* ---- runtime types ---- */
typedef enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInvalidConfiguration = 9,
    cudaErrorInvalidDevicePointer = 17,
    cudaErrorInvalidMemcpyDirection = 21,
    cudaErrorNoDevice = 100,
    cudaErrorInvalidDevice = 101,
    cudaErrorInvalidResourceHandle = 400,
    cudaErrorNotReady = 600,
} cudaError_t;

typedef enum cudaMemcpyKind {
    cudaMemcpyHostToHost = 0,
    cudaMemcpyHostToDevice = 1,
    cudaMemcpyDeviceToHost = 2,
    cudaMemcpyDeviceToDevice = 3,
    cudaMemcpyDefault = 4,
} cudaMemcpyKind;

typedef enum cudaDeviceAttr {
    cudaDevAttrMaxThreadsPerBlock = 1,
    cudaDevAttrMultiProcessorCount = 16,
    cudaDevAttrComputeCapabilityMajor = 75,
    cudaDevAttrComputeCapabilityMinor = 76,
} cudaDeviceAttr;

typedef struct rm_emu_stream *cudaStream_t;
typedef struct rm_emu_event *cudaEvent_t;
#define cudaStreamDefault 0x0
#define cudaStreamNonBlocking 0x1

typedef struct cudaDeviceProp {
    char name[256];
    size_t totalGlobalMem;
    size_t sharedMemPerBlock;
    int regsPerBlock, warpSize, maxThreadsPerBlock;
    int maxThreadsDim[3], maxGridSize[3];
    int major, minor, multiProcessorCount;
} cudaDeviceProp;

/* ---- runtime API ---- */
#ifdef __cplusplus
extern "C" {
#endif
const char *cudaGetErrorString(cudaError_t err);
const char *cudaGetErrorName(cudaError_t err);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total_bytes);

cudaError_t cudaMalloc(void **ptr, size_t bytes);
cudaError_t cudaFree(void *ptr);
cudaError_t cudaMallocAsync(void **ptr, size_t bytes, cudaStream_t stream);
cudaError_t cudaFreeAsync(void *ptr, cudaStream_t stream);
cudaError_t cudaMallocHost(void **ptr, size_t bytes);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream RM_EMU_DEFAULT(0));
cudaError_t cudaMemset(void *dst, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void *dst, int value, size_t bytes, cudaStream_t stream RM_EMU_DEFAULT(0));

cudaError_t cudaStreamCreate(cudaStream_t *stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags RM_EMU_DEFAULT(0));

#define cudaEventDefault 0x00
#define cudaEventDisableTiming 0x02
cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned flags);
/* cudaSuccess once recorded (streams are synchronous: the work before it is done). */
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream RM_EMU_DEFAULT(0));
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);

/* ---- what the emulator adds ---- */
/* Aborts (with what and the call's name) unless [p, p + bytes) lies inside
 * one live device allocation; NULL with bytes 0 passes. */
void rm_emu_check_device_range(const void *p, size_t bytes, const char *what);
/* 1 when p points into a live device allocation. */
int rm_emu_is_device(const void *p);
/* Successful cudaMalloc / cudaMallocAsync calls so far (tests check that a
 * training step makes none). */
size_t rm_emu_allocation_count(void);

#ifdef __cplusplus
}

/* Ends the run with "cuda emulator: " and the message: what a GPU would not
 * report but fault on (a host pointer where device memory belongs, ...). */
[[noreturn]] __attribute__((format(printf, 1, 2))) void rm_emu_die(const char *fmt, ...);

/* One launch: checks the configuration (setting the sticky error like a
 * GPU would) and every pointer argument, then runs body once per thread of
 * every block. */
struct rm_emu_cfg {
    dim3 grid, block;
    size_t shmem;
    cudaStream_t stream;
    rm_emu_cfg(dim3 g, dim3 b, size_t s = 0, cudaStream_t st = 0) : grid(g), block(b), shmem(s), stream(st) {}
};
typedef void (*rm_emu_body)(void *closure);
void rm_emu_run(const void *kernel_id, const char *name, const rm_emu_cfg &cfg, rm_emu_body body, void *closure);
int rm_emu_config_ok(const rm_emu_cfg &cfg);

template <typename T> static inline void rm_emu_check_arg(const T &v, const char *name)
{
    if constexpr (std::is_pointer<T>::value) {
        if (v && !rm_emu_is_device((const void *)v))
            rm_emu_die("kernel %s: pointer argument %p is not device memory", name, (const void *)v);
    }
}

template <typename... P, typename... A>
static inline void rm_emu_launch_named(const char *name, void (*kernel)(P...), const rm_emu_cfg &cfg, A &&...args)
{
    if (!rm_emu_config_ok(cfg)) return;
    /* Arguments are converted to the kernel's parameter types once, as the
     * launch copies them to the device. */
    std::tuple<typename std::decay<P>::type...> params(std::forward<A>(args)...);
    std::apply([name](const auto &...p) { (rm_emu_check_arg(p, name), ...); }, params);
    struct closure_t {
        void (*k)(P...);
        std::tuple<typename std::decay<P>::type...> *params;
    } c = {kernel, &params};
    rm_emu_run((const void *)kernel, name, cfg,
               [](void *p) {
                   closure_t *cl = (closure_t *)p;
                   std::apply(cl->k, *cl->params);
               },
               &c);
}
#define rm_emu_launch(kernel, cfg, ...) rm_emu_launch_named(#kernel, kernel, cfg, ##__VA_ARGS__)
#endif /* __cplusplus */

#endif
