/* `remat graph`: loads a model config, traces it at a batch size and prints
 * what the scheduler will see: node and edge counts, parameters, fixed and
 * activation memory, FLOPs, and the peak memory of plain training without
 * rematerialization (checkpoint-all, judged by the simulator). Optionally
 * writes the training graph as Graphviz. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "cli_util.h"
#include "commands.h"
#include "builder.h"
#include "footprint.h"
#include "problem.h"
#include "simulate.h"
#include "strategy.h"
#include "trace.h"

#define GRAPH_USAGE                                                                                              \
    "usage: remat graph --model FILE --batch N [--dot FILE]\n"                                                   \
    "\n"                                                                                                         \
    "Traces the model at batch size N into its training graph (forward nodes, the loss, backward and\n"        \
    "gradient-sum nodes) and prints its size: nodes, edges, parameters, fixed bytes (weights, gradients,\n"   \
    "SGD momentum, batchnorm running statistics, labels, layer workspace: what `remat train` allocates),\n"   \
    "activation bytes (every node output summed), forward and backward GFLOPs, and the peak memory of\n"      \
    "training without rematerialization (every activation kept until its last use), as judged by the\n"      \
    "simulator: the peak `plan --budget 80%` and `train --budget 80%` take a percentage of.\n"                \
    "\n"                                                                                                         \
    "options:\n"                                                                                                 \
    "  --model FILE   model config (models/*.cfg; format in docs/config-format.md)\n"                           \
    "  --batch N      batch size, at least 1\n"                                                                  \
    "  --dot FILE     also write the graph in Graphviz format (render: dot -Tsvg FILE > graph.svg);\n"         \
    "                 forward nodes blue, backward nodes red, the loss gold\n"                                  \
    "\n"                                                                                                         \
    "example: remat graph --model models/resnet50.cfg --batch 32"

/* labels keep their "\n" line breaks; other strings escape backslashes too. */
static void dot_string(FILE *f, const char *s, int label)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || (*s == '\\' && !label)) fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static int write_dot(const rm_graph *g, const char *model_path, const char *path)
{
    /* Atomically (engine/atomic_file.h): a full disk leaves the previous file. */
    rm_atomic_file af;
    rm_err e = {RM_OK, ""};
    if (rm_atomic_open(&af, path, &e)) {
        fprintf(stderr, "remat graph: %s\n", e.msg);
        return 1;
    }
    FILE *f = af.f;
    fprintf(f, "digraph ");
    dot_string(f, model_path, 0);
    fprintf(f, " {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"Helvetica\", fontsize=10];\n"
               "  edge [fontname=\"Helvetica\", fontsize=8];\n");
    for (int i = 0; i < g->n; i++) {
        const rm_graph_node *nd = &g->nodes[i];
        char sz[32], sh[64], label[256];
        rm_cli_bytes(sz, sizeof sz, (double)nd->bytes);
        if (nd->op == RM_OP_BACKWARD) snprintf(label, sizeof label, "%s\\n%s", nd->name, sz);
        else snprintf(label, sizeof label, "%s\\n%s\\n%s", nd->name, rm_shape_str(nd->shape, sh, sizeof sh), sz);
        const char *fill = "#cfe2f3", *extra = "";
        if (nd->tag == RM_TAG_LOSS) {
            fill = "#ffd966";
            extra = ", penwidth=3, shape=doubleoctagon";
        } else if (nd->tag == RM_TAG_BACKWARD) {
            fill = "#f4cccc";
            if (nd->op == RM_OP_GRAD_SUM) extra = ", shape=hexagon";
        } else if (nd->op == RM_OP_INPUT) {
            extra = ", shape=ellipse";
        }
        fprintf(f, "  n%d [label=", i);
        dot_string(f, label, 1);
        fprintf(f, ", fillcolor=\"%s\"%s];\n", fill, extra);
    }
    for (int i = 0; i < g->n; i++) {
        const rm_graph_node *nd = &g->nodes[i];
        for (int k = 0; k < nd->ndeps; k++) {
            /* Gradient slices are labelled with the input position they belong to. */
            if (nd->dep_slot[k] >= 0) fprintf(f, "  n%d -> n%d [label=\"[%d]\"];\n", nd->deps[k], i, nd->dep_slot[k]);
            else fprintf(f, "  n%d -> n%d;\n", nd->deps[k], i);
        }
    }
    fprintf(f, "}\n");
    if (rm_atomic_commit(&af, &e)) {
        fprintf(stderr, "remat graph: %s\n", e.msg);
        return 1;
    }
    return 0;
}

#define usage_error(...) rm_cli_usage_error("graph", GRAPH_USAGE, __VA_ARGS__)

static int report(const rm_graph *g, const rm_model *m, const char *model_path)
{
    int nfwd = 0, nloss = 0, nbwd = 0, nsum = 0;
    for (int i = 0; i < g->n; i++) {
        if (g->nodes[i].tag == RM_TAG_FORWARD) nfwd++;
        else if (g->nodes[i].tag == RM_TAG_LOSS) nloss++;
        else nbwd++;
        if (g->nodes[i].op == RM_OP_GRAD_SUM) nsum++;
    }

    /* The problem and footprint `plan` and `train` use (SGD with momentum,
     * the CPU), so the peak printed here is the one their budgets are
     * percentages of. */
    rm_err e = {RM_OK, ""};
    rm_problem *p = NULL;
    rm_schedule *s = NULL;
    rm_footprint fp;
    rm_sim_result sim;
    memset(&sim, 0, sizeof sim);
    rm_optim_options sgd = rm_optim_options_default(RM_OPTIM_SGD);
    int rc = rm_training_problem(&p, &fp, m, g->batch, &sgd, NULL, NULL, RM_COST_SAME_BATCH, &e);
    if (rc) {
        /* The model at this batch (too large to account, out of memory), not the simulator. */
        fprintf(stderr, "remat graph: %s\n", e.msg);
        return rc == RM_ERR_NOMEM ? 2 : 1;
    }
    /* The budget is 0, so checkpoint-all always fits: one simulation gives its peak. */
    rc = rm_checkpoint_all_fit(&s, &sim, p, &e);
    rm_schedule_free(s);
    rm_problem_free(p);
    if (rc) {
        fprintf(stderr, "remat graph: simulating checkpoint-all failed: %s\n", e.msg);
        return 2;
    }

    char a[64], b[64], c[64], d[64];
    size_t act = rm_graph_activation_bytes(g);
    size_t peak = fp.total + sim.peak_bytes;
    printf("model        %s (input %dx%dx%d, %d layers)\n", model_path, m->input.c, m->input.h, m->input.w,
           m->nlayers);
    printf("batch        %d\n", g->batch);
    printf("nodes        %d: %d forward (input included), %d loss, %d backward (%d gradient sums)\n", g->n, nfwd,
           nloss, nbwd, nsum);
    printf("edges        %zu\n", rm_graph_edge_count(g));
    printf("parameters   %s\n", rm_cli_group_digits(a, sizeof a, g->param_count));
    rm_cli_print_footprint(stdout, &fp, &sgd);
    printf("activations  %s (%s bytes), every node output summed\n", rm_cli_bytes(b, sizeof b, (double)act),
           rm_cli_group_digits(c, sizeof c, act));
    printf("forward      %.2f GFLOPs\n", g->forward_flops / 1e9);
    printf("backward     %.2f GFLOPs\n", g->backward_flops / 1e9);
    printf("peak         %s (%s bytes) without rematerialization = fixed + activation peak %s (%s bytes)\n",
           rm_cli_bytes(b, sizeof b, (double)peak), rm_cli_group_digits(c, sizeof c, peak),
           rm_cli_bytes(d, sizeof d, (double)sim.peak_bytes), rm_cli_group_digits(a, sizeof a, sim.peak_bytes));
    if (sim.peak_node >= 0 && sim.peak_node < g->n)
        printf("             reached while computing '%s' (stage %d)\n", g->nodes[sim.peak_node].name,
               sim.peak_stage);
    return 0;
}

static int graph_run(int argc, char **argv)
{
    const char *model_path = NULL, *batch_arg = NULL, *dot_path = NULL;
    const rm_cli_opt opts[] = {
        RM_CLI_VALUE("--model", &model_path),
        RM_CLI_VALUE("--batch", &batch_arg),
        RM_CLI_VALUE("--dot", &dot_path),
    };
    if (rm_cli_parse_options(opts, sizeof opts / sizeof opts[0], argc, argv, "graph", GRAPH_USAGE)) return 1;
    if (!model_path) return usage_error("%s", "--model FILE is required");
    if (!batch_arg) return usage_error("%s", "--batch N is required");
    long batch;
    char why[160];
    if (rm_cli_parse_batch(&batch, batch_arg, why, sizeof why)) return usage_error("%s", why);

    rm_err e = {RM_OK, ""};
    rm_model *m = NULL;
    if (rm_model_load(&m, model_path, &e)) {
        fprintf(stderr, "remat graph: %s\n", e.msg);
        return 1;
    }
    rm_graph g;
    if (rm_model_trace(&g, m, (int)batch, &e)) {
        fprintf(stderr, "remat graph: %s\n", e.msg);
        rm_model_free(m);
        return e.code == RM_ERR_NOMEM ? 2 : 1;
    }
    int rc = report(&g, m, model_path);
    if (!rc && dot_path) {
        rc = write_dot(&g, model_path, dot_path);
        if (!rc) printf("dot          %s\n", dot_path);
    }
    rm_graph_free(&g);
    rm_model_free(m);
    return rc;
}

const rm_command rm_cmd_graph = {
    .name = "graph",
    .summary = "trace a model config into its training graph and report its size and no-remat peak",
    .usage = GRAPH_USAGE,
    .run = graph_run,
};
