/* The Checkmate rematerialization model (Jain et al., MLSys 2020) as rows
 * and columns for lp_solve 5.5: built once, solved as an LP (the relaxation
 * that LP rounding rounds and whose optimum bounds every schedule) or, with
 * S and R made integer, as the MILP (milp.c). Nothing here decides what to
 * solve or when: that is the solver route (route.c).
 *
 * Variables: R[t][i] (node i computed in stage t), S[t][i] (i retained into
 * stage t), FREE[t][i][k] (value i freed right after computing k in stage t).
 * Memory is accounted with prefix-sum budget rows (one row per point of a
 * stage) instead of Checkmate's U variables, and FREE is linearised
 * disaggregated, so it can stay continuous. The model's peak is never below
 * the simulator's for the same R and S, so every MILP-feasible schedule is
 * simulator-feasible; the formulation in detail is at the top of lp_model.c,
 * and beside Checkmate's published one in docs/formulation.md.
 *
 * Stock lp_solve is hopeless on this model (measured here: no
 * integer solution for the 79-node VGG16 graph at 90% in 120 s, none for
 * five random 22-38-node training graphs in 2000 nodes), so the model prunes
 * variables fixed by structure, adds a valid cut, and scales its rows; the
 * MILP solves the LP relaxation first, rounds it into an incumbent whose cost
 * is the branch-and-bound cutoff, and branches floor first with priority on
 * S. Each lever is a flag so that benchmarks can measure it; the figures
 * behind the defaults are in the comments below. */
#ifndef REMAT_LP_MODEL_H
#define REMAT_LP_MODEL_H

#include <stddef.h>

#include "deadline.h"
#include "problem.h"

/* Levers of the model and of the MILP's search, as flags so their effect can
 * be measured one at a time. "Hard set" below: five random training graphs
 * (the tests' generator) of 22-38 nodes at 75-90% of the checkpoint-all peak
 * with a 2000-node limit; the defaults without NO_SCALING prove 4 of 5
 * optimal, lp_solve's own rule (NODE_FIRSTSELECT) with the other defaults 2,
 * and stock lp_solve finds no integer solution for any of them. */
enum {
    RM_MILP_FLOOR_FIRST = 1u << 0,   /* branch to 0 first; ceiling first: 3 of 5, 4x the nodes on two others */
    RM_MILP_S_PRIORITY = 1u << 1,    /* branch on every S before any R; without: 3 of 5 */
    RM_MILP_STAGE_ORDER = 1u << 2,   /* columns stage by stage, S before R before FREE (else grouped by kind);
                                        no measurable effect once S_PRIORITY orders the branching */
    RM_MILP_PRUNE = 1u << 3,         /* drop S/R of values with no descendant at or after the stage (~20% fewer
                                        columns; mixed in nodes: without, 3 of 5 but faster on two) */
    RM_MILP_FREE_CUT = 1u << 4,      /* valid cut: a value is freed at most once per stage; raises the LP bound
                                        (154.34 -> 154.98, 212.08 -> 213.59); without: 3 of 5 */
    RM_MILP_PREFIX_ROWS = 1u << 5,   /* prefix-sum budget rows (else Checkmate's U variables): VGG16's LP 7.8 s
                                        instead of 22.2 s */
    RM_MILP_INCUMBENT = 1u << 6,     /* LP rounding / checkpoint-all as incumbent and cutoff: the only answer
                                        within 60 s on VGG16 at 90% (gap 0.19%); neutral on the hard set */
    RM_MILP_FREE_CONT = 1u << 7,     /* FREE continuous (exact with the disaggregated rows): half the integers,
                                        same node counts */
    RM_MILP_SHORTCUT = 1u << 8,      /* return checkpoint-all without solving when it fits (it is optimal) */
    RM_MILP_PRESOLVE = 1u << 9,      /* lp_solve's presolve on the MILP: ACCURACYERROR on a 7-node problem, a
                                        crash when enabled after a solve (worked around); off */
    RM_MILP_BRANCH_AUTO = 1u << 10,  /* BRANCH_AUTOMATIC; overrides FLOOR_FIRST; behaved like ceiling here */
    RM_MILP_NO_SCALING = 1u << 11,   /* lp_solve's scaling off (the model is scaled already): VGG16's LP
                                        1.8-3.0 s instead of 3.6-6.0 s; branch and bound starts from another
                                        root vertex: 3 of 5 of the hard set (the one lost is 1.8% off) */
    RM_MILP_RC_FIX = 1u << 16,       /* reduced-cost fixing: after the root LP, an S or R at a bound whose
                                        reduced cost alone lifts the LP bound past the incumbent's cutoff is
                                        fixed there for the branch and bound. Fixes 15-40% of S and R where
                                        the incumbent is near the bound (none where it is far); 6 random
                                        graphs of 26-38 nodes and Checkmate's linear 8/16 at 4 budgets,
                                        20 s each: same proofs, one search 510 -> 414 nodes, others equal.
                                        Off: lp_solve computes the reduced costs only with its full
                                        sensitivity analysis, which cannot be interrupted (U-Net-tiny,
                                        79 nodes: 10 s past a 10 s limit) */
    RM_MILP_TIGHT_BUDGET = 1u << 17, /* budget rows with 1e-7 of the budget as slack instead of half a memory
                                       unit: without, the LP bound is below Checkmate's published relaxation on
                                       its linear graphs (8 layers at 3 values: 22.65 vs 23; 16 layers at 4:
                                       45.53 vs 46); with, at or above it on every instance of
                                       test_relaxation.c. MILP answers unchanged; LP rounding uses it too
                                       (see rm_lp_round_options_default) */
    RM_MILP_LPSOLVE_ONLY = 1u << 18, /* the LP relaxation by lp_solve even where CBC's Clp would solve it
                                        (rm_milp_relax, RM_CLP_MIN_COLUMNS): --milp-engine lp_solve */
};
#define RM_MILP_DEFAULT                                                                                                \
    (RM_MILP_FLOOR_FIRST | RM_MILP_S_PRIORITY | RM_MILP_STAGE_ORDER | RM_MILP_PRUNE | RM_MILP_FREE_CUT |               \
     RM_MILP_PREFIX_ROWS | RM_MILP_INCUMBENT | RM_MILP_FREE_CONT | RM_MILP_SHORTCUT | RM_MILP_NO_SCALING |             \
     RM_MILP_TIGHT_BUDGET)

/* Optional sink for lp_solve's own messages (library code never prints). */
typedef void (*rm_milp_log_fn)(void *ctx, const char *line);

struct _lprec; /* lp_solve's model (lp_lib.h), kept out of this header */

typedef struct rm_lp_free_var {
    int t, i, k, col;
} rm_lp_free_var;

/* The model of one problem at one activation budget. Column numbers are
 * lp_solve's (1-based); 0 = no column. */
typedef struct rm_lp_model {
    const rm_problem *p; /* read while building only (a kept model outlives it: rm_milp_relax_kept) */
    int n;
    unsigned levers;
    int *s_col, *r_col, *u_col; /* n x n; 0 = no column (fixed at 0; R[t][t] is the constant 1) */
    rm_lp_free_var *fv;         /* sorted by stage, then point k */
    int nfree;
    int *fv_start;       /* n + 1 */
    int *lastdesc;       /* largest index reachable from i (i itself when it has no users) */
    int *ustart, *ulist; /* users of each node, ascending */
    int ncols, nrows, nint, nS, nR;
    double cost_scale, cost_const; /* objective = cost_const + cost_scale * lp objective */
    double step;                   /* every cost is a multiple of it (0 = no such step) */
    double mem_scale, mem_rhs;     /* budget rows are in units of mem_scale bytes */
    size_t mem_gcd;                /* every value's bytes are a multiple of it */
    int *brow, nbrow;              /* the budget rows (PREFIX_ROWS; lp_solve's numbers), for set_budget */
    double *rv;
    int *ri;
    /* The rows as they are generated (CSR, freed once lp_solve has them).
     * lp_solve appends a row in time proportional to the columns (it moves
     * every column's bounds), so the model is loaded column by column once
     * every row is known. Measured (80% budget, U-variable rows): ResNet-50
     * (367 nodes, 355,462 columns, 710,115 rows) 167 s row by row, 1.9 s
     * now; U-Net (141) 2.7 s, now 0.1 s; 90% of the old time was memmove. */
    size_t *row_start; /* nrows + 1 */
    int *row_col;      /* 1-based columns */
    double *row_val;
    double *row_rhs;
    unsigned char *row_type; /* LE, GE, EQ */
    size_t row_cap, nz_cap;
    rm_milp_log_fn log; /* lp_solve's messages, at lp_solve verbosity `verbosity` */
    void *log_ctx;
    int verbosity;
    int stopped; /* the build's deadline passed: the model is half built */
    struct _lprec *lp;
} rm_lp_model;

/* Rejects problems the model cannot express (who: the message's prefix). */
int rm_lp_check_problem(const rm_problem *p, const char *who, rm_err *e);

/* Builds the model for an activation budget of act bytes (act > 0). All
 * columns are continuous in [0, 1]; the MILP makes S and R binary. log may
 * be NULL. On failure the model may be half built: free it either way. The
 * build is checked against deadline (0 = none) once per stage and before
 * lp_solve is given the rows; past it the build stops with RM_ERR_BUDGET
 * and m->stopped set. */
int rm_lp_model_build(rm_lp_model *m, const rm_problem *p, size_t act, unsigned levers, rm_milp_log_fn log,
                      void *log_ctx, int verbosity, double deadline, rm_err *e);
void rm_lp_model_free(rm_lp_model *m);
/* The same model at another activation budget: only the budget rows'
 * right-hand sides (or the U columns' bounds) change, in the units of the
 * budget it was built for, so that lp_solve's next solve starts from its
 * last basis. */
int rm_lp_model_set_budget(rm_lp_model *m, size_t act, rm_err *e);
/* The number of S, R and FREE columns rm_lp_model_build would give p with
 * these levers, counted without building a row (a model's rows grow with
 * its FREE columns: 123,327 of them came with 928,245 rows). */
int rm_lp_model_variables(long *vars, const rm_problem *p, unsigned levers, rm_err *e);

/* Makes the model the MILP: S and R binary, and FREE too unless the levers
 * keep it continuous (RM_MILP_FREE_CONT). What milp.c solves, and what the
 * engine benchmark (bench/engine_solve.c) hands to HiGHS. */
int rm_lp_model_set_integers(rm_lp_model *m, rm_err *e);
/* Writes the model in free MPS (lp_solve's write_freemps), so that another
 * solver can solve the very same rows; its objective maps to cost units as
 * here: cost_const + cost_scale * objective. Column k is named C<k> (the
 * model's numbering), so a solution file maps back through s_col/r_col.
 * Columns in no row and not in the objective are left out (*dropped: how
 * many): MPS cannot declare a column without entries, and CBC rejects the
 * bound of a column it never saw. Empty columns are FREE variables after
 * the last compute of the last stage, which no later point counts. The
 * model itself loses them: write it last, never solve it after. */
int rm_lp_model_write_mps(rm_lp_model *m, const char *path, int *dropped, rm_err *e);

/* Every cost is an integer multiple of the result when the costs are
 * integers (FLOP counts, test costs); 0 otherwise. */
double rm_lp_cost_step(const rm_problem *p);
/* The bound rounded up to the cost step (less a hair for lp_solve's tolerance). */
double rm_lp_step_up(double bound, double step);

/* One lp_solve solve() under a node limit and a deadline (absolute, on the
 * clock of rm_now, deadline.h; 0 = none), optionally noting when improved solutions
 * are found (track_improvements). */
typedef struct rm_lp_watch {
    long node_limit;
    double deadline;
    double t0;
    double first; /* seconds after t0 of the first improved solution; -1 = none */
    int improvements;
    int node_abort, time_abort;
    /* Optional: asked now and then during the solve; nonzero stops it
     * (USERABORT), and cancelled is set. The MILP's race uses it to stop
     * lp_solve once CBC has proved (milp.c). */
    int (*cancel)(void *ctx);
    void *cancel_ctx;
    int cancelled;
    double next_check; /* when cancel is asked next (every 5 ms) */
} rm_lp_watch;
rm_lp_watch rm_lp_watch_make(long node_limit, double deadline);
int rm_lp_solve_watched(struct _lprec *lp, rm_lp_watch *w, int track_improvements);

/* Solves the model as an LP. *code: lp_solve's answer (OPTIMAL, INFEASIBLE,
 * or a limit); *bound: the optimum in cost units when OPTIMAL. Errors only
 * for lp_solve failures. */
int rm_lp_solve_relaxation(rm_lp_model *m, int *code, double *bound, double deadline, rm_err *e);
/* The fractional S and R (n x n, either may be NULL) from lp_solve's values. */
void rm_lp_fill_fractional(const rm_lp_model *m, const double *v, double *S, double *R);

/* lp_solve's solve() codes by name, and the error for a code that is neither
 * a solution nor infeasibility (what: "MILP", "LP relaxation"). */
const char *rm_lp_code_name(int code);
int rm_lp_failure(int code, const char *what, rm_err *e);

/* The LP relaxation: fractional S and R (n x n, row-major, malloc'ed) and
 * its optimum, a lower bound on the cost of any schedule. Budget 0 is solved
 * at the checkpoint-all peak. */
typedef struct rm_milp_relaxation {
    int n;
    double *S, *R;
    double bound;
    double seconds;
} rm_milp_relaxation;

/* The relaxation of p (as rm_milp_relax), keeping its model in *kept for
 * the next call: where *kept holds one (of the same problem's graph and
 * levers), only its budget changes (rm_lp_model_set_budget) and lp_solve
 * starts from the last optimal basis. LP rounding's relaxations at tighter
 * budgets, one after the other (lp_round.c), solve so in a fraction of the
 * first's time. The caller frees *kept (rm_lp_model_discard). */
int rm_milp_relax_kept(rm_milp_relaxation *out, rm_lp_model **kept, const rm_problem *p, unsigned levers,
                       double time_limit_s, rm_err *e);
void rm_lp_model_discard(rm_lp_model *m);

/* From RM_CLP_MIN_COLUMNS columns on, with CBC built in, the relaxation is
 * solved by CBC's Clp (milp_engine.h: rm_cbc_relax) instead of lp_solve's
 * simplex, which is 13x slower there (VGG16 b32 at 80%, 12,754 columns:
 * 7.9 s against 0.58 s), over 20x on whole graphs. Below, lp_solve takes
 * under a second (resnet-tiny, 4,465 columns: 0.42 s; Clp 0.10 s), and
 * keeps the vertex the documents' examples and the tests' roundings were
 * made from, with or without CBC. A CBC that fails hands it to lp_solve. */
#define RM_CLP_MIN_COLUMNS 8000
int rm_milp_relax(rm_milp_relaxation *out, const rm_problem *p, unsigned levers, double time_limit_s, rm_err *e);
void rm_milp_relaxation_free(rm_milp_relaxation *r);

#endif
