/* Table 2 of remat_bench_sched (Feng & Huang, CVPR 2021 form): the
 * activation memory of checkpoint-all against the ogc schedule with no
 * budget, beside the figures Feng & Huang report. */
#include <stdio.h>
#include <string.h>

#include "sched_bench.h"
#include "schedule.h"

/* Feng & Huang's reported figures, as issue 3 quotes them (memory cut and
 * measured time overhead); NULL where we do not know theirs. */
typedef struct fh_figure {
    const char *model;
    long batch;
    const char *memory_cut, *time_overhead;
} fh_figure;

static const fh_figure fh_figures[] = {
    {"vgg16", 64, NULL, NULL},
    {"resnet18", 256, NULL, NULL},
    {"resnet50", 64, "-63%", "+31%"},
    {"resnet101", 32, "-74%", "+35%"},
};

static const fh_figure *fh_find(const char *model, long batch)
{
    for (size_t i = 0; i < sizeof fh_figures / sizeof fh_figures[0]; i++)
        if (!strcmp(fh_figures[i].model, model) && fh_figures[i].batch == batch) return &fh_figures[i];
    return NULL;
}

int run_table2(const model_spec *models, int nmodels)
{
    emit("\n## Table 2: optimal gradient checkpointing (Feng & Huang, CVPR 2021 form)\n\n"
         "Activation memory: peak minus fixed bytes, from the exact simulator, with no budget. Regular: "
         "checkpoint-all (every value kept until its last use). ogc: Feng & Huang's checkpoint set (the one that "
         "minimizes the activation peak). Our overhead is extra FLOPs of the cost model; theirs is measured "
         "training time, so theirs includes what FLOPs do not count (memory-bound layers, allocator, kernel "
         "launches). Their figures are as quoted in issue 3; n/a where we do not know them. Inputs 224x224.\n\n");
    emit("| model | batch | regular activations | ogc activations | memory cut | overhead (FLOPs) | ogc solve | "
         "F&H memory cut | F&H time overhead |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    emit_flush();
    const rm_strategy_info *all = rm_strategy_find("checkpoint_all"), *ogc = rm_strategy_find("ogc");
    int status = 0;
    for (int i = 0; i < nmodels; i++) {
        const model_spec *m = &models[i];
        fprintf(stderr, "bench: table 2: %s at batch %ld: checkpoint_all, ogc ...\n", m->name, m->batch);
        rm_cli_problem cp;
        int rc = rm_cli_problem_load(&cp, "bench", m->path, m->batch, NULL);
        if (rc) {
            emit("| %s | %ld | failed to load (see stderr) | | | | | | |\n", m->name, m->batch);
            status = rc;
            continue;
        }
        cp.p->budget = 0; /* unlimited: we want each strategy's own peak */
        rm_schedule *s = NULL;
        rm_strategy_stats sa, so;
        rm_err e = {RM_OK, ""};
        int ra = rm_strategy_run(&s, &sa, all, cp.p, NULL, &e);
        rm_schedule_free(s);
        s = NULL;
        int ro = ra ? ra : rm_strategy_run(&s, &so, ogc, cp.p, NULL, &e);
        rm_schedule_free(s);
        if (ra || ro) {
            fprintf(stderr, "remat_bench_sched: %s: %s\n", m->name, e.msg);
            emit("| %s | %ld | error (see stderr) | | | | | | |\n", m->name, m->batch);
            status = 2;
            rm_cli_problem_free(&cp);
            continue;
        }
        const fh_figure *fh = fh_find(m->name, m->batch);
        char a[32], b[32];
        emit("| %s | %ld | %s | %s | %+.1f%% | %+.2f%% | %.2f s | %s | %s |\n", m->name, m->batch,
             rm_cli_bytes(a, sizeof a, (double)sa.sim.peak_bytes), rm_cli_bytes(b, sizeof b, (double)so.sim.peak_bytes),
             -100.0 * (1.0 - (double)so.sim.peak_bytes / (double)sa.sim.peak_bytes),
             overhead_pct(so.sim.cost, cp.facts.base_cost), so.seconds, fh && fh->memory_cut ? fh->memory_cut : "n/a",
             fh && fh->time_overhead ? fh->time_overhead : "n/a");
        emit_flush();
        rm_cli_problem_free(&cp);
    }
    return status;
}
