#!/usr/bin/env python3
"""The report of bench/vs_pytorch_memory.sh: reads WORK/<model>/ (PyTorch's RESULT lines,
remat train's closing lines), writes the markdown table OUT and the figure SVG, and says
which of issue 28's goals each model meets. Standard library only.

    python3 bench/vs_pytorch_memory_report.py WORK OUT.md FIGURE.svg
"""
import glob
import os
import re
import sys
import time

MIB = 1024.0 * 1024.0
UNITS = {"B": 1, "KiB": 1024, "MiB": MIB, "GiB": MIB * 1024, "TiB": MIB * MIB}


def nbytes(text):
    v, u = text.split()
    return float(v) * UNITS[u]


def torch_point(path):
    text = open(path).read()
    m = re.search(r"^RESULT .*", text, re.M)
    name = os.path.basename(path)[len("torch-"):-len(".log")]
    if not m:
        last = [l for l in text.strip().splitlines() if l.strip()][-1:] or ["no output"]
        return {"name": name, "error": last[0][:160]}
    kv = dict(x.split("=", 1) for x in m.group(0).split()[1:])
    return {"name": name, "peak": float(kv["peak"]), "transient": float(kv["transient"]),
            "persistent": float(kv["persistent"]), "ms": float(kv["ms"])}


def remat_point(path):
    text = open(path).read()
    name = os.path.basename(path)[len("remat-"):-len(".log")]
    p = {"name": name}
    b = re.search(r"^budget +([0-9.]+ [KMGT]?i?B) \(([0-9.]+)% of the no-remat peak\)", text, re.M)
    if b:
        p["budget"], p["budget_pct"] = nbytes(b.group(1)), float(b.group(2))
    m = re.search(r"^measured +([0-9.]+ [KMGT]?i?B) = fixed .* \(planned ([0-9.]+ [KMGT]?i?B);", text, re.M)
    r = re.search(r"^resident +([0-9.]+ [KMGT]?i?B) more", text, re.M)
    t = re.search(r"^step time +median ([0-9.]+) s", text, re.M)
    o = re.search(r"compute overhead ([+-][0-9.]+)%: ([0-9]+) recomputation", text)
    if not (m and r and t):
        err = re.search(r"^remat train: (.*)", text, re.M)
        p["error"] = (err.group(1) if err else "no closing lines")[:200]
        return p
    p.update(accounted=nbytes(m.group(1)), planned=nbytes(m.group(2)), peak=nbytes(r.group(1)),
             ms=1e3 * float(t.group(1)), planned_overhead=float(o.group(1)) if o else 0.0,
             recomputations=int(o.group(2)) if o else 0)
    return p


def load(work):
    models = []
    for d in sorted(glob.glob(os.path.join(work, "*", "settings"))):
        d = os.path.dirname(d)
        st = dict(x.split("=", 1) for x in open(os.path.join(d, "settings")).read().split())
        tp = {p["name"]: p for p in map(torch_point, glob.glob(os.path.join(d, "torch-*.log")))}
        rp = {p["name"]: p for p in map(remat_point, glob.glob(os.path.join(d, "remat-*.log")))}
        models.append((st, tp, rp))
    order = ["resnet18", "resnet50", "vgg16", "unet", "vit_b_16"]
    models.sort(key=lambda x: order.index(x[0]["model"]) if x[0]["model"] in order else 99)
    return models


def torch_order(name):
    if name == "eager":
        return (0, 0)
    if name == "checkpoint":
        return (1, 0)
    return (2, -float(name.split("-", 1)[1]))


def torch_label(name):
    return {"eager": "eager", "checkpoint": "checkpoint per block"}.get(name, name.replace("compile-", "compile, budget "))


def remat_reference(rp):
    """remat's no-remat step: the median over every run whose schedule recomputes nothing (the same
    schedule, timed in several processes), and the spread of those runs, the measure of this machine's
    noise from one process to the next."""
    ms = sorted(p["ms"] for p in rp.values() if "ms" in p and p["recomputations"] == 0)
    if not ms:
        return None
    k = len(ms)
    med = ms[k // 2] if k % 2 else 0.5 * (ms[k // 2 - 1] + ms[k // 2])
    return {"ms": med, "runs": k, "lo": ms[0], "hi": ms[-1]}


def reference(tp, name):
    """The no-remat step a PyTorch option's overhead is over: compile's own at budget 1.0 (it fuses, so
    eager would flatter it), eager's for eager and checkpoint."""
    ref = tp.get("compile-1.0") if name.startswith("compile") else tp.get("eager")
    return ref if ref and "ms" in ref else None


def mib(x):
    return f"{x / MIB:.0f}"


def goals(st, tp, rp):
    """The goal lines of one model: (what, met, detail)."""
    lines = []
    noremat = remat_reference(rp)
    ok_r = [p for p in rp.values() if "peak" in p]
    ok_t = [p for p in tp.values() if "peak" in p]
    with_budget = sorted((p for p in ok_r if "budget" in p), key=lambda p: p["budget"])
    # 1. at most the budget (remat's accounting; the kernel's count beside it), monotone in it
    over = [p for p in with_budget if p["accounted"] > p["budget"]]
    lines.append(("remat's measured peak (arena high-water plus fixed bytes) is at most its budget at every point",
                  not over, "; ".join(f"{p['name']}: {mib(p['accounted'])} MiB over {mib(p['budget'])}" for p in over)
                  or f"{len(with_budget)} points"))
    batch = int(st["batch"]) * 3 * int(st["size"]) ** 2 * 4
    res_over = [p for p in with_budget if p["peak"] > p["budget"]]
    worst = max((p["peak"] - p["budget"] for p in res_over), default=0)
    lines.append(("the kernel's count of the process's growth is at most the budget too", not res_over,
                  f"{len(res_over)} of {len(with_budget)} points over, by at most {worst / MIB:.1f} MiB; the budget "
                  f"does not cover the data loader's host copy of the batch ({batch / MIB:.1f} MiB), thread stacks "
                  f"and BLIS's packing buffers" if res_over else f"{len(with_budget)} points"))
    drops = [(a, b) for a, b in zip(with_budget, with_budget[1:]) if b["accounted"] < a["accounted"]]
    lines.append(("and monotone in the budget (a smaller budget never gives a higher peak)", not drops,
                  "; ".join(f"budget {mib(a['budget'])} MiB peaks at {a['accounted'] / MIB:.2f} MiB, budget "
                            f"{mib(b['budget'])} MiB at {b['accounted'] / MIB:.2f} MiB (the solver minimises "
                            f"compute, not the peak)" for a, b in drops) or "non-decreasing"))
    # 2. at equal measured peak, remat's overhead no worse than PyTorch's best option's
    if noremat:
        noise = max(noremat["hi"] / noremat["ms"] - 1, 1 - noremat["lo"] / noremat["ms"])
        worse, within, compared = [], 0, 0
        for p in ok_t:
            at = rp.get("at-" + p["name"])
            if p["name"] == "eager" or not at or "ms" not in at:
                continue
            best = min((q["ms"] / reference(tp, q["name"])["ms"] - 1 for q in ok_t
                        if q["peak"] <= p["peak"] and reference(tp, q["name"])), default=None)
            if best is None:
                continue
            mine = at["ms"] / noremat["ms"] - 1
            compared += 1
            if mine > best + noise:
                worse.append(f"at {mib(p['peak'])} MiB ({torch_label(p['name'])}): remat {100 * mine:+.0f}%, "
                             f"PyTorch's best {100 * best:+.0f}%")
            elif mine > best:
                within += 1
        lines.append((f"at each PyTorch peak, remat's overhead over its no-remat step is no worse than PyTorch's best "
                      f"option's at that peak or below, within this machine's noise (remat's recompute-nothing "
                      f"schedule timed in {noremat['runs']} processes: {noremat['lo']:.0f}-{noremat['hi']:.0f} ms, "
                      f"+-{100 * noise:.0f}%)", not worse and compared > 0,
                      "; ".join(worse) or f"{compared} peaks compared, {within} of them worse but within the noise"))
    lo_r = min(ok_r, key=lambda p: p["peak"], default=None)
    lo_t = min(ok_t, key=lambda p: p["peak"], default=None)
    if lo_r and lo_t and noremat:
        lines.append(("remat reaches a lower measured peak than any PyTorch option", lo_r["peak"] < lo_t["peak"],
                      f"remat {mib(lo_r['peak'])} MiB (planned overhead {lo_r['planned_overhead']:+.1f}%, measured "
                      f"{100 * (lo_r['ms'] / noremat['ms'] - 1):+.0f}%) against {torch_label(lo_t['name'])}'s "
                      f"{mib(lo_t['peak'])} MiB: {lo_r['peak'] / lo_t['peak']:.2f}x"))
    return lines


def table(st, tp, rp):
    noremat = remat_reference(rp) or {}
    rows = ["| option | PyTorch peak MiB | PyTorch ms | PyTorch overhead | remat at that budget: peak MiB "
            "(accounted) | remat ms | remat overhead (planned) |", "|---|---|---|---|---|---|---|"]

    def ovh(p, ref):
        return f"{100 * (p['ms'] / ref['ms'] - 1):+.1f}%" if "ms" in p and "ms" in ref else "-"

    def remat_cells(r):
        if not r:
            return "- | - | -"
        if "error" in r:
            return f"not fitted: {r['error'][:90]} | - | -"
        return (f"{mib(r['peak'])} ({mib(r['accounted'])}) | {r['ms']:.0f} | {ovh(r, noremat)} "
                f"({r['planned_overhead']:+.1f}%)")

    for name in sorted(tp, key=torch_order):
        p = tp[name]
        if "error" in p:
            rows.append(f"| {torch_label(name)} | failed: {p['error'][:80]} | - | - | {remat_cells(rp.get('at-' + name))} |")
            continue
        rows.append(f"| {torch_label(name)} | {mib(p['peak'])} | {p['ms']:.0f} | {ovh(p, reference(tp, name) or {})} | "
                    f"{remat_cells(rp.get('at-' + name))} |")
    sweep = sorted((p for n, p in rp.items() if n == "noremat" or n.startswith("sweep-")),
                   key=lambda p: -p.get("budget_pct", 0))
    rows.append("")
    rows.append("remat alone, budgets from its no-remat peak down to its lower bound:")
    rows.append("")
    rows.append("| budget | measured peak MiB (accounted) | step ms | overhead (planned) |")
    rows.append("|---|---|---|---|")
    for p in sweep:
        b = f"{p['budget_pct']:.1f}% = {mib(p['budget'])} MiB" if "budget" in p else p["name"]
        rows.append(f"| {b} | {remat_cells(p)} |" if "error" not in p else
                    f"| {b} | not fitted: {p['error'][:100]} | - | - |")
    return rows


def nice_step(span):
    raw = span / 4
    mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 0.1
    for m in (1, 2, 2.5, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def svg(models, path):
    """One panel per model: measured peak (x) against step time over the option's own no-remat step (y).
    remat's measured points are dots (its planned overhead at the same peaks, a dashed line, shows what
    the noise hides); torch.compile's points are joined in budget order and labelled with it."""
    W, H, pad = 380, 290, 56
    n = len(models)
    cols = min(n, 2) or 1
    rows = (n + cols - 1) // cols
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{cols * W}" height="{rows * H + 56}" '
           f'font-family="sans-serif" font-size="11">', '<rect width="100%" height="100%" fill="white"/>']
    colours = {"remat": "#1f77b4", "compile": "#d62728", "checkpoint": "#2ca02c", "eager": "#444444"}
    for i, (st, tp, rp) in enumerate(models):
        ox, oy = (i % cols) * W, (i // cols) * H
        noremat = remat_reference(rp)
        if not noremat:
            continue
        pts_t = [(p["peak"] / MIB, p["ms"] / reference(tp, p["name"])["ms"], p["name"]) for p in tp.values()
                 if "peak" in p and reference(tp, p["name"])]
        pts_r = [(p["peak"] / MIB, p["ms"] / noremat["ms"]) for p in rp.values() if "peak" in p]
        plan = sorted((p["peak"] / MIB, 1 + p["planned_overhead"] / 100) for p in rp.values() if "peak" in p)
        xs = [x for x, *_ in pts_t] + [x for x, _ in pts_r] + [x for x, _ in plan]
        ys = [y for _, y, _ in pts_t] + [y for _, y in pts_r] + [y for _, y in plan]
        xstep = nice_step(max(xs))
        x0, x1 = 0.0, xstep * (int(max(xs) / xstep) + 1)
        y0 = min(0.8, 0.1 * int(min(ys) * 10))
        y1 = 0.1 * (int(max(ys) * 10) + 1)

        def X(x):
            return ox + pad + (x - x0) / (x1 - x0) * (W - pad - 16)

        def Y(y):
            return oy + H - 40 - (y - y0) / (y1 - y0) * (H - 76)

        out.append(f'<text x="{ox + W / 2 + 20}" y="{oy + 18}" text-anchor="middle" font-weight="bold">'
                   f'{st["model"]}, batch {st["batch"]}, {st["size"]}x{st["size"]}</text>')
        xv = x0
        while xv <= x1 + 1e-9:
            out.append(f'<line x1="{X(xv):.1f}" y1="{Y(y0):.1f}" x2="{X(xv):.1f}" y2="{Y(y1):.1f}" stroke="#eee"/>')
            out.append(f'<text x="{X(xv):.1f}" y="{Y(y0) + 14:.1f}" text-anchor="middle">{xv:g}</text>')
            xv += xstep
        yv = y0
        while yv <= y1 + 1e-9:
            out.append(f'<line x1="{X(x0):.1f}" y1="{Y(yv):.1f}" x2="{X(x1):.1f}" y2="{Y(yv):.1f}" stroke="#eee"/>')
            out.append(f'<text x="{X(x0) - 4:.1f}" y="{Y(yv) + 4:.1f}" text-anchor="end">{yv:.1f}</text>')
            yv += 0.1 if y1 - y0 <= 1.2 else 0.2
        out.append(f'<line x1="{X(x0)}" y1="{Y(y0)}" x2="{X(x1)}" y2="{Y(y0)}" stroke="black"/>')
        out.append(f'<line x1="{X(x0)}" y1="{Y(y0)}" x2="{X(x0)}" y2="{Y(y1)}" stroke="black"/>')
        out.append(f'<text x="{ox + W / 2 + 20}" y="{oy + H - 10}" text-anchor="middle">measured peak (MiB)</text>')
        out.append(f'<text transform="translate({ox + 14},{oy + H / 2 - 10}) rotate(-90)" text-anchor="middle">'
                   f'step / own no-remat step</text>')
        d = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in plan)
        out.append(f'<polyline points="{d}" fill="none" stroke="{colours["remat"]}" stroke-dasharray="4,3"/>')
        out += [f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3" fill="{colours["remat"]}"/>' for x, y in pts_r]
        comp = sorted(((x, y, nm) for x, y, nm in pts_t if nm.startswith("compile")),
                      key=lambda t: -float(t[2].split("-", 1)[1]))
        if comp:
            d = " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y, _ in comp)
            out.append(f'<polyline points="{d}" fill="none" stroke="{colours["compile"]}" stroke-width="1.2"/>')
            for x, y, nm in comp:
                out.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3" fill="{colours["compile"]}"/>')
                out.append(f'<text x="{X(x) + 5:.1f}" y="{Y(y) - 4:.1f}" font-size="9" fill="{colours["compile"]}">'
                           f'{nm.split("-", 1)[1]}</text>')
        for x, y, nm in pts_t:
            if nm in ("eager", "checkpoint"):
                out.append(f'<rect x="{X(x) - 4:.1f}" y="{Y(y) - 4:.1f}" width="8" height="8" fill="{colours[nm]}"/>')
    planned = "profiled times" if models[0][0].get("costs", "flops") == "profile" else "FLOPs"
    legend = (("remat, measured", colours["remat"], "dot"), (f"remat, planned ({planned})", colours["remat"], "dash"),
              ("PyTorch torch.compile, by its budget", colours["compile"], "dot"),
              ("PyTorch checkpoint per block", colours["checkpoint"], "box"), ("PyTorch eager", colours["eager"], "box"))
    for k, (label, c, kind) in enumerate(legend):
        lx, ly = 14 + (k % 3) * (cols * W - 20) / 3, rows * H + 14 + (k // 3) * 18
        if kind == "dot":
            out.append(f'<circle cx="{lx + 5}" cy="{ly - 3}" r="3.5" fill="{c}"/>')
        elif kind == "dash":
            out.append(f'<line x1="{lx - 2}" y1="{ly - 3}" x2="{lx + 12}" y2="{ly - 3}" stroke="{c}" '
                       f'stroke-dasharray="4,3"/>')
        else:
            out.append(f'<rect x="{lx + 1}" y="{ly - 7}" width="8" height="8" fill="{c}"/>')
        out.append(f'<text x="{lx + 16:.0f}" y="{ly + 1}">{label}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def summary(models):
    """One row a model: the lowest measured peak each side reaches, and at what overhead."""
    rows = ["| model | PyTorch eager | PyTorch's lowest peak (option, overhead) | remat at that budget (overhead: "
            "planned, measured) | remat, no remat | remat's lowest peak (overhead: planned, measured) | lowest peaks, "
            "remat / PyTorch |", "|---|---|---|---|---|---|---|"]
    for st, tp, rp in models:
        noremat = remat_reference(rp)
        ok_t = [p for p in tp.values() if "peak" in p and reference(tp, p["name"])]
        ok_r = [p for p in rp.values() if "peak" in p]
        if not noremat or not ok_t or not ok_r or "eager" not in tp or "peak" not in tp["eager"]:
            continue
        lt = min(ok_t, key=lambda p: p["peak"])
        lr = min(ok_r, key=lambda p: p["peak"])
        base = next((p for p in ok_r if p["recomputations"] == 0), ok_r[0])
        at = rp.get("at-" + lt["name"], {})
        at_cell = (f"{mib(at['peak'])} MiB ({at['planned_overhead']:+.0f}%, {100 * (at['ms'] / noremat['ms'] - 1):+.0f}%)"
                   if "ms" in at else "not fitted")
        rows.append(f"| {st['model']}, batch {st['batch']}, {st['size']}x{st['size']} | {mib(tp['eager']['peak'])} MiB | "
                    f"{mib(lt['peak'])} MiB ({torch_label(lt['name'])}, "
                    f"{100 * (lt['ms'] / reference(tp, lt['name'])['ms'] - 1):+.0f}%) | {at_cell} | {mib(base['peak'])} MiB | "
                    f"{mib(lr['peak'])} MiB ({lr['planned_overhead']:+.0f}%, {100 * (lr['ms'] / noremat['ms'] - 1):+.0f}%)"
                    f" | {lr['peak'] / lt['peak']:.2f} |")
    return rows


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    work, out, fig = sys.argv[1:]
    models = load(work)
    if not models:
        sys.exit(f"vs_pytorch_memory_report: no results in {work}")
    st0 = models[0][0]
    doc = ["# remat beside PyTorch at the same measured memory (CPU)", "",
           f"Written by `bench/vs_pytorch_memory.sh` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}) on "
           f"{st0['cpu'].replace('_', ' ')}, {st0['threads']} threads on both sides; torch {st0['torch']}.", "",
           "One training step: forward, cross-entropy, backward, SGD with momentum 0.9, float32, one random batch. "
           f"Step times are medians of {st0['steps']} steps after {st0['warmup']} warm-up steps (remat: of steps 2 "
           "to the last). Overheads are over each option's own no-remat step: PyTorch eager's for eager and checkpoint, "
           "torch.compile's at activation_memory_budget 1.0 for compile (it fuses, so eager's would flatter it), "
           "remat's at budget 100% for remat.", "",
           "Measured peak, PyTorch: parameters, buffers, momentum and the batch (counted), plus the growth of the "
           "kernel's resident count over two steps (VmHWM restarted before them, less VmRSS then) with glibc told "
           "to return large frees (M_MMAP_THRESHOLD 64 KiB, malloc_trim). remat: the growth of the same count from "
           "just before it allocates its training memory to the end (`remat train`'s `resident` line); in brackets "
           "its own accounting, the arena's high-water plus the fixed bytes. remat is given each PyTorch peak as "
           "its `--budget` in bytes, default strategy, solver limit "
           f"{st0['time_limit']} s, " + ("scheduling with the node times `remat profile` measured on this machine "
                                        "(`--costs`): its planned overhead is a predicted time"
                                        if st0.get("costs", "flops") == "profile" else
                                        "scheduling with the FLOP model: its planned overhead is in FLOPs") + ".", "",
           "Step times on this machine (2 vCPUs of a shared host) move by up to 20% from one process to the next, "
           "even for the same schedule: remat's no-remat step is the median of all its runs whose schedule "
           "recomputes nothing, and the goals below allow for the spread of those runs.", "",
           f"![measured peak against step time]({os.path.relpath(fig, os.path.dirname(out) or '.')})", ""]
    doc += summary(models) + [""]
    for st, tp, rp in models:
        doc.append(f"## {st['model']}: batch {st['batch']}, input 3x{st['size']}x{st['size']}")
        doc.append("")
        doc += table(st, tp, rp)
        doc.append("")
        doc.append("Goals:")
        doc.append("")
        for what, met, detail in goals(st, tp, rp):
            doc.append(f"- {what}: **{'met' if met else 'not met'}** ({detail})")
        doc.append("")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        f.write("\n".join(doc) + "\n")
    svg(models, fig)
    print("\n".join(doc))


if __name__ == "__main__":
    main()
