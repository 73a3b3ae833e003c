/* The trainer's schedule (see trainer_internal.h): the problem at the batch,
 * the budget and the checks that say what fits, the solve with its re-solves
 * against fragmentation, the schedule cache, and --batch auto. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "atomic_file.h"
#include "maxbatch.h"
#include "report.h"
#include "simulate.h"
#include "trace.h"
#include "trainer_internal.h"

#define SOLVE_ATTEMPTS 4 /* one solve plus re-solves that absorb fragmentation */

/* ---- the problem ----------------------------------------------------------- */

typedef struct problem_ctx {
    const rm_model *m;
    const rm_optim_options *o;
    const rm_backend *be;
    const rm_cost_file *costs;
    int accum;
} problem_ctx;

/* The problems of the max-batch searches and bounds: they try many batch
 * sizes, so profiled costs are scaled linearly to each one. */
static int build_problem(rm_problem **out, void *vctx, int batch, rm_err *e)
{
    const problem_ctx *c = vctx;
    rm_footprint f;
    int rc = rm_training_problem(out, &f, c->m, batch, c->o, c->be, c->costs, RM_COST_SCALE_BATCH, e);
    if (rc == RM_OK && (rc = rm_footprint_add_grad_sum(&f, *out, c->m, c->accum, e))) {
        rm_problem_free(*out);
        *out = NULL;
    }
    return rc;
}

/* The trainer's binary units (MB) as the budget's reason writes bytes (report.h). */
static const char *trainer_bytes(char *buf, size_t len, double bytes)
{
    snprintf(buf, len, "%s", MB((size_t)bytes).s);
    return buf;
}

/* ---- the schedule ----------------------------------------------------------- */

static uint64_t fnv(uint64_t h, const void *data, size_t n)
{
    const unsigned char *b = data;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/* The cache key: everything a schedule depends on (the problem, the budget,
 * the strategy), and nothing else, so two models with the same training
 * graph share their schedules. */
static uint64_t cache_key(const rm_problem *p, size_t budget, const char *strategy)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    h = fnv(h, "remat schedule cache 1", 22);
    h = fnv(h, strategy, strlen(strategy));
    uint64_t v[3] = {(uint64_t)p->n, (uint64_t)p->fixed_bytes, (uint64_t)budget};
    h = fnv(h, v, sizeof v);
    for (int i = 0; i < p->n; i++) {
        const rm_problem_node *nd = &p->nodes[i];
        uint64_t w[3] = {(uint64_t)nd->tag, (uint64_t)nd->bytes, (uint64_t)nd->ndeps};
        h = fnv(h, nd->name, strlen(nd->name) + 1);
        h = fnv(h, w, sizeof w);
        h = fnv(h, &nd->cost, sizeof nd->cost);
        h = fnv(h, nd->deps, (size_t)nd->ndeps * sizeof *nd->deps);
    }
    return h;
}

/* The schedule's figures in the summary, from its report; the arena plan
 * (the report's, placed as the executor runs it) becomes t's. */
static void take_report(rm_trainer *t, rm_schedule_report *r)
{
    t->sum.sched_peak = t->p->fixed_bytes + r->sim.peak_bytes;
    t->sum.cost = r->sim.cost;
    t->sum.recomputations = r->sim.recomputations;
    t->sum.recomputed_nodes = r->recomputed_nodes;
    t->plan = rm_schedule_report_take_arena(r);
    t->sum.plan_span = t->plan->span;
}

/* The arena of a report made with RM_REPORT_ARENA: its placement's error, if any. */
static int report_arena(const rm_schedule_report *r, rm_err *e)
{
    if (r->arena) return RM_OK;
    return rm_errorf(e, r->arena_code ? r->arena_code : RM_ERR_INVALID, "%s", r->arena_note);
}

/* A cached schedule is used only if the reader (valid, agreeing with the
 * simulator), the budget and the plan's span all accept it. The cache is a
 * folder remat keeps, maybe shared, whose names anyone can predict: an
 * entry is read only as the regular file remat wrote, never through a
 * link planted under its name nor from a FIFO that would never answer
 * (RM_PATH_ENTRY, base/atomic_file.h). */
/* A schedule solved elsewhere (the cache, or rank 0; what: where, for the
 * messages) becomes the trainer's once the simulator, the budget and the
 * plan's span all accept it. Takes s either way. */
static int adopt(rm_trainer *t, rm_schedule *s, const char *what, rm_err *e)
{
    rm_schedule_report r;
    memset(&r, 0, sizeof r);
    int rc = rm_schedule_report_of(&r, t->p, s, &t->g, RM_REPORT_ARENA, e);
    if (!rc) rc = report_arena(&r, e);
    if (!rc && !rm_sim_fits(t->p, &r.sim))
        rc = rm_errorf(e, RM_ERR_BUDGET, "%s: peaks at %s, over the budget %s", what,
                       MB(t->p->fixed_bytes + r.sim.peak_bytes).s, MB(t->p->budget).s);
    if (!rc && t->p->fixed_bytes + r.arena->span > t->p->budget)
        rc = rm_errorf(e, RM_ERR_BUDGET, "%s: its plan needs %s, over the budget %s", what,
                       MB(t->p->fixed_bytes + r.arena->span).s, MB(t->p->budget).s);
    if (rc) {
        rm_schedule_free(s);
        rm_schedule_report_free(&r);
        return rc;
    }
    t->s = s;
    take_report(t, &r);
    rm_schedule_report_free(&r);
    return RM_OK;
}

static int cache_load(rm_trainer *t, const char *path, rm_err *e)
{
    rm_schedule *s = NULL;
    int rc = rm_schedule_read_entry(&s, t->p, path, e);
    if (!rc && !(rc = adopt(t, s, path, e))) t->sum.status = "cached";
    return rc;
}

/* Rank 0's schedule to every rank (its R and S, n x n bytes each), which
 * each plans itself and adopts; then every rank checks that its plan (the
 * arena's span and every operation's placement) is rank 0's, so that no
 * rank trains with another memory layout than the one that was checked. */
static int share_schedule(rm_trainer *t, rm_err *e)
{
    rm_rs *d = NULL;
    int rc = t->rank == 0 ? rm_rs_from_schedule(&d, t->s, e) : rm_rs_create(&d, t->p->n, e);
    size_t nn = (size_t)t->p->n * (size_t)t->p->n;
    if (!rc) rc = t->comm->ops->broadcast(t->comm->ctx, d->R, nn, 0, e);
    if (!rc) rc = t->comm->ops->broadcast(t->comm->ctx, d->S, nn, 0, e);
    /* Its order of first computes (schedule.h), the identity when it has none. */
    int n = t->p->n, *order = rc ? NULL : malloc((size_t)n * sizeof *order);
    if (!rc && !order) rc = rm_errorf(e, RM_ERR_NOMEM, "trainer: out of memory");
    if (!rc) {
        for (int k = 0; k < n; k++) order[k] = t->rank == 0 ? rm_schedule_node_at(t->s, k) : 0;
        rc = t->comm->ops->broadcast(t->comm->ctx, order, (size_t)n * sizeof *order, 0, e);
    }
    if (!rc && t->rank != 0) {
        rm_schedule *s = NULL;
        int own = 1; /* the problem's own order: kept as none */
        for (int k = 0; k < n; k++) own &= order[k] == k;
        if (!(rc = rm_schedule_from_rs(&s, d, e)) && !(rc = rm_schedule_set_order(s, own ? NULL : order, e)))
            rc = adopt(t, s, "rank 0's schedule", e);
        else
            rm_schedule_free(s);
        t->sum.status = "rank 0's";
    }
    free(order);
    rm_rs_free(d);
    if (rc) return rc;
    uint64_t h = fnv(0xcbf29ce484222325ULL, &t->plan->span, sizeof t->plan->span);
    h = fnv(h, &t->plan->nops, sizeof t->plan->nops);
    for (int k = 0; k < t->plan->nops; k++) { /* field by field: no padding bytes hashed */
        const rm_plan_op *o = &t->plan->ops[k];
        int f[4] = {(int)o->kind, o->node, o->stage, o->buffer};
        h = fnv(fnv(h, f, sizeof f), &o->offset, sizeof o->offset);
    }
    return rm_comm_check_same(t->comm, &h, sizeof h, "memory plan", e);
}

/* The entry is replaced atomically (base/atomic_file.h), so a concurrent
 * run never reads half a file and a full disk never leaves one; as an
 * RM_PATH_ENTRY, whatever is at the name (a planted link, a FIFO) is
 * replaced itself, and what a link names is never written.
 * The cache only saves solver time: a failure to store is a note, not a
 * reason to stop a training run whose schedule is already in hand. */
static void cache_store(rm_trainer *t, const char *path, const rm_schedule_report *r)
{
    rm_err e = {RM_OK, ""};
    if (mkdir(t->cfg.cache_dir, 0777) && errno != EEXIST) {
        rm_trainer_note(t, "schedule cache: cannot create %s: %s", t->cfg.cache_dir, strerror(errno));
        return;
    }
    if (rm_schedule_write_replayed(t->s, t->p, r->ops, r->nops, &r->sim, path, RM_PATH_ENTRY, &e))
        rm_trainer_note(t, "schedule cache: not stored: %s", e.msg);
    else
        t->sum.cache_stored = 1;
}

/* Where no schedule is found, what would fit: the largest batch this
 * strategy fits in the budget (baselines are cheap enough to search), and
 * the largest batch any schedule could fit. */
/* What follows "batch N" (N: one executor step's) in a message, so that it
 * reads as --batch takes it, the whole step's: "" on one process; split,
 * " a rank (--batch 42)" or " a micro-batch (--batch 28)". */
typedef struct batch_words {
    char s[64];
} batch_words;
static batch_words split_of(const rm_trainer *t, int micro)
{
    batch_words w = {""};
    if (t->slices > 1)
        snprintf(w.s, sizeof w.s, " a %s (--batch %lld)", t->accum > 1 ? "micro-batch" : "rank",
                 (long long)micro * t->slices);
    return w;
}

static void what_fits(const rm_trainer *t, const rm_strategy_info *st, char *buf, size_t len)
{
    problem_ctx pc = {t->m, &t->cfg.optim, t->be, t->cfg.costs, t->accum};
    rm_err e = {RM_OK, ""};
    int bound = 0;
    buf[0] = '\0';
    if (rm_maxbatch_bound(&bound, build_problem, &pc, t->sum.budget, t->batch, &e)) return;
    if (bound == 0) {
        snprintf(buf, len, "; not even batch 1 fits this budget");
        return;
    }
    size_t l = 0;
    if (!st->solve_opt && t->batch > 1) {
        rm_maxbatch_options o;
        memset(&o, 0, sizeof o);
        o.budget = t->sum.budget;
        o.max_batch = t->batch - 1;
        o.bound_batch = bound < t->batch ? bound : t->batch - 1;
        rm_maxbatch_result r;
        if (!rm_maxbatch_search(&r, st, build_problem, &pc, &o, &e)) {
            if (r.max_batch > 0) {
                batch_words w = split_of(t, r.max_batch);
                if (t->slices == 1) snprintf(w.s, sizeof w.s, " (--batch %d)", r.max_batch);
                l = (size_t)snprintf(buf, len, "; in this budget %s fits batch %d%s", st->name, r.max_batch, w.s);
            }
            rm_schedule_free(r.schedule);
        }
    }
    if (l >= len) return;
    if (bound < t->batch)
        snprintf(buf + l, len - l, "; no schedule at all fits a batch above %d%s", bound, split_of(t, bound).s);
    else if (!st->solve_opt)
        snprintf(buf + l, len - l, "; batch %d%s is above the lower bound, so lp_round or milp may fit it", t->batch,
                 split_of(t, t->batch).s);
}

static int solve(rm_trainer *t, const rm_problem_report *facts, rm_err *e)
{
    const rm_strategy_info *st = rm_strategy_find(t->cfg.strategy);
    rm_problem *p = t->p;
    const size_t budget = p->budget, fixed = p->fixed_bytes, act = budget - fixed;
    t->sum.strategy = st->name;
    t->sum.source = NULL;
    t->sum.cache = -1;
    t->sum.cache_stored = 0;
    char path[512] = "";
    if (t->cfg.cache_dir) {
        /* The folder is a name the user gave, like --out's: another user's
         * link planted there in /tmp would send every entry (and what is
         * read back) into a folder of theirs. Refused by the same rule. */
        int rc = rm_path_check_named(t->cfg.cache_dir, e);
        if (rc) return rc;
        snprintf(path, sizeof path, "%s/%s-%016llx.schedule", t->cfg.cache_dir, st->name,
                 (unsigned long long)cache_key(p, budget, st->name));
        snprintf(t->sum.cache_file, sizeof t->sum.cache_file, "%s", path);
        struct stat es;
        if (lstat(path, &es) == 0) { /* something is there: a link is said to be ignored, not taken as a miss */
            rm_err ce = {RM_OK, ""};
            if (!cache_load(t, path, &ce)) {
                t->sum.cache = 1;
                return RM_OK;
            }
            rm_trainer_note(t, "schedule cache: ignoring %s (%s); solving again", path, ce.msg);
        }
        t->sum.cache = 0;
    }
    /* Solved for the budget; when the placement's fragmentation pushes the
     * arena over, solved again for that much less. Checkpoint-all's schedule
     * does not depend on the budget, so re-solving it cannot help. */
    size_t target = budget, span = 0;
    int fixed_schedule = !strcmp(st->name, "checkpoint_all");
    rm_strategy_stats stats;
    rm_schedule_report rep; /* the judge's replay of the answer, with its arena plan */
    memset(&rep, 0, sizeof rep);
    rm_strategy_options so = t->cfg.solver;
    so.facts = facts;
    for (int attempt = 0; attempt < SOLVE_ATTEMPTS; attempt++) {
        p->budget = target;
        char line[300];
        snprintf(line, sizeof line, "solving the %s schedule for batch %d in %s (%s for activations)%s", st->name,
                 t->batch, MB(target).s, MB(target - fixed).s, attempt ? ", again" : "");
        rm_trainer_event ev;
        memset(&ev, 0, sizeof ev);
        ev.kind = RM_TRAINER_SOLVING;
        ev.text = line;
        ev.batch = t->batch;
        rm_trainer_emit(t, &ev);
        rm_schedule *s = NULL;
        int rc = rm_strategy_run_report(&s, &stats, &rep, RM_REPORT_ARENA, &t->g, st, p, &so, e);
        p->budget = budget;
        if (rc == RM_ERR_INFEASIBLE) {
            char fits[300];
            what_fits(t, st, fits, sizeof fits);
            return rm_errorf(e, RM_ERR_INFEASIBLE,
                             "%s finds no schedule for batch %d%s within %s (%s%s): training without "
                             "rematerialization needs %s, and no schedule needs less than %s%s",
                             st->name, t->batch, split_of(t, t->batch).s, MB(target).s, rm_status_name(stats.status),
                             stats.status == RM_STATUS_NO_SOLUTION ? ": the time limit came first" : "",
                             MB(t->sum.noremat_peak).s, MB(t->sum.lower_bound).s, fits);
        }
        if (rc) return rc;
        if ((rc = report_arena(&rep, e))) {
            rm_schedule_free(s);
            rm_schedule_report_free(&rep);
            return rc;
        }
        span = rep.arena->span;
        if (span <= act) {
            t->s = s;
            take_report(t, &rep);
            break;
        }
        size_t over = span - act;
        rm_schedule_free(s);
        rm_schedule_report_free(&rep);
        if (fixed_schedule || target - over < t->sum.lower_bound) break;
        rm_trainer_note(t,
                        "the %s plan needs %s for activations (live peak %s plus fragmentation), over the %s there is; "
                        "solving for %s less",
                        st->name, MB(span).s, MB(stats.sim.peak_bytes).s, MB(act).s, MB(over).s);
        target -= over;
        t->sum.resolves++;
    }
    if (!t->s)
        return rm_errorf(e, RM_ERR_BUDGET,
                         "the %s schedule for batch %d peaks within %s, but its arena needs %s for activations where "
                         "%s is left after the fixed %s (placement fragmentation); a slightly larger budget or "
                         "another strategy fits",
                         st->name, t->batch, MB(budget).s, MB(span).s, MB(act).s, MB(fixed).s);
    t->sum.status = rm_status_name(stats.status);
    t->sum.source = stats.source;
    t->sum.solve_s = stats.seconds;
    t->sum.has_bound = stats.has_bound;
    t->sum.gap = stats.gap;
    if (path[0]) cache_store(t, path, &rep);
    rm_schedule_report_free(&rep);
    return RM_OK;
}

/* The memory side of create: problem, budget, the checks that say what fits, the schedule. */
int rm_trainer_plan_memory(rm_trainer *t, rm_err *e)
{
    const rm_trainer_config *c = &t->cfg;
    int rc = rm_model_trace(&t->g, t->m, t->batch, e);
    /* Profiled costs must be of this batch, unless --batch auto chose it:
     * then they are scaled like the search's probes were. The problem is
     * made from the graph traced here: one trace. */
    rm_cost_batch mode = t->sum.batch_auto ? RM_COST_SCALE_BATCH : RM_COST_SAME_BATCH;
    if (!rc) rc = rm_training_problem_of(&t->p, &t->sum.fp, t->m, &t->g, &c->optim, t->be, c->costs, mode, e);
    if (!rc) rc = rm_footprint_add_grad_sum(&t->sum.fp, t->p, t->m, t->accum, e);
    if (rc) return rc;
    if (c->costs && t->batch != c->costs->batch)
        rm_trainer_note(t,
                        "costs: profiled at batch %d, scaled linearly to batch %d (assumes time grows with the batch)",
                        c->costs->batch, t->batch);
    rm_problem *p = t->p;
    rm_problem_report facts;
    if ((rc = rm_problem_report_of(&facts, p, e))) return rc;
    const size_t fixed = p->fixed_bytes;
    t->sum.noremat_peak = facts.noremat_total;
    t->sum.lower_bound = fixed + facts.lower_bound;
    t->sum.base_cost = facts.base_cost;
    t->sum.budget = c->budget_percent > 0 ? rm_budget_percent_bytes(c->budget_percent, facts.noremat_total) : c->budget;
    p->budget = t->sum.budget;
    const rm_trainer_summary *s = &t->sum;
    rm_budget_verdict v = rm_budget_verdict_of(p, &facts);
    char why[RM_ERR_MSG_LEN];
    if (v == RM_BUDGET_BELOW_FIXED)
        return rm_errorf(e, RM_ERR_BUDGET,
                         "%s: at batch %d%s they are weights %s, gradients %s, optimizer state %s, batchnorm "
                         "statistics %s, labels %s, workspace %s%s%s; any schedule needs at least %s, training without "
                         "rematerialization %s",
                         rm_budget_reason(why, sizeof why, v, p, &facts, trainer_bytes), t->batch,
                         split_of(t, t->batch).s, MB(s->fp.weights).s, MB(s->fp.grads).s, MB(s->fp.optim).s,
                         MB(s->fp.buffers).s, MB(s->fp.labels).s, MB(s->fp.workspace + s->fp.backend).s,
                         s->fp.grad_sum ? ", gradient sum " : "", s->fp.grad_sum ? MB(s->fp.grad_sum).s : "",
                         MB(s->lower_bound).s, MB(s->noremat_peak).s);
    if (!rm_budget_feasible(v)) {
        problem_ctx pc = {t->m, &c->optim, t->be, c->costs, t->accum};
        int bound = 0;
        rm_err be = {RM_OK, ""};
        char more[120] = "";
        if (!rm_maxbatch_bound(&bound, build_problem, &pc, p->budget, t->batch, &be)) {
            if (bound)
                snprintf(more, sizeof more, "; batch %d%s is the largest any schedule could fit in it", bound,
                         split_of(t, bound).s);
            else
                snprintf(more, sizeof more, "; not even batch 1 fits in it");
        }
        return rm_errorf(e, RM_ERR_INFEASIBLE, "at batch %d%s %s%s", t->batch, split_of(t, t->batch).s,
                         rm_budget_reason(why, sizeof why, v, p, &facts, trainer_bytes), more);
    }
    /* Every rank reached here alike (the checks above are deterministic);
     * a solve need not be (a time limit), so rank 0 alone solves. */
    if (t->rank == 0 && (rc = solve(t, &facts, e))) return rc;
    return t->ranks > 1 ? share_schedule(t, e) : RM_OK;
}

static void probe(void *ctx, const char *strategy, int batch, int feasible, double seconds)
{
    (void)strategy, (void)seconds;
    if (feasible < 0) return;
    rm_trainer_event ev;
    memset(&ev, 0, sizeof ev);
    ev.kind = RM_TRAINER_PROBE;
    ev.batch = batch;
    ev.fits = feasible;
    rm_trainer_emit(ctx, &ev);
}

const char *rm_trainer_batch_limit(char *buf, size_t len, int bound, int search_cap)
{
    /* A bound at the search's cap is the cap, not what fits. */
    if (bound >= search_cap)
        snprintf(buf, len, "the search stops at %d, its cap: larger batches are not tried", search_cap);
    else
        snprintf(buf, len, "no schedule fits more than %d", bound);
    return buf;
}

int rm_trainer_auto_batch(rm_trainer *t, rm_err *e)
{
    const rm_trainer_config *c = &t->cfg;
    const rm_strategy_info *st = rm_strategy_find(c->strategy);
    problem_ctx pc = {t->m, &c->optim, t->be, c->costs, t->accum};
    rm_maxbatch_options o;
    memset(&o, 0, sizeof o);
    o.budget = c->budget;
    const int search_cap = 1 << 16;
    o.max_batch = search_cap;
    o.solver = c->solver;
    /* maxbatch's default: a batch that fits only by recomputing several
     * times over is not worth training at. */
    o.cap = (rm_overhead_cap){RM_CAP_FORWARDS, 1};
    o.progress = probe;
    o.progress_ctx = t;
    int rc = rm_maxbatch_bound(&o.bound_batch, build_problem, &pc, o.budget, o.max_batch, e);
    if (rc) return rc;
    /* --samples (or a data folder) bounds the batch: a larger one would
     * leave no full batch to train on. The trivial bound is kept for what
     * it says (no schedule fits more). */
    int64_t known = rm_trainer_known_samples(t), samples = known / t->slices; /* one micro-batch's share */
    if (known > 0 && samples == 0)
        return rm_errorf(e, RM_ERR_INVALID,
                         "%lld training samples cannot fill a step of %d rank%s x %d micro-batch%s of even one sample",
                         (long long)known, t->ranks, t->ranks == 1 ? "" : "s", t->accum, t->accum == 1 ? "" : "es");
    int bound = o.bound_batch;
    if (samples > 0 && samples < o.max_batch) o.max_batch = (int)samples;
    if (o.bound_batch > o.max_batch) o.bound_batch = o.max_batch;
    if (o.bound_batch == 0) {
        rm_problem *p = NULL;
        rc = build_problem(&p, &pc, 1, e);
        if (rc) return rc;
        size_t fixed = p->fixed_bytes, lb = rm_problem_peak_lower_bound(p);
        rm_problem_free(p);
        return rm_errorf(e, RM_ERR_INFEASIBLE,
                         "not even batch 1 fits the budget %s: training %s at batch 1 needs at least %s (fixed %s + "
                         "the largest node with its inputs)",
                         MB(c->budget).s, t->m->path, MB(fixed + lb).s, MB(fixed).s);
    }
    char upto[120] = "", most[96];
    if (o.max_batch == samples)
        snprintf(upto, sizeof upto, "; at most %lld, the training samples%s", (long long)samples,
                 t->slices > 1 ? " split between the ranks and micro-batches of a step" : "");
    rm_trainer_batch_limit(most, sizeof most, bound, search_cap);
    rm_trainer_note(t,
                    "--batch auto: searching the largest batch %s fits in %s with at most one extra forward pass of "
                    "compute (%s%s)",
                    st->name, MB(c->budget).s, most, upto);
    rm_maxbatch_result r;
    if ((rc = rm_maxbatch_search(&r, st, build_problem, &pc, &o, e))) return rc;
    rm_schedule_free(r.schedule); /* the trainer plans its batch afresh, for the cheapest schedule */
    if (r.max_batch == 0)
        return rm_errorf(e, RM_ERR_INFEASIBLE, "%s fits no batch in the budget %s, not even 1%s", st->name,
                         MB(c->budget).s, st->solve_opt ? "" : " (lp_round or milp may: they recompute more cleverly)");
    t->batch = r.max_batch;
    t->sum.batch_auto = 1;
    t->sum.bound_batch = bound;
    t->sum.search_cap = search_cap;
    t->sum.batch_is_samples = r.capped && r.max_batch == samples;
    rm_trainer_note(t, "--batch auto: batch %d (%d solves, %.2f s)%s", r.max_batch, r.probes, r.search_s,
                    t->sum.batch_is_samples ? ", the number of training samples"
                    : r.capped              ? ", the search's cap"
                                            : "");
    return RM_OK;
}
