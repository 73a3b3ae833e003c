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

/* Nodes are allocated by doubling: many appends keep every earlier node,
 * its dependencies included, as they were. */
Test(graph, grows_keeping_every_node)
{
    rm_graph g;
    memset(&g, 0, sizeof g);
    const int n = 1000;
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        int dep = i - 1;
        cr_assert_eq(add(&g, name, (size_t)i, &dep, i > 0), i);
    }
    cr_assert_eq(g.n, n);
    cr_assert_geq(g.cap, n);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "n%d", i);
        cr_assert_str_eq(g.nodes[i].name, name);
        cr_assert_eq(g.nodes[i].bytes, (size_t)i);
        cr_assert_eq(g.nodes[i].ndeps, i > 0);
        if (i > 0) cr_assert_eq(g.nodes[i].deps[0], i - 1);
    }
    rm_err e = {0};
    cr_assert_eq(rm_graph_validate(&g, &e), RM_OK, "%s", e.msg);
    rm_graph_free(&g);
    cr_assert_eq(g.cap, 0);
}
