#!/usr/bin/env bash
# `make test`: lint, build, then every unit test, integration test and benchmark smoke run.
#
# The work is started as soon as what it needs exists, so that the two cores are never idle while
# something waits (bench/README.md, "CI time" has the timeline and why):
#   - the real Kubernetes components (Go, `make kubernetes-binaries`) build from the start,
#     beside lint and the C++ build: nothing of theirs needs the other;
#   - the compute environments' images (mmdebstrap: downloads and dpkg, little CPU) build as soon
#     as the `hpcplane` binary is linked, while the tests and benchmarks compile;
#   - then the unit tests, then the integration tests and smoke runs, INTEGRATION_JOBS at a time:
#     most of them wait on Slurm's timers far more than they compute.
# The background steps are what the ctest fixtures `kubernetes_binaries` and `environments_build`
# would do themselves: those find the work done (or wait for it under its lock) and pass at once.
# Each step's output goes to BUILD/logs/STEP.log and is shown when the step fails.
#
# Usage: bash scripts/test.sh BUILD_DIR [JOBS] [INTEGRATION_JOBS]
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "${1:-build}" && cd "${1:-build}" && pwd)
jobs=${2:-2}
integration_jobs=${3:-3}
logs=$build/logs
mkdir -p "$logs"
start=$SECONDS
say() { printf 'test: %4d s  %s\n' "$((SECONDS - start))" "$*"; }

declare -A pids=()
# background STEP COMMAND...: runs COMMAND with its output in BUILD/logs/STEP.log.
background() {
  local step=$1
  shift
  "$@" >"$logs/$step.log" 2>&1 &
  pids[$step]=$!
  say "$step started (log: $logs/$step.log)"
}
# finish STEP: waits for it; on failure shows the end of its log and returns 1.
finish() {
  local step=$1
  local status=0
  wait "${pids[$step]}" || status=$?
  unset 'pids[$step]'  # waited for: its pid may be another process's by the time the script exits
  if [ $status -eq 0 ]; then
    say "$step done"
    return 0
  fi
  say "$step FAILED; the end of its log:"
  tail -n 60 "$logs/$step.log" | sed 's/^/    /'
  return 1
}
stop_background() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap stop_background EXIT

failed=0
# At the C++ build's priority: the real-cluster tests, the longest chain, wait for it. Lint is
# needed only at the end, so it takes what the others leave.
background kubernetes-binaries /usr/bin/python3 "$top/tests/kubernetes/realcluster.py" binaries "$build"
background lint nice -n 10 bash "$top/scripts/lint.sh" "$build"

say "building hpcplane"
if ! cmake --build "$build" -j"$jobs" --target hpcplane >"$logs/build-hpcplane.log" 2>&1; then
  say "build of hpcplane FAILED:"
  grep -E -B2 -A12 'error|Error' "$logs/build-hpcplane.log" | head -n 80
  exit 1
fi
# The ctest fixture itself (one list of environments, in CMakeLists.txt); the test run below only
# starts once it is done.
background environments bash -c "cd '$build' && ctest --output-on-failure -R '^environments_build\$'"

say "building the tests and benchmarks"
if ! cmake --build "$build" -j"$jobs" >"$logs/build.log" 2>&1; then
  say "build FAILED:"
  grep -E -B2 -A12 'error|Error' "$logs/build.log" | head -n 80
  exit 1
fi
say "built"

say "unit tests"
(cd "$build" && ctest --output-on-failure -L unit -j"$jobs") >"$logs/unit.log" 2>&1 || {
  failed=1
  grep -E 'Failed|\*\*\*' "$logs/unit.log" | head -n 40
}
tail -n 4 "$logs/unit.log"

# Every test needs the images; the real-cluster tests' fixture waits for the Go build (its lock)
# while the others run.
finish environments || failed=1
say "integration tests and benchmark smoke runs, $integration_jobs at a time"
(cd "$build" && ctest --output-on-failure -L 'integration|bench' -j"$integration_jobs") || failed=1
finish kubernetes-binaries || failed=1
finish lint || failed=1
say "$([ $failed -eq 0 ] && echo passed || echo FAILED)"
exit $failed
