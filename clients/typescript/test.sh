#!/usr/bin/env bash
# The TypeScript provider's tests, against the mayurad of a build: installs
# its dev tools (typescript, @types/node, the MCP SDK) from npm, builds it,
# and runs Node's own test runner over test/ (a real daemon on a scratch
# socket, as root) on the machine's Node, then again on Debian 12's own
# Node 18, the oldest the package supports (node18.sh unpacks it into
# BUILD-DIR/node18 the first time). Fails if either run fails.
#   test.sh [BUILD-DIR]      (default: the repository's build/)
set -euo pipefail
. "$(dirname "$0")/../../scripts/as_root.sh"
here=$(cd "$(dirname "$0")" && pwd)
# (resolved before the cd below, so a relative BUILD-DIR means the caller's)
build=$(cd "${1:-$here/../../build}" && pwd)
cd "$here"
npm ci --no-audit --no-fund --silent
# (compiled afresh: a test deleted from test/ must not run on from an old build)
rm -rf build-test
"$here/node18.sh" "$build/node18"
# What the tests run: the daemon, the launcher (mayura-run mcp) and the C++
# desktop tests' X client.
export MAYURAD=$build/tools/mayurad
export MAYURA_RUN=$build/tools/mayura-run
export MAYURA_X_CLIENT=$build/tests/x_client

failed=()
echo "== the tests on the machine's Node $(node --version)"
npm test || failed+=("Node $(node --version)")
echo "== the tests on Debian's Node 18"
node18=$build/node18/usr/bin/node
libdir=$(cat "$build/node18/libdir")
export LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
version=$("$node18" --version)
"$node18" --test build-test/test/*.test.js || failed+=("Node $version")
if ((${#failed[@]})); then
  echo "test.sh: the TypeScript tests failed on ${failed[*]}" >&2
  exit 1
fi
