#!/usr/bin/env bash
# Benchmark smoke run: every benchmark under bench/ at a tiny size (one trial, a few jobs), so a
# benchmark that no longer runs fails `make test` instead of rotting unnoticed. Each must exit 0
# and print the line that carries its ratio against its peer. Numbers from this run mean
# nothing; `make bench` gives the real ones.
#
# Usage: bash bench/smoke.sh [build-dir]
set -uo pipefail
build=$(readlink -f "${1:-build}")
here=$(dirname "$(readlink -f "$0")")
logs=$(mktemp -d /tmp/hpcplane-bench-smoke-XXXXXX)
trap 'rm -rf "$logs"' EXIT
passed=0
failed=0

# run NAME PATTERN COMMAND...: passes when COMMAND exits 0 and its output has PATTERN.
run() {
  local name=$1 pattern=$2
  shift 2
  local start=$SECONDS
  if "$@" > "$logs/$name.log" 2>&1 && grep -q -- "$pattern" "$logs/$name.log"; then
    echo "bench smoke: $name ok ($((SECONDS - start)) s): $(grep -m1 -- "$pattern" "$logs/$name.log")"
    passed=$((passed + 1))
  else
    echo "bench smoke: $name FAILED ($((SECONDS - start)) s); its output:"
    tail -n 40 "$logs/$name.log" | sed 's/^/    /'
    failed=$((failed + 1))
  fi
}

run decision_cost "ratio" "$build/bench_decision_cost"
run up_to_ready "ratio" env RUNS=1 bash "$here/up_to_ready.sh" "$build/hpcplane"
run cold_start "peer/hpcplane" env TRIALS=1 bash "$here/cold_start.sh" "$build"
run warm_dispatch "ratio" env JOBS=10 bash "$here/warm_dispatch.sh" "$build"
run trace_replay "ratios autoscaled/static" env JOBS=6 bash "$here/trace_replay.sh" "$build"
run controlplane "ratio" env RECORDS=2000 PG_RECORDS=1000 PEER_RECORDS=200 "$build/bench_controlplane"
run api_load "ratio attacked/plain" env RECORDS=3000 CLIENTS=6 REQUESTS=20 SLOW=2 "$build/bench_api_load"
run throughput "ratio hpcplane/peer" env JOBS=20 ROUNDS=1 bash "$here/throughput.sh" "$build"
run scale "cost vs scale: done" env SIZES="1 2" PENDING="0 10" NODESETS="1 2" WINDOW=2 bash "$here/scale.sh" "$build"
run plot_scale "</svg>" python3 "$here/plot_scale.py" "$logs/scale.log"
run idle_cost "idle cost over" env IDLE_SECONDS=10 bash "$here/idle_cost.sh" "$build"
# console_render runs history_query.sh as its sacct peer (20 real jobs, the job table copied to 2000).
run console_render "ratio sacct/console render" env JOBS=2000 REPEATS=2 SEED_JOBS=20 PEER_REPEATS=1 /usr/bin/python3 "$here/console_render.py" "$build"

# bench/faults.sh runs whole as the ctest `fault_campaign` (in `make test`; alone: `make faults`).

echo "bench smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
