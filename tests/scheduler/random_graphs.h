/* Test problems for the scheduler suites: small hand-built problems from
 * readable dependency strings, and seeded random training graphs shaped like
 * the tracer's output (a forward DAG with skips and branches, a loss, then a
 * backward node per layer in reverse order that reads the gradient of its
 * output and, like real layers, its inputs and/or its output; grad-sum nodes
 * where a value has several consumers). Shared by test_simulate.c,
 * test_baselines.c and the MILP tests. */
#ifndef REMAT_TEST_RANDOM_GRAPHS_H
#define REMAT_TEST_RANDOM_GRAPHS_H

#include <stddef.h>
#include <stdint.h>

#include "problem.h"

/* n nodes with the given output bytes and deps ("" or "0,2"); cost[i] = 1 when
 * cost is NULL; all tagged forward. Returns NULL on a bad spec. */
rm_problem *rg_problem_make(int n, const size_t *bytes, const double *cost, const char *const *deps);

typedef struct rg_options {
    int forward;        /* forward nodes including the input node (>= 2) */
    double skip_prob;   /* chance a layer also reads a random earlier value (residual/U-Net skip) */
    double branch_prob; /* chance a layer reads the value before its predecessor (parallel branches) */
    int max_skip;       /* how far back a skip may reach (0 = anywhere) */
    size_t max_bytes;   /* node sizes are uniform multiples of 16 in [16, max_bytes] */
} rg_options;

/* A random training graph: forward nodes 0..forward-1 (node 0 the input, cost
 * 0), the loss, then the backward and grad-sum nodes. Deterministic in seed. */
rm_problem *rg_training_problem(uint64_t seed, const rg_options *opt);

/* A training graph on a forward chain (no skips, no branches). */
rm_problem *rg_chain_problem(uint64_t seed, int forward, size_t max_bytes);

/* Checkmate's gen_linear_graph(layers): 2 layers + 1 nodes, forward 0..layers-1
 * each reading the previous, the loss (node layers) reading the last forward
 * node, and backward nodes layers+1..2 layers where node 2 layers - i reads
 * node 2 layers - i - 1 and forward node i. seed 0: unit costs and 16-byte
 * values, as in the paper's linear benchmark; else costs 1..10 and sizes
 * uniform multiples of 16 in [16, max_bytes]. No fixed bytes. */
rm_problem *rg_checkmate_linear(int layers, uint64_t seed, size_t max_bytes);

/* A random layered DAG, forward only, after Moccasin's benchmark (Bartan et
 * al., ICML 2023). band 0: `layers` layers of `width` nodes (n = layers x
 * width); each node reads each node of the layer before with probability
 * density (at least one), and with probability skip also one node of a
 * random earlier layer; costs uniform in 1..100, bytes multiples of 1 KiB
 * in [1, 32] KiB. band > 0, Moccasin's own graphs: layers of width within
 * 75% of `width` either way; each node reads the nearest node of the layer
 * before at its relative position in the layer, and each other one within
 * band positions of it with probability density; a skip reads the nearest
 * node of a random earlier layer; costs 1..1000, bytes 1..48 KiB. Both:
 * every node but the last layer's is read; no fixed bytes, no budget;
 * deterministic in seed. */
rm_problem *rg_layered_problem(uint64_t seed, int layers, int width, double density, double skip, int band);

/* Index of the loss node of a problem from the generators above. */
int rg_loss_index(const rm_problem *p);

#endif
