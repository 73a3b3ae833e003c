/* Logging: reads REMAT_LOG on each call (cheap; the only global state is the
 * flag that warns once about a value it does not know). Under an MPI
 * launcher only rank 0 logs below warnings (base/launcher.h). */
#include "log.h"

#include "launcher.h"
#include "utf8.h" /* rm_text_vfprintf: log lines quote names and paths remat did not choose */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

rm_log_level rm_log_threshold(void)
{
    const char *v = getenv("REMAT_LOG");
    if (!v || !*v) return RM_LOG_WARN;
    if (!strcasecmp(v, "error")) return RM_LOG_ERROR;
    if (!strcasecmp(v, "warn")) return RM_LOG_WARN;
    if (!strcasecmp(v, "info")) return RM_LOG_INFO;
    if (!strcasecmp(v, "debug")) return RM_LOG_DEBUG;
    /* A typo (REMAT_LOG=verbose) would otherwise silently show nothing more;
     * said once per process, the only state this file keeps. */
    static int warned;
    if (!warned) {
        warned = 1;
        rm_text_fprintf(stderr, "remat warn: REMAT_LOG='%s' is not error, warn, info or debug; logging at warn\n", v);
    }
    return RM_LOG_WARN;
}

void rm_log(rm_log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (level > rm_log_threshold()) return;
    /* Under mpirun rank 0 tells the story; the others speak up only for
     * warnings and errors, saying who they are. */
    int rank = rm_launched_rank();
    if (rank > 0 && level > RM_LOG_WARN) return;
    va_list ap;
    va_start(ap, fmt);
    if (rank > 0)
        fprintf(stderr, "remat %s (rank %d): ", names[level], rank);
    else
        fprintf(stderr, "remat %s: ", names[level]);
    rm_text_vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
