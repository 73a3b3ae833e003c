/* The table of baseline strategies (rm_strategy_list), the cheapest of them
 * that fits (rm_best_baseline: the solvers' incumbent), and the public
 * checkpoint-set construction. Below the solver route: it knows nothing of
 * LP rounding or the MILP. */
#include "baseline.h"
#include "deadline.h"
#include "log.h"
#include "strategy.h"

static const rm_strategy_info baselines[] = {RM_BASELINE_TABLE};
_Static_assert(sizeof baselines / sizeof baselines[0] == RM_BASELINE_COUNT, "RM_BASELINE_COUNT");

int rm_strategy_applies(const rm_strategy_info *st, const rm_problem *p)
{
    if (!st->needs_backward) return 1;
    for (int i = 0; i < p->n; i++)
        if (p->nodes[i].tag == RM_TAG_BACKWARD) return 1;
    return 0;
}

const rm_strategy_info *rm_strategy_list(int *count)
{
    *count = RM_BASELINE_COUNT;
    return baselines;
}

/* Whether baseline k's answer (ck, pk) beats the best so far, b's, as if
 * they had run in table order (see rm_best_baseline). */
static int beats(double ck, size_t pk, int k, double cb, size_t pb, int b, int prefer_lower_peak)
{
    if (ck != cb) return ck < cb;
    if (prefer_lower_peak && pk != pb) return pk < pb;
    return k < b;
}

rm_schedule *rm_best_baseline(const rm_problem *p, double deadline, int prefer_lower_peak, const char **name,
                              rm_sim_result *r)
{
    return rm_best_baseline_timed(p, deadline, prefer_lower_peak, name, r, NULL, 0);
}

rm_schedule *rm_best_baseline_timed(const rm_problem *p, double deadline, int prefer_lower_peak, const char **name,
                                    rm_sim_result *r, double *sim_s, int skip_checkpoint_all)
{
    rm_schedule *best = NULL;
    rm_sim_result best_r = {0};
    int best_k = -1;
    double best_sim_s = 0;
    /* The one-construction baselines first (QUICK of them, in this order),
     * then the searches, each with an equal share of what is left: on
     * 100,000 nodes each search alone takes seconds. Chen's sqrt(n) comes
     * last of the first: on a DAG with long skips its schedule recomputes
     * millions of nodes (seconds to build and simulate), so it is built
     * under the deadline too. Past the deadline the others still run until
     * one fits, so that there is an answer whenever one of them fits: they
     * compute each node at most twice. */
    enum { QUICK = 5 };
    static const int order[RM_BASELINE_COUNT] = {0, 4, 6, 9, 1, 2, 3, 5, 7, 8};
    int searches = RM_BASELINE_COUNT - QUICK;
    for (int i = 0; i < RM_BASELINE_COUNT; i++) {
        int k = order[i], quick = i < QUICK;
        const rm_strategy_info *st = &baselines[k];
        if (k == 0 && skip_checkpoint_all) continue; /* the caller's verdict: it does not fit */
        if (!rm_strategy_applies(st, p)) continue;
        if (rm_deadline_passed(deadline) && (!quick || best || st->solve_until)) {
            if (!quick || best) break;
            continue;
        }
        double t0 = rm_now();
        rm_schedule *s = NULL;
        rm_err e = {RM_OK, ""};
        rm_sim_result sr;
        int stopped = 0, rc;
        if (st->solve_until)
            rc = st->solve_until(&s, &stopped, p, quick ? deadline : rm_deadline_share(deadline, 1.0 / searches--), &e);
        else
            rc = st->solve(&s, p, &e);
        if (rc != RM_OK) {
            RM_LOG_DEBUG("baseline %s: none (%.3f s): %s", st->name, rm_now() - t0, e.msg);
            continue;
        }
        double s0 = rm_now();
        int ok = rm_simulate(&sr, p, s, &e) == RM_OK && rm_sim_fits(p, &sr);
        double took = rm_now() - s0;
        if (ok)
            RM_LOG_DEBUG("baseline %s: cost %.6g, peak %zu, %ld recomputations (%.3f s%s)", st->name, sr.cost,
                         sr.peak_bytes, sr.recomputations, rm_now() - t0,
                         stopped ? ", stopped at its share of the deadline" : "");
        if (!ok ||
            (best && !beats(sr.cost, sr.peak_bytes, k, best_r.cost, best_r.peak_bytes, best_k, prefer_lower_peak))) {
            rm_schedule_free(s);
            continue;
        }
        rm_schedule_free(best);
        best = s;
        best_r = sr;
        best_k = k;
        best_sim_s = took;
    }
    if (name) *name = best_k >= 0 ? baselines[best_k].name : NULL;
    if (sim_s) *sim_s = best_sim_s;
    if (r) *r = best_r;
    return best;
}

int rm_schedule_from_checkpoints(rm_schedule **out, const rm_problem *p, const uint8_t *checkpoint, rm_err *e)
{
    *out = NULL;
    int rc = rm_problem_validate(p, e);
    if (rc) return rc;
    rm_fwd_info fi;
    if ((rc = rm_fwd_info_init(&fi, p, e))) return rc;
    rm_schedule *s;
    if (!(rc = rm_build_from_checkpoints(&s, p, &fi, checkpoint, 0, e))) {
        rm_sim_result r;
        if ((rc = rm_simulate(&r, p, s, e)))
            rm_schedule_free(s);
        else
            *out = s;
    }
    rm_fwd_info_free(&fi);
    return rc;
}
