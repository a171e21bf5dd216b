#!/usr/bin/env bash
# Times a change on a GPU machine against the code before it, in one call: the speed tests of two
# bundles of scripts/gpu-bundle.sh, run alternately (base, new, base, new, ...) so that both see
# the same machine in the same state:
#   bash scripts/gpu-compare.sh BASE.tgz NEW.tgz ROUNDS TEST:FILTER...
#   e.g. bash scripts/gpu-compare.sh build/base-bundle.tgz gpu-bundle.tgz 3 cuda_seq:gpu_pad_and_cast
# TEST is a tests/cuda*.rs program (cuda_seq, cuda_misc, ...), FILTER picks its ignored speed tests
# by name (gpu_ for all of them). Make BASE.tgz from a checkout of the earlier commit. The log goes
# to $OUT/compare.log when OUT is set (the folder a device machine sends back), else to
# build/gpu-logs/compare.log; the speed tests' lines are printed last, in run order.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
(($# >= 4)) || { sed -n '2,11p' "$0" >&2; exit 2; }
base=$1 new=$2 rounds=$3
shift 3
for t in "$base" "$new"; do
  [[ -f $t ]] || { echo "error: no bundle $t" >&2; exit 2; }
done
nvrtc=$(find_nvrtc)
[[ -n $nvrtc ]] || { echo "error: no libnvrtc.so.13 on this machine (set LODTENSOR_NVRTC_DIR to its folder)" >&2; exit 1; }
export LD_LIBRARY_PATH="$nvrtc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LODTENSOR_REQUIRE_GPU=1
for side in base new; do
  rm -rf "build/compare-$side"
  mkdir -p "build/compare-$side"
  tar -xzf "$([[ $side == base ]] && echo "$base" || echo "$new")" -C "build/compare-$side" || exit 2
done
logs=${OUT:-build/gpu-logs}
mkdir -p "$logs"
log=$logs/compare.log
: >"$log"
failed=0
for ((round = 1; round <= rounds; round++)); do
  for side in base new; do
    for spec in "$@"; do
      prog=build/compare-$side/gpu-bundle/rust/test-${spec%%:*}
      printf '==== round %d %s %s ====\n' "$round" "$side" "$spec" >>"$log"
      if ! timeout "${GPU_RUN_TIMEOUT:-300}" "$prog" --ignored --nocapture --test-threads=1 "${spec#*:}" >>"$log" 2>&1; then
        echo "FAILED: round $round $side $spec" | tee -a "$log"
        failed=1
      fi
    done
  done
done
grep -E '^==== |GB/s| us' "$log"
exit $failed
