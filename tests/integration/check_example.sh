#!/usr/bin/env bash
# Runs the README example against the engine's default places and checks its
# output and that it left nothing behind there (default_places.sh).
#   check_example.sh EXAMPLE MAYURA_RUN
set -euo pipefail
. "$(dirname "$0")/default_places.sh"
out=$("$1")
[ "$out" = "0 42" ] || { echo "unexpected output: $out" >&2; exit 1; }
expect_nothing_left_in_default_places "$2"
echo "1 passed, 0 failed"
