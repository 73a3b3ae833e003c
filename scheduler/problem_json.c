/* Node-link JSON problems (docs/problem-format.md, "Node-link JSON"): the
 * networkx node_link_data files in which Checkmate and Moccasin publish their
 * training graphs. A small recursive-descent reader for just what the format
 * needs: the file is read whole, values the format does not use are checked
 * and skipped (nesting limited, so no input can exhaust the stack), and the
 * problem is then built with the constructors and checks the text reader
 * uses. Errors carry a byte offset; the line and column are counted from it
 * only when one is reported, so the scanner keeps no position state. */
#include "problem_json.h"
#include "text_fields.h"
#include "utf8.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_DEPTH 64               /* nesting inside values the format ignores */
#define JSON_MAX_FILE ((size_t)1 << 30) /* 1 GiB: 10 million nodes take about 600 MB */
#define JSON_NUM_LEN 64                 /* longest number accepted, in characters */
#define JSON_KEY_LEN 32                 /* longer keys are none the format reads */

typedef struct jr {
    const char *s;
    size_t len, pos;
    int depth;
    const char *path;
    rm_err *e;
} jr;

/* The 1-based line and column of byte offset at. */
static long line_of(const jr *r, size_t at, size_t *col)
{
    long line = 1;
    size_t bol = 0;
    for (size_t i = 0; i < at && i < r->len; i++)
        if (r->s[i] == '\n') line++, bol = i + 1;
    if (col) *col = at - bol + 1;
    return line;
}

static int jr_fail(const jr *r, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int jr_fail(const jr *r, size_t at, const char *fmt, ...)
{
    char what[RM_ERR_MSG_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    size_t col;
    long line = line_of(r, at, &col);
    return rm_errorf(r->e, RM_ERR_PARSE, "%s:%ld:%zu: %s", r->path, line, col, what);
}

/* The next byte after JSON white space (EOF at the end); the reader is left on
 * it. */
static int peek(jr *r)
{
    while (r->pos < r->len) {
        char c = r->s[r->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return (unsigned char)c;
        r->pos++;
    }
    return EOF;
}

static int fail_found(jr *r, const char *what)
{
    int c = peek(r);
    if (c == EOF) return jr_fail(r, r->pos, "expected %s, found the end of the file", what);
    if (c >= 0x20 && c < 0x7f) return jr_fail(r, r->pos, "expected %s, found '%c'", what, c);
    return jr_fail(r, r->pos, "expected %s, found byte 0x%02x", what, (unsigned)c);
}

static int expect(jr *r, int c, const char *what)
{
    if (peek(r) != c) return fail_found(r, what);
    r->pos++;
    return RM_OK;
}

/* Consumes the literal w (true, false, null) if it is next. */
static int word(jr *r, const char *w)
{
    size_t n = strlen(w);
    if (peek(r) == EOF || r->len - r->pos < n || memcmp(r->s + r->pos, w, n) != 0) return 0;
    r->pos += n;
    return 1;
}

/* ---- strings ------------------------------------------------------------- */

/* Appends the k bytes b to out while they fit (cap includes the NUL); *len
 * counts every byte, so a caller sees how long the whole string was. */
static void put(char *out, size_t cap, size_t *len, const char *b, size_t k)
{
    if (*len + k < cap) memcpy(out + *len, b, k);
    *len += k;
}

static int hex4(jr *r, size_t at, uint32_t *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++, r->pos++) {
        char c = r->pos < r->len ? r->s[r->pos] : 0;
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0) return jr_fail(r, at, "'\\u' needs four hex digits");
        *v = *v * 16 + (uint32_t)d;
    }
    return RM_OK;
}

/* A \uXXXX escape (the reader just past the 'u'), surrogate pairs joined, as
 * UTF-8 in b. */
static int unicode_escape(jr *r, size_t at, char b[4], size_t *k)
{
    uint32_t cp, lo;
    int rc = hex4(r, at, &cp);
    if (rc) return rc;
    if (cp >= 0xDC00 && cp < 0xE000) return jr_fail(r, at, "a low surrogate '\\u%04X' without a high one", cp);
    if (cp >= 0xD800 && cp < 0xDC00) {
        if (r->len - r->pos < 2 || r->s[r->pos] != '\\' || r->s[r->pos + 1] != 'u')
            return jr_fail(r, at, "a high surrogate '\\u%04X' without a low one", cp);
        r->pos += 2;
        if ((rc = hex4(r, at, &lo))) return rc;
        if (lo < 0xDC00 || lo >= 0xE000) return jr_fail(r, at, "a high surrogate '\\u%04X' without a low one", cp);
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    if (cp < 0x80) {
        b[0] = (char)cp, *k = 1;
    } else if (cp < 0x800) {
        b[0] = (char)(0xC0 | cp >> 6), b[1] = (char)(0x80 | (cp & 0x3F)), *k = 2;
    } else if (cp < 0x10000) {
        b[0] = (char)(0xE0 | cp >> 12), b[1] = (char)(0x80 | (cp >> 6 & 0x3F)), b[2] = (char)(0x80 | (cp & 0x3F)),
        *k = 3;
    } else {
        b[0] = (char)(0xF0 | cp >> 18), b[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        b[2] = (char)(0x80 | (cp >> 6 & 0x3F)), b[3] = (char)(0x80 | (cp & 0x3F)), *k = 4;
    }
    return RM_OK;
}

/* The escape at the reader (on its backslash), decoded into b. */
static int escape(jr *r, char b[4], size_t *k)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    size_t at = r->pos++;
    if (r->pos >= r->len) return jr_fail(r, at, "unterminated string");
    char c = r->s[r->pos++];
    const char *hit = c ? strchr(from, c) : NULL;
    if (hit) {
        b[0] = to[hit - from], *k = 1;
        return RM_OK;
    }
    if (c != 'u') return jr_fail(r, at, "unknown escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX)");
    return unicode_escape(r, at, b, k);
}

/* Reads a string into out (cap bytes, NUL-terminated, cut short if longer);
 * *len is the decoded length, which a decoded "\u0000" makes differ from
 * strlen(out). */
static int string(jr *r, char *out, size_t cap, size_t *len)
{
    int rc = expect(r, '"', "a string");
    if (rc) return rc;
    size_t start = r->pos - 1;
    *len = 0;
    for (;;) {
        if (r->pos >= r->len) return jr_fail(r, start, "unterminated string");
        unsigned char c = (unsigned char)r->s[r->pos];
        char b[4];
        size_t k = 1;
        if (c == '"') break;
        if (c < 0x20) return jr_fail(r, r->pos, "control character 0x%02x inside a string (JSON needs it escaped)", c);
        if (c == '\\') {
            if ((rc = escape(r, b, &k))) return rc;
            put(out, cap, len, b, k);
            continue;
        }
        /* JSON text is UTF-8 (RFC 8259, section 8.1): a string holds
         * whole, shortest-form sequences, checked where they stand. */
        uint32_t cp;
        if (c >= 0x80 && !(k = (size_t)rm_utf8_next(r->s + r->pos, r->len - r->pos, &cp))) {
            char why[160];
            size_t at;
            rm_name_check(r->s + r->pos, r->len - r->pos, &at, why, sizeof why);
            return jr_fail(r, r->pos, "%s inside a string (byte offset %zu)", why, r->pos);
        }
        put(out, cap, len, r->s + r->pos, k);
        r->pos += k;
    }
    r->pos++;
    out[*len < cap ? *len : cap - 1] = '\0';
    return RM_OK;
}

/* ---- numbers and other values -------------------------------------------- */

/* A number as read: its text, its value, and where it starts. */
typedef struct jnum {
    char txt[JSON_NUM_LEN];
    double v;
    int whole;     /* no fraction and no exponent */
    int underflow; /* nonzero digits that strtod rounded to 0 (1e-400) */
    size_t at;
} jnum;

/* Scans the number at the reader: exactly RFC 8259's grammar, so strtod and
 * strtoull see nothing they would read differently (hex, "inf", a leading
 * '+'). */
static int number(jr *r, jnum *x)
{
    int c = peek(r);
    const char *s = r->s;
    size_t p = x->at = r->pos, n = r->len;
#define DIGIT(i) ((i) < n && s[i] >= '0' && s[i] <= '9')
    if (p < n && s[p] == '-') p++;
    if (!DIGIT(p)) {
        if (c == 'N' || c == 'I' || (p < n && s[p] == 'I'))
            return jr_fail(r, x->at,
                           "NaN and Infinity are not JSON numbers (costs and sizes "
                           "must be finite)");
        return fail_found(r, "a number");
    }
    if (s[p] == '0')
        p++; /* no leading zeros: 01 is not a JSON number */
    else
        while (DIGIT(p)) p++;
    x->whole = 1;
    if (p < n && s[p] == '.') {
        if (!DIGIT(p + 1)) return jr_fail(r, x->at, "a number needs a digit after its '.'");
        for (p++, x->whole = 0; DIGIT(p);) p++;
    }
    if (p < n && (s[p] == 'e' || s[p] == 'E')) {
        p += p + 1 < n && (s[p + 1] == '+' || s[p + 1] == '-') ? 2 : 1;
        if (!DIGIT(p)) return jr_fail(r, x->at, "a number needs digits in its exponent");
        for (x->whole = 0; DIGIT(p);) p++;
    }
#undef DIGIT
    if (p - x->at >= JSON_NUM_LEN) return jr_fail(r, x->at, "a number longer than %d characters", JSON_NUM_LEN - 1);
    memcpy(x->txt, s + x->at, p - x->at);
    x->txt[p - x->at] = '\0';
    r->pos = p;
    errno = 0;
    x->v = strtod(x->txt, NULL);
    x->underflow = errno == ERANGE && x->v == 0;
    return RM_OK;
}

/* A finite number >= 0 (a compute cost). */
static int cost(jr *r, double *out, const char *what)
{
    jnum x;
    int rc = number(r, &x);
    if (rc) return rc;
    if (!isfinite(x.v)) return jr_fail(r, x.at, "%s %s is not a finite number", what, x.txt);
    if (x.v < 0) return jr_fail(r, x.at, "%s %s is negative", what, x.txt);
    *out = x.v;
    return RM_OK;
}

/* A non-negative whole number (a size or an id). Integral floats (1024.0,
 * 1e3) are accepted: Python writes sizes computed as floats that way. */
static int whole_number(jr *r, size_t *out, const char *what)
{
    jnum x;
    int rc = number(r, &x);
    if (rc) return rc;
    if (x.v < 0) return jr_fail(r, x.at, "%s %s is negative", what, x.txt);
    if (x.whole && x.txt[0] != '-') { /* exact, beyond the 2^53 a double holds */
        errno = 0;
        unsigned long long u = strtoull(x.txt, NULL, 10);
        if (errno == ERANGE || u > SIZE_MAX) return jr_fail(r, x.at, "%s %s is too large", what, x.txt);
        *out = (size_t)u;
        return RM_OK;
    }
    /* An underflow to 0 would pass as whole. */
    if (x.v != floor(x.v) || x.underflow) return jr_fail(r, x.at, "%s %s is not a whole number", what, x.txt);
    if (!(x.v < 18446744073709551616.0) || x.v > (double)SIZE_MAX)
        return jr_fail(r, x.at, "%s %s is too large", what, x.txt);
    *out = (size_t)x.v;
    return RM_OK;
}

static int boolean(jr *r, int *out, const char *what)
{
    size_t at = (peek(r), r->pos);
    if (word(r, "true"))
        *out = 1;
    else if (word(r, "false"))
        *out = 0;
    else
        return jr_fail(r, at, "%s must be true or false", what);
    return RM_OK;
}

typedef int (*member_fn)(jr *r, const char *key, size_t at, void *ctx);
typedef int (*element_fn)(jr *r, size_t index, void *ctx);

/* Reads an object, calling fn with each key (at: where it starts) and the
 * reader on its value. A key the format cannot know (too long, or with a
 * "\u0000") reaches fn as "". */
static int object(jr *r, member_fn fn, void *ctx)
{
    int rc = expect(r, '{', "'{'");
    if (rc || peek(r) == '}') return rc ? rc : (r->pos++, RM_OK);
    for (;;) {
        char key[JSON_KEY_LEN];
        size_t len, at = (peek(r), r->pos);
        if (peek(r) != '"') return fail_found(r, "a key in double quotes");
        if ((rc = string(r, key, sizeof key, &len)) || (rc = expect(r, ':', "':' after the key"))) return rc;
        if ((rc = fn(r, len < sizeof key && strlen(key) == len ? key : "", at, ctx))) return rc;
        if (peek(r) == '}') break;
        if ((rc = expect(r, ',', "',' or '}'"))) return rc;
    }
    r->pos++;
    return RM_OK;
}

static int array(jr *r, element_fn fn, void *ctx)
{
    int rc = expect(r, '[', "'['");
    if (rc || peek(r) == ']') return rc ? rc : (r->pos++, RM_OK);
    for (size_t i = 0;; i++) {
        if ((rc = fn(r, i, ctx))) return rc;
        if (peek(r) == ']') break;
        if ((rc = expect(r, ',', "',' or ']'"))) return rc;
    }
    r->pos++;
    return RM_OK;
}

static int skip(jr *r);
static int skip_member(jr *r, const char *key, size_t at, void *ctx)
{
    return (void)key, (void)at, (void)ctx, skip(r);
}
static int skip_element(jr *r, size_t i, void *ctx)
{
    return (void)i, (void)ctx, skip(r);
}

/* Checks and skips a value the format does not read. */
static int skip(jr *r)
{
    int c = peek(r), rc;
    if (c == '{' || c == '[') {
        if (r->depth >= JSON_MAX_DEPTH)
            return jr_fail(r, r->pos, "values nested deeper than %d levels", JSON_MAX_DEPTH);
        r->depth++;
        rc = c == '{' ? object(r, skip_member, NULL) : array(r, skip_element, NULL);
        r->depth--;
        return rc;
    }
    char none[1];
    size_t len;
    jnum x;
    if (c == '"') return string(r, none, sizeof none, &len);
    if (word(r, "true") || word(r, "false") || word(r, "null")) return RM_OK;
    if (c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I') return number(r, &x);
    return fail_found(r, "a value");
}

/* ---- the graph ----------------------------------------------------------- */

typedef struct jnode {
    rm_problem_node nd;
    size_t at; /* the node's '{' */
    size_t id; /* its "id", which must equal its position */
} jnode;

typedef struct jlink {
    size_t src, dst, at;
} jlink;

typedef struct jgraph {
    jnode *nodes;
    size_t n, node_cap;
    jlink *links;
    size_t nlinks, link_cap;
    size_t fixed, budget;
    int seen; /* KEY_* bits: a key given twice is refused, not overridden */
} jgraph;

enum { KEY_NODES = 1, KEY_LINKS = 2, KEY_FIXED = 4, KEY_BUDGET = 8, KEY_GRAPH = 16, KEY_DIRECTED = 32, KEY_MULTI = 64 };
enum { KEY_ID = 1, KEY_CPU = 2, KEY_RAM = 4, KEY_BACKWARD = 8, KEY_NAME = 16, KEY_SOURCE = 32, KEY_TARGET = 64 };

static int once(jr *r, int *seen, int bit, const char *key, size_t at)
{
    if (*seen & bit) return jr_fail(r, at, "'%s' is given twice", key);
    *seen |= bit;
    return RM_OK;
}

/* Makes room for element n of an array of cap elements of size bytes. */
static int grow(jr *r, void **arr, size_t *cap, size_t n, size_t size)
{
    if (n < *cap) return RM_OK;
    size_t nc = *cap ? *cap * 2 : 16;
    void *p = realloc(*arr, nc * size);
    if (!p) return rm_errorf(r->e, RM_ERR_NOMEM, "%s: out of memory", r->path);
    *arr = p;
    *cap = nc;
    return RM_OK;
}

static int name(jr *r, char out[RM_NAME_LEN])
{
    size_t len, at = (peek(r), r->pos);
    int rc = string(r, out, RM_NAME_LEN, &len);
    if (rc) return rc;
    if (len >= RM_NAME_LEN) return jr_fail(r, at, "name is longer than %d bytes", RM_NAME_LEN - 1);
    /* A NUL (from "\u0000") would cut the name short; control characters
     * and bidi overrides, raw or escaped, garble what prints the name. */
    char why[160];
    size_t bad;
    if (rm_name_check(out, len, &bad, why, sizeof why))
        return jr_fail(r, at,
                       "the name has %s at byte %zu of the name (byte offset %zu of the file is its opening quote); "
                       "names must be printable UTF-8, without control characters or bidi overrides",
                       why, bad, at);
    return RM_OK;
}

typedef struct jnode_ctx {
    jnode *node;
    int seen, backward;
} jnode_ctx;

static int node_member(jr *r, const char *key, size_t at, void *ctx)
{
    jnode_ctx *c = ctx;
    rm_problem_node *nd = &c->node->nd;
    int rc = RM_OK;
    if (!strcmp(key, "id")) {
        if (!(rc = once(r, &c->seen, KEY_ID, key, at))) rc = whole_number(r, &c->node->id, "id");
    } else if (!strcmp(key, "cost_cpu")) {
        if (!(rc = once(r, &c->seen, KEY_CPU, key, at))) rc = cost(r, &nd->cost, "cost_cpu");
    } else if (!strcmp(key, "cost_ram")) {
        if (!(rc = once(r, &c->seen, KEY_RAM, key, at))) rc = whole_number(r, &nd->bytes, "cost_ram");
    } else if (!strcmp(key, "backward")) {
        if (!(rc = once(r, &c->seen, KEY_BACKWARD, key, at))) rc = boolean(r, &c->backward, "backward");
    } else if (!strcmp(key, "name")) {
        if (!(rc = once(r, &c->seen, KEY_NAME, key, at))) rc = name(r, nd->name);
    } else {
        rc = skip(r);
    }
    return rc;
}

/* Node objects must list ids 0, 1, 2, ... in array order: the order is the
 * topological order, as in the text format. */
static int node_element(jr *r, size_t i, void *ctx)
{
    jgraph *g = ctx;
    if (i >= RM_PROBLEM_MAX_NODES) return jr_fail(r, (peek(r), r->pos), "more than %d nodes", RM_PROBLEM_MAX_NODES);
    int rc = grow(r, (void **)&g->nodes, &g->node_cap, i, sizeof *g->nodes);
    if (rc) return rc;
    jnode *jn = &g->nodes[i];
    memset(jn, 0, sizeof *jn);
    jn->at = (peek(r), r->pos);
    jnode_ctx c = {jn, 0, 0};
    if ((rc = object(r, node_member, &c))) return rc;
    static const char *const need[] = {"id", "cost_cpu", "cost_ram", "backward"};
    for (int k = 0; k < 4; k++)
        if (!(c.seen & 1 << k)) return jr_fail(r, jn->at, "node %zu has no '%s'", i, need[k]);
    if (jn->id < i)
        return jr_fail(r, jn->at, "node id %zu is given twice (first at line %ld)", jn->id,
                       line_of(r, g->nodes[jn->id].at, NULL));
    if (jn->id != i)
        return jr_fail(r, jn->at, "expected node id %zu here, found %zu (ids are 0..n-1 in array order)", i, jn->id);
    jn->nd.tag = c.backward ? RM_TAG_BACKWARD : RM_TAG_FORWARD;
    g->n = i + 1;
    return RM_OK;
}

typedef struct jlink_ctx {
    jlink *link;
    int seen;
} jlink_ctx;

static int link_member(jr *r, const char *key, size_t at, void *ctx)
{
    jlink_ctx *c = ctx;
    int rc;
    if (!strcmp(key, "source"))
        return (rc = once(r, &c->seen, KEY_SOURCE, key, at)) ? rc : whole_number(r, &c->link->src, key);
    if (!strcmp(key, "target"))
        return (rc = once(r, &c->seen, KEY_TARGET, key, at)) ? rc : whole_number(r, &c->link->dst, key);
    return skip(r);
}

static int link_element(jr *r, size_t i, void *ctx)
{
    jgraph *g = ctx;
    int rc = grow(r, (void **)&g->links, &g->link_cap, i, sizeof *g->links);
    if (rc) return rc;
    jlink *l = &g->links[i];
    l->at = (peek(r), r->pos);
    jlink_ctx c = {l, 0};
    if ((rc = object(r, link_member, &c))) return rc;
    if (!(c.seen & KEY_SOURCE)) return jr_fail(r, l->at, "link has no 'source'");
    if (!(c.seen & KEY_TARGET)) return jr_fail(r, l->at, "link has no 'target'");
    g->nlinks = i + 1;
    return RM_OK;
}

/* A check of problem.h that failed (rc, why) as a parse error at byte at. */
static int check_at(const jr *r, size_t at, int rc, const rm_err *why)
{
    return rc ? jr_fail(r, at, "%s", why->msg) : RM_OK;
}

/* The keys read inside "graph" and at the top level alike. */
static int graph_member(jr *r, const char *key, size_t at, void *ctx)
{
    jgraph *g = ctx;
    int rc;
    if (!strcmp(key, "fixed_bytes"))
        return (rc = once(r, &g->seen, KEY_FIXED, key, at)) ? rc : whole_number(r, &g->fixed, key);
    if (!strcmp(key, "budget")) {
        if ((rc = once(r, &g->seen, KEY_BUDGET, key, at))) return rc;
        size_t value_at = (peek(r), r->pos);
        rm_err why = {RM_OK, ""};
        if ((rc = whole_number(r, &g->budget, key))) return rc;
        return check_at(r, value_at, rm_problem_budget_in_range(g->budget, &why), &why);
    }
    return skip(r);
}

static int top_member(jr *r, const char *key, size_t at, void *ctx)
{
    jgraph *g = ctx;
    int rc, v;
    if (!strcmp(key, "nodes")) return (rc = once(r, &g->seen, KEY_NODES, key, at)) ? rc : array(r, node_element, g);
    /* networkx 3.4 names the list "edges" where older versions wrote "links". */
    if (!strcmp(key, "links") || !strcmp(key, "edges"))
        return (rc = once(r, &g->seen, KEY_LINKS, "links' or 'edges", at)) ? rc : array(r, link_element, g);
    if (!strcmp(key, "graph")) return (rc = once(r, &g->seen, KEY_GRAPH, key, at)) ? rc : object(r, graph_member, g);
    if (!strcmp(key, "directed")) {
        if ((rc = once(r, &g->seen, KEY_DIRECTED, key, at)) || (rc = boolean(r, &v, key))) return rc;
        return v ? RM_OK
                 : jr_fail(r, at,
                           "an undirected graph has no topological order: "
                           "'directed' must be true");
    }
    if (!strcmp(key, "multigraph")) {
        if ((rc = once(r, &g->seen, KEY_MULTI, key, at)) || (rc = boolean(r, &v, key))) return rc;
        return v ? jr_fail(r, at,
                           "parallel links read one value once: 'multigraph' must "
                           "be false")
                 : RM_OK;
    }
    return graph_member(r, key, at, ctx);
}

/* ---- building the problem ------------------------------------------------ */

static int check_link(jr *r, const jgraph *g, const jlink *l)
{
    if (l->src >= g->n || l->dst >= g->n)
        return jr_fail(r, l->at, "link %zu -> %zu names a node outside 0..%zu", l->src, l->dst, g->n - 1);
    if (l->src == l->dst)
        return jr_fail(r, l->at, "link %zu -> %zu: node %zu depends on itself", l->src, l->dst, l->src);
    if (l->src > l->dst)
        return jr_fail(r, l->at,
                       "link %zu -> %zu goes to an earlier node (a forward "
                       "reference or a cycle: ids are the "
                       "topological order)",
                       l->src, l->dst);
    return RM_OK;
}

typedef struct jdep {
    size_t src, link;
} jdep;

static int cmp_dep(const void *a, const void *b)
{
    const jdep *x = a, *y = b;
    if (x->src != y->src) return (x->src > y->src) - (x->src < y->src);
    return (x->link > y->link) - (x->link < y->link);
}

/* Sorts node t's incoming links d[0..k-1] (deps are kept sorted, as the text
 * reader keeps them), refuses a repeated link, and sets the deps. */
static int set_node_deps(jr *r, const jgraph *g, rm_problem *p, int t, jdep *d, size_t k, int *buf)
{
    qsort(d, k, sizeof *d, cmp_dep);
    for (size_t j = 0; j < k; j++) {
        if (j > 0 && d[j].src == d[j - 1].src)
            return jr_fail(r, g->links[d[j].link].at, "link %zu -> %d is given twice (first at line %ld)", d[j].src, t,
                           line_of(r, g->links[d[j - 1].link].at, NULL));
        buf[j] = (int)d[j].src;
    }
    return rm_problem_set_deps(p, t, buf, (int)k, r->e);
}

/* The links become each node's deps: bucketed by target (a counting sort),
 * then set node by node. */
static int link_deps(jr *r, const jgraph *g, rm_problem *p)
{
    int rc = RM_OK;
    for (size_t i = 0; i < g->nlinks && !rc; i++) rc = check_link(r, g, &g->links[i]);
    if (rc || g->nlinks == 0) return rc;
    if (g->nlinks > INT_MAX) return jr_fail(r, g->links[0].at, "more than %d links", INT_MAX);
    size_t *start = calloc(g->n + 1, sizeof *start);
    jdep *d = malloc(g->nlinks * sizeof *d);
    int *buf = malloc(g->nlinks * sizeof *buf);
    if (!start || !d || !buf) rc = rm_errorf(r->e, RM_ERR_NOMEM, "%s: out of memory for %zu links", r->path, g->nlinks);
    for (size_t i = 0; i < g->nlinks && !rc; i++) start[g->links[i].dst + 1]++;
    for (size_t t = 0; t < g->n && !rc; t++) start[t + 1] += start[t];
    for (size_t i = 0; i < g->nlinks && !rc; i++) d[start[g->links[i].dst]++] = (jdep){g->links[i].src, i};
    /* Each start[t] now points at the end of bucket t, where t + 1 starts. */
    for (size_t t = 0, from = 0; t < g->n && !rc; from = start[t++])
        if (start[t] > from) rc = set_node_deps(r, g, p, (int)t, d + from, start[t] - from, buf);
    free(start);
    free(d);
    free(buf);
    return rc;
}

/* Copies the nodes: the forward node just before the first backward one is
 * the loss (Checkmate's vloss), so the problem reads like a traced one. */
static int copy_nodes(jr *r, const jgraph *g, rm_problem *p)
{
    rm_problem_sums sums = {g->fixed, 0};
    int first_backward = -1;
    for (size_t i = 0; i < g->n; i++) {
        p->nodes[i] = g->nodes[i].nd;
        /* The bounds rm_problem_validate checks, here with the line. */
        rm_err why = {RM_OK, ""};
        int rc = check_at(r, g->nodes[i].at, rm_problem_sums_add(&sums, p, (int)i, &why), &why);
        if (rc) return rc;
        if (first_backward < 0 && p->nodes[i].tag == RM_TAG_BACKWARD) first_backward = (int)i;
    }
    if (first_backward > 0) p->nodes[first_backward - 1].tag = RM_TAG_LOSS;
    p->fixed_bytes = g->fixed;
    p->budget = g->budget;
    return RM_OK;
}

static int build(jr *r, const jgraph *g, size_t end, rm_problem **out)
{
    if (!(g->seen & KEY_NODES)) return jr_fail(r, end, "the graph has no 'nodes' array");
    if (!(g->seen & KEY_LINKS)) return jr_fail(r, end, "the graph has no 'links' (or 'edges') array");
    if (g->n == 0) return jr_fail(r, end, "'nodes' is empty: a problem has at least one node");
    rm_problem *p;
    int rc = rm_problem_create(&p, (int)g->n, r->e);
    if (rc) return rc;
    if ((rc = copy_nodes(r, g, p)) || (rc = link_deps(r, g, p))) {
        rm_problem_free(p);
        return rc;
    }
    if ((rc = rm_problem_validate(p, r->e))) {
        rm_err_context(r->e, "%s", r->path);
        rm_problem_free(p);
        return rc;
    }
    *out = p;
    return RM_OK;
}

int rm_problem_read_json(rm_problem **out, FILE *fp, const char *path, rm_err *e)
{
    *out = NULL;
    char *buf = NULL;
    size_t len = 0;
    int rc = rm_text_read_all(&buf, &len, fp, JSON_MAX_FILE, path, "node-link JSON problem", e);
    if (rc) return rc;
    jr r = {buf, len, rm_text_bom(buf, len), 0, path, e}; /* a byte-order mark is skipped */
    jgraph g = {0};
    size_t end = 0;
    if (!(rc = object(&r, top_member, &g))) {
        end = r.pos - 1;
        if (peek(&r) != EOF) rc = jr_fail(&r, r.pos, "trailing data after the JSON object");
    }
    if (!rc) rc = build(&r, &g, end, out);
    free(g.nodes);
    free(g.links);
    free(buf);
    return rc;
}
