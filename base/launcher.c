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

/* The first of names set, as a rank (0 when none is, or it is no number >= 0). */
static int first_rank(const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = getenv(names[i]);
        if (v) return atoi(v) > 0 ? atoi(v) : 0;
    }
    return 0;
}

int rm_launched_rank(void)
{
    static const char *const ranks[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    return first_rank(ranks, sizeof ranks / sizeof *ranks);
}

int rm_launched_local_rank(void)
{
    static const char *const ranks[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"};
    return first_rank(ranks, sizeof ranks / sizeof *ranks);
}
