#!/usr/bin/env bash
# Cold start: sbatch -> RUNNING on a scaled-to-zero nodeset (bench/cold_start.cc), TRIALS runs.
set -euo pipefail
build=$(readlink -f "${1:-build}")
trials=${TRIALS:-10}
work=$(mktemp -d /tmp/hpcplane-cold-XXXXXX)
trap '"$build/hpcplane" --state-dir "$work" --cluster cold down --purge >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
cat > "$work/cluster.yaml" <<'YAML'
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: cold}
spec:
  network: {subnet: 10.239.78.0/24}
  users: [{name: alice, uid: 2001}]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: elastic}
spec: {minReplicas: 0, maxReplicas: 2, idleTimeout: 1s, resources: {cpus: 1, memoryMiB: 500}}
YAML
"$build/hpcplane" --state-dir "$work" up -f "$work/cluster.yaml" --detach >/dev/null
"$build/bench_cold_start" "$work" cold elastic "$trials"
