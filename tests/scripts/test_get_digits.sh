#!/usr/bin/env bash
# Tests of scripts/get-digits, run by scripts/test, on CSV files of their own
# (REMAT_DIGITS_CSV; the real one comes from Debian's python3-sklearn, which
# the README's example fetches): 1797 rows whose pixel i of row r is
# (r + i) mod 17 and whose label is r mod 10. Checks that
#   1. the four idx files have MNIST's headers and sizes (1497 + 300 digits
#      of 8x8),
#   2. every pixel is round(level * 255 / 16) and every digit appears with
#      its label, once, across the two files (the split is a shuffle, not a
#      loss),
#   3. a second run leaves a complete folder alone,
#   4. a CSV with a row missing, a level of 17 or NaN, or a missing file is
#      an error naming the file, and the folder it would have made is gone;
#   5. a folder holding other files of those names is an error, untouched.
# Prints "ok - ..." / "FAIL - ..." per check and last "get-digits tests: N
# passed, N failed"; exits non-zero when a check failed. A second or two.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "ok - $1"; passed=$((passed + 1)); }
fail() { echo "FAIL - $1"; failed=$((failed + 1)); }

make_csv() { # make_csv FILE ROWS BAD_ROW: gzipped CSV; BAD_ROW (1-based) gets a level of 17
  python3 - "$@" <<'PY'
import gzip, sys
path, rows, bad = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with gzip.open(path, "wt") as f:
    for r in range(rows):
        px = [(r + i) % 17 for i in range(64)]
        if r + 1 == bad:
            px[5] = 17
        f.write(",".join(f"{v}.0" for v in px) + f",{r % 10}.0\n")
PY
}

make_csv "$tmp/good.csv.gz" 1797 0
if REMAT_DIGITS_CSV="$tmp/good.csv.gz" "$root/scripts/get-digits" "$tmp/d" >"$tmp/out" 2>&1; then
  ok "converts a well-formed CSV"
else
  fail "converts a well-formed CSV: $(cat "$tmp/out")"
fi
if python3 - "$tmp/d" <<'PY'
import struct, sys
d = sys.argv[1]
seen = {}
for name, count in (("train", 1497), ("t10k", 300)):
    img = open(f"{d}/{name}-images-idx3-ubyte", "rb").read()
    lab = open(f"{d}/{name}-labels-idx1-ubyte", "rb").read()
    assert struct.unpack(">IIII", img[:16]) == (0x803, count, 8, 8), f"{name} image header"
    assert struct.unpack(">II", lab[:8]) == (0x801, count), f"{name} label header"
    assert len(img) == 16 + 64 * count and len(lab) == 8 + count, f"{name} sizes"
    for k in range(count):
        px = img[16 + 64 * k: 16 + 64 * (k + 1)]
        r = next(r for r in range(17) if px[0] == round(((r + 0) % 17) * 255 / 16))  # row's first level
        rows = [q for q in range(r, 1797, 17) if q % 10 == lab[8 + k]]
        match = [q for q in rows if bytes(round(((q + i) % 17) * 255 / 16) for i in range(64)) == px]
        assert match, f"{name} digit {k}: pixels or label not those of any source row"
        q = next(q for q in match if q not in seen)
        seen[q] = name
assert len(seen) == 1797, f"{len(seen)} distinct source rows, want 1797"
PY
then
  ok "headers, sizes, levels scaled to bytes, every digit once with its label"
else
  fail "the idx files do not hold the source digits"
fi
if REMAT_DIGITS_CSV="$tmp/missing.csv.gz" "$root/scripts/get-digits" "$tmp/d" 2>&1 | grep -q "already holds"; then
  ok "leaves a complete folder alone"
else
  fail "a second run into a complete folder did something"
fi

expect_error() { # expect_error NAME CSV PATTERN
  local rc=0
  REMAT_DIGITS_CSV="$2" "$root/scripts/get-digits" "$tmp/e" >"$tmp/out" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ] && grep -q -- "$3" "$tmp/out" && [ ! -e "$tmp/e" ]; then
    ok "$1 (exit $rc)"
  else
    fail "$1: exit $rc, output: $(cat "$tmp/out")"
  fi
}
make_csv "$tmp/short.csv.gz" 1796 0
expect_error "refuses a CSV with a row missing" "$tmp/short.csv.gz" "expected 1797 rows"
make_csv "$tmp/level.csv.gz" 1797 42
expect_error "refuses a level of 17, naming the line" "$tmp/level.csv.gz" "level.csv.gz:42:"
expect_error "refuses a missing file" "$tmp/none.csv.gz" "no such file"
make_csv "$tmp/nan.csv.gz" 1797 0
python3 -c "import gzip,sys; p=sys.argv[1]; t=gzip.open(p,'rt').read().replace('0.0,','nan,',1); gzip.open(p,'wt').write(t)" \
  "$tmp/nan.csv.gz"
expect_error "refuses a NaN level, naming the line" "$tmp/nan.csv.gz" "nan.csv.gz:1:"
# A folder with other idx files of those names (an MNIST folder, or a partial
# run) is left alone, with an error.
mkdir -p "$tmp/mnist"
printf 'not digits' >"$tmp/mnist/train-images-idx3-ubyte"
rc=0
REMAT_DIGITS_CSV="$tmp/good.csv.gz" "$root/scripts/get-digits" "$tmp/mnist" >"$tmp/out" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && grep -q "not these digits" "$tmp/out" && [ "$(cat "$tmp/mnist/train-images-idx3-ubyte")" = "not digits" ] &&
  [ ! -e "$tmp/mnist/t10k-images-idx3-ubyte" ]; then
  ok "leaves a folder of other idx files alone (exit $rc)"
else
  fail "a folder of other idx files: exit $rc, output: $(cat "$tmp/out")"
fi
echo "get-digits tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
