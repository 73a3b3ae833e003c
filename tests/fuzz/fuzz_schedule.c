/* Fuzz harness: schedule files (scheduler/schedule_file.c), read against a
 * fixed problem: the two-layer example docs/examples/two-layer.txt, built in
 * code so the harness does not depend on the problem parser. An accepted
 * schedule is written and read back, which must succeed: reading checks the
 * file against the simulator, and a schedule the reader accepted must
 * survive its own writer. */
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
        {"input", RM_TAG_FORWARD, 100, 1024, 0, {0, 0}},      {"fc1", RM_TAG_FORWARD, 2048, 2048, 1, {0, 0}},
        {"relu1", RM_TAG_FORWARD, 512, 2048, 1, {1, 0}},    {"loss", RM_TAG_LOSS, 64, 4, 1, {2, 0}},
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
    rm_schedule *t = NULL;
    if (rm_schedule_write(s, p, again, &we) != RM_OK || rm_schedule_read(&t, p, again, &we) != RM_OK ||
        !rm_schedule_equal(s, t)) {
        fprintf(stderr, "fuzz: an accepted schedule does not survive write + read: %s\n", we.msg);
        abort();
    }
    rm_schedule_free(t);
    rm_schedule_free(s);
    rm_problem_free(p);
    return RM_OK;
}
