/* Logging: reads REMAT_LOG on each call (cheap, and keeps no global state). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rm_log_level rm_log_threshold(void)
{
    const char *v = getenv("REMAT_LOG");
    if (!v || !*v) return RM_LOG_WARN;
    if (!strcmp(v, "error")) return RM_LOG_ERROR;
    if (!strcmp(v, "warn")) return RM_LOG_WARN;
    if (!strcmp(v, "info")) return RM_LOG_INFO;
    if (!strcmp(v, "debug")) return RM_LOG_DEBUG;
    return RM_LOG_WARN;
}

void rm_log(rm_log_level level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (level > rm_log_threshold()) return;
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "remat %s: ", names[level]);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}
