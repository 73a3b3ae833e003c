/* Arena: budget refusal, alignment, high-water mark. */
#include <criterion/criterion.h>
#include <string.h>

#include "arena.h"
#include "backend_cpu.h"

Test(arena, refuses_capacity_over_budget)
{
    rm_backend *be;
    rm_err e = {0};
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK);
    rm_arena *a;
    cr_assert_eq(rm_arena_create(&a, be, 1000, 999, &e), RM_ERR_BUDGET);
    cr_assert_null(a);
    cr_assert(strstr(e.msg, "budget") != NULL, "message: %s", e.msg);
    rm_backend_free(be);
}

Test(arena, bump_alloc_aligns_and_tracks_high_water)
{
    rm_backend *be;
    rm_err e = {0};
    cr_assert_eq(rm_backend_cpu_create(&be, &e), RM_OK);
    rm_arena *a;
    cr_assert_eq(rm_arena_create(&a, be, 4096, 1 << 20, &e), RM_OK);
    void *p, *q;
    cr_assert_eq(rm_arena_alloc(a, &p, 10, &e), RM_OK);
    cr_assert_eq(rm_arena_alloc(a, &q, 100, &e), RM_OK);
    cr_assert_eq((char *)q - (char *)p, RM_ARENA_ALIGN);
    cr_assert_eq(rm_arena_high_water(a), RM_ARENA_ALIGN + 100);
    rm_arena_reset(a);
    cr_assert_eq(rm_arena_alloc(a, &q, 20, &e), RM_OK);
    cr_assert_eq(q, p);
    cr_assert_eq(rm_arena_high_water(a), RM_ARENA_ALIGN + 100, "reset keeps the high-water mark");
    cr_assert_eq(rm_arena_alloc(a, &q, 4096, &e), RM_ERR_BUDGET, "4096 more bytes cannot fit");
    cr_assert_eq(rm_arena_place(a, &q, 4032, 64, &e), RM_OK);
    cr_assert_eq(rm_arena_high_water(a), 4096);
    cr_assert_eq(rm_arena_place(a, &q, 4032, 65, &e), RM_ERR_BUDGET);
    cr_assert_eq(rm_arena_place(a, &q, 10, 1, &e), RM_ERR_INVALID, "unaligned offset");
    rm_arena_free(a);
    rm_backend_free(be);
}
