/* The one tokenizer of the scheduler's line-based text formats (problem,
 * schedule and cost files): whitespace-separated fields, '#' to the end of
 * the line a comment. */
#ifndef REMAT_TEXT_FIELDS_H
#define REMAT_TEXT_FIELDS_H

/* Splits line in place: f[0 .. cap-1] receive the first fields (each
 * NUL-terminated inside line). Returns the number of fields on the line,
 * which may exceed cap, so a caller sees extra fields without storing them. */
int rm_text_fields(char *line, char **f, int cap);

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "error.h"
#include "text_file.h" /* rm_text_open, rm_text_bom */

/* An error already in e from a check outside the reader (RM_ERR_INVALID, a
 * message without a place) as a parse error of the file at this line:
 * "PATH:LINE: message". Returns RM_ERR_PARSE. */
int rm_text_error_at(rm_err *e, const char *path, int line);

/* The longest line the readers accept, newline included (64 MiB): a
 * schedule file in the first format (bit rows) of 10 million nodes has lines
 * of 20 MB; a longer "line" is not one of these formats (/dev/zero made getline grow its buffer until memory ran
 * out). */
#define RM_TEXT_MAX_LINE ((size_t)64 << 20)

/* getline(3) with a bound: reads one line (newline kept) into *buf, growing
 * it with realloc, and returns its length. -1 at end of file (errno 0), on a
 * read error (ferror), when memory runs out (errno ENOMEM) or when the line
 * exceeds RM_TEXT_MAX_LINE bytes (errno EOVERFLOW). A NUL byte is stored
 * like any other, so strlen(*buf) < the length tells a caller it is there. */
ssize_t rm_text_getline(char **buf, size_t *cap, FILE *fp);

#endif
