/* The CBC engine (milp_engine.h): the model's matrix read back from
 * lp_solve's lprec, handed to CBC 2.10's C interface in a child process
 * that writes its answer into memory shared with the parent.
 *
 * Why a child: Cbc_solve cannot be interrupted through the C interface (its
 * callbacks cannot stop it), and the race in milp.c must stop CBC the
 * moment lp_solve proves first; a time limit alone would keep the caller
 * waiting. A killed child also leaves nothing behind, and a CBC that
 * crashes or runs out of memory fails its own process, not remat. */
#include "milp_engine.h"

#include <float.h>
#include <lp_lib.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"

#ifdef REMAT_HAVE_CBC
#include <Cbc_C_Interface.h>
#endif

int rm_milp_engine_have_cbc(void)
{
#ifdef REMAT_HAVE_CBC
    return 1;
#else
    return 0;
#endif
}

/* The answer, written by the child, read by the parent once the child has
 * exited (waitpid orders the two). x follows the header. */
typedef struct shared_answer {
    int written; /* the child got as far as writing its answer */
    int has_x, proved_optimal, proved_infeasible, status, secondary;
    double objective, bound;
    long nodes;
    char why[200];
} shared_answer;

struct rm_cbc_job {
    pid_t pid;
    int exited, ncols;
    int wstatus;
    shared_answer *sh;
    size_t shsize;
    double t0;
};

#ifdef REMAT_HAVE_CBC

/* The model as CBC loads it: columns (CSC), their bounds, the objective,
 * the rows' bounds, and which columns are integer. */
typedef struct csc {
    int ncols, nrows;
    int *start, *index;
    double *value, *collb, *colub, *obj, *rowlb, *rowub;
    char *integer;
} csc;

static void csc_free(csc *c)
{
    free(c->start);
    free(c->index);
    free(c->value);
    free(c->collb);
    free(c->colub);
    free(c->obj);
    free(c->rowlb);
    free(c->rowub);
    free(c->integer);
}

static double finite_or_max(double v, double inf)
{
    return v >= inf ? DBL_MAX : v <= -inf ? -DBL_MAX : v;
}

/* Reads the lprec back column by column (get_columnex gives row 0, the
 * objective, with the rest): what lp_solve would solve, cuts included. */
static int csc_from_lp(csc *c, lprec *lp, rm_err *e)
{
    memset(c, 0, sizeof *c);
    c->ncols = get_Ncolumns(lp);
    c->nrows = get_Nrows(lp);
    double inf = get_infinite(lp);
    size_t nc = (size_t)c->ncols, nr = (size_t)c->nrows;
    REAL *col = malloc((nr + 1) * sizeof *col);
    int *nz = malloc((nr + 1) * sizeof *nz);
    size_t cap = 4 * nc + 16, used = 0;
    c->start = malloc((nc + 1) * sizeof *c->start);
    c->index = malloc(cap * sizeof *c->index);
    c->value = malloc(cap * sizeof *c->value);
    c->collb = malloc(nc * sizeof *c->collb);
    c->colub = malloc(nc * sizeof *c->colub);
    c->obj = calloc(nc, sizeof *c->obj);
    c->rowlb = malloc(nr * sizeof *c->rowlb);
    c->rowub = malloc(nr * sizeof *c->rowub);
    c->integer = malloc(nc);
    if (!col || !nz || !c->start || !c->index || !c->value || !c->collb || !c->colub || !c->obj || !c->rowlb ||
        !c->rowub || !c->integer)
        goto nomem;
    for (int j = 1; j <= c->ncols; j++) {
        int cnt = get_columnex(lp, j, col, nz);
        if (cnt < 0) {
            free(col);
            free(nz);
            return rm_errorf(e, RM_ERR_SOLVER, "lp_solve get_columnex failed on column %d", j);
        }
        c->start[j - 1] = (int)used;
        if (used + (size_t)cnt > cap) {
            while (used + (size_t)cnt > cap) cap *= 2;
            int *ni = realloc(c->index, cap * sizeof *ni);
            if (ni) c->index = ni;
            double *nv = realloc(c->value, cap * sizeof *nv);
            if (nv) c->value = nv;
            if (!ni || !nv) goto nomem;
        }
        for (int k = 0; k < cnt; k++) {
            if (nz[k] == 0) {
                c->obj[j - 1] = col[k];
                continue;
            }
            c->index[used] = nz[k] - 1;
            c->value[used++] = col[k];
        }
        c->collb[j - 1] = finite_or_max(get_lowbo(lp, j), inf);
        c->colub[j - 1] = finite_or_max(get_upbo(lp, j), inf);
        c->integer[j - 1] = is_int(lp, j) != 0;
    }
    c->start[c->ncols] = (int)used;
    for (int i = 1; i <= c->nrows; i++) {
        c->rowlb[i - 1] = finite_or_max(get_rh_lower(lp, i), inf);
        c->rowub[i - 1] = finite_or_max(get_rh_upper(lp, i), inf);
    }
    free(col);
    free(nz);
    return RM_OK;
nomem:
    free(col);
    free(nz);
    return rm_errorf(e, RM_ERR_NOMEM, "cbc: out of memory copying the model (%d columns, %d rows)", c->ncols, c->nrows);
}

/* The child: loads, solves, writes the answer, and leaves without running
 * the parent's exit handlers (_exit). */
static void child_solve(const csc *c, const rm_cbc_args *a, shared_answer *sh, double *x, pid_t parent)
{
    /* Dies with remat: a killed remat must not leave CBC running. */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent) _exit(4);
    if (!a->log) { /* CBC prints on stdout, which is the caller's (a schedule, a table) */
        FILE *null = fopen("/dev/null", "w");
        if (null) dup2(fileno(null), STDOUT_FILENO);
    } else {
        dup2(STDERR_FILENO, STDOUT_FILENO);
    }
    Cbc_Model *cm = Cbc_newModel();
    if (!cm) {
        snprintf(sh->why, sizeof sh->why, "Cbc_newModel failed");
        sh->written = 1;
        _exit(3);
    }
    Cbc_loadProblem(cm, c->ncols, c->nrows, c->start, c->index, c->value, c->collb, c->colub, c->obj, c->rowlb,
                    c->rowub);
    Cbc_setObjSense(cm, 1); /* minimise, as lp_model.c does */
    int nint = 0;
    for (int j = 0; j < c->ncols; j++)
        if (c->integer[j] && !a->lp_only) Cbc_setInteger(cm, j), nint++;
    if (a->start && !a->lp_only) {
        int *idx = malloc((size_t)(nint ? nint : 1) * sizeof *idx);
        double *val = malloc((size_t)(nint ? nint : 1) * sizeof *val);
        if (idx && val) {
            int k = 0;
            for (int j = 0; j < c->ncols; j++)
                if (c->integer[j]) idx[k] = j, val[k++] = a->start[j];
            Cbc_setMIPStartI(cm, k, idx, val);
        }
        free(idx);
        free(val);
    }
    if (isfinite(a->cutoff) && !a->lp_only) Cbc_setCutoff(cm, a->cutoff);
    Cbc_setLogLevel(cm, a->log ? 1 : 0);
    Cbc_setParameter(cm, "timeMode", "elapsed"); /* the deadline is wall clock, CBC's default CPU time */
    if (a->deadline > 0) {
        /* A little before the deadline: CBC checks its clock between nodes,
         * and the parent must still read and judge the answer. */
        double left = a->deadline - rm_now();
        Cbc_setMaximumSeconds(cm, fmax(0.01, 0.95 * left - 0.05));
    }
    if (a->first_fit) Cbc_setMaximumSolutions(cm, 1);
    if (a->node_limit > 0) Cbc_setMaximumNodes(cm, a->node_limit > 2000000000L ? 2000000000 : (int)a->node_limit);
    Cbc_solve(cm);
    sh->status = Cbc_status(cm);
    sh->secondary = Cbc_secondaryStatus(cm);
    sh->proved_optimal = Cbc_isProvenOptimal(cm);
    sh->proved_infeasible = Cbc_isProvenInfeasible(cm);
    sh->bound = Cbc_getBestPossibleObjValue(cm);
    sh->nodes = Cbc_getNodeCount(cm);
    /* An LP's optimum is the solver's column solution; a MILP's, its best
     * integer solution. */
    const double *best = a->lp_only ? (sh->proved_optimal ? Cbc_getColSolution(cm) : NULL) : Cbc_bestSolution(cm);
    if (best) {
        memcpy(x, best, (size_t)c->ncols * sizeof *x);
        sh->objective = Cbc_getObjValue(cm);
        sh->has_x = 1;
    }
    sh->written = 1;
    _exit(0);
}

int rm_cbc_start(rm_cbc_job **job, const rm_lp_model *m, const rm_cbc_args *a, rm_err *e)
{
    *job = NULL;
    csc c;
    int rc = csc_from_lp(&c, m->lp, e);
    if (rc != RM_OK) {
        csc_free(&c);
        return rc;
    }
    rm_cbc_job *j = calloc(1, sizeof *j);
    if (!j) {
        csc_free(&c);
        return rm_errorf(e, RM_ERR_NOMEM, "cbc: out of memory");
    }
    j->ncols = c.ncols;
    j->shsize = sizeof(shared_answer) + (size_t)c.ncols * sizeof(double);
    j->sh = mmap(NULL, j->shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (j->sh == MAP_FAILED) {
        size_t size = j->shsize;
        csc_free(&c);
        free(j);
        return rm_errorf(e, RM_ERR_SOLVER, "cbc: cannot map %zu bytes for the answer", size);
    }
    j->t0 = rm_now();
    fflush(NULL); /* the child must not write the parent's buffered output again */
    pid_t parent = getpid();
    j->pid = fork();
    if (j->pid == 0) child_solve(&c, a, j->sh, (double *)(j->sh + 1), parent);
    csc_free(&c);
    if (j->pid < 0) {
        munmap(j->sh, j->shsize);
        free(j);
        return rm_errorf(e, RM_ERR_SOLVER, "cbc: cannot start its process (fork failed)");
    }
    RM_LOG_DEBUG("cbc: started on %d columns, %d rows (pid %d)", c.ncols, c.nrows, (int)j->pid);
    *job = j;
    return RM_OK;
}

#else /* !REMAT_HAVE_CBC */

int rm_cbc_start(rm_cbc_job **job, const rm_lp_model *m, const rm_cbc_args *a, rm_err *e)
{
    (void)m;
    (void)a;
    *job = NULL;
    return rm_errorf(e, RM_ERR_SOLVER, "cbc: not built into this remat (configure with -DREMAT_CBC=ON)");
}

#endif

int rm_cbc_done(rm_cbc_job *j)
{
    if (!j || j->exited) return 1;
    pid_t r = waitpid(j->pid, &j->wstatus, WNOHANG);
    if (r == j->pid || r < 0) j->exited = 1;
    return j->exited;
}

int rm_cbc_proved(rm_cbc_job *j)
{
    if (!j || !rm_cbc_done(j) || j->exited == 2) return 0;
    const shared_answer *sh = j->sh;
    return sh->written && WIFEXITED(j->wstatus) && WEXITSTATUS(j->wstatus) == 0 && sh->status == 0;
}

static void kill_child(rm_cbc_job *j)
{
    if (!j || j->exited) return;
    kill(j->pid, SIGKILL);
    while (waitpid(j->pid, &j->wstatus, 0) < 0) /* EINTR */
        ;
    j->exited = 2; /* killed */
}

void rm_cbc_finish(rm_cbc_job *j, double deadline, rm_engine_answer *ans, double *x)
{
    memset(ans, 0, sizeof *ans);
    ans->bound = -INFINITY;
    ans->state = RM_ENGINE_NONE;
    if (!j) {
        ans->state = RM_ENGINE_FAILED;
        snprintf(ans->why, sizeof ans->why, "CBC was not started");
        return;
    }
    while (!rm_cbc_done(j)) {
        if (deadline > 0 && rm_now() >= deadline) {
            kill_child(j);
            snprintf(ans->why, sizeof ans->why, "stopped at the deadline after %.2f s", rm_now() - j->t0);
            return;
        }
        struct timespec ts = {0, 2000000}; /* 2 ms: the answer is read within that of CBC's end */
        nanosleep(&ts, NULL);
    }
    const shared_answer *sh = j->sh;
    if (j->exited == 2) {
        snprintf(ans->why, sizeof ans->why, "cancelled after %.2f s", rm_now() - j->t0);
        return;
    }
    if (!sh->written || !WIFEXITED(j->wstatus) || WEXITSTATUS(j->wstatus) != 0) {
        ans->state = RM_ENGINE_FAILED;
        if (WIFSIGNALED(j->wstatus))
            snprintf(ans->why, sizeof ans->why, "CBC's process died of signal %d", WTERMSIG(j->wstatus));
        else
            snprintf(ans->why, sizeof ans->why, "CBC's process failed (%s)", sh->why[0] ? sh->why : "no answer");
        return;
    }
    ans->code = sh->status * 100 + sh->secondary;
    ans->nodes = sh->nodes;
    if (isfinite(sh->bound)) ans->bound = sh->bound;
    if (sh->status == 2) {
        ans->state = RM_ENGINE_FAILED;
        snprintf(ans->why, sizeof ans->why, "CBC abandoned the search (numerical difficulties)");
        return;
    }
    if (sh->has_x) {
        memcpy(x, sh + 1, (size_t)j->ncols * sizeof *x);
        ans->objective = sh->objective;
        ans->state = sh->proved_optimal ? RM_ENGINE_FOUND_OPTIMAL : RM_ENGINE_FOUND;
    } else if (sh->proved_infeasible || sh->status == 0) {
        ans->state = RM_ENGINE_NONE_PROVED; /* the search finished: nothing below the cutoff */
    }
    snprintf(ans->why, sizeof ans->why, "CBC status %d/%d after %.2f s, %ld nodes", sh->status, sh->secondary,
             rm_now() - j->t0, sh->nodes);
}

void rm_cbc_free(rm_cbc_job *j)
{
    if (!j) return;
    kill_child(j);
    munmap(j->sh, j->shsize);
    free(j);
}

int rm_cbc_relax(double *bound, double *x, const rm_lp_model *m, double deadline, rm_err *e)
{
    rm_cbc_args a = {.cutoff = INFINITY, .deadline = deadline, .lp_only = 1, .log = rm_log_threshold() >= RM_LOG_DEBUG};
    rm_cbc_job *job;
    int rc = rm_cbc_start(&job, m, &a, e);
    if (rc != RM_OK) return rc;
    rm_engine_answer ans;
    rm_cbc_finish(job, deadline, &ans, x);
    rm_cbc_free(job);
    if (ans.state == RM_ENGINE_FOUND_OPTIMAL) {
        *bound = m->cost_const + m->cost_scale * ans.objective;
        return RM_OK;
    }
    if (ans.state == RM_ENGINE_NONE) return rm_errorf(e, RM_ERR_BUDGET, "cbc: the LP relaxation: %s", ans.why);
    if (ans.state == RM_ENGINE_NONE_PROVED)
        return rm_errorf(e, RM_ERR_INFEASIBLE, "cbc: the LP relaxation is infeasible: no schedule fits");
    return rm_errorf(e, RM_ERR_SOLVER, "cbc: the LP relaxation: %s", ans.why);
}
