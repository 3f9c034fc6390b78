#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy's checks, from Debian's clang-tidy) over every
# C++ file the build compiles, in parallel, and fails on any finding.
#   scripts/tidy.sh [BUILD_DIR] [--record]     (a built tree; default: build)
# Over the whole tree that is 13 to 23 minutes of two cores, most of it
# clang-tidy walking Boost's and GoogleTest's declarations. So a unit that
# reads exactly as it did when it was last checked clean is not checked
# again: scripts/tidy_keys.py keys each unit by clang-tidy's version, the
# configs, its flags and its preprocessed text (every header included), and
# scripts/tidy-clean.keys lists the keys checked clean. Every other unit is
# checked now. --record rewrites that list with this tree's clean units.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
record=false
for arg in "$@"; do
  case $arg in
    --record) record=true ;;
    -*) echo "tidy.sh: the one option is --record, not '$arg'" >&2; exit 2 ;;
    *) build=$(cd "$arg" && pwd) ;;
  esac
done
command -v clang-tidy >/dev/null || "$root/scripts/deps.sh" fuzz
[ -f "$build/compile_commands.json" ] || { echo "tidy.sh: no $build/compile_commands.json: build first (scripts/build.sh)" >&2; exit 2; }
clean=$root/scripts/tidy-clean.keys
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/scripts/tidy_keys.py" "$build" "$root" "$work" >"$work/keys"
touch "$clean"
awk 'FILENAME == ARGV[1] { seen[$1] = 1; next } !($1 in seen) { print $2 }' "$clean" "$work/keys" >"$work/todo"
echo "tidy.sh: $(wc -l <"$work/keys") units, $(($(wc -l <"$work/keys") - $(wc -l <"$work/todo")))" \
  "unchanged since they were checked clean (scripts/tidy-clean.keys), $(wc -l <"$work/todo") to check"
touch "$work/passed"
status=0
if [ -s "$work/todo" ]; then
  # GCC's own warning options mean nothing to clang: they are not findings.
  (cd "$root" && xargs -a "$work/todo" -P "$(nproc)" -I{} sh -c \
    'clang-tidy -p "$1" --quiet --extra-arg=-Wno-unknown-warning-option \
       --extra-arg=-Wno-unused-command-line-argument "$2" && echo "$2" >>"$3"' _ "$work" {} "$work/passed") || status=$?
fi
if $record; then
  awk 'FILENAME == ARGV[1] { seen[$1] = 1; next } FILENAME == ARGV[2] { ok[$1] = 1; next }
       ($1 in seen) || ($2 in ok)' "$clean" "$work/passed" "$work/keys" | sort -k2 >"$work/clean"
  mv "$work/clean" "$clean"
  echo "tidy.sh: $(wc -l <"$clean") units recorded clean in scripts/tidy-clean.keys"
fi
if [ "$status" != 0 ]; then
  echo "tidy.sh: findings in $(($(wc -l <"$work/todo") - $(wc -l <"$work/passed"))) units (above)" >&2
  exit 1
fi
echo "tidy.sh: no findings"
