#!/usr/bin/env bash
# Fuzzes every decoder of untrusted bytes (fuzz/): builds the libFuzzer
# harnesses with clang, ASan and UBSan into build-fuzz, replays each one's
# corpus (fuzz/corpus/NAME: seeds and every input that ever failed), then
# fuzzes each for SECONDS (60 unless given), new inputs going to
# build-fuzz/corpus/NAME, and prints per harness the time, the executions
# and what it found. Fails when a harness crashes, hangs or breaks one of
# its properties, naming the input to keep as a regression case.
#   ./scripts/fuzz.sh [SECONDS] [HARNESS...]
set -euo pipefail
. "$(dirname "$0")/as_root.sh"
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
seconds=${1:-60}
shift || true
case $seconds in '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a number, not '$seconds'" >&2; exit 2 ;; esac
trap 'echo "fuzz.sh: stopped at line $LINENO (exit $?)" >&2' ERR

"$here/deps.sh" fuzz
dir=$root/build-fuzz
echo "== build the harnesses (clang, libFuzzer, ASan + UBSan) into $dir"
cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DMAYURA_FUZZ=ON -DMAYURA_TESTS=OFF -DMAYURA_BENCH=OFF -DMAYURA_WERROR=ON >/dev/null
cmake --build "$dir" --target fuzzers -j"$(nproc)"

if (($#)); then
  harnesses=("$@")
else
  harnesses=()
  for d in "$root"/fuzz/corpus/*/; do harnesses+=("$(basename "$d")"); done
fi

export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
failed=()
report=()
for h in "${harnesses[@]}"; do
  bin=$dir/fuzz/fuzz_$h
  [ -x "$bin" ] || { echo "fuzz.sh: no harness '$h' (the names are fuzz/corpus/*)" >&2; exit 2; }
  work=$dir/corpus/$h
  artifacts=$dir/crashes/$h
  # Emptied first, so whatever is in it after the run is this run's finding.
  rm -rf "$artifacts"
  mkdir -p "$work" "$artifacts"
  log=$dir/$h.log
  echo "== $h: replay fuzz/corpus/$h, then fuzz for ${seconds}s"
  # Inputs are bounded (-max_len) and so is each run's time and memory: a
  # harness that hangs or grows without bound fails like one that crashes.
  if "$bin" -runs=0 "$root/fuzz/corpus/$h" >"$log" 2>&1 &&
     "$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
       -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" "$root/fuzz/corpus/$h" >>"$log" 2>&1; then
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    units=$(find "$work" -type f | wc -l)
    report+=("$(printf '%-16s %6ss %12s execs %6s inputs in its corpus, nothing found' "$h" "$seconds" "${execs:-?}" "$units")")
  else
    failed+=("$h")
    found=$(find "$artifacts" -type f | head -1)
    report+=("$(printf '%-16s FAILED: %s' "$h" "${found:-see $log}")")
    tail -40 "$log" >&2
    if [ -n "$found" ]; then
      echo "fuzz.sh: $h failed on $found; once fixed, keep it: cp '$found' '$root/fuzz/corpus/$h/'" >&2
    fi
  fi
done
echo "== fuzzing, per harness"
printf '%s\n' "${report[@]}"
if ((${#failed[@]})); then
  echo "fuzz.sh: failed: ${failed[*]}" >&2
  exit 1
fi
