/* Problem files for the scale benchmark (bench/scale.sh, issue 13): training
 * graphs far larger than any built-in model, written with rm_problem_write.
 *
 *   remat_bench_scale_gen chain N FILE        a chain of N nodes in all
 *   remat_bench_scale_gen dag N K SEED FILE   a random DAG of N nodes, fan-in <= K
 *   remat_bench_scale_gen fanin K FILE        one node reading K independent branches
 *   remat_bench_scale_gen layered L W DENSITY SKIP SEED FILE [BAND]
 *                                             a forward-only random layered DAG of L layers
 *                                             of W nodes; with BAND > 0, Moccasin's kind:
 *                                             widths vary, edges stay near their position
 *                                             (tests/scheduler/random_graphs.h)
 *
 * Every graph is shaped like the tracer's output: forward nodes (node 0 the
 * input), a loss, then one backward node per layer in reverse order reading
 * the layer's inputs and the gradient of its output; a value with several
 * consumers gets its gradient summed by grad-sum nodes of at most K inputs.
 * Sizes are uniform multiples of 4 KiB up to 1 MiB, costs 1..100. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"
#include "random_graphs.h"
#include "rng.h"

typedef struct gen {
    int F, K;    /* forward nodes (input included), fan-in cap */
    int **fdeps; /* forward deps of each layer */
    int *nfd;
    rm_rng r;
} gen;

/* The forward part of the kinds. */
static void forward_chain(gen *g)
{
    for (int i = 1; i < g->F; i++) g->fdeps[i][g->nfd[i]++] = i - 1;
}

/* Each layer reads its predecessor and up to K - 1 more values from the 256
 * before it (residual and dense connections); every value is read. */
static void forward_dag(gen *g)
{
    for (int i = 1; i < g->F; i++) {
        g->fdeps[i][g->nfd[i]++] = i - 1;
        int extra = (int)(rm_rng_next(&g->r) % (uint64_t)g->K);
        for (int k = 0; k < extra && i >= 2; k++) {
            int lo = i - 256 > 0 ? i - 256 : 0;
            int j = lo + (int)(rm_rng_next(&g->r) % (uint64_t)(i - 1 - lo));
            int dup = 0;
            for (int d = 0; d < g->nfd[i]; d++) dup |= g->fdeps[i][d] == j;
            if (!dup) g->fdeps[i][g->nfd[i]++] = j;
        }
    }
}

/* K branches off the input, all read by one node. */
static void forward_fanin(gen *g)
{
    for (int i = 1; i <= g->K; i++) g->fdeps[i][g->nfd[i]++] = 0;
    for (int i = 1; i <= g->K; i++) g->fdeps[g->K + 1][g->nfd[g->K + 1]++] = i;
}

static size_t rand_bytes(rm_rng *r)
{
    return 4096 * (1 + rm_rng_next(r) % 256);
}

/* The training graph of g's forward part, written to path. */
static int write_training(gen *g, const char *path)
{
    int F = g->F;
    /* The gradient contributions each value receives: one per consumer (the
     * consumer's backward node), summed in groups of at most K. */
    int *ncons = calloc((size_t)F + 1, sizeof *ncons);
    for (int i = 1; i < F; i++)
        for (int d = 0; d < g->nfd[i]; d++) ncons[g->fdeps[i][d]]++;
    ncons[F - 1]++; /* the loss */
    long sums = 0;
    for (int v = 1; v < F; v++) /* as the loop below sums them: a group of one passes through */
        for (int c = ncons[v]; c > 1; c = (c + g->K - 1) / g->K) sums += c / g->K + (c % g->K >= 2);
    long n = (long)F + 1 + (F - 1) + 1 + sums;
    if (n > RM_PROBLEM_MAX_NODES) {
        fprintf(stderr, "scale_gen: %ld nodes is too many\n", n);
        return 1;
    }
    rm_problem *p;
    rm_err e = {RM_OK, ""};
    if (rm_problem_create(&p, (int)n, &e)) goto fail;
    int **contrib = malloc(((size_t)F + 1) * sizeof *contrib), *ncontrib = calloc((size_t)F + 1, sizeof *ncontrib);
    int *buf = malloc(((size_t)g->K + 2) * sizeof *buf);
    for (int v = 0; v <= F; v++) contrib[v] = malloc(((size_t)ncons[v] + 1) * sizeof **contrib);
    for (int i = 0; i < F; i++) {
        rm_problem_node *nd = &p->nodes[i];
        snprintf(nd->name, sizeof nd->name, i ? "f%d" : "input", i);
        nd->tag = RM_TAG_FORWARD;
        nd->bytes = rand_bytes(&g->r);
        nd->cost = i ? (double)(1 + rm_rng_next(&g->r) % 100) : 0;
        if (rm_problem_set_deps(p, i, g->fdeps[i], g->nfd[i], &e)) goto fail;
    }
    int L = F, next = F + 1;
    snprintf(p->nodes[L].name, RM_NAME_LEN, "loss");
    p->nodes[L].tag = RM_TAG_LOSS;
    p->nodes[L].bytes = 16;
    p->nodes[L].cost = 1;
    buf[0] = F - 1;
    if (rm_problem_set_deps(p, L, buf, 1, &e)) goto fail;
    /* Backward, from the loss (layer F) down to layer 1. */
    for (int c = F; c >= 1; c--) {
        int gsrc = -1; /* where the gradient of c's output is */
        if (c == F) {
            gsrc = L;
        } else {
            /* Sum the contributions K at a time until one is left. */
            int m = ncontrib[c];
            int *x = contrib[c];
            while (m > 1) {
                int out = 0;
                for (int s = 0; s < m; s += g->K) {
                    int k = m - s < g->K ? m - s : g->K;
                    if (k == 1) {
                        x[out++] = x[s];
                        continue;
                    }
                    rm_problem_node *nd = &p->nodes[next];
                    snprintf(nd->name, sizeof nd->name, "f%d.gsum", c);
                    nd->tag = RM_TAG_BACKWARD;
                    nd->bytes = p->nodes[c].bytes;
                    nd->cost = (double)k;
                    memcpy(buf, &x[s], (size_t)k * sizeof *buf);
                    if (rm_problem_set_deps(p, next, buf, k, &e)) goto fail;
                    x[out++] = next++;
                }
                m = out;
            }
            gsrc = x[0];
        }
        int nb = 0;
        buf[nb++] = gsrc;
        const int *in = c == F ? (int[]){F - 1} : g->fdeps[c];
        int nin = c == F ? 1 : g->nfd[c];
        for (int d = 0; d < nin; d++) buf[nb++] = in[d];
        rm_problem_node *nd = &p->nodes[next];
        snprintf(nd->name, sizeof nd->name, c == F ? "loss.grad" : "f%d.grad", c);
        nd->tag = RM_TAG_BACKWARD;
        nd->bytes = c == F ? p->nodes[F - 1].bytes : p->nodes[g->fdeps[c][0]].bytes * (size_t)(nin > 1 ? 2 : 1);
        nd->cost = c == F ? 1 : 2 * p->nodes[c].cost;
        if (rm_problem_set_deps(p, next, buf, nb, &e)) goto fail;
        for (int d = 0; d < nin; d++)
            if (in[d] > 0) contrib[in[d]][ncontrib[in[d]]++] = next;
        next++;
    }
    if (next != n) {
        fprintf(stderr, "scale_gen: built %d of %ld nodes (a bug)\n", next, n);
        return 1;
    }
    if (rm_problem_validate(p, &e) || rm_problem_write(p, path, &e)) goto fail;
    printf("%s: %ld nodes (%d forward)\n", path, n, F);
    return 0;
fail:
    fprintf(stderr, "scale_gen: %s\n", e.msg);
    return 1;
}

/* The layered kind: no backward pass, so none of the above. */
static int write_layered(char **argv)
{
    int layers = atoi(argv[2]), width = atoi(argv[3]), band = argv[8] ? atoi(argv[8]) : 0;
    rm_problem *p = rg_layered_problem((uint64_t)atoll(argv[6]), layers, width, atof(argv[4]), atof(argv[5]), band);
    rm_err e = {RM_OK, ""};
    if (!p) {
        fprintf(stderr, "scale_gen: layered: bad parameters\n");
        return 2;
    }
    int rc = rm_problem_write(p, argv[7], &e);
    if (rc)
        fprintf(stderr, "scale_gen: %s\n", e.msg);
    else
        printf("%s: %d nodes (%d layers of %s%d%s)\n", argv[7], p->n, layers, band ? "about " : "", width,
               band ? ", banded" : "");
    rm_problem_free(p);
    return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
    gen g = {0};
    const char *kind = argc > 1 ? argv[1] : "", *path = NULL;
    int n = 0;
    if (!strcmp(kind, "layered") && (argc == 8 || argc == 9)) return write_layered(argv);
    if (!strcmp(kind, "chain") && argc == 4) {
        n = atoi(argv[2]);
        path = argv[3];
        g.K = 8;
        g.F = n / 2; /* F forward, the loss, F - 1 layer backwards */
    } else if (!strcmp(kind, "dag") && argc == 6) {
        n = atoi(argv[2]);
        g.K = atoi(argv[3]);
        g.r = rm_rng_make((uint64_t)atoll(argv[4]));
        path = argv[5];
        g.F = n / 3; /* about a third: the gradient sums take the rest */
    } else if (!strcmp(kind, "fanin") && argc == 4) {
        g.K = atoi(argv[2]);
        path = argv[3];
        g.F = g.K + 2;
    } else {
        fprintf(stderr,
                "usage: remat_bench_scale_gen chain N FILE | dag N K SEED FILE | fanin K FILE | layered L W DENSITY "
                "SKIP SEED FILE [BAND]\n");
        return 2;
    }
    if (g.F < 2 || g.K < 1) {
        fprintf(stderr, "scale_gen: too small\n");
        return 2;
    }
    if (strcmp(kind, "dag")) g.r = rm_rng_make(1);
    g.fdeps = malloc((size_t)g.F * sizeof *g.fdeps);
    g.nfd = calloc((size_t)g.F, sizeof *g.nfd);
    for (int i = 0; i < g.F; i++) g.fdeps[i] = malloc(((size_t)g.K + 1) * sizeof **g.fdeps);
    if (!strcmp(kind, "chain"))
        forward_chain(&g);
    else if (!strcmp(kind, "dag"))
        forward_dag(&g);
    else
        forward_fanin(&g);
    return write_training(&g, path);
}
