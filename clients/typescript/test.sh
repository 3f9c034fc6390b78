#!/usr/bin/env bash
# The TypeScript provider's tests, against the mayurad of a build: installs
# its dev tools (typescript, @types/node) from npm, builds it, runs Node's own
# test runner over test/ (a real daemon on a scratch socket, as root).
#   test.sh [BUILD-DIR]      (default: the repository's build/)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# (resolved before the cd below, so a relative BUILD-DIR means the caller's)
build=$(cd "${1:-$here/../../build}" && pwd)
cd "$here"
npm ci --no-audit --no-fund --silent
export MAYURAD=$build/tools/mayurad
npm test
