/* Fuzz harness: profiled cost files (scheduler/cost_file.c). An accepted file
 * must hold what the reader promises (finite costs >= 0, node lines after
 * the header in order), survive its own writer bit for bit (the format
 * promises an exact round trip), and applying it to the fixed two-layer
 * problem of the schedule harness must either fit or be refused cleanly,
 * leaving the problem untouched when refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost_file.h"
#include "harnesses.h"
#include "problem.h"

static int same_costs(const rm_cost_file *a, const rm_cost_file *b)
{
    if (a->n != b->n || a->batch != b->batch || strcmp(a->model, b->model) || strcmp(a->device, b->device)) return 0;
    for (int i = 0; i < a->n; i++) {
        if (strcmp(a->nodes[i].name, b->nodes[i].name)) return 0;
        if (memcmp(&a->nodes[i].seconds, &b->nodes[i].seconds, sizeof a->nodes[i].seconds)) return 0; /* bits */
    }
    return 1;
}

int rm_fuzz_costs(const uint8_t *data, size_t size)
{
    char path[256], again[256];
    rm_fuzz_write(path, sizeof path, "input.costs", data, size);
    rm_err e = {RM_OK, ""};
    rm_cost_file *c = NULL;
    int rc = rm_cost_file_read(&c, path, &e);
    rm_fuzz_check_err(rc, &e);
    if (rc) {
        if (c) abort();
        return rc;
    }
    if (c->n < 1 || c->batch < 1) abort();
    for (int i = 0; i < c->n; i++) {
        if (!isfinite(c->nodes[i].seconds) || c->nodes[i].seconds < 0) {
            fprintf(stderr, "fuzz: node %d has cost %g\n", i, c->nodes[i].seconds);
            abort();
        }
        if (c->nodes[i].line <= c->header_line || (i && c->nodes[i].line <= c->nodes[i - 1].line)) abort();
    }
    rm_fuzz_write(again, sizeof again, "again.costs", NULL, 0);
    rm_err we = {RM_OK, ""};
    int wrc = rm_cost_file_write(c, again, "fuzz", &we);
    rm_fuzz_check_err(wrc, &we);
    if (!wrc) {
        rm_cost_file *d = NULL;
        rm_err re = {RM_OK, ""};
        if (rm_cost_file_read(&d, again, &re) != RM_OK || !same_costs(c, d)) {
            fprintf(stderr, "fuzz: a written cost file does not read back the same: %s\n", re.msg);
            abort();
        }
        rm_cost_file_free(d);
    }
    rm_problem *p = NULL;
    rm_err pe = {RM_OK, ""};
    if (rm_fuzz_schedule_problem(&p, &pe)) abort();
    double before[16];
    for (int i = 0; i < p->n && i < 16; i++) before[i] = p->nodes[i].cost;
    rm_err ae = {RM_OK, ""};
    /* Doubling the batch scales by exactly 2 (a huge batch is applied as is). */
    const int twice = c->batch <= (1 << 29);
    int arc = rm_cost_file_apply(p, c, c->model, twice ? c->batch * 2 : c->batch, RM_COST_SCALE_BATCH, &ae);
    rm_fuzz_check_err(arc, &ae);
    for (int i = 0; i < p->n && i < 16; i++) {
        double want = arc ? before[i] : c->nodes[i].seconds * (twice ? 2.0 : 1.0);
        if (memcmp(&p->nodes[i].cost, &want, sizeof want)) {
            fprintf(stderr, "fuzz: apply left node %d at %g, expected %g (rc %d)\n", i, p->nodes[i].cost, want, arc);
            abort();
        }
    }
    rm_problem_free(p);
    rm_cost_file_free(c);
    return RM_OK;
}
