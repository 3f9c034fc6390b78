#!/usr/bin/env bash
# Runs the README's agent example and checks that the model's two calls
# worked: the file written, the command's output back.
# (and that it left nothing in the default places: default_places.sh)
#   check_agent_example.sh EXAMPLE MAYURA_RUN
set -euo pipefail
. "$(dirname "$0")/default_places.sh"
out=$("$1")
echo "$out"
grep -q '^workspace_write -> {"bytes":12,"path":"main.py"}$' <<<"$out"
grep -q '"exitCode":0' <<<"$out"
grep -q '"stdout":"42\\n"' <<<"$out"
expect_nothing_left_in_default_places "$2"
