#!/usr/bin/env bash
# Tests of scripts/build itself, run by scripts/test: on a scratch copy of
# the source tree (no build directories, no .git), building one small target
# (remat_engine, CUDA off) must
#   1. exit 0 on the tree as it is (every line of its output a progress line
#      that scripts/build drops: the case its old `|| true` was for),
#   2. exit non-zero when a source file of that target has a syntax error,
#   3. exit non-zero when cmake cannot configure (a broken CMakeLists.txt),
#   4. build again (exit 0) once the error is fixed.
# Prints "ok - ..." / "FAIL - ..." per check and last "scripts: N passed, N failed";
# exits non-zero when a check failed. About 20 s on 2 cores.
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
src="$tmp/src"
mkdir -p "$src"
(cd "$root" && tar --exclude='./build*' --exclude=./.git -cf - .) | tar -xf - -C "$src"

passed=0 failed=0
check() { # check NAME EXPECT(0|nonzero) -- runs scripts/build in the copy
  local name="$1" expect="$2" rc=0
  REMAT_BUILD_DIR="$tmp/b" REMAT_BUILD_TARGET=remat_engine "$src/scripts/build" -DREMAT_CUDA=OFF \
    >"$tmp/out" 2>&1 || rc=$?
  if { [ "$expect" = 0 ] && [ "$rc" -eq 0 ]; } || { [ "$expect" = nonzero ] && [ "$rc" -ne 0 ]; }; then
    echo "ok - scripts/build $name (exit $rc)"
    passed=$((passed + 1))
  else
    echo "FAIL - scripts/build $name: exit $rc, expected $expect; its output ends with:"
    tail -15 "$tmp/out" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

victim="$src/base/tensor.c"
cp "$victim" "$tmp/tensor.c.good"
echo 'int remat_broken_on_purpose(void) { return 1 }' >>"$victim" # missing ';'
check "fails on a syntax error" nonzero
grep -q "remat_broken_on_purpose" "$tmp/out" || grep -q "error" "$tmp/out" ||
  { echo "FAIL - the compiler's error is not in scripts/build's output"; failed=$((failed + 1)); }
cp "$tmp/tensor.c.good" "$victim"
check "succeeds on the good tree" 0
cp "$src/CMakeLists.txt" "$tmp/CMakeLists.txt.good"
echo 'this_is_not_cmake(' >>"$src/CMakeLists.txt"
check "fails when cmake cannot configure" nonzero
cp "$tmp/CMakeLists.txt.good" "$src/CMakeLists.txt"
echo 'int remat_broken_again(void) { return undeclared_name; }' >>"$victim"
check "fails on an error after a good build (incremental)" nonzero
cp "$tmp/tensor.c.good" "$victim"
check "succeeds again once fixed" 0
echo "scripts: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
