/* Deterministic random numbers. A counter-based hash (splitmix64 finalizer)
 * gives the same value for the same (seed, stream, index) on every backend and
 * every recomputation: dropout masks are replayed from (seed, step, node), and
 * parameter initialisation is reproducible from a seed. */
#ifndef REMAT_RNG_H
#define REMAT_RNG_H

#include <math.h>
#include <stdint.h>

/* The mask functions are compiled for the device too when nvcc includes this
 * header, so a CUDA kernel draws exactly the CPU reference's numbers. */
#if defined(__CUDACC__)
#define RM_HOST_DEVICE __host__ __device__
#else
#define RM_HOST_DEVICE
#endif

static inline RM_HOST_DEVICE uint64_t rm_hash64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Uniform in [0, 1) with 24 random bits, a pure function of its arguments. */
static inline RM_HOST_DEVICE float rm_uniform_at(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t h = rm_hash64(seed ^ rm_hash64(stream ^ rm_hash64(index)));
    return (float)(h >> 40) * (1.0f / 16777216.0f);
}

/* The dropout mask stream of one node in one training step. Mixing the step
 * through the hash keeps consecutive steps' streams unrelated; the node id
 * separates two dropout layers within a step. Every backend uses this. */
static inline RM_HOST_DEVICE uint64_t rm_dropout_stream(uint64_t step, int node_id)
{
    return rm_hash64(step) ^ (uint64_t)(uint32_t)node_id;
}

/* Sequential generator for initialisation and tests. */
typedef struct rm_rng {
    uint64_t seed, counter;
} rm_rng;

static inline rm_rng rm_rng_make(uint64_t seed)
{
    rm_rng r = {seed, 0};
    return r;
}

static inline uint64_t rm_rng_next(rm_rng *r)
{
    return rm_hash64(r->seed ^ rm_hash64(r->counter++));
}

/* Uniform in [0, 1). */
static inline double rm_rng_uniform(rm_rng *r)
{
    return (double)(rm_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
}

/* Uniform in [lo, hi). */
static inline double rm_rng_range(rm_rng *r, double lo, double hi)
{
    return lo + (hi - lo) * rm_rng_uniform(r);
}

/* Standard normal by Box-Muller (one value per call; simple beats fast here). */
static inline double rm_rng_normal(rm_rng *r)
{
    double u1 = rm_rng_uniform(r), u2 = rm_rng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

#endif
