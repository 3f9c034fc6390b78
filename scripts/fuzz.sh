#!/usr/bin/env bash
# Fuzzes every decoder of untrusted bytes (fuzz/): builds the libFuzzer
# harnesses with clang, ASan and UBSan into build-fuzz, replays each one's
# corpus (fuzz/corpus/NAME: seeds and every input that ever failed), then
# fuzzes each for SECONDS (60 unless given), as many at once as there are
# cores, new inputs going to build-fuzz/corpus/NAME, and prints per harness
# the time, the executions and what it found. Fails when a harness crashes,
# hangs or breaks one of its properties, naming the input to keep as a
# regression case. With --build, only builds the harnesses.
#   ./scripts/fuzz.sh [SECONDS] [HARNESS...]
#   ./scripts/fuzz.sh --build
set -euo pipefail
. "$(dirname "$0")/as_root.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build_only=false
if [ "${1:-}" = --build ]; then
  build_only=true
  shift
fi
seconds=${1:-60}
shift || true
case $seconds in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a number, not '$seconds'" >&2; exit 2 ;; esac
trap 'echo "fuzz.sh: stopped at line $LINENO (exit $?)" >&2' ERR

"$here/deps.sh" fuzz
dir=$root/build-fuzz
echo "== build the harnesses (clang, libFuzzer, ASan + UBSan) into $dir"
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DMAYURA_FUZZ=ON -DMAYURA_UNITY=ON -DMAYURA_TESTS=OFF -DMAYURA_BENCH=OFF -DMAYURA_WERROR=ON >/dev/null
cmake --build "$dir" --target fuzzers -j"$(nproc)"
$build_only && exit 0

if (($#)); then
  harnesses=("$@")
else
  harnesses=()
  for d in "$root"/fuzz/corpus/*/; do harnesses+=("$(basename "$d")"); done
fi
for h in "${harnesses[@]}"; do
  [ -x "$dir/fuzz/fuzz_$h" ] || { echo "fuzz.sh: no harness '$h' (the names are fuzz/corpus/*)" >&2; exit 2; }
done

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Replays one harness's corpus and fuzzes it; its line of the report goes to
# build-fuzz/NAME.report, and it fails when the harness found something.
fuzz_one() {
  local h=$1
  local bin=$dir/fuzz/fuzz_$h work=$dir/corpus/$h artifacts=$dir/crashes/$h log=$dir/$h.log
  # Emptied first, so whatever is in it after the run is this run's finding.
  rm -rf "$artifacts"
  mkdir -p "$work" "$artifacts"
  # Inputs are bounded (-max_len) and so is each run's time and memory: a
  # harness that hangs or grows without bound fails like one that crashes.
  if "$bin" -runs=0 "$root/fuzz/corpus/$h" >"$log" 2>&1 &&
     "$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
       -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" "$root/fuzz/corpus/$h" >>"$log" 2>&1; then
    local execs units
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    units=$(find "$work" -type f | wc -l)
    printf '%-16s %6ss %12s execs %6s inputs in its corpus, nothing found\n' "$h" "$seconds" "${execs:-?}" "$units" \
      >"$dir/$h.report"
    return 0
  fi
  local found
  found=$(find "$artifacts" -type f | head -1)
  printf '%-16s FAILED: %s\n' "$h" "${found:-see $log}" >"$dir/$h.report"
  tail -40 "$log" >&2
  if [ -n "$found" ]; then
    echo "fuzz.sh: $h failed on $found; once fixed, keep it: cp '$found' '$root/fuzz/corpus/$h/'" >&2
  fi
  return 1
}

# Each harness is one process on one core: as many run at once as there are
# cores, the next started as one ends. Each one's outcome is its report.
for h in "${harnesses[@]}"; do
  while (($(jobs -rp | wc -l) >= $(nproc))); do wait -n || true; done
  echo "== $h: replay fuzz/corpus/$h, then fuzz for ${seconds}s"
  rm -f "$dir/$h.report"
  fuzz_one "$h" &
done
wait
failed=()
for h in "${harnesses[@]}"; do
  grep -q 'nothing found$' "$dir/$h.report" 2>/dev/null || failed+=("$h")
done
echo "== fuzzing, per harness"
for h in "${harnesses[@]}"; do cat "$dir/$h.report" 2>/dev/null || echo "$h: no report"; done
if ((${#failed[@]})); then
  echo "fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
