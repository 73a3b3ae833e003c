/* remat_bench_cbc's internal header: remat's MILP (lp_solve, through the
 * strategy route users get) against CBC on the very same MILP, written as
 * MPS by lp_solve. Split by job: cbc_bench.c (options, the document's
 * header, main), cbc_instances.c (the instance families: built-in models,
 * Checkmate's linear graphs, random DAGs), cbc_solve.c (one instance: the
 * cheapest baseline, remat's solve, CBC's run and its cross-check),
 * cbc_report.c (the markdown rows and the totals). */
#ifndef REMAT_BENCH_ENGINE_BENCH_H
#define REMAT_BENCH_ENGINE_BENCH_H

#include <stddef.h>

#include "bench_host.h"
#include "problem.h"

/* The goals, fixed whatever --time-limit is. */
#define CBC_GOAL_SECONDS 60.0
#define CBC_GOAL_GAP 0.01

typedef struct cbc_cfg {
    double time_limit_s; /* remat's milp and CBC each */
    int quick;
    const char *only; /* "models", "linear", "random" or NULL (all) */
    const char *models_dir;
    const char *cbc;     /* the CBC program */
    const char *workdir; /* where the MPS and solution files go */
    const char *models;  /* built-in models to run, comma-separated (NULL: all) */
    long max_nodes;      /* above this many nodes the MILP is not even built for CBC */
    long max_cols;       /* CBC is not run on models with more columns */
    long random;         /* how many random DAGs */
    int keep_files;      /* keep the MPS and solution files */
    rm_table_format fmt; /* md: the document; csv / json: the instances' rows only */
    bench_table *data;   /* csv / json: that one table, every family's rows */
} cbc_cfg;

/* remat's answer through rm_strategy_run("milp"). */
typedef struct remat_side {
    int rc; /* RM_OK, RM_ERR_INFEASIBLE or another error */
    const char *status;
    double cost, bound, gap, seconds;
    int proved;        /* status OPTIMAL */
    int bound_trivial; /* the bound is every node once, not an LP bound */
} remat_side;

/* CBC on the MPS file. */
typedef struct cbc_side {
    int ran;
    char status[48]; /* "optimal", "time limit", "infeasible", "not run: ...", "failed: ..." */
    int proved;      /* optimal, or infeasibility proved */
    int infeasible;
    int has_cost, has_bound;
    double cost, bound, seconds; /* cost units; seconds: wall clock of the cbc process */
    /* CBC's solution judged by remat's simulator: its S, the cheapest R. */
    int checked;
    double sim_cost;
    size_t sim_peak;
    int sim_fits;
} cbc_side;

/* One instance's row. */
typedef struct cbc_row {
    char name[64];
    char family[16];
    int nodes, ncols, nrows;
    int dropped;      /* empty columns left out of the MPS file */
    size_t budget;    /* total bytes (fixed included), as rm_problem.budget */
    double base_cost; /* checkpoint-all: every node once */
    int has_heur;
    double heur_cost; /* the cheapest fitting baseline */
    char heur_name[32];
    remat_side r;
    cbc_side c;
    char disagree[200]; /* "" or where lp_solve/remat and CBC contradict each other */
} cbc_row;

/* Totals over the rows so far. */
typedef struct cbc_totals {
    int instances, cbc_proved, remat_proved, remat_within, both, ratio_le1, above_heur, disagreements, cbc_skipped;
    double *ratios;
    int nratios, cap;
} cbc_totals;

/* The families, and the totals' index of each (CBC_ALL: every row). */
enum { CBC_MODELS, CBC_LINEAR, CBC_RANDOM, CBC_ALL, CBC_NFAM };

/* Runs every family the options ask for (cbc_instances.c), adding each row
 * to t[its family] and t[CBC_ALL]: 0, or the first failure's exit status. */
int cbc_run_all(const cbc_cfg *c, cbc_totals t[CBC_NFAM]);

/* One instance (cbc_solve.c): p's budget is set; name its row. */
int cbc_run_instance(cbc_row *row, const cbc_cfg *c, const rm_problem *p);

/* Markdown (cbc_report.c); with c->data, a row of that table instead. */
void cbc_table_start(const char *title, const char *what);
void cbc_table_row(const cbc_cfg *c, const cbc_row *row, int flops);
/* The csv / json table of every instance (c->fmt). */
int cbc_data_begin(bench_table *bt, rm_table_format fmt);
int cbc_totals_add(cbc_totals *t, const cbc_row *row);
void cbc_totals_print(const cbc_totals t[CBC_NFAM]);
void cbc_totals_free(cbc_totals *t);

#endif
