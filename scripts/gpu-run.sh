#!/usr/bin/env bash
# Runs the bundle that scripts/gpu-bundle.sh built, on a machine with an NVIDIA GPU and its
# driver; it needs no Rust toolchain, no compiler and no network:
#   bash scripts/gpu-run.sh [BUNDLE]        # BUNDLE defaults to gpu-bundle.tgz
# First it times the kernels' load with an empty disk cache and then with a filled one
# (LODTENSOR_KERNEL_CACHE, default build/gpu-kernel-cache, emptied first; every program after
# reads the compiled kernels from it). Then it runs what scripts/test-gpu.sh runs: every Rust test
# program (LODTENSOR_REQUIRE_GPU=1, so a GPU test fails instead of skipping when no device is
# found), the ignored speed tests (gpu_*, one at a time), every C API test program (exit status 77
# is a skip), then
# the GPU benchmark (BENCH_* variables pass through; GPU_RUN_BENCH=0 leaves it out). An emulator
# bundle runs no speed tests and runs the benchmark with BENCH_SMALL=1 and BENCH_REPS=3. Logs go to
# $OUT when it is set (the folder a device machine sends back), else build/gpu-logs: run.log (every
# program's output), bench.md (the benchmark's table) and summary.txt, which is also printed last.
# GPU_RUN_FILTER=REGEX runs only the programs whose name in the summary matches, e.g. 'cuda'.
# The programs that touch the device run first (the CUDA tests, the speed tests, the benchmark, the
# CUDA C tests), then the others, so a run cut short by a lease still has the GPU results; each
# program is stopped after GPU_RUN_TIMEOUT seconds (default 300), which counts as a failure.
# libnvrtc.so.13 is looked for in LODTENSOR_NVRTC_DIR, the loader's cache, the CUDA toolkit and
# Python's nvidia-cuda-nvrtc package.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
tarball=${1:-gpu-bundle.tgz}
[[ -f $tarball ]] || { echo "error: no $tarball; make it with scripts/gpu-bundle.sh" >&2; exit 2; }
mkdir -p build
rm -rf build/gpu-bundle
tar -xzf "$tarball" -C build || exit 2
bundle=build/gpu-bundle
feature=$(<"$bundle/FEATURE")
logs=${OUT:-build/gpu-logs}
mkdir -p "$logs"
log=$logs/run.log summary=$logs/summary.txt
: >"$log"
: >"$summary"
export LODTENSOR_REQUIRE_GPU=${LODTENSOR_REQUIRE_GPU:-1} LODTENSOR_POISON_UNINIT=1

note() { printf '%s\n' "$*" | tee -a "$summary"; }

note "bundle: $tarball ($feature), $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -m)"
if [[ $feature == cuda ]]; then
  export LODTENSOR_REQUIRE_NVRTC=1
  nvrtc=$(find_nvrtc)
  if [[ -z $nvrtc ]]; then
    note "FAILED: no libnvrtc.so.13 on this machine (set LODTENSOR_NVRTC_DIR to its folder)"
    exit 1
  fi
  export LD_LIBRARY_PATH="$nvrtc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  note "NVRTC: $nvrtc"
  command -v nvidia-smi >/dev/null 2>&1 && note "$(nvidia-smi -L 2>&1)"
fi

passed=0 skipped=0 failed=()
# run NAME CMD...: runs CMD with its output appended to run.log; exit 0 passes, 77 skips. Names
# that GPU_RUN_FILTER (an extended regular expression) does not match are left out.
run() {
  local name=$1 status
  shift
  [[ $name =~ ${GPU_RUN_FILTER:-.} ]] || return 0
  printf '\n==== %s ====\n' "$name" >>"$log"
  timeout "${GPU_RUN_TIMEOUT:-300}" "$@" >>"$log" 2>&1
  status=$?
  case $status in
    0) passed=$((passed + 1)) ;;
    77) skipped=$((skipped + 1)); note "skipped: $name" ;;
    *) failed+=("$name"); note "FAILED ($status): $name" ;;
  esac
}

shopt -s nullglob
# The kernel files' load, with an empty disk cache (each compiled) and then from it; the summary
# keeps both times. Every program after them reads their compiled kernels from that cache.
export LODTENSOR_KERNEL_CACHE=${LODTENSOR_KERNEL_CACHE:-$PWD/build/gpu-kernel-cache}
rm -rf "$LODTENSOR_KERNEL_CACHE"
for cache in empty filled; do
  run "kernel load ($cache cache)" "$bundle/rust/bench-gpu" --bench --load-only
done
grep 'kernel files loaded' "$log" >>"$summary" || true
# Which form the device took: machine code (sm_XY) or, where that failed to compile or load, PTX
# (compute_XY). The entries' keys name their target.
entries=("$LODTENSOR_KERNEL_CACHE"/*.bin)
if ((${#entries[@]})); then
  note "kernel cache: $(grep -la -- '--gpu-architecture=sm_' "${entries[@]}" | wc -l) machine-code and" \
    "$(grep -la -- '--gpu-architecture=compute_' "${entries[@]}" | wc -l) PTX entries"
fi
# The device first: Rust programs named cuda (and the unit tests, which hold the kernel-path tests).
for prog in "$bundle"/rust/test-cuda* "$bundle"/rust/lib-*; do
  run "rust ${prog##*/}" "$prog"
done
if [[ $feature == cuda ]]; then
  for prog in "$bundle"/rust/test-cuda*; do
    run "speed ${prog##*/}" "$prog" --ignored --nocapture --test-threads=1 gpu_
  done
else
  # Sized to fill a GPU: more than the emulator's 1 GiB, and its timings mean nothing.
  note "speed tests: not run on the emulator"
  export BENCH_SMALL=${BENCH_SMALL:-1} BENCH_REPS=${BENCH_REPS:-3}
fi
if [[ ${GPU_RUN_BENCH:-1} != 0 && benchmark =~ ${GPU_RUN_FILTER:-.} ]]; then
  printf '\n==== benchmark ====\n' >>"$log"
  if timeout "${GPU_RUN_TIMEOUT:-300}" "$bundle/rust/bench-gpu" --bench >"$logs/bench.md" 2>>"$log"; then
    passed=$((passed + 1))
  else
    failed+=("benchmark")
    note "FAILED: benchmark"
  fi
fi
c_test() {
  run "C ${1##*/}" env LD_LIBRARY_PATH="$bundle/capi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$1"
}
for prog in "$bundle"/capi/test_*cuda* "$bundle"/capi/test_hpp_*; do
  c_test "$prog"
done
# Then the rest, which the device changes less: the host-side Rust tests and the other C tests.
for prog in "$bundle"/rust/test-*; do
  [[ ${prog##*/} == test-cuda* ]] || run "rust ${prog##*/}" "$prog"
done
for prog in "$bundle"/capi/test_*; do
  [[ ${prog##*/} == test_*cuda* || ${prog##*/} == test_hpp_* ]] || c_test "$prog"
done
# The speed tests print one line per case; the summary keeps them.
grep 'GB/s' "$log" >>"$summary" || true
if ((${#failed[@]})); then
  note "$passed passed, $skipped skipped, ${#failed[@]} failed: ${failed[*]}"
  exit 1
fi
note "$passed passed, $skipped skipped, none failed"
