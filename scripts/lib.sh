# Shared by scripts/*.sh (sourced, not run): tool installation and cargo lookup.

section() { printf '\n==== %s ====\n' "$*"; }

# ensure_tools CMD:PACKAGE...  installs (apt-get) the Debian PACKAGE of every CMD not on PATH.
# A CMD starting with / is a file that must exist instead (e.g. a jar). CI machines are fresh
# Debian images where we are root; elsewhere sudo is used if present.
ensure_tools() {
  local spec cmd pkg missing=()
  for spec in "$@"; do
    cmd=${spec%%:*} pkg=${spec#*:}
    if [[ $cmd == /* ]]; then
      [[ -e $cmd ]] || missing+=("$pkg")
      continue
    fi
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  done
  # A C compiler without the C library headers cannot build anything; gcc only recommends them.
  if ! [[ -e /usr/include/stdio.h ]] && command -v dpkg >/dev/null 2>&1; then
    missing+=(libc6-dev)
  fi
  ((${#missing[@]})) || return 0
  echo "installing: ${missing[*]}"
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "error: missing ${missing[*]} and no apt-get to install them; install them by hand" >&2
    return 1
  fi
  local sudo=()
  if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || { echo "error: need root (or sudo) to install ${missing[*]}" >&2; return 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
}

# ensure_cargo: cargo on PATH; rustup puts it in ~/.cargo/bin, which non-login shells may lack.
ensure_cargo() {
  command -v cargo >/dev/null 2>&1 && return 0
  local dir
  for dir in ${CARGO_HOME:+"$CARGO_HOME/bin"} "$HOME/.cargo/bin"; do
    if [[ -x $dir/cargo ]]; then
      export PATH="$dir:$PATH"
      return 0
    fi
  done
  echo "error: cargo not found; install Rust (https://rustup.rs), at least the rust-version" \
       "that Cargo.toml names" >&2
  return 1
}

# pip_target DIR SPEC...: installs the PyPI packages SPEC into DIR (pip --target), after python3
# and pip themselves (apt-get) when they are missing.
pip_target() {
  local dir=$1 py
  shift
  py=$(command -v python3 || true)
  if [[ -z $py ]] || ! "$py" -m pip --version >/dev/null 2>&1; then
    ensure_tools python3:python3 pip3:python3-pip >&2 || return 1
    py=python3
  fi
  echo "installing $* into $dir (pip)" >&2
  PIP_BREAK_SYSTEM_PACKAGES=1 PIP_ROOT_USER_ACTION=ignore "$py" -m pip install --quiet --disable-pip-version-check \
    --target "$dir" "$@" >&2
}

# ensure_python_module DIR MODULE SPEC: MODULE importable with DIR on PYTHONPATH (the PyPI
# package SPEC, installed into DIR when python3 cannot import it).
ensure_python_module() {
  local dir=$1 module=$2 spec=$3
  PYTHONPATH="$dir${PYTHONPATH:+:$PYTHONPATH}" python3 -c "import $module" 2>/dev/null && return 0
  pip_target "$dir" "$spec"
}

# ensure_numpy DIR: NumPy, for the DLPack test against NumPy's (capi-tests/dlpack_numpy.py).
ensure_numpy() { ensure_python_module "$1" numpy 'numpy>=2.1'; }

# ensure_pyarrow DIR: pyarrow, for the Arrow test against pyarrow's (capi-tests/arrow_pyarrow.py).
# From 18 on pyarrow needs no NumPy, so pip --target adds nothing beside the NumPy already there.
ensure_pyarrow() { ensure_python_module "$1" pyarrow 'pyarrow>=18'; }

# ensure_nvrtc DIR: prints the folder holding libnvrtc.so.13 (NVIDIA's runtime CUDA compiler, which
# needs no GPU), installing PyPI's nvidia-cuda-nvrtc into DIR with pip when it is not there yet:
# the first release of CUDA 13, the oldest NVRTC the library loads, so that a kernel which only a
# later one accepts fails here (13.5 took a generic lambda in device code that 13.0.88, a GPU
# machine's toolkit, refused).
ensure_nvrtc() {
  local dir=$1 lib
  lib=$(find -L "$dir" -name 'libnvrtc.so.13*' -print -quit 2>/dev/null || true)
  if [[ -z $lib ]]; then
    pip_target "$dir" 'nvidia-cuda-nvrtc==13.0.*' || return 1
    lib=$(find -L "$dir" -name 'libnvrtc.so.13*' -print -quit)
    [[ -n $lib ]] || { echo "error: no libnvrtc.so.13 under $dir after pip install" >&2; return 1; }
  fi
  dirname "$lib"
}

# find_nvrtc: the folder of the first libnvrtc.so.13 found (LODTENSOR_NVRTC_DIR, the loader's
# cache, the CUDA toolkit, Python's nvidia-cuda-nvrtc package), or nothing. For the GPU machine,
# where nothing is installed.
find_nvrtc() {
  local dirs=() lib
  if [[ -n ${LODTENSOR_NVRTC_DIR:-} ]]; then
    echo "$LODTENSOR_NVRTC_DIR"
    return
  fi
  lib=$(ldconfig -p 2>/dev/null | awk '/libnvrtc\.so\.13/ { print $NF; exit }')
  [[ -n $lib ]] && { dirname "$lib"; return; }
  dirs=(/usr/local/cuda*/lib64 /usr/local/cuda*/targets/x86_64-linux/lib)
  if command -v python3 >/dev/null 2>&1; then
    while IFS= read -r d; do dirs+=("$d/nvidia"); done < <(python3 -c 'import site; print("\n".join(site.getsitepackages()))' 2>/dev/null)
  fi
  lib=$(find -L "${dirs[@]}" -name 'libnvrtc.so.13*' -print -quit 2>/dev/null)
  [[ -n $lib ]] && dirname "$lib"
}
