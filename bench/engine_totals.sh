#!/usr/bin/env bash
# The totals table of remat_bench_engine (bench/engine_report.c's rules)
# over the instance rows of one or more of its markdown files, for runs
# stopped before their end (a stopped run keeps its rows but has no
# totals) or split over several runs. The engine columns are read from each
# table's header, so files run with different --engines mix.
# Usage: bench/engine_totals.sh FAMILY=FILE... ; prints a markdown table.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 FAMILY=FILE ..." >&2; exit 2; }
printf '| family | engine | instances | proved | proved in 60 s | within 1%% | both proved | median ratio | max ratio |\n'
printf '|---|---|--:|--:|--:|--:|--:|--:|--:|\n'
for arg in "$@"; do
  fam=${arg%%=*} file=${arg#*=}
  [ -r "$file" ] || { echo "$0: cannot read $file" >&2; exit 1; }
  awk -F'|' -v fam="$fam" '
    function trim(s) { gsub(/^ +| +$/, "", s); return s }
    # a table header: | instance | nodes | cols | budget | cheapest heuristic | E | s | ... | check |
    $2 ~ /^ *instance *$/ {
      ne = 0
      for (i = 7; i + 1 < NF; i += 2) { name[++ne] = trim($i); col[ne] = i
        if (!(name[ne] in seen)) { seen[name[ne]] = 1; order[++norder] = name[ne] } }
      next
    }
    ne && $3 ~ /^ *[0-9]+ *$/ {
      for (k = 1; k <= ne; k++) {
        e = name[k]; ans = $(col[k]); t = trim($(col[k] + 1))
        if (t == "-") continue
        n[e]++; secs = t + 0
        proved = ans ~ /\*\*optimal\*\*/ || ans ~ /infeasible \(proved\)/
        if (proved) { p[e]++; if (secs <= 60) p60[e]++ }
        g = ans; within_ = proved
        if (!proved && g ~ /gap [0-9.]+%/ && g !~ /trivial/) { sub(/.*gap /, "", g); sub(/%.*/, "", g); within_ = g + 0 <= 1 }
        w[e] += within_
        if (t ~ /x\)/) { q = t; sub(/.*\(/, "", q); sub(/x\).*/, "", q); r[e, ++nr[e]] = q + 0 }
      }
    }
    END {
      for (o = 1; o <= norder; o++) {
        e = order[o]; m = nr[e] + 0; med = "-"; mx = "-"
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (r[e, j] < r[e, i]) { x = r[e, i]; r[e, i] = r[e, j]; r[e, j] = x }
        if (m > 0) { med = sprintf("%.2f", m % 2 ? r[e, (m + 1) / 2] : (r[e, m / 2] + r[e, m / 2 + 1]) / 2); mx = sprintf("%.2f", r[e, m]) }
        printf "| %s | %s | %d | %d | %d | %d | %s | %s | %s |\n", fam, e, n[e], p[e], p60[e], w[e],
               e == "lp_solve" ? "-" : m, e == "lp_solve" ? "-" : med, e == "lp_solve" ? "-" : mx
      }
    }' "$file"
done
