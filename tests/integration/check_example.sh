#!/usr/bin/env bash
# Runs the README example against the engine's default places and checks its
# output and that it left nothing behind.
set -euo pipefail
out=$("$1")
[ "$out" = "0 42" ] || { echo "unexpected output: $out" >&2; exit 1; }
# The engine removes its own places (cgroup root, state directory) when it
# goes and nothing is left in them.
root=$(awk '$9 == "cgroup2" && $4 == "/" {print $5; exit}' /proc/self/mountinfo)/mayura
if [ -e "$root" ]; then echo "cgroup left: $root" >&2; exit 1; fi
if [ -e /run/mayura ]; then echo "state directory left: /run/mayura" >&2; exit 1; fi
echo "1 passed, 0 failed"
