/* Profiled cost files: reader, writer and the check that a file belongs to a
 * problem (see cost_file.h and docs/cost-format.md). Strict on purpose: a
 * cost file silently applied to the wrong graph or batch would make the
 * solver optimise for times that were never measured, and nothing
 * downstream could tell. */
#include "cost_file.h"
#include "text_fields.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "model.h"

#define MAX_FIELDS 8
#define MAX_NODES 10000000
/* The shortest node line, "0 - 0\n": bounds the count a header may claim
 * against the file's size before anything is allocated (the problem reader
 * learned this from its fuzzer). */
#define MIN_NODE_LINE 6

/* A token a name field may hold: printable, no space or '#'. */
static int is_token(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (isspace((unsigned char)*s) || *s == '#' || !isprint((unsigned char)*s)) return 0;
    return 1;
}

/* A whole non-negative decimal integer in [lo, hi]. */
static int parse_int(int *out, const char *tok, int lo, int hi)
{
    if (!isdigit((unsigned char)tok[0])) return -1;
    char *end;
    errno = 0;
    long v = strtol(tok, &end, 10);
    if (*end || errno || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* Seconds: a plain decimal number (digits, optional fraction and exponent).
 * strtod alone would also take "inf", "nan", hex floats and leading spaces. */
static int parse_seconds(double *out, const char *tok, const char *path, int line, int node, rm_err *e)
{
    const char *s = tok;
    int neg = *s == '-';
    if (*s == '-' || *s == '+') s++;
    size_t i = 0, digits = 0;
    while (isdigit((unsigned char)s[i])) i++, digits++;
    if (s[i] == '.') {
        i++;
        while (isdigit((unsigned char)s[i])) i++, digits++;
    }
    if (digits && (s[i] == 'e' || s[i] == 'E')) {
        size_t j = i + 1;
        if (s[j] == '+' || s[j] == '-') j++;
        if (isdigit((unsigned char)s[j])) {
            while (isdigit((unsigned char)s[j])) j++;
            i = j;
        }
    }
    if (!digits || s[i])
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d: seconds '%s' is not a number", path, line, node, tok);
    errno = 0;
    double v = strtod(tok, NULL);
    if (!isfinite(v))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d: seconds '%s' is not finite", path, line, node, tok);
    if (neg && v != 0)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d: seconds '%s' is negative", path, line, node, tok);
    *out = neg ? 0.0 : v;
    return RM_OK;
}

int rm_cost_file_create(rm_cost_file **out, int n, const char *model, int batch, const char *device, rm_err *e)
{
    *out = NULL;
    if (n < 1 || n > MAX_NODES) return rm_errorf(e, RM_ERR_INVALID, "cost file: node count %d out of range", n);
    if (!model || !is_token(model) || strlen(model) >= RM_NAME_LEN)
        return rm_errorf(e, RM_ERR_INVALID, "cost file: model name '%s' must be one word of at most %d characters",
                         model ? model : "", RM_NAME_LEN - 1);
    if (!device || !is_token(device) || strlen(device) >= RM_NAME_LEN)
        return rm_errorf(e, RM_ERR_INVALID, "cost file: device '%s' must be one word", device ? device : "");
    if (batch < 1) return rm_errorf(e, RM_ERR_INVALID, "cost file: batch %d must be at least 1", batch);
    rm_cost_file *c = calloc(1, sizeof *c);
    if (c) c->nodes = calloc((size_t)n, sizeof *c->nodes);
    if (!c || !c->nodes) {
        free(c);
        return rm_errorf(e, RM_ERR_NOMEM, "cost file: out of memory for %d nodes", n);
    }
    c->n = n;
    c->batch = batch;
    snprintf(c->model, sizeof c->model, "%s", model);
    snprintf(c->device, sizeof c->device, "%s", device);
    *out = c;
    return RM_OK;
}

void rm_cost_file_free(rm_cost_file *c)
{
    if (!c) return;
    free(c->nodes);
    free(c);
}

void rm_cost_model_name(char *buf, size_t len, const char *cfg_path)
{
    const char *base = strrchr(cfg_path, '/');
    base = base ? base + 1 : cfg_path;
    size_t n = strlen(base);
    if (n > 4 && !strcmp(base + n - 4, ".cfg")) n -= 4;
    snprintf(buf, len, "%.*s", (int)n, base);
    /* The name is one field of the header: spaces would split it. */
    for (char *s = buf; *s; s++)
        if (isspace((unsigned char)*s) || *s == '#' || !isprint((unsigned char)*s)) *s = '_';
}

#define HEADER_FORM "'remat-costs 1 MODEL BATCH DEVICE NODES seconds'"

static int parse_header(rm_cost_file **out, char **f, int nf, long long file_size, const char *path, int line,
                        rm_err *e)
{
    if (strcmp(f[0], "remat-costs"))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: expected the header " HEADER_FORM ", found '%s'", path, line, f[0]);
    if (nf < 7)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: the header has %d fields; expected 7: " HEADER_FORM, path, line, nf);
    if (nf > 7) return rm_errorf(e, RM_ERR_PARSE, "%s:%d: trailing junk '%s' after the header", path, line, f[7]);
    int version, batch, n;
    if (parse_int(&version, f[1], 0, 1000000) || version != RM_COST_FILE_VERSION)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: unsupported cost file version '%s' (this remat reads version %d)",
                         path, line, f[1], RM_COST_FILE_VERSION);
    if (strlen(f[2]) >= RM_NAME_LEN)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: model name '%.32s...' is longer than %d characters", path, line, f[2],
                         RM_NAME_LEN - 1);
    if (parse_int(&batch, f[3], 1, RM_MAX_BATCH))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: batch '%s' is not an integer from 1 to %d", path, line, f[3],
                         RM_MAX_BATCH);
    if (strlen(f[4]) >= RM_NAME_LEN)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: device '%.32s...' is longer than %d characters", path, line, f[4],
                         RM_NAME_LEN - 1);
    if (parse_int(&n, f[5], 1, MAX_NODES))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node count '%s' is not an integer from 1 to %d", path, line, f[5],
                         MAX_NODES);
    if (file_size >= 0 && (long long)n > file_size / MIN_NODE_LINE)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: the header declares %d nodes but the file has only %lld bytes", path,
                         line, n, file_size);
    if (strcmp(f[6], "seconds"))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: unknown unit '%s' (cost files are in seconds)", path, line, f[6]);
    int rc = rm_cost_file_create(out, n, f[2], batch, f[4], e);
    /* A model or device word the writer could not have written: a parse error of this file. */
    if (rc == RM_ERR_INVALID) rc = rm_text_error_at(e, path, line);
    return rc;
}

static int parse_node(rm_cost_file *c, int expect, char **f, int nf, const char *path, int line, rm_err *e)
{
    int idx;
    if (parse_int(&idx, f[0], 0, INT32_MAX))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node index '%s' is not a non-negative integer", path, line, f[0]);
    if (idx < expect)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d is listed twice (first at line %d)", path, line, idx,
                         c->nodes[idx].line);
    if (idx >= c->n)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d is outside 0..%d (the header declares %d nodes)", path, line,
                         idx, c->n - 1, c->n);
    if (idx != expect)
        return rm_errorf(e, RM_ERR_PARSE,
                         "%s:%d: node %d is missing: this line gives node %d (nodes are listed 0..%d "
                         "in order)",
                         path, line, expect, idx, c->n - 1);
    if (nf < 3)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d has %d field%s; expected 3: index name seconds", path, line,
                         idx, nf, nf == 1 ? "" : "s");
    if (nf > 3) return rm_errorf(e, RM_ERR_PARSE, "%s:%d: trailing junk '%s' after node %d", path, line, f[3], idx);
    if (strlen(f[1]) >= RM_NAME_LEN)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: name '%.32s...' is longer than %d characters", path, line, f[1],
                         RM_NAME_LEN - 1);
    rm_cost_entry *en = &c->nodes[idx];
    int rc = parse_seconds(&en->seconds, f[2], path, line, idx, e);
    if (rc) return rc;
    if (strcmp(f[1], "-")) snprintf(en->name, sizeof en->name, "%s", f[1]);
    en->line = line;
    return RM_OK;
}

int rm_cost_file_read(rm_cost_file **out, const char *path, rm_err *e)
{
    *out = NULL;
    FILE *fp = rm_text_open(path, "cost file", e);
    if (!fp) return RM_ERR_IO;
    struct stat st;
    long long file_size = fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
    rm_cost_file *c = NULL;
    char *buf = NULL;
    size_t cap = 0;
    int line = 0, seen = 0, rc = RM_OK;
    double sum = 0; /* the seconds so far, bounded as a problem's costs are */
    char *f[MAX_FIELDS];
    ssize_t len;
    while ((errno = 0, len = rm_text_getline(&buf, &cap, fp)) >= 0) {
        line++;
        size_t bom = line == 1 ? rm_text_bom(buf, (size_t)len) : 0;
        char *text = buf + bom;
        if (strlen(text) != (size_t)len - bom) {
            rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: a NUL byte inside the line (not a text file?)", path, line);
            break;
        }
        int nf = rm_text_fields(text, f, MAX_FIELDS);
        if (nf == 0) continue;
        if (!c) {
            if ((rc = parse_header(&c, f, nf, file_size, path, line, e))) break;
            c->header_line = line;
            continue;
        }
        if (seen == c->n) {
            int idx;
            if (!parse_int(&idx, f[0], 0, c->n - 1))
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d is listed twice (first at line %d)", path, line, idx,
                               c->nodes[idx].line);
            else
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: more node lines than the %d the header (line %d) declares",
                               path, line, c->n, c->header_line);
            break;
        }
        if ((rc = parse_node(c, seen, f, nf, path, line, e))) break;
        const rm_cost_entry *en = &c->nodes[seen];
        if (rm_problem_cost_add(&sum, en->seconds, c->n, seen, en->name[0] ? en->name : "-", e)) {
            rc = rm_text_error_at(e, path, line);
            break;
        }
        seen++;
    }
    int read_errno = errno; /* EISDIR for a folder */
    if (!rc && read_errno == ENOMEM)
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s:%d: out of memory reading a line", path, line + 1);
    else if (!rc && read_errno == EOVERFLOW)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: a line longer than %zu bytes (not a cost file?)", path, line + 1,
                       RM_TEXT_MAX_LINE);
    else if (!rc && ferror(fp))
        rc = rm_errorf(e, RM_ERR_IO, "%s: read error: %s", path,
                       read_errno ? strerror(read_errno) : "the stream failed");
    if (!rc && !c)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: empty file: expected the header " HEADER_FORM, path, line + 1);
    if (!rc && seen != c->n)
        rc = rm_errorf(e, RM_ERR_PARSE,
                       "%s:%d: end of file after %d node lines; the header (line %d) declares %d: node %d is missing",
                       path, line + 1, seen, c->header_line, c->n, seen);
    free(buf);
    fclose(fp);
    if (rc) {
        rm_cost_file_free(c);
        return rc;
    }
    snprintf(c->path, sizeof c->path, "%s", path);
    *out = c;
    return RM_OK;
}

int rm_cost_file_write(const rm_cost_file *c, const char *path, const char *comment, rm_err *e)
{
    if (!is_token(c->model) || !is_token(c->device) || c->batch < 1 || c->n < 1)
        return rm_errorf(e, RM_ERR_INVALID, "%s: malformed cost file (model '%s', device '%s', batch %d, %d nodes)",
                         path, c->model, c->device, c->batch, c->n);
    double sum = 0; /* a file written must read back: its seconds bounded as the reader bounds them */
    for (int i = 0; i < c->n; i++) {
        const rm_cost_entry *en = &c->nodes[i];
        if ((en->name[0] && (!is_token(en->name) || !strcmp(en->name, "-"))))
            return rm_errorf(e, RM_ERR_INVALID, "%s: node %d name '%s' cannot be written (a space, '#', or '-')", path,
                             i, en->name);
        if (!isfinite(en->seconds) || en->seconds < 0)
            return rm_errorf(e, RM_ERR_INVALID, "%s: node %d ('%s') has cost %g: not a finite number >= 0", path, i,
                             en->name, en->seconds);
        if (rm_problem_cost_add(&sum, en->seconds, c->n, i, en->name[0] ? en->name : "-", e))
            return rm_err_context(e, "%s", path);
    }
    rm_atomic_file af;
    int rc = rm_atomic_open(&af, path, e);
    if (rc) return rc;
    FILE *fp = af.f;
    fprintf(fp, "# remat profiled costs (format: docs/cost-format.md)\n");
    fprintf(fp, "# remat-costs VERSION MODEL BATCH DEVICE NODES UNIT\n");
    fprintf(fp, "remat-costs %d %s %d %s %d seconds\n", RM_COST_FILE_VERSION, c->model, c->batch, c->device, c->n);
    if (comment) {
        /* Each line of the comment as a '#' line: the reader must skip it all. */
        const char *s = comment;
        while (*s) {
            const char *nl = strchr(s, '\n');
            int l = nl ? (int)(nl - s) : (int)strlen(s);
            fprintf(fp, "# %.*s\n", l, s);
            s += l + (nl != NULL);
        }
    }
    fprintf(fp, "# index name seconds\n");
    for (int i = 0; i < c->n; i++)
        fprintf(fp, "%d %s %.17g\n", i, c->nodes[i].name[0] ? c->nodes[i].name : "-", c->nodes[i].seconds);
    return rm_atomic_commit(&af, e);
}

/* "FILE:LINE" of a node (or of the header) for messages. */
static const char *where(char *buf, size_t len, const rm_cost_file *c, int line)
{
    snprintf(buf, len, "%s:%d", c->path[0] ? c->path : "cost file", line);
    return buf;
}

int rm_cost_file_apply(rm_problem *p, const rm_cost_file *c, const char *model, int batch, rm_cost_batch mode,
                       rm_err *e)
{
    char w[300];
    if (model && strcmp(model, c->model))
        return rm_errorf(e, RM_ERR_INVALID,
                         "%s: these costs were profiled for model '%s', not '%s' (profile this model: remat profile "
                         "--model ... --batch N)",
                         where(w, sizeof w, c, c->header_line), c->model, model);
    if (p->n != c->n)
        return rm_errorf(e, RM_ERR_INVALID,
                         "%s: the file has costs for %d nodes but the problem has %d (a cost file of another model or "
                         "version of it?)",
                         where(w, sizeof w, c, c->header_line), c->n, p->n);
    double scale = 1.0, sum = 0; /* sum: the costs so far, bounded as every problem's are */
    if (batch > 0 && batch != c->batch) {
        if (mode != RM_COST_SCALE_BATCH)
            return rm_errorf(e, RM_ERR_INVALID,
                             "%s: these costs were profiled at batch %d, not %d; kernel times do not scale exactly "
                             "with the batch, so profile at this batch (remat profile --batch %d)",
                             where(w, sizeof w, c, c->header_line), c->batch, batch, batch);
        scale = (double)batch / (double)c->batch;
    }
    for (int i = 0; i < p->n; i++) {
        const rm_cost_entry *en = &c->nodes[i];
        if (strcmp(en->name, p->nodes[i].name))
            return rm_errorf(e, RM_ERR_INVALID,
                             "%s: node %d is '%s' in the cost file but '%s' in the problem (a cost file of another "
                             "model?)",
                             where(w, sizeof w, c, en->line), i, en->name[0] ? en->name : "-",
                             p->nodes[i].name[0] ? p->nodes[i].name : "-");
        if (!isfinite(en->seconds) || en->seconds < 0)
            return rm_errorf(e, RM_ERR_INVALID, "%s: node %d ('%s') has cost %g: not a finite number >= 0",
                             where(w, sizeof w, c, en->line), i, en->name, en->seconds);
        if (rm_problem_cost_add(&sum, en->seconds * scale, p->n, i, en->name[0] ? en->name : "-", e)) {
            if (scale == 1.0) return rm_err_context(e, "%s", where(w, sizeof w, c, en->line));
            return rm_err_context(e, "%s: scaled to batch %d", where(w, sizeof w, c, en->line), batch);
        }
    }
    for (int i = 0; i < p->n; i++) p->nodes[i].cost = c->nodes[i].seconds * scale;
    return RM_OK;
}
