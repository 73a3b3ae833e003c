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
#include "report.h"
#include "simulate.h"
#include "strategy.h"

void rm_milp_options_default(rm_milp_options *o)
{
    memset(o, 0, sizeof *o);
    o->levers = RM_MILP_DEFAULT;
    o->rounding_seeds = 16;
    /* NODE_GAPSELECT: with the other defaults it proves 4 of the 5 graphs of
     * lp_model.h's "hard set" optimal within 2000 nodes, where lp_solve's
     * own rule (NODE_FIRSTSELECT) proves 2 (the figures are lp_model.h's). */
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

static int near_equal(double a, double b)
{
    return fabs(a - b) <= 1e-9 * fmax(1.0, fmax(fabs(a), fabs(b)));
}

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
    double *rc, *x0; /* RC_FIX: the root LP's reduced costs and values, by column (0-based) */
    double lp_obj;   /* the root LP's objective in lp_solve's units */
    int cutoff;      /* branch and bound was given the incumbent's cost */
    rm_schedule *cand;
    uint8_t *nogood_S;     /* n x n: the S of lp_solve's last answer (the no-good cut's support) */
    int nogood_stage;      /* the stage where the simulator found it over the budget */
    const char *stop;      /* why the search stopped without a proof, when not a limit */
    rm_milp_engine engine; /* the search's engine(s), resolved (milp_engine.h) */
    double *xs[2];         /* the engines' solutions by column: lp_solve's, CBC's (and CBC's start) */
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
    const rm_problem_report *facts = r->opt->facts;
    if (facts) {
        /* The caller's verdict: checkpoint-all built only where it fits, with
         * the facts' simulation of it. */
        rm_budget_verdict v = rm_budget_verdict_of(p, facts);
        sim = facts->noremat;
        r->cand = NULL;
        if ((v == RM_BUDGET_FITS || v == RM_BUDGET_UNLIMITED) &&
            (*rc = rm_checkpoint_all_build(&r->cand, p, e)) != RM_OK)
            return STEP_DONE;
    } else if ((*rc = rm_checkpoint_all_fit(&r->cand, &sim, p, e)) != RM_OK) {
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
    if ((*rc = rm_schedule_copy(&r->cand, inc, e)) != RM_OK) return STEP_DONE;
    if ((*rc = rm_simulate(&sim, p, r->cand, e)) != RM_OK) {
        rm_err_context(e, "milp: the given incumbent is invalid");
        return STEP_DONE;
    }
    if (rm_sim_fits(p, &sim))
        offer(&r->best, r->cand, &sim);
    else
        rm_schedule_free(r->cand);
    r->cand = NULL;
    return STEP_NEXT;
}

/* RC_FIX: the root LP's reduced costs and values, kept for bb_setup. */
static int keep_reduced_costs(milp_run *r, rm_err *e)
{
    lprec *lp = r->m.lp;
    int nc = r->m.ncols, nr = r->m.nrows;
    REAL *duals = NULL, *v = NULL;
    r->lp_obj = get_objective(lp);
    r->rc = malloc((size_t)nc * sizeof *r->rc);
    r->x0 = malloc((size_t)nc * sizeof *r->x0);
    if (!r->rc || !r->x0) return rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory");
    /* lp_solve's duals: nrows row duals, then the columns' reduced costs. */
    if (!get_ptr_sensitivity_rhs(lp, &duals, NULL, NULL) || !duals || !get_ptr_variables(lp, &v) || !v)
        return rm_errorf(e, RM_ERR_SOLVER, "lp_solve gave no reduced costs after the LP relaxation");
    memcpy(r->rc, duals + nr, (size_t)nc * sizeof *r->rc);
    memcpy(r->x0, v, (size_t)nc * sizeof *r->x0);
    set_presolve(lp, get_presolve(lp) & ~PRESOLVE_SENSDUALS, get_presolveloops(lp)); /* the search needs none */
    return RM_OK;
}

/* RC_FIX: every S and R at a bound of the root LP whose reduced cost alone
 * takes the bound past the cutoff keeps that bound: moving it costs at
 * least its reduced cost, and nothing at or above the cutoff is wanted. */
static int fix_by_reduced_cost(milp_run *r, double cut, rm_err *e)
{
    const rm_lp_model *m = &r->m;
    double room = cut - r->lp_obj + 1e-9 * fmax(1.0, fabs(cut));
    int fixed = 0;
    for (size_t x = 0; x < (size_t)r->n * r->n; x++)
        for (int k = 0; k < 2; k++) {
            int c = k ? m->r_col[x] : m->s_col[x];
            if (!c) continue;
            double d = r->rc[c - 1], v = r->x0[c - 1];
            int ok = 1;
            if (v <= 1e-9 && d > room)
                ok = set_upbo(m->lp, c, 0.0), fixed++;
            else if (v >= 1 - 1e-9 && -d > room)
                ok = set_lowbo(m->lp, c, 1.0), fixed++;
            if (!ok) return rm_errorf(e, RM_ERR_SOLVER, "lp_solve set_upbo/set_lowbo failed on column %d", c);
        }
    RM_LOG_DEBUG("milp: reduced-cost fixing: %d of %d S and R fixed (room %.6g)", fixed, m->nS + m->nR, room);
    return RM_OK;
}

/* The model and its LP relaxation: the bound, and the fractional S to round. */
static int step_root(milp_run *r, int *rc, rm_err *e)
{
    rm_milp_result *info = r->info;
    const rm_milp_options *opt = r->opt;
    *rc = rm_lp_model_build(&r->m, r->p, r->act, r->lv, opt->log, opt->log_ctx, opt->verbosity, r->deadline, e);
    if (*rc != RM_OK && r->m.stopped) {
        *rc = RM_OK; /* the incumbent, if any, is the answer */
        return STEP_LIMIT;
    }
    if (*rc != RM_OK) return STEP_DONE;
    info->ncols = r->m.ncols;
    info->nrows = r->m.nrows;
    info->nint = r->m.nS + r->m.nR + ((r->lv & RM_MILP_FREE_CONT) ? 0 : r->m.nfree);
    double lp_t0 = rm_now();
    int code;
    r->lp_bound = 0;
    /* lp_solve 5.5 computes duals only when asked, through set_presolve. */
    if (r->lv & RM_MILP_RC_FIX)
        set_presolve(r->m.lp, get_presolve(r->m.lp) | PRESOLVE_SENSDUALS, get_presolveloops(r->m.lp));
    *rc = rm_lp_solve_relaxation(&r->m, &code, &r->lp_bound, r->deadline, e);
    info->lp_seconds = rm_now() - lp_t0;
    if (*rc != RM_OK) return STEP_DONE;
    if (code == OPTIMAL && (r->lv & RM_MILP_RC_FIX) && (*rc = keep_reduced_costs(r, e)) != RM_OK) return STEP_DONE;
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
    if (rm_problem_bound_over_cap(r->p, r->lp_bound)) {
        info->status = RM_STATUS_INFEASIBLE;
        *rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                        "milp: the LP bound %.6g is above the compute cap %.6g: no schedule fits %zu bytes within it",
                        r->lp_bound, r->p->max_cost, r->act);
        return STEP_DONE;
    }
    return STEP_NEXT;
}

/* The relaxation rounded into an incumbent (lp_round.c), exactly as
 * lp_round does it: where no rounding fits, the relaxations of tighter
 * budgets too, even with an incumbent at hand, so that the MILP's answer is
 * never dearer than LP rounding's ("best" relies on it and runs no
 * separate rounding). */
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
    if (rrc == RM_ERR_INFEASIBLE) {
        ro.time_limit_s = r->deadline > 0 ? r->deadline - rm_now() : 0;
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
        if (r->opt->first_fit) {
            r->stop = "first fit";
            return STEP_LIMIT; /* the status then says whether the bound proves it optimal */
        }
        if (r->best.sim.cost <= rm_lp_step_up(r->lp_bound, r->m.step) || near_equal(r->best.sim.cost, r->lp_bound)) {
            r->info->status = RM_STATUS_OPTIMAL; /* the bound is attained: nothing to search */
            r->info->from_incumbent = 1;
            return STEP_DONE;
        }
    }
    if (r->deadline > 0 && rm_now() >= r->deadline) return STEP_LIMIT;
    return STEP_NEXT;
}

/* The cutoff of an engine's search, in the model's units: strictly below
 * the best schedule's cost (a whole cost step below where costs move in
 * steps), or below the compute cap; INFINITY when neither. */
static double search_cutoff(const milp_run *r)
{
    const rm_lp_model *m = &r->m;
    if (r->best.s)
        return m->step > 0 ? (r->best.sim.cost - 0.99 * m->step - m->cost_const) / m->cost_scale
                           : (r->best.sim.cost - m->cost_const) / m->cost_scale;
    /* The compute cap is a cutoff too: branch and bound prunes every node
     * whose bound passes it, so ending with nothing proves that no
     * schedule fits within the cap. A hair below it, so that the
     * simulator's sum of the same costs cannot land above. */
    if (r->p->max_cost > 0) return (r->p->max_cost * (1 - 1e-12) - m->cost_const) / m->cost_scale;
    return INFINITY;
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
        if ((rc = rm_lp_model_build(&r->m, r->p, r->act, lv, opt->log, opt->log_ctx, opt->verbosity, 0, e)) != RM_OK)
            return rc;
        set_presolve(r->m.lp, PRESOLVE_ROWS | PRESOLVE_COLS | PRESOLVE_LINDEP, get_presolveloops(r->m.lp));
    }
    const rm_lp_model *m = &r->m;
    lprec *lp = m->lp;
    if ((rc = rm_lp_model_set_integers(&r->m, e)) != RM_OK) return rc;
    set_bb_floorfirst(lp, (lv & RM_MILP_BRANCH_AUTO)   ? BRANCH_AUTOMATIC
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
    /* lp_solve 5.5 has no MIP start, so the cutoff (set_obj_bound) is how
     * the incumbent helps: only strictly better solutions are wanted, and
     * a search that ends without one proves the incumbent optimal. */
    double cut = search_cutoff(r);
    r->cutoff = isfinite(cut);
    if (r->cutoff) set_obj_bound(lp, cut);
    if (r->best.s && r->rc && (rc = fix_by_reduced_cost(r, cut, e)) != RM_OK) return rc;
    if (r->opt->first_fit) set_break_at_first(lp, TRUE);
    return RM_OK;
}

/* An engine's integer solution (x, by column): its S, the cheapest R for it,
 * judged by the simulator. *rejected: the simulator found it over the
 * budget (see step_search); r->nogood_S then keeps the engine's S for the
 * no-good cut. */
static int take_solution(milp_run *r, const double *x, const char *engine, int *rejected, rm_err *e)
{
    int n = r->n, rc;
    const rm_lp_model *m = &r->m;
    *rejected = 0;
    rm_rs *d;
    if ((rc = rm_rs_create(&d, n, e)) != RM_OK) return rc;
    for (size_t i = 0; i < (size_t)n * n; i++) d->S[i] = m->s_col[i] && x[m->s_col[i] - 1] > 0.5;
    if (r->nogood_S) memcpy(r->nogood_S, d->S, (size_t)n * n);
    /* The cheapest R for the solver's S: never dearer, never more memory. */
    if ((rc = rm_milp_cheapest_R(d, r->p, e)) == RM_OK) rc = rm_schedule_from_rs(&r->cand, d, e);
    rm_rs_free(d);
    if (rc != RM_OK) return rc;
    rm_sim_result sim;
    if ((rc = rm_simulate(&sim, r->p, r->cand, e)) != RM_OK) {
        rm_err_context(e, "milp: %s's solution was rejected by the simulator", engine);
        return rc;
    }
    if (sim.peak_bytes <= r->act && !rm_sim_fits(r->p, &sim)) {
        /* Within the budget, over the compute cap (the cutoff's tolerance):
         * the search stops with what it has. */
        RM_LOG_WARN("milp: %s's solution costs %.9g in the simulator, above the compute cap %.9g", engine, sim.cost,
                    r->p->max_cost);
        rm_schedule_free(r->cand);
        r->cand = NULL;
        *rejected = 2;
        return RM_OK;
    }
    if (sim.peak_bytes > r->act) {
        RM_LOG_WARN("milp: %s's solution peaks at %zu bytes in the simulator, above the budget %zu (stage %d, "
                    "node %d): within the solver's tolerances only; excluded, and the search restarts",
                    engine, sim.peak_bytes, r->act, sim.peak_stage, sim.peak_node);
        rm_schedule_free(r->cand);
        r->cand = NULL;
        r->nogood_stage = sim.peak_stage;
        *rejected = 1;
        return RM_OK;
    }
    int had = r->best.s != NULL;
    rm_schedule *mine = r->cand;
    offer(&r->best, r->cand, &sim);
    r->cand = NULL;
    r->info->from_incumbent = had && r->best.s && r->best.sim.cost < sim.cost;
    if (r->best.s == mine) r->info->answered_by = engine; /* kept: better than what was there */
    return RM_OK;
}

/* Cuts off the rejected answer's stage t: (S[t], S[t+1]) must differ from
 * lp_solve's somewhere. Valid for every schedule: stage t's memory depends
 * only on S[t], R[t] and S[t+1]; the cheapest R[t] for that pair (what the
 * simulator judged) has the least peak of any R[t] (computing less never
 * raises the peak), and clearing unread S entries only lowers it; so no
 * schedule with that pair fits. Cutting the stage, not the whole S, is what
 * keeps the restarts few: other stages' S vary freely behind one overshoot. */
static int add_nogood(milp_run *r, rm_err *e)
{
    const rm_lp_model *m = &r->m;
    int cnt = 0, t = r->nogood_stage, n = r->n;
    double rhs = 1;
    for (size_t x = (size_t)t * n; x < (size_t)(t + 2 < n ? t + 2 : n) * n; x++) {
        if (!m->s_col[x]) continue;
        r->m.rv[cnt] = r->nogood_S[x] ? -1.0 : 1.0;
        r->m.ri[cnt++] = m->s_col[x];
        if (r->nogood_S[x]) rhs -= 1;
    }
    if (cnt == 0) /* stage t has no S column: nothing lp_solve chose made it overshoot */
        return rm_errorf(e, RM_ERR_SOLVER, "milp: stage %d is over the budget with no retention to cut", t);
    if (!add_constraintex(m->lp, cnt, r->m.rv, r->m.ri, GE, rhs))
        return rm_errorf(e, RM_ERR_SOLVER, "lp_solve add_constraintex failed on a no-good cut (%d entries)", cnt);
    r->m.nrows++;
    return RM_OK;
}

/* lp_solve's answer to one solve() as an engine's answer; its solution's
 * values by column into x. A cancelled solve (CBC proved first) found
 * nothing that counts. */
static void lp_solve_answer(milp_run *r, int code, const rm_lp_watch *w, rm_engine_answer *a, double *x)
{
    memset(a, 0, sizeof *a);
    a->bound = -INFINITY;
    a->code = code;
    a->nodes = (long)get_total_nodes(r->m.lp);
    /* With a cutoff, lp_solve 5.5 may answer OPTIMAL or SUBOPTIMAL without
     * having found anything better, and its "solution" is then not one:
     * only a reported improvement counts. SUBOPTIMAL means "stopped early",
     * so even without a cutoff it holds a solution only if one was
     * reported: reading the variables of a search stopped before its first
     * solution gives a meaningless S. */
    int found = code == OPTIMAL ? !r->cutoff || w->first >= 0 : code == SUBOPTIMAL ? w->first >= 0 : 0;
    if (w->cancelled && !found) {
        a->state = RM_ENGINE_NONE;
        snprintf(a->why, sizeof a->why, "stopped: CBC proved first");
    } else if (found) {
        a->state = code == OPTIMAL ? RM_ENGINE_FOUND_OPTIMAL : RM_ENGINE_FOUND;
        /* By original index: presolve may have removed columns, and
         * get_var_primalresult answers for those too. */
        for (int c = 1; c <= r->m.ncols; c++) x[c - 1] = get_var_primalresult(r->m.lp, r->m.nrows + c);
    } else if (code == INFEASIBLE || code == OPTIMAL) {
        a->state = RM_ENGINE_NONE_PROVED; /* the search finished and found nothing below the cutoff */
    } else if (code == SUBOPTIMAL || code == USERABORT || code == TIMEOUT) {
        a->state = RM_ENGINE_NONE;
    } else {
        a->state = RM_ENGINE_FAILED;
        snprintf(a->why, sizeof a->why, "solve() returned %d (%s)", code, rm_lp_code_name(code));
    }
}

/* CBC's start: the best schedule's S and R by column (its FREE columns
 * CBC computes itself). */
static void start_values(const milp_run *r, double *x)
{
    const rm_lp_model *m = &r->m;
    rm_rs *d = NULL;
    rm_err ignored = {RM_OK, ""};
    memset(x, 0, (size_t)m->ncols * sizeof *x);
    if (rm_rs_from_schedule(&d, r->best.s, &ignored) != RM_OK) return;
    for (size_t i = 0; i < (size_t)r->n * r->n; i++) {
        if (m->s_col[i]) x[m->s_col[i] - 1] = d->S[i];
        if (m->r_col[i]) x[m->r_col[i] - 1] = d->R[i];
    }
    rm_rs_free(d);
}

static int cbc_proved(void *job)
{
    return rm_cbc_proved(job);
}

/* One round of the search: CBC started in its child (when it takes part),
 * lp_solve run here (when it takes part) until it ends or CBC proves, then
 * CBC's answer awaited until the deadline unless lp_solve proved. Answers
 * in a[] (lp_solve's first), solutions in xs[] (m->ncols each); returns
 * how many. */
static int run_engines(milp_run *r, rm_engine_answer a[2], double *xs[2], const char *names[2])
{
    rm_milp_result *info = r->info;
    int use_lp = r->engine != RM_MILP_ENGINE_CBC, use_cbc = r->engine != RM_MILP_ENGINE_LPSOLVE;
    long nodes_left = r->opt->node_limit > 0 ? r->opt->node_limit - info->nodes : 0;
    rm_cbc_job *job = NULL;
    int na = 0;
    if (use_cbc) {
        rm_cbc_args ca = {.cutoff = search_cutoff(r),
                          .deadline = r->deadline,
                          .node_limit = nodes_left,
                          .first_fit = r->opt->first_fit,
                          .log = rm_log_threshold() >= RM_LOG_DEBUG};
        if (r->best.s) {
            start_values(r, xs[1]);
            ca.start = xs[1];
            /* The start is a solution at the best cost: a cutoff a hair
             * above it lets CBC take it (its heuristics work from one). */
            ca.cutoff = (r->best.sim.cost - r->m.cost_const) / r->m.cost_scale;
            ca.cutoff += 1e-9 * fmax(1.0, fabs(ca.cutoff));
        }
        rm_err ce = {RM_OK, ""};
        if (rm_cbc_start(&job, &r->m, &ca, &ce) != RM_OK) {
            RM_LOG_WARN("milp: CBC did not start (%s): lp_solve searches alone", ce.msg);
            use_cbc = 0;
            use_lp = 1;
        }
    }
    if (use_lp) {
        rm_lp_watch w = rm_lp_watch_make(nodes_left, r->deadline);
        if (job) {
            w.cancel = cbc_proved;
            w.cancel_ctx = job;
        }
        int code = rm_lp_solve_watched(r->m.lp, &w, 1);
        info->solver_code = code;
        info->improvements += w.improvements;
        if (w.first >= 0 && info->first_solution_s < 0) info->first_solution_s = w.first + (w.t0 - r->t0);
        names[na] = "lp_solve";
        lp_solve_answer(r, code, &w, &a[na], xs[na]);
        info->nodes += a[na].nodes;
        na++;
        rm_engine_state st = a[0].state;
        if (job && (st == RM_ENGINE_NONE_PROVED || st == RM_ENGINE_FOUND_OPTIMAL)) {
            rm_cbc_free(job); /* lp_solve proved: CBC's answer is not needed */
            job = NULL;
        }
    }
    if (job) {
        /* Into xs[na], beside its answer: xs[0] when CBC searched alone
         * (step_search reads a[k]'s solution from xs[k]). CBC's start in
         * xs[1] was copied into its process when it started. */
        names[na] = "cbc";
        rm_cbc_finish(job, r->deadline, &a[na], xs[na]);
        rm_cbc_free(job);
        info->nodes += a[na].nodes;
        info->cbc_nodes += a[na].nodes;
        RM_LOG_DEBUG("milp: cbc: %s", a[na].why);
        na++;
    }
    return na;
}

/* Branch and bound, and what its answer means.
 *
 * lp_solve 5.5 accepts a binary within about 1e-7 of 0 or 1 as integral
 * whatever set_epsint says (measured: a binary held to x <= 1 - 5e-8 is
 * answered as x = 0.99999995 with epsint 1e-11), so on a tight budget row a
 * 10 MB value at S = 0.99999995 hides a byte above the budget. The
 * simulator judges every answer exactly; a rejected S is cut off (a no-good
 * row, valid for every R) and the search restarts, up to MAX_REJECTIONS
 * times (each restart of a small model takes milliseconds); then the best
 * schedule found so far is the answer, unproved. CBC's answers are judged
 * the same way.
 *
 * A round's answers: an accepted optimum, or "nothing below the cutoff",
 * from either engine is a proof; an engine that fails is logged and the
 * other's answer (or the incumbent) stands. */
#define MAX_REJECTIONS 50
static int step_search(milp_run *r, int *rc, rm_err *e)
{
    rm_milp_result *info = r->info;
    if ((*rc = bb_setup(r, e)) != RM_OK) return STEP_DONE;
    size_t nc = (size_t)r->m.ncols ? (size_t)r->m.ncols : 1;
    if (!(r->nogood_S = malloc((size_t)r->n * r->n)) || !(r->xs[0] = malloc(nc * sizeof(double))) ||
        !(r->xs[1] = malloc(nc * sizeof(double)))) {
        *rc = rm_errorf(e, RM_ERR_NOMEM, "milp: out of memory");
        return STEP_DONE;
    }
    info->engine = r->engine;
    for (int rejections = 0;; rejections++) {
        rm_engine_answer a[2];
        const char *names[2];
        int na = run_engines(r, a, r->xs, names), proved = 0, found = 0, rejected_any = 0, failed = 0;
        for (int k = 0; k < na; k++) {
            const rm_engine_answer *ak = &a[k];
            if (ak->bound > -INFINITY) {
                double b = r->m.cost_const + r->m.cost_scale * ak->bound;
                if (b > info->search_bound) info->search_bound = b;
            }
            if (ak->state == RM_ENGINE_FAILED) {
                RM_LOG_WARN("milp: %s failed (%s)%s", names[k], ak->why,
                            na > 1                            ? "; the other engine's answer stands"
                            : r->best.s                       ? "; the best schedule found stands"
                            : r->engine == RM_MILP_ENGINE_CBC ? " with no schedule at hand: lp_solve searches instead"
                                                              : "");
                failed++;
                continue;
            }
            if (ak->state == RM_ENGINE_NONE_PROVED) {
                proved = 1;
                if (!info->answered_by) info->answered_by = names[k];
                continue;
            }
            if (ak->state != RM_ENGINE_FOUND && ak->state != RM_ENGINE_FOUND_OPTIMAL) continue;
            int rejected;
            if ((*rc = take_solution(r, r->xs[k], names[k], &rejected, e)) != RM_OK) return STEP_DONE;
            if (rejected == 2) {
                info->from_incumbent = r->best.s != NULL;
                r->stop = "the solver's answer was over the compute cap";
                return STEP_LIMIT;
            }
            if (rejected) {
                rejected_any = 1;
                if ((*rc = add_nogood(r, e)) != RM_OK) return STEP_DONE;
                continue;
            }
            found = 1;
            if (ak->state == RM_ENGINE_FOUND_OPTIMAL) {
                proved = 1;
                /* CBC proves its start optimal by finding it again: the proof is its answer */
                if (!info->answered_by) info->answered_by = names[k];
            }
        }
        if (proved) {
            if (r->best.s) {
                info->status = RM_STATUS_OPTIMAL;
                if (!found) info->from_incumbent = 1;
                return STEP_DONE;
            }
            info->status = RM_STATUS_INFEASIBLE;
            if (r->p->max_cost > 0)
                *rc = rm_errorf(e, RM_ERR_INFEASIBLE,
                                "milp: the search proved that no schedule fits %zu bytes within the compute cap %.6g",
                                r->act, r->p->max_cost);
            else
                *rc =
                    rm_errorf(e, RM_ERR_INFEASIBLE, "milp: the search proved that no schedule fits %zu bytes", r->act);
            return STEP_DONE;
        }
        if (failed == na) {
            if (r->engine == RM_MILP_ENGINE_CBC && !r->best.s) {
                /* The other engine, always built, searches the same model
                 * (the no-good rows included): an engine's failure is no
                 * error where the other may still answer. */
                r->engine = RM_MILP_ENGINE_LPSOLVE;
                continue;
            }
            if (r->best.s || na > 1 || rejections > 0) {
                /* Cut after cut, lp_solve may lose accuracy (ACCURACYERROR
                 * seen here); what was found before stands, unproved. */
                info->from_incumbent = r->best.s != NULL;
                r->stop = "the solver failed";
                return STEP_LIMIT;
            }
            *rc = !strcmp(names[0], "lp_solve")
                      ? rm_lp_failure(a[0].code, "MILP", e)
                      : rm_errorf(e, RM_ERR_SOLVER, "milp: %s failed: %s", names[0], a[0].why);
            return STEP_DONE;
        }
        if (!rejected_any) {
            info->from_incumbent = !found && r->best.s != NULL;
            return STEP_LIMIT;
        }
        if (rejections + 1 >= MAX_REJECTIONS || (r->deadline > 0 && rm_now() >= r->deadline) ||
            (r->opt->node_limit > 0 && info->nodes >= r->opt->node_limit)) {
            RM_LOG_WARN("milp: %d of the solver's answers were over the budget: the best schedule found is returned "
                        "without a proof",
                        rejections + 1);
            info->from_incumbent = r->best.s != NULL;
            r->stop = "the solver's answers were over the budget";
            return STEP_LIMIT;
        }
    }
}

/* A limit stopped the search: optimal only if the bound proves it. */
static int limit_status(milp_run *r, rm_err *e)
{
    rm_milp_result *info = r->info;
    /* The root LP's bound, or the search's where an engine proved more. */
    r->lower = rm_lp_step_up(fmax(info->lp_bound, info->search_bound), r->m.step);
    if (r->best.s) {
        info->status = r->lp_done && (r->best.sim.cost <= r->lower || near_equal(r->best.sim.cost, r->lower))
                           ? RM_STATUS_OPTIMAL
                           : RM_STATUS_FEASIBLE;
        return RM_OK;
    }
    info->status = RM_STATUS_NO_SOLUTION;
    return rm_errorf(e, RM_ERR_INFEASIBLE,
                     "milp: no schedule found within the limits (%s; %ld nodes, %.1f s): not proved infeasible",
                     r->stop                                                       ? r->stop
                     : r->opt->node_limit > 0 && info->nodes >= r->opt->node_limit ? "node limit"
                                                                                   : "time limit",
                     info->nodes, rm_now() - r->t0);
}

/* The answer: the best schedule with its bound and gap, or the error. */
static int finish(milp_run *r, rm_schedule **out, int rc, rm_err *e)
{
    rm_milp_result *info = r->info;
    rm_schedule_free(r->cand);
    free(r->nogood_S);
    free(r->xs[0]);
    free(r->xs[1]);
    free(r->rc);
    free(r->x0);
    rm_lp_model_free(&r->m);
    info->seconds = rm_now() - r->t0;
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
    r.t0 = rm_now();
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
    if ((rc = rm_problem_check_budget_of(p, opt->facts, "milp", e)) != RM_OK) {
        info->status = RM_STATUS_INFEASIBLE;
        info->seconds = rm_now() - r.t0;
        return rc;
    }
    r.p = p;
    r.opt = opt;
    r.info = info;
    r.lv = opt->levers;
    r.n = p->n;
    r.deadline = opt->time_limit_s > 0 ? r.t0 + opt->time_limit_s : 0;
    r.limited = p->budget != 0;
    const char *why;
    r.engine = rm_milp_engine_resolve(opt->engine, p->n, opt->node_limit, &why);
    if (why) RM_LOG_WARN("milp: %s", why);
    r.act = r.limited ? rm_problem_activation_budget(p) : 0;

    int step = step_guards(&r, &rc, e);
    if (step == STEP_NEXT) step = step_root(&r, &rc, e);
    if (step == STEP_NEXT) step = step_rounding(&r, &rc, e);
    if (step == STEP_NEXT) step = step_search(&r, &rc, e);
    if (step == STEP_LIMIT) rc = limit_status(&r, e);
    return finish(&r, out, rc, e);
}
