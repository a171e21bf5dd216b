#!/usr/bin/env bash
# One device command's worth of what a GPU session owes, most wanted first, each step capped so
# that a short lease still brings back the first ones:
#   bash scripts/gpu-session.sh BASE.tgz NEW.tgz
# 1. scripts/gpu-compare.sh BASE NEW 3 over GPU_SESSION_SPEED (default: the fused beam step,
#    sequence_concat's bandwidth and the row gathers' of sequence_expand), base and new alternated
#    on the same machine; at most GPU_SESSION_COMPARE seconds (default 240).
# 2. Where Nsight Compute (ncu) is on the PATH: the new bundle's fused beam step, its kernels
#    whose names match GPU_SESSION_NCU (default "fused"), 8 launches after the first 8, with their
#    warp instructions and durations (--clock-control none: the clocks stay as they are); at most
#    GPU_SESSION_NCU_SECONDS (default 120).
# 3. scripts/gpu-run.sh NEW: every test program, speed test, C test and the benchmark; at most
#    GPU_SESSION_RUN seconds (default 200; GPU_RUN_TIMEOUT, each program's cap, defaults to 120).
# BASE is a small bundle of an earlier commit (TESTS="cuda_beam cuda_misc cuda" OUTPUT=... bash
# scripts/gpu-bundle.sh in its checkout), NEW a full one of this commit. Logs go to $OUT when it
# is set (the folder a device machine sends back), else build/gpu-logs: compare.log, ncu.log,
# run.log, summary.txt and session.txt (each step's exit status and seconds).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
(($# == 2)) || { sed -n '2,20p' "$0" >&2; exit 2; }
base=$1 new=$2
logs=${OUT:-build/gpu-logs}
mkdir -p "$logs"
session=$logs/session.txt
: >"$session"
read -ra speed <<<"${GPU_SESSION_SPEED:-cuda_beam:gpu_fused_step_speed cuda_misc:gpu_concat_bandwidth cuda:gpu_gather_bandwidth}"

# step NAME SECONDS CMD...: runs CMD under a time cap and notes how it ended.
step() {
  local name=$1 cap=$2 start status
  shift 2
  start=$SECONDS
  timeout "$cap" "$@"
  status=$?
  printf '%s: exit %d after %d s (cap %d s)\n' "$name" "$status" $((SECONDS - start)) "$cap" | tee -a "$session"
}

step compare "${GPU_SESSION_COMPARE:-240}" bash scripts/gpu-compare.sh "$base" "$new" 3 "${speed[@]}"

if command -v ncu >/dev/null 2>&1; then
  nvrtc=$(find_nvrtc)
  step ncu "${GPU_SESSION_NCU_SECONDS:-120}" env LD_LIBRARY_PATH="$nvrtc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    LODTENSOR_REQUIRE_GPU=1 ncu --clock-control none --kernel-name "regex:${GPU_SESSION_NCU:-fused}" \
    --launch-skip 8 --launch-count 8 --metrics smsp__inst_executed.sum,gpu__time_duration.sum \
    build/compare-new/gpu-bundle/rust/test-cuda_beam --ignored --nocapture --test-threads=1 gpu_fused_step_speed \
    >"$logs/ncu.log" 2>&1
else
  echo "ncu: not on the PATH, step left out" | tee -a "$session"
fi

export GPU_RUN_TIMEOUT=${GPU_RUN_TIMEOUT:-120}
step run "${GPU_SESSION_RUN:-200}" bash scripts/gpu-run.sh "$new"
printf "\n==== session ====\n"
cat "$session"
