/* The table of baseline strategies (rm_strategy_list), the cheapest of them
 * that fits (rm_best_baseline: the solvers' incumbent), and the public
 * checkpoint-set construction. Below the solver route: it knows nothing of
 * LP rounding or the MILP. */
#include <time.h>

#include "baseline.h"
#include "log.h"
#include "strategy.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static const rm_strategy_info baselines[] = {RM_BASELINE_TABLE};
_Static_assert(sizeof baselines / sizeof baselines[0] == RM_BASELINE_COUNT, "RM_BASELINE_COUNT");

const rm_strategy_info *rm_strategy_list(int *count)
{
    *count = RM_BASELINE_COUNT;
    return baselines;
}

rm_schedule *rm_best_baseline(const rm_problem *p, double deadline, int prefer_lower_peak, const char **name,
                              rm_sim_result *r)
{
    rm_schedule *best = NULL;
    rm_sim_result best_r = {0};
    const char *best_name = NULL;
    for (int k = 0; k < RM_BASELINE_COUNT; k++) {
        if (deadline > 0 && now_s() >= deadline) break;
        double t0 = now_s();
        rm_schedule *s = NULL;
        rm_err e = {RM_OK, ""};
        rm_sim_result sr;
        if (baselines[k].solve(&s, p, &e) != RM_OK) {
            RM_LOG_DEBUG("baseline %s: none (%.3f s): %s", baselines[k].name, now_s() - t0, e.msg);
            continue;
        }
        int ok = rm_simulate(&sr, p, s, &e) == RM_OK && rm_sim_fits(p, &sr);
        if (ok)
            RM_LOG_DEBUG("baseline %s: cost %.6g, peak %zu, %ld recomputations (%.3f s)", baselines[k].name, sr.cost,
                         sr.peak_bytes, sr.recomputations, now_s() - t0);
        if (!ok || (best && !(sr.cost < best_r.cost || (prefer_lower_peak && sr.cost == best_r.cost &&
                                                         sr.peak_bytes < best_r.peak_bytes)))) {
            rm_schedule_free(s);
            continue;
        }
        rm_schedule_free(best);
        best = s;
        best_r = sr;
        best_name = baselines[k].name;
    }
    if (name) *name = best_name;
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
