#!/usr/bin/env bash
# The whole test suite from scratch, as root: installs what is needed,
# checks the format (scripts/format.sh) and the documents
# (tests/docs/check.sh: the README's length, its examples, its links),
# builds with warnings as errors and runs clang-tidy over the whole tree
# (scripts/tidy.sh) and every test on this machine, beside a packaged
# mayurad and a mayura-run session; runs the TypeScript provider's tests
# against its mayurad; runs the suites that
# depend on the kind of host again in VMs of Debian 12's kernel, one per
# cgroup layout (pure cgroup2 in the root cgroup, delegated and in a
# login session, and v1 only); then builds with ASan and UBSan and runs every
# test under them; then replays every fuzzer's corpus and fuzzes each for a
# little while (scripts/fuzz.sh).
#   ./scripts/test.sh
set -euo pipefail
. "$(dirname "$0")/as_root.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
# Each step says when it starts, so a slow CI run shows where its time went.
step() { echo "== $* (at $((SECONDS / 60))m$((SECONDS % 60))s)"; }
"$here/deps.sh" vm

step "format (.clang-format, over the whole tree)"
"$here/format.sh"

step "documents (tests/docs/check.sh)"
"$root/tests/docs/check.sh"

step "build (warnings as errors)"
"$here/build.sh" "$root/build"

step "static checks (.clang-tidy, over the whole tree: scripts/tidy.sh)"
"$here/tidy.sh" "$root/build"

step "tests on this machine ($(uname -r), $("$root/build/tools/mayura-run" doctor | sed -n 2p | cut -d' ' -f2)), beside a packaged mayurad"
# UnifiedCgroupTest needs a pure cgroup2 host: it runs in the VMs below, as
# does ACreateAtTheOpenFileLimit. The tests own their places: they run beside
# the packaged mayurad on the default socket and a mayura-run --local
# session, as on a developer's machine that has the package installed
# (tests/package/neighbours.sh), and must leave both untouched.
"$root/tests/package/neighbours.sh" "$root/build" sh -c "cd '$root/build' && ctest -j$(($(nproc) * 2)) --timeout 120 --output-on-failure --no-tests=error -E 'UnifiedCgroupTest|ACreateAtTheOpenFileLimit'"

step "the TypeScript provider (clients/typescript), against this build's mayurad"
"$root/clients/typescript/test.sh" "$root/build"

step "tests in VMs of Debian 12's kernel, one per cgroup layout (tests/vm)"
"$root/tests/vm/matrix.sh" "$root/build"

step "build (ASan + UBSan)"
"$here/build.sh" "$root/build-asan" -DMAYURA_SANITIZE=ON -DMAYURA_BENCH=OFF
step "tests under ASan + UBSan"
# Not here: the VM-only tests; the tests that run the process out of
# descriptors, named AtTheOpenFileLimit (the sanitizers' own checks need
# some: UBSan reports a false "invalid vptr" when it cannot open a pipe);
# and the one that bounds the daemon's peak memory, which ASan's quarantine
# and shadow memory make meaningless (OutputFloodsAreStreamedThroughAnd-
# NeverHeld). They run in the plain build.
(cd "$root/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest -j"$(($(nproc) * 2))" --timeout 120 --output-on-failure --no-tests=error -E 'UnifiedCgroupTest|AtTheOpenFileLimit|OutputFloodsAreStreamedThroughAndNeverHeld')

step "fuzzing (fuzz/): each corpus replayed, then each harness fuzzed for 10 s"
"$here/fuzz.sh" 10
step "done"
