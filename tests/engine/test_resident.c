/* The process's resident memory (base/resident.c) as the kernel counts it:
 * touched pages count, freed ones leave, and a restarted peak forgets what
 * came before. Linux only: elsewhere the calls say -1 and the test skips. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "resident.h"

#define MIB (1024.0 * 1024.0)

Test(resident, counts_touched_pages_and_restarts_its_peak)
{
    size_t now0, peak0;
    if (rm_resident_read(&now0, &peak0)) cr_skip_test("no /proc/self/status here");
    cr_assert_geq(peak0, now0);
    /* mmap, not malloc: the pages are the test's own, untouched until the
     * memset, and returned at munmap whatever the allocator's thresholds. */
    const size_t n = 64u << 20;
    char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert_neq(p, MAP_FAILED);
    size_t now1, peak1;
    cr_assert_eq(rm_resident_read(&now1, &peak1), 0);
    cr_assert_lt((double)now1 - (double)now0, 8 * MIB, "untouched pages are not resident");
    memset(p, 1, n);
    size_t now2, peak2;
    cr_assert_eq(rm_resident_read(&now2, &peak2), 0);
    cr_assert_geq((double)now2 - (double)now1, 63 * MIB, "64 MiB touched, %.1f MiB counted", (now2 - now1) / MIB);
    cr_assert_geq(peak2, now2);
    munmap(p, n);
    if (rm_resident_reset_peak()) cr_skip_test("no /proc/self/clear_refs here");
    size_t now3, peak3;
    cr_assert_eq(rm_resident_read(&now3, &peak3), 0);
    cr_assert_lt((double)now3, (double)now2 - 60 * MIB, "the unmapped pages left");
    cr_assert_lt((double)peak3, (double)peak2 - 56 * MIB, "the restarted peak forgets them (%.1f, was %.1f MiB)",
                 peak3 / MIB, peak2 / MIB);
    cr_assert_geq(peak3, now3);
}
