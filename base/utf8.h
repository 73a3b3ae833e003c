/* Names remat did not choose (problem files, ONNX node names, model
 * configs) as text: the check the problem readers make, and the one way
 * every printer shows such a name, so that no name can carry a terminal
 * escape sequence, a bidi override or bytes an XML parser refuses into
 * what remat prints or writes. */
#ifndef REMAT_UTF8_H
#define REMAT_UTF8_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The code point of the UTF-8 sequence at s (n bytes available) in *cp;
 * returns its length (1-4), or 0 when the bytes there are not valid UTF-8:
 * a stray continuation byte, a truncated sequence, an overlong form
 * (0xC0 0xAF for '/'), a surrogate (U+D800-DFFF) or more than U+10FFFF. */
int rm_utf8_next(const char *s, size_t n, uint32_t *cp);

/* 1 for the code points a name must not hold and a printer never writes
 * raw: C0 controls, DEL, C1 controls (U+0080-009F), the bidi overrides and
 * isolates (U+202A-202E, U+2066-2069, which reorder the text shown around
 * them), the byte-order mark U+FEFF (invisible; a file may start with
 * one, which the readers skip before any name) and the noncharacters
 * U+FFFE and U+FFFF (not XML characters). */
int rm_utf8_hidden(uint32_t cp);

/* Checks the n bytes of a name: 0 when every character is valid UTF-8 and
 * not hidden; otherwise -1, with the offset of the first bad byte in *at
 * and what is wrong there in why ("byte 0x1b, a control character",
 * "bytes 0xe2 0x80 0xae, U+202E, a bidi override", "byte 0xc3, invalid
 * UTF-8 (a truncated sequence)"). */
int rm_name_check(const char *s, size_t n, size_t *at, char *why, size_t why_len);

/* The most bytes rm_name_show writes for a name of RM_NAME_LEN (64) bytes:
 * each byte at most 4 ("\x1b"), and the NUL. */
#define RM_NAME_SHOW_LEN 256

/* name as it is printed: valid UTF-8 that is not hidden as is, a hidden
 * character as \xNN (below U+0080) or \uXXXX, a byte that is not UTF-8 as
 * \xNN, and a backslash as \\ (so the text shows which is which). Writes
 * whole characters and escapes into buf (cap bytes, NUL-terminated) while
 * they fit in cap and in max_cols columns (a character is one column, an
 * escape as many as its characters; < 0: no limit). Returns the columns
 * written, for a caller that pads to a width. */
int rm_name_show_cols(char *buf, size_t cap, const char *name, int max_cols);

/* rm_name_show_cols without a column limit; returns buf, for printf. */
const char *rm_name_show(char *buf, size_t cap, const char *name);

/* rm_name_show as a value: rm_name_shown_of(name).s lives until the end of
 * the full expression that calls it (C11 6.2.4p8), so one printf can show
 * several names without a buffer for each. */
typedef struct rm_name_shown {
    char s[RM_NAME_SHOW_LEN];
} rm_name_shown;
rm_name_shown rm_name_shown_of(const char *name);

/* s written to f in rm_name_show's form, whatever its length: a line
 * that quotes names (the ONNX import's notes). */
void rm_name_fputs(FILE *f, const char *s);

/* A whole message remat prints (an error, warning, note or log line, a
 * stdout line that quotes a path or a file's text) written to f with every
 * hidden character and invalid byte escaped as rm_name_show does, except
 * the message's own newlines and tabs; backslashes are not doubled, so a
 * name already shown by rm_name_show inside the message reads the same.
 * The one way remat writes text it did not choose to a terminal. */
void rm_text_fputs(FILE *f, const char *s);
int rm_text_vfprintf(FILE *f, const char *fmt, va_list ap);
int rm_text_fprintf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
