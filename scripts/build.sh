#!/usr/bin/env bash
# Builds mayura into a directory: build.sh DIR [CMAKE OPTIONS...]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMAYURA_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
