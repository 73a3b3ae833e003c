/* What the scheduler benchmarks (remat_bench_sched, remat_bench_cbc) share:
 * markdown written to stdout and to an optional file, flushed section by
 * section so a stopped run keeps what it finished, and the facts about the
 * run that a document of timings must carry (command, date, CPU, load). */
#ifndef REMAT_BENCH_HOST_H
#define REMAT_BENCH_HOST_H

#include <stddef.h>

/* Markdown to stdout and, after emit_open, to a file. */
void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* After each section, so a killed run keeps what it finished. */
void emit_flush(void);
/* Also write to path from now on: 0, or -1 after perror. */
int emit_open(const char *path);
/* Closes the file (if any): 0, or -1 after perror. */
int emit_close(void);

/* "Intel(R) Xeon(R) ..." from /proc/cpuinfo, or "unknown". */
void bench_cpu_model(char *buf, size_t len);
/* The 1/5/15-minute load averages, or "unknown": the machine is shared, so
 * the load says how much the wall-clock times can be trusted. */
void bench_load_average(char *buf, size_t len);
/* argv as a shell would need it typed. */
void bench_command_line(char *buf, size_t len, int argc, char **argv);
/* "2026-11-25 10:31 UTC". */
void bench_utc_now(char *buf, size_t len);

#endif
