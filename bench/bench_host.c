/* The benchmarks' shared output and run facts; see bench_host.h. */
#include "bench_host.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- output: stdout and, optionally, a file ---- */

static FILE *g_out_file;
static const char *g_out_path;
static int g_muted;

void emit_mute(int muted)
{
    g_muted = muted;
}

void emit(const char *fmt, ...)
{
    if (g_muted) return;
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

/* ---- tables ---- */

int bench_format_parse(rm_table_format *out, const char *s)
{
    return rm_table_format_parse(out, s) || *out == RM_TABLE_TEXT ? -1 : 0;
}

/* What the writer put in the buffer since the last call, to both outputs. */
static int bench_table_pass(bench_table *bt, int rc)
{
    if (fflush(bt->mem)) rc = -1;
    if (bt->len > bt->done) {
        int muted = g_muted;
        g_muted = 0;
        emit("%.*s", (int)(bt->len - bt->done), bt->buf + bt->done);
        emit_flush();
        g_muted = muted;
        bt->done = bt->len;
    }
    return rc;
}

int bench_table_begin(bench_table *bt, const rm_table_col *cols, int ncols, rm_table_format fmt)
{
    memset(bt, 0, sizeof *bt);
    bt->t = rm_table_create(cols, ncols);
    bt->mem = open_memstream(&bt->buf, &bt->len);
    if (!bt->t || !bt->mem) {
        fprintf(stderr, "bench: out of memory\n");
        rm_table_free(bt->t);
        if (bt->mem) fclose(bt->mem);
        free(bt->buf);
        memset(bt, 0, sizeof *bt);
        return -1;
    }
    return bench_table_pass(bt, rm_table_begin(bt->t, bt->mem, fmt));
}

int bench_table_row(bench_table *bt)
{
    return bt->t ? bench_table_pass(bt, rm_table_add_row(bt->t)) : -1;
}

int bench_table_end(bench_table *bt)
{
    if (!bt->t) return -1;
    int rc = bench_table_pass(bt, rm_table_end(bt->t));
    rm_table_free(bt->t);
    fclose(bt->mem);
    free(bt->buf);
    memset(bt, 0, sizeof *bt);
    return rc;
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

const char *bench_model_path(char *buf, size_t len, const char *arg, const char *built_from)
{
    if (strchr(arg, '/') || strstr(arg, ".cfg")) return arg;
    const char *d = getenv("REMAT_SOURCE_DIR");
    snprintf(buf, len, "%s/models/%s.cfg", d && *d ? d : built_from, arg);
    return buf;
}
