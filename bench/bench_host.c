/* The benchmarks' shared output and run facts; see bench_host.h. */
#include "bench_host.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- output: stdout and, optionally, a file ---- */

static FILE *g_out_file;
static const char *g_out_path;

void emit(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    if (g_out_file) {
        va_start(ap, fmt);
        vfprintf(g_out_file, fmt, ap);
        va_end(ap);
    }
}

void emit_flush(void)
{
    fflush(stdout);
    if (g_out_file) fflush(g_out_file);
}

int emit_open(const char *path)
{
    if (!(g_out_file = fopen(path, "w"))) {
        perror(path);
        return -1;
    }
    g_out_path = path;
    return 0;
}

int emit_close(void)
{
    if (!g_out_file) return 0;
    int rc = fclose(g_out_file);
    g_out_file = NULL;
    if (rc) perror(g_out_path);
    return rc ? -1 : 0;
}

/* ---- the machine and the command, for the document's header ---- */

void bench_cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10)) continue;
        char *colon = strchr(line, ':');
        if (!colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(buf, len, "%s", colon);
        break;
    }
    fclose(f);
}

/* The machine is shared with other jobs; the load says how much the times
 * below can be trusted. */
void bench_load_average(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    double a, b, c;
    if (fscanf(f, "%lf %lf %lf", &a, &b, &c) == 3) snprintf(buf, len, "%.2f %.2f %.2f", a, b, c);
    fclose(f);
}

void bench_command_line(char *buf, size_t len, int argc, char **argv)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < argc && o < len; i++) {
        /* Quote what a shell would split or expand. */
        int plain = argv[i][0] != '\0' && strspn(argv[i], "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                          "0123456789-_./:,=%+@") == strlen(argv[i]);
        o += (size_t)snprintf(buf + o, len - o, plain ? "%s%s" : "%s'%s'", i ? " " : "", argv[i]);
    }
}

void bench_utc_now(char *buf, size_t len)
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M UTC", &tm);
}

