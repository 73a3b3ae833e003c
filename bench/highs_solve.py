#!/usr/bin/env python3
"""HiGHS on one MPS file, for remat_bench_engine (bench/engine_solve.c).

Usage: highs_solve.py MODEL.mps SOLUTION TIME_LIMIT_S
       highs_solve.py --version

Prints `key: value` lines (status, objective, bound, seconds; version) in
the model's units (HiGHS's banner may come before them) and writes the nonzero columns of the solution, one
`index name value` line each (the format engine_solve.c reads). Run from
the bench's own virtual environment (bench/engine.sh installs highspy
there); never needed by the build, the demo or the tests.
"""
import sys
import time

import highspy


def main(argv):
    if len(argv) == 2 and argv[1] == "--version":
        h = highspy.Highs()
        print("version: %d.%d.%d" % (h.versionMajor(), h.versionMinor(), h.versionPatch()))
        return 0
    if len(argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    mps, sol, limit = argv[1], argv[2], float(argv[3])
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    # remat's engines stop at an exact proof (lp_solve's mip_gap 1e-9, CBC's
    # defaults); HiGHS's default relative gap of 1e-4 would stop earlier.
    h.setOptionValue("mip_rel_gap", 1e-9)
    h.setOptionValue("mip_abs_gap", 1e-9)
    h.setOptionValue("threads", 1)
    if limit > 0:
        h.setOptionValue("time_limit", limit)
    t0 = time.perf_counter()
    if h.readModel(mps) == highspy.HighsStatus.kError:
        print("status: failed: read")
        return 1
    h.run()
    seconds = time.perf_counter() - t0
    ms = h.getModelStatus()
    info = h.getInfo()
    names = {
        highspy.HighsModelStatus.kOptimal: "optimal",
        highspy.HighsModelStatus.kInfeasible: "infeasible",
        highspy.HighsModelStatus.kTimeLimit: "time limit",
    }
    print("status: %s" % names.get(ms, h.modelStatusToString(ms)))
    print("seconds: %.6f" % seconds)
    if info.primal_solution_status == 2:  # kSolutionStatusFeasible
        print("objective: %.12g" % info.objective_function_value)
        values = h.getSolution().col_value
        lp = h.getLp()
        with open(sol, "w") as f:
            for j, v in enumerate(values):
                if abs(v) > 1e-9:
                    f.write("%d %s %.12g\n" % (j, lp.col_names_[j], v))
    if ms != highspy.HighsModelStatus.kInfeasible and info.mip_dual_bound > -1e300:
        print("bound: %.12g" % info.mip_dual_bound)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
