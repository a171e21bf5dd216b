#!/usr/bin/env bash
# Builds lodtensor and the C examples, then runs examples-c/quickstart.c:
#   bash scripts/example.sh
# Installs cmake, a C compiler, make and pkg-config with apt-get when they are missing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/lib.sh

section "tools"
ensure_tools cmake:cmake cc:gcc make:make pkg-config:pkg-config
ensure_cargo
echo "$(cmake --version | head -n1); $(cc --version | head -n1); $(cargo --version)"

section "build (cargo build --release + examples-c)"
cmake -S examples-c -B build/examples -DCMAKE_BUILD_TYPE=Release
cmake --build build/examples -j "$(nproc)"

section "run build/examples/quickstart"
if [[ ! -x build/examples/quickstart ]]; then
  echo "error: build/examples/quickstart was not built (is examples-c/quickstart.c missing?)" >&2
  exit 1
fi
build/examples/quickstart
