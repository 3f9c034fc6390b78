#!/usr/bin/env bash
# The benchmarks, side by side with the anchors (bubblewrap, crun), as root.
#   sudo ./scripts/bench.sh [ITERATIONS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
"$here/deps.sh"
"$here/build.sh" "$here/../build" -DCMAKE_BUILD_TYPE=Release >/dev/null
exec "$here/../build/bench/bench_sandbox" "${1:-200}" "$here/../build/tools/mayura-run"
