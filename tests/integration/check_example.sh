#!/usr/bin/env bash
# Runs the README example against the engine's default places and checks its
# output and that it left nothing behind.
set -euo pipefail
out=$("$1")
[ "$out" = "0 42" ] || { echo "unexpected output: $out" >&2; exit 1; }
root=$(awk '$9 == "cgroup2" && $4 == "/" {print $5; exit}' /proc/self/mountinfo)/mayura
if [ -d "$root" ] && find "$root" -mindepth 1 -maxdepth 1 -type d | grep -q .; then
  echo "cgroups left under $root" >&2; exit 1
fi
if [ -d /run/mayura/slots ] && find /run/mayura/slots -type f -size +0 | grep -q .; then
  echo "records left in /run/mayura/slots" >&2; exit 1
fi
echo "1 passed, 0 failed"
