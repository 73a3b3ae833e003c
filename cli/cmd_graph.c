/* `remat graph`: loads a model config, traces it at a batch size and prints
 * what the scheduler will see: node and edge counts, parameters, fixed and
 * activation memory, FLOPs, and the peak memory of plain training without
 * rematerialization (checkpoint-all, judged by the simulator). Optionally
 * writes the training graph as Graphviz, with a legend and, given a
 * schedule, each node coloured by what the schedule does with it; and the
 * rematerialization problem `remat plan --model` would solve, as a problem
 * file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atomic_file.h"
#include "builder.h"
#include "cli_util.h"
#include "commands.h"
#include "footprint.h"
#include "problem.h"
#include "schedule.h"
#include "simulate.h"
#include "strategy.h"
#include "trace.h"

#define GRAPH_USAGE                                                                                                    \
    "usage: remat graph --model FILE --batch N [--dot FILE [--schedule FILE]] [--problem-out FILE]\n"                  \
    "                   (--onnx FILE [--loss L] [--init I] in place of --model FILE)\n"                                \
    "\n"                                                                                                               \
    "Traces the model at batch size N into its training graph (forward nodes, the loss, backward and\n"                \
    "gradient-sum nodes) and prints its size: nodes, edges, parameters, fixed bytes (weights, gradients,\n"            \
    "SGD momentum, batchnorm running statistics, labels, layer workspace: what `remat train` allocates),\n"            \
    "activation bytes (every node output summed), forward and backward FLOPs, and the peak memory of\n"                \
    "training without rematerialization (every activation kept until its last use), as judged by the\n"                \
    "simulator: the peak `plan --budget 80%` and `train --budget 80%` take a percentage of. An ONNX\n"                 \
    "network's import is shown first, node by node: the layer each node became, or what it folded to.\n"               \
    "\n"                                                                                                               \
    "options:\n"                                                                                                       \
    "  --model FILE        model config (models/*.cfg; format in docs/config-format.md)\n" RM_CLI_MODEL_USAGE(         \
        "        ") "  --batch N           batch size, at least 1\n"                                                   \
                    "  --dot FILE          also write the graph in Graphviz format (render: dot -Tsvg FILE > "         \
                    "graph.svg),\n"                                                                                    \
                    "                      with a legend: forward nodes blue boxes (the input an ellipse), the loss "  \
                    "a gold\n"                                                                                         \
                    "                      double octagon, backward nodes red boxes, gradient sums red hexagons; an "  \
                    "edge\n"                                                                                           \
                    "                      A -> B labelled [k]: A is a layer's backward node, and B reads only slice " \
                    "k of\n"                                                                                           \
                    "                      its output, the gradient of that layer's input k\n"                         \
                    "  --schedule FILE     with --dot, colour the nodes by a schedule `remat plan --out` wrote for "   \
                    "this\n"                                                                                           \
                    "                      model and batch: recomputed (orange; the label says how many times), "      \
                    "kept\n"                                                                                           \
                    "                      across stages (green: a checkpoint), computed once and freed in its "       \
                    "stage\n"                                                                                          \
                    "                      (grey); the border then shows the kind. A schedule for another graph is "   \
                    "an\n"                                                                                             \
                    "                      error\n"                                                                    \
                    "  --problem-out FILE  also write the rematerialization problem `remat plan --model` solves for "  \
                    "this\n"                                                                                           \
                    "                      model and batch (docs/problem-format.md; no budget in it): `remat plan\n"   \
                    "                      --problem FILE` gives the same answers\n"                                   \
                    "\n"                                                                                               \
                    "example: remat graph --model models/resnet50.cfg --batch 32"

/* labels keep their "\n" and "\l" line breaks; other strings escape backslashes too. */
static void dot_string(FILE *f, const char *s, int label)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || (*s == '\\' && !label)) fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* A node's name inside a label: as shown (base/utf8.h), its backslashes
 * (those of the escapes included) doubled, since a label keeps its own. */
static const char *dot_label_name(char *out, size_t cap, const char *name)
{
    rm_name_shown v = rm_name_shown_of(name);
    size_t o = 0;
    for (const char *c = v.s; *c && o + 2 < cap; c++) {
        if (*c == '\\') out[o++] = '\\';
        out[o++] = *c;
    }
    out[o] = '\0';
    return out;
}

/* Node colours. Without a schedule the fill says the kind (as in the SVG
 * figures); with one the fill says what the schedule does and the border
 * the kind. */
#define DOT_FORWARD "#cfe2f3"
#define DOT_LOSS "#ffd966"
#define DOT_BACKWARD "#f4cccc"
#define DOT_BORDER_FORWARD "#3d85c6"
#define DOT_BORDER_LOSS "#bf9000"
#define DOT_BORDER_BACKWARD "#cc0000"
#define DOT_RECOMPUTED "#f6b26b"
#define DOT_KEPT "#93c47d"
#define DOT_FREED "#eeeeee"

/* How a node is coloured: by its kind (no schedule), or white in its
 * kind's border (the legend's kinds, with a schedule), or by what the
 * schedule does with it. */
typedef enum { USE_NONE, USE_KIND, USE_RECOMPUTED, USE_KEPT, USE_FREED } node_use;

static const char *use_fill(node_use use)
{
    return use == USE_RECOMPUTED ? DOT_RECOMPUTED : use == USE_KEPT ? DOT_KEPT : use == USE_FREED ? DOT_FREED : "white";
}

/* A node's attributes after its label: shape and line width by kind, fill
 * and border as use says. */
static void dot_node_look(FILE *f, rm_node_tag tag, rm_node_op op, node_use use)
{
    const char *fill = tag == RM_TAG_LOSS ? DOT_LOSS : tag == RM_TAG_BACKWARD ? DOT_BACKWARD : DOT_FORWARD;
    const char *border = tag == RM_TAG_LOSS       ? DOT_BORDER_LOSS
                         : tag == RM_TAG_BACKWARD ? DOT_BORDER_BACKWARD
                                                  : DOT_BORDER_FORWARD;
    fprintf(f, ", fillcolor=\"%s\"", use == USE_NONE ? fill : use_fill(use));
    if (use != USE_NONE) fprintf(f, ", color=\"%s\"", border);
    if (tag == RM_TAG_LOSS)
        fprintf(f, ", penwidth=3, shape=doubleoctagon");
    else if (use != USE_NONE)
        fprintf(f, ", penwidth=2");
    if (op == RM_OP_GRAD_SUM)
        fprintf(f, ", shape=hexagon");
    else if (op == RM_OP_INPUT)
        fprintf(f, ", shape=ellipse");
}

/* The legend: one node of each kind, the schedule's colours when there is
 * one, and what edges and their [k] labels mean, in a cluster of its own. */
static void dot_legend(FILE *f, int with_schedule)
{
    static const struct {
        const char *id, *label;
        rm_node_tag tag;
        rm_node_op op;
    } kinds[] = {
        {"input", "input batch\\n(loaded, not computed)", RM_TAG_FORWARD, RM_OP_INPUT},
        {"forward", "forward node\\n(a layer's output)", RM_TAG_FORWARD, RM_OP_FORWARD},
        {"loss", "loss", RM_TAG_LOSS, RM_OP_FORWARD},
        {"backward", "backward node\\n(the gradients of\\nthe layer's inputs)", RM_TAG_BACKWARD, RM_OP_BACKWARD},
        {"gradsum", "gradient sum\\n(of a tensor several\\nlayers read)", RM_TAG_BACKWARD, RM_OP_GRAD_SUM},
    };
    static const struct {
        const char *id, *label;
        node_use use;
    } uses[] = {
        {"recomputed", "recomputed\\n(label: how many times)", USE_RECOMPUTED},
        {"kept", "kept across stages\\n(a checkpoint)", USE_KEPT},
        {"freed", "computed once,\\nfreed in its stage", USE_FREED},
    };
    fprintf(f, "  subgraph cluster_legend {\n    label=\"legend\"; fontname=\"Helvetica\"; fontsize=12; "
               "style=rounded; color=\"#999999\";\n    node [fontsize=9];\n");
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        fprintf(f, "    legend_%s [label=\"%s\"", kinds[k].id, kinds[k].label);
        /* With a schedule the fill is the schedule's: the kinds show white. */
        dot_node_look(f, kinds[k].tag, kinds[k].op, with_schedule ? USE_KIND : USE_NONE);
        fprintf(f, "];\n");
    }
    /* One row, in this order: invisible edges inside a rank keep it. */
    fprintf(f, "    { rank=same; ");
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) fprintf(f, "%slegend_%s", k ? " -> " : "", kinds[k].id);
    fprintf(f, " [style=invis]; }\n");
    if (with_schedule) {
        for (size_t k = 0; k < sizeof uses / sizeof uses[0]; k++)
            fprintf(f, "    legend_%s [label=\"%s\", fillcolor=\"%s\"];\n", uses[k].id, uses[k].label,
                    use_fill(uses[k].use));
        fprintf(f, "    { rank=same; legend_recomputed -> legend_kept -> legend_freed [style=invis]; }\n"
                   "    legend_forward -> legend_kept [style=invis];\n");
    }
    /* Exactly what write_dot's edges are: deps, and dep_slot as [k]. */
    fprintf(f,
            "    legend_edges [shape=plaintext, style=\"\", fontsize=10, label=\""
            "An edge A -> B: node B reads the output of node A.\\l"
            "An edge A -> B labelled [k]: A is the backward node of a layer L, whose output holds the\\l"
            "gradients of L's inputs one after another; B reads only slice k of it: the gradient of\\l"
            "L's input k (counting from 0), which is the output of B's own layer.\\l"
            "Labels: node name, output shape (not for backward nodes), output bytes%s.\\l\"];\n"
            "    legend_%s -> legend_edges [style=invis];\n  }\n",
            with_schedule ? ",\\land for a recomputed node how many times it is recomputed" : "",
            with_schedule ? "kept" : "forward");
}

/* The graph for Graphviz, with the legend; with s (a schedule of g's
 * problem), each node coloured by what s does with it. */
static int write_dot(const rm_graph *g, const char *model_path, const char *path, const rm_schedule *s)
{
    int *counts = NULL, *pos = NULL; /* pos: each node's stage in s's order */
    if (s && (!(counts = malloc((size_t)g->n * sizeof *counts)) || !(pos = malloc((size_t)g->n * sizeof *pos)))) {
        free(counts);
        rm_text_fprintf(stderr, "remat graph: out of memory\n");
        return 2;
    }
    if (s) {
        rm_schedule_compute_counts(s, counts);
        for (int t = 0; t < g->n; t++) pos[rm_schedule_node_at(s, t)] = t;
    }
    /* Atomically (base/atomic_file.h): a full disk leaves the previous file. */
    rm_atomic_file af;
    rm_err e = {RM_OK, ""};
    if (rm_atomic_open(&af, path, &e)) {
        rm_text_fprintf(stderr, "remat graph: %s\n", e.msg);
        free(counts);
        free(pos);
        return 1;
    }
    FILE *f = af.f;
    fprintf(f, "digraph ");
    dot_string(f, model_path, 0);
    fprintf(f, " {\n  rankdir=TB;\n  node [shape=box, style=filled, fontname=\"Helvetica\", fontsize=10];\n"
               "  edge [fontname=\"Helvetica\", fontsize=8];\n");
    dot_legend(f, s != NULL);
    for (int i = 0; i < g->n; i++) {
        const rm_graph_node *nd = &g->nodes[i];
        char sz[32], sh[64], nm[2 * RM_NAME_SHOW_LEN], label[2 * RM_NAME_SHOW_LEN + 160];
        rm_cli_bytes(sz, sizeof sz, (double)nd->bytes);
        int o;
        if (nd->op == RM_OP_BACKWARD)
            o = snprintf(label, sizeof label, "%s\\n%s", dot_label_name(nm, sizeof nm, nd->name), sz);
        else
            o = snprintf(label, sizeof label, "%s\\n%s\\n%s", dot_label_name(nm, sizeof nm, nd->name),
                         rm_shape_str(nd->shape, sh, sizeof sh), sz);
        node_use use = USE_NONE;
        if (s) {
            /* A node recomputed and also kept somewhere counts as recomputed:
             * that is what costs compute. */
            int q = pos[i];
            use = counts[i] > 1 ? USE_RECOMPUTED : s->ret_start[q] < s->ret_start[q + 1] ? USE_KEPT : USE_FREED;
            if (use == USE_RECOMPUTED)
                snprintf(label + o, sizeof label - (size_t)o, "\\nrecomputed %dx", counts[i] - 1);
        }
        fprintf(f, "  n%d [label=", i);
        dot_string(f, label, 1);
        dot_node_look(f, nd->tag, nd->op, use);
        fprintf(f, "];\n");
    }
    for (int i = 0; i < g->n; i++) {
        const rm_graph_node *nd = &g->nodes[i];
        for (int k = 0; k < nd->ndeps; k++) {
            /* Gradient slices are labelled with the input position they belong to. */
            if (nd->dep_slot[k] >= 0)
                fprintf(f, "  n%d -> n%d [label=\"[%d]\"];\n", nd->deps[k], i, nd->dep_slot[k]);
            else
                fprintf(f, "  n%d -> n%d;\n", nd->deps[k], i);
        }
    }
    fprintf(f, "}\n");
    free(counts);
    free(pos);
    if (rm_atomic_commit(&af, &e)) {
        rm_text_fprintf(stderr, "remat graph: %s\n", e.msg);
        return 1;
    }
    return 0;
}

#define usage_error(...) rm_cli_usage_error("graph", GRAPH_USAGE, __VA_ARGS__)

/* The report; p and fp are the training problem and footprint of g
 * (budget 0). */
static int report(const rm_graph *g, const rm_model *m, const rm_problem *p, const rm_footprint *fp,
                  const rm_optim_options *sgd, const char *model_path)
{
    int nfwd = 0, nloss = 0, nbwd = 0, nsum = 0;
    for (int i = 0; i < g->n; i++) {
        if (g->nodes[i].tag == RM_TAG_FORWARD)
            nfwd++;
        else if (g->nodes[i].tag == RM_TAG_LOSS)
            nloss++;
        else
            nbwd++;
        if (g->nodes[i].op == RM_OP_GRAD_SUM) nsum++;
    }
    /* The problem's facts: the no-remat peak is checkpoint-all's. */
    rm_err e = {RM_OK, ""};
    rm_problem_report facts;
    if (rm_problem_report_of(&facts, p, &e)) {
        rm_text_fprintf(stderr, "remat graph: simulating checkpoint-all failed: %s\n", e.msg);
        return 2;
    }
    const rm_sim_result sim = facts.noremat;

    char a[64], b[64], c[64], d[64];
    size_t act = rm_graph_activation_bytes(g);
    size_t peak = facts.noremat_total;
    rm_text_fprintf(stdout, "model        %s (input %dx%dx%d, %d layers)\n", model_path, m->input.c, m->input.h,
                    m->input.w, m->nlayers);
    printf("batch        %d\n", g->batch);
    printf("nodes        %d: %d forward (input included), %d loss, %d backward (%d gradient sums)\n", g->n, nfwd, nloss,
           nbwd, nsum);
    printf("edges        %zu\n", rm_graph_edge_count(g));
    printf("parameters   %s\n", rm_cli_group_digits(a, sizeof a, g->param_count));
    rm_cli_print_footprint(stdout, fp, sgd);
    printf("activations  %s (%s bytes), every node output summed\n", rm_cli_bytes(b, sizeof b, (double)act),
           rm_cli_group_digits(c, sizeof c, act));
    printf("forward      %s\n", rm_cli_flops(a, sizeof a, g->forward_flops));
    printf("backward     %s\n", rm_cli_flops(a, sizeof a, g->backward_flops));
    printf("peak         %s (%s bytes) without rematerialization = fixed + activation peak %s (%s bytes)\n",
           rm_cli_bytes(b, sizeof b, (double)peak), rm_cli_group_digits(c, sizeof c, peak),
           rm_cli_bytes(d, sizeof d, (double)sim.peak_bytes), rm_cli_group_digits(a, sizeof a, sim.peak_bytes));
    if (sim.peak_node >= 0 && sim.peak_node < g->n)
        printf("             reached while computing '%s' (stage %d)\n",
               rm_name_shown_of(g->nodes[sim.peak_node].name).s, sim.peak_stage);
    return 0;
}

static int graph_run(int argc, char **argv)
{
    rm_cli_model mdl;
    memset(&mdl, 0, sizeof mdl);
    const char *model_path = NULL, *batch_arg = NULL, *dot_path = NULL, *schedule_path = NULL, *problem_out = NULL;
    const rm_cli_opt opts[] = {
        RM_CLI_MODEL_OPTIONS(&mdl),
        RM_CLI_VALUE("--batch", &batch_arg),
        RM_CLI_VALUE("--dot", &dot_path),
        RM_CLI_VALUE("--schedule", &schedule_path),
        RM_CLI_VALUE("--problem-out", &problem_out),
    };
    if (rm_cli_parse_options(opts, sizeof opts / sizeof opts[0], argc, argv, "graph", GRAPH_USAGE) ||
        rm_cli_model_check(&mdl, "graph", GRAPH_USAGE))
        return 1;
    model_path = mdl.path;
    if (!model_path) return usage_error("%s", "--model FILE is required (or --onnx FILE)");
    if (!batch_arg) return usage_error("%s", "--batch N is required");
    if (schedule_path && !dot_path) return usage_error("%s", "--schedule colours the --dot graph: give --dot FILE too");
    long batch;
    char why[160];
    if (rm_cli_parse_batch(&batch, batch_arg, why, sizeof why)) return usage_error("%s", why);

    rm_err e = {RM_OK, ""};
    rm_model *m = NULL;
    int rc = rm_cli_model_load(&m, "graph", &mdl, 0, 0, stdout);
    if (rc) return rc;
    rm_graph g;
    if (rm_model_trace(&g, m, (int)batch, &e)) {
        rm_text_fprintf(stderr, "remat graph: %s\n", e.msg);
        rm_model_free(m);
        return e.code == RM_ERR_NOMEM ? 2 : 1;
    }
    /* The problem and footprint `plan` and `train` use (SGD with momentum,
     * the CPU): the peak printed here is the one their budgets are
     * percentages of, the problem --problem-out writes is the one
     * `plan --model` solves, and the one a schedule must be valid for. */
    rm_problem *p = NULL;
    rm_schedule *s = NULL;
    rm_footprint fp;
    rm_optim_options sgd = rm_optim_options_default(RM_OPTIM_SGD);
    rc = rm_training_problem_of(&p, &fp, m, &g, &sgd, NULL, NULL, RM_COST_SAME_BATCH, &e);
    if (rc) {
        /* The model at this batch (too large to account, out of memory), not the simulator. */
        rm_text_fprintf(stderr, "remat graph: %s\n", e.msg);
        rc = rc == RM_ERR_NOMEM ? 2 : 1;
        goto out;
    }
    /* Read before anything is printed: a schedule for another graph (other
     * stages, or cost and peak lines the simulator disagrees with) fails
     * alone. */
    if (schedule_path && rm_schedule_read(&s, p, schedule_path, &e)) {
        rm_text_fprintf(stderr, "remat graph: %s is not a schedule for %s at batch %ld: %s\n", schedule_path,
                        model_path, batch, e.msg);
        rc = e.code == RM_ERR_NOMEM ? 2 : 1;
        goto out;
    }
    rc = report(&g, m, p, &fp, &sgd, model_path);
    if (!rc && problem_out) {
        if (rm_problem_write(p, problem_out, &e)) {
            rm_text_fprintf(stderr, "remat graph: %s\n", e.msg);
            rc = e.code == RM_ERR_NOMEM ? 2 : 1;
        } else {
            rm_text_fprintf(stdout, "problem      %s\n", problem_out);
        }
    }
    if (!rc && dot_path) {
        rc = write_dot(&g, model_path, dot_path, s);
        if (!rc) printf("dot          %s%s%s\n", dot_path, s ? ", coloured by " : "", s ? schedule_path : "");
    }
out:
    rm_schedule_free(s);
    rm_problem_free(p);
    rm_graph_free(&g);
    rm_model_free(m);
    return rc;
}

const rm_command rm_cmd_graph = {
    .name = "graph",
    .summary = "trace a model (a config, or an ONNX network) into its training graph: size, no-remat peak",
    .usage = GRAPH_USAGE,
    .run = graph_run,
};
