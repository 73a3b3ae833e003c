/* The schedule file (docs/schedule-format.md): R and S as bit rows, the
 * simulated cost and peak, and the operation sequence. R and S are the
 * schedule; the rest is there for people and other tools, and reading checks
 * it against the simulator so a stale or hand-edited file cannot lie. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "schedule.h"
#include "simulate.h"
#include "text_fields.h"

int rm_schedule_write(const rm_schedule *s, const rm_problem *p, const char *path, rm_err *e)
{
    rm_op *ops;
    int nops, rc;
    rm_sim_result r;
    if ((rc = rm_schedule_ops(&ops, &nops, p, s, e))) return rc;
    if ((rc = rm_simulate_ops(&r, NULL, p, s, ops, nops, e))) {
        free(ops);
        return rc;
    }
    /* Written aside and renamed into place (engine/atomic_file.h): a run
     * killed mid-write, or a full disk, leaves the previous file intact. */
    rm_atomic_file af;
    if ((rc = rm_atomic_open(&af, path, e))) {
        free(ops);
        return rc;
    }
    FILE *fp = af.f;
    int n = s->n;
    fprintf(fp, "# remat schedule (format: docs/schedule-format.md)\n");
    fprintf(fp, "schedule %d\n", n);
    fprintf(fp, "# stage T R <bits for nodes 0..T> S <bits for nodes 0..T-1, '-' for stage 0>\n");
    for (int t = 0; t < n; t++) {
        fprintf(fp, "stage %d R ", t);
        for (int i = 0; i <= t; i++) fputc(rm_R_at(s, t, i) ? '1' : '0', fp);
        fputs(" S ", fp);
        if (t == 0) fputc('-', fp);
        for (int i = 0; i < t; i++) fputc(rm_S_at(s, t, i) ? '1' : '0', fp);
        fputc('\n', fp);
    }
    fprintf(fp, "# simulated: total compute cost, activation peak in bytes (fixed bytes excluded)\n");
    fprintf(fp, "cost %.17g\n", r.cost);
    fprintf(fp, "peak %zu\n", r.peak_bytes);
    fprintf(fp, "# the operation sequence: STAGE compute|free NODE\n");
    fprintf(fp, "ops %d\n", nops);
    for (int o = 0; o < nops; o++)
        fprintf(fp, "%d %s %d # %s\n", ops[o].stage, ops[o].kind == RM_OP_COMPUTE ? "compute" : "free", ops[o].node,
                p->nodes[ops[o].node].name[0] ? p->nodes[ops[o].node].name : "-");
    free(ops);
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

/* One "stage T R bits S bits" line into row T. */
static int parse_stage(rm_schedule *s, int t, char **f, int nf, const char *path, int line, rm_err *e)
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
        *rm_R(s, t, i) = (uint8_t)(c == '1');
    }
    for (int i = 0; i < t; i++) {
        char c = sb[i];
        if (c != '0' && c != '1')
            return rm_errorf(e, RM_ERR_PARSE, "%s:%d: S bit %d is '%c', not 0 or 1", path, line, i, c);
        *rm_S(s, t, i) = (uint8_t)(c == '1');
    }
    return RM_OK;
}

/* What rm_schedule_read knows while it walks the file: the header, then
 * s->n stage rows, then cost, peak and ops lines in any order (each once),
 * the ops line followed by its operations. Every line is checked against
 * what the simulator makes of R and S (ops, r) once all the rows are in. */
typedef struct {
    const rm_problem *p;
    const char *path;
    rm_err *e;
    rm_schedule *s; /* created by the header */
    int header;     /* the header's line, 0 before it */
    int stages;     /* stage rows read */
    rm_op *ops;     /* from R and S, once every row is read */
    int nops;
    rm_sim_result r;
    int ops_declared, ops_seen, ops_line, cost_line, peak_line;
} schedule_reader;

/* "schedule STAGES", which must match the problem. */
static int read_header(schedule_reader *rd, char **f, int nf, int line)
{
    int n;
    if (strcmp(f[0], "schedule") != 0 || nf != 2 || parse_int(&n, f[1]))
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: expected the header 'schedule STAGES'", rd->path, line);
    if (n != rd->p->n)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: the schedule has %d stages but the problem has %d nodes",
                         rd->path, line, n, rd->p->n);
    int rc = rm_schedule_create(&rd->s, n, rd->e);
    if (!rc) rd->header = line;
    return rc;
}

/* The next stage row; after the last one, the operations and the
 * simulation that the rest of the file is checked against. */
static int read_stage_row(schedule_reader *rd, char **f, int nf, int line)
{
    int rc = parse_stage(rd->s, rd->stages, f, nf, rd->path, line, rd->e);
    if (rc || ++rd->stages < rd->s->n) return rc;
    if ((rc = rm_schedule_ops(&rd->ops, &rd->nops, rd->p, rd->s, rd->e)) ||
        (rc = rm_simulate_ops(&rd->r, NULL, rd->p, rd->s, rd->ops, rd->nops, rd->e)))
        rm_err_context(rd->e, "%s", rd->path);
    return rc;
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
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: operation %d should be '%d %s %d' according to R and S",
                         rd->path, line, rd->ops_seen, want->stage, want->kind == RM_OP_COMPUTE ? "compute" : "free",
                         want->node);
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
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: the file says cost %.17g but the schedule costs %.17g",
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
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: the file says peak %zu but the schedule peaks at %zu bytes",
                         rd->path, line, peak, rd->r.peak_bytes);
    rd->peak_line = line;
    return RM_OK;
}

/* A line after the stage rows: an operation of a declared 'ops' list, or
 * one of cost, peak and ops (each at most once). */
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
    return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: unexpected '%s' (after the %d stages: cost, peak, ops)", rd->path,
                     line, f[0], rd->s->n);
}

/* At the end of the file (line lines read, read_errno from the last
 * rm_text_getline): a failed read, a line too long, or a file that stops short of its header, its
 * stage rows or its declared operations. */
static int check_end(const schedule_reader *rd, FILE *fp, int line, int read_errno)
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
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: empty file: expected 'schedule STAGES'", path, line + 1);
    if (rd->stages < rd->s->n)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: end of file after %d of %d stages", path, line + 1, rd->stages,
                         rd->s->n);
    if (rd->ops_declared >= 0 && rd->ops_seen < rd->ops_declared)
        return rm_errorf(rd->e, RM_ERR_PARSE, "%s:%d: end of file after %d of the %d operations declared at line %d",
                         path, line + 1, rd->ops_seen, rd->ops_declared, rd->ops_line);
    return RM_OK;
}

int rm_schedule_read(rm_schedule **out, const rm_problem *p, const char *path, rm_err *e)
{
    *out = NULL;
    FILE *fp = fopen(path, "r");
    if (!fp) return rm_errorf(e, RM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    schedule_reader rd;
    memset(&rd, 0, sizeof rd);
    rd.p = p, rd.path = path, rd.e = e, rd.ops_declared = -1;
    int line = 0, rc = RM_OK;
    char *buf = NULL, *f[MAX_FIELDS + 1];
    size_t cap = 0;
    /* errno tells end of file (0) from a failed read, a line that could not
     * be allocated (ENOMEM) or one too long (EOVERFLOW): all return -1. */
    while ((errno = 0, rm_text_getline(&buf, &cap, fp)) >= 0) {
        line++;
        int nf = rm_text_fields(buf, f, MAX_FIELDS + 1);
        if (nf == 0) continue;
        if (!rd.header)
            rc = read_header(&rd, f, nf, line);
        else if (rd.stages < rd.s->n)
            rc = read_stage_row(&rd, f, nf, line);
        else
            rc = read_tail_line(&rd, f, nf, line);
        if (rc) break;
    }
    int read_errno = errno;
    if (!rc) rc = check_end(&rd, fp, line, read_errno);
    free(buf);
    free(rd.ops);
    fclose(fp);
    if (rc) {
        rm_schedule_free(rd.s);
        return rc;
    }
    *out = rd.s;
    return RM_OK;
}
