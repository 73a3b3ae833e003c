#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "cores.h"

#include <sched.h>
#include <unistd.h>

int rm_usable_cores(void)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 && n <= CPU_SETSIZE ? (int)n : 1;
}
