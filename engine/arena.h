/* A budgeted arena: one backend allocation carved into tensors either by a
 * bump pointer (rm_arena_alloc) or at offsets planned ahead (rm_arena_place).
 * It refuses to exceed its capacity with a clear error and records the
 * high-water mark, which the executor's tests compare to the simulator's peak. */
#ifndef REMAT_ARENA_H
#define REMAT_ARENA_H

#include <stddef.h>

#include "backend.h"

#define RM_ARENA_ALIGN 64 /* bytes; every tensor starts on this boundary */

typedef struct rm_arena rm_arena;

/* capacity: bytes reserved on the backend; must not exceed budget. */
int rm_arena_create(rm_arena **out, rm_backend *be, size_t capacity, size_t budget, rm_err *e);
void rm_arena_free(rm_arena *a);

/* Bump allocation, aligned to RM_ARENA_ALIGN. */
int rm_arena_alloc(rm_arena *a, void **ptr, size_t bytes, rm_err *e);
/* Placement at a planned offset (must be aligned); tracks the high-water mark. */
int rm_arena_place(rm_arena *a, void **ptr, size_t offset, size_t bytes, rm_err *e);
/* Forgets bump allocations; keeps the high-water mark. */
void rm_arena_reset(rm_arena *a);

size_t rm_arena_capacity(const rm_arena *a);
/* The reserved memory itself (device memory on a device backend), for a
 * caller that uses the arena while its owner is idle (the trainer's
 * evaluation between steps). */
void *rm_arena_base(const rm_arena *a);
size_t rm_arena_high_water(const rm_arena *a);

static inline size_t rm_align_up(size_t bytes)
{
    return (bytes + RM_ARENA_ALIGN - 1) / RM_ARENA_ALIGN * RM_ARENA_ALIGN;
}

#endif
