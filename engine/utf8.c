#include "utf8.h"

#include <stdio.h>
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
           (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFFFE || cp == 0xFFFF;
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
            for (int b = 0; b < k; b++)
                snprintf(bytes + strlen(bytes), sizeof bytes - strlen(bytes), " 0x%02x", u[b]);
            snprintf(why, why_len, "bytes%s, U+%04X, %s", bytes, (unsigned)cp,
                     cp <= 0x9F                     ? "a C1 control character"
                     : cp >= 0x202A && cp <= 0x202E ? "a bidi override, which reorders the text shown around it"
                     : cp >= 0x2066 && cp <= 0x2069 ? "a bidi isolate, which reorders the text shown around it"
                                                    : "a noncharacter");
        }
        return -1;
    }
    return 0;
}

/* The shown form of the character at s (n bytes left): *piece, *plen bytes
 * of it (esc holds an escape), *cols columns; returns the bytes of s it
 * stands for. */
static size_t show_char(const char *s, size_t n, char esc[12], const char **piece, size_t *plen, int *cols)
{
    uint32_t cp = 0;
    int k = rm_utf8_next(s, n, &cp);
    *piece = s, *plen = (size_t)k, *cols = 1;
    if (k == 0 || rm_utf8_hidden(cp)) {
        if (k == 0 || cp < 0x80)
            snprintf(esc, 12, "\\x%02x", (unsigned char)s[0]), k = k ? k : 1;
        else
            snprintf(esc, 12, "\\u%04x", (unsigned)cp);
        *piece = esc, *plen = strlen(esc), *cols = (int)*plen;
    } else if (cp == '\\') {
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
        size_t k = show_char(name + i, n - i, esc, &piece, &plen, &pcols);
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

void rm_name_fputs(FILE *f, const char *s)
{
    for (size_t i = 0, n = strlen(s); i < n;) {
        char esc[12];
        const char *piece;
        size_t plen;
        int cols;
        i += show_char(s + i, n - i, esc, &piece, &plen, &cols);
        fwrite(piece, 1, plen, f);
    }
}
