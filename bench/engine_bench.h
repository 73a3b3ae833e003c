/* remat_bench_engine's internal header: the MILP's engines side by side on
 * the same instances. remat's "milp" strategy with each engine
 * (rm_strategy_options.milp_engine: lp_solve, cbc, auto) and the "best"
 * strategy, as users get them, and HiGHS (PyPI highspy, run by
 * bench/highs_solve.py from the bench's own virtual environment) as a
 * reference on the very MILP remat builds, written as MPS by lp_solve.
 * Split by job: engine_bench.c (options, the document's header, main),
 * engine_instances.c (the instance families: built-in models, Checkmate's
 * linear graphs, random DAGs), engine_solve.c (one instance: the cheapest
 * baseline, each engine's answer, HiGHS's run and the cross-check),
 * engine_report.c (the markdown rows, the totals and the goals). */
#ifndef REMAT_BENCH_ENGINE_BENCH_H
#define REMAT_BENCH_ENGINE_BENCH_H

#include <stddef.h>

#include "bench_host.h"
#include "problem.h"

/* The goals, fixed whatever --time-limit is. */
#define ENGINE_GOAL_SECONDS 60.0
#define ENGINE_GOAL_GAP 0.01

/* The columns, in the table's order; all but HiGHS are remat's. race: both
 * engines at once whatever the problem's size (RM_MILP_ENGINE_BOTH), only
 * when --engines asks: what auto would be without its size threshold. */
enum { E_LPSOLVE, E_CBC, E_AUTO, E_RACE, E_BEST, E_HIGHS, E_N };
#define ENGINE_DEFAULT_COLUMNS (((1u << E_N) - 1) & ~(1u << E_RACE))

typedef struct engine_cfg {
    double time_limit_s; /* each engine, each instance */
    int quick;
    const char *only; /* "models", "linear" or "random" or NULL (all) */
    const char *models_dir;
    const char *workdir; /* where the MPS and solution files go */
    const char *models;  /* built-in models to run, comma-separated (NULL: all) */
    const char *linear;  /* layer counts of the linear graphs, comma-separated (NULL: 8,16,24) */
    const char *pcts;    /* the models' budgets in % of the no-remat peak (NULL: 90,80,70,60) */
    long max_nodes;      /* above this many nodes the MILP is not even built for HiGHS */
    long max_cols;       /* HiGHS is not run on models with more columns */
    long random;         /* how many random DAGs */
    int keep_files;      /* keep the MPS and solution files */
    unsigned engines;    /* bit k: column k is run */
    const char *python;  /* the virtual environment's python with highspy; NULL: HiGHS not installed */
    const char *highs_script;
    rm_table_format fmt; /* md: the document; csv / json: the instances' rows only */
    bench_table *data;   /* csv / json: that one table, every family's rows */
} engine_cfg;

/* One engine's answer on one instance. */
typedef struct engine_side {
    int ran;
    char status[48]; /* rm_status_name for remat's; HiGHS: "optimal", "time limit", "infeasible", ...;
                        "not run: ..." / "failed: ..." */
    int proved;      /* optimal, or infeasibility proved */
    int infeasible;  /* proved infeasible */
    int has_cost, has_bound;
    int bound_trivial;  /* remat's: the bound is every node once, not an LP bound */
    double cost, bound; /* cost units */
    double seconds;     /* wall clock of the call (HiGHS: its read and solve, Python's start excluded) */
    const char *source; /* remat's: the strategy whose schedule answered (stats.source) */
    /* HiGHS's solution judged by remat's simulator: its S, the cheapest R. */
    int checked;
    double sim_cost;
    size_t sim_peak;
    int sim_fits;
} engine_side;

/* One instance's row. */
typedef struct engine_row {
    char name[64];
    char family[16];
    int nodes, ncols, nrows;
    int dropped;      /* empty columns left out of the MPS file */
    size_t budget;    /* total bytes (fixed included), as rm_problem.budget */
    double base_cost; /* checkpoint-all: every node once */
    int has_heur;
    double heur_cost; /* the cheapest fitting baseline */
    char heur_name[32];
    engine_side e[E_N];
    char disagree[240]; /* "" or where two engines contradict each other */
} engine_row;

/* Totals over the rows so far, per engine. */
typedef struct engine_totals {
    int instances, disagreements;
    int ran[E_N], proved[E_N], proved_goal[E_N], within[E_N], above_heur[E_N];
    /* time ratios to lp_solve where both proved: ratios[k] (k != E_LPSOLVE) */
    double *ratios[E_N];
    int nratios[E_N], cap[E_N];
    /* the goal: best against CBC alone */
    int cbc_goal, best_too, best_no_slower, best_close; /* close: within 10% + 0.05 s, the noise of a shared machine */
    double best_worst;                                  /* the largest time ratio best / CBC where both proved */
    int either, auto_too;                               /* lp_solve or CBC alone proved; auto did too */
    /* the goal on ResNet-50, U-Net and MobileNet: best within 1% of a real bound */
    int big, big_within;
    double big_worst_gap; /* 1 where the bound is trivial or there is no answer */
} engine_totals;

/* The families, and the totals' index of each (ENG_ALL: every row). */
enum { ENG_MODELS, ENG_LINEAR, ENG_RANDOM, ENG_ALL, ENG_NFAM };

/* The columns' titles, and their keys (--engines, the csv / json columns). */
extern const char *const engine_names[E_N];
extern const char *const engine_keys[E_N];

/* Runs every family the options ask for (engine_instances.c), adding each
 * row to t[its family] and t[ENG_ALL]: 0, or the first failure's exit
 * status. */
int engine_run_all(const engine_cfg *c, engine_totals t[ENG_NFAM]);

/* One instance (engine_solve.c): p's budget is set; name its row. */
int engine_run_instance(engine_row *row, const engine_cfg *c, const rm_problem *p);

/* Markdown (engine_report.c); with c->data, a row of that table instead. */
void engine_table_start(const engine_cfg *c, const char *title, const char *what);
void engine_table_row(const engine_cfg *c, const engine_row *row, int flops);
/* The csv / json table of every instance (c->fmt). */
int engine_data_begin(bench_table *bt, rm_table_format fmt);
int engine_totals_add(engine_totals *t, const engine_row *row);
void engine_totals_print(const engine_cfg *c, engine_totals t[ENG_NFAM]);
void engine_totals_free(engine_totals *t);

#endif
