#!/usr/bin/env bash
# The `install_consumer` test: install lodtensor and use it the way a user outside this
# repository would.
#
#   install_test.sh WORK_DIR [extra cargo arguments...]
#
# 1. configure + build the root project in WORK_DIR/build (sharing the cargo target directory,
#    so cargo has nothing to rebuild), `cmake --install --prefix WORK_DIR/prefix`;
# 2. check the installed files: liblodtensor.so.<version>, the .so.<major> and .so links, the
#    SONAME, liblodtensor.a, the headers, the CMake package and the .pc file;
# 3. check a DESTDIR install;
# 4. build capi-tests/consumer with find_package(lodtensor) against the prefix (and against the
#    DESTDIR copy: the package config must be relocatable), shared and static, and run both
#    without LD_LIBRARY_PATH;
# 5. build consumer.c with plain `cc $(pkg-config ...)`, shared and static, and run both.
#
# Environment (set by capi-tests/CMakeLists.txt; defaults allow running it by hand):
#   LODTENSOR_SOURCE_DIR        repository root            (default: this script's ../)
#   LODTENSOR_CARGO_TARGET_DIR  cargo --target-dir         (default: <root>/target)
#   LODTENSOR_CARGO             cargo executable           (default: found by CMake)
#   LODTENSOR_CMAKE             cmake executable           (default: cmake)
#   CC                          C compiler for the pkg-config builds (default: cc)
set -euo pipefail

work=${1:?usage: install_test.sh WORK_DIR [cargo args...]}
shift
cargo_args=("$@")

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "${LODTENSOR_SOURCE_DIR:-$here/..}" && pwd)
target_dir=${LODTENSOR_CARGO_TARGET_DIR:-$src/target}
cmake=${LODTENSOR_CMAKE:-cmake}
cc=${CC:-cc}
# A test environment that already points at some liblodtensor would hide a missing RPATH or
# SONAME link; everything below must work without it.
unset LD_LIBRARY_PATH

step() { printf '\n=== install_consumer: %s\n' "$*"; }
fail() { printf 'install_consumer: FAIL: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || fail "$1 not found ($2)"; }
need readelf "apt-get install -y binutils"
need pkg-config "apt-get install -y pkg-config"

version=$(sed -n 's/^version[[:space:]]*=[[:space:]]*"\([0-9][0-9.]*\)".*/\1/p' "$src/Cargo.toml" | head -n1)
[[ -n $version ]] || fail "cannot read the version from $src/Cargo.toml"
major=${version%%.*}
soname=liblodtensor.so.$major

# needed FILE: the DT_NEEDED entries of FILE, one per line.
needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix

# --- 1. build and install ----------------------------------------------------------------------
step "configure and build the root project ($src)"
cargo_list=$(IFS=';'; printf '%s' "${cargo_args[*]-}")
configure=("$cmake" -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release
           "-DLODTENSOR_CARGO_TARGET_DIR=$target_dir" "-DLODTENSOR_CARGO_ARGS=$cargo_list")
[[ -n ${LODTENSOR_CARGO:-} ]] && configure+=("-DCARGO=$LODTENSOR_CARGO")
"${configure[@]}"
"$cmake" --build "$work/build"

step "cmake --install --prefix $prefix"
"$cmake" --install "$work/build" --prefix "$prefix"
# The library directory GNUInstallDirs chose (lib, lib64 or lib/<multiarch>).
libdir_rel=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$work/build/CMakeCache.txt")
incdir_rel=$(sed -n 's/^CMAKE_INSTALL_INCLUDEDIR:[A-Z]*=//p' "$work/build/CMakeCache.txt")
libdir=$prefix/$libdir_rel
incdir=$prefix/$incdir_rel

# --- 2. installed files ------------------------------------------------------------------------
step "check the installed files"
check_tree() { # check_tree LIBDIR INCDIR PREFIX_IN_PC
  local lib=$1 inc=$2 pc_prefix=$3 f
  [[ -f $lib/liblodtensor.so.$version && ! -L $lib/liblodtensor.so.$version ]] \
    || fail "$lib/liblodtensor.so.$version is missing or not a regular file"
  [[ -L $lib/$soname && $(readlink "$lib/$soname") == "liblodtensor.so.$version" ]] \
    || fail "$lib/$soname is not a symlink to liblodtensor.so.$version"
  [[ -L $lib/liblodtensor.so && $(readlink "$lib/liblodtensor.so") == "$soname" ]] \
    || fail "$lib/liblodtensor.so is not a symlink to $soname"
  [[ -f $lib/liblodtensor.a ]] || fail "$lib/liblodtensor.a is missing"
  local got_soname
  got_soname=$(readelf -d "$lib/liblodtensor.so.$version" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [[ $got_soname == "$soname" ]] || fail "SONAME is '$got_soname', expected $soname"
  [[ -f $inc/lodtensor.h ]] || fail "$inc/lodtensor.h is missing"
  for f in "$src"/include/*.h "$src"/include/*.hpp; do
    [[ -e $f ]] || continue
    cmp -s "$f" "$inc/$(basename "$f")" || fail "header $(basename "$f") not installed (or differs)"
  done
  for f in lodtensorConfig.cmake lodtensorConfigVersion.cmake; do
    [[ -f $lib/cmake/lodtensor/$f ]] || fail "$lib/cmake/lodtensor/$f is missing"
  done
  [[ -f $lib/pkgconfig/lodtensor.pc ]] || fail "$lib/pkgconfig/lodtensor.pc is missing"
  grep -qx "prefix=$pc_prefix" "$lib/pkgconfig/lodtensor.pc" \
    || fail "lodtensor.pc does not say prefix=$pc_prefix"
  grep -qx "Version: $version" "$lib/pkgconfig/lodtensor.pc" \
    || fail "lodtensor.pc does not say Version: $version"
}
check_tree "$libdir" "$incdir" "$prefix"
echo "ok: $(cd "$prefix" && find . \( -type f -o -type l \) | sort | tr '\n' ' ')"

# --- 3. DESTDIR --------------------------------------------------------------------------------
step "DESTDIR install (prefix /opt/lodtensor staged under $work/stage)"
DESTDIR=$work/stage "$cmake" --install "$work/build" --prefix /opt/lodtensor
staged=$work/stage/opt/lodtensor
check_tree "$staged/$libdir_rel" "$staged/$incdir_rel" /opt/lodtensor
echo ok

# --- 4. find_package consumer ------------------------------------------------------------------
consumer_src=$src/capi-tests/consumer
build_consumer() { # build_consumer BUILD_DIR PREFIX
  "$cmake" -S "$consumer_src" -B "$1" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$2"
  "$cmake" --build "$1"
}
check_shared_exe() { # check_shared_exe EXE LIBDIR
  needed "$1" | grep -qx "$soname" || fail "$1 does not record DT_NEEDED $soname"
  readelf -d "$1" | grep -E '\((RPATH|RUNPATH)\)' | grep -qF "$2" \
    || fail "$1 has no RPATH/RUNPATH to $2"
}
check_static_exe() { # check_static_exe EXE
  if needed "$1" | grep -q '^liblodtensor'; then
    fail "$1 needs $(needed "$1" | grep '^liblodtensor'), expected no shared lodtensor"
  fi
}

step "consumer via find_package(lodtensor 0.1), prefix $prefix"
build_consumer "$work/consumer" "$prefix"
check_shared_exe "$work/consumer/consumer_shared" "$libdir"
"$work/consumer/consumer_shared"
check_static_exe "$work/consumer/consumer_static"
"$work/consumer/consumer_static"

step "consumer via find_package, relocated tree ($staged)"
build_consumer "$work/consumer-staged" "$staged"
check_shared_exe "$work/consumer-staged/consumer_shared" "$staged/$libdir_rel"
"$work/consumer-staged/consumer_shared"

# --- 5. pkg-config consumer --------------------------------------------------------------------
export PKG_CONFIG_PATH=$libdir/pkgconfig
step "consumer via pkg-config (PKG_CONFIG_PATH=$PKG_CONFIG_PATH)"
pc_version=$(pkg-config --modversion lodtensor)
[[ $pc_version == "$version" ]] || fail "pkg-config --modversion says $pc_version, expected $version"
read -r -a cflags <<<"$(pkg-config --cflags lodtensor)"
read -r -a libs <<<"$(pkg-config --libs lodtensor)"
set -x
"$cc" "$consumer_src/consumer.c" "${cflags[@]}" "${libs[@]}" -o "$work/pc_shared"
{ set +x; } 2>/dev/null
needed "$work/pc_shared" | grep -qx "$soname" || fail "pc_shared does not record DT_NEEDED $soname"
LD_LIBRARY_PATH=$libdir "$work/pc_shared"

# Static: -llodtensor must resolve to the archive while the system libraries of Libs.private
# stay shared, hence -Bstatic around it only.
read -r -a static_libs <<<"$(pkg-config --static --libs lodtensor)"
link=()
for arg in "${static_libs[@]}"; do
  if [[ $arg == -llodtensor ]]; then
    link+=(-Wl,-Bstatic -llodtensor -Wl,-Bdynamic)
  else
    link+=("$arg")
  fi
done
set -x
"$cc" "$consumer_src/consumer.c" "${cflags[@]}" "${link[@]}" -o "$work/pc_static"
{ set +x; } 2>/dev/null
check_static_exe "$work/pc_static"
"$work/pc_static"

step "PASS"
