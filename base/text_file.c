#include "text_file.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

FILE *rm_text_open(const char *path, const char *what, rm_err *e)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        rm_errorf(e, RM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fileno(fp), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(fp);
        /* "an ONNX model", "a model config": the article by what's first letter. */
        const char *article = what[0] && strchr("AEIOUaeiou", what[0]) ? "an" : "a";
        rm_errorf(e, RM_ERR_IO, "%s: is a directory, not %s %s", path, article, what);
        return NULL;
    }
    return fp;
}

size_t rm_text_bom(const char *s, size_t n)
{
    return n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3) ? 3 : 0;
}

int rm_text_read_all(char **out, size_t *len, FILE *fp, size_t max, const char *path, const char *what, rm_err *e)
{
    *out = NULL;
    *len = 0;
    /* A regular file says its size: one too large is refused unread (a
     * 1.1 GB problem file was read whole, 1.2 GB of memory, before this),
     * one that fits is read into a buffer of its size. */
    size_t cap = 1 << 16;
    struct stat st;
    long at = ftell(fp);
    if (fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) && at >= 0 && st.st_size >= at) {
        unsigned long long left = (unsigned long long)(st.st_size - at);
        if (left > max)
            return rm_errorf(e, RM_ERR_PARSE, "%s: %llu bytes, more than the %zu a %s may hold", path, left, max, what);
        cap = (size_t)left + 2; /* + 1 to see the end of the file in the first read, + 1 for the NUL */
    }
    if (cap > max + 2) cap = max + 2;
    char *buf = malloc(cap);
    if (!buf) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory for %zu bytes", path, cap);
    size_t n = 0;
    for (;;) {
        if (n + 1 == cap) {
            if (n > max) break; /* a stream past the cap (a growing file too) */
            size_t nc = cap <= (max + 2) / 2 ? cap * 2 : max + 2;
            char *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory after %zu bytes", path, n);
            }
            buf = nb, cap = nc;
        }
        errno = 0;
        size_t got = fread(buf + n, 1, cap - 1 - n, fp);
        n += got;
        if (got == 0) break;
    }
    if (n > max) {
        free(buf);
        return rm_errorf(e, RM_ERR_PARSE, "%s: more than %zu bytes (read from a stream), more than a %s may hold", path,
                         max, what);
    }
    if (ferror(fp)) {
        int err = errno;
        free(buf);
        return rm_errorf(e, RM_ERR_IO, "%s: read error: %s", path, err ? strerror(err) : "the stream failed");
    }
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return RM_OK;
}
