/* remat_bench_sched's internal header: what its files share. The benchmark
 * is split by job: sched_bench.c (options, lists, the document's header,
 * main), sched_bench_table1.c (runs every strategy at every budget),
 * sched_bench_report.c (table 1's markdown and the verdict against the
 * goal), sched_bench_table2.c (checkpoint-all against ogc). */
#ifndef REMAT_BENCH_SCHED_BENCH_H
#define REMAT_BENCH_SCHED_BENCH_H

#include <stddef.h>

#include "bench_host.h"
#include "cli_util.h"
#include "strategy.h"

/* The goal, fixed whatever --time-limit is: a smaller limit is a way
 * to make the run shorter, not a different goal. */
#define GOAL_GAP 0.01
#define GOAL_SECONDS 60.0

typedef struct model_spec {
    char name[64];   /* as shown in the tables: "vgg16" */
    char path[4096]; /* the config */
    long batch;
} model_spec;

typedef struct bench_cfg {
    double *budgets;
    int nbudgets;
    const rm_strategy_info **strats;
    int nstrats;
    double time_limit_s;
    int verbose;
    rm_table_format fmt; /* md: the whole document; csv / json: the detail rows of table 1 only */
    bench_table *data;   /* csv / json: that one table, across every model */
} bench_cfg;

/* One strategy's run at one budget (table 1). */
typedef struct cell {
    int ran;
    int rc;             /* RM_OK, RM_ERR_INFEASIBLE or another error */
    const char *status; /* rm_strategy_stats.status (static strings) */
    double seconds, cost;
    size_t peak_total;            /* fixed + activation peak */
    int has_bound, bound_trivial; /* see rm_strategy_stats */
    double lp_bound, gap;
} cell;

typedef struct budget_row {
    double percent;
    size_t bytes;
    int below_lb; /* not run: below fixed + the trivial lower bound */
    int none_fit; /* run, and no strategy found a schedule */
    cell *cells;  /* one per strategy */
} budget_row;

/* The goal at one budget, and when it is missed, the reason the
 * numbers show. */
typedef struct goal {
    int applicable; /* lp_round or milp ran */
    int met;
    char verdict[64];
    char reason[400];
} goal;

/* A row of the "Against the goal" table, kept until every model is done. */
typedef struct goal_line {
    char model[64];
    long batch;
    double percent;
    size_t bytes;
    goal g;
    char lp_bound[32], best_base[64], lpr[64], milp[80];
} goal_line;

static inline double overhead_pct(double cost, double base)
{
    return base > 0 ? 100.0 * (cost / base - 1) : 0.0;
}

/* Table 1 (sched_bench_table1.c): 0, or the first failure's status. */
int run_table1(const bench_cfg *c, const model_spec *models, int nmodels);

/* Table 1's sections (sched_bench_report.c): one model's overview and
 * detail, adding a goal_line per budget run to goals; then the goal table. */
void print_model(const bench_cfg *c, const model_spec *m, const rm_cli_problem *cp, const budget_row *rows, int nrows,
                 goal_line *goals, int *ngoals);
void print_goal_table(const goal_line *goals, int n);
/* The detail table of table 1 (every run) in fmt; csv and json add the
 * model, batch and bytes columns md leaves to the section's heading. */
int detail_table_begin(bench_table *bt, rm_table_format fmt);

/* Table 2 (sched_bench_table2.c): 0, or the first failure's status. */
int run_table2(const model_spec *models, int nmodels);

#endif
