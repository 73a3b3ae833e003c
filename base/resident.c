#include "resident.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The value of a "Name:   1234 kB" line of the status text, in bytes; 0 and
 * *ok cleared when the line is missing. */
static size_t field_kb(const char *text, const char *name, int *ok)
{
    const char *p = strstr(text, name);
    if (!p || (p != text && p[-1] != '\n')) {
        *ok = 0;
        return 0;
    }
    char *end;
    unsigned long long kb = strtoull(p + strlen(name), &end, 10);
    if (end == p + strlen(name) || strncmp(end, " kB", 3) != 0) *ok = 0;
    return (size_t)kb * 1024;
}

int rm_resident_read(size_t *now, size_t *peak)
{
    *now = *peak = 0;
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    char text[8192];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof text - 1 && (r = read(fd, text + n, sizeof text - 1 - n)) > 0) n += (size_t)r;
    close(fd);
    text[n] = '\0';
    int ok = n > 0;
    *now = field_kb(text, "VmRSS:", &ok);
    *peak = field_kb(text, "VmHWM:", &ok);
    return ok ? 0 : -1;
}

int rm_resident_reset_peak(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    int ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok ? 0 : -1;
}
