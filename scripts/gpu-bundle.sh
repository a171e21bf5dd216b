#!/usr/bin/env bash
# Builds the GPU run on this machine for a GPU machine that has neither a Rust toolchain nor a
# network (the driver is all it needs):
#   bash scripts/gpu-bundle.sh                        # the `cuda` build, into gpu-bundle.tgz
#   FEATURE=cuda-emulator bash scripts/gpu-bundle.sh  # the same programs over the emulator
# and there, from a copy of the repository that holds gpu-bundle.tgz (git ignores it):
#   bash scripts/gpu-run.sh
# The bundle holds what scripts/test-gpu.sh would build there, as stripped x86-64 Linux programs
# (built on Debian 12 they need glibc 2.34 or newer there), about 32 MiB compressed: every Rust test
# program of the feature (the library's unit tests and tests/*.rs except header.rs, which reads
# this checkout by its absolute path), the GPU benchmark (benches/gpu.rs), and the C API test
# programs (capi-tests/test_*) with the shared library beside them. Left out: the statically
# linked copies of the C tests (6 MB each; linking is not what a GPU run tests) and NVRTC
# (libnvrtc.so.13 is 140 MB; gpu-run.sh uses the GPU machine's).
# The emulator bundle runs anywhere; it is how the bundle itself is tested without a GPU.
#   TESTS="cuda_beam cuda_misc cuda" OUTPUT=build/base-bundle.tgz bash scripts/gpu-bundle.sh
# bundles only those tests/*.rs programs (no unit tests, benchmark or C programs), a few MB, into
# OUTPUT (default gpu-bundle.tgz): from a checkout of an earlier commit, the base that
# scripts/gpu-compare.sh times against, small enough to travel beside a full bundle.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
jobs=${JOBS:-$(nproc)}
feature=${FEATURE:-cuda}
# The same target and CMake folders as scripts/test-gpu.sh (cuda) and scripts/test.sh step 6
# (the emulator), so nothing is built twice.
case $feature in
  cuda) target=target/cuda capi=build/capi-cuda ;;
  cuda-emulator) target=target/emu capi=build/capi-emu ;;
  *) echo "error: FEATURE must be cuda or cuda-emulator, not '$feature'" >&2; exit 2 ;;
esac
ensure_tools cmake:cmake cc:gcc c++:g++ make:make strip:binutils python3:python3
ensure_cargo
bundle=build/gpu-bundle
output=${OUTPUT:-gpu-bundle.tgz}
read -ra tests <<<"${TESTS:-}"
rm -rf "$bundle" "$output"
mkdir -p "$bundle/rust" "$bundle/capi/lib"
echo "$feature" >"$bundle/FEATURE"

section "Rust test programs and the GPU benchmark (--features $feature, $target)"
# cargo prints each built program's path as JSON; the python below copies them as
# rust/<kind>-<name> (kind: lib, test, bench).
{
  if ((${#tests[@]})); then
    cargo test --release --features "$feature" --target-dir "$target" --no-run --message-format=json-render-diagnostics \
      "${tests[@]/#/--test=}"
  else
    cargo test --release --features "$feature" --target-dir "$target" --no-run --message-format=json-render-diagnostics
    cargo build --release --features "$feature" --target-dir "$target" --bench gpu --message-format=json-render-diagnostics
  fi
} | python3 -c '
import json, shutil, sys
dest = sys.argv[1]
for line in sys.stdin:
    if not line.startswith("{"):
        continue
    m = json.loads(line)
    exe = m.get("executable")
    if m.get("reason") != "compiler-artifact" or not exe or m["target"]["name"] == "header":
        continue
    kinds = m["target"]["kind"]
    kind = "bench" if "bench" in kinds else "test" if "test" in kinds else "lib"
    shutil.copy(exe, dest + "/" + kind + "-" + m["target"]["name"])
' "$bundle/rust"

if ((${#tests[@]})); then
  strip "$bundle"/rust/*
  mkdir -p "$(dirname "$output")"
  tar -czf "$output" -C "$(dirname "$bundle")" "$(basename "$bundle")"
  section "$output: ${tests[*]}, $(du -sh "$output" | cut -f1); a base for scripts/gpu-compare.sh"
  exit 0
fi

section "C API test programs ($capi)"
cmake -S capi-tests -B "$capi" -DCMAKE_BUILD_TYPE=Debug -DLODTENSOR_MEMCHECK=OFF -DLODTENSOR_BINDINGS=OFF \
  "-DLODTENSOR_CARGO_TARGET_DIR=$PWD/$target" "-DLODTENSOR_CARGO_ARGS=--features=$feature"
cmake --build "$capi" -j "$jobs"
for prog in "$capi"/test_*; do
  [[ $prog == *.static ]] || cp "$prog" "$bundle/capi/"
done
cp -P "$target"/release/liblodtensor.so* "$bundle/capi/lib/"

strip "$bundle"/rust/* "$bundle"/capi/test_* "$bundle"/capi/lib/*
mkdir -p "$(dirname "$output")"
tar -czf "$output" -C "$(dirname "$bundle")" "$(basename "$bundle")"
section "$output: $(find "$bundle" -type f | wc -l) files, $(du -sh "$output" | cut -f1); carry it to the GPU machine and run: bash scripts/gpu-run.sh $output"
