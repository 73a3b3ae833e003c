/* The test runner's environment for the OpenMP threads of the CPU backend
 * (engine/cpu/backend_cpu.h). The suite runs its tests in parallel processes
 * (--jobs 2 on 2 cores), each CPU backend on every core by default, and
 * libgomp's idle threads spin about 300,000 pauses (milliseconds on recent
 * Xeons) after every parallel region before they sleep: four spinning
 * threads on two cores made the trainer suite 4.6x slower (11 s against
 * 2.4 s). 10,000 spins keep a single process within 2% of its speed
 * (ResNet-18's step at 2 threads: 750 ms against 735 ms) and the suite at
 * its one-thread time. Set before the tests start, so their processes
 * inherit it; a value the caller set is kept. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <stdlib.h>

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
    (void)set;
    if (!getenv("OMP_WAIT_POLICY")) setenv("GOMP_SPINCOUNT", "10000", 0);
}
