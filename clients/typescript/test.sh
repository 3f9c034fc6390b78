#!/usr/bin/env bash
# The TypeScript provider's tests, against the mayurad of a build: installs
# its dev tools (typescript, @types/node) from npm, builds it, runs Node's own
# test runner over test/ (a real daemon on a scratch socket, as root).
#   test.sh [BUILD-DIR]      (default: the repository's build/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
cd "$here"
npm ci --no-audit --no-fund --silent
export MAYURAD=$(cd "$build" && pwd)/tools/mayurad
npm test
