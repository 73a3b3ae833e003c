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

int rm_schedule_read(rm_schedule **out, const rm_problem *p, const char *path, rm_err *e)
{
    *out = NULL;
    FILE *fp = fopen(path, "r");
    if (!fp) return rm_errorf(e, RM_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    rm_schedule *s = NULL;
    rm_op *ops = NULL;
    int nops = 0, line = 0, stages = 0, rc = RM_OK, header = 0;
    int ops_declared = -1, ops_seen = 0, ops_line = 0, cost_line = 0, peak_line = 0;
    double cost = 0;
    size_t peak = 0;
    rm_sim_result r;
    memset(&r, 0, sizeof r);
    char *buf = NULL, *f[MAX_FIELDS + 1];
    size_t cap = 0;
    /* errno tells end of file (0) from a failed read, a line that could not
     * be allocated (ENOMEM) or one too long (EOVERFLOW): all return -1. */
    while ((errno = 0, rm_text_getline(&buf, &cap, fp)) >= 0) {
        line++;
        int nf = rm_text_fields(buf, f, MAX_FIELDS + 1);
        if (nf == 0) continue;
        if (!header) {
            int n;
            if (strcmp(f[0], "schedule") != 0 || nf != 2 || parse_int(&n, f[1])) {
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: expected the header 'schedule STAGES'", path, line);
                break;
            }
            if (n != p->n) {
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: the schedule has %d stages but the problem has %d nodes", path,
                               line, n, p->n);
                break;
            }
            if ((rc = rm_schedule_create(&s, n, e))) break;
            header = line;
            continue;
        }
        if (stages < s->n) {
            if ((rc = parse_stage(s, stages, f, nf, path, line, e))) break;
            if (++stages == s->n) {
                /* All of R and S: from here on the file is checked against
                 * what the simulator makes of them. */
                if ((rc = rm_schedule_ops(&ops, &nops, p, s, e)) ||
                    (rc = rm_simulate_ops(&r, NULL, p, s, ops, nops, e))) {
                    rm_err_context(e, "%s", path);
                    break;
                }
            }
            continue;
        }
        if (ops_declared >= 0 && ops_seen < ops_declared) {
            int st, node;
            if (nf != 3 || parse_int(&st, f[0]) || parse_int(&node, f[2]) ||
                (strcmp(f[1], "compute") != 0 && strcmp(f[1], "free") != 0)) {
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: expected 'STAGE compute|free NODE'", path, line);
                break;
            }
            const rm_op *want = &ops[ops_seen];
            rm_op_kind kind = strcmp(f[1], "compute") == 0 ? RM_OP_COMPUTE : RM_OP_FREE;
            if (want->stage != st || want->node != node || want->kind != kind) {
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: operation %d should be '%d %s %d' according to R and S", path,
                               line, ops_seen, want->stage, want->kind == RM_OP_COMPUTE ? "compute" : "free",
                               want->node);
                break;
            }
            ops_seen++;
            continue;
        }
        if (strcmp(f[0], "cost") == 0 && nf == 2 && !cost_line) {
            char *end;
            cost = strtod(f[1], &end);
            if (*end || !isfinite(cost)) {
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: cost '%s' is not a number", path, line, f[1]);
                break;
            }
            if (fabs(cost - r.cost) > 1e-9 * fmax(1.0, fabs(r.cost))) {
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: the file says cost %.17g but the schedule costs %.17g", path,
                               line, cost, r.cost);
                break;
            }
            cost_line = line;
        } else if (strcmp(f[0], "peak") == 0 && nf == 2 && !peak_line) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(f[1], &end, 10);
            if (*end || errno || f[1][0] == '-') {
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: peak '%s' is not a byte count", path, line, f[1]);
                break;
            }
            peak = (size_t)v;
            if (peak != r.peak_bytes) {
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: the file says peak %zu but the schedule peaks at %zu bytes",
                               path, line, peak, r.peak_bytes);
                break;
            }
            peak_line = line;
        } else if (strcmp(f[0], "ops") == 0 && nf == 2 && ops_declared < 0) {
            if (parse_int(&ops_declared, f[1]) || ops_declared != nops) {
                rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: the file declares %s operations; R and S give %d", path, line,
                               f[1], nops);
                break;
            }
            ops_line = line;
        } else {
            rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: unexpected '%s' (after the %d stages: cost, peak, ops)", path, line,
                           f[0], s->n);
            break;
        }
    }
    int read_errno = errno;
    if (!rc && read_errno == ENOMEM)
        rc = rm_errorf(e, RM_ERR_NOMEM, "%s:%d: out of memory reading the line", path, line + 1);
    else if (!rc && read_errno == EOVERFLOW)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: a line longer than %zu bytes (not a schedule file?)", path, line + 1,
                       RM_TEXT_MAX_LINE);
    else if (!rc && (ferror(fp) || read_errno))
        rc = rm_errorf(e, RM_ERR_IO, "%s:%d: read error: %s", path, line + 1,
                       read_errno ? strerror(read_errno) : "the stream failed");
    if (!rc && !header)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: empty file: expected 'schedule STAGES'", path, line + 1);
    if (!rc && stages < s->n)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: end of file after %d of %d stages", path, line + 1, stages, s->n);
    if (!rc && ops_declared >= 0 && ops_seen < ops_declared)
        rc = rm_errorf(e, RM_ERR_PARSE, "%s:%d: end of file after %d of the %d operations declared at line %d", path,
                       line + 1, ops_seen, ops_declared, ops_line);
    free(buf);
    free(ops);
    fclose(fp);
    if (rc) {
        rm_schedule_free(s);
        return rc;
    }
    *out = s;
    return RM_OK;
}
