/* The one tokenizer of the scheduler's line-based text formats (problem,
 * schedule and cost files): whitespace-separated fields, '#' to the end of
 * the line a comment. */
#ifndef REMAT_TEXT_FIELDS_H
#define REMAT_TEXT_FIELDS_H

/* Splits line in place: f[0 .. cap-1] receive the first fields (each
 * NUL-terminated inside line). Returns the number of fields on the line,
 * which may exceed cap, so a caller sees extra fields without storing them. */
int rm_text_fields(char *line, char **f, int cap);

#endif
