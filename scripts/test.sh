#!/usr/bin/env bash
# Runs every test: the Rust tests (plainly, then with guard pages: LODTENSOR_GUARD_PAGES=1; the
# hostile-input test also under valgrind), then the C/C++ API tests, the valgrind runs, the
# static-link, exported-symbols and install/consumer checks through CTest:
#   bash scripts/test.sh
# Installs cmake, g++, make, valgrind, pkg-config and binutils with apt-get when they are
# missing, and for the bindings' tests golang-go, default-jdk-headless, libjna-java and junit5
# (LODTENSOR_BINDINGS=OFF skips those tests and installs). JOBS (default: number of cores) sets
# build and test parallelism.
# Step 5 builds the `cuda` feature (in target/cuda, so the default library stays as it is) and
# compiles every CUDA kernel with NVRTC, which needs no GPU: libnvrtc.so.13 comes from PyPI's
# nvidia-cuda-nvrtc, installed into build/nvrtc when missing. Step 6 runs the GPU tests
# (tests/cuda*.rs), the C API tests and the bindings' tests against the `cuda-emulator` build
# (target/emu, build/capi-emu): the CUDA backend and its kernels, run on the host (again, but for
# the bindings', with guard pages and each launch's blocks and threads in a shuffled order, and
# 100000 hostile-input calls under valgrind too, and the GPU tests once more under the emulator's
# race check, ThreadSanitizer, in target/tsan); then it packs the bundle for GPU machines without Rust (scripts/gpu-bundle.sh)
# over the emulator and runs some of its programs with scripts/gpu-run.sh.
# LODTENSOR_SKIP_CUDA=1 skips steps 5 and 6.
# A failing test suite does not stop the ones after it (CI shows every failure at once); the
# script exits non-zero if any failed. A failing build does stop it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh
jobs=${JOBS:-$(nproc)}

section "1/6 tools"
# The bindings' toolchains (Go with cgo, a JDK, JNA and the JUnit 5 console launcher) too, unless
# LODTENSOR_BINDINGS=OFF; one apt-get run installs whatever is missing.
bindings=${LODTENSOR_BINDINGS:-ON}
binding_tools=()
if [[ $bindings != OFF ]]; then
  binding_tools=(go:golang-go javac:default-jdk-headless /usr/share/java/jna.jar:libjna-java
                 /usr/share/java/junit-platform-console-standalone.jar:junit5)
fi
ensure_tools cmake:cmake cc:gcc c++:g++ make:make valgrind:valgrind pkg-config:pkg-config \
             nm:binutils readelf:binutils "${binding_tools[@]}"
ensure_cargo
echo "$(cmake --version | head -n1); $(c++ --version | head -n1); $(valgrind --version); $(cargo --version)"
[[ $bindings == OFF ]] || echo "$(go version); $(javac -version 2>&1)"

# --release: the same build CMake's cargo step uses, so the library is compiled once.
section "2/6 Rust tests (cargo test --release)"
failed=()
# Outputs that kernels overwrite are allocated uninitialised; poisoned here, so a test that reads a
# byte no kernel wrote sees 0xA5 bytes rather than whatever the heap held.
LODTENSOR_POISON_UNINIT=1 cargo test --release --no-fail-fast || failed+=("Rust tests (cargo test --release)")
# Again with every block against a guard page, after its end or before its start by turns
# (src/memory.rs, guard_pages): a kernel that reads or writes even one byte past a buffer, or
# before it, faults here, where a size-class block or a neighbour would hide it. The
# tests of what the block caches keep skip themselves (the caches are off).
LODTENSOR_GUARD_PAGES=1 LODTENSOR_POISON_UNINIT=1 cargo test --release --no-fail-fast ||
  failed+=("Rust tests with guard pages (LODTENSOR_GUARD_PAGES=1)")
# The hostile-input test again under valgrind (installed above): the kernels' unsafe code (SIMD,
# raw copies) on inputs of every shape must not touch memory it does not own. Cargo runs the test
# program through CARGO_TARGET_<host>_RUNNER.
runner="CARGO_TARGET_$(rustc -vV | sed -n 's/^host: //p' | tr 'a-z.-' 'A-Z__')_RUNNER"
valgrind_runner="$runner=valgrind -q --error-exitcode=9"
env "$valgrind_runner" cargo test --release --test hostile_inputs || failed+=("hostile inputs under valgrind")

section "3/6 build the C API tests (cmake, build/capi)"
# NumPy and pyarrow, for the DLPack test against NumPy's (capi-tests/dlpack_numpy.py) and the
# Arrow test against pyarrow's (capi-tests/arrow_pyarrow.py), into build/python.
ensure_numpy build/python || failed+=("NumPy (pip install numpy) could not be installed")
ensure_pyarrow build/python || failed+=("pyarrow (pip install pyarrow) could not be installed")
export PYTHONPATH="$PWD/build/python${PYTHONPATH:+:$PYTHONPATH}" LODTENSOR_REQUIRE_NUMPY=1 LODTENSOR_REQUIRE_PYARROW=1
cmake -S capi-tests -B build/capi -DCMAKE_BUILD_TYPE=Debug "-DLODTENSOR_BINDINGS=$bindings"
cmake --build build/capi -j "$jobs"

section "4/6 run the C API tests (ctest)"
ctest --test-dir build/capi --output-on-failure -j "$jobs" || failed+=("C API tests (ctest)")

section "5/6 CUDA: cargo build --features cuda, NVRTC compile of every kernel (no GPU needed)"
if [[ ${LODTENSOR_SKIP_CUDA:-0} == 1 ]]; then
  echo "skipped (LODTENSOR_SKIP_CUDA=1)"
elif nvrtc_dir=$(ensure_nvrtc build/nvrtc); then
  echo "NVRTC: $nvrtc_dir"
  # GPU tests in tests/cuda.rs report that they were skipped where no device is found.
  if cargo build --release --features cuda --target-dir target/cuda; then
    LD_LIBRARY_PATH="$nvrtc_dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" LODTENSOR_REQUIRE_NVRTC=1 \
      cargo test --release --features cuda --target-dir target/cuda --lib --test cuda --test header \
      -- --nocapture || failed+=("CUDA build tests and NVRTC kernel check")
  else
    failed+=("CUDA build (cargo build --release --features cuda)")
  fi
else
  failed+=("CUDA: NVRTC (pip install nvidia-cuda-nvrtc) could not be installed")
fi

section "6/6 CUDA emulator: GPU tests and C API tests on emulated devices (target/emu, build/capi-emu)"
if [[ ${LODTENSOR_SKIP_CUDA:-0} == 1 ]]; then
  echo "skipped (LODTENSOR_SKIP_CUDA=1)"
else
  gpu_tests=()
  for f in tests/cuda*.rs; do gpu_tests+=(--test "$(basename "$f" .rs)"); done
  LODTENSOR_POISON_UNINIT=1 LODTENSOR_REQUIRE_GPU=1 cargo test --release --features cuda-emulator --target-dir target/emu --no-fail-fast \
    --lib "${gpu_tests[@]}" || failed+=("GPU tests on the CUDA emulator")
  # Again with guard pages: each emulated device block ends where its request does at a page that
  # faults on access, or starts right after one, so a kernel's one word past a buffer, or before
  # it, stops the test. And each launch runs its blocks and threads in a shuffled order, as a GPU
  # may: a kernel that needs one block to finish before another, or a thread to see a later one's
  # write without a barrier, fails. Grid-stride launches get 3 blocks at most, so each block loops
  # over several tiles, rows or runs of items, as on a GPU only at sizes no test reaches.
  LODTENSOR_GUARD_PAGES=1 LODTENSOR_EMULATOR_SHUFFLE=1 LODTENSOR_POISON_UNINIT=1 LODTENSOR_REQUIRE_GPU=1 \
    cargo test --release --features cuda-emulator --target-dir target/emu --no-fail-fast --lib "${gpu_tests[@]}" ||
    failed+=("GPU tests on the CUDA emulator with guard pages and shuffled launches")
  # The emulated kernels (C++ on the host) on hostile inputs under valgrind: an index outside an
  # allocation there is one on a GPU. (The calls on cuda:0 only: those over mixed places add no
  # kernel of their own.)
  env "$valgrind_runner" HOSTILE_CASES=100000 LODTENSOR_REQUIRE_GPU=1 cargo test --release --features cuda-emulator \
    --target-dir target/emu --test cuda_hostile_inputs -- --exact gpu_hostile_inputs_give_the_cpu_outcome ||
    failed+=("device hostile inputs under valgrind (emulator)")
  # The race check: the GPU tests again with the emulator built with ThreadSanitizer (target/tsan,
  # LODTENSOR_EMULATOR_TSAN=1; see launch.cpp): two threads of a block that touch one word between
  # two barriers, or two threads of two blocks that touch one word, one of them writing and not
  # both atomically, fail the run whatever order they ran in. Shuffled, for the 3-block grids: a
  # block then goes on to a second tile, row or run of items, where a missing barrier lets it
  # overwrite shared memory that its other threads still read, and each launch draws its block
  # order anew, which puts each pair of blocks on the check's two sets of fibers in most launches.
  # libtsan is preloaded so that it comes before the C library whose calls it intercepts. The
  # tests' largest cases shrink here (tests/cuda_common, race_check), the check costing tens of
  # times each access.
  # cuda_allocation_failure is left out: it runs the kernels of the other tests, only with
  # allocations refused, so it adds nothing for the check but four minutes.
  race_tests=()
  for f in tests/cuda*.rs; do
    [[ $f == tests/cuda_allocation_failure.rs ]] || race_tests+=(--test "$(basename "$f" .rs)")
  done
  env "$runner=env LD_PRELOAD=$(c++ -print-file-name=libtsan.so)" LODTENSOR_EMULATOR_TSAN=1 LODTENSOR_EMULATOR_SHUFFLE=1 \
    LODTENSOR_REQUIRE_GPU=1 cargo test --release --features cuda-emulator --target-dir target/tsan --no-fail-fast \
    --lib "${race_tests[@]}" || failed+=("GPU tests on the CUDA emulator under the race check (ThreadSanitizer)")
  # The C tests, and the C++, Go and Java bindings' tests, see two usable devices here, so their
  # CUDA branches run.
  if cmake -S capi-tests -B build/capi-emu -DCMAKE_BUILD_TYPE=Debug -DLODTENSOR_MEMCHECK=OFF "-DLODTENSOR_BINDINGS=$bindings" \
       "-DLODTENSOR_CARGO_TARGET_DIR=$PWD/target/emu" "-DLODTENSOR_CARGO_ARGS=--features=cuda-emulator" &&
     cmake --build build/capi-emu -j "$jobs"; then
    ctest --test-dir build/capi-emu --output-on-failure -j "$jobs" -E '^(install_consumer|symbols)' ||
      failed+=("C API tests on the CUDA emulator")
    # And with guard pages and shuffled launches, but for the tests of what the block caches keep
    # (the caches are off) and the bindings'.
    LODTENSOR_GUARD_PAGES=1 LODTENSOR_EMULATOR_SHUFFLE=1 LODTENSOR_POISON_UNINIT=1 ctest --test-dir build/capi-emu \
      --output-on-failure -j "$jobs" -LE bindings -E '^(install_consumer|symbols|(static\.)?test_(cuda_memory|host_cache))$' ||
      failed+=("C API tests on the CUDA emulator with guard pages and shuffled launches")
  else
    failed+=("C API tests on the CUDA emulator (build)")
  fi
  # The bundle for GPU machines without Rust (scripts/gpu-bundle.sh, scripts/gpu-run.sh), made
  # over the emulator, unpacked and some of its programs run (the kernels' load, cuda_memory), so
  # that the scripts keep up with the tree (the whole bundle's tests are the ones above).
  if FEATURE=cuda-emulator bash scripts/gpu-bundle.sh; then
    GPU_RUN_FILTER='cuda_memory|kernel load' GPU_RUN_BENCH=0 bash scripts/gpu-run.sh ||
      failed+=("GPU bundle run (emulator)")
  else
    failed+=("GPU bundle (scripts/gpu-bundle.sh, emulator)")
  fi
fi

if ((${#failed[@]})); then
  printf -v list '%s; ' "${failed[@]}"
  section "FAILED: ${list%; }"
  exit 1
fi
section "all tests passed"
