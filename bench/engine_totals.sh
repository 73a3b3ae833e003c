#!/usr/bin/env bash
# The totals table of remat_bench_cbc (bench/cbc_report.c's rules) over the
# instance rows of one or more of its markdown files, for runs stopped
# before their end (a stopped run keeps its rows but has no totals).
# Usage: bench/cbc_totals.sh FAMILY=FILE... ; prints a markdown table.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 FAMILY=FILE ..." >&2; exit 2; }
printf '| family | instances | CBC proved in 60 s | CBC not run | remat proved | remat within 1%% | both proved | median ratio | max ratio | ratio <= 1 | remat above the heuristic | disagreements |\n'
printf '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n'
for arg in "$@"; do
  fam=${arg%%=*} file=${arg#*=}
  [ -r "$file" ] || { echo "$0: cannot read $file" >&2; exit 1; }
  awk -F'|' -v fam="$fam" '
    function trim(s) { gsub(/^ +| +$/, "", s); return s }
    # instance rows: 17 cells; header and rule rows excluded
    NF >= 18 && $2 !~ /instance/ && $2 !~ /^-+$/ && $3 ~ /[0-9]/ {
      n++
      rs = trim($7); gap = trim($10); bound = trim($9); cs = trim($13); ct = trim($16) + 0
      ratio = trim($17); check = $18
      if (cs ~ /^not run/) skipped++
      if (cs == "optimal" && ct <= 60) cbc++
      if (rs == "optimal") rp++
      g = gap; sub(/%/, "", g)
      if (rs == "optimal" || ((rs == "feasible" || rs == "ok") && bound !~ /trivial/ && g + 0 <= 1)) within++
      if (ratio != "-" && ratio != "") { both++; r[both] = ratio + 0; if (ratio + 0 <= 1) le1++ }
      if (check ~ /above the heuristic/) above++
      if (check ~ /DISAGREE/) dis++
    }
    END {
      med = "-"; mx = "-"
      if (both > 0) {
        for (i = 1; i <= both; i++) for (j = i + 1; j <= both; j++) if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
        med = sprintf("%.2f", both % 2 ? r[(both + 1) / 2] : (r[both / 2] + r[both / 2 + 1]) / 2)
        mx = sprintf("%.2f", r[both])
      }
      printf "| %s | %d | %d | %d | %d | %d | %d | %s | %s | %d | %d | %d |\n", fam, n, cbc, skipped, rp, within,
             both, med, mx, le1, above, dis
    }' "$file"
done
