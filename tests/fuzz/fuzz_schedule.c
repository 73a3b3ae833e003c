/* Fuzz harness: schedule files (scheduler/schedule_file.c), read against a
 * fixed problem: the two-layer example docs/examples/two-layer.txt, built in
 * code so the harness does not depend on the problem parser. The reader
 * takes two formats (docs/schedule-format.md): the sparse one remat writes
 * (R and S lines of ranges) and the first one (stage rows of bits). An
 * accepted schedule must survive the writer (sparse) and read back the same,
 * and, written in the first format, read back the same again: reading checks
 * the file against the simulator, and the two formats' readers must agree on
 * every schedule either accepts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harnesses.h"
#include "problem.h"
#include "schedule.h"

int rm_fuzz_schedule_problem(rm_problem **out, rm_err *e)
{
    /* index name tag cost bytes deps, as in docs/examples/two-layer.txt */
    static const struct {
        const char *name;
        rm_node_tag tag;
        double cost;
        size_t bytes;
        int ndeps, deps[2];
    } nodes[] = {
        {"input", RM_TAG_FORWARD, 100, 1024, 0, {0, 0}},     {"fc1", RM_TAG_FORWARD, 2048, 2048, 1, {0, 0}},
        {"relu1", RM_TAG_FORWARD, 512, 2048, 1, {1, 0}},     {"loss", RM_TAG_LOSS, 64, 4, 1, {2, 0}},
        {"loss.grad", RM_TAG_BACKWARD, 64, 2048, 2, {2, 3}}, {"relu1.grad", RM_TAG_BACKWARD, 512, 2048, 2, {2, 4}},
        {"fc1.grad", RM_TAG_BACKWARD, 4096, 0, 2, {0, 5}},
    };
    const int n = (int)(sizeof nodes / sizeof nodes[0]);
    rm_problem *p;
    int rc = rm_problem_create(&p, n, e);
    if (rc) return rc;
    p->fixed_bytes = 4096;
    p->budget = 11000;
    for (int i = 0; i < n && !rc; i++) {
        snprintf(p->nodes[i].name, sizeof p->nodes[i].name, "%s", nodes[i].name);
        p->nodes[i].tag = nodes[i].tag;
        p->nodes[i].cost = nodes[i].cost;
        p->nodes[i].bytes = nodes[i].bytes;
        rc = rm_problem_set_deps(p, i, nodes[i].deps, nodes[i].ndeps, e);
    }
    if (!rc) rc = rm_problem_validate(p, e);
    if (rc) {
        rm_problem_free(p);
        return rc;
    }
    *out = p;
    return RM_OK;
}

/* s in the first format, which remat reads but no longer writes. */
static void write_first_format(const rm_schedule *s, const char *path)
{
    FILE *fp = fopen(path, "w");
    if (!fp) abort();
    fprintf(fp, "schedule %d\n", s->n);
    for (int t = 0; t < s->n; t++) {
        fprintf(fp, "stage %d R ", t);
        for (int i = 0; i <= t; i++) fputc('0' + rm_schedule_R(s, t, i), fp);
        fputs(t ? " S " : " S -", fp);
        for (int i = 0; i < t; i++) fputc('0' + rm_schedule_S(s, t, i), fp);
        fputc('\n', fp);
    }
    if (fclose(fp)) abort();
}

/* Reads back the file at path, which holds s in one format or the other:
 * it must be accepted as the same schedule. */
static void expect_same(const rm_schedule *s, const rm_problem *p, const char *path, const char *format)
{
    rm_err e = {RM_OK, ""};
    rm_schedule *t = NULL;
    if (rm_schedule_read(&t, p, path, &e) != RM_OK || !rm_schedule_equal(s, t)) {
        fprintf(stderr, "fuzz: an accepted schedule, written in the %s format, does not read back the same: %s\n",
                format, e.msg);
        abort();
    }
    rm_schedule_free(t);
}

int rm_fuzz_schedule(const uint8_t *data, size_t size)
{
    rm_err e = {RM_OK, ""};
    rm_problem *p;
    if (rm_fuzz_schedule_problem(&p, &e)) {
        fprintf(stderr, "fuzz: the fixed problem: %s\n", e.msg);
        abort();
    }
    char path[256], again[256];
    rm_fuzz_write(path, sizeof path, "schedule.txt", data, size);
    rm_schedule *s = NULL;
    int rc = rm_schedule_read(&s, p, path, &e);
    rm_fuzz_check_err(rc, &e);
    if (rc) {
        if (s) abort();
        rm_problem_free(p);
        return rc;
    }
    rm_fuzz_write(again, sizeof again, "again.txt", NULL, 0);
    rm_err we = {RM_OK, ""};
    if (rm_schedule_write(s, p, again, &we) != RM_OK) {
        fprintf(stderr, "fuzz: an accepted schedule cannot be written: %s\n", we.msg);
        abort();
    }
    expect_same(s, p, again, "sparse");
    write_first_format(s, again);
    expect_same(s, p, again, "first");
    rm_schedule_free(s);
    rm_problem_free(p);
    return RM_OK;
}
