/* Checkmate's two-phase LP rounding (Jain et al., MLSys 2020, section 5):
 * round the retention matrix S of the LP relaxation, then compute the
 * cheapest R for that S exactly. It is the scalable fallback when the MILP is
 * out of reach, and the incumbent that makes lp_solve's branch and bound
 * usable at all. Every candidate is judged by rm_simulate. */
#include "lp_round.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rng.h"
#include "simulate.h"

void rm_lp_round_options_default(rm_lp_round_options *o)
{
    memset(o, 0, sizeof *o);
    o->seeds = 16;
    o->seed = 0x5eed;
    o->tighten = 4;
    /* The MILP's own relaxation, so that the MILP's rounded incumbent is
     * exactly this rounding (milp.c) and "best" never needs a second LP.
     * The half-unit budget slack (without TIGHT_BUDGET) rounded a little
     * better on test_milp.c's pinned instances (64 cost units above the
     * optima on 39 small budgets instead of 77) and worse on others (33 of
     * 35 random budgets answered instead of 35); its bound is below
     * Checkmate's published one. */
    o->levers = RM_MILP_DEFAULT;
}

int rm_milp_cheapest_R(rm_rs *s, const rm_problem *p, rm_err *e)
{
    return rm_milp_cheapest_R_by(s, p, 0, e);
}

int rm_milp_cheapest_R_by(rm_rs *s, const rm_problem *p, double deadline, rm_err *e)
{
    if (!s || !p || s->n != p->n) return rm_errorf(e, RM_ERR_INVALID, "cheapest R: schedule and problem sizes differ");
    int n = p->n;
    uint8_t *mark = calloc((size_t)n + 1, 1), *read = calloc((size_t)n + 1, 1);
    if (!mark || !read) {
        free(mark);
        free(read);
        return rm_errorf(e, RM_ERR_NOMEM, "cheapest R: out of memory (n = %d)", n);
    }
    int rc = RM_OK;
    /* Backwards, so that S[t+1] is final (cleaned) before stage t decides
     * what it must produce for it. */
    for (int t = n - 1; t >= 0; t--) {
        /* A stage is O(n): the clock read per stage costs nothing beside it. */
        if (rm_deadline_passed(deadline)) {
            rc = rm_errorf(e, RM_ERR_BUDGET, "cheapest R: the time limit stopped it at stage %d of %d", t, n);
            break;
        }
        /* S[t][i] is only meaningful for i < t; anything else would be read
         * as a second resident copy. Stage t reads no S[t][i >= t] and no
         * later stage reads row t, so each row is cleared at its stage (one
         * pass, under the deadline). */
        for (int i = t; i < n; i++) *rm_S(s, t, i) = 0;
        memset(mark, 0, (size_t)n);
        memset(read, 0, (size_t)n);
        mark[t] = 1;
        if (t + 1 < n)
            for (int i = 0; i < t; i++)
                if (rm_S_at(s, t + 1, i) && !rm_S_at(s, t, i)) mark[i] = 1; /* S[t+1] <= S[t] + R[t] */
        /* Dependencies have smaller indices, so one descending pass closes
         * the set: every marked node is forced by t or by retention. */
        for (int i = t; i >= 0; i--) {
            *rm_R(s, t, i) = mark[i];
            if (!mark[i]) continue;
            const rm_problem_node *nd = &p->nodes[i];
            for (int d = 0; d < nd->ndeps; d++) {
                int j = nd->deps[d];
                read[j] = 1;
                if (!rm_S_at(s, t, j)) mark[j] = 1;
            }
        }
        for (int i = t + 1; i < n; i++) *rm_R(s, t, i) = 0;
        /* A retained value nothing reads and nothing carries only costs
         * memory in the MILP's accounting; drop it. */
        for (int i = 0; i < t; i++)
            if (rm_S_at(s, t, i) && !read[i] && !(t + 1 < n && rm_S_at(s, t + 1, i))) *rm_S(s, t, i) = 0;
    }
    free(mark);
    free(read);
    return rc;
}

int rm_lp_round_from(rm_schedule **out, rm_lp_round_result *info, const rm_problem *p, const double *S_frac,
                     double lp_bound, const rm_lp_round_options *opt, rm_err *e)
{
    double t0 = rm_now();
    rm_lp_round_options dflt;
    if (!opt) {
        rm_lp_round_options_default(&dflt);
        opt = &dflt;
    }
    if (!out || !p || !S_frac || p->n <= 0) return rm_errorf(e, RM_ERR_INVALID, "lp_round: bad arguments");
    *out = NULL;
    int n = p->n, rc;
    rm_rs *cand = NULL, *best = NULL;
    rm_sim_result best_sim = {0};
    double best_thr = -1;
    int best_seed = -1, tried = 0, fitted = 0;
    if ((rc = rm_rs_create(&cand, n, e)) != RM_OK) return rc;
    if ((rc = rm_rs_create(&best, n, e)) != RM_OK) {
        rm_rs_free(cand);
        return rc;
    }
    int have_best = 0;
    /* 0.5 first (the paper's deterministic rounding); lower thresholds keep
     * more and recompute less, higher ones fit tighter budgets. */
    static const double thresholds[] = {0.5, 0.4, 0.6, 0.3, 0.7, 0.2, 0.8, 0.1, 0.9, 0.02, 0.98};
    int nthr = (int)(sizeof thresholds / sizeof thresholds[0]);
    int total = nthr + (opt->seeds > 0 ? opt->seeds : 0);
    for (int c = 0; c < total; c++) {
        rm_rng rng = rm_rng_make(opt->seed + (uint64_t)(c - nthr));
        memset(cand->S, 0, (size_t)n * (size_t)n);
        for (int t = 1; t < n; t++)
            for (int i = 0; i < t; i++) {
                double v = S_frac[(size_t)t * (size_t)n + (size_t)i];
                int keep = c < nthr ? v >= thresholds[c] : rm_rng_uniform(&rng) < v;
                *rm_S(cand, t, i) = (uint8_t)keep;
            }
        if ((rc = rm_milp_cheapest_R(cand, p, e)) != RM_OK) goto fail;
        rm_sim_result sim;
        if ((rc = rm_simulate_rs(&sim, p, cand, e)) != RM_OK) {
            rm_err_context(e, "lp_round: a rounded schedule was rejected by the simulator");
            goto fail;
        }
        tried++;
        if (!rm_sim_fits(p, &sim)) continue;
        fitted++;
        if (!have_best || rm_sim_better(&sim, &best_sim)) {
            have_best = 1;
            best_sim = sim;
            memcpy(best->R, cand->R, (size_t)n * (size_t)n);
            memcpy(best->S, cand->S, (size_t)n * (size_t)n);
            best_thr = c < nthr ? thresholds[c] : -1;
            best_seed = c < nthr ? -1 : c - nthr;
        }
    }
    rm_rs_free(cand);
    cand = NULL;
    if (info) {
        memset(info, 0, sizeof *info);
        info->lp_bound = lp_bound;
        info->tried = tried;
        info->fitted = fitted;
        info->threshold = best_thr;
        info->seed_index = best_seed;
        info->seconds = rm_now() - t0;
    }
    if (have_best)
        RM_LOG_DEBUG("lp_round: %d roundings of the relaxation (bound %.6g), %d fit; the cheapest costs %.6g", tried,
                     lp_bound, fitted, best_sim.cost);
    else
        RM_LOG_DEBUG("lp_round: %d roundings of the relaxation (bound %.6g), none fits", tried, lp_bound);
    if (!have_best) {
        rm_rs_free(best);
        return rm_errorf(e, RM_ERR_INFEASIBLE,
                         "lp_round: none of %d roundings of the LP relaxation fits the activation budget of %zu bytes",
                         tried, p->budget > p->fixed_bytes ? p->budget - p->fixed_bytes : (size_t)0);
    }
    if (info) {
        info->objective = best_sim.cost;
        info->peak_bytes = best_sim.peak_bytes;
        info->gap = best_sim.cost > 0 ? (best_sim.cost - lp_bound) / best_sim.cost : 0;
        if (info->gap < 0) info->gap = 0;
    }
    rc = rm_schedule_from_rs(out, best, e);
    rm_rs_free(best);
    return rc;
fail:
    rm_rs_free(cand);
    rm_rs_free(best);
    return rc;
}

/* Rounds the relaxation of p solved at a fraction of its activation budget
 * (the rounded schedule is still judged against the real budget). */
static int round_at(rm_schedule **out, rm_lp_round_result *info, int *relax_failed, const rm_problem *p, double factor,
                    const rm_lp_round_options *opt, double deadline, rm_lp_model **kept, rm_err *e)
{
    *relax_failed = 1;
    rm_problem q = *p; /* shallow: only the budget differs */
    if (factor < 1 && p->budget > p->fixed_bytes)
        q.budget = p->fixed_bytes + (size_t)((double)(p->budget - p->fixed_bytes) * factor);
    double left = 0;
    if (deadline > 0) {
        left = deadline - rm_now();
        if (left <= 0) return rm_errorf(e, RM_ERR_INFEASIBLE, "lp_round: time limit reached");
    }
    rm_milp_relaxation rel;
    int rc = rm_milp_relax_kept(&rel, kept, &q, opt->levers, left, e);
    if (rc != RM_OK) return rc;
    *relax_failed = 0;
    rc = rm_lp_round_from(out, info, p, rel.S, rel.bound, opt, e);
    if (info) {
        info->lp_seconds = rel.seconds;
        info->budget_factor = factor;
    }
    rm_milp_relaxation_free(&rel);
    return rc;
}

/* rm_lp_round_tightened with the relaxations' model kept in *kept (see
 * rm_milp_relax_kept): each tighter budget starts from the last one's
 * basis. ResNet-tiny at batch 4 and 70% (4,465 columns), whose roundings
 * fit at none of the four tighter budgets: each relaxation 1.6-2.2 s built
 * and solved afresh, 0.2 s so; lp_round in all 9.4 s, now 2.5 s, with the
 * same bounds. */
static int tightened(rm_schedule **out, rm_lp_round_result *info, const rm_problem *p, double lp_bound,
                     const rm_lp_round_options *opt, rm_lp_model **kept, rm_err *e)
{
    double t0 = rm_now(), deadline = opt->time_limit_s > 0 ? t0 + opt->time_limit_s : 0;
    int rc = RM_ERR_INFEASIBLE;
    for (int k = 1; k <= opt->tighten && !rm_problem_bound_over_cap(p, lp_bound); k++) {
        double factor = 1.0 - 0.05 * k;
        int relax_failed;
        rc = round_at(out, info, &relax_failed, p, factor, opt, deadline, kept, e);
        if (rc != RM_ERR_INFEASIBLE || relax_failed) break; /* found one, a real failure, or nothing tighter fits */
    }
    if (info) {
        info->lp_bound = lp_bound; /* the bound is the relaxation at the real budget */
        info->gap = rc == RM_OK && info->objective > 0 ? (info->objective - lp_bound) / info->objective : 0;
        if (info->gap < 0) info->gap = 0;
        info->seconds = rm_now() - t0;
    }
    if (rc == RM_ERR_INFEASIBLE)
        rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                       "lp_round: no rounding fits the budget, also with the relaxation solved at %d tighter budgets "
                       "(down to %.0f%%)",
                       opt->tighten, 100.0 * (1.0 - 0.05 * opt->tighten));
    return rc;
}

int rm_lp_round_tightened(rm_schedule **out, rm_lp_round_result *info, const rm_problem *p, double lp_bound,
                          const rm_lp_round_options *opt, rm_err *e)
{
    rm_lp_model *kept = NULL;
    int rc = tightened(out, info, p, lp_bound, opt, &kept, e);
    rm_lp_model_discard(kept);
    return rc;
}

int rm_strategy_lp_round(rm_schedule **out, rm_lp_round_result *info, const rm_problem *p,
                         const rm_lp_round_options *opt, rm_err *e)
{
    double t0 = rm_now();
    rm_lp_round_options dflt;
    if (!opt) {
        rm_lp_round_options_default(&dflt);
        opt = &dflt;
    }
    if (out) *out = NULL;
    double deadline = opt->time_limit_s > 0 ? t0 + opt->time_limit_s : 0;
    rm_milp_relaxation rel;
    rm_lp_model *kept = NULL; /* for the tighter budgets */
    int rc = rm_milp_relax_kept(&rel, &kept, p, opt->levers, opt->time_limit_s, e);
    if (rc != RM_OK) {
        rm_lp_model_discard(kept);
        return rc;
    }
    double bound = rel.bound, lp_s = rel.seconds;
    if (rm_problem_bound_over_cap(p, bound)) {
        /* Every schedule costs at least the bound: none is within the cap,
         * and tighter budgets only raise it. */
        rm_lp_model_discard(kept);
        rm_milp_relaxation_free(&rel);
        if (info) {
            memset(info, 0, sizeof *info);
            info->lp_bound = bound;
            info->lp_seconds = lp_s;
            info->seconds = rm_now() - t0;
        }
        return rm_errorf(e, RM_ERR_INFEASIBLE, "lp_round: the LP bound %.6g is above the compute cap %.6g", bound,
                         p->max_cost);
    }
    rc = rm_lp_round_from(out, info, p, rel.S, rel.bound, opt, e);
    rm_milp_relaxation_free(&rel);
    if (info) info->budget_factor = 1.0;
    if (rc == RM_ERR_INFEASIBLE && opt->tighten > 0) {
        /* The rounding overshoots the budget: round the relaxation of a
         * tighter budget instead, whose roundings land lower. */
        rm_lp_round_options o2 = *opt;
        o2.time_limit_s = deadline > 0 ? deadline - rm_now() : 0;
        if (deadline == 0 || o2.time_limit_s > 0) rc = tightened(out, info, p, bound, &o2, &kept, e);
    }
    rm_lp_model_discard(kept);
    if (info) {
        info->lp_bound = bound;
        info->lp_seconds += lp_s;
        info->seconds = rm_now() - t0;
    }
    return rc;
}
