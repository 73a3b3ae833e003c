#!/usr/bin/env python3
"""Compares the parameters and optimizer state of two remat snapshots
(docs/snapshot-format.md), for the MPI tests (tests/mpi/test_mpi.sh).

usage: snapcmp.py A B [TOL]
Without TOL the trainable tensors and the optimizer state must be the same
bits; with TOL, within TOL of each other relative to the largest magnitude
of each tensor. Batchnorm running statistics are left out: each rank keeps
its own, as in PyTorch's DDP. Exit 0 when they agree, 1 with the first
difference on stderr, 2 when a file cannot be read."""
import struct
import sys


def load(path):
    b = open(path, "rb").read()
    if b[:8] != b"RMATCKPT":
        raise ValueError(f"{path}: not a snapshot")
    size = struct.unpack_from("<Q", b, 16)[0]
    o = 32
    step, _epoch, _seed, _rng, count, _kind, slots, _r, _osteps = struct.unpack_from("<QQQQIIIIQ", b, o)
    o += 56
    table = []
    for _ in range(count):
        n = struct.unpack_from("<I", b, o)[0]
        name = b[o + 4:o + 4 + n].decode()
        o += 4 + n
        role = struct.unpack_from("<I", b, o)[0]
        numel = struct.unpack_from("<Q", b, o + 20)[0]
        o += 28
        table.append((name, role, numel))
    blocks = {}
    for name, role, numel in table:
        blocks[name] = b[o:o + 4 * numel]
        o += 4 * numel
    for r in range(slots):
        for name, role, numel in table:
            if role in (0, 1):
                blocks[f"{name} (optimizer state {r})"] = b[o:o + 4 * numel]
                o += 4 * numel
    if o != 32 + size:
        raise ValueError(f"{path}: the payload does not add up")
    kept = {k: v for k, v in blocks.items() if "running_" not in k}
    return step, kept


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        sa, a = load(sys.argv[1])
        sb, b = load(sys.argv[2])
    except (OSError, ValueError, struct.error) as err:
        print(f"snapcmp: {err}", file=sys.stderr)
        return 2
    tol = float(sys.argv[3]) if len(sys.argv) == 4 else None
    if sa != sb or a.keys() != b.keys():
        print(f"snapcmp: different runs (steps {sa} and {sb}, or other tensors)", file=sys.stderr)
        return 1
    worst = 0.0
    for name in a:
        if tol is None:
            if a[name] != b[name]:
                print(f"snapcmp: {name} differs", file=sys.stderr)
                return 1
            continue
        n = len(a[name]) // 4
        x, y = struct.unpack(f"<{n}f", a[name]), struct.unpack(f"<{n}f", b[name])
        scale = max(max(abs(v) for v in x), max(abs(v) for v in y), 1e-30)
        d = max(abs(p - q) for p, q in zip(x, y)) / scale
        worst = max(worst, d)
        if not d <= tol:
            print(f"snapcmp: {name}: {d:.3g} apart, over {tol:g}", file=sys.stderr)
            return 1
    if tol is not None:
        print(f"snapcmp: within {worst:.3g}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
