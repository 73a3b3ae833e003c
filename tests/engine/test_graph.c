/* Graph storage and validation. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "graph.h"

static int add(rm_graph *g, const char *name, size_t bytes, const int *deps, int ndeps)
{
    rm_graph_node nd;
    memset(&nd, 0, sizeof nd);
    snprintf(nd.name, sizeof nd.name, "%s", name);
    nd.bytes = bytes;
    nd.flops = 1;
    rm_err e = {0};
    return rm_graph_add_node(g, &nd, deps, NULL, ndeps, &e);
}

Test(graph, counts_and_validates)
{
    rm_graph g;
    memset(&g, 0, sizeof g);
    int a = add(&g, "a", 100, NULL, 0);
    int deps_b[] = {a};
    int b = add(&g, "b", 200, deps_b, 1);
    int deps_c[] = {a, b};
    int c = add(&g, "c", 300, deps_c, 2);
    cr_assert_eq(c, 2);
    cr_assert_eq(rm_graph_activation_bytes(&g), 600);
    cr_assert_eq(rm_graph_edge_count(&g), 3);
    cr_assert_eq(g.nodes[2].dep_slot[1], -1);
    rm_err e = {0};
    cr_assert_eq(rm_graph_validate(&g, &e), RM_OK);
    g.nodes[1].deps[0] = 2; /* a forward reference */
    cr_assert_eq(rm_graph_validate(&g, &e), RM_ERR_INVALID);
    cr_assert(strstr(e.msg, "b") != NULL);
    rm_graph_free(&g);
    cr_assert_eq(g.n, 0);
}
