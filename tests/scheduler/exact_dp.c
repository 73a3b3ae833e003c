/* The exact dynamic program of exact_dp.h. Deliberately written from the
 * memory model's rules alone (nothing shared with milp.c or lp_round.c), so
 * an agreement between the two is evidence, not an echo. */
#include "exact_dp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long long exact_stage_peak(const rm_problem *p, int t, uint32_t S, uint32_t R, uint32_t S_next)
{
    int n = p->n;
    uint32_t below_t = (t >= 31) ? 0xffffffffu : ((1u << t) - 1u);
    if (!(R & (1u << t))) return -1;
    if (R & ~(below_t | (1u << t))) return -1;
    if (S & ~below_t) return -1;
    if (R & S) return -1;
    if (S_next & ~(S | R)) return -1;
    int lastuse[EXACT_DP_MAX_N];
    for (int v = 0; v < n; v++) lastuse[v] = -1;
    for (int k = 0; k <= t; k++) {
        if (!(R & (1u << k))) continue;
        const rm_problem_node *nd = &p->nodes[k];
        for (int d = 0; d < nd->ndeps; d++) {
            int j = nd->deps[d];
            uint32_t have = S | (R & ((1u << k) - 1u));
            if (!(have & (1u << j))) return -1; /* input not resident */
            lastuse[j] = k;
        }
    }
    for (int k = 0; k <= t; k++)
        if ((R & (1u << k)) && lastuse[k] < 0) lastuse[k] = k;
    long long mem = 0, peak = 0;
    for (int v = 0; v < t; v++)
        if ((S & (1u << v)) && (lastuse[v] >= 0 || (S_next & (1u << v)))) mem += (long long)p->nodes[v].bytes;
    for (int k = 0; k <= t; k++) {
        if (!(R & (1u << k))) continue;
        mem += (long long)p->nodes[k].bytes;
        if (mem > peak) peak = mem;
        const rm_problem_node *nd = &p->nodes[k];
        for (int d = -1; d < nd->ndeps; d++) {
            int v = d < 0 ? k : nd->deps[d];
            if (lastuse[v] == k && !(S_next & (1u << v))) mem -= (long long)p->nodes[v].bytes;
        }
    }
    return peak;
}

/* Row t of R (or of S) as a bit mask. */
static uint32_t row_mask(const rm_schedule *s, int of_S, int t)
{
    uint32_t x = 0;
    for (int i = 0; i < s->n; i++)
        if (of_S ? rm_schedule_S(s, t, i) : rm_schedule_R(s, t, i)) x |= 1u << i;
    return x;
}

int exact_replay(double *cost, size_t *peak, const rm_problem *p, const rm_schedule *s, char *msg, size_t msglen)
{
    int n = p->n;
    if (n > EXACT_DP_MAX_N || s->n != n) {
        snprintf(msg, msglen, "size %d unsupported", n);
        return -1;
    }
    if (row_mask(s, 1, 0)) {
        snprintf(msg, msglen, "S[0] not empty");
        return -1;
    }
    double c = 0;
    long long pk = 0;
    for (int t = 0; t < n; t++) {
        uint32_t S = row_mask(s, 1, t), R = row_mask(s, 0, t), Sn = t + 1 < n ? row_mask(s, 1, t + 1) : 0;
        long long sp = exact_stage_peak(p, t, S, R, Sn);
        if (sp < 0) {
            snprintf(msg, msglen, "stage %d invalid (S=%#x R=%#x S_next=%#x)", t, S, R, Sn);
            return -1;
        }
        if (sp > pk) pk = sp;
        for (int i = 0; i <= t; i++)
            if (R & (1u << i)) c += p->nodes[i].cost;
    }
    *cost = c;
    *peak = (size_t)pk;
    return 0;
}

typedef struct dp_ctx {
    const rm_problem *p;
    int t, nb;
    const size_t *budgets;
    const double *cur; /* nb x 2^n */
    double *next;
    uint32_t S, useful_next;
    double base;
} dp_ctx;

static void relax_all(dp_ctx *c, uint32_t R, double rcost)
{
    size_t N = (size_t)1 << c->p->n;
    uint32_t avail = (c->S | R) & c->useful_next;
    /* every subset of avail, including 0 */
    uint32_t sub = avail;
    for (;;) {
        long long pk = exact_stage_peak(c->p, c->t, c->S, R, sub);
        if (pk >= 0)
            for (int b = 0; b < c->nb; b++) {
                double v = c->cur[(size_t)b * N + c->S];
                if (v < 0 || (size_t)pk > c->budgets[b]) continue;
                double *dst = &c->next[(size_t)b * N + sub];
                if (*dst < 0 || v + rcost < *dst) *dst = v + rcost;
            }
        if (sub == 0) break;
        sub = (sub - 1) & avail;
    }
}

/* Enumerates the valid R of stage t (full mode), deciding node i next. */
static void enum_R(dp_ctx *c, int i, uint32_t R, double rcost)
{
    const rm_problem *p = c->p;
    if (i == c->t) {
        const rm_problem_node *nd = &p->nodes[i];
        for (int d = 0; d < nd->ndeps; d++)
            if (!((c->S | R) & (1u << nd->deps[d]))) return;
        relax_all(c, R | (1u << i), rcost + nd->cost);
        return;
    }
    enum_R(c, i + 1, R, rcost);
    if (c->S & (1u << i)) return;
    const rm_problem_node *nd = &p->nodes[i];
    for (int d = 0; d < nd->ndeps; d++)
        if (!((c->S | R) & (1u << nd->deps[d]))) return;
    enum_R(c, i + 1, R | (1u << i), rcost + nd->cost);
}

/* Closure mode: for each S_next, the R that computes exactly what t and the
 * newly retained values need. */
static void closure_stage(dp_ctx *c)
{
    const rm_problem *p = c->p;
    size_t N = (size_t)1 << p->n;
    uint32_t below = (1u << (c->t + 1)) - 1u;
    uint32_t avail = (c->S | below) & c->useful_next;
    uint32_t sub = avail;
    for (;;) {
        uint32_t need = (1u << c->t) | (sub & ~c->S);
        uint32_t R = 0;
        double rcost = 0;
        for (int i = c->t; i >= 0; i--) {
            if (!(need & (1u << i))) continue;
            R |= 1u << i;
            rcost += p->nodes[i].cost;
            const rm_problem_node *nd = &p->nodes[i];
            for (int d = 0; d < nd->ndeps; d++)
                if (!(c->S & (1u << nd->deps[d]))) need |= 1u << nd->deps[d];
        }
        long long pk = exact_stage_peak(p, c->t, c->S, R, sub);
        if (pk >= 0)
            for (int b = 0; b < c->nb; b++) {
                double v = c->cur[(size_t)b * N + c->S];
                if (v < 0 || (size_t)pk > c->budgets[b]) continue;
                double *dst = &c->next[(size_t)b * N + sub];
                if (*dst < 0 || v + rcost < *dst) *dst = v + rcost;
            }
        if (sub == 0) break;
        sub = (sub - 1) & avail;
    }
}

int exact_dp_solve(double *costs, const rm_problem *p, const size_t *budgets, int nbudgets, int full)
{
    int n = p->n;
    if (n <= 0 || n > EXACT_DP_MAX_N) return -1;
    size_t N = (size_t)1 << n;
    /* lastdesc[i]: the largest node reachable from i. A value retained into
     * stage t is only worth keeping if something at or after t descends from
     * it; anything else only feeds computations nothing later needs. */
    int lastdesc[EXACT_DP_MAX_N];
    for (int i = n - 1; i >= 0; i--) {
        lastdesc[i] = i;
        for (int k = i + 1; k < n; k++)
            for (int d = 0; d < p->nodes[k].ndeps; d++)
                if (p->nodes[k].deps[d] == i && lastdesc[k] > lastdesc[i]) lastdesc[i] = lastdesc[k];
    }
    double *cur = malloc((size_t)nbudgets * N * sizeof *cur), *next = malloc((size_t)nbudgets * N * sizeof *next);
    if (!cur || !next) {
        free(cur);
        free(next);
        return -1;
    }
    for (size_t x = 0; x < (size_t)nbudgets * N; x++) cur[x] = -1;
    for (int b = 0; b < nbudgets; b++) cur[(size_t)b * N + 0] = 0;
    for (int t = 0; t < n; t++) {
        for (size_t x = 0; x < (size_t)nbudgets * N; x++) next[x] = -1;
        uint32_t useful_next = 0;
        if (t + 1 < n)
            for (int i = 0; i <= t; i++)
                if (lastdesc[i] >= t + 1) useful_next |= 1u << i;
        for (uint32_t S = 0; S < (1u << t); S++) {
            int any = 0;
            for (int b = 0; b < nbudgets; b++)
                if (cur[(size_t)b * N + S] >= 0) any = 1;
            if (!any) continue;
            dp_ctx c = {p, t, nbudgets, budgets, cur, next, S, useful_next, 0};
            if (full)
                enum_R(&c, 0, 0, 0);
            else
                closure_stage(&c);
        }
        double *tmp = cur;
        cur = next;
        next = tmp;
    }
    for (int b = 0; b < nbudgets; b++) costs[b] = cur[(size_t)b * N + 0];
    free(cur);
    free(next);
    return 0;
}
