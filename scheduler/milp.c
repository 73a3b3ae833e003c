/* The Checkmate MILP with lp_solve: the model of lp_model.c with S and R
 * binary, solved with every lever that makes lp_solve usable on it
 * (the levers in lp_model.h). One call runs these
 * steps in order, each below its own function:
 *   guards     the trivial bound; checkpoint-all (SHORTCUT / INCUMBENT); the given incumbent
 *   root       the LP relaxation: the lower bound, and the fractional S
 *   rounding   the relaxation rounded into an incumbent (INCUMBENT); optimal when it meets the bound
 *   search     branch and bound below the incumbent's cost (the cutoff)
 *   finish     status, bound and gap of the best schedule found */
#include "milp.h"

#include <lp_lib.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "simulate.h"
#include "strategy.h"

#define now_s rm_lp_now

void rm_milp_options_default(rm_milp_options *o)
{
    memset(o, 0, sizeof *o);
    o->levers = RM_MILP_DEFAULT;
    o->rounding_seeds = 16;
    /* NODE_GAPSELECT: measured on random training graphs of 22-38 nodes, it
     * proved 3 of 4 hard instances optimal within 2000 nodes where lp_solve's
     * default (NODE_FIRSTSELECT) proved 1 (see lp_model.h). */
    o->bb_rule = NODE_GAPSELECT;
}

typedef struct best_sched {
    rm_schedule *s;
    rm_sim_result sim;
} best_sched;

/* Keeps cand if it fits and beats *best (taking ownership either way). */
static void offer(best_sched *best, rm_schedule *cand, const rm_sim_result *sim)
{
    /* Equal cost: fewer recomputations (of zero-cost nodes), then lower peak. */
    if (!best->s || sim->cost < best->sim.cost ||
        (sim->cost == best->sim.cost &&
         (sim->recomputations < best->sim.recomputations ||
          (sim->recomputations == best->sim.recomputations && sim->peak_bytes < best->sim.peak_bytes)))) {
        rm_schedule_free(best->s);
        best->s = cand;
        best->sim = *sim;
    } else {
        rm_schedule_free(cand);
    }
}

static int near_equal(double a, double b) { return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b))); }

/* One call's state. */
typedef struct milp_run {
    const rm_problem *p;
    const rm_milp_options *opt;
    rm_milp_result *info;
    unsigned lv;
    int n, limited;
    size_t act; /* activation budget (when limited) */
    double t0, deadline;
    best_sched best;
    rm_lp_model m;
    int lp_done;     /* the root LP reached its optimum */
    double lp_bound; /* and this is it */
    double lower;    /* the LP bound rounded up to the cost step */
    int cutoff;      /* branch and bound was given the incumbent's cost */
    rm_schedule *cand;
} milp_run;

/* What a step leaves to do: the next step, the finish, or the finish after a
 * limit stopped the search (the status then depends on the bound). */
enum { STEP_NEXT, STEP_DONE, STEP_LIMIT };

/* Checkpoint-all (optimal where it fits: SHORTCUT returns it, INCUMBENT keeps
 * it as incumbent) and the caller's incumbent. */
static int step_guards(milp_run *r, int *rc, rm_err *e)
{
    const rm_problem *p = r->p;
    rm_sim_result sim;
    if ((*rc = rm_checkpoint_all_fit(&r->cand, &sim, p, e)) != RM_OK) {
        rm_err_context(e, "milp: checkpoint-all rejected by the simulator");
        return STEP_DONE;
    }
    if (r->cand) {
        if (!r->limited || (r->lv & RM_MILP_SHORTCUT)) {
            offer(&r->best, r->cand, &sim);
            r->cand = NULL;
            r->info->status = RM_STATUS_OPTIMAL;
            r->info->lp_bound = sim.cost;
            return STEP_DONE;
        }
        if (r->lv & RM_MILP_INCUMBENT) {
            offer(&r->best, r->cand, &sim);
            r->cand = NULL;
        }
    }
    rm_schedule_free(r->cand);
    r->cand = NULL;
    const rm_schedule *inc = r->opt->incumbent;
    if (!inc) return STEP_NEXT;
    if (inc->n != r->n) {
        *rc = rm_errorf(e, RM_ERR_INVALID, "milp: the incumbent has %d stages, the problem %d nodes", inc->n, r->n);
        return STEP_DONE;
    }
    if ((*rc = rm_schedule_create(&r->cand, r->n, e)) != RM_OK) return STEP_DONE;
    memcpy(r->cand->R, inc->R, (size_t)r->n * r->n);
    memcpy(r->cand->S, inc->S, (size_t)r->n * r->n);
    if ((*rc = rm_simulate(&sim, p, r->cand, e)) != RM_OK) {
        rm_err_context(e, "milp: the given incumbent is invalid");
        return STEP_DONE;
    }
    if (sim.peak_bytes <= r->act) offer(&r->best, r->cand, &sim);
    else rm_schedule_free(r->cand);
    r->cand = NULL;
    return STEP_NEXT;
}

/* The model and its LP relaxation: the bound, and the fractional S to round. */
static int step_root(milp_run *r, int *rc, rm_err *e)
{
    rm_milp_result *info = r->info;
    const rm_milp_options *opt = r->opt;
    if ((*rc = rm_lp_model_build(&r->m, r->p, r->act, r->lv, opt->log, opt->log_ctx, opt->verbosity, e)) != RM_OK)
        return STEP_DONE;
    info->ncols = r->m.ncols;
    info->nrows = r->m.nrows;
    info->nint = r->m.nS + r->m.nR + ((r->lv & RM_MILP_FREE_CONT) ? 0 : r->m.nfree);
    double lp_t0 = now_s();
    int code;
    r->lp_bound = 0;
    *rc = rm_lp_solve_relaxation(&r->m, &code, &r->lp_bound, r->deadline, e);
    info->lp_seconds = now_s() - lp_t0;
    if (*rc != RM_OK) return STEP_DONE;
    if (code == INFEASIBLE && r->best.s) {
        /* The relaxation has no cutoff, and a schedule the simulator
         * accepted within the budget is a point of it: lp_solve's answer is
         * numerical trouble, not a proof. Reported, not papered over. */
        *rc = rm_errorf(e, RM_ERR_SOLVER,
                        "milp: lp_solve reports the LP relaxation infeasible, but a schedule of cost %.6g fits %zu "
                        "bytes: numerical trouble in the solver",
                        r->best.sim.cost, r->act);
        return STEP_DONE;
    }
    if (code == INFEASIBLE) {
        info->status = RM_STATUS_INFEASIBLE;
        *rc = rm_errorf(e, RM_ERR_INFEASIBLE, "milp: the LP relaxation is infeasible: no schedule fits %zu bytes",
                        r->act);
        return STEP_DONE;
    }
    if (code != OPTIMAL) return STEP_LIMIT;
    info->lp_bound = r->lp_bound;
    r->lp_done = 1;
    return STEP_NEXT;
}

/* The relaxation rounded into an incumbent (lp_round.c): with nothing to cut
 * with yet, also the relaxations of tighter budgets. */
static int round_incumbent(milp_run *r, rm_err *e)
{
    int n = r->n, rc;
    double *v = NULL, *S_frac = malloc((size_t)n * n * sizeof *S_frac);
    if (!S_frac) return rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory");
    if (!get_ptr_variables(r->m.lp, &v) || !v) {
        free(S_frac);
        return rm_errorf(e, RM_ERR_SOLVER, "lp_solve get_ptr_variables failed after the LP relaxation");
    }
    rm_lp_fill_fractional(&r->m, v, S_frac, NULL);
    rm_lp_round_options ro;
    rm_lp_round_options_default(&ro);
    ro.seeds = r->opt->rounding_seeds;
    rm_lp_round_result rr;
    rm_err re = {0};
    int rrc = rm_lp_round_from(&r->cand, &rr, r->p, S_frac, r->lp_bound, &ro, &re);
    free(S_frac);
    if (rrc == RM_ERR_INFEASIBLE && !r->best.s) {
        ro.time_limit_s = r->deadline > 0 ? r->deadline - now_s() : 0;
        if (r->deadline == 0 || ro.time_limit_s > 0)
            rrc = rm_lp_round_tightened(&r->cand, &rr, r->p, r->lp_bound, &ro, &re);
    }
    if (rrc == RM_OK) {
        rm_sim_result sim;
        if ((rc = rm_simulate(&sim, r->p, r->cand, e)) != RM_OK) return rc;
        RM_LOG_DEBUG("milp: the rounded relaxation costs %.6g (peak %zu)", sim.cost, sim.peak_bytes);
        offer(&r->best, r->cand, &sim);
        r->cand = NULL;
    } else if (rrc != RM_ERR_INFEASIBLE) {
        if (e) *e = re;
        return rrc;
    } else {
        RM_LOG_DEBUG("milp: no rounding of the relaxation fits (%s)", re.msg);
    }
    return RM_OK;
}

/* The rounded incumbent; optimal at once when it meets the bound. */
static int step_rounding(milp_run *r, int *rc, rm_err *e)
{
    if ((r->lv & RM_MILP_INCUMBENT) && (*rc = round_incumbent(r, e)) != RM_OK) return STEP_DONE;
    if (r->best.s) {
        r->info->incumbent_cost = r->best.sim.cost;
        if (r->best.sim.cost <= rm_lp_step_up(r->lp_bound, r->m.step) || near_equal(r->best.sim.cost, r->lp_bound)) {
            r->info->status = RM_STATUS_OPTIMAL; /* the bound is attained: nothing to search */
            r->info->from_incumbent = 1;
            return STEP_DONE;
        }
    }
    if (r->deadline > 0 && now_s() >= r->deadline) return STEP_LIMIT;
    return STEP_NEXT;
}

/* Integers, branching mode and priorities, and the cutoff. */
static int bb_setup(milp_run *r, rm_err *e)
{
    int n = r->n, rc;
    unsigned lv = r->lv;
    const rm_milp_options *opt = r->opt;
    if (lv & RM_MILP_PRESOLVE) {
        /* lp_solve 5.5.2 crashes (transfer_solution) when presolve is
         * switched on for a model that was already solved: start afresh. */
        rm_lp_model_free(&r->m);
        if ((rc = rm_lp_model_build(&r->m, r->p, r->act, lv, opt->log, opt->log_ctx, opt->verbosity, e)) != RM_OK)
            return rc;
        set_presolve(r->m.lp, PRESOLVE_ROWS | PRESOLVE_COLS | PRESOLVE_LINDEP, get_presolveloops(r->m.lp));
    }
    const rm_lp_model *m = &r->m;
    lprec *lp = m->lp;
    if ((rc = rm_lp_model_set_integers(&r->m, e)) != RM_OK) return rc;
    set_bb_floorfirst(lp, (lv & RM_MILP_BRANCH_AUTO)  ? BRANCH_AUTOMATIC
                          : (lv & RM_MILP_FLOOR_FIRST) ? BRANCH_FLOOR
                                                       : BRANCH_CEILING);
    if (opt->bb_rule >= 0) set_bb_rule(lp, opt->bb_rule);
    if (opt->depth_limit != 0) set_bb_depthlimit(lp, opt->depth_limit);
    if (opt->mip_gap > 0) set_mip_gap(lp, FALSE, opt->mip_gap);
    if (lv & RM_MILP_S_PRIORITY) {
        /* Lower weight branches first: S (what to keep) decides the
         * schedule; R then mostly follows from the inputs rows. */
        double *w = malloc((size_t)m->ncols * sizeof *w);
        if (!w) return rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory");
        for (int c = 0; c < m->ncols; c++) w[c] = 2.0 * m->ncols + c; /* FREE / U: last, in column order */
        for (size_t x = 0; x < (size_t)n * n; x++) {
            if (m->s_col[x]) w[m->s_col[x] - 1] = m->s_col[x];
            if (m->r_col[x]) w[m->r_col[x] - 1] = m->ncols + m->r_col[x];
        }
        MYBOOL ok = set_var_weights(lp, w);
        free(w);
        if (!ok) return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_var_weights failed");
    }
    r->cutoff = r->best.s != NULL;
    if (r->cutoff) {
        /* Only strictly better solutions are wanted: when the search ends
         * without one, the incumbent is optimal. lp_solve 5.5 has no MIP
         * start, so the cutoff (set_obj_bound) is how the incumbent helps. */
        double cut;
        if (m->step > 0) /* costs move in steps: ask for a whole step better */
            cut = (r->best.sim.cost - 0.99 * m->step - m->cost_const) / m->cost_scale;
        else
            cut = (r->best.sim.cost - m->cost_const) / m->cost_scale;
        set_obj_bound(lp, cut);
    }
    return RM_OK;
}

/* lp_solve's integer solution: its S, the cheapest R for it, judged by the
 * simulator. */
static int take_solution(milp_run *r, rm_err *e)
{
    int n = r->n, rc;
    const rm_lp_model *m = &r->m;
    if ((rc = rm_schedule_create(&r->cand, n, e)) != RM_OK) return rc;
    /* By original index: presolve may have removed columns, and
     * get_var_primalresult answers for those too. */
    for (size_t x = 0; x < (size_t)n * n; x++)
        r->cand->S[x] = m->s_col[x] && get_var_primalresult(m->lp, m->nrows + m->s_col[x]) > 0.5;
    /* The cheapest R for the solver's S: never dearer, never more memory. */
    if ((rc = rm_milp_cheapest_R(r->cand, r->p, e)) != RM_OK) return rc;
    rm_sim_result sim;
    if ((rc = rm_simulate(&sim, r->p, r->cand, e)) != RM_OK) {
        rm_err_context(e, "milp: lp_solve's solution was rejected by the simulator");
        return rc;
    }
    if (sim.peak_bytes > r->act)
        return rm_errorf(e, RM_ERR_SOLVER,
                         "milp: lp_solve's solution peaks at %zu bytes in the simulator, above the budget %zu "
                         "(stage %d, node %d): model and simulator disagree",
                         sim.peak_bytes, r->act, sim.peak_stage, sim.peak_node);
    int had = r->best.s != NULL;
    offer(&r->best, r->cand, &sim);
    r->cand = NULL;
    r->info->from_incumbent = had && r->best.s && r->best.sim.cost < sim.cost;
    return RM_OK;
}

/* Branch and bound, and what its answer means. */
static int step_search(milp_run *r, int *rc, rm_err *e)
{
    rm_milp_result *info = r->info;
    if ((*rc = bb_setup(r, e)) != RM_OK) return STEP_DONE;
    rm_lp_watch w = rm_lp_watch_make(r->opt->node_limit, r->deadline);
    int code = rm_lp_solve_watched(r->m.lp, &w, 1);
    info->solver_code = code;
    info->nodes = (long)get_total_nodes(r->m.lp);
    info->improvements = w.improvements;
    if (w.first >= 0) info->first_solution_s = w.first + (w.t0 - r->t0);
    /* With a cutoff, lp_solve 5.5 may answer OPTIMAL or SUBOPTIMAL without
     * having found anything better, and its "solution" is then not one: only
     * a reported improvement counts. SUBOPTIMAL means "stopped early", so
     * even without a cutoff it holds a solution only if one was reported:
     * reading the variables of a search stopped before its first solution
     * gives a meaningless S. */
    int found = code == OPTIMAL ? !r->cutoff || w.first >= 0 : code == SUBOPTIMAL ? w.first >= 0 : 0;
    if (found) {
        if ((*rc = take_solution(r, e)) != RM_OK) return STEP_DONE;
        if (code != OPTIMAL) return STEP_LIMIT;
        info->status = RM_STATUS_OPTIMAL;
        return STEP_DONE;
    }
    if (code == INFEASIBLE || code == OPTIMAL) {
        /* The search finished and found nothing below the cutoff. */
        if (r->best.s) {
            info->status = RM_STATUS_OPTIMAL;
            info->from_incumbent = 1;
            return STEP_DONE;
        }
        info->status = RM_STATUS_INFEASIBLE;
        *rc = rm_errorf(e, RM_ERR_INFEASIBLE, "milp: lp_solve proved that no schedule fits %zu bytes", r->act);
        return STEP_DONE;
    }
    if (code == SUBOPTIMAL || code == USERABORT || code == TIMEOUT) {
        info->from_incumbent = r->best.s != NULL;
        return STEP_LIMIT;
    }
    *rc = rm_lp_failure(code, "MILP", e);
    return STEP_DONE;
}

/* A limit stopped the search: optimal only if the bound proves it. */
static int limit_status(milp_run *r, rm_err *e)
{
    rm_milp_result *info = r->info;
    r->lower = rm_lp_step_up(info->lp_bound, r->m.step);
    if (r->best.s) {
        info->status = r->lp_done && (r->best.sim.cost <= r->lower || near_equal(r->best.sim.cost, r->lower))
                           ? RM_STATUS_OPTIMAL
                           : RM_STATUS_FEASIBLE;
        return RM_OK;
    }
    info->status = RM_STATUS_NO_SOLUTION;
    return rm_errorf(e, RM_ERR_INFEASIBLE,
                     "milp: no schedule found within the limits (%s; %ld nodes, %.1f s): not proved infeasible",
                     r->opt->node_limit > 0 && info->nodes >= r->opt->node_limit ? "node limit" : "time limit",
                     info->nodes, now_s() - r->t0);
}

/* The answer: the best schedule with its bound and gap, or the error. */
static int finish(milp_run *r, rm_schedule **out, int rc, rm_err *e)
{
    rm_milp_result *info = r->info;
    rm_schedule_free(r->cand);
    rm_lp_model_free(&r->m);
    info->seconds = now_s() - r->t0;
    if (rc == RM_OK && r->best.s) {
        info->objective = r->best.sim.cost;
        info->peak_bytes = r->best.sim.peak_bytes;
        if (info->status == RM_STATUS_OPTIMAL) {
            info->lower_bound = r->best.sim.cost;
            info->gap = 0;
        } else {
            info->lower_bound = r->lower;
            info->gap = r->best.sim.cost > 0 ? (r->best.sim.cost - info->lower_bound) / r->best.sim.cost : 0;
            if (info->gap < 0) info->gap = 0;
        }
        *out = r->best.s;
        return RM_OK;
    }
    rm_schedule_free(r->best.s);
    if (rc == RM_OK) rc = rm_errorf(e, RM_ERR_SOLVER, "milp: internal error: no schedule and no error");
    return rc;
}

int rm_strategy_milp(rm_schedule **out, rm_milp_result *info, const rm_problem *p, const rm_milp_options *opt,
                     rm_err *e)
{
    milp_run r;
    memset(&r, 0, sizeof r);
    r.t0 = now_s();
    rm_milp_options dflt;
    rm_milp_result dummy;
    if (!opt) {
        rm_milp_options_default(&dflt);
        opt = &dflt;
    }
    if (!info) info = &dummy;
    memset(info, 0, sizeof *info);
    info->solver_code = -100;
    info->first_solution_s = -1;
    info->incumbent_cost = -1;
    info->status = RM_STATUS_NO_SOLUTION;
    if (!out) return rm_errorf(e, RM_ERR_INVALID, "milp: out is NULL");
    *out = NULL;
    int rc = rm_lp_check_problem(p, "milp", e);
    if (rc != RM_OK) return rc;
    if ((rc = rm_problem_check_budget(p, "milp", e)) != RM_OK) {
        info->status = RM_STATUS_INFEASIBLE;
        info->seconds = now_s() - r.t0;
        return rc;
    }
    r.p = p;
    r.opt = opt;
    r.info = info;
    r.lv = opt->levers;
    r.n = p->n;
    r.deadline = opt->time_limit_s > 0 ? r.t0 + opt->time_limit_s : 0;
    r.limited = p->budget != 0;
    r.act = r.limited ? rm_problem_activation_budget(p) : 0;

    int step = step_guards(&r, &rc, e);
    if (step == STEP_NEXT) step = step_root(&r, &rc, e);
    if (step == STEP_NEXT) step = step_rounding(&r, &rc, e);
    if (step == STEP_NEXT) step = step_search(&r, &rc, e);
    if (step == STEP_LIMIT) rc = limit_status(&r, e);
    return finish(&r, out, rc, e);
}
