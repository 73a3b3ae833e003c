/* What the scheduler benchmarks (remat_bench_sched, remat_bench_engine) share:
 * markdown written to stdout and to an optional file, flushed section by
 * section so a stopped run keeps what it finished, and the facts about the
 * run that a document of timings must carry (command, date, CPU, load). */
#ifndef REMAT_BENCH_HOST_H
#define REMAT_BENCH_HOST_H

#include <stddef.h>

#include "table.h"

/* Markdown to stdout and, after emit_open, to a file. */
void emit(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* With --format csv or json the prose is muted: emit writes nothing, and
 * only the bench_table below reaches stdout and the file. */
void emit_mute(int muted);
/* After each section, so a killed run keeps what it finished. */
void emit_flush(void);
/* Also write to path from now on: 0, or -1 after perror. */
int emit_open(const char *path);
/* Closes the file (if any): 0, or -1 after perror. */
int emit_close(void);

/* A table (cli/table.h) streamed through emit's outputs, row by row, so
 * a stopped run keeps its finished rows in every format. The muting above
 * does not apply to it. */
typedef struct bench_table {
    rm_table *t;
    FILE *mem; /* the writer streams into this buffer; each row is then emitted */
    char *buf;
    size_t len, done;
} bench_table;
/* 0, or -1 (out of memory, said on stderr). */
int bench_table_begin(bench_table *bt, const rm_table_col *cols, int ncols, rm_table_format fmt);
/* Ends the row set with rm_table_set_text/num on bt->t, and writes it. */
int bench_table_row(bench_table *bt);
/* Closes the table (json's ']') and frees it. */
int bench_table_end(bench_table *bt);
/* "md", "csv" or "json" (the benchmarks' --format) into *out: 0, or -1. */
int bench_format_parse(rm_table_format *out, const char *s);

/* models/NAME.cfg of the checkout when arg is a bare name, else arg (a
 * path, or anything ending in .cfg). The checkout is REMAT_SOURCE_DIR from
 * the environment (the device machine runs a copy of the tree elsewhere),
 * else built_from (the tree the binary was built from). */
const char *bench_model_path(char *buf, size_t len, const char *arg, const char *built_from);

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
