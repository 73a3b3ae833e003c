/* Training-graph storage and validation. */
#include "graph.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

int rm_graph_add_node(rm_graph *g, const rm_graph_node *node, const int *deps, const int *dep_slot, int ndeps,
                      rm_err *e)
{
    if (g->n == g->cap) {
        /* Doubling, not one node at a time: a graph of n nodes is built in
         * O(n) copies, not O(n^2). */
        int cap = g->cap ? 2 * g->cap : 64;
        rm_graph_node *nodes = g->cap <= INT_MAX / 2 ? realloc(g->nodes, (size_t)cap * sizeof *nodes) : NULL;
        if (!nodes) {
            rm_errorf(e, RM_ERR_NOMEM, "graph: out of memory for %d nodes", g->n + 1);
            return -1;
        }
        g->nodes = nodes;
        g->cap = cap;
    }
    rm_graph_node *nd = &g->nodes[g->n];
    *nd = *node;
    nd->ndeps = ndeps;
    nd->deps = ndeps ? malloc((size_t)ndeps * sizeof(int)) : NULL;
    nd->dep_slot = ndeps ? malloc((size_t)ndeps * sizeof(int)) : NULL;
    if (ndeps && (!nd->deps || !nd->dep_slot)) {
        free(nd->deps);
        free(nd->dep_slot);
        rm_errorf(e, RM_ERR_NOMEM, "graph: out of memory");
        return -1;
    }
    for (int k = 0; k < ndeps; k++) {
        nd->deps[k] = deps[k];
        nd->dep_slot[k] = dep_slot ? dep_slot[k] : -1;
    }
    return g->n++;
}

void rm_graph_free(rm_graph *g)
{
    if (!g) return;
    for (int i = 0; i < g->n; i++) {
        free(g->nodes[i].deps);
        free(g->nodes[i].dep_slot);
    }
    free(g->nodes);
    memset(g, 0, sizeof *g);
}

size_t rm_graph_activation_bytes(const rm_graph *g)
{
    size_t total = 0;
    for (int i = 0; i < g->n; i++) total += g->nodes[i].bytes;
    return total;
}

size_t rm_graph_edge_count(const rm_graph *g)
{
    size_t total = 0;
    for (int i = 0; i < g->n; i++) total += (size_t)g->nodes[i].ndeps;
    return total;
}

int rm_graph_validate(const rm_graph *g, rm_err *e)
{
    for (int i = 0; i < g->n; i++)
        for (int k = 0; k < g->nodes[i].ndeps; k++) {
            int d = g->nodes[i].deps[k];
            if (d < 0 || d >= i)
                return rm_errorf(e, RM_ERR_INVALID, "graph: node %d (%s) reads node %d, which is not earlier", i,
                                 g->nodes[i].name, d);
        }
    return RM_OK;
}
