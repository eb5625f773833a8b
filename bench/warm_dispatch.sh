#!/usr/bin/env bash
# Warm dispatch: JOBS short jobs (default 1000) submitted to an autoscaled partition and, in the
# same run, to a static partition of the same size (2 workers); submit->start p50/p95 of each
# from Slurm's own SubmitTime/StartTime (1 s resolution), and their ratio. Target: <= 1.1.
set -euo pipefail
build=$(readlink -f "${1:-build}")
jobs=${JOBS:-1000}
work=$(mktemp -d /tmp/hpcplane-warm-XXXXXX)
hp() { "$build/hpcplane" --state-dir "$work" --cluster warm "$@"; }
trap 'hp down --purge >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
cat > "$work/cluster.yaml" <<'YAML'
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: warm}
spec:
  network: {subnet: 10.239.79.0/24}
  users: [{name: alice, uid: 2001}]
  scheduling:
    extraConfig: ["MinJobAge=3600", "MaxJobCount=20000"]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: auto}
spec: {minReplicas: 0, maxReplicas: 2, idleTimeout: 10m, resources: {cpus: 1, memoryMiB: 500}}
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: static}
spec: {replicas: 2, maxReplicas: 2, resources: {cpus: 1, memoryMiB: 500}}
YAML
hp up -f "$work/cluster.yaml" --detach >/dev/null

run_partition() {
  local part=$1
  # One submission loop inside the login pod; the first job wakes the autoscaled nodeset.
  hp exec warm-login --user alice -- bash -c "for i in \$(seq 1 $jobs); do sbatch -Q -p $part -o /dev/null --wrap true; done"
  until [ -z "$(hp exec warm-login -- squeue -h -p "$part" -o %i)" ]; do sleep 0.5; done
  hp exec warm-login -- scontrol -o show job | grep " Partition=$part " |
    sed -E 's/.*SubmitTime=([^ ]+).*StartTime=([^ ]+).*/\1 \2/' |
    while read -r sub start; do echo $(( $(date -d "$start" +%s) - $(date -d "$sub" +%s) )); done | sort -n > "$work/$part.waits"
}
pct() { awk -v q="$2" '{a[NR]=$1} END {i=int(q*NR); if (i<1) i=1; if (i>NR) i=NR; print a[i]}' "$1"; }
mean() { awk '{s+=$1} END {printf "%.2f", s/NR}' "$1"; }

t0=$SECONDS; run_partition auto; t_auto=$((SECONDS - t0))
t0=$SECONDS; run_partition static; t_static=$((SECONDS - t0))
printf '\nwarm dispatch: %d short jobs per partition, 2 workers each (1 CPU)\n' "$jobs"
printf '%-22s %8s %8s %8s %10s\n' partition "p50 s" "p95 s" "mean s" "makespan s"
printf '%-22s %8s %8s %8s %10s\n' "autoscaled (from 0)" "$(pct "$work/auto.waits" 0.5)" "$(pct "$work/auto.waits" 0.95)" "$(mean "$work/auto.waits")" "$t_auto"
printf '%-22s %8s %8s %8s %10s\n' "static" "$(pct "$work/static.waits" 0.5)" "$(pct "$work/static.waits" 0.95)" "$(mean "$work/static.waits")" "$t_static"
echo "ratio autoscaled/static (mean wait): $(echo "scale=3; $(mean "$work/auto.waits") / $(mean "$work/static.waits")" | bc)"
