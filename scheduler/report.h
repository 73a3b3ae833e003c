/* The report of a problem and the report of a schedule: the facts every
 * command prints and every route decides by, computed here once and passed
 * on, never derived again by whoever renders them (cli/: plan, explain,
 * lesson, graph, maxbatch and the SVG figures; train/: the trainer; bench/).
 *
 * A problem's report holds what does not depend on the budget: checkpoint-
 * all's simulation (the no-remat peak, what "80%" is a percentage of), the
 * trivial lower bound and the node that sets it, and the base cost (every
 * node once). The budget's verdict (rm_budget_verdict_of) is asked of it,
 * by the commands before they solve and by the solver route's shortcuts.
 *
 * A schedule's report holds its operation sequence, the activation bytes
 * after every operation (the memory timeline), the highest point of every
 * stage, the operation where the peak is reached, the recomputations, the
 * simulator's verdict and, when asked, the arena plan (engine/plan.h, as
 * rm_schedule_plan places it): one replay of the schedule for all of them. */
#ifndef REMAT_REPORT_H
#define REMAT_REPORT_H

#include <stddef.h>

#include "plan.h"
#include "problem.h"
#include "schedule.h"
#include "simulate.h"

/* ---- A problem ---- */

typedef struct rm_problem_report {
    rm_sim_result noremat; /* checkpoint-all (every value kept until its last use), simulated without a budget */
    size_t noremat_total;  /* fixed + noremat.peak_bytes: the no-remat peak */
    size_t lower_bound;    /* the trivial lower bound on the activation peak (rm_problem_peak_lower_bound) */
    int lb_node;           /* the node that sets it */
    double base_cost;      /* every node once: checkpoint-all's cost, the least any schedule pays */
} rm_problem_report;

/* The facts of p (valid: rm_problem_validate), whatever its budget. Errors:
 * the simulator's on checkpoint-all (a bug, or out of memory). */
int rm_problem_report_of(rm_problem_report *out, const rm_problem *p, rm_err *e);

/* pct percent of the no-remat peak in bytes, rounded down, at least 1 and
 * at most RM_PROBLEM_MAX_BYTES (no problem holds more, so a larger budget
 * would mean the same): the one place a percentage becomes a budget. */
size_t rm_budget_percent_bytes(double pct, size_t noremat_total);

/* What a budget allows, from the least to the most. */
typedef enum rm_budget_verdict {
    RM_BUDGET_OVER_CAP,    /* the compute cap (max_cost) is below every node once: nothing fits it */
    RM_BUDGET_BELOW_FIXED, /* at most the fixed bytes (and below fixed + the trivial bound): nothing is left */
    RM_BUDGET_BELOW_BOUND, /* below fixed + the trivial lower bound: no schedule exists */
    RM_BUDGET_NEEDS_REMAT, /* between that and the no-remat peak: a schedule must recompute */
    RM_BUDGET_FITS,        /* at least the no-remat peak: checkpoint-all fits, nothing is recomputed */
    RM_BUDGET_UNLIMITED,   /* budget 0 */
} rm_budget_verdict;

/* The verdict on p's budget (p->budget, p->fixed_bytes, p->max_cost) given
 * its facts r. The one answer to "does anything fit?" and "does
 * checkpoint-all fit?": the commands, the trainer and the solver route's
 * shortcuts all ask here. r->noremat_total 0 means "not known" (the solvers'
 * check, rm_problem_check_budget): then a budget above the bound is said to
 * need rematerialization. */
rm_budget_verdict rm_budget_verdict_of(const rm_problem *p, const rm_problem_report *r);
/* 1 for the verdicts under which a schedule exists. */
static inline int rm_budget_feasible(rm_budget_verdict v)
{
    return v >= RM_BUDGET_NEEDS_REMAT;
}

/* Writes bytes as people read them into buf (the CLI's rm_cli_bytes: "12.3
 * MiB"); returns buf. */
typedef const char *(*rm_bytes_fn)(char *buf, size_t len, double bytes);

/* Why no schedule exists under verdict v (one of OVER_CAP, BELOW_FIXED,
 * BELOW_BOUND), in the one wording every command and solver uses, into buf
 * (no trailing newline or full stop); bytes written with fmt (NULL: "N
 * bytes"). Names r's trivial-bound node. Returns buf; "" for the others. */
const char *rm_budget_reason(char *buf, size_t len, rm_budget_verdict v, const rm_problem *p,
                             const rm_problem_report *r, rm_bytes_fn fmt);

/* "Is the budget below the trivial bound?", for the solvers: RM_OK where
 * rm_budget_verdict_of(p, r) is feasible, else RM_ERR_INFEASIBLE with
 * rm_budget_reason prefixed by who. r NULL: its trivial bound is computed
 * here (the no-remat peak is not needed). Every strategy and solver refuses
 * such a problem at once with this answer. */
int rm_problem_check_budget_of(const rm_problem *p, const rm_problem_report *r, const char *who, rm_err *e);

/* ---- A schedule ---- */

/* What rm_schedule_report_of computes besides the replay. */
enum {
    RM_REPORT_ARENA = 1,       /* the arena plan, as the executor will run it (the trainer) */
    RM_REPORT_ARENA_SHOWN = 2, /* the arena plan to print: not above RM_REPORT_ARENA_MAX_BUFFERS */
};

/* RM_REPORT_ARENA_SHOWN leaves the arena plan out above this many buffers
 * (computes): the offline placement (engine/plan.c) is quadratic, minutes
 * at 100,000, and a command that only prints it should not wait for it. */
#define RM_REPORT_ARENA_MAX_BUFFERS 20000

typedef struct rm_schedule_report {
    int n;           /* stages (the problem's nodes) */
    int *stage_node; /* each stage's own node where the schedule has its own order (schedule.h); NULL: t */
    rm_op *ops;      /* the operation sequence (rm_schedule_ops) */
    int nops;
    size_t *mem;          /* activation bytes after each operation: the memory timeline (nops entries) */
    size_t *stage_max;    /* the highest activation bytes inside each stage (n entries) */
    rm_sim_result sim;    /* the simulator's verdict: cost, peak, recomputations */
    int ncomputes;        /* compute operations */
    int nrecomputes;      /* of them recomputations (rm_op_is_recompute) */
    int recomputed_nodes; /* nodes computed more than once */
    int peak_op;          /* the first compute that reaches the peak; -1 if none */
    int backward_op;      /* the first operation of a backward stage; -1 if none */
    /* With RM_REPORT_ARENA: the plan, or NULL with the reason in arena_note:
     * the placement's error (its code in arena_code), or RM_OK there when
     * it was not placed for having too many buffers. */
    rm_plan *arena;
    int arena_code;
    char arena_note[RM_ERR_MSG_LEN];
} rm_schedule_report;

/* The node stage t computes first, its own: t, or the schedule's order's. */
static inline int rm_report_stage_node(const rm_schedule_report *r, int t)
{
    return r->stage_node ? r->stage_node[t] : t;
}

/* A recomputation: a compute of a node in a stage not its own. */
static inline int rm_op_is_recompute(const rm_schedule_report *r, const rm_op *op)
{
    return op->kind == RM_OP_COMPUTE && op->node != rm_report_stage_node(r, op->stage);
}

/* The report of s on p: one replay (rm_schedule_ops, rm_simulate_ops), and
 * with RM_REPORT_ARENA(_SHOWN) in what the arena plan of those operations (sizes
 * from g, the graph p was traced from, when not NULL: as the executor runs
 * it; else p's bytes). Errors: the simulator's (an invalid schedule) and
 * out of memory; the arena's are a note, not an error. */
int rm_schedule_report_of(rm_schedule_report *out, const rm_problem *p, const rm_schedule *s, const rm_graph *g,
                          unsigned what, rm_err *e);
/* The arena plan part of it alone (what as above), for a report made
 * without: placed from r's operations, no replay. Already placed: kept. */
void rm_schedule_report_arena(rm_schedule_report *r, const rm_problem *p, const rm_graph *g, unsigned what);
/* Takes the arena plan out of r (the caller owns it; NULL if none). */
rm_plan *rm_schedule_report_take_arena(rm_schedule_report *r);
void rm_schedule_report_free(rm_schedule_report *r);

#endif
