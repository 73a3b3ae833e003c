/* The MPI launcher's environment (launcher.h). */
#include "launcher.h"

#include <stdlib.h>

int rm_launched(int *size)
{
    static const char *const sizes[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"};
    int launched = getenv("PMIX_RANK") != NULL;
    if (size) *size = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        const char *v = getenv(sizes[i]);
        if (!v) continue;
        launched = 1;
        if (size && !*size) *size = atoi(v);
    }
    return launched;
}

int rm_launched_rank(void)
{
    static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (size_t i = 0; i < sizeof ranks / sizeof *ranks; i++) {
        const char *v = getenv(ranks[i]);
        if (v) return atoi(v);
    }
    return 0;
}
