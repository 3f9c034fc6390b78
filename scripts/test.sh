#!/usr/bin/env bash
# The whole test suite from scratch, as root: installs what is needed,
# checks the format (scripts/format.sh), builds with warnings as errors and
# runs every test on this machine, with clang-tidy over the whole tree
# (scripts/tidy.sh) beside the tests; runs the TypeScript provider's tests
# against its mayurad; runs the suites that
# depend on the kind of host again in VMs of Debian 12's kernel,
# one per cgroup layout (pure cgroup2 in the root cgroup, delegated and in a
# login session, and v1 only); then builds with ASan and UBSan and runs every
# test under them; then replays every fuzzer's corpus and fuzzes each for a
# little while (scripts/fuzz.sh).
#   sudo ./scripts/test.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
if [ "$(id -u)" != 0 ]; then
  echo "test.sh: the integration tests need root (run it with sudo)" >&2
  exit 1
fi
"$here/deps.sh" vm

echo "== format (.clang-format, over the whole tree)"
"$here/format.sh"

echo "== build (warnings as errors)"
"$here/build.sh" "$root/build"

# clang-tidy over the whole tree costs about 23 minutes of both cores: it
# runs beside the tests at idle priority (SCHED_IDLE), so it takes only the
# time they leave (the VMs' guests wait for their sandboxes much of the
# time), and its findings are waited for after the VMs.
echo "== static checks (.clang-tidy, over the whole tree): started, at idle priority beside the tests"
tidy_log=$root/build/tidy.log
setsid chrt --idle 0 "$here/tidy.sh" "$root/build" >"$tidy_log" 2>&1 &
tidy_pid=$!
tidy_started=$(date +%s)
trap 'kill -- -"$tidy_pid" 2>/dev/null || true' EXIT
echo "== tests on this machine ($(uname -r), $("$root/build/tools/mayura-run" doctor | sed -n 2p | cut -d' ' -f2))"
# UnifiedCgroupTest needs a pure cgroup2 host: it runs in the VMs below.
(cd "$root/build" && ctest -j"$(($(nproc) * 2))" --timeout 120 --output-on-failure --no-tests=error -E 'UnifiedCgroupTest|AtTheOpenFileLimit')

echo "== the TypeScript provider (clients/typescript), against this build's mayurad"
"$root/clients/typescript/test.sh" "$root/build"

echo "== tests in VMs of Debian 12's kernel, one per cgroup layout (tests/vm)"
"$root/tests/vm/matrix.sh" "$root/build"

echo "== static checks (.clang-tidy): the findings"
tidy_status=0
wait "$tidy_pid" || tidy_status=$?
echo "($(($(date +%s) - tidy_started)) s since they started)"
grep -vE '^[0-9]+ warnings? generated|^Suppressed [0-9]+ warnings|^Use -header-filter|^$' "$tidy_log" | tail -200
[ "$tidy_status" = 0 ] || { echo "test.sh: clang-tidy has findings (scripts/tidy.sh)" >&2; exit 1; }

echo "== build (ASan + UBSan)"
"$here/build.sh" "$root/build-asan" -DMAYURA_SANITIZE=ON -DMAYURA_BENCH=OFF
echo "== tests under ASan + UBSan"
# Not here: the VM-only tests, and the test that runs the process out of
# descriptors (the sanitizers' own checks need some: UBSan reports a false
# "invalid vptr" when it cannot open a pipe). It runs in the plain build.
(cd "$root/build-asan" && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest -j"$(($(nproc) * 2))" --timeout 120 --output-on-failure --no-tests=error -E 'UnifiedCgroupTest|AtTheOpenFileLimit')

echo "== fuzzing (fuzz/): each corpus replayed, then each harness fuzzed for 20 s"
"$here/fuzz.sh" 20
