#!/usr/bin/env bash
# Runs every libFuzzer target (built by `make fuzz` into BUILD_DIR) for SECONDS each, from the
# seed corpus in tests/fuzz/corpus (copied: what the fuzzer learns stays in BUILD_DIR), and
# prints per target: executions, executions per second, corpus growth, and crashes.
# Usage: bench/fuzz.sh [BUILD_DIR] [SECONDS]   (defaults: build-fuzz 600)
# Env TARGETS: the targets to run (default: all five), e.g. TARGETS="manifest rest".
# Exits non-zero if any target found a crash; its reproducer is kept under BUILD_DIR/fuzz-out.
set -euo pipefail
build=${1:-build-fuzz}
seconds=${2:-600}
root=$(cd "$(dirname "$0")/.." && pwd)
out="$build/fuzz-out"
mkdir -p "$out"
crashed=0
printf '%-12s %8s %12s %10s %8s %8s\n' target seconds executions exec/s corpus crashes
for target in ${TARGETS:-manifest sacct squeue_json jwt rest}; do
  bin="$build/fuzz_$target"
  [ -x "$bin" ] || { echo "fuzz: $bin missing (run make fuzz)" >&2; exit 1; }
  corpus="$out/corpus-$target"
  mkdir -p "$corpus" "$out/crashes-$target"
  cp -n "$root/tests/fuzz/corpus/$target/"* "$corpus/" 2>/dev/null || true
  before=$(ls "$corpus" | wc -l)
  log="$out/$target.log"
  set +e
  # One process; -max_len bounds inputs at 64 KiB; crashes land in crashes-$target.
  "$bin" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$out/crashes-$target/" "$corpus" >"$log" 2>&1
  rc=$?
  set -e
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  after=$(ls "$corpus" | wc -l)
  crashes=$(ls "$out/crashes-$target" | wc -l)
  rate=$(( execs / (seconds > 0 ? seconds : 1) ))
  printf '%-12s %8s %12s %10s %8s %8s\n' "$target" "$seconds" "$execs" "$rate" "$before->$after" "$crashes"
  if [ "$rc" -ne 0 ] || [ "$crashes" -ne 0 ]; then
    crashed=1
    echo "fuzz: $target failed (exit $rc); see $log and $out/crashes-$target" >&2
    tail -30 "$log" >&2
  fi
done
exit $crashed
