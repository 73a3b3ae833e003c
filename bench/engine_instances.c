/* The instance families of remat_bench_engine:
 *   models  every built-in model (batch 32, U-Net 8) at 90/80/70/60% of its
 *           no-remat peak (--pcts), total memory as `remat plan --budget P%`
 *           means it
 *   linear  Checkmate's linear graphs (gen_linear_graph) of 8, 16 and 24
 *           layers (--linear) at every integer budget from the trivial lower bound to
 *           just below the checkpoint-all peak
 *   random  50 seeded random training DAGs of 20-80 nodes (the scheduler
 *           tests' generator), each at one budget between the trivial bound
 *           and the checkpoint-all peak
 * --quick keeps a few small instances of each. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_util.h"
#include "engine_bench.h"
#include "random_graphs.h"
#include "rng.h"
#include "strategy.h"

/* A row run, printed and counted. */
static int one(engine_totals t[ENG_NFAM], int fam, const engine_cfg *c, rm_problem *p, const char *name, int flops)
{
    static const char *names[ENG_NFAM] = {"models", "linear", "random", "all"};
    engine_row row;
    memset(&row, 0, sizeof row);
    snprintf(row.name, sizeof row.name, "%s", name);
    snprintf(row.family, sizeof row.family, "%s", names[fam]);
    engine_run_instance(&row, c, p);
    engine_table_row(c, &row, flops);
    if (engine_totals_add(&t[fam], &row) || engine_totals_add(&t[ENG_ALL], &row)) {
        fprintf(stderr, "remat_bench_engine: out of memory\n");
        return 2;
    }
    return 0;
}

/* The problem's facts (scheduler/report.h): the budgets of interest lie
 * between its trivial lower bound and its checkpoint-all peak. */
static int facts_of(rm_problem_report *r, const rm_problem *p)
{
    rm_err e = {RM_OK, ""};
    if (rm_problem_report_of(r, p, &e) != RM_OK) {
        fprintf(stderr, "remat_bench_engine: checkpoint-all: %s\n", e.msg);
        return 2;
    }
    return 0;
}

/* ---- built-in models ---- */

static int run_model(engine_totals t[ENG_NFAM], const engine_cfg *c, const char *model, long batch, const double *pct,
                     int npct)
{
    char path[4096], name[64];
    snprintf(path, sizeof path, "%s/%s.cfg", c->models_dir, model);
    fprintf(stderr, "engine-bench: tracing %s at batch %ld ...\n", path, batch);
    rm_cli_problem cp;
    int rc = rm_cli_problem_load(&cp, "engine-bench", path, batch, NULL);
    if (rc) {
        emit("| %s b%ld | failed to load (see stderr) |\n", model, batch);
        return rc;
    }
    for (int k = 0; k < npct && !rc; k++) {
        rm_cli_budget b = rm_cli_budget_percent(pct[k]);
        snprintf(name, sizeof name, "%s b%ld %g%%", model, batch, pct[k]);
        if (rm_cli_problem_set_budget(&cp, "engine-bench", &b)) {
            /* Why is on stderr; the table says that it was not forgotten. */
            char bytes[32];
            emit("| %s | %d | - | %s | below the trivial lower bound: no schedule exists, nothing run |\n", name,
                 cp.p->n, rm_cli_bytes(bytes, sizeof bytes, (double)rm_cli_budget_bytes(&b, cp.facts.noremat_total)));
            continue;
        }
        rc = one(t, ENG_MODELS, c, cp.p, name, cp.flops == RM_CLI_COST_FLOPS);
    }
    rm_cli_problem_free(&cp);
    return rc;
}

/* name is an item of the comma-separated list. */
static int in_list(const char *list, const char *name)
{
    size_t len = strlen(name);
    for (const char *s = list; s; s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
        if (!strncmp(s, name, len) && (s[len] == ',' || s[len] == '\0')) return 1;
    return 0;
}

static int run_models(engine_totals t[ENG_NFAM], const engine_cfg *c)
{
    static const char *all[] = {"vgg11",    "vgg13",     "vgg16",     "vgg19", "resnet18", "resnet34",
                                "resnet50", "resnet101", "resnet152", "unet",  "mobilenet"};
    static const double quick_pct[] = {98};
    double pct[16];
    int npct = 0;
    for (const char *s = c->pcts ? c->pcts : "90,80,70,60"; s && npct < 16;
         s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
        pct[npct++] = atof(s);
    engine_table_start(c, "Built-in models",
                       c->quick ? "vgg-tiny at batch 4, 98% of its no-remat peak (--quick)."
                                : "Batch 32 (U-Net 8), at the given % of the no-remat peak "
                                  "(total memory, fixed bytes included). Costs: overhead over "
                                  "checkpoint-all in FLOPs.");
    if (c->quick) return run_model(t, c, "vgg-tiny", 4, quick_pct, 1);
    int status = 0;
    for (size_t k = 0; k < sizeof all / sizeof *all; k++) {
        if (c->models && !in_list(c->models, all[k])) continue;
        long batch = strcmp(all[k], "unet") ? 32 : 8;
        int rc = run_model(t, c, all[k], batch, pct, npct);
        if (rc && !status) status = rc;
    }
    return status;
}

/* ---- Checkmate's linear graphs ---- */

/* Checkmate's gen_linear_graph(n) (the tests' generator, unit costs) with
 * every size 1, as Checkmate's defaults have it: budgets are value counts. */
static rm_problem *linear_problem(int n)
{
    rm_problem *p = rg_checkmate_linear(n, 0, 0);
    if (!p) {
        fprintf(stderr, "remat_bench_engine: linear graph of %d layers: out of memory\n", n);
        return NULL;
    }
    for (int j = 0; j < p->n; j++) p->nodes[j].bytes = 1;
    return p;
}

static int run_linear(engine_totals t[ENG_NFAM], const engine_cfg *c)
{
    int layers[16], nl = 0;
    char name[64];
    for (const char *s = c->linear ? c->linear : "8,16,24"; s && nl < 16;
         s = strchr(s, ',') ? strchr(s, ',') + 1 : NULL)
        layers[nl++] = atoi(s);
    engine_table_start(c, "Checkmate's linear graphs",
                       "gen_linear_graph(n) (n: --linear): 2n+1 nodes, every cost and size 1, at "
                       "every integer budget from the trivial lower bound to one below "
                       "the checkpoint-all peak.");
    for (int k = 0; k < (c->quick ? 1 : nl); k++) {
        rm_problem *p = linear_problem(layers[k]);
        if (!p) return 2;
        rm_problem_report f;
        int rc = facts_of(&f, p);
        size_t peak = f.noremat.peak_bytes, lb = f.lower_bound;
        /* --quick: the three budgets just under the peak, the easy end. */
        for (size_t b = c->quick && peak > lb + 3 ? peak - 3 : lb; !rc && b < peak; b++) {
            p->budget = b;
            snprintf(name, sizeof name, "linear %d, budget %zu", layers[k], b);
            rc = one(t, ENG_LINEAR, c, p, name, 0);
        }
        rm_problem_free(p);
        if (rc) return rc;
    }
    return 0;
}

/* ---- random DAGs ---- */

/* A training DAG of 20-80 nodes from seed: the forward length is drawn,
 * then nudged until the graph (whose size also depends on its grad-sum
 * nodes) is in range. */
static rm_problem *random_problem(uint64_t seed, int quick)
{
    rm_rng r = rm_rng_make(seed * 0x2545f4914f6cdd1dULL + 7);
    int lo = 20, hi = quick ? 26 : 80;
    int F = 9 + (int)(rm_rng_next(&r) % (uint64_t)(quick ? 3 : 30));
    for (int tries = 0; tries < 40; tries++) {
        rg_options o = {F, 0.3, 0.2, 0, 1 << 20};
        rm_problem *p = rg_training_problem(seed, &o);
        if (!p) return NULL;
        if (p->n >= lo && p->n <= hi) return p;
        F += p->n < lo ? 1 : -1;
        rm_problem_free(p);
    }
    return NULL;
}

static int run_random(engine_totals t[ENG_NFAM], const engine_cfg *c)
{
    char name[64];
    engine_table_start(c, "Random training DAGs",
                       "The scheduler tests' generator (rg_training_problem: skips 0.3, "
                       "branches 0.2, sizes up to 1 MiB), seeds 1, 2, ..., each at a budget drawn "
                       "between the trivial lower bound and the checkpoint-all peak "
                       "(budget: total bytes, the generator's fixed bytes included).");
    for (int k = 1; k <= c->random; k++) {
        rm_problem *p = random_problem((uint64_t)k, c->quick);
        rm_problem_report f;
        if (!p || facts_of(&f, p)) {
            fprintf(stderr, "remat_bench_engine: random DAG %d could not be made\n", k);
            rm_problem_free(p);
            return 2;
        }
        size_t peak = f.noremat.peak_bytes, lb = f.lower_bound;
        rm_rng r = rm_rng_make((uint64_t)k * 0x9e3779b97f4a7c15ULL + 99);
        /* 20-80% of the way from the bound to the peak: the interesting range. */
        p->budget = p->fixed_bytes + lb + (size_t)((double)(peak - lb) * rm_rng_range(&r, 0.2, 0.8));
        snprintf(name, sizeof name, "random %d", k);
        int rc = one(t, ENG_RANDOM, c, p, name, 0);
        rm_problem_free(p);
        if (rc) return rc;
    }
    return 0;
}

int engine_run_all(const engine_cfg *c, engine_totals t[ENG_NFAM])
{
    int status = 0, rc;
    if (!c->only || !strcmp(c->only, "models")) status = run_models(t, c);
    if ((!c->only || !strcmp(c->only, "linear")) && (rc = run_linear(t, c)) && !status) status = rc;
    if ((!c->only || !strcmp(c->only, "random")) && (rc = run_random(t, c)) && !status) status = rc;
    return status;
}
