/* The relaxation test: remat's LP relaxation (lp_model.c) must bound at
 * least as tightly as Checkmate's published one (checkmate_oracle.c, built
 * independently), and both must stay below the exact optimum. On Checkmate's
 * linear graphs at every feasible budget and on random training DAGs at
 * budgets between the trivial lower bound and the checkpoint-all peak.
 * REMAT_RELAX_REPORT=l (linear graphs of 8, 16, 24 layers, or from
 * REMAT_RELAX_MIN_LAYERS to REMAT_RELAX_MAX_LAYERS) and/or r (random
 * training graphs) also prints the measurements behind RM_MILP_TIGHT_BUDGET: both bounds, the optimum (DP, or
 * the MILP within 30 s: '?' when unproved; skipped with REMAT_RELAX_NO_OPT),
 * and the cost of rounding either relaxation (-1: nothing fits), with
 * remat's relaxation built with REMAT_RELAX_LEVERS (default RM_MILP_DEFAULT). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkmate_oracle.h"
#include "exact_dp.h"
#include "lp_round.h"
#include "milp.h"
#include "random_graphs.h"
#include "sanitized.h"
#include "simulate.h"
#include "strategy.h"

static void set_act(rm_problem *p, size_t act)
{
    p->budget = p->fixed_bytes + act;
}

static size_t checkpoint_all_peak(const rm_problem *p)
{
    rm_schedule *s = NULL;
    rm_sim_result r;
    rm_err e = {0};
    cr_assert_eq(rm_checkpoint_all_fit(&s, &r, p, &e), RM_OK, "%s", e.msg); /* the peak whether or not it fits */
    rm_schedule_free(s);
    return r.peak_bytes;
}

/* remat's LP bound at act bytes; -1 when its relaxation is infeasible. */
static double remat_bound(rm_problem *p, size_t act, unsigned levers, double **S)
{
    set_act(p, act);
    rm_milp_relaxation rel;
    rm_err e = {0};
    int rc = rm_milp_relax(&rel, p, levers, 0, &e);
    if (rc == RM_ERR_INFEASIBLE) return -1;
    cr_assert_eq(rc, RM_OK, "remat relaxation: %s", e.msg);
    double b = rel.bound;
    if (S) {
        *S = rel.S;
        rel.S = NULL;
    }
    rm_milp_relaxation_free(&rel);
    return b;
}

/* The published relaxation's bound; -1 when infeasible. */
static double oracle_bound(const rm_problem *p, size_t act, double **S)
{
    cm_oracle_relaxation o;
    char msg[160] = "";
    int rc = cm_oracle_relax(&o, p, act, msg, sizeof msg);
    cr_assert(rc >= 0, "oracle: %s", msg);
    if (rc == 1) return -1;
    double b = o.bound;
    if (S) {
        *S = o.S;
        o.S = NULL;
    }
    cm_oracle_free(&o);
    return b;
}

/* remat's bound at least the published one (relative 1e-6); both -1 or neither. */
static void check_at_least_published(rm_problem *p, size_t act, const char *what)
{
    double ours = remat_bound(p, act, RM_MILP_DEFAULT, NULL), theirs = oracle_bound(p, act, NULL);
    if (theirs < 0) return; /* the published LP infeasible: nothing fits, remat may say so or not */
    cr_assert(ours >= 0, "%s at %zu bytes: remat's relaxation infeasible, published bound %.6f", what, act, theirs);
    cr_assert(ours >= theirs - 1e-6 * fmax(1.0, theirs),
              "%s at %zu bytes: remat's LP bound %.6f below the published %.6f", what, act, ours, theirs);
}

Test(relaxation, checkmate_linear_graphs_bound_at_least_published)
{
    RM_SKIP_WHEN_SANITIZED();
    const int layers[] = {8, 16};
    for (int l = 0; l < 2; l++) {
        rm_problem *p = rg_checkmate_linear(layers[l], 0, 0);
        cr_assert_not_null(p);
        size_t lo = rm_problem_peak_lower_bound(p), hi = checkpoint_all_peak(p);
        char what[64];
        snprintf(what, sizeof what, "linear graph of %d layers", layers[l]);
        for (size_t act = lo; act <= hi; act += 16) check_at_least_published(p, act, what);
        rm_problem_free(p);
    }
}

/* Random training DAGs of forward + 8 .. 2 forward + 12 nodes. */
static rm_problem *random_training(uint64_t seed, int forward)
{
    rg_options o = {forward, 0.3, 0.3, 0, 256};
    rm_problem *p = rg_training_problem(seed, &o);
    cr_assert_not_null(p);
    return p;
}

Test(relaxation, random_training_graphs_bound_at_least_published)
{
    RM_SKIP_WHEN_SANITIZED();
    /* three budgets between the trivial bound and checkpoint-all on each */
    for (uint64_t seed = 1; seed <= 30; seed++) {
        rm_problem *p = random_training(seed, 5 + (int)(seed % 6)); /* 11-25 nodes: ~0.1-1 s each */
        size_t lo = rm_problem_peak_lower_bound(p), hi = checkpoint_all_peak(p);
        char what[64];
        snprintf(what, sizeof what, "training graph seed %llu (n=%d)", (unsigned long long)seed, p->n);
        for (int k = 0; k < 3; k++) check_at_least_published(p, lo + (hi - lo) * (size_t)k / 3, what);
        rm_problem_free(p);
    }
}

/* Both bounds below the exact optimum, where the DP is cheap (<= 11 nodes). */
static void check_below_optimum(rm_problem *p, const char *what)
{
    size_t lo = rm_problem_peak_lower_bound(p), hi = checkpoint_all_peak(p), b[5];
    for (int k = 0; k < 5; k++) b[k] = lo + (hi - lo) * (size_t)k / 4;
    double opt[5];
    cr_assert_eq(exact_dp_solve(opt, p, b, 5, 0), 0);
    for (int k = 0; k < 5; k++) {
        if (opt[k] < 0) continue;
        double ours = remat_bound(p, b[k], RM_MILP_DEFAULT, NULL), theirs = oracle_bound(p, b[k], NULL);
        double tol = 1e-6 * fmax(1.0, opt[k]);
        cr_assert(ours >= 0 && ours <= opt[k] + tol, "%s at %zu: remat bound %.6f, optimum %.6f", what, b[k], ours,
                  opt[k]);
        cr_assert(theirs >= 0 && theirs <= opt[k] + tol, "%s at %zu: published bound %.6f, optimum %.6f", what, b[k],
                  theirs, opt[k]);
    }
}

Test(relaxation, bounds_below_the_exact_optimum)
{
    for (int layers = 3; layers <= 5; layers++) {
        rm_problem *p = rg_checkmate_linear(layers, 0, 0);
        check_below_optimum(p, "unit linear graph");
        rm_problem_free(p);
        p = rg_checkmate_linear(layers, (uint64_t)layers, 256);
        check_below_optimum(p, "random-cost linear graph");
        rm_problem_free(p);
    }
    int tested = 0;
    for (uint64_t seed = 1; seed <= 60 && tested < 10; seed++) {
        rm_problem *p = random_training(seed, 3 + (int)(seed % 4));
        if (p->n <= 11) {
            check_below_optimum(p, "training graph");
            tested++;
        }
        rm_problem_free(p);
    }
    cr_assert(tested >= 5);
}

/* A kept model solved again at other budgets (rm_milp_relax_kept: only the
 * budget rows change, and lp_solve starts from its last basis) has the
 * bound of a model built afresh at each: down from checkpoint-all's peak to
 * the trivial bound and back up, with prefix-sum budget rows and with
 * Checkmate's U columns. A budget below the trivial bound in between (-1:
 * a byte below it) is refused by both, and the kept model still answers
 * the next. */
Test(relaxation, kept_model_at_other_budgets_matches_a_fresh_build)
{
    static const unsigned levers[] = {RM_MILP_DEFAULT, RM_MILP_DEFAULT & ~RM_MILP_PREFIX_ROWS};
    static const int share[] = {100, 90, 80, 70, 60, 50, 40, 30, 20, 10, 0, -1, 55, 95};
    int infeasible = 0, solved = 0;
    for (uint64_t seed = 1; seed <= 6; seed++)
        for (int l = 0; l < 2; l++) {
            rm_problem *p = random_training(seed, 5 + (int)(seed % 4));
            size_t lo = rm_problem_peak_lower_bound(p), hi = checkpoint_all_peak(p);
            rm_lp_model *kept = NULL;
            for (size_t k = 0; k < sizeof share / sizeof *share; k++) {
                size_t act = share[k] < 0 ? lo - 1 : lo + (hi - lo) * (size_t)share[k] / 100;
                double fresh = remat_bound(p, act, levers[l], NULL);
                rm_milp_relaxation rel;
                rm_err e = {0};
                int rc = rm_milp_relax_kept(&rel, &kept, p, levers[l], 0, &e);
                cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "seed %llu: %s", (unsigned long long)seed, e.msg);
                cr_assert_eq(rc == RM_ERR_INFEASIBLE, fresh < 0, "seed %llu, levers %#x, %d%%: kept %s, fresh %.6f",
                             (unsigned long long)seed, levers[l], share[k], rc ? "infeasible" : "feasible", fresh);
                if (rc == RM_OK) {
                    cr_assert(fabs(rel.bound - fresh) <= 1e-7 * fmax(1.0, fresh),
                              "seed %llu, levers %#x, %d%%: kept model's bound %.9f, fresh %.9f",
                              (unsigned long long)seed, levers[l], share[k], rel.bound, fresh);
                    rm_milp_relaxation_free(&rel);
                    solved++;
                } else {
                    infeasible++;
                }
            }
            cr_assert_not_null(kept); /* built once, at the first budget */
            rm_lp_model_discard(kept);
            rm_problem_free(p);
        }
    cr_assert(solved > 50 && infeasible > 0, "%d solved, %d infeasible: the budgets should reach both", solved,
              infeasible);
}

/* ---------------------------------------------------------------- report */

/* The optimum by the MILP (DP when tiny); *proved = 0 when a limit stopped it. */
static double optimum(rm_problem *p, size_t act, int *proved)
{
    set_act(p, act);
    *proved = 0;
    if (getenv("REMAT_RELAX_NO_OPT")) return -1;
    if (p->n <= 13) {
        double c;
        cr_assert_eq(exact_dp_solve(&c, p, &act, 1, 0), 0);
        *proved = 1;
        return c;
    }
    rm_milp_options o;
    rm_milp_options_default(&o);
    o.time_limit_s = p->n > 40 ? 15 : 30;
    rm_milp_result info;
    rm_schedule *s = NULL;
    rm_err e = {0};
    int rc = rm_strategy_milp(&s, &info, p, &o, &e);
    rm_schedule_free(s);
    *proved = rc == RM_OK && info.status == RM_STATUS_OPTIMAL;
    return rc == RM_OK ? info.objective : -1;
}

/* Rounds a fractional S (Checkmate's thresholds, then the cheapest R); -1 = nothing fits. */
static double round_S(rm_problem *p, const double *S, double bound)
{
    rm_schedule *s = NULL;
    rm_lp_round_result info;
    rm_err e = {0};
    int rc = rm_lp_round_from(&s, &info, p, S, bound, NULL, &e);
    rm_schedule_free(s);
    cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "%s", e.msg);
    return rc == RM_OK ? info.objective : -1;
}

static double strategy_round(rm_problem *p)
{
    rm_schedule *s = NULL;
    rm_lp_round_result info;
    rm_err e = {0};
    int rc = rm_strategy_lp_round(&s, &info, p, NULL, &e);
    rm_schedule_free(s);
    cr_assert(rc == RM_OK || rc == RM_ERR_INFEASIBLE, "%s", e.msg);
    return rc == RM_OK ? info.objective : -1;
}

static void report_row(rm_problem *p, size_t act, const char *what)
{
    double *Sr = NULL, *So = NULL;
    const char *lv = getenv("REMAT_RELAX_LEVERS"); /* to measure a lever's effect on the rounded vertex */
    unsigned levers = lv ? (unsigned)strtoul(lv, NULL, 0) : RM_MILP_DEFAULT;
    double ours = remat_bound(p, act, levers, &Sr), theirs = oracle_bound(p, act, &So);
    int proved;
    double opt = optimum(p, act, &proved);
    double rr = Sr ? round_S(p, Sr, ours) : -1, ro = So ? round_S(p, So, theirs) : -1;
    set_act(p, act);
    double st = ours >= 0 ? strategy_round(p) : -1;
    fprintf(stderr,
            "REPORT %-12s n=%2d act=%6zu remat_lp=%10.4f cm_lp=%10.4f opt=%8.1f%s round_remat=%8.1f "
            "lp_round=%8.1f round_cm=%8.1f\n",
            what, p->n, act, ours, theirs, opt, proved ? " " : "?", rr, st, ro);
    free(Sr);
    free(So);
}

Test(relaxation, report, .timeout = 3600)
{
    const char *which = getenv("REMAT_RELAX_REPORT");
    if (!which) return;
    int least = getenv("REMAT_RELAX_MIN_LAYERS") ? atoi(getenv("REMAT_RELAX_MIN_LAYERS")) : 8;
    int most = getenv("REMAT_RELAX_MAX_LAYERS") ? atoi(getenv("REMAT_RELAX_MAX_LAYERS")) : 24;
    for (int layers = least; layers <= most && strchr(which, 'l'); layers += 8) {
        rm_problem *p = rg_checkmate_linear(layers, 0, 0);
        size_t lo = rm_problem_peak_lower_bound(p), hi = checkpoint_all_peak(p);
        char what[32];
        snprintf(what, sizeof what, "linear%d", layers);
        for (size_t act = lo; act <= hi; act += 16) report_row(p, act, what);
        rm_problem_free(p);
    }
    for (uint64_t seed = 1; seed <= 10 && strchr(which, 'r'); seed++) {
        rm_problem *p = random_training(seed, 7 + (int)(seed % 12));
        size_t lo = rm_problem_peak_lower_bound(p), hi = checkpoint_all_peak(p);
        char what[32];
        snprintf(what, sizeof what, "random%llu", (unsigned long long)seed);
        for (int k = 0; k < 4; k++) report_row(p, lo + (hi - lo) * (size_t)k / 4, what);
        rm_problem_free(p);
    }
}
