#include "text_fields.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

int rm_text_fields(char *line, char **f, int cap)
{
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    int nf = 0;
    for (char *s = line; *s;) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) break;
        if (nf < cap) f[nf] = s;
        nf++;
        while (*s && !isspace((unsigned char)*s)) s++;
        if (*s) *s++ = '\0';
    }
    return nf;
}

int rm_text_error_at(rm_err *e, const char *path, int line)
{
    rm_err_context(e, "%s:%d", path, line);
    if (e) e->code = RM_ERR_PARSE;
    return RM_ERR_PARSE;
}

ssize_t rm_text_getline(char **buf, size_t *cap, FILE *fp)
{
    size_t len = 0;
    int c = EOF;
    while ((c = getc(fp)) != EOF) {
        if (len + 2 > *cap || !*buf) {
            if (len + 2 > RM_TEXT_MAX_LINE) {
                errno = EOVERFLOW;
                return -1;
            }
            size_t ncap = *cap >= 128 ? *cap * 2 : 256;
            if (ncap > RM_TEXT_MAX_LINE) ncap = RM_TEXT_MAX_LINE;
            char *nb = realloc(*buf, ncap);
            if (!nb) {
                errno = ENOMEM;
                return -1;
            }
            *buf = nb;
            *cap = ncap;
        }
        (*buf)[len++] = (char)c;
        if (c == '\n') break;
    }
    if (len == 0) return -1; /* end of file (errno untouched: 0 from the caller), or a read error */
    (*buf)[len] = '\0';
    return (ssize_t)len;
}
