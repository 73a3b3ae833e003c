/* Graph coarsening for the solver strategies on large problems: super-nodes
 * of consecutive same-tag nodes, the coarse problem, and the expansion of a
 * coarse schedule back to the original (see coarsen.h for why the coarse
 * peak bounds the expansion's and the costs agree). */
#include "coarsen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "deadline.h"
#include "simulate.h"

void rm_coarsening_free(rm_coarsening *c)
{
    if (!c) return;
    free(c->first);
    free(c->group);
    free(c->lastuse);
    free(c->keep);
    memset(c, 0, sizeof *c);
}

static void compute_lastuse(int *lastuse, const rm_problem *p)
{
    for (int i = 0; i < p->n; i++) lastuse[i] = i;
    for (int k = 0; k < p->n; k++)
        for (int d = 0; d < p->nodes[k].ndeps; d++) {
            int j = p->nodes[k].deps[d];
            if (lastuse[j] < k) lastuse[j] = k;
        }
}

/* The internal peak of a would-be group a..b: members computed in order,
 * each freed after its last reader in the group unless kept (read after b,
 * or b itself). */
static size_t segment_bytes(const rm_problem *p, const int *lastuse, int a, int b)
{
    size_t mem = 0, peak = 0;
    for (int k = a; k <= b; k++) {
        mem += p->nodes[k].bytes;
        if (mem > peak) peak = mem;
        const rm_problem_node *nd = &p->nodes[k];
        for (int d = 0; d < nd->ndeps; d++) {
            int j = nd->deps[d];
            if (j >= a && lastuse[j] == k && k != b) mem -= p->nodes[j].bytes; /* k < b: lastuse <= b, not kept */
        }
        if (lastuse[k] == k && k != b) mem -= nd->bytes; /* nobody reads it */
    }
    return peak;
}

size_t rm_coarsen_group_bytes(const rm_problem *p, const rm_coarsening *c, int g)
{
    return segment_bytes(p, c->lastuse, c->first[g], c->first[g + 1] - 1);
}

int rm_coarsen_from_groups(rm_coarsening *c, const rm_problem *p, const int *first, int m, rm_err *e)
{
    memset(c, 0, sizeof *c);
    int n = p->n;
    if (m < 1 || m > n || first[0] != 0 || first[m] != n)
        return rm_errorf(e, RM_ERR_INVALID, "coarsen: %d groups must cover nodes 0..%d", m, n - 1);
    for (int g = 0; g < m; g++)
        if (first[g + 1] <= first[g])
            return rm_errorf(e, RM_ERR_INVALID, "coarsen: group %d is empty (first %d, next %d)", g, first[g],
                             first[g + 1]);
    c->n = n;
    c->m = m;
    c->first = malloc(((size_t)m + 1) * sizeof *c->first);
    c->group = malloc((size_t)n * sizeof *c->group);
    c->lastuse = malloc((size_t)n * sizeof *c->lastuse);
    c->keep = malloc((size_t)n);
    if (!c->first || !c->group || !c->lastuse || !c->keep) {
        rm_coarsening_free(c);
        return rm_errorf(e, RM_ERR_NOMEM, "coarsen: out of memory (n = %d)", n);
    }
    memcpy(c->first, first, ((size_t)m + 1) * sizeof *first);
    compute_lastuse(c->lastuse, p);
    for (int g = 0; g < m; g++) {
        int b = first[g + 1] - 1;
        for (int i = first[g]; i <= b; i++) {
            c->group[i] = g;
            c->keep[i] = (uint8_t)(i == b || c->lastuse[i] > b);
        }
    }
    return RM_OK;
}

/* The coarse problem's trivial lower bound (rm_problem_peak_lower_bound of
 * the coarse problem) for boundaries first[0..m], with group bytes gb. */
static size_t coarse_lower_bound(const rm_problem *p, const int *first, int m, const size_t *gb, int *grp, int *stamp)
{
    for (int g = 0; g < m; g++)
        for (int i = first[g]; i < first[g + 1]; i++) grp[i] = g;
    for (int g = 0; g < m; g++) stamp[g] = -1;
    size_t lb = 0;
    for (int g = 0; g < m; g++) {
        size_t sum = gb[g];
        stamp[g] = g;
        for (int k = first[g]; k < first[g + 1]; k++)
            for (int d = 0; d < p->nodes[k].ndeps; d++) {
                int h = grp[p->nodes[k].deps[d]];
                if (stamp[h] == g) continue;
                stamp[h] = g;
                sum += gb[h];
            }
        if (sum > lb) lb = sum;
    }
    return lb;
}

/* Groups per target super-node below which the greedy starts from single
 * nodes (every problem the tests and built-in models make). */
#define COARSEN_PREPASS 16

int rm_coarsen_auto(rm_coarsening *c, const rm_problem *p, int target, rm_err *e)
{
    return rm_coarsen_auto_until(c, p, target, 0, e);
}

int rm_coarsen_auto_until(rm_coarsening *c, const rm_problem *p, int target, double deadline, rm_err *e)
{
    memset(c, 0, sizeof *c);
    int n = p->n, rc = rm_problem_validate(p, e);
    if (rc) return rc;
    if (target < 1) target = 1;
    int m = n;
    int *first = malloc(((size_t)n + 1) * sizeof *first), *tmp = malloc(((size_t)n + 1) * sizeof *tmp);
    int *lastuse = malloc((size_t)n * sizeof *lastuse), *grp = malloc((size_t)n * sizeof *grp);
    int *stamp = malloc((size_t)n * sizeof *stamp);
    size_t *gb = malloc((size_t)n * sizeof *gb), *gb2 = malloc((size_t)n * sizeof *gb2);
    size_t *pairb = malloc((size_t)n * sizeof *pairb);
    uint8_t *forbidden = calloc((size_t)n + 1, 1); /* by boundary node: merging across it was refused */
    if (!first || !tmp || !lastuse || !grp || !stamp || !gb || !gb2 || !pairb || !forbidden) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "coarsen: out of memory (n = %d)", n);
        goto done;
    }
    compute_lastuse(lastuse, p);
    for (int i = 0; i <= n; i++) first[i] = i;
    for (int i = 0; i < n; i++) gb[i] = p->nodes[i].bytes;
    /* Each greedy merge below rescans every group (O(n) per merge): on a
     * problem of 100,000 nodes that took minutes. Above COARSEN_PREPASS
     * groups per target super-node, runs of same-tag nodes are first cut
     * into equal chunks, linearly, and the greedy starts from those. */
    if (n > COARSEN_PREPASS * target) {
        int chunk = (n + COARSEN_PREPASS * target - 1) / (COARSEN_PREPASS * target);
        m = 0;
        for (int i = 0; i < n; i++)
            if (i == 0 || p->nodes[i].tag != p->nodes[i - 1].tag || i - first[m - 1] >= chunk) first[m++] = i;
        first[m] = n;
        for (int g = 0; g < m; g++) gb[g] = segment_bytes(p, lastuse, first[g], first[g + 1] - 1);
    }
    size_t act = rm_problem_activation_budget(p);
    /* pairb[g]: the bytes of groups g and g + 1 merged, kept as merges go
     * (only the merged group's two pairs change), where computing every
     * pair at every merge was linear in p each time. */
    for (int g = 0; g + 1 < m; g++) pairb[g] = segment_bytes(p, lastuse, first[g], first[g + 2] - 1);
    /* lb_ub: an upper bound on the coarse problem's trivial lower bound.
     * A merge of A and B into AB adds at most gb[AB] to any other group's
     * sum (it replaces A or B among its inputs), and AB's own sum is at
     * most gb[AB] plus A's and B's: the new bound is at most 2 lb + gb[AB].
     * Only where that passes the budget is the bound computed exactly
     * (linear in p), so merges are accepted or refused exactly as before. */
    double lb_ub = p->budget > 0 ? (double)coarse_lower_bound(p, first, m, gb, grp, stamp) : 0;
    while (m > target) {
        if (rm_deadline_passed(deadline)) {
            rc = rm_errorf(e, RM_ERR_BUDGET,
                           "coarsen: the deadline passed with %d groups of %d nodes left to merge "
                           "(target %d)",
                           m, n, target);
            goto done;
        }
        /* The cheapest allowed merge (fewest merged bytes, then fewest members). */
        int best = -1;
        size_t best_bytes = 0;
        int best_size = 0;
        for (int g = 0; g + 1 < m; g++) {
            int a = first[g], mid = first[g + 1], b = first[g + 2] - 1;
            if (forbidden[mid] || p->nodes[a].tag != p->nodes[mid].tag) continue;
            size_t bytes = pairb[g];
            int size = b - a + 1;
            if (best < 0 || bytes < best_bytes || (bytes == best_bytes && size < best_size)) {
                best = g;
                best_bytes = bytes;
                best_size = size;
            }
        }
        if (best < 0) break;
        /* Would-be boundaries without first[best + 1]. */
        int m2 = m - 1;
        for (int g = 0, h = 0; g <= m; g++)
            if (g != best + 1) tmp[h++] = first[g];
        for (int g = 0, h = 0; g < m; g++) {
            if (g == best + 1) continue;
            gb2[h++] = g == best ? best_bytes : gb[g];
        }
        double next_ub = 2 * lb_ub + (double)best_bytes;
        if (p->budget > 0 && next_ub > (double)act) {
            size_t lb = coarse_lower_bound(p, tmp, m2, gb2, grp, stamp);
            if (lb > act) {
                forbidden[first[best + 1]] = 1;
                continue;
            }
            next_ub = (double)lb;
        }
        lb_ub = next_ub;
        memcpy(first, tmp, ((size_t)m2 + 1) * sizeof *first);
        memcpy(gb, gb2, (size_t)m2 * sizeof *gb);
        m = m2;
        /* The pairs: best - 1 and best are new, those after shift down. */
        memmove(&pairb[best + 1], &pairb[best + 2],
                (size_t)(m - 1 > best + 1 ? m - 1 - (best + 1) : 0) * sizeof *pairb);
        for (int g = best - 1; g <= best; g++)
            if (g >= 0 && g + 1 < m) pairb[g] = segment_bytes(p, lastuse, first[g], first[g + 2] - 1);
    }
    rc = rm_coarsen_from_groups(c, p, first, m, e);
done:
    free(first);
    free(tmp);
    free(lastuse);
    free(grp);
    free(stamp);
    free(gb);
    free(gb2);
    free(pairb);
    free(forbidden);
    return rc;
}

int rm_coarsen_problem(rm_problem **out, const rm_problem *p, const rm_coarsening *c, rm_err *e)
{
    *out = NULL;
    if (c->n != p->n) return rm_errorf(e, RM_ERR_INVALID, "coarsen: coarsening of %d nodes, problem of %d", c->n, p->n);
    rm_problem *q;
    int rc = rm_problem_create(&q, c->m, e);
    if (rc) return rc;
    q->fixed_bytes = p->fixed_bytes;
    q->budget = p->budget;
    q->max_cost = p->max_cost; /* a coarse schedule never costs less than its expansion */
    int *deps = malloc((size_t)c->m * sizeof *deps), *stamp = malloc((size_t)c->m * sizeof *stamp);
    if (!deps || !stamp) {
        rc = rm_errorf(e, RM_ERR_NOMEM, "coarsen: out of memory (m = %d)", c->m);
        goto done;
    }
    for (int g = 0; g < c->m; g++) stamp[g] = -1;
    for (int g = 0; g < c->m && !rc; g++) {
        int a = c->first[g], b = c->first[g + 1] - 1;
        rm_problem_node *nd = &q->nodes[g];
        nd->tag = p->nodes[a].tag;
        nd->cost = 0;
        for (int i = a; i <= b; i++) {
            nd->cost += p->nodes[i].cost;
            if (p->nodes[i].tag == RM_TAG_LOSS) nd->tag = RM_TAG_LOSS;
        }
        nd->bytes = rm_coarsen_group_bytes(p, c, g);
        char suffix[24] = "";
        if (b > a) snprintf(suffix, sizeof suffix, "+%d", b - a);
        size_t room = sizeof nd->name - strlen(suffix) - 1, len = strlen(p->nodes[a].name);
        if (len > room) len = room;
        memcpy(nd->name, p->nodes[a].name, len);
        memcpy(nd->name + len, suffix, strlen(suffix) + 1);
        /* Deps: the groups members read from outside, ascending. */
        int nd_count = 0;
        stamp[g] = g;
        for (int i = a; i <= b; i++)
            for (int d = 0; d < p->nodes[i].ndeps; d++) {
                int h = c->group[p->nodes[i].deps[d]];
                if (stamp[h] == g) continue;
                stamp[h] = g;
                int x = nd_count++;
                while (x > 0 && deps[x - 1] > h) {
                    deps[x] = deps[x - 1];
                    x--;
                }
                deps[x] = h;
            }
        rc = rm_problem_set_deps(q, g, deps, nd_count, e);
    }
    if (!rc) rc = rm_problem_validate(q, e);
done:
    free(deps);
    free(stamp);
    if (rc) {
        rm_problem_free(q);
        return rc;
    }
    *out = q;
    return RM_OK;
}

int rm_coarsen_expand(rm_schedule **out, const rm_problem *p, const rm_coarsening *c, const rm_schedule *cs, rm_err *e)
{
    *out = NULL;
    int n = p->n, m = c->m;
    if (c->n != n || cs->n != m)
        return rm_errorf(e, RM_ERR_INVALID,
                         "coarsen: a %d-stage coarse schedule for %d groups of %d nodes (problem: %d)", cs->n, m, c->n,
                         n);
    rm_problem *q;
    int rc = rm_coarsen_problem(&q, p, c, e);
    if (rc) return rc;
    rm_sim_result cr;
    rc = rm_simulate(&cr, q, cs, e);
    rm_problem_free(q);
    if (rc) {
        rm_err_context(e, "coarsen: the coarse schedule is invalid");
        return rc;
    }
    rm_rs *d = NULL; /* the coarse schedule, dense: m is small */
    rm_schedule_builder sb;
    int *lastin = malloc((size_t)n * sizeof *lastin);
    if (!lastin) return rm_errorf(e, RM_ERR_NOMEM, "coarsen: out of memory (n = %d)", n);
    if ((rc = rm_rs_from_schedule(&d, cs, e)) || (rc = rm_builder_init(&sb, n, e))) {
        free(lastin);
        rm_rs_free(d);
        return rc;
    }
    for (int i = 0; i < n; i++) lastin[i] = -1;
    for (int T = 0; T < m; T++) {
        int a = c->first[T], b = c->first[T + 1] - 1;
        const uint8_t *Rc = &d->R[(size_t)T * (size_t)m], *Sc = &d->S[(size_t)T * (size_t)m];
        const uint8_t *Sn = T + 1 < m ? &d->S[(size_t)(T + 1) * (size_t)m] : NULL;
        /* lastin[j]: the last member of T that reads j. */
        for (int r = a; r <= b; r++)
            for (int k = 0; k < p->nodes[r].ndeps; k++) lastin[p->nodes[r].deps[k]] = r;
        /* Stage a: the coarse recomputations, then a. */
        for (int J = 0; J < T; J++) {
            if (Rc[J])
                for (int j = c->first[J]; j < c->first[J + 1]; j++) rm_builder_compute(&sb, a, j);
            if (Sc[J])
                for (int j = c->first[J]; j < c->first[J + 1]; j++)
                    if (c->keep[j]) rm_builder_retain(&sb, j, a, a);
        }
        for (int t = a; t <= b; t++) rm_builder_compute(&sb, t, t);
        /* Stages a+1..b: carry what a later member reads or the next coarse
         * stage retains. The stages a value is carried through are one run
         * (up to its last reader in T, or to b), so each is added whole:
         * stage by stage this was quadratic, 15 s on 100,000 nodes. */
        if (b > a) {
            for (int J = 0; J < T; J++) {
                if (!Rc[J] && !Sc[J]) continue;
                int ret = Sn && Sn[J];
                for (int j = c->first[J]; j < c->first[J + 1]; j++)
                    if (c->keep[j]) rm_builder_retain(&sb, j, a + 1, ret ? b : lastin[j]);
            }
            int ret = Sn && Sn[T];
            for (int j = a; j < b; j++) {
                int to = c->keep[j] && ret ? b : lastin[j];
                rm_builder_retain(&sb, j, j + 1, to);
            }
        }
        for (int r = a; r <= b; r++)
            for (int k = 0; k < p->nodes[r].ndeps; k++) lastin[p->nodes[r].deps[k]] = -1;
    }
    free(lastin);
    rm_rs_free(d);
    rm_schedule *s;
    if ((rc = rm_builder_finish(&s, &sb, e))) return rc;
    rm_sim_result r;
    if ((rc = rm_simulate(&r, p, s, e))) {
        rm_schedule_free(s);
        rm_err_context(e, "coarsen: expansion (a bug)");
        return rc;
    }
    *out = s;
    return RM_OK;
}
