/* The rematerialization problem: built from a traced training graph, or read
 * from / written to the plain-text problem format of docs/problem-format.md.
 * Everything downstream (simulator, baselines, MILP) trusts what
 * rm_problem_validate checks, so every constructor ends with it. */
#include "problem.h"
#include "atomic_file.h"
#include "problem_json.h"
#include "text_fields.h"
#include "utf8.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

int rm_problem_create(rm_problem **out, int n, rm_err *e)
{
    *out = NULL;
    if (n < 0) return rm_errorf(e, RM_ERR_INVALID, "problem: negative node count %d", n);
    rm_problem *p = calloc(1, sizeof *p);
    if (!p) return rm_errorf(e, RM_ERR_NOMEM, "problem: out of memory");
    p->n = n;
    if (n > 0) {
        p->nodes = calloc((size_t)n, sizeof *p->nodes);
        if (!p->nodes) {
            free(p);
            return rm_errorf(e, RM_ERR_NOMEM, "problem: out of memory for %d nodes", n);
        }
    }
    *out = p;
    return RM_OK;
}

int rm_problem_set_deps(rm_problem *p, int i, const int *deps, int ndeps, rm_err *e)
{
    if (i < 0 || i >= p->n) return rm_errorf(e, RM_ERR_INVALID, "problem: node %d out of range", i);
    rm_problem_node *nd = &p->nodes[i];
    int *copy = NULL;
    if (ndeps > 0) {
        copy = malloc((size_t)ndeps * sizeof *copy);
        if (!copy) return rm_errorf(e, RM_ERR_NOMEM, "problem: out of memory");
        memcpy(copy, deps, (size_t)ndeps * sizeof *copy);
    }
    free(nd->deps);
    nd->deps = copy;
    nd->ndeps = ndeps;
    return RM_OK;
}

void rm_problem_free(rm_problem *p)
{
    if (!p) return;
    for (int i = 0; i < p->n; i++) free(p->nodes[i].deps);
    free(p->nodes);
    free(p);
}

size_t rm_problem_activation_budget(const rm_problem *p)
{
    if (p->budget == 0) return SIZE_MAX;
    return p->budget > p->fixed_bytes ? p->budget - p->fixed_bytes : 0;
}

size_t rm_problem_peak_lower_bound(const rm_problem *p)
{
    return rm_problem_peak_lower_bound_at(p, NULL);
}

size_t rm_problem_peak_lower_bound_at(const rm_problem *p, int *node)
{
    size_t best = 0;
    int at = 0;
    for (int k = 0; k < p->n; k++) {
        size_t need = p->nodes[k].bytes;
        for (int d = 0; d < p->nodes[k].ndeps; d++) need += p->nodes[p->nodes[k].deps[d]].bytes;
        if (need > best) best = need, at = k;
    }
    if (node) *node = at;
    return best;
}

double rm_problem_base_cost(const rm_problem *p)
{
    double c = 0;
    for (int i = 0; i < p->n; i++) c += p->nodes[i].cost;
    return c;
}

double rm_overhead_pct(double cost, double base)
{
    return base > 0 ? 100.0 * (cost / base - 1) : 0.0;
}

int rm_problem_bound_over_cap(const rm_problem *p, double bound)
{
    double cap = p->max_cost;
    return cap > 0 && bound > cap && bound - cap > 1e-9 * fmax(1.0, fmax(fabs(bound), fabs(cap)));
}

static const char *node_name(const rm_problem *p, int i)
{
    return p->nodes[i].name[0] ? p->nodes[i].name : "?";
}

double rm_problem_max_cost_sum(int n)
{
    return DBL_MAX / (n > 1 ? n : 1);
}

int rm_problem_sums_add(rm_problem_sums *s, const rm_problem *p, int i, rm_err *e)
{
    const rm_problem_node *nd = &p->nodes[i];
    /* Checked before adding: both terms are below the bound, so the sum cannot wrap. */
    if (s->bytes > RM_PROBLEM_MAX_BYTES || nd->bytes > RM_PROBLEM_MAX_BYTES - s->bytes)
        return rm_errorf(e, RM_ERR_INVALID,
                         "the fixed bytes and the outputs up to node %d (%s) add up to more than 2^62 bytes (4 EiB), "
                         "more than any device holds",
                         i, node_name(p, i));
    s->bytes += nd->bytes;
    return rm_problem_cost_add(&s->cost, nd->cost, p->n, i, node_name(p, i), e);
}

int rm_problem_cost_add(double *sum, double cost, int n, int i, const char *name, rm_err *e)
{
    double limit = rm_problem_max_cost_sum(n);
    if (!(cost <= limit - *sum))
        return rm_errorf(e, RM_ERR_INVALID,
                         "the costs up to node %d (%s) add up to more than %.6g, the largest finite number over the "
                         "%d nodes: a schedule may compute each node once per stage, and its cost must stay finite",
                         i, name, limit, n);
    *sum += cost;
    return RM_OK;
}

int rm_problem_budget_in_range(size_t budget, rm_err *e)
{
    if (budget <= RM_PROBLEM_MAX_BYTES) return RM_OK;
    return rm_errorf(e, RM_ERR_INVALID,
                     "the budget %zu is more than 2^62 bytes (4 EiB), more than any problem holds (0 means unlimited)",
                     budget);
}

int rm_problem_validate(const rm_problem *p, rm_err *e)
{
    if (p->n < 1) return rm_errorf(e, RM_ERR_INVALID, "problem: no nodes");
    if (!(p->max_cost >= 0) || !isfinite(p->max_cost))
        return rm_errorf(e, RM_ERR_INVALID, "problem: the compute cap %g must be finite and >= 0", p->max_cost);
    if (rm_problem_budget_in_range(p->budget, e)) return rm_err_context(e, "problem");
    rm_problem_sums sums = {p->fixed_bytes, 0};
    for (int i = 0; i < p->n; i++) {
        const rm_problem_node *nd = &p->nodes[i];
        if (!(nd->cost >= 0) || !isfinite(nd->cost))
            return rm_errorf(e, RM_ERR_INVALID, "problem: node %d (%s) has cost %g; costs must be finite and >= 0", i,
                             node_name(p, i), nd->cost);
        if (rm_problem_sums_add(&sums, p, i, e)) return rm_err_context(e, "problem");
        if (nd->tag != RM_TAG_FORWARD && nd->tag != RM_TAG_LOSS && nd->tag != RM_TAG_BACKWARD)
            return rm_errorf(e, RM_ERR_INVALID, "problem: node %d (%s) has an unknown tag %d", i, node_name(p, i),
                             (int)nd->tag);
        for (int k = 0; k < nd->ndeps; k++) {
            int d = nd->deps[k];
            if (d < 0 || d >= i)
                return rm_errorf(e, RM_ERR_INVALID, "problem: node %d (%s) depends on node %d, which is not earlier", i,
                                 node_name(p, i), d);
            for (int k2 = 0; k2 < k; k2++)
                if (nd->deps[k2] == d)
                    return rm_errorf(e, RM_ERR_INVALID, "problem: node %d (%s) lists dependency %d twice", i,
                                     node_name(p, i), d);
        }
    }
    return RM_OK;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int rm_problem_from_graph(rm_problem **out, const rm_graph *g, rm_err *e)
{
    *out = NULL;
    int rc = rm_graph_validate(g, e);
    if (rc) return rc;
    rm_problem *p;
    if ((rc = rm_problem_create(&p, g->n, e))) return rc;
    p->fixed_bytes = 0; /* a graph holds activations only; the caller adds its fixed memory */
    for (int i = 0; i < g->n; i++) {
        const rm_graph_node *gn = &g->nodes[i];
        rm_problem_node *nd = &p->nodes[i];
        memcpy(nd->name, gn->name, RM_NAME_LEN);
        nd->name[RM_NAME_LEN - 1] = '\0';
        nd->tag = gn->tag;
        nd->cost = gn->flops;
        nd->bytes = gn->bytes;
        if ((rc = rm_problem_set_deps(p, i, gn->deps, gn->ndeps, e))) {
            rm_problem_free(p);
            return rc;
        }
        /* A layer may read the same tensor twice (x + x); the memory model
         * needs each value once, and sorted deps make the order canonical. */
        if (nd->ndeps > 1) qsort(nd->deps, (size_t)nd->ndeps, sizeof(int), cmp_int);
        int m = 0;
        for (int k = 0; k < nd->ndeps; k++)
            if (m == 0 || nd->deps[m - 1] != nd->deps[k]) nd->deps[m++] = nd->deps[k];
        nd->ndeps = m;
    }
    if ((rc = rm_problem_validate(p, e))) {
        rm_problem_free(p);
        return rc;
    }
    *out = p;
    return RM_OK;
}

/* ---- the problem file ---------------------------------------------------- */

static const char *tag_name(rm_node_tag t)
{
    switch (t) {
    case RM_TAG_FORWARD:
        return "forward";
    case RM_TAG_LOSS:
        return "loss";
    case RM_TAG_BACKWARD:
        return "backward";
    }
    return "?";
}

#define MAX_FIELDS 8

/* Parses a non-negative integer that must fill the whole token. */
static int parse_size(size_t *out, const char *tok, const char *what, const char *path, int line, rm_err *e)
{
    if (tok[0] == '-') return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s '%s' is negative", path, line, what, tok);
    if (!isdigit((unsigned char)tok[0]))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s '%s' is not a non-negative integer", path, line, what, tok);
    errno = 0;
    char *end;
    unsigned long long v = strtoull(tok, &end, 10);
    if (*end) return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s '%s' is not a non-negative integer", path, line, what, tok);
    if (errno == ERANGE || v > SIZE_MAX)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s '%s' is too large", path, line, what, tok);
    *out = (size_t)v;
    return RM_OK;
}

static int parse_index(int *out, const char *tok, const char *what, const char *path, int line, rm_err *e)
{
    char *end;
    errno = 0;
    long v = strtol(tok, &end, 10);
    if (!*tok || *end || !(isdigit((unsigned char)tok[0]) || tok[0] == '-'))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s '%s' is not an integer", path, line, what, tok);
    if (errno == ERANGE || v > INT32_MAX || v < INT32_MIN)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s '%s' is out of range", path, line, what, tok);
    *out = (int)v;
    return RM_OK;
}

static int parse_cost(double *out, const char *tok, const char *path, int line, rm_err *e)
{
    char *end;
    errno = 0;
    double v = strtod(tok, &end);
    if (end == tok || *end || !isfinite(v))
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: cost '%s' is not a finite number", path, line, tok);
    if (v < 0) return rm_errorf(e, RM_ERR_PARSE, "%s:%d: cost '%s' is negative", path, line, tok);
    *out = v;
    return RM_OK;
}

/* "-" or a comma-separated list of earlier node indices. */
static int parse_deps(rm_problem *p, int i, char *tok, const char *path, int line, rm_err *e)
{
    if (strcmp(tok, "-") == 0) return RM_OK;
    int cap = 1;
    for (const char *c = tok; *c; c++) cap += *c == ',';
    int *deps = malloc((size_t)cap * sizeof *deps);
    if (!deps) return rm_errorf(e, RM_ERR_NOMEM, "%s:%d: out of memory", path, line);
    int nd = 0, rc = RM_OK;
    char *save = NULL;
    /* strtok_r cuts tok at the commas; the message quotes the whole list. */
    char list[64];
    size_t toklen = strlen(tok);
    snprintf(list, sizeof list, "%s", tok);
    for (char *s = tok;; s = NULL) {
        char *d = strtok_r(s, ",", &save);
        if (!d) break;
        int v;
        if ((rc = parse_index(&v, d, "dependency", path, line, e))) break;
        if (v == i) {
            rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d depends on itself", path, line, i);
            break;
        }
        if (v < 0 || v >= p->n) {
            rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d depends on node %d, outside 0..%d", path, line, i, v,
                           p->n - 1);
            break;
        }
        if (v > i) {
            rc = rm_errorf(e, RM_ERR_PARSE,
                           "%s:%d: node %d depends on later node %d (a forward reference or a cycle: nodes must "
                           "be listed in topological order)",
                           path, line, i, v);
            break;
        }
        for (int k = 0; k < nd && !rc; k++)
            if (deps[k] == v)
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d lists dependency %d twice", path, line, i, v);
        if (rc) break;
        deps[nd++] = v;
    }
    if (!rc && nd != cap)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: dependency list '%s%s' has an empty entry", path, line, list,
                       toklen >= sizeof list ? "..." : "");
    if (!rc) {
        qsort(deps, (size_t)nd, sizeof *deps, cmp_int);
        p->nodes[i].deps = deps;
        p->nodes[i].ndeps = nd;
    } else {
        free(deps);
    }
    return rc;
}

static int parse_node_line(rm_problem *p, int expect, int *node_line, char **f, int nf, const char *path, int line,
                           rm_err *e)
{
    int idx, rc;
    if ((rc = parse_index(&idx, f[0], "node index", path, line, e))) return rc;
    if (idx >= 0 && idx < expect)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d is defined twice (first at line %d)", path, line, idx,
                         node_line[idx]);
    if (idx != expect)
        return rm_errorf(e, RM_ERR_PARSE,
                         "%s:%d: expected node %d here, found node %s (nodes are listed 0..%d in order)", path, line,
                         expect, f[0], p->n - 1);
    if (nf < 6)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d has %d fields; expected 6: index name tag cost bytes deps",
                         path, line, idx, nf);
    if (nf > 6) return rm_errorf(e, RM_ERR_PARSE, "%s:%d: trailing junk '%s' after node %d", path, line, f[6], idx);
    rm_problem_node *nd = &p->nodes[idx];
    if (strlen(f[1]) >= RM_NAME_LEN)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: name '%.32s...' is longer than %d characters", path, line, f[1],
                         RM_NAME_LEN - 1);
    if (strcmp(f[1], "-") != 0) snprintf(nd->name, sizeof nd->name, "%s", f[1]);
    if (strcmp(f[2], "forward") == 0)
        nd->tag = RM_TAG_FORWARD;
    else if (strcmp(f[2], "loss") == 0)
        nd->tag = RM_TAG_LOSS;
    else if (strcmp(f[2], "backward") == 0)
        nd->tag = RM_TAG_BACKWARD;
    else
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: unknown tag '%s' (forward, loss or backward)", path, line, f[2]);
    if ((rc = parse_cost(&nd->cost, f[3], path, line, e))) return rc;
    if ((rc = parse_size(&nd->bytes, f[4], "bytes", path, line, e))) return rc;
    if ((rc = parse_deps(p, idx, f[5], path, line, e))) return rc;
    node_line[idx] = line;
    return RM_OK;
}

/* The shortest node line, "0 - loss 0 0 -": six fields of at least 1, 1, 4,
 * 1, 1 and 1 characters and five separators. */
#define MIN_NODE_LINE 13

static int parse_header(rm_problem **out, char **f, int nf, long long file_size, const char *path, int line, rm_err *e)
{
    if (strcmp(f[0], "problem") != 0)
        return rm_errorf(e, RM_ERR_PARSE,
                         "%s:%d: expected the header 'problem NODES FIXED_BYTES [BUDGET]', found '%s'%s", path, line,
                         f[0], f[0][0] == '{' ? " (node-link JSON is read from a file, not from a pipe)" : "");
    if (nf < 3) return rm_errorf(e, RM_ERR_PARSE, "%s:%d: header needs NODES and FIXED_BYTES", path, line);
    if (nf > 4) return rm_errorf(e, RM_ERR_PARSE, "%s:%d: trailing junk '%s' after the header", path, line, f[4]);
    size_t n, fixed, budget = 0;
    int rc;
    if ((rc = parse_size(&n, f[1], "node count", path, line, e))) return rc;
    if (n < 1 || n > RM_PROBLEM_MAX_NODES)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: node count %zu must be between 1 and %d", path, line, n,
                         RM_PROBLEM_MAX_NODES);
    if ((rc = parse_size(&fixed, f[2], "fixed bytes", path, line, e))) return rc;
    if (nf == 4 && (rc = parse_size(&budget, f[3], "budget", path, line, e))) return rc;
    if (rm_problem_budget_in_range(budget, e)) return rm_text_error_at(e, path, line);
    /* The nodes are allocated from the header's count, so a short file must
     * not claim millions of them (found by fuzzing: a 20-byte file made the
     * reader allocate a gigabyte before seeing that the lines were missing).
     * Small counts are left to the end-of-file check, whose message says how
     * many node lines were found. */
    if (n > 4096 && file_size >= 0 && n > (unsigned long long)file_size / MIN_NODE_LINE)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: the header declares %zu nodes but the file has only %lld bytes", path,
                         line, n, file_size);
    if ((rc = rm_problem_create(out, (int)n, e))) return rc;
    (*out)->fixed_bytes = fixed;
    (*out)->budget = budget;
    return RM_OK;
}

/* A carriage return that does not end the line: the line ends of a file
 * saved with CR alone (classic Mac OS), which would otherwise read as one
 * line, a comment to its end, and be called empty. */
static int check_line_ends(const char *text, size_t n, const char *path, int line, rm_err *e)
{
    const char *cr = memchr(text, '\r', n);
    if (!cr || (size_t)(cr - text) + 1 == n || cr[1] == '\n') return RM_OK;
    return rm_errorf(e, RM_ERR_PARSE,
                     "%s:%d: a carriage return (CR) that does not end the line: line ends must be LF or CR LF; "
                     "CR alone (classic Mac OS) is not supported",
                     path, line);
}

/* Every field of a line is printable UTF-8 (base/utf8.h): the node names,
 * which tables, figures and messages print, and every other field, which a
 * message may quote. The fields point into buf, the line read at offset in
 * the file. */
static int check_fields(char **f, int nf, const char *buf, size_t offset, int nodes, const char *path, int line,
                        rm_err *e)
{
    for (int k = 0; k < nf && k <= MAX_FIELDS; k++) {
        size_t at;
        char why[160];
        if (rm_name_check(f[k], strlen(f[k]), &at, why, sizeof why) == 0) continue;
        size_t col = (size_t)(f[k] - buf) + at;
        return rm_errorf(e, RM_ERR_PARSE,
                         "%s:%d:%zu (byte offset %zu): %s has %s; names and fields must be printable UTF-8, "
                         "without control characters or bidi overrides",
                         path, line, col + 1, offset + col, nodes && k == 1 ? "the node name" : "a field", why);
    }
    return RM_OK;
}

/* 1 when the first byte that is not JSON white space (after a byte-order
 * mark) is '{': a node-link JSON problem. A text problem starts with '#' or
 * "problem", so the two never overlap. The stream is rewound; one that
 * cannot be (a pipe) is read as text. */
static int looks_like_json(FILE *fp)
{
    if (fseek(fp, 0, SEEK_SET) != 0) return 0;
    char head[3];
    size_t got = fread(head, 1, sizeof head, fp);
    if (fseek(fp, (long)rm_text_bom(head, got), SEEK_SET) != 0) return 0;
    int c;
    while ((c = getc(fp)) == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    rewind(fp);
    return c == '{';
}

int rm_problem_read(rm_problem **out, const char *path, rm_err *e)
{
    *out = NULL;
    FILE *fp = rm_text_open(path, "problem file", e);
    if (!fp) return RM_ERR_IO;
    if (looks_like_json(fp)) {
        int rc = rm_problem_read_json(out, fp, path, e);
        fclose(fp);
        return rc;
    }
    /* -1 when unknown (a pipe): the node count is then bounded only by the header limit. */
    struct stat st;
    long long file_size = fstat(fileno(fp), &st) == 0 && S_ISREG(st.st_mode) ? (long long)st.st_size : -1;
    rm_problem *p = NULL;
    int *node_line = NULL;
    char *buf = NULL;
    size_t cap = 0;
    int line = 0, header_line = 0, nodes_seen = 0, rc = RM_OK;
    char *f[MAX_FIELDS + 1];
    /* errno tells end of file (0) from a failed read, a line that could not
     * be allocated (ENOMEM) or one too long (EOVERFLOW): all return -1. */
    rm_problem_sums sums = {0, 0};
    ssize_t len;
    size_t offset = 0; /* of the line in the file, for messages */
    for (; (errno = 0, len = rm_text_getline(&buf, &cap, fp)) >= 0; offset += (size_t)len) {
        line++;
        size_t bom = line == 1 ? rm_text_bom(buf, (size_t)len) : 0;
        char *text = buf + bom;
        /* The fields end at a NUL: what follows it would be dropped unread. */
        if (strlen(text) != (size_t)len - bom) {
            rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: a NUL byte inside the line (not a text file?)", path, line);
            break;
        }
        if ((rc = check_line_ends(text, (size_t)len - bom, path, line, e))) break;
        int nf = rm_text_fields(text, f, MAX_FIELDS + 1);
        if (nf == 0) continue;
        if ((rc = check_fields(f, nf, buf, offset, p != NULL, path, line, e))) break;
        if (!p) {
            if ((rc = parse_header(&p, f, nf, file_size, path, line, e))) break;
            header_line = line;
            sums.bytes = p->fixed_bytes;
            node_line = calloc((size_t)p->n, sizeof *node_line);
            if (!node_line) {
                rc = rm_errorf(e, RM_ERR_NOMEM, "%s: out of memory", path);
                break;
            }
            continue;
        }
        if (nodes_seen == p->n) {
            int idx;
            if (parse_index(&idx, f[0], "node index", path, line, NULL) == RM_OK && idx >= 0 && idx < p->n)
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: node %d is defined twice (first at line %d)", path, line, idx,
                               node_line[idx]);
            else
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: more node lines than the %d declared at line %d", path, line,
                               p->n, header_line);
            break;
        }
        if ((rc = parse_node_line(p, nodes_seen, node_line, f, nf, path, line, e))) break;
        /* The bounds rm_problem_validate checks, here with the line. */
        if ((rc = rm_problem_sums_add(&sums, p, nodes_seen, e))) {
            rc = rm_text_error_at(e, path, line);
            break;
        }
        nodes_seen++;
    }
    int read_errno = errno;
    if (!rc && read_errno == ENOMEM)
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s:%d: out of memory reading a line", path, line + 1);
    else if (!rc && read_errno == EOVERFLOW)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: a line longer than %zu bytes (not a problem file?)", path, line + 1,
                       RM_TEXT_MAX_LINE);
    else if (!rc && (ferror(fp) || read_errno))
        rc = rm_errorf(e, RM_ERR_IO, "%s: read error: %s", path,
                       read_errno ? strerror(read_errno) : "the stream failed");
    if (!rc && !p)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: empty file: expected the header 'problem NODES FIXED_BYTES [BUDGET]'",
                       path, line + 1);
    if (!rc && nodes_seen != p->n)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: end of file after %d node lines; the header (line %d) declares %d",
                       path, line + 1, nodes_seen, header_line, p->n);
    if (!rc && (rc = rm_problem_validate(p, e))) rm_err_context(e, "%s", path);
    free(buf);
    free(node_line);
    fclose(fp);
    if (rc) {
        rm_problem_free(p);
        return rc;
    }
    *out = p;
    return RM_OK;
}

int rm_problem_write(const rm_problem *p, const char *path, rm_err *e)
{
    int rc = rm_problem_validate(p, e);
    if (rc) return rc;
    for (int i = 0; i < p->n; i++) {
        const char *nm = p->nodes[i].name;
        char why[160], shown[RM_NAME_SHOW_LEN];
        size_t at;
        /* What the reader refuses is not written (a name from an ONNX file
         * may hold anything): the file would not read back. */
        if (rm_name_check(nm, strlen(nm), &at, why, sizeof why))
            return rm_errorf(e, RM_ERR_INVALID, "%s: node %d name '%s' has %s at byte %zu", path, i,
                             rm_name_show(shown, sizeof shown, nm), why, at);
        for (const char *c = nm; *c; c++)
            if (*c == ' ' || *c == '#')
                return rm_errorf(e, RM_ERR_INVALID, "%s: node %d name '%s' has a %s, which the format cannot hold",
                                 path, i, nm, *c == ' ' ? "space" : "'#'");
        if (strcmp(nm, "-") == 0)
            return rm_errorf(e, RM_ERR_INVALID, "%s: node %d is named '-', which the format reserves for no name", path,
                             i);
    }
    /* Written aside and renamed into place (base/atomic_file.h): a run
     * killed mid-write, or a full disk, leaves the previous file intact. */
    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, path, e))) return rc;
    FILE *fp = af.f;
    fprintf(fp, "# remat rematerialization problem (format: docs/problem-format.md)\n");
    fprintf(fp, "# problem NODES FIXED_BYTES BUDGET (budget 0 = unlimited)\n");
    fprintf(fp, "problem %d %zu %zu\n", p->n, p->fixed_bytes, p->budget);
    fprintf(fp, "# index name tag cost bytes deps\n");
    for (int i = 0; i < p->n; i++) {
        const rm_problem_node *nd = &p->nodes[i];
        /* %.17g: costs round-trip exactly. */
        fprintf(fp, "%d %s %s %.17g %zu ", i, nd->name[0] ? nd->name : "-", tag_name(nd->tag), nd->cost, nd->bytes);
        if (nd->ndeps == 0) fputc('-', fp);
        for (int k = 0; k < nd->ndeps; k++) fprintf(fp, k ? ",%d" : "%d", nd->deps[k]);
        fputc('\n', fp);
    }
    return rm_atomic_commit(&af, e);
}
