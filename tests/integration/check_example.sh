#!/usr/bin/env bash
# Runs the README example against the engine's default places and checks its
# output and that it left nothing behind.
#   check_example.sh EXAMPLE MAYURA_RUN
set -euo pipefail
out=$("$1")
[ "$out" = "0 42" ] || { echo "unexpected output: $out" >&2; exit 1; }
# The engine removes its own places (cgroup root, state directory) when it
# goes and nothing is left in them. Where its cgroup root is, the engine
# itself says (it depends on the host's layout).
root=$("$2" doctor | sed -n 's/^sandboxes under \([^ ]*\) .*/\1/p')
[ -n "$root" ] || { echo "mayura-run doctor did not say where sandboxes' cgroups go" >&2; exit 1; }
if [ -e "$root" ]; then echo "cgroup left: $root" >&2; exit 1; fi
if [ -e /run/mayura ]; then echo "state directory left: /run/mayura" >&2; exit 1; fi
echo "1 passed, 0 failed"
