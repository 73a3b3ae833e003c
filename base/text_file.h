/* Opening the text files remat reads (configs, problems, schedules, cost
 * files) the same way everywhere: a folder is said to be one, and a UTF-8
 * byte-order mark at the start is skipped. */
#ifndef REMAT_TEXT_FILE_H
#define REMAT_TEXT_FILE_H

#include <stddef.h>
#include <stdio.h>

#include "error.h"

/* Opens path for reading, as a file of this kind ("problem file"): NULL,
 * with "PATH: cannot open: <strerror>" in e, or, for a folder (which fopen
 * opens on Linux, the first read then failing with only "read error: Is a
 * directory"), "PATH: is a directory, not a problem file" (RM_ERR_IO). */
FILE *rm_text_open(const char *path, const char *what, rm_err *e);

/* The length of a UTF-8 byte-order mark at the start of s (n bytes): 3, or
 * 0 when there is none. Editors on Windows write one at the start of a
 * text file; the readers skip it there, and only there. */
size_t rm_text_bom(const char *s, size_t n);

/* Reads the rest of fp into memory: *out (malloc'd, NUL-terminated, so
 * text can be scanned as a string) and *len, the bytes read. A file of
 * more than max bytes is refused before it is held: a regular file by its
 * size (fstat), without reading it; a pipe or a device once more than max
 * bytes have come, never holding more than max + 1 of them. Errors:
 * "PATH: N bytes, more than the MAX a WHAT may hold" or "PATH: more than
 * MAX bytes (read from a stream), more than a WHAT may hold" (RM_ERR_PARSE),
 * RM_ERR_NOMEM, and "PATH: read error: ..." (RM_ERR_IO). fp stays open. */
int rm_text_read_all(char **out, size_t *len, FILE *fp, size_t max, const char *path, const char *what, rm_err *e);

#endif
