#!/usr/bin/env bash
# The GPU run of the `cuda` feature, for a machine with an NVIDIA GPU and its driver:
#   bash scripts/test-gpu.sh
# Builds the feature (target/cuda), runs every Rust test with it (the GPU-vs-CPU checks of
# tests/cuda*.rs included), the ignored speed tests (gpu_*, one at a time), then the C API tests
# against the CUDA build (build/capi-cuda; without valgrind, which does not get along with the
# CUDA driver). LODTENSOR_REQUIRE_GPU=1 makes a GPU
# test fail instead of skipping when no device is found (the default here), so a green run really
# ran on the GPU; LODTENSOR_REQUIRE_GPU=0 lets the script run (skipping) on a machine without one.
# scripts/test.sh stays the CI entry point (no GPU needed); this one is for a GPU session. A GPU
# machine without Rust or a network runs the same from programs built elsewhere:
# scripts/gpu-bundle.sh, then scripts/gpu-run.sh there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
jobs=${JOBS:-$(nproc)}
ensure_cargo

section "NVRTC"
nvrtc_dir=$(ensure_nvrtc build/nvrtc)
export LD_LIBRARY_PATH="$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export LODTENSOR_REQUIRE_NVRTC=1 LODTENSOR_REQUIRE_GPU=${LODTENSOR_REQUIRE_GPU:-1}
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L || true

failed=()
section "Rust tests with --features cuda"
LODTENSOR_POISON_UNINIT=1 cargo test --release --features cuda --target-dir target/cuda --no-fail-fast || failed+=("Rust tests (cuda)")

section "Speed: every ignored gpu_* test of tests/cuda*.rs (data movement >= 70% of a device copy; the fused step within 2x of a read of the logits)"
gpu_tests=()
for f in tests/cuda*.rs; do gpu_tests+=(--test "$(basename "$f" .rs)"); done
cargo test --release --features cuda --target-dir target/cuda "${gpu_tests[@]}" -- --ignored --nocapture \
  --test-threads=1 gpu_ || failed+=("GPU speed tests")

section "C API tests against the CUDA build (build/capi-cuda)"
cmake -S capi-tests -B build/capi-cuda -DCMAKE_BUILD_TYPE=Debug -DLODTENSOR_MEMCHECK=OFF \
  "-DLODTENSOR_CARGO_TARGET_DIR=$PWD/target/cuda" "-DLODTENSOR_CARGO_ARGS=--features=cuda"
cmake --build build/capi-cuda -j "$jobs"
ctest --test-dir build/capi-cuda --output-on-failure -j "$jobs" || failed+=("C API tests (cuda)")

if ((${#failed[@]})); then
  printf -v list '%s; ' "${failed[@]}"
  section "FAILED: ${list%; }"
  exit 1
fi
section "all GPU tests passed"
