#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy's checks, from Debian's clang-tidy) over every
# C++ file the build compiles, in parallel, and fails on any finding.
#   scripts/tidy.sh [BUILD_DIR]     (a configured build; default: build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
command -v clang-tidy >/dev/null || "$root/scripts/deps.sh" fuzz
[ -f "$build/compile_commands.json" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
# The translation units of the tree (not the tests' generated sources).
mapfile -t files < <(python3 -c '
import json, sys
seen = set()
for e in json.load(open(sys.argv[1])):
    f = e["file"]
    if f.startswith(sys.argv[2] + "/") and "/build" not in f[len(sys.argv[2]):] and f not in seen:
        seen.add(f); print(f)
' "$build/compile_commands.json" "$root")
echo "tidy.sh: ${#files[@]} files"
# GCC's own warning options mean nothing to clang: they are not findings.
printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 4 \
  clang-tidy -p "$build" --quiet --extra-arg=-Wno-unknown-warning-option --extra-arg=-Wno-unused-command-line-argument
echo "tidy.sh: no findings"
