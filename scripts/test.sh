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
# login session, and v1 only); runs every test again built with ASan and
# UBSan (built, with the fuzzing harnesses, in the background on the cpu the
# tests leave idle); then replays every fuzzer's corpus and fuzzes each for
# a little while (scripts/fuzz.sh).
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

step "build (ASan + UBSan; the fuzzing harnesses) in the background, on idle cpu"
# Made at the lowest priority (SCHED_IDLE) while the tests below run, they
# take only the cpu those leave idle (sandboxes waited for, the VMs' guests
# waiting on timers): made after the tests, they were a fifth of CI's time.
# The tests keep the cpu whenever they want it, so their timing is as on an
# idle machine.
background_log=$root/build/background.log
setsid -w chrt --idle 0 sh -c "'$here/build.sh' '$root/build-asan' -DMAYURA_SANITIZE=ON -DMAYURA_BENCH=OFF &&
  '$here/fuzz.sh' --build" >"$background_log" 2>&1 &
background=$!
# Its own process group (setsid), so that a failing step ends all of it.
trap 'kill -- -$background 2>/dev/null || true' EXIT

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

step "build (ASan + UBSan; the fuzzing harnesses), waited for"
if ! wait "$background"; then
  tail -60 "$background_log"
  echo "test.sh: the sanitized build or the fuzzing harnesses failed (all of it: $background_log)" >&2
  exit 1
fi
trap - EXIT
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
