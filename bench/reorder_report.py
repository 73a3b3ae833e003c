#!/usr/bin/env python3
"""The table of bench/reorder.sh (issue 29): per graph and budget, the extra
compute of each run with its time, and the issue's goals.

    bench/reorder_report.py RESULTS.csv PEAKS.csv OUT.md TIME_LIMIT STARTUP_RSS_KIB
"""
import csv
import sys
from collections import defaultdict

RUNS = ["milp", "fixed", "anneal", "best", "heur"]
TITLES = {
    "milp": "fixed-order MILP route",
    "fixed": "anneal, problem's order",
    "anneal": "anneal, own order",
    "best": "best (default)",
    "heur": "cheapest heuristic",
}
PEAKS = {}
# What the papers report on Moccasin's graphs, in the graphs' own order and
# memory model (Bartan et al., ICML 2023; Imanishi et al. 2023, FastSA).
PUBLISHED = {
    ("m100", 90): "Checkmate's MILP (Gurobi) +0.8%, proved optimal in the fixed order, about 20 s; Moccasin 9 s",
    ("m100", 80): "Checkmate's MILP (Gurobi) +2.3%, proved optimal in the fixed order, about 20 s; Moccasin 9 s",
    ("m250", 80): "FastSA +0.0% (a better order alone); the proved optimum in the fixed order +4.9%",
    ("m1000", 80): "FastSA +2.5% in 36 s; Moccasin (CP-SAT) +3.4% after an hour",
}


def found(r):
    return r is not None and r["status"] not in ("none", "n/a", "")


CURRENT = [None]  # the commit this report is written at


def earlier(r):
    """A cell measured at another commit than the report's: marked."""
    return r is not None and (r.get("commit") or "") != CURRENT[0]


def cell(r):
    mark = " ‡" if earlier(r) else ""
    return cell_text(r) + mark


def cell_text(r):
    if not found(r):
        return "n/a" if r is not None and r["status"] == "n/a" else "none"
    s = "%+.2f%%" % float(r["overhead_pct"])
    if r["run"] == "milp" and r["bound"] not in ("", "none", "trivial"):
        s += " (bound %+.2f%%)" % float(r["lp_bound_pct"])
    if PEAKS.get(r["graph"]):
        s += ", peak %.1f%%" % (100.0 * float(r["peak_bytes"]) / PEAKS[r["graph"]])
    if r["run"] == "heur":
        return s + ", %s, %.3f s" % (r["strategy"], float(r["seconds"]))
    s += ", %.1f s" % float(r["wall"])
    if r.get("rss_kib"):
        s += ", %.0f MiB" % (float(r["rss_kib"]) / 1024)
    return s


def main():
    path, peaks, out, tlimit, startup, CURRENT[0] = sys.argv[1:7]
    rows = list(csv.DictReader(open(path)))
    for r in csv.DictReader(open(peaks)):
        if r["no_remat_peak_bytes"]:
            PEAKS[r["graph"]] = float(r["no_remat_peak_bytes"])
    by = defaultdict(dict)
    graphs, budgets = [], []
    for r in rows:
        key = (r["graph"], int(r["budget"]))
        by[key][r["run"]] = r
        if r["graph"] not in graphs:
            graphs.append(r["graph"])
        if int(r["budget"]) not in budgets:
            budgets.append(int(r["budget"]))
    lines = [
        "# Beyond a fixed order: the anneal against the fixed-order MILP",
        "",
        "Written by `bench/reorder.sh` (issue 29): `mN`, Moccasin's published random layered graphs of N nodes "
        "(their repository, commit 4da8878; node durations as costs, output sizes as bytes, in the order the file "
        "gives), on which the papers below report; remat's random layered DAGs, forward only, seed K (`-sK`): "
        "`lN`, about N "
        "nodes like Moccasin's benchmark graphs (layer widths within 75%% of the mean, each node reading the "
        "nearest node of the layer before and each other one within 2 positions of it with probability 0.5, "
        "and with probability 0.15 the nearest node of an earlier layer), `uN`, N nodes in layers of equal width "
        "whose nodes read each node of the layer before with probability 0.3 (and an earlier one with "
        "probability 0.2); and remat's training graphs (`-b8`: batch 8), "
        "at a share of the no-remat peak in the problem's order. Each cell: extra compute over every node once "
        "(checkpoint-all), the schedule's peak as a share of that no-remat peak (fixed bytes included), the run's "
        "wall time and its largest resident memory, time limit %s s, one thread; for the heuristics (chen_sqrtn, "
        "chen_greedy, griewank, ap_sqrtn, ap_greedy, linearized_sqrtn, linearized_greedy, ogc, which need a training "
        "graph's forward/backward split, and dtr, which applies to any DAG) the cheapest that fits, its name and its "
        "solve time. `none`: no schedule within the budget found (not a proof); `n/a`: no heuristic applies. The binary alone (`remat --help`) holds %.0f MiB resident: "
        "the libraries it maps (cuBLAS, cuDNN, CBC, MPI), part of every run's memory." % (tlimit, float(startup) / 1024),
        "",
        "Every cell without a mark was measured at commit %s; `‡`: at an earlier one (%s), a run this "
        "bench did not repeat." % (CURRENT[0], ", ".join(sorted({r.get("commit") or "not recorded" for r in rows
                                                                  if earlier(r)})) or "none"),
        "",
        "| graph | budget | " + " | ".join(TITLES[k] for k in RUNS) + " |",
        "|---|---|" + "---|" * len(RUNS),
    ]
    for g in graphs:
        for b in budgets:
            d = by.get((g, b), {})
            n = next(iter(d.values()))["nodes"] if d else "?"
            lines.append("| %s (%s nodes) | %d%% | " % (g, n, b) + " | ".join(cell(d.get(k)) for k in RUNS) + " |")
    pub = [(g, b, PUBLISHED[(g, b)]) for g in graphs for b in budgets if (g, b) in PUBLISHED]
    if pub:
        lines += ["", "## Beside the published results on Moccasin's graphs", "",
                  "Reported by Bartan et al. (Moccasin, ICML 2023) and Imanishi et al. (FastSA, 2023) on the same "
                  "graphs, on other machines and under their own memory model (a budget is a share of the peak of "
                  "the given order without recomputation in each model: the two models may differ in details).", "",
                  "| graph | budget | published | remat: anneal | remat: best | remat: fixed order (best of MILP "
                  "and fixed-order anneal) |", "|---|---|---|---|---|---|"]
        for g, b, text in pub:
            d = by.get((g, b), {})
            fixed = [d[k] for k in ("milp", "fixed") if found(d.get(k))]
            fbest = min(fixed, key=lambda r: float(r["overhead_pct"])) if fixed else None
            lines.append("| %s | %d%% | %s | %s | %s | %s |" % (g, b, text, cell(d.get("anneal")), cell(d.get("best")),
                                                             cell(fbest)))
    lines += ["", "## Goals", ""]

    def ov(g, b, k):
        r = by.get((g, b), {}).get(k)
        if not found(r):
            return None
        return float(r["overhead_pct"]), float(r["wall"] or r["seconds"])

    def marked(g, b, *keys):
        """ ‡ when a run the line quotes was measured at an earlier commit."""
        return " ‡" if any(earlier(by.get((g, b), {}).get(k)) for k in keys) else ""

    for g in graphs:
        if g.startswith("l1000-") or g == "m1000":
            a, b = ov(g, 80, "anneal"), ov(g, 80, "best")
            ok = any(x is not None and x[0] <= 2.5 and x[1] < 40 for x in (a, b))
            lines.append("- %s at 80%%: anneal %s, best %s (goal: within +2.5%% in under 40 s): %s" %
                         (g, "none" if a is None else "%+.2f%% in %.1f s" % a,
                          "none" if b is None else "%+.2f%% in %.1f s" % b, "met" if ok else "not met") +
                         marked(g, 80, "anneal", "best"))
        if g.startswith("resnet50"):
            a, m = ov(g, 80, "anneal"), ov(g, 80, "milp")
            ok = a is not None and m is not None and a[0] <= m[0] + 0.1 and a[1] < 15
            lines.append("- %s at 80%%: anneal %s, fixed-order MILP %s (goal: within 0.1 point in under 15 s): %s" %
                         (g, "none" if a is None else "%+.2f%% in %.1f s" % a,
                          "none" if m is None else "%+.2f%%" % m[0], "met" if ok else "not met") +
                         marked(g, 80, "anneal", "milp"))
        if g.startswith("l100000-"):
            # docs/reliability.md: within S + 5% of S + 0.5 s per 100,000 nodes, reading included.
            limit = float(tlimit) * 1.05 + 0.5
            for b in budgets:
                for k in RUNS:
                    r = by.get((g, b), {}).get(k)
                    if r is None or k == "heur":
                        continue
                    wall, rss = float(r["wall"]), float(r["rss_kib"] or 0) / 1024
                    answered = found(r)
                    ok = wall <= limit and rss <= 1024 and (answered or k in ("milp", "fixed"))
                    lines.append("- %s at %d%%, %s: %s in %.1f s (limit %.1f s with its margin), %.0f MiB "
                                 "(goal: an answer within the limit and 1 GiB): %s" %
                                 (g, b, TITLES[k], "answered" if answered else "no schedule", wall, limit, rss,
                                  "met" if ok else "not met") + marked(g, b, k))
    lines.append("")
    lines.append("The lowest budget tried at which the extra compute stays under 1%, in the problem's order "
                 "(the MILP, the fixed-order anneal, the heuristics) and in a free order (any run):")
    lines.append("")
    for g in graphs:
        def lowest(keys):
            best = None
            for b in sorted(budgets):
                if any(ov(g, b, k) is not None and ov(g, b, k)[0] < 1 for k in keys):
                    best = b
                    break
            return "%d%%" % best if best is not None else "none of those tried"
        lines.append("- %s: fixed order %s, free order %s" % (g, lowest(["milp", "fixed", "heur"]), lowest(RUNS)))
    open(out, "w").write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
