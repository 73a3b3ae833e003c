/* The schedule file (docs/schedule-format.md): R as each stage's
 * recomputations and S as retention runs, the simulated cost and peak, and
 * the operation sequence. R and S are the schedule; the rest is there for
 * people and other tools, and reading checks it against the simulator so a
 * stale or hand-edited file cannot lie. The first format, R and S as rows of
 * bits (n^2 characters: 10 GB at 100,000 nodes), is still read. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "order.h"
#include "schedule.h"
#include "simulate.h"
#include "sort_ints.h"
#include "text_fields.h"

/* Writes the ascending list xs[0..m) as ranges: 0-4,7,9-10. */
static void put_ranges(FILE *fp, const int *xs, int m)
{
    for (int k = 0; k < m;) {
        int j = k;
        while (j + 1 < m && xs[j + 1] == xs[j] + 1) j++;
        fprintf(fp, k ? ",%d" : "%d", xs[k]);
        if (j > k) fprintf(fp, "-%d", xs[j]);
        k = j + 1;
    }
}

/* R and S. With an order, its line comes first, and R and S name the
 * problem's nodes (not positions in the order): R lines list each stage's
 * recomputations by node, ascending; S lines come by node, ascending. */
static int write_body(FILE *fp, const rm_schedule *s, rm_err *e)
{
    int n = s->n, *pos = NULL, *ids = NULL;
    if (s->order) {
        pos = malloc((size_t)n * sizeof *pos);
        ids = malloc((size_t)n * sizeof *ids);
        if (!pos || !ids) {
            free(pos);
            free(ids);
            return rm_errorf(e, RM_ERR_NOMEM, "schedule: out of memory writing its order");
        }
        rm_order_positions(pos, s->order, n);
        fprintf(fp, "# order: the node each stage computes first, a topological order of the problem's nodes\n");
        fprintf(fp, "order ");
        put_ranges(fp, s->order, n);
        fputc('\n', fp);
    }
    fprintf(fp, "# R T NODES: stage T computes NODES (earlier nodes: recomputations) before its own node %s;\n",
            s->order ? "(order's T-th)" : "T");
    fprintf(fp, "# a stage without an R line computes only its own node\n");
    for (int t = 0; t < n; t++)
        if (rm_stage_ncomputes(s, t) > 1) {
            const int *r = &s->r_node[s->r_start[t]];
            int m = rm_stage_ncomputes(s, t) - 1; /* the last one is the stage's own */
            if (ids) {
                for (int k = 0; k < m; k++) ids[k] = s->order[r[k]];
                rm_sort_ints(ids, m);
                r = ids;
            }
            fprintf(fp, "R %d ", t);
            put_ranges(fp, r, m);
            fputc('\n', fp);
        }
    fprintf(fp, "# S NODE STAGES: NODE's output is resident at the start of STAGES (kept from the stage before)\n");
    for (int v = 0; v < n; v++) {
        int q = pos ? pos[v] : v;
        if (s->ret_start[q] == s->ret_start[q + 1]) continue;
        fprintf(fp, "S %d ", v);
        for (int k = s->ret_start[q]; k < s->ret_start[q + 1]; k++) {
            const rm_retention *r = &s->ret[k];
            fprintf(fp, k > s->ret_start[q] ? ",%d" : "%d", r->from);
            if (r->to > r->from) fprintf(fp, "-%d", r->to);
        }
        fputc('\n', fp);
    }
    free(pos);
    free(ids);
    return RM_OK;
}

int rm_schedule_write(const rm_schedule *s, const rm_problem *p, const char *path, rm_err *e)
{
    return rm_schedule_write_kind(s, p, path, RM_PATH_NAMED, e);
}

int rm_schedule_write_kind(const rm_schedule *s, const rm_problem *p, const char *path, rm_path_kind kind, rm_err *e)
{
    rm_op *ops;
    int nops, rc;
    rm_sim_result r;
    if ((rc = rm_schedule_ops(&ops, &nops, p, s, e))) return rc;
    if (!(rc = rm_simulate_ops(&r, NULL, p, s, ops, nops, e)))
        rc = rm_schedule_write_replayed(s, p, ops, nops, &r, path, kind, e);
    free(ops);
    return rc;
}

int rm_schedule_write_replayed(const rm_schedule *s, const rm_problem *p, const rm_op *ops, int nops,
                               const rm_sim_result *r, const char *path, rm_path_kind kind, rm_err *e)
{
    /* Written aside and renamed into place (base/atomic_file.h): a run
     * killed mid-write, or a full disk, leaves the previous file intact. */
    rm_atomic_file af;
    int rc = rm_atomic_open_kind(&af, path, kind, e);
    if (rc) return rc;
    FILE *fp = af.f;
    fprintf(fp, "# remat schedule (format: docs/schedule-format.md)\n");
    fprintf(fp, "schedule %d sparse\n", s->n);
    if ((rc = write_body(fp, s, e))) {
        rm_atomic_abort(&af);
        return rc;
    }
    fprintf(fp, "# simulated: total compute cost, activation peak in bytes (fixed bytes excluded)\n");
    fprintf(fp, "cost %.17g\n", r->cost);
    fprintf(fp, "peak %zu\n", r->peak_bytes);
    fprintf(fp, "# the operation sequence: STAGE compute|free NODE\n");
    fprintf(fp, "ops %d\n", nops);
    for (int o = 0; o < nops; o++)
        fprintf(fp, "%d %s %d # %s\n", ops[o].stage, ops[o].kind == RM_OP_COMPUTE ? "compute" : "free", ops[o].node,
                p->nodes[ops[o].node].name[0] ? p->nodes[ops[o].node].name : "-");
    return rm_atomic_commit(&af, e); /* checks every fprintf above through ferror */
}

#define MAX_FIELDS 6

static int parse_int(int *out, const char *tok)
{
    char *end;
    errno = 0;
    long v = strtol(tok, &end, 10);
    if (!*tok || *end || errno || v < 0 || v > 2000000000) return -1;
    *out = (int)v;
    return 0;
}

/* One "stage T R bits S bits" line of the first format into stage T. */
static int parse_stage(rm_schedule_builder *b, int t, char **f, int nf, const char *path, int line, rm_err *e)
{
    int idx;
    if (strcmp(f[0], "stage") != 0)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: expected 'stage %d R ... S ...', found '%s'", path, line, t, f[0]);
    if (nf < 6 || strcmp(f[2], "R") != 0 || strcmp(f[4], "S") != 0)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: expected 'stage %d R <bits> S <bits>'", path, line, t);
    if (nf > 6) return rm_errorf(e, RM_ERR_PARSE, "%s:%d: trailing junk '%s'", path, line, f[6]);
    if (parse_int(&idx, f[1]) || idx != t)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: expected stage %d here, found '%s'", path, line, t, f[1]);
    if ((int)strlen(f[3]) != t + 1)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: stage %d needs %d R bits, found %zu", path, line, t, t + 1,
                         strlen(f[3]));
    const char *sb = t == 0 && strcmp(f[5], "-") == 0 ? "" : f[5];
    if ((int)strlen(sb) != t)
        return rm_errorf(e, RM_ERR_PARSE, "%s:%d: stage %d needs %d S bits, found %zu", path, line, t, t, strlen(sb));
    for (int i = 0; i <= t; i++) {
        char c = f[3][i];
        if (c != '0' && c != '1')
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: R bit %d is '%c', not 0 or 1", path, line, i, c);
        if (c == '1') rm_builder_compute(b, t, i);
    }
    for (int i = 0; i < t; i++) {
        char c = sb[i];
        if (c != '0' && c != '1')
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: S bit %d is '%c', not 0 or 1", path, line, i, c);
        if (c == '1') rm_builder_retain(b, i, t, t); /* rows in order: each run grows in place */
    }
    return RM_OK;
}

/* A list of ranges "0-4,7,9-10", ascending and not overlapping, each end
 * below limit; calls take(ctx, a, b) for each range. */
static int parse_ranges(const char *tok, int limit, const char *what, void (*take)(void *, int, int), void *ctx,
                        const char *path, int line, rm_err *e)
{
    int prev = -1;
    const char *q = tok;
    for (;;) {
        char *end;
        int a, b;
        errno = 0;
        long x = isdigit((unsigned char)*q) ? strtol(q, &end, 10) : -1;
        if (x < 0 || errno || x > 2000000000)
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s '%s': expected ranges like 0-4,7", path, line, what, tok);
        a = b = (int)x;
        if (*end == '-') {
            q = end + 1;
            long y = isdigit((unsigned char)*q) ? strtol(q, &end, 10) : -1;
            if (y < 0 || errno || y > 2000000000)
                return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s '%s': expected ranges like 0-4,7", path, line, what, tok);
            b = (int)y;
        }
        if (b < a)
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s: the range %d-%d runs backwards", path, line, what, a, b);
        if (a <= prev)
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s: %d comes after %d; ranges must ascend without overlapping",
                             path, line, what, a, prev);
        if (b >= limit)
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s: %d is out of range (at most %d)", path, line, what, b,
                             limit - 1);
        take(ctx, a, b);
        prev = b;
        if (*end == '\0') return RM_OK;
        if (*end != ',' || end[1] == '\0')
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: %s '%s': expected ranges like 0-4,7", path, line, what, tok);
        q = end + 1;
    }
}

typedef struct range_ctx {
    rm_schedule_builder *b;
    int at;          /* the stage (R), or the node's position in the order (S) */
    int first, last; /* the lowest and highest number listed; for R, positions */
    const int *pos;  /* a node's position in the file's order; NULL: the problem's */
} range_ctx;

static void take_recompute(void *ctx, int a, int b)
{
    range_ctx *c = ctx;
    /* A builder over RM_SCHEDULE_MAX_COMPUTES has failed: a few lines of
     * ranges must not make the reader loop over billions of nodes. */
    for (int i = a; i <= b && !c->b->failed; i++) {
        int q = c->pos ? c->pos[i] : i;
        rm_builder_compute(c->b, c->at, q);
        if (q > c->last) c->last = q;
    }
    if (c->first < 0) c->first = a;
}

static void take_run(void *ctx, int a, int b)
{
    range_ctx *c = ctx;
    rm_builder_retain(c->b, c->at, a, b);
    if (c->first < 0) c->first = a;
    c->last = b;
}

/* What rm_schedule_read knows while it walks the file: the header, then the
 * body (stage rows in the first format; R lines, then S lines, in the
 * sparse one), then cost, peak and ops lines in any order (each once), the
 * ops line followed by its operations. Every line after the body is checked
 * against what the simulator makes of R and S (ops, r). */
typedef struct {
    const rm_problem *p;
    const char *path;
    rm_err *e;
    rm_schedule_builder b; /* the body so far */
    rm_schedule *s;        /* once the body is complete */
    int n, sparse;
    int header; /* the header's line, 0 before it */
    int stages; /* stage rows read (first format) */
    int last_r; /* the last R line's stage, the last S line's node (sparse) */
    int last_s;
    int *order, *pos; /* the order line's, NULL without one */
    rm_op *ops;       /* from R and S, once the body is complete */
    int nops;
    rm_sim_result r;
    int ops_declared, ops_seen, ops_line, cost_line, peak_line;
} schedule_reader;

/* "schedule STAGES [sparse]", which must match the problem. */
static int read_header(schedule_reader *rd, char **f, int nf, int line)
{
    int n;
    rd->sparse = nf == 3 && strcmp(f[2], "sparse") == 0;
    if (strcmp(f[0], "schedule") != 0 || (nf != 2 && !rd->sparse) || parse_int(&n, f[1]))
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: expected the header 'schedule STAGES [sparse]'", rd->path, line);
    if (n != rd->p->n)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: the schedule has %d stages but the problem has %d nodes",
                         rd->path, line, n, rd->p->n);
    int rc = rm_builder_init(&rd->b, n, rd->e);
    if (!rc) rd->header = line, rd->n = n, rd->last_r = rd->last_s = -1;
    return rc;
}

/* The body is complete: the schedule, its operations and the simulation
 * that the rest of the file is checked against. A sparse stage without an R
 * line computes its own node only, so every stage gets its own compute. */
static int finish_body(schedule_reader *rd)
{
    if (rd->sparse)
        for (int t = 0; t < rd->n; t++) rm_builder_compute(&rd->b, t, t);
    int rc = rm_builder_finish(&rd->s, &rd->b, rd->e);
    if (rc) return rc;
    if (rd->order) {
        rd->s->order = rd->order; /* checked against the problem by rm_schedule_ops */
        rd->order = NULL;
    }
    if ((rc = rm_schedule_ops(&rd->ops, &rd->nops, rd->p, rd->s, rd->e)) ||
        (rc = rm_simulate_ops(&rd->r, NULL, rd->p, rd->s, rd->ops, rd->nops, rd->e)))
        rm_err_context(rd->e, "%s", rd->path);
    return rc;
}

/* The next stage row of the first format; after the last one, the body is
 * complete. */
static int read_stage_row(schedule_reader *rd, char **f, int nf, int line)
{
    int rc = parse_stage(&rd->b, rd->stages, f, nf, rd->path, line, rd->e);
    if (rc || ++rd->stages < rd->n) return rc;
    return finish_body(rd);
}

/* "order NODES" right after the sparse header: every node once, as
 * ascending runs "0-4,7,5-6". Whether it is topological is checked with the
 * rest of the schedule (rm_schedule_ops). */
static int read_order_line(schedule_reader *rd, char **f, int nf, int line)
{
    int n = rd->n;
    if (nf != 2) return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: expected 'order NODES'", rd->path, line);
    rd->order = malloc((size_t)n * sizeof *rd->order);
    rd->pos = malloc((size_t)n * sizeof *rd->pos);
    if (!rd->order || !rd->pos) return rm_errorf(rd->e, RM_ERR_NOMEM, "%s:%d: out of memory", rd->path, line);
    for (int v = 0; v < n; v++) rd->pos[v] = -1;
    int m = 0;
    for (const char *q = f[1];;) {
        char *end;
        errno = 0;
        long a = isdigit((unsigned char)*q) ? strtol(q, &end, 10) : -1, b = a;
        if (a >= 0 && !errno && *end == '-') {
            q = end + 1;
            b = isdigit((unsigned char)*q) ? strtol(q, &end, 10) : -1;
        }
        if (a < 0 || b < a || errno || b >= n || (*end && *end != ','))
            return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: order: expected nodes below %d as runs like 0-4,7,5-6",
                             rd->path, line, n);
        for (long v = a; v <= b; v++) {
            if (rd->pos[v] >= 0)
                return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: order: node %ld comes twice", rd->path, line, v);
            rd->pos[v] = m;
            rd->order[m++] = (int)v;
        }
        if (!*end) break;
        q = end + 1;
    }
    if (m != n) return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: order: lists %d of the %d nodes", rd->path, line, m, n);
    return RM_OK;
}

/* "R T NODES" or "S NODE STAGES" of the sparse format. R lines come first,
 * by ascending stage, then S lines by ascending node; the triangle rules are
 * checked here, where the line is known; the rest by rm_schedule_ops. */
static int read_sparse_line(schedule_reader *rd, char **f, int nf, int line)
{
    int is_r = strcmp(f[0], "R") == 0, at;
    const char *what = is_r ? "R" : "S";
    if (nf != 3 || parse_int(&at, f[1]) || at >= rd->n)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: expected '%s %s' with %s below %d", rd->path, line, what,
                         is_r ? "STAGE NODES" : "NODE STAGES", is_r ? "STAGE" : "NODE", rd->n);
    if (is_r && (rd->last_s >= 0 || at <= rd->last_r))
        return rm_errorf(rd->e, RM_ERR_PARSE,
                         "%s:%d: R lines come before the S lines, one per stage, in ascending order", rd->path, line);
    if (!is_r && at <= rd->last_s)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: S lines come one per node, in ascending order", rd->path, line);
    int q = !is_r && rd->pos ? rd->pos[at] : at; /* S: the node's position */
    range_ctx c = {&rd->b, q, -1, -1, is_r ? rd->pos : NULL};
    int rc =
        is_r ? parse_ranges(f[2], rd->n, "the nodes the stage recomputes", take_recompute, &c, rd->path, line, rd->e)
             : parse_ranges(f[2], rd->n, "the stages of the node", take_run, &c, rd->path, line, rd->e);
    if (rc) return rc;
    if (is_r && c.last >= at)
        return rm_errorf(rd->e, RM_ERR_PARSE,
                         "%s:%d: stage %d lists node %d; R lines list only recomputations, nodes %s the stage's own "
                         "(R on or above the diagonal)",
                         rd->path, line, at, rd->order ? rd->order[c.last] : c.last,
                         rd->order ? "the order puts before" : "before");
    if (!is_r && c.first <= q)
        return rm_errorf(rd->e, RM_ERR_PARSE,
                         "%s:%d: node %d cannot be retained into stage %d, which does not come after %s (S on or "
                         "above the diagonal)",
                         rd->path, line, at, c.first, rd->order ? "its own stage in the order" : "it");
    if (is_r)
        rd->last_r = at;
    else
        rd->last_s = at;
    return RM_OK;
}

/* One "STAGE compute|free NODE" line after 'ops N': it must be the
 * operation R and S give at that position. */
static int read_op_line(schedule_reader *rd, char **f, int nf, int line)
{
    int st, node;
    if (nf != 3 || parse_int(&st, f[0]) || parse_int(&node, f[2]) ||
        (strcmp(f[1], "compute") != 0 && strcmp(f[1], "free") != 0))
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: expected 'STAGE compute|free NODE'", rd->path, line);
    const rm_op *want = &rd->ops[rd->ops_seen];
    rm_op_kind kind = strcmp(f[1], "compute") == 0 ? RM_OP_COMPUTE : RM_OP_FREE;
    if (want->stage != st || want->node != node || want->kind != kind)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: operation %d should be '%d %s %d' according to R and S", rd->path,
                         line, rd->ops_seen, want->stage, want->kind == RM_OP_COMPUTE ? "compute" : "free", want->node);
    rd->ops_seen++;
    return RM_OK;
}

/* "cost C": the simulated cost, to a relative 1e-9 (it is written with
 * %.17g, so only a changed schedule or problem misses it). */
static int check_cost(schedule_reader *rd, const char *tok, int line)
{
    char *end;
    double cost = strtod(tok, &end);
    if (*end || !isfinite(cost))
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: cost '%s' is not a number", rd->path, line, tok);
    if (fabs(cost - rd->r.cost) > 1e-9 * fmax(1.0, fabs(rd->r.cost)))
        return rm_errorf(rd->e, RM_ERR_PARSE,
                         "%s:%d: the file says cost %.17g but the schedule costs %.17g here: the schedule or the "
                         "problem changed since it was written (another batch, costs file or model?)",
                         rd->path, line, cost, rd->r.cost);
    rd->cost_line = line;
    return RM_OK;
}

/* "peak BYTES": the simulated activation peak, exactly. */
static int check_peak(schedule_reader *rd, const char *tok, int line)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(tok, &end, 10);
    if (*end || errno || tok[0] == '-')
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: peak '%s' is not a byte count", rd->path, line, tok);
    size_t peak = (size_t)v;
    if (peak != rd->r.peak_bytes)
        return rm_errorf(rd->e, RM_ERR_PARSE,
                         "%s:%d: the file says peak %zu but the schedule peaks at %zu bytes here: the schedule or "
                         "the problem changed since it was written (another batch or model?)",
                         rd->path, line, peak, rd->r.peak_bytes);
    rd->peak_line = line;
    return RM_OK;
}

/* A line after the stage rows: an operation of a declared 'ops' list, or
 * one of cost, peak and ops (each at most once). */
static int is_tail_keyword(const char *w)
{
    return !strcmp(w, "cost") || !strcmp(w, "peak") || !strcmp(w, "ops");
}

static int read_tail_line(schedule_reader *rd, char **f, int nf, int line)
{
    if (rd->ops_declared >= 0 && rd->ops_seen < rd->ops_declared) return read_op_line(rd, f, nf, line);
    if (strcmp(f[0], "cost") == 0 && nf == 2 && !rd->cost_line) return check_cost(rd, f[1], line);
    if (strcmp(f[0], "peak") == 0 && nf == 2 && !rd->peak_line) return check_peak(rd, f[1], line);
    if (strcmp(f[0], "ops") == 0 && nf == 2 && rd->ops_declared < 0) {
        if (parse_int(&rd->ops_declared, f[1]) || rd->ops_declared != rd->nops)
            return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: the file declares %s operations; R and S give %d", rd->path,
                             line, f[1], rd->nops);
        rd->ops_line = line;
        return RM_OK;
    }
    return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: unexpected '%s' (after %s: cost, peak, ops)", rd->path, line, f[0],
                     rd->sparse ? "the R and S lines" : "the stage rows");
}

/* At the end of the file (line lines read, read_errno from the last
 * rm_text_getline): a failed read, a line too long, or a file that stops short
 * of its header, its stage rows or its declared operations. */
static int check_end(schedule_reader *rd, FILE *fp, int line, int read_errno)
{
    const char *path = rd->path;
    if (read_errno == ENOMEM)
        return rm_errorf(rd->e, RM_ERR_NOMEM, "%s:%d: out of memory reading the line", path, line + 1);
    if (read_errno == EOVERFLOW)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: a line longer than %zu bytes (not a schedule file?)", path,
                         line + 1, RM_TEXT_MAX_LINE);
    if (ferror(fp) || read_errno)
        return rm_errorf(rd->e, RM_ERR_IO, "%s:%d: read error: %s", path, line + 1,
                         read_errno ? strerror(read_errno) : "the stream failed");
    if (!rd->header)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: empty file: expected 'schedule STAGES [sparse]'", path, line + 1);
    if (!rd->sparse && rd->stages < rd->n)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: end of file after %d of %d stages", path, line + 1, rd->stages,
                         rd->n);
    if (!rd->s) { /* a sparse file of R and S lines only */
        int rc = finish_body(rd);
        if (rc) return rc;
    }
    if (rd->ops_declared >= 0 && rd->ops_seen < rd->ops_declared)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: end of file after %d of the %d operations declared at line %d",
                         path, line + 1, rd->ops_seen, rd->ops_declared, rd->ops_line);
    return RM_OK;
}

/* Reads the schedule in fp (closed here), named path in messages. */
static int read_stream(rm_schedule **out, const rm_problem *p, FILE *fp, const char *path, rm_err *e)
{
    schedule_reader rd;
    memset(&rd, 0, sizeof rd);
    rd.p = p, rd.path = path, rd.e = e, rd.ops_declared = -1;
    int line = 0, rc = RM_OK;
    char *buf = NULL, *f[MAX_FIELDS + 1];
    size_t cap = 0;
    ssize_t len;
    /* errno tells end of file (0) from a failed read, a line that could not
     * be allocated (ENOMEM) or one too long (EOVERFLOW): all return -1. */
    while ((errno = 0, len = rm_text_getline(&buf, &cap, fp)) >= 0) {
        line++;
        size_t bom = line == 1 ? rm_text_bom(buf, (size_t)len) : 0; /* skipped at the start only */
        if (bom) memmove(buf, buf + bom, (size_t)len - bom + 1), len -= (ssize_t)bom;
        if (strlen(buf) != (size_t)len) {
            rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: a NUL byte inside the line (not a text file?)", path, line);
            break;
        }
        int nf = rm_text_fields(buf, f, MAX_FIELDS + 1);
        if (nf == 0) continue;
        if (!rd.header)
            rc = read_header(&rd, f, nf, line);
        else if (!rd.sparse && rd.stages < rd.n)
            rc = read_stage_row(&rd, f, nf, line);
        else if (rd.sparse && !rd.order && rd.last_r < 0 && rd.last_s < 0 && !strcmp(f[0], "order"))
            rc = read_order_line(&rd, f, nf, line);
        else if (rd.sparse && !rd.s && (!strcmp(f[0], "R") || !strcmp(f[0], "S")))
            rc = read_sparse_line(&rd, f, nf, line);
        else if (rd.sparse && !rd.s && !is_tail_keyword(f[0]))
            /* A typo in the body ('s 4 5'): said at its line, not as the
             * validity error the R and S read so far would give. */
            rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: unexpected '%s' (R and S lines, then cost, peak, ops)", path, line,
                           f[0]);
        else {
            if (rd.sparse && !rd.s) rc = finish_body(&rd); /* the first line after the R and S lines */
            if (!rc) rc = read_tail_line(&rd, f, nf, line);
        }
        if (rc) break;
    }
    int read_errno = errno;
    if (!rc) rc = check_end(&rd, fp, line, read_errno);
    free(buf);
    free(rd.ops);
    free(rd.order);
    free(rd.pos);
    rm_builder_free(&rd.b);
    fclose(fp);
    if (rc) {
        rm_schedule_free(rd.s);
        return rc;
    }
    *out = rd.s;
    return RM_OK;
}

int rm_schedule_read(rm_schedule **out, const rm_problem *p, const char *path, rm_err *e)
{
    *out = NULL;
    FILE *fp = rm_text_open(path, "schedule file", e);
    if (!fp) return e ? e->code : RM_ERR_IO;
    return read_stream(out, p, fp, path, e);
}

int rm_schedule_read_entry(rm_schedule **out, const rm_problem *p, const char *path, rm_err *e)
{
    *out = NULL;
    FILE *fp = rm_file_open_read(path, RM_PATH_ENTRY, e);
    if (!fp) return e ? e->code : RM_ERR_IO;
    return read_stream(out, p, fp, path, e);
}
