/* Fuzz harness: problem files (scheduler/problem.c). An accepted problem must
 * satisfy rm_problem_validate (everything downstream trusts it), and writing
 * it and reading it back must give the same problem: the format promises an
 * exact round trip. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harnesses.h"
#include "problem.h"

static int same_problem(const rm_problem *a, const rm_problem *b)
{
    if (a->n != b->n || a->fixed_bytes != b->fixed_bytes || a->budget != b->budget) return 0;
    for (int i = 0; i < a->n; i++) {
        const rm_problem_node *x = &a->nodes[i], *y = &b->nodes[i];
        if (strcmp(x->name, y->name) || x->tag != y->tag || x->bytes != y->bytes || x->ndeps != y->ndeps) return 0;
        if (memcmp(&x->cost, &y->cost, sizeof x->cost)) return 0; /* bits: %.17g must round-trip */
        for (int k = 0; k < x->ndeps; k++)
            if (x->deps[k] != y->deps[k]) return 0;
    }
    return 1;
}

int rm_fuzz_problem(const uint8_t *data, size_t size)
{
    char path[256], again[256];
    rm_fuzz_write(path, sizeof path, "problem.txt", data, size);
    rm_err e = {RM_OK, ""};
    rm_problem *p = NULL;
    int rc = rm_problem_read(&p, path, &e);
    rm_fuzz_check_err(rc, &e);
    if (rc) {
        if (p) abort();
        return rc;
    }
    rm_err ve = {RM_OK, ""};
    if (rm_problem_validate(p, &ve)) {
        fprintf(stderr, "fuzz: read accepted an invalid problem: %s\n", ve.msg);
        abort();
    }
    (void)rm_problem_peak_lower_bound(p);
    (void)rm_problem_activation_budget(p);
    rm_fuzz_write(again, sizeof again, "again.txt", NULL, 0);
    rm_err we = {RM_OK, ""};
    int wrc = rm_problem_write(p, again, &we);
    rm_fuzz_check_err(wrc, &we);
    if (!wrc) {
        rm_problem *q = NULL;
        rm_err re = {RM_OK, ""};
        if (rm_problem_read(&q, again, &re) != RM_OK || !same_problem(p, q)) {
            fprintf(stderr, "fuzz: a written problem does not read back the same: %s\n", re.msg);
            abort();
        }
        rm_problem_free(q);
    }
    rm_problem_free(p);
    return RM_OK;
}
