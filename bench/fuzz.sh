#!/usr/bin/env bash
# Runs each libFuzzer harness (tests/fuzz/) for N seconds and prints, per
# harness, the executions, executions per second, corpus size and crashes.
#
#   bench/fuzz.sh [SECONDS] [HARNESS...]     (default: 60 s; all five harnesses)
#
# Needs the `sanitize` build (clang, ASan + UBSan): cmake --preset sanitize &&
# cmake --build --preset sanitize. Seeds: fixtures/ and examples/ (Python
# sources: fuzz_lint, fuzz_fix), tests/fuzz/seeds/lsp and tests/fuzz/seeds/config.
# Each harness grows its own corpus in build/sanitize/fuzz-corpus/HARNESS
# (kept between runs); a crash leaves its input in build/sanitize/fuzz-crashes/
# and makes the script exit 1. Bounds per input: FUZZ_TIMEOUT seconds (-timeout,
# default 25: a loaded 2-core machine once stalled a 0.08 s input past 10 s), 2048 MB
# (-rss_limit_mb), 64 KiB (-max_len; the harnesses reject inputs over 256 KiB).
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=(fuzz_lint fuzz_lsp fuzz_config fuzz_fix fuzz_notebook)
bin=build/sanitize/tests/fuzz
if [ ! -x "$bin/fuzz_lint" ]; then
  echo "bench/fuzz.sh: $bin/fuzz_lint not found; build it: cmake --preset sanitize && cmake --build --preset sanitize" >&2
  exit 2
fi
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
crash_dir=build/sanitize/fuzz-crashes
mkdir -p "$crash_dir"

# Python seeds: every fixture and example, copied flat (libFuzzer reads folders one level deep)
py_seeds=build/sanitize/fuzz-seeds/python
if [ ! -d "$py_seeds" ]; then
  mkdir -p "$py_seeds"
  i=0
  while IFS= read -r -d '' f; do
    i=$((i + 1))
    cp "$f" "$py_seeds/seed_$i.py"
  done < <(find fixtures examples -name '*.py' -print0 | sort -z)
fi

status=0
printf '%-12s %8s %12s %10s %8s %8s\n' harness seconds executions exec/s corpus crashes
for h in "${harnesses[@]}"; do
  case "$h" in
    fuzz_lint|fuzz_fix) seeds=$py_seeds ;;
    fuzz_lsp) seeds=tests/fuzz/seeds/lsp ;;
    fuzz_config) seeds=tests/fuzz/seeds/config ;;
    fuzz_notebook) seeds=tests/fuzz/seeds/notebook ;;
    *) echo "bench/fuzz.sh: unknown harness $h" >&2; exit 2 ;;
  esac
  corpus=build/sanitize/fuzz-corpus/$h
  mkdir -p "$corpus"
  log=build/sanitize/fuzz-$h.log
  before=$(find "$crash_dir" -type f | wc -l)
  "$bin/$h" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-25}" -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$crash_dir/$h-" "$corpus" "$seeds" >"$log" 2>&1
  rc=$?
  after=$(find "$crash_dir" -type f | wc -l)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  secs=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  size=$(find "$corpus" -type f | wc -l)
  crashes=$((after - before))
  printf '%-12s %8s %12s %10s %8s %8s\n' "$h" "$seconds" "${execs:-?}" "${secs:-?}" "$size" "$crashes"
  if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    status=1
    echo "bench/fuzz.sh: $h failed (exit $rc); its log: $log; inputs: $crash_dir/$h-*" >&2
    grep -m 5 -E 'ERROR|SUMMARY|property violated|runtime error' "$log" >&2
  fi
done
exit $status
