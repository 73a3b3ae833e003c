#!/usr/bin/env python3
"""Runs a command with its output passed through, and writes the largest
resident set it reached (KiB, the kernel's ru_maxrss) and its wall time
(seconds) to a file, on one line: the benches' memory and time columns,
without GNU time. Timed here, around the command alone, so that a bench
script stopped between its runs (SIGSTOP, to let other work run) adds
nothing to them.

    bench/maxrss.py OUT_FILE COMMAND [ARG...]
"""
import resource
import subprocess
import sys
import time


def main():
    out, cmd = sys.argv[1], sys.argv[2:]
    t0 = time.monotonic()
    rc = subprocess.call(cmd)
    wall = time.monotonic() - t0
    with open(out, "w") as f:
        f.write("%d %.2f\n" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, wall))
    sys.exit(rc)


if __name__ == "__main__":
    main()
