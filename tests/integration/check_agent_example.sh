#!/usr/bin/env bash
# Runs the README's agent example and checks that the model's two calls
# worked: the file written, the command's output back.
set -euo pipefail
out=$("$1")
echo "$out"
grep -q '^workspace_write -> {"bytes":12,"path":"main.py"}$' <<<"$out"
grep -q '"exitCode":0' <<<"$out"
grep -q '"stdout":"42\\n"' <<<"$out"
if [ -e /run/mayura ]; then echo "state directory left: /run/mayura" >&2; exit 1; fi
