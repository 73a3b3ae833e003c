/* Budgeted arena over one backend allocation. */
#include "arena.h"

#include <stdlib.h>

struct rm_arena {
    rm_backend *be;
    char *base;
    size_t capacity, top, high_water;
};

int rm_arena_create(rm_arena **out, rm_backend *be, size_t capacity, size_t budget, rm_err *e)
{
    *out = NULL;
    if (capacity > budget)
        return rm_errorf(e, RM_ERR_BUDGET, "arena: %zu bytes requested but the budget is %zu bytes", capacity, budget);
    rm_arena *a = calloc(1, sizeof *a);
    if (!a) return rm_errorf(e, RM_ERR_NOMEM, "arena: out of memory");
    a->be = be;
    a->capacity = capacity;
    int rc = rm_backend_alloc(be, (void **)&a->base, capacity, e);
    if (rc) {
        free(a);
        return rc;
    }
    *out = a;
    return RM_OK;
}

void rm_arena_free(rm_arena *a)
{
    if (!a) return;
    rm_backend_release(a->be, a->base);
    free(a);
}

int rm_arena_place(rm_arena *a, void **ptr, size_t offset, size_t bytes, rm_err *e)
{
    if (offset % RM_ARENA_ALIGN)
        return rm_errorf(e, RM_ERR_INVALID, "arena: offset %zu is not %d-byte aligned", offset, RM_ARENA_ALIGN);
    if (offset > a->capacity || bytes > a->capacity - offset)
        return rm_errorf(e, RM_ERR_BUDGET, "arena: %zu bytes at offset %zu exceed the arena's %zu bytes", bytes, offset,
                         a->capacity);
    if (offset + bytes > a->high_water) a->high_water = offset + bytes;
    *ptr = a->base + offset;
    return RM_OK;
}

int rm_arena_alloc(rm_arena *a, void **ptr, size_t bytes, rm_err *e)
{
    size_t offset = rm_align_up(a->top);
    int rc = rm_arena_place(a, ptr, offset, bytes, e);
    if (rc) return rc;
    a->top = offset + bytes;
    return RM_OK;
}

void rm_arena_reset(rm_arena *a)
{
    a->top = 0;
}
size_t rm_arena_capacity(const rm_arena *a)
{
    return a->capacity;
}
void *rm_arena_base(const rm_arena *a)
{
    return a->base;
}
size_t rm_arena_high_water(const rm_arena *a)
{
    return a->high_water;
}
