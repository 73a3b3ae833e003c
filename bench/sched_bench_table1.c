/* Table 1 of remat_bench_sched, the runs: for each model, every strategy at
 * every budget from the largest down, until a budget is below the lower
 * bound or nothing fits; progress on stderr. sched_bench_report.c turns the
 * results into markdown. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "sched_bench.h"
#include "schedule.h"

/* Every strategy at one budget (already set on cp), into row's cells. */
static void run_budget(budget_row *row, const bench_cfg *c, const model_spec *m, rm_cli_problem *cp)
{
    char b[32];
    rm_problem *p = cp->p;
    row->none_fit = 1;
    for (int k = 0; k < c->nstrats; k++) {
        const rm_strategy_info *st = c->strats[k];
        cell *x = &row->cells[k];
        rm_strategy_options o;
        memset(&o, 0, sizeof o);
        o.time_limit_s = c->time_limit_s;
        rm_cli_progress pr = {st->name, rm_now()};
        if (c->verbose) {
            o.log = rm_cli_progress_log;
            o.log_ctx = &pr;
        }
        fprintf(stderr, "bench: %s b%ld, budget %g%% (%s): %s", m->name, m->batch, row->percent,
                rm_cli_bytes(b, sizeof b, (double)row->bytes), st->name);
        if (st->solve_opt && c->time_limit_s > 0) fprintf(stderr, " (time limit %g s)", c->time_limit_s);
        fprintf(stderr, " ...\n");
        rm_schedule *s = NULL;
        rm_strategy_stats stats;
        rm_err e = {RM_OK, ""};
        int rc = rm_strategy_run(&s, &stats, st, p, &o, &e);
        rm_schedule_free(s);
        x->ran = 1;
        x->rc = rc;
        x->status = rm_status_name(stats.status);
        x->seconds = stats.seconds;
        x->has_bound = stats.has_bound;
        x->bound_trivial = stats.bound_trivial;
        x->lp_bound = stats.lp_bound;
        x->gap = stats.gap;
        if (rc == RM_OK) {
            x->cost = stats.sim.cost;
            x->peak_total = p->fixed_bytes + stats.sim.peak_bytes;
            row->none_fit = 0;
            fprintf(stderr, "bench:   %s %+.2f%% in %.2f s", x->status, overhead_pct(x->cost, cp->facts.base_cost),
                    x->seconds);
            if (x->has_bound) fprintf(stderr, ", gap %.2f%%", 100.0 * x->gap);
            fprintf(stderr, "\n");
        } else if (rc == RM_ERR_INFEASIBLE) {
            fprintf(stderr, "bench:   %s after %.2f s\n", x->status, x->seconds);
        } else {
            fprintf(stderr, "bench:   %s failed: %s\n", st->name, e.msg);
        }
    }
}

int run_table1(const bench_cfg *c, const model_spec *models, int nmodels)
{
    emit("\n## Table 1: strategies by budget (Checkmate-style)\n\n"
         "Budget: TOTAL device memory (fixed bytes included) as a percentage of the no-remat peak, as `remat plan "
         "--budget P%%` means it. Overhead: extra compute over checkpoint-all (every node once), in FLOPs of the "
         "cost model. Peak: fixed + activation peak, from the exact simulator. Time: wall clock of the whole "
         "strategy call (each lp_round / milp solve limited to %g s%s). LP bound: the LP relaxation's optimum as an "
         "overhead, a proved floor on any schedule ('trivial' where the LP did not finish or the solve was coarsened: "
         "every node once). Gap: (cost - bound) / cost, or 0 when proved optimal.\n",
         c->time_limit_s, c->time_limit_s > 0 ? "" : ": no limit");
    emit_flush();
    goal_line *goals = calloc((size_t)(nmodels * c->nbudgets + 1), sizeof *goals);
    if (!goals) {
        fprintf(stderr, "remat_bench_sched: out of memory\n");
        return 2;
    }
    int ngoals = 0, status = 0;
    /* csv / json: the one table every model's runs go into. */
    bench_table data;
    bench_cfg cd = *c;
    if (c->fmt != RM_TABLE_MD) {
        if (detail_table_begin(&data, c->fmt)) {
            free(goals);
            return 2;
        }
        cd.data = &data;
        c = &cd;
    }
    for (int i = 0; i < nmodels; i++) {
        const model_spec *m = &models[i];
        fprintf(stderr, "bench: tracing %s at batch %ld ...\n", m->path, m->batch);
        rm_cli_problem cp;
        int rc = rm_cli_problem_load(&cp, "bench", m->path, m->batch, NULL);
        if (rc) {
            emit("\n### %s, batch %ld\n\nfailed to load %s (see stderr).\n", m->name, m->batch, m->path);
            status = rc;
            continue;
        }
        budget_row *rows = calloc((size_t)c->nbudgets, sizeof *rows);
        cell *cells = calloc((size_t)(c->nbudgets * c->nstrats), sizeof *cells);
        if (!rows || !cells) {
            free(rows);
            free(cells);
            rm_cli_problem_free(&cp);
            fprintf(stderr, "remat_bench_sched: out of memory\n");
            free(goals);
            return 2;
        }
        int nrows = 0;
        for (int r = 0; r < c->nbudgets; r++) {
            budget_row *row = &rows[nrows++];
            row->percent = c->budgets[r];
            row->cells = cells + r * c->nstrats;
            rm_cli_budget b = rm_cli_budget_percent(c->budgets[r]);
            row->bytes = rm_cli_budget_bytes(&b, cp.facts.noremat_total);
            /* rm_cli_problem_set_budget explains on stderr why nothing fits. */
            if (rm_cli_problem_set_budget(&cp, "bench", &b)) {
                row->below_lb = 1;
                break;
            }
            run_budget(row, c, m, &cp);
            if (row->none_fit) {
                fprintf(stderr, "bench: %s: no strategy fits %g%%; lower budgets are not tried\n", m->name,
                        row->percent);
                break;
            }
        }
        print_model(c, m, &cp, rows, nrows, goals, &ngoals);
        emit_flush();
        free(cells);
        free(rows);
        rm_cli_problem_free(&cp);
    }
    if (c->data && bench_table_end(c->data)) {
        fprintf(stderr, "remat_bench_sched: writing the table failed\n");
        status = 2;
    }
    print_goal_table(goals, ngoals);
    emit_flush();
    free(goals);
    return status;
}
