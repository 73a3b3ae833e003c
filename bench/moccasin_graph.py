#!/usr/bin/env python3
"""Writes one of Moccasin's published random layered graphs (Bartan et al.,
ICML 2023: networkx node-link JSON whose nodes carry their output bytes and
duration under the tags the graph names, and whose `graph.order` is the
topological order their benchmark starts from) as a remat problem file, the
nodes in that order, every one forward: the graphs bench/reorder.sh compares
with the published results.

    bench/moccasin_graph.py GRAPH.json PROBLEM.txt
"""
import json
import re
import sys


def main():
    src, dst = sys.argv[1], sys.argv[2]
    g = json.load(open(src))
    meta = g["graph"]
    size_tag = meta.get("node_output_cost_tag", "out_cost")
    time_tag = meta.get("node_duration_tag", "duration")
    # networkx names the id key "id" by default; these files use "name".
    key = "id" if all("id" in v for v in g["nodes"]) else "name"
    nodes = {v[key]: v for v in g["nodes"]}
    order = meta["order"]
    if sorted(order, key=str) != sorted(nodes, key=str):
        sys.exit("%s: graph.order is not a permutation of the nodes" % src)
    pos = {v: i for i, v in enumerate(order)}
    deps = {v: set() for v in order}
    for e in g.get("links", g.get("edges", [])):
        # These files name a link's ends "0" and "1" (networkx: "source", "target").
        s, t = (e["source"], e["target"]) if "source" in e else (e["0"], e["1"])
        if pos[s] >= pos[t]:
            sys.exit("%s: edge %s -> %s goes against graph.order" % (src, s, t))
        deps[t].add(pos[s])
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", str(meta.get("name", "moccasin")))[:80]
    with open(dst, "w") as f:
        f.write("# %s: Moccasin's random layered graph, nodes in its graph.order\n" % name)
        f.write("problem %d 0 0\n" % len(order))
        for i, v in enumerate(order):
            d = nodes[v]
            size, cost = d[size_tag], d[time_tag]
            if int(size) != size or size < 0 or cost < 0:
                sys.exit("%s: node %s: output bytes %r, duration %r" % (src, v, size, cost))
            ds = ",".join(str(j) for j in sorted(deps[v])) or "-"
            f.write("%d n%s forward %s %d %s\n" % (i, v, repr(cost), int(size), ds))


if __name__ == "__main__":
    main()
