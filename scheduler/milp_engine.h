/* The MILP's engines: what runs the branch and bound of the model that
 * lp_model.c built. The model is built once (in lp_solve's lprec, as the
 * LP relaxation and the rounding need it) and handed to an engine with a
 * starting solution, a cutoff, a deadline and a node limit; the engine
 * answers with a solution (by column), a proved bound, a state and its node
 * count, and can be cancelled. milp.c judges every answer in the simulator.
 *
 *   lp_solve  the design's solver: always built, runs in the caller's
 *             process (milp.c's search, with its no-good restarts)
 *   cbc       COIN-OR CBC 2.10 through its C interface, built when present
 *             (-DREMAT_CBC=AUTO|ON|OFF). It runs in a child process: CBC's
 *             C interface cannot be interrupted, and a child can be killed
 *             the moment lp_solve proves first or the deadline passes, and
 *             cannot take remat down with it if CBC fails.
 *   auto      the default: see rm_milp_engine_resolve.
 *
 * Both engines see the same rows: the CBC engine reads the matrix back
 * from the lprec (rm_cbc_start), no-good rows and fixed bounds included. */
#ifndef REMAT_MILP_ENGINE_H
#define REMAT_MILP_ENGINE_H

#include "error.h"
#include "lp_model.h"

typedef enum {
    RM_MILP_ENGINE_AUTO = 0,
    RM_MILP_ENGINE_LPSOLVE = 1,
    RM_MILP_ENGINE_CBC = 2,
    RM_MILP_ENGINE_BOTH = 3, /* what auto may resolve to: both at once, the first proof wins */
} rm_milp_engine;

/* "lp_solve", "cbc", "auto", "lp_solve+cbc". */
const char *rm_milp_engine_name(rm_milp_engine k);
/* Parses a --milp-engine value (lp_solve, cbc or auto); an error names the
 * choices, and says so when cbc was not built into this remat. */
int rm_milp_engine_parse(rm_milp_engine *k, const char *s, rm_err *e);
/* 1 when CBC was built in. */
int rm_milp_engine_have_cbc(void);

/* What auto runs, decided per solve: lp_solve when CBC is not built in, or
 * when the caller asks for a deterministic answer (a node limit: the
 * tests' mode), or on a problem of fewer than RM_MILP_RACE_MIN_NODES nodes
 * (lp_solve proves those in milliseconds, before CBC's child has started);
 * otherwise both at once on two or more cores, CBC alone on one. A named
 * engine that is not built resolves to lp_solve (*why says so; else NULL). */
#define RM_MILP_RACE_MIN_NODES 16
rm_milp_engine rm_milp_engine_resolve(rm_milp_engine asked, int n, long node_limit, const char **why);

/* An engine's answer, in the model's own units (lp_model.h: cost =
 * cost_const + cost_scale * objective). */
typedef enum {
    RM_ENGINE_FOUND_OPTIMAL, /* x is optimal for the model (below the cutoff) */
    RM_ENGINE_FOUND,         /* x is a solution; a limit stopped the proof */
    RM_ENGINE_NONE_PROVED,   /* proved: nothing below the cutoff (or none at all without one) */
    RM_ENGINE_NONE,          /* a limit or a cancellation came first */
    RM_ENGINE_FAILED,        /* the engine failed: why says how */
} rm_engine_state;

typedef struct rm_engine_answer {
    rm_engine_state state;
    double objective; /* of x, when found */
    double bound;     /* a proved lower bound on the model's optimum; -INFINITY when none */
    long nodes;
    int code; /* the engine's own status code */
    char why[200];
} rm_engine_answer;

/* The CBC engine, one solve at a time in a child process. */
typedef struct rm_cbc_job rm_cbc_job;

typedef struct rm_cbc_args {
    const double *start; /* a solution to start from, by column (0-based, m->ncols); NULL = none */
    double cutoff;       /* only solutions of objective below this are wanted; INFINITY = none */
    double deadline;     /* absolute (deadline.h); 0 = none. The child stops itself a little before it */
    long node_limit;     /* 0 = none */
    int first_fit;       /* stop at the first solution */
    int lp_only;         /* solve the LP relaxation (every column continuous) with CBC's Clp: its
                            optimum is FOUND_OPTIMAL with x; no start, no cutoff. lp_solve's simplex
                            takes minutes on whole graphs of a few hundred nodes where Clp takes
                            seconds (U-Net, 141 nodes: over 120 s against 7 s) */
    int log;             /* CBC's own log on stderr (REMAT_LOG=debug) */
} rm_cbc_args;

/* Starts CBC on the model as it is now (S and R integer). RM_ERR_SOLVER
 * when CBC is not built in or the child cannot start. */
int rm_cbc_start(rm_cbc_job **job, const rm_lp_model *m, const rm_cbc_args *a, rm_err *e);
/* 1 once the child has answered (or died), 0 while it runs. Never blocks. */
int rm_cbc_done(rm_cbc_job *job);
/* 1 once the child has answered with a proof (an optimum, or nothing below
 * the cutoff): what stops the other engine of a race. Never blocks. */
int rm_cbc_proved(rm_cbc_job *job);
/* Waits for the answer until deadline (0 = none), then kills the child:
 * its answer is then NONE. x (m->ncols) receives the solution when found. */
void rm_cbc_finish(rm_cbc_job *job, double deadline, rm_engine_answer *ans, double *x);
/* Kills the child (if still running) and frees the job; NULL is fine. */
void rm_cbc_free(rm_cbc_job *job);

/* The LP relaxation of the model m solved by CBC's Clp (lp_only) until
 * deadline (0 = none): its optimum in cost units (*bound) and its values
 * by column in x (m->ncols). RM_ERR_SOLVER when CBC is not built in or
 * fails, RM_ERR_BUDGET when the deadline came first. */
int rm_cbc_relax(double *bound, double *x, const rm_lp_model *m, double deadline, rm_err *e);

#endif
