#!/usr/bin/env bash
# The main job from scratch: installs what is needed, builds, and runs
# mayura-run with the arguments given (as root: the engine needs it).
#   ./scripts/mayura-run.sh -- sh -c 'echo hello from $(hostname)'
set -euo pipefail
. "$(dirname "$0")/as_root.sh"
here=$(cd "$(dirname "$0")" && pwd)
"$here/deps.sh"
"$here/build.sh" "$here/../build" >/dev/null
exec "$here/../build/tools/mayura-run" "$@"
