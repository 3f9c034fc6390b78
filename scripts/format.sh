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
unformatted=()
for f in "${files[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || unformatted+=("$f")
done
if ((${#unformatted[@]})); then
  printf 'format.sh: not as .clang-format says (scripts/format.sh --fix formats them):\n' >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
echo "format.sh: all ${#files[@]} files follow .clang-format"
