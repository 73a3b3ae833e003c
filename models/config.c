/* Tokenizer for model config files: sections, keys and values with line
 * numbers, and strict typed conversion of values (see config.h). */
#include "config.h"
#include "text_file.h"
#include "utf8.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Guards the line numbers and allocation sizes; no sane model comes close. */
#define CFG_MAX_BYTES (64u << 20)

static char *dup_range(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

static int is_ident(const char *s, size_t n)
{
    if (n == 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '_')) return 0;
    return 1;
}

static void trim(const char **b, const char **end)
{
    while (*b < *end && isspace((unsigned char)**b)) (*b)++;
    while (*end > *b && isspace((unsigned char)(*end)[-1])) (*end)--;
}

void rm_cfg_free(rm_cfg_file *f)
{
    if (!f) return;
    for (int i = 0; i < f->nsections; i++) {
        rm_cfg_section *s = &f->sections[i];
        for (int k = 0; k < s->nkeys; k++) {
            free(s->keys[k].key);
            free(s->keys[k].value);
        }
        free(s->keys);
        free(s->type);
    }
    free(f->sections);
    free(f->path);
    free(f);
}

static int add_section(rm_cfg_file *f, const char *type, size_t n, int line, rm_err *e)
{
    rm_cfg_section *s = realloc(f->sections, (size_t)(f->nsections + 1) * sizeof *s);
    if (!s) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", f->path);
    f->sections = s;
    s = &f->sections[f->nsections];
    memset(s, 0, sizeof *s);
    s->line = line;
    s->type = dup_range(type, n);
    if (!s->type) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", f->path);
    f->nsections++;
    return RM_OK;
}

static int add_key(rm_cfg_file *f, const char *k, size_t kn, const char *v, size_t vn, int line, rm_err *e)
{
    rm_cfg_section *s = &f->sections[f->nsections - 1];
    for (int i = 0; i < s->nkeys; i++)
        if (strlen(s->keys[i].key) == kn && !memcmp(s->keys[i].key, k, kn))
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: key '%s' given twice in [%s] (first at line %d)", f->path, line,
                             s->keys[i].key, s->type, s->keys[i].line);
    rm_cfg_key *keys = realloc(s->keys, (size_t)(s->nkeys + 1) * sizeof *keys);
    if (!keys) return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", f->path);
    s->keys = keys;
    rm_cfg_key *nk = &s->keys[s->nkeys];
    nk->key = dup_range(k, kn);
    nk->value = dup_range(v, vn);
    nk->line = line;
    if (!nk->key || !nk->value) {
        free(nk->key);
        free(nk->value);
        return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", f->path);
    }
    s->nkeys++;
    return RM_OK;
}

static int parse_line(rm_cfg_file *f, const char *b, const char *end, int line, rm_err *e)
{
    /* '#' and ';' start a comment anywhere: no value in this format contains them. */
    for (const char *p = b; p < end; p++)
        if (*p == '#' || *p == ';') {
            end = p;
            break;
        }
    trim(&b, &end);
    if (b == end) return RM_OK;
    for (const char *p = b; p < end; p++) {
        unsigned char c = (unsigned char)*p;
        uint32_t cp;
        if (isprint(c) || c == '\t') continue;
        /* A byte above 0x7f is no control character: say what it is. */
        if (c >= 0x80 && rm_utf8_next(p, (size_t)(end - p), &cp) && !rm_utf8_hidden(cp))
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: a non-ASCII character, U+%04X: model configs are ASCII", f->path,
                             line, (unsigned)cp);
        char why[160];
        size_t at;
        rm_name_check(p, (size_t)(end - p), &at, why, sizeof why);
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: unexpected %s", f->path, line, why);
    }
    if (*b == '[') {
        if (end[-1] != ']' || end - b < 2)
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: malformed section header (expected [name])", f->path, line);
        const char *tb = b + 1, *te = end - 1;
        trim(&tb, &te);
        if (!is_ident(tb, (size_t)(te - tb)))
            return rm_errorf(e, RM_ERR_PARSE,
                             "%s:%d: malformed section header: a section name is lower-case letters, digits and '_'",
                             f->path, line);
        return add_section(f, tb, (size_t)(te - tb), line, e);
    }
    const char *eq = memchr(b, '=', (size_t)(end - b));
    if (!eq) return rm_errorf(e, RM_ERR_PARSE, "%s:%d: expected key=value or [section]", f->path, line);
    const char *kb = b, *ke = eq, *vb = eq + 1, *ve = end;
    trim(&kb, &ke);
    trim(&vb, &ve);
    if (!is_ident(kb, (size_t)(ke - kb)))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: malformed key: a key is lower-case letters, digits and '_'", f->path,
                         line);
    if (vb == ve)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: key '%.*s' has no value", f->path, line, (int)(ke - kb), kb);
    if (f->nsections == 0)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: key '%.*s' outside of any section", f->path, line, (int)(ke - kb),
                         kb);
    return add_key(f, kb, (size_t)(ke - kb), vb, (size_t)(ve - vb), line, e);
}

int rm_cfg_parse(rm_cfg_file **out, const char *text, const char *path, rm_err *e)
{
    *out = NULL;
    if (!path) path = "<config>";
    rm_cfg_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = dup_range(path, strlen(path)))) {
        free(f);
        return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", path);
    }
    int line = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        const char *end = nl ? nl : p + strlen(p);
        line++;
        int rc = parse_line(f, p, end, line, e);
        if (rc) {
            rm_cfg_free(f);
            return rc;
        }
        p = nl ? nl + 1 : end;
    }
    f->nlines = line;
    *out = f;
    return RM_OK;
}

int rm_cfg_read(rm_cfg_file **out, const char *path, rm_err *e)
{
    *out = NULL;
    FILE *fp = rm_text_open(path, "model config", e);
    if (!fp) return e ? e->code : RM_ERR_IO;
    char *buf = NULL;
    size_t len = 0, cap = 0;
    int read_errno = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(fp);
                return rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", path);
            }
            buf = nb;
        }
        errno = 0;
        size_t got = fread(buf + len, 1, cap - len - 1, fp);
        if (!got && ferror(fp)) read_errno = errno; /* EISDIR for a folder */
        len += got;
        if (len > CFG_MAX_BYTES) {
            free(buf);
            fclose(fp);
            return rm_errorf(e, RM_ERR_PARSE, "%s: larger than %u bytes; not a model config", path, CFG_MAX_BYTES);
        }
        if (got == 0) break;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (bad) {
        free(buf);
        return rm_errorf(e, RM_ERR_IO, "%s: read error: %s", path,
                         read_errno ? strerror(read_errno) : "the stream failed");
    }
    buf[len] = '\0';
    if (strlen(buf) != len) {
        free(buf);
        return rm_errorf(e, RM_ERR_PARSE, "%s: contains a NUL byte; not a text file", path);
    }
    int rc = rm_cfg_parse(out, buf + rm_text_bom(buf, len), path, e); /* a byte-order mark is skipped */
    free(buf);
    return rc;
}

const rm_cfg_key *rm_cfg_find(const rm_cfg_section *s, const char *key)
{
    for (int i = 0; i < s->nkeys; i++)
        if (!strcmp(s->keys[i].key, key)) return &s->keys[i];
    return NULL;
}

int rm_cfg_int(int *out, const rm_cfg_file *f, const rm_cfg_section *s, const rm_cfg_key *k, int lo, int hi, rm_err *e)
{
    const char *v = k->value;
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    /* strtol accepts leading blanks and '+'; the format does not. */
    int ok = end != v && *end == '\0' && errno == 0 && (isdigit((unsigned char)v[0]) || v[0] == '-');
    if (!ok)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: bad value '%s' for key '%s' in [%s]: expected an integer", f->path,
                         k->line, v, k->key, s->type);
    if (x < lo || x > hi)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: value %s for key '%s' in [%s] is out of range [%d, %d]", f->path,
                         k->line, v, k->key, s->type, lo, hi);
    *out = (int)x;
    return RM_OK;
}

int rm_cfg_hw(rm_hw *out, const rm_cfg_file *f, const rm_cfg_section *s, const rm_cfg_key *k, int lo, int hi, rm_err *e)
{
    const char *x = strchr(k->value, 'x');
    if (!x) {
        int v;
        int rc = rm_cfg_int(&v, f, s, k, lo, hi, e);
        if (!rc) *out = rm_hw_square(v);
        return rc;
    }
    /* HxW: each side an integer as rm_cfg_int reads it (its messages quote the whole value) */
    char part[2][32];
    size_t n0 = (size_t)(x - k->value), n1 = strlen(x + 1);
    if (n0 == 0 || n1 == 0 || n0 >= sizeof part[0] || n1 >= sizeof part[1])
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: bad value '%s' for key '%s' in [%s]: expected N or HxW", f->path,
                         k->line, k->value, k->key, s->type);
    memcpy(part[0], k->value, n0), part[0][n0] = '\0';
    memcpy(part[1], x + 1, n1 + 1);
    int v[2];
    for (int i = 0; i < 2; i++) {
        rm_cfg_key side = *k;
        side.value = part[i];
        rm_err why = {RM_OK, ""};
        if (rm_cfg_int(&v[i], f, s, &side, lo, hi, &why))
            return rm_errorf(e, RM_ERR_PARSE,
                             "%s:%d: bad value '%s' for key '%s' in [%s]: expected N or HxW, each %d to %d", f->path,
                             k->line, k->value, k->key, s->type, lo, hi);
    }
    out->h = v[0], out->w = v[1];
    return RM_OK;
}

int rm_cfg_float(float *out, const rm_cfg_file *f, const rm_cfg_section *s, const rm_cfg_key *k, double lo, int lo_open,
                 double hi, int hi_open, rm_err *e)
{
    const char *v = k->value;
    char *end = NULL;
    errno = 0;
    double x = strtod(v, &end);
    int ok = end != v && *end == '\0' && errno == 0 && isfinite(x) &&
             (isdigit((unsigned char)v[0]) || v[0] == '-' || v[0] == '.') && !strpbrk(v, "xX");
    if (!ok)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: bad value '%s' for key '%s' in [%s]: expected a number", f->path,
                         k->line, v, k->key, s->type);
    if (x < lo || x > hi || (lo_open && x == lo) || (hi_open && x == hi))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: value %s for key '%s' in [%s] is out of range %c%g, %g%c", f->path,
                         k->line, v, k->key, s->type, lo_open ? '(' : '[', lo, hi, hi_open ? ')' : ']');
    *out = (float)x;
    return RM_OK;
}
