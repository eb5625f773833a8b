#!/usr/bin/env bash
# Trace replay: JOBS jobs (default 200) from the densest window of the NASA iPSC/860 trace
# (bench/traces), time-compressed by COMPRESS (default 60), replayed on an autoscaled
# nodeset (0..8 workers, idleTimeout 5s) and, in the same run, on a static 8-worker nodeset.
# Jobs of P processors take ceil(P/16) nodes (the iPSC's 128 nodes map onto 8 workers).
# Reports node-seconds consumed and mean bounded slowdown (tau = 10 s), with ratios.
set -euo pipefail
build=$(readlink -f "${1:-build}")
trace=${TRACE:-$(dirname "$0")/traces/NASA-iPSC-1993-3.1-cln.swf.gz}
jobs=${JOBS:-200}
compress=${COMPRESS:-60}
work=$(mktemp -d /tmp/hpcplane-trace-XXXXXX)
hp() { "$build/hpcplane" --state-dir "$work" --cluster trace "$@"; }
trap 'hp down --purge >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
cat > "$work/cluster.yaml" <<'YAML'
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: trace}
spec:
  network: {subnet: 10.239.80.0/24}
  users: [{name: alice, uid: 2001}]
  scheduling:
    extraConfig: ["MinJobAge=3600"]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: auto}
spec: {minReplicas: 0, maxReplicas: 8, idleTimeout: 5s, resources: {cpus: 1, memoryMiB: 400}}
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: static}
spec: {replicas: 8, maxReplicas: 8, resources: {cpus: 1, memoryMiB: 400}}
YAML

# The densest window of $jobs consecutive jobs: "gap_seconds nodes run_seconds" per job.
zcat "$trace" | awk '!/^;/ && $4 > 0 && $5 > 0 {print $2, $4, $5}' > "$work/all"
awk -v n="$jobs" '{s[NR]=$1; l[NR]=$0} END {best=1; span=1e18; for (i=1; i+n-1<=NR; i++) if (s[i+n-1]-s[i] < span) {span=s[i+n-1]-s[i]; best=i}
  for (i=best; i<best+n; i++) print l[i]}' "$work/all" |
  awk -v c="$compress" 'NR==1 {prev=$1} {gap=($1-prev)/c; prev=$1; nodes=int(($3+15)/16); if (nodes>8) nodes=8;
    run=$2/c; if (run<0.5) run=0.5; printf "%.2f %d %.2f\n", gap, nodes, run}' > "$work/jobs"

replay() {
  local part=$1 script="$work/replay-$1.sh"
  { echo 'set -e'; while read -r gap nodes run; do
      echo "sleep $gap; sbatch -Q -p $part -N $nodes -o /dev/null --wrap 'sleep $run'"; done < "$work/jobs"; } > "$script"
  local start=$SECONDS node_seconds=0
  hp exec trace-login --user alice -- bash -s < "$script" &
  local submitter=$!
  # Sample the nodeset's worker count every second until the submissions are done and the queue is empty.
  while kill -0 "$submitter" 2>/dev/null || [ -n "$(hp exec trace-login -- squeue -h -p "$part" -o %i)" ]; do
    n=$(grep -o '"replicas": [0-9]*' "$work/clusters/trace/status/nodesets/$part.json" | grep -o '[0-9]*$')
    node_seconds=$((node_seconds + n))
    sleep 1
  done
  wait "$submitter"
  echo "$node_seconds $((SECONDS - start))" > "$work/$part.usage"
  hp exec trace-login -- scontrol -o show job | grep " Partition=$part " |
    sed -E 's/.*SubmitTime=([^ ]+).*StartTime=([^ ]+) EndTime=([^ ]+).*/\1 \2 \3/' |
    while read -r sub start end; do
      s=$(date -d "$sub" +%s); b=$(date -d "$start" +%s); e=$(date -d "$end" +%s)
      echo "$((b - s)) $((e - b))"
    done > "$work/$part.times"
}
slowdown() { awk '{w=$1; r=$2; d=(r>10?r:10); b=(w+r)/d; if (b<1) b=1; s+=b} END {printf "%.3f", s/NR}' "$1"; }

hp up -f "$work/cluster.yaml" --detach >/dev/null
replay auto
replay static
read -r ns_auto span_auto < "$work/auto.usage"
read -r ns_static_sampled span_static < "$work/static.usage"
ns_static=$((8 * span_static))
printf '\ntrace replay: %d jobs of the NASA iPSC/860 trace (densest window), time compressed %dx\n' "$jobs" "$compress"
printf '%-16s %12s %12s %22s\n' nodeset node-seconds makespan-s "mean bounded slowdown"
printf '%-16s %12s %12s %22s\n' "autoscaled 0..8" "$ns_auto" "$span_auto" "$(slowdown "$work/auto.times")"
printf '%-16s %12s %12s %22s\n' "static 8" "$ns_static" "$span_static" "$(slowdown "$work/static.times")"
echo "ratios autoscaled/static: node-seconds $(echo "scale=3; $ns_auto / $ns_static" | bc), bounded slowdown $(echo "scale=3; $(slowdown "$work/auto.times") / $(slowdown "$work/static.times")" | bc)"
echo "(tau = 10 s in compressed time; Slurm's times have 1 s resolution)"
