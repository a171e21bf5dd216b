#!/usr/bin/env bash
# Runs the library's host code under Miri, the Rust interpreter that stops at undefined behaviour
# (out-of-bounds or unaligned accesses, reads of uninitialized memory, aliasing that breaks the
# borrow rules, data races), over the tests that fit its speed:
#   bash scripts/miri.sh [TEST...]
# TEST is an integration test (tests/TEST.rs) or `lib` (the unit tests); the default is the list
# below. Each test is run alone, so one that runs past MIRI_TIMEOUT seconds (default 150) is
# listed as slow and the rest go on (about a sixth of them are, at the default). Needs the nightly
# toolchain's miri component (installed with rustup when missing). Not part of scripts/test.sh:
# the run takes two to three hours on 2 cores.
#
# The interpreter runs this code thousands of times slower than a release build, so the tests
# shrink under it: randomized tests run a fiftieth of their rounds (tests/common `rounds`),
# proptest 4 cases, the hostile-input test 3000 calls. It runs the code paths of the x86-64
# baseline (no AVX2 or AVX-512 kernels: the interpreter reports only the features the build
# enables), on a pool of 2 threads (few test inputs reach the size that kernels split). Leaks are
# not reported: the tests hand exports to the C interface's release, which valgrind checks in the
# C API tests, and leak some 'static counters on purpose. Tree Borrows is the aliasing model
# (Stacked Borrows flags a known pattern inside crossbeam-epoch, under rayon), with permissive
# provenance for the same reason. Floating-point results are deterministic
# (-Zmiri-deterministic-floats): by default Miri adds a random rounding error to each call of
# `exp`, `ln`, `powi` and the like, which the library allows for (it never trusts `powi` to be
# exact), but the tests compare the decoder against an exhaustive search made of the same calls,
# bit for bit. Impossible sizes (the tests that ask for 2^62 bytes) stop Miri
# ("resource exhaustion"), where a native build fails the allocation.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
ensure_cargo

if ! cargo +nightly miri --version >/dev/null 2>&1; then
  section "installing nightly with miri"
  rustup toolchain install nightly --profile minimal --component miri,rust-src || exit 1
fi

tests=("$@")
((${#tests[@]})) || tests=(lib spec_lod dlpack arrow paddle_format tensor_ops sequence_misc tensor_array
  sequence_pad_pool sequence_expand_scatter scatter_rows beam_search hostile_inputs)
timeout_s=${MIRI_TIMEOUT:-150}
export MIRIFLAGS="-Zmiri-tree-borrows -Zmiri-permissive-provenance -Zmiri-disable-isolation -Zmiri-ignore-leaks -Zmiri-deterministic-floats"
export PROPTEST_CASES=${PROPTEST_CASES:-4} HOSTILE_CASES=${HOSTILE_CASES:-3000} LODTENSOR_NUM_THREADS=2

failed=() slow=()
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for t in "${tests[@]}"; do
  if [[ $t == lib ]]; then target=(--lib); else target=(--test "$t"); fi
  section "miri: $t"
  # Tests that touch the OS beyond the interpreter's reach: mmap'd guard pages and huge-page
  # advice, the kernel cache's files.
  names=$(cargo +nightly miri test "${target[@]}" -- --list 2>/dev/null | sed -n 's/: test$//p' |
    grep -v -E 'memory::pages|large_lists_are_advised|kernel_cache')
  for name in $names; do
    timeout "$timeout_s" cargo +nightly miri test -q "${target[@]}" -- --exact "$name" >"$log" 2>&1
    case $? in
      0) echo "ok      $t $name" ;;
      124) echo "slow    $t $name (past ${timeout_s} s)"; slow+=("$t $name") ;;
      *) echo "FAILED  $t $name"; cat "$log"; failed+=("$t $name") ;;
    esac
  done
done
section "miri: ${#failed[@]} failed, ${#slow[@]} past the time limit"
for f in "${failed[@]}"; do echo "  failed: $f"; done
for s in "${slow[@]}"; do echo "  slow: $s"; done
((${#failed[@]} == 0))
