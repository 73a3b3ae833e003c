#!/usr/bin/env bash
# Data-parallel training across processes (engine/comm.h, train/grad_reduce.h),
# run the way users run it: `mpirun -np N remat train ...`, oversubscribed on
# this machine's cores. What holds:
#   - 2 ranks leave the parameters and optimizer state of one process with
#     --accum 2 at the same global batch, bit for bit: SGD and Adam, an MLP and
#     a CNN, checkpoint-all and a schedule that recomputes (tests/mpi/snapcmp.py
#     reads the snapshots rank 0 writes);
#   - 3 and 4 ranks agree with one process within 1e-6 (MPI sums in its own
#     order), and a run repeats itself bit for bit; in every run every rank's
#     parameters are rank 0's after every step, and its arena reaches exactly
#     the plan's span (REMAT_DP_CHECK=1);
#   - the gradients' sum overlaps the backward pass: its first bucket starts
#     before the last backward compute (REMAT_LOG=debug says when);
#   - held-out evaluation split over the ranks gives one process's figures;
#   - --batch auto finds each rank the batch one process finds in its budget;
#   - a snapshot 2 ranks wrote resumes on 1 process and on 3 ranks as the
#     uninterrupted run continues;
#   - every rank's memory plan is rank 0's: a rank given another batch is
#     caught, naming the plan;
#   - an error on one rank ends the job, non-zero, with that rank's message,
#     and a killed rank does not leave the others waiting.
# Needs build/remat built with MPI and mpirun (scripts/setup installs Open
# MPI). The last line is "mpi tests: N passed, N failed" (scripts/test).
set -uo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
remat="${REMAT_BIN:-$root/build/remat}"
cmp_py="$root/tests/mpi/snapcmp.py"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Loopback only: no network probing on CI machines; no busy-polling of idle ranks.
export OMPI_MCA_btl=self,vader OMPI_MCA_mpi_yield_when_idle=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
passed=0 failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
fail() { echo "FAIL: $1"; failed=$((failed + 1)); }
# REMAT_DP_CHECK=1: after every step each rank checks that its parameters are
# rank 0's, bit for bit, and that its arena reached exactly the plan's span.
mpi() { REMAT_DP_CHECK=1 timeout 120 mpirun --oversubscribe -x REMAT_DP_CHECK "$@"; }

# train SNAPSHOT ARGS...: a short run (the reference kernels on one thread,
# whose sums do not depend on the batch) writing its snapshot.
common=(--data synthetic --samples 160 --steps 5 --kernels reference --threads 1 --quiet)

# same_as_accum NAME RANKS TOL MODEL BATCH ARGS...: RANKS processes against one with --accum RANKS.
same_as_accum() {
  local name="$1" ranks="$2" tol="$3" model="$4" batch="$5"
  shift 5
  rm -f "$tmp/dp.snap" "$tmp/one.snap"
  if ! mpi -np "$ranks" "$remat" train --model "$root/models/$model.cfg" --batch "$batch" "${common[@]}" "$@" \
    --snapshot "$tmp/dp.snap" >"$tmp/out.dp" 2>&1; then
    fail "$name: mpirun -np $ranks failed: $(tail -5 "$tmp/out.dp")"
    return
  fi
  local recomputes
  recomputes=$(sed -n -E 's/.*compute overhead [^:]*: ([0-9]+) recomputations.*/\1/p' "$tmp/out.dp")
  if [[ "$name" == *chen_greedy* ]] && ! [ "${recomputes:-0}" -gt 0 ]; then
    fail "$name: the schedule recomputes nothing ($(grep 'compute overhead' "$tmp/out.dp"))"
    return
  fi
  if ! "$remat" train --model "$root/models/$model.cfg" --batch "$batch" --accum "$ranks" "${common[@]}" "$@" \
    --snapshot "$tmp/one.snap" >"$tmp/out" 2>&1; then
    fail "$name: one process with --accum $ranks failed: $(tail -5 "$tmp/out")"
    return
  fi
  if python3 "$cmp_py" "$tmp/dp.snap" "$tmp/one.snap" $tol >"$tmp/cmp" 2>&1; then
    ok "$name: $ranks ranks = one process with --accum $ranks$([ -n "$tol" ] && echo ", $(cat "$tmp/cmp")")$([ "${recomputes:-0}" -gt 0 ] && echo ", $recomputes recomputations a step")"
  else
    fail "$name: $(cat "$tmp/cmp")"
  fi
}

for opt in sgd adam; do
  same_as_accum "mlp-tiny $opt, checkpoint_all" 2 "" mlp-tiny 16 --budget 100% --strategy checkpoint_all --optimizer $opt
  same_as_accum "cnn-tiny $opt, checkpoint_all" 2 "" cnn-tiny 16 --budget 100% --strategy checkpoint_all --optimizer $opt
  # resnet-tiny at 70%: a schedule that recomputes (batchnorm, residual sums).
  same_as_accum "resnet-tiny $opt, chen_greedy at 70%" 2 "" resnet-tiny 16 --budget 70% --strategy chen_greedy \
    --optimizer $opt
done
same_as_accum "mlp-tiny sgd, 3 ranks" 3 1e-6 mlp-tiny 24 --budget 100% --strategy checkpoint_all
same_as_accum "cnn-tiny adam, 4 ranks" 4 1e-6 cnn-tiny 16 --budget 100% --strategy checkpoint_all --optimizer adam

# Run to run: the same job twice, the same bits.
run_twice() {
  for k in 1 2; do
    mpi -np 3 "$remat" train --model "$root/models/cnn-tiny.cfg" --batch 24 "${common[@]}" --budget 100% \
      --strategy checkpoint_all --snapshot "$tmp/run$k.snap" >"$tmp/out" 2>&1 || return 1
  done
  python3 "$cmp_py" "$tmp/run1.snap" "$tmp/run2.snap" >"$tmp/cmp" 2>&1
}
if run_twice; then ok "3 ranks, twice: the same bits"; else fail "3 ranks, twice: $(cat "$tmp/cmp" "$tmp/out")"; fi

# A snapshot 2 ranks wrote resumes on 1 process (--accum 2: the same bits as
# the uninterrupted 2-rank run) and on 3 ranks (within rounding).
resume_elsewhere() {
  local c=(--model "$root/models/cnn-tiny.cfg" --batch 24 --data synthetic --samples 96 --kernels reference --threads 1
    --quiet --budget 100% --strategy checkpoint_all)
  mpi -np 2 "$remat" train "${c[@]}" --steps 4 --snapshot "$tmp/whole.snap" >"$tmp/out" 2>&1 &&
    mpi -np 2 "$remat" train "${c[@]}" --steps 2 --snapshot "$tmp/half.snap" >"$tmp/out" 2>&1 &&
    cp "$tmp/half.snap" "$tmp/half3.snap" &&
    "$remat" train "${c[@]}" --accum 2 --steps 4 --resume "$tmp/half.snap" --snapshot "$tmp/on1.snap" >"$tmp/out" 2>&1 &&
    mpi -np 3 "$remat" train "${c[@]}" --steps 4 --resume "$tmp/half3.snap" --snapshot "$tmp/on3.snap" >"$tmp/out" 2>&1
}
if ! resume_elsewhere; then
  fail "resuming 2 ranks' snapshot elsewhere: $(tail -5 "$tmp/out")"
else
  if python3 "$cmp_py" "$tmp/whole.snap" "$tmp/on1.snap" >"$tmp/cmp" 2>&1; then
    ok "2 ranks' snapshot resumed on 1 process (--accum 2): the uninterrupted run's bits"
  else
    fail "2 ranks' snapshot resumed on 1 process: $(cat "$tmp/cmp")"
  fi
  if python3 "$cmp_py" "$tmp/whole.snap" "$tmp/on3.snap" 1e-6 >"$tmp/cmp" 2>&1; then
    ok "2 ranks' snapshot resumed on 3 ranks: the uninterrupted run's, $(cat "$tmp/cmp")"
  else
    fail "2 ranks' snapshot resumed on 3 ranks: $(cat "$tmp/cmp")"
  fi
fi

# Held-out evaluation split over the ranks: the job's figures are one
# process's (the same weights, no batchnorm), every held-out sample counted once.
heldout() { sed -n -E 's/.*(held-out loss [0-9.]+ acc +[0-9.]+% \([0-9]+\)).*/\1/p' "$1" | tail -1; }
mpi -np 3 "$remat" train --model "$root/models/cnn-tiny.cfg" --batch 24 "${common[@]}" --budget 100% \
  --strategy checkpoint_all >"$tmp/ev3" 2>&1
"$remat" train --model "$root/models/cnn-tiny.cfg" --batch 24 --accum 3 "${common[@]}" --budget 100% \
  --strategy checkpoint_all >"$tmp/ev1" 2>&1
if [ -n "$(heldout "$tmp/ev1")" ] && [ "$(heldout "$tmp/ev3")" = "$(heldout "$tmp/ev1")" ] &&
  [ "$(grep -c 'held-out' "$tmp/ev3")" = "$(grep -c 'held-out' "$tmp/ev1")" ]; then
  ok "held-out evaluation over 3 ranks: $(heldout "$tmp/ev3"), as one process, printed once"
else
  fail "held-out evaluation over 3 ranks: '$(heldout "$tmp/ev3")' against '$(heldout "$tmp/ev1")'"
fi

# --batch auto under a per-rank budget: each rank's batch is one process's
# answer, and a step is the ranks' batches together.
auto=(--model "$root/models/cnn-tiny.cfg" --data synthetic --batch auto --budget 4MiB --samples 512 --steps 1
  --strategy chen_greedy --kernels reference --threads 1 --quiet)
"$remat" train "${auto[@]}" >"$tmp/auto1" 2>&1
mpi -np 2 "$remat" train "${auto[@]}" >"$tmp/auto2" 2>&1
b1=$(sed -n -E 's/^batch +([0-9]+): the largest batch.*/\1/p' "$tmp/auto1")
b2=$(sed -n -E 's/^batch +([0-9]+): the largest batch.*/\1/p' "$tmp/auto2")
if [ -n "$b1" ] && [ "$b1" = "$b2" ] && grep -q "$((2 * b1)) a step = 2 ranks x 1 micro-batch of $b1" "$tmp/auto2"; then
  ok "--batch auto on 2 ranks: $b2 a rank, as one process finds, $((2 * b1)) a step"
else
  fail "--batch auto on 2 ranks: '$b2' against one process's '$b1': $(grep -E 'batch|step' "$tmp/auto2" | head -3)"
fi

# Overlap is real: the first bucket's sum starts before the backward pass ends.
REMAT_LOG=debug mpi -np 2 "$remat" train --model "$root/models/cnn-tiny.cfg" --batch 16 "${common[@]}" --budget 100% \
  --strategy checkpoint_all >"$tmp/out" 2>&1
read -r first end < <(sed -n -E 's/.*the first started after compute ([0-9]+), the backward pass ends with compute ([0-9]+);.*/\1 \2/p' \
  "$tmp/out" | head -1)
if [ -n "${first:-}" ] && [ "$first" -lt "$end" ]; then
  ok "the first gradient bucket is summed from compute $first on, the backward pass ends at compute $end"
else
  fail "overlap: first bucket at compute ${first:-?}, backward pass ends at ${end:-?}: $(grep grad_reduce "$tmp/out" | head -3)"
fi

# What would fit is said in --batch's terms (the global batch), once.
rc=0
mpi -np 3 "$remat" train --model "$root/models/cnn-tiny.cfg" --data synthetic --samples 256 --budget 2MiB \
  --strategy checkpoint_all --batch 48 --steps 2 --quiet >"$tmp/out" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && [ "$(grep -c 'fits batch 14 a rank (--batch 42)' "$tmp/out")" = 1 ]; then
  ok "a batch too large for 3 ranks: what fits is said once, as --batch 42"
else
  fail "a batch too large for 3 ranks: exit $rc, $(grep 'remat train' "$tmp/out" | head -3)"
fi

# A usage error under mpirun: said once (by rank 0), every rank exits 1.
rc=0
mpi -np 3 "$remat" train --model "$root/models/cnn-tiny.cfg" --data synthetic --batch 16 --budget 100% \
  --no-such-option >"$tmp/out" 2>&1 || rc=$?
said=$(grep -c "remat train: unknown argument '--no-such-option'" "$tmp/out")
if [ "$rc" -ne 0 ] && [ "$said" = 1 ]; then
  ok "a usage error under mpirun -np 3 is said once (exit $rc)"
else
  fail "a usage error under mpirun -np 3: exit $rc, said $said times: $(head -3 "$tmp/out")"
fi

# A rank with another batch plans another arena: caught by every rank.
rc=0
mpi -np 1 "$remat" train --model "$root/models/cnn-tiny.cfg" --batch 16 "${common[@]}" --budget 4MiB \
  --strategy checkpoint_all : -np 1 "$remat" train --model "$root/models/cnn-tiny.cfg" --batch 32 "${common[@]}" \
  --budget 4MiB --strategy checkpoint_all >"$tmp/out" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && grep -q "ranks computed a different memory plan than rank 0" "$tmp/out"; then
  ok "a rank with another plan is refused (exit $rc)"
else
  fail "a rank with another plan: exit $rc, $(tail -5 "$tmp/out")"
fi

# The check itself: a rank stepping with another learning rate is caught
# after its first step.
rc=0
mpi -np 1 "$remat" train --model "$root/models/cnn-tiny.cfg" --batch 16 "${common[@]}" --budget 100% \
  --strategy checkpoint_all : -np 1 "$remat" train --model "$root/models/cnn-tiny.cfg" --batch 16 "${common[@]}" \
  --budget 100% --strategy checkpoint_all --lr 0.07 >"$tmp/out" 2>&1 || rc=$?
if [ "$rc" -ne 0 ] && grep -q "ranks computed a different set of parameters after step 1 than rank 0" "$tmp/out"; then
  ok "REMAT_DP_CHECK catches a rank whose parameters drift (exit $rc)"
else
  fail "a rank with another learning rate: exit $rc, $(tail -5 "$tmp/out")"
fi

# An error on one rank (rank 1 cannot read its data) ends the whole job.
rc=0
start=$(date +%s)
mpi -np 1 "$remat" train --model "$root/models/cnn-tiny.cfg" --batch 16 "${common[@]}" --budget 100% \
  --strategy checkpoint_all : -np 1 "$remat" train --model "$root/models/cnn-tiny.cfg" --batch 16 \
  --data "$tmp/no-such-folder" --steps 4 --quiet --budget 100% --strategy checkpoint_all >"$tmp/out" 2>&1 || rc=$?
took=$(($(date +%s) - start))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && grep -q "remat train (rank 1 of 2): .*no-such-folder" "$tmp/out"; then
  ok "an error on rank 1 ends the job in ${took} s (exit $rc), with its message"
else
  fail "an error on rank 1: exit $rc after ${took} s, $(tail -5 "$tmp/out")"
fi

# A rank killed mid-run: mpirun ends the others instead of leaving them in a collective.
rc=0
start=$(date +%s)
(
  sleep 3
  pkill -KILL -n -f -- "^$remat train .*--seed 4242"
) &
killer=$!
mpi -np 2 "$remat" train --model "$root/models/mlp-tiny.cfg" --batch 16 --data synthetic --samples 4096 \
  --epochs 2000 --kernels reference --threads 1 --quiet --budget 100% --strategy checkpoint_all --seed 4242 \
  >"$tmp/out" 2>&1 || rc=$?
wait "$killer"
took=$(($(date +%s) - start))
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -lt 60 ]; then
  ok "a killed rank ends the job in ${took} s (exit $rc)"
else
  fail "a killed rank: exit $rc after ${took} s, $(tail -5 "$tmp/out")"
fi

echo "mpi tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
