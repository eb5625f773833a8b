#!/usr/bin/env bash
# Benchmark smoke run: every benchmark under bench/ at a tiny size (one trial, a few jobs), so a
# benchmark that no longer runs fails `make test` instead of rotting unnoticed. Each must exit 0
# and print the line that carries its ratio against its peer. Numbers from this run mean
# nothing; `make bench` gives the real ones.
#
# Usage: bash bench/smoke.sh [build-dir [NAME...]]   (no NAME: every benchmark, one after another;
#        ctest runs each NAME as a test of its own, label `bench`, so they share the machine with
#        the integration tests)
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

# Each benchmark, at its smoke size. scale and plot_scale stay together: the plot reads scale's log.
smoke_one() {
  case "$1" in
    decision_cost) run decision_cost "ratio" "$build/bench_decision_cost" ;;
    up_to_ready) run up_to_ready "ratio" env RUNS=1 bash "$here/up_to_ready.sh" "$build/hpcplane" ;;
    cold_start) run cold_start "peer/hpcplane" env TRIALS=1 bash "$here/cold_start.sh" "$build" ;;
    warm_dispatch) run warm_dispatch "ratio" env JOBS=10 bash "$here/warm_dispatch.sh" "$build" ;;
    trace_replay) run trace_replay "ratios autoscaled/static" env JOBS=6 bash "$here/trace_replay.sh" "$build" ;;
    controlplane) run controlplane "ratio" env RECORDS=2000 PG_RECORDS=1000 PEER_RECORDS=200 "$build/bench_controlplane" ;;
    api_load) run api_load "ratio attacked/plain" env RECORDS=3000 CLIENTS=6 REQUESTS=20 SLOW=2 "$build/bench_api_load" ;;
    throughput) run throughput "ratio hpcplane/peer" env JOBS=20 ROUNDS=1 bash "$here/throughput.sh" "$build" ;;
    scale)
      run scale "cost vs scale: done" env SIZES="1 2" PENDING="0 10" NODESETS="1 2" WINDOW=2 bash "$here/scale.sh" "$build"
      run plot_scale "</svg>" python3 "$here/plot_scale.py" "$logs/scale.log"
      ;;
    health_drain) run health_drain "ratio" env INTERVALS="4 2" bash "$here/health_drain.sh" "$build/hpcplane" ;;
    mpi_pingpong) run mpi_pingpong "latency" env MAX_SIZE=1024 LOOP=10 bash "$here/mpi_pingpong.sh" "$build" ;;
    ddp_steps) run ddp_steps "steps/s" env STEPS=100 bash "$here/ddp_steps.sh" "$build" ;;
    releases) run releases "cold start p50" env RUNS=1 TRIALS=1 bash "$here/releases.sh" "$build" ;;
    failover) run failover "ratio peer/backup" env TRIALS=1 OUTAGE=15 bash "$here/failover.sh" "$build" ;;
    upgrade) run upgrade "ratio restart/rolling" env JOB=20 bash "$here/upgrade.sh" "$build" ;;
    idle_cost) run idle_cost "idle cost over" env IDLE_SECONDS=10 bash "$here/idle_cost.sh" "$build" ;;
    # console_render runs history_query.sh as its sacct peer (20 real jobs, the job table copied to 2000).
    console_render)
      run console_render "ratio sacct/console render" env JOBS=2000 REPEATS=2 SEED_JOBS=20 PEER_REPEATS=1 \
        /usr/bin/python3 "$here/console_render.py" "$build"
      ;;
    terminal_keystroke)
      run terminal_keystroke "ratio exec/keystroke" env KEYS=20 EXECS=3 /usr/bin/python3 "$here/terminal_keystroke.py" "$build"
      ;;
    operator_scale)
      run operator_scale "peer: kubectl create" env SIZES=10 STEADY=3 /usr/bin/python3 "$here/operator_scale.py" "$build"
      ;;
    kubernetes_real) run kubernetes_real "kubernetes/local" env IDLE=5 WIDE=10 /usr/bin/python3 "$here/kubernetes_real.py" "$build" ;;
    *) echo "bench smoke: no benchmark '$1' (one of: $all)"; failed=$((failed + 1)) ;;
  esac
}
all="decision_cost up_to_ready cold_start warm_dispatch trace_replay controlplane api_load throughput scale idle_cost failover upgrade
  console_render terminal_keystroke health_drain releases mpi_pingpong ddp_steps operator_scale kubernetes_real"
if [ $# -gt 1 ]; then
  shift
  for name in "$@"; do smoke_one "$name"; done
else
  for name in $all; do smoke_one "$name"; done
fi

# bench/faults.sh runs whole as the ctest `fault_campaign` (in `make test`; alone: `make faults`).

echo "bench smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
