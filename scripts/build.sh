#!/usr/bin/env bash
# Builds mayura into a directory: build.sh DIR [CMAKE OPTIONS...]
# Optimized, with line tables only (-g1): a backtrace names files and
# lines, and the build takes a quarter less time than with full debug
# information (Beast's and Asio's templates make most of it). For a
# debugger's view, pass -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g". One
# compiler more than there are cores keeps them busy while another writes
# its object or links. Sources are compiled in batches (MAYURA_UNITY: a
# third less cpu, most of a compile being Boost's and GoogleTest's
# headers); pass -DMAYURA_UNITY=OFF for a tree rebuilt a file at a time.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build}
shift || true
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMAYURA_WERROR=ON -DMAYURA_UNITY=ON \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" "$@" >/dev/null
cmake --build "$dir" -j"$(($(nproc) + 1))"
