#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int rm_utf8_next(const char *s, size_t n, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (n == 0) return 0;
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    int len;
    uint32_t c, min;
    if (u[0] >= 0xC2 && u[0] <= 0xDF) /* 0xC0, 0xC1 only start overlong forms */
        len = 2, c = u[0] & 0x1F, min = 0x80;
    else if (u[0] >= 0xE0 && u[0] <= 0xEF)
        len = 3, c = u[0] & 0x0F, min = 0x800;
    else if (u[0] >= 0xF0 && u[0] <= 0xF4)
        len = 4, c = u[0] & 0x07, min = 0x10000;
    else
        return 0;
    if (n < (size_t)len) return 0;
    for (int k = 1; k < len; k++) {
        if ((u[k] & 0xC0) != 0x80) return 0;
        c = c << 6 | (u[k] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) return 0;
    *cp = c;
    return len;
}

int rm_utf8_hidden(uint32_t cp)
{
    return cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || (cp >= 0x202A && cp <= 0x202E) ||
           (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF || cp == 0xFFFE || cp == 0xFFFF;
}

/* Why the bytes at s (n left) are not UTF-8, for a message. */
static const char *invalid_why(const unsigned char *u, size_t n)
{
    if (u[0] >= 0x80 && u[0] < 0xC0) return "a continuation byte without a lead byte";
    if (u[0] == 0xC0 || u[0] == 0xC1) return "an overlong form";
    if (u[0] > 0xF4) return "a byte that UTF-8 never uses";
    int len = u[0] < 0xE0 ? 2 : u[0] < 0xF0 ? 3 : 4;
    for (int k = 1; k < len; k++)
        if ((size_t)k >= n || (u[k] & 0xC0) != 0x80) return "a truncated sequence";
    if ((u[0] == 0xE0 && u[1] < 0xA0) || (u[0] == 0xF0 && u[1] < 0x90)) return "an overlong form";
    if (u[0] == 0xED && u[1] >= 0xA0) return "a surrogate, which UTF-8 does not encode";
    return "a code point above U+10FFFF";
}

int rm_name_check(const char *s, size_t n, size_t *at, char *why, size_t why_len)
{
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int k = rm_utf8_next(s + i, n - i, &cp);
        if (k > 0 && !rm_utf8_hidden(cp)) {
            i += (size_t)k;
            continue;
        }
        *at = i;
        const unsigned char *u = (const unsigned char *)s + i;
        if (k == 0)
            snprintf(why, why_len, "byte 0x%02x, invalid UTF-8 (%s)", u[0], invalid_why(u, n - i));
        else if (cp < 0x80)
            snprintf(why, why_len, "byte 0x%02x, a control character", u[0]);
        else {
            char bytes[16] = "";
            for (int b = 0; b < k; b++) snprintf(bytes + strlen(bytes), sizeof bytes - strlen(bytes), " 0x%02x", u[b]);
            snprintf(why, why_len, "bytes%s, U+%04X, %s", bytes, (unsigned)cp,
                     cp <= 0x9F                     ? "a C1 control character"
                     : cp >= 0x202A && cp <= 0x202E ? "a bidi override, which reorders the text shown around it"
                     : cp >= 0x2066 && cp <= 0x2069 ? "a bidi isolate, which reorders the text shown around it"
                     : cp == 0xFEFF                 ? "a byte-order mark, allowed only at the start of the file"
                                                    : "a noncharacter");
        }
        return -1;
    }
    return 0;
}

/* The shown form of the character at s (n bytes left): *piece, *plen bytes
 * of it (esc holds an escape), *cols columns; returns the bytes of s it
 * stands for. text: a whole message (rm_text_fputs), whose own newlines and
 * tabs stay as they are and whose backslashes are not doubled, since the
 * names it quotes were already shown escaped by rm_name_show and doubling
 * would show "\x1b" for them. */
static size_t show_char(const char *s, size_t n, char esc[12], const char **piece, size_t *plen, int *cols, int text)
{
    uint32_t cp = 0;
    int k = rm_utf8_next(s, n, &cp);
    *piece = s, *plen = (size_t)k, *cols = 1;
    if (text && k == 1 && (cp == '\n' || cp == '\t')) return 1;
    if (k == 0 || rm_utf8_hidden(cp)) {
        if (k == 0 || cp < 0x80)
            snprintf(esc, 12, "\\x%02x", (unsigned char)s[0]), k = k ? k : 1;
        else
            snprintf(esc, 12, "\\u%04x", (unsigned)cp);
        *piece = esc, *plen = strlen(esc), *cols = (int)*plen;
    } else if (cp == '\\' && !text) {
        *piece = "\\\\", *plen = 2, *cols = 2;
    }
    return (size_t)k;
}

int rm_name_show_cols(char *buf, size_t cap, const char *name, int max_cols)
{
    size_t out = 0, n = strlen(name);
    int cols = 0;
    if (cap == 0) return 0;
    for (size_t i = 0; i < n;) {
        char esc[12];
        const char *piece;
        size_t plen;
        int pcols;
        size_t k = show_char(name + i, n - i, esc, &piece, &plen, &pcols, 0);
        if (out + plen >= cap || (max_cols >= 0 && cols + pcols > max_cols)) break;
        memcpy(buf + out, piece, plen);
        out += plen;
        cols += pcols;
        i += k;
    }
    buf[out] = '\0';
    return cols;
}

const char *rm_name_show(char *buf, size_t cap, const char *name)
{
    rm_name_show_cols(buf, cap, name, -1);
    return buf;
}

rm_name_shown rm_name_shown_of(const char *name)
{
    rm_name_shown v;
    rm_name_show(v.s, sizeof v.s, name);
    return v;
}

static void show_fputs(FILE *f, const char *s, int text)
{
    for (size_t i = 0, n = strlen(s); i < n;) {
        char esc[12];
        const char *piece;
        size_t plen;
        int cols;
        i += show_char(s + i, n - i, esc, &piece, &plen, &cols, text);
        fwrite(piece, 1, plen, f);
    }
}

void rm_name_fputs(FILE *f, const char *s)
{
    show_fputs(f, s, 0);
}

void rm_text_fputs(FILE *f, const char *s)
{
    show_fputs(f, s, 1);
}

int rm_text_vfprintf(FILE *f, const char *fmt, va_list ap)
{
    /* Formatted whole first, so that an escape sequence split across two
     * arguments (a path ending in ESC, a format going on with "[2J") is
     * still one sequence to the sanitiser. */
    char small[1024], *buf = small;
    va_list again;
    va_copy(again, ap);
    int len = vsnprintf(small, sizeof small, fmt, ap);
    if (len >= (int)sizeof small) {
        buf = malloc((size_t)len + 1);
        if (buf)
            vsnprintf(buf, (size_t)len + 1, fmt, again);
        else
            buf = small; /* out of memory: the message cut, never raw */
    }
    va_end(again);
    if (len < 0) return len;
    rm_text_fputs(f, buf);
    if (buf != small) free(buf);
    return len;
}

int rm_text_fprintf(FILE *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int len = rm_text_vfprintf(f, fmt, ap);
    va_end(ap);
    return len;
}
