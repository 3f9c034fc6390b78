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

step "the layout's rules (tests/layout/check.sh)"
"$root/tests/layout/check.sh" "$root/build"

step "static checks (.clang-tidy, over the whole tree: scripts/tidy.sh)"
"$here/tidy.sh" "$root/build"

step "build (ASan + UBSan, then the fuzzing harnesses) in the background, on idle cpu"
# Made at the lowest priority (SCHED_IDLE) while the host's tests run, they
# take only the cpu those leave idle (sandboxes waited for), so the tests'
# timing is as on an idle machine: made after every test, they were a fifth
# of CI's time. They are stopped while the VMs run: an emulated cpu gives
# little idle time, and a compiler beside it, even at the lowest priority,
# cost the root row half again its time (cache and memory bandwidth). The
# fuzzing harnesses' build goes on while the sanitized tests run.
background_log=$root/build/background.log
asan_built=$root/build/background.asan-built
rm -f "$asan_built"
setsid -w chrt --idle 0 sh -c "'$here/build.sh' '$root/build-asan' -DMAYURA_SANITIZE=ON -DMAYURA_BENCH=OFF || exit 1
  touch '$asan_built'
  '$here/fuzz.sh' --build" >"$background_log" 2>&1 &
background=$!
# (Not reaped until waited for: a background that ended is a zombie.)
background_running() {
  local state
  state=$(ps -o stat= -p "$background" 2>/dev/null) || return 1
  [ -n "$state" ] && [ "${state:0:1}" != Z ]
}
# Its own process group (setsid), so that a failing step ends all of it.
trap 'kill -CONT -- -$background 2>/dev/null; kill -- -$background 2>/dev/null || true' EXIT
background_failed() {
  tail -60 "$background_log"
  echo "test.sh: the sanitized build or the fuzzing harnesses failed (all of it: $background_log)" >&2
  exit 1
}

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
kill -STOP -- -"$background" 2>/dev/null || true
"$root/tests/vm/matrix.sh" "$root/build"
kill -CONT -- -"$background" 2>/dev/null || true

step "build (ASan + UBSan), waited for"
until [ -e "$asan_built" ]; do
  background_running || background_failed
  sleep 2
done
step "tests under ASan + UBSan"
# Not here: the VM-only tests; the tests that run the process out of
# descriptors, named AtTheOpenFileLimit (the sanitizers' own checks need
# some: UBSan reports a false "invalid vptr" when it cannot open a pipe);
# and the one that bounds the daemon's peak memory, which ASan's quarantine
# and shadow memory make meaningless (OutputFloodsAreStreamedThroughAnd-
# NeverHeld). They run in the plain build. The suites run once per shell
# (dash, bash, BusyBox: unit.Shells/*) run with dash alone: the code under
# the sanitizers is the same for each shell, and the three were a fifth of
# this step's time; the plain build runs all of them.
# Three tests per core: most of a sanitized test's time is waiting (on
# sandboxes, daemons, shells), and with two per core a fuzzing harness's
# build, at the lowest priority beside them, still found cpu to spare.
(cd "$root/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest -j"$(($(nproc) * 3))" --timeout 120 --output-on-failure --no-tests=error \
  -E 'UnifiedCgroupTest|AtTheOpenFileLimit|OutputFloodsAreStreamedThroughAndNeverHeld|^unit\.Shells/.*/(bash|busybox)(_stdin|_cmdline)? ')

step "the fuzzing harnesses' build, waited for"
wait "$background" || background_failed
trap - EXIT
step "fuzzing (fuzz/): each corpus replayed, then each harness fuzzed for 10 s"
"$here/fuzz.sh" 10
step "done"
