#!/usr/bin/env bash
# Checks that every C and C++ file of the repository follows .clang-format
# (clang-format from Debian's packages), naming each file that does not;
# with --fix, formats them in place instead.
#   scripts/format.sh [--fix]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
case "${1:-}" in
  '' | --fix) ;;
  *) echo "format.sh: the one option is --fix, not '$1'" >&2; exit 2 ;;
esac
command -v clang-format >/dev/null || "$root/scripts/deps.sh" fuzz
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.c' '*.h')
if [ "${1:-}" = --fix ]; then
  clang-format -i "${files[@]}"
  echo "format.sh: formatted ${#files[@]} files"
  exit 0
fi
# One clang-format for all of them (one per file took most of a minute):
# each violation it reports starts with its file's name.
unformatted=()
if ! report=$(clang-format --dry-run -Werror "${files[@]}" 2>&1); then
  mapfile -t unformatted < <(sed -nE 's/^(.+):[0-9]+:[0-9]+: error: .*/\1/p' <<<"$report" | sort -u)
  # (a failure that names no file, clang-format's own, is shown as it is)
  ((${#unformatted[@]})) || { echo "$report" >&2; exit 1; }
fi
if ((${#unformatted[@]})); then
  printf 'format.sh: not as .clang-format says (scripts/format.sh --fix formats them):\n' >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
echo "format.sh: all ${#files[@]} files follow .clang-format"
