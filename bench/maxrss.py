#!/usr/bin/env python3
"""Runs a command with its output passed through, and writes the largest
resident set it reached (KiB, the kernel's ru_maxrss) to a file: the
benches' memory column, without GNU time.

    bench/maxrss.py RSS_FILE COMMAND [ARG...]
"""
import resource
import subprocess
import sys


def main():
    out, cmd = sys.argv[1], sys.argv[2:]
    rc = subprocess.call(cmd)
    with open(out, "w") as f:
        f.write("%d\n" % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    sys.exit(rc)


if __name__ == "__main__":
    main()
