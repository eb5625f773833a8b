#!/usr/bin/env bash
# Benchmark: a worker's /tmp filled → the worker drained with an `hpcplane:health:tmp:` reason,
# at the cluster's default health-check settings (interval 30 s: spec.healthChecks left out)
# and, as the peer in the same run, at a 10 s interval. Each run fills the /tmp of an idle
# worker right after a passing report, so the time measured is what a real fill waits at worst:
# the rest of the interval plus the pass that sees it. Target: ≤ interval + one pass (a few s).
#
# Usage: bash bench/health_drain.sh [path/to/hpcplane]   (INTERVALS="30 10": the intervals, in
#        seconds, 30 meaning the defaults; the first is the one the ratio is of)
set -euo pipefail
bin=$(readlink -f "${1:-build/hpcplane}")
intervals=${INTERVALS:-"30 10"}
work=$(mktemp -d /tmp/hpcplane-bench-health-XXXXXX)
cluster=hd$$
cleanup() {
  "$bin" --state-dir "$work/state" --cluster "$cluster" down --purge >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

node_field() {  # node_field FIELD: FIELD of cpu-0 as scontrol shows it
  "$bin" --state-dir "$work/state" --cluster "$cluster" exec "$cluster-login" -- scontrol show node cpu-0 2>/dev/null |
    tr ' ' '\n' | sed -n "s/^$1=//p" | head -1
}
wait_for() {  # wait_for SECONDS COMMAND...: polls every 0.2 s
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt "$deadline" ] || { echo "bench: timed out waiting for: $*" >&2; exit 1; }
    sleep 0.2
  done
}
reported() { case "$(node_field Extra)" in hpcplane-health:*:ok) return 0 ;; esac; return 1; }
report_changed() { [ "$(node_field Extra)" != "$1" ]; }
drained() { case "$(node_field Reason)" in hpcplane:health:tmp:*) return 0 ;; esac; return 1; }

declare -A took
for interval in $intervals; do
  health=""
  [ "$interval" = 30 ] || health="  healthChecks: {interval: ${interval}s}"
  cat > "$work/cluster.yaml" <<YAML
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: $cluster}
spec:
  network: {subnet: 10.236.$(($$ % 200 + 20)).0/24}
$health
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: cpu}
spec: {cluster: $cluster, replicas: 1, maxReplicas: 1, resources: {cpus: 1, memoryMiB: 500, tmpMiB: 16}}
YAML
  "$bin" --state-dir "$work/state" up -f "$work/cluster.yaml" --detach >/dev/null
  wait_for $((interval * 2 + 20)) reported
  # Fill right after a report: the longest wait a fill can have.
  before=$(node_field Extra)
  wait_for $((interval * 2 + 20)) report_changed "$before"
  start=$(date +%s.%N)
  "$bin" --state-dir "$work/state" --cluster "$cluster" exec cpu-0 -- dd if=/dev/zero of=/tmp/fill bs=1M count=15 2>/dev/null
  wait_for $((interval * 3 + 20)) drained
  took[$interval]=$(echo "$(date +%s.%N) - $start" | bc)
  printf 'interval %2s s%s: /tmp filled → drained in %.1f s (%.2f intervals)\n' "$interval" \
    "$([ "$interval" = 30 ] && echo ' (defaults)' || true)" "${took[$interval]}" "$(echo "${took[$interval]} / $interval" | bc -l)"
  "$bin" --state-dir "$work/state" --cluster "$cluster" down --purge >/dev/null
done
set -- $intervals
if [ $# -ge 2 ]; then
  printf 'ratio %s s/%s s interval: drain time %.2f (intervals %.2f)\n' "$1" "$2" \
    "$(echo "${took[$1]} / ${took[$2]}" | bc -l)" "$(echo "$1 / $2" | bc -l)"
fi
