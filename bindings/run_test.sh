#!/usr/bin/env bash
# The `bindings.*` CTest tests (see bindings/bindings.cmake, which sets the environment below).
# Every language uses the library the way a user does: installed with `cmake --install` into a
# scratch prefix, found through pkg-config (C++, Go) or the library path (Java).
#
#   run_test.sh install        cmake --install the library into $PREFIX (the fixture of the others)
#   run_test.sh cpp            compile capi-tests/test_hpp_*.cpp against the installed headers
#                              (pkg-config) and run them
#   run_test.sh cpp-readme F   README.md's C++ snippet F built by a CMake project with
#                              find_package(lodtensor) (shared and static) and with pkg-config, run
#   run_test.sh go             gofmt check + `go test` of bindings/go against the installed library
#   run_test.sh go-readme F    README.md's Go program F as a module using bindings/go: `go run`
#   run_test.sh java           the JUnit 5 tests (console launcher) against the installed library
#   run_test.sh java-readme F  README.md's Java program F, run in source-file mode
#
# Environment: SRC (repository root), PREFIX, WORK (scratch dir), BUILD (the library's CMake build
# dir, for `install`), LIBDIR_REL (lib dir inside PREFIX), CMAKE, CXX, GO, JAVA, JUNIT_JAR,
# JNA_JAR, JAVA_MAIN_JAR, JAVA_TEST_JAR; EXPECT (what each README snippet prints).
set -euo pipefail
mode=${1:?usage: run_test.sh MODE [FILE]}
libdir=$PREFIX/$LIBDIR_REL
# Nothing may come from a library path set by the caller: RPATHs, pkg-config and
# jna.library.path must be enough.
unset LD_LIBRARY_PATH
export PKG_CONFIG_PATH=$libdir/pkgconfig

fail() { printf 'run_test.sh %s: FAIL: %s\n' "$mode" "$*" >&2; exit 1; }

# expect_output CMD...: runs CMD, which must succeed and print exactly the line $EXPECT.
expect_output() {
  local out
  out=$("$@") || fail "exit status $?"
  printf '%s\n' "$out"
  [[ $out == "$EXPECT" ]] || fail "printed \"$out\", expected \"$EXPECT\" (README.md)"
}

go_env() {
  # No downloads (GOTOOLCHAIN, GOPROXY) and caches in the build tree (HOME may not be writable).
  export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-mod=mod GOTELEMETRY=off
  export GOCACHE=$WORK/gocache GOPATH=$WORK/gopath
  export CGO_LDFLAGS="-Wl,-rpath,$libdir"
}

# cgo_strict: check every pointer handed to C against cgo's rules (a run-time setting up to
# Go 1.20, a build-time experiment since 1.21).
cgo_strict() {
  case $("$GO" env GOVERSION) in
    go1.1[0-9]* | go1.20*) export GODEBUG=cgocheck=2 ;;
    *) export GOEXPERIMENT=cgocheck2 ;;
  esac
}

cxx_build() { # cxx_build SOURCE OUTPUT
  read -r -a cflags <<<"$(pkg-config --cflags lodtensor)"
  read -r -a libs <<<"$(pkg-config --libs lodtensor)"
  "$CXX" -std=c++17 -Wall -Wextra -Wpedantic -Werror -I"$SRC/capi-tests" "${cflags[@]}" "$1" "${libs[@]}" \
    -Wl,-rpath,"$libdir" -o "$2"
}

case $mode in
install)
  rm -rf "$PREFIX"
  "$CMAKE" --install "$BUILD" --prefix "$PREFIX"
  [[ -f $PREFIX/include/lodtensor.hpp ]] || fail "lodtensor.hpp was not installed"
  [[ -f $libdir/pkgconfig/lodtensor.pc ]] || fail "lodtensor.pc was not installed"
  ;;
cpp)
  mkdir -p "$WORK/cpp"
  for src in "$SRC"/capi-tests/test_hpp_*.cpp; do
    exe=$WORK/cpp/$(basename "$src" .cpp)
    cxx_build "$src" "$exe"
    "$exe"
  done
  ;;
cpp-readme)
  # Through the CMake package (find_package), shared and static.
  rm -rf "$WORK/cpp-consumer"
  "$CMAKE" -S "$SRC/bindings/cpp" -B "$WORK/cpp-consumer" -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_PREFIX_PATH=$PREFIX" "-DCMAKE_CXX_COMPILER=$CXX" "-DSNIPPET=${2:?snippet}"
  "$CMAKE" --build "$WORK/cpp-consumer"
  expect_output "$WORK/cpp-consumer/readme_shared"
  expect_output "$WORK/cpp-consumer/readme_static"
  # Through pkg-config.
  cxx_build "$2" "$WORK/readme_cpp"
  expect_output "$WORK/readme_cpp"
  ;;
go)
  go_env
  cgo_strict
  cd "$SRC/bindings/go"
  unformatted=$("$("$GO" env GOROOT)/bin/gofmt" -l .)
  [[ -z $unformatted ]] || fail "not gofmt-formatted: $unformatted"
  "$GO" version
  "$GO" vet ./...
  "$GO" test -count=1 -v ./...
  ;;
go-readme)
  go_env
  dir=$WORK/go-readme
  rm -rf "$dir"
  mkdir -p "$dir"
  cp "${2:?snippet}" "$dir/main.go"
  cat >"$dir/go.mod" <<EOF
module readme

go 1.19

require lodtensor.dev/lodtensor v0.0.0

replace lodtensor.dev/lodtensor => $SRC/bindings/go
EOF
  cd "$dir"
  expect_output "$GO" run .
  ;;
java)
  "$JAVA" -Djna.library.path="$libdir" -jar "$JUNIT_JAR" \
    -cp "$JAVA_MAIN_JAR:$JAVA_TEST_JAR:$JNA_JAR" \
    --scan-classpath "$JAVA_TEST_JAR" --fail-if-no-tests --disable-banner --details=tree
  ;;
java-readme)
  # Source-file mode (JEP 330): the snippet is compiled and run as it is in the README.
  expect_output "$JAVA" -Djna.library.path="$libdir" -cp "$JAVA_MAIN_JAR:$JNA_JAR" "${2:?snippet}"
  ;;
*)
  fail "unknown mode"
  ;;
esac
