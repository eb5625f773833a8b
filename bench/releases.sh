#!/usr/bin/env bash
# Slurm releases side by side: the same cluster on each compute environment (default
# slurm-26.05 and slurm-22.05), in one run: `up` -> Ready of a fresh cluster and of the same
# cluster after `down` (median of RUNS), and the cold start sbatch -> RUNNING on a nodeset at
# zero (bench/cold_start.cc, TRIALS trials). Prints each number per release and the ratio of
# each release to the first one. The images must be built (`hpcplane environments build`), or
# the first `up` of a release builds them.
#
#   bash bench/releases.sh [BUILD_DIR]        RUNS=3 TRIALS=10 ENVIRONMENTS="slurm-26.05 slurm-22.05"
set -euo pipefail
build=$(readlink -f "${1:-build}")
runs=${RUNS:-3}
trials=${TRIALS:-10}
read -r -a envs <<<"${ENVIRONMENTS:-slurm-26.05 slurm-22.05}"
work=$(mktemp -d /tmp/hpcplane-releases-XXXXXX)
chmod 755 "$work"
H() { "$build/hpcplane" --state-dir "$work" "$@"; }
trap 'for c in rel cold; do H --cluster $c down --purge >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

# A cluster on one environment with one nodeset of one-CPU workers: NAME ENVIRONMENT SUBNET_OCTET
# NODESET SCALING (the nodeset's spec fields besides its resources).
manifest() {
  cat <<YAML
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: $1}
spec:
  environment: $2
  network: {subnet: 10.239.$3.0/24}
  users: [{name: alice, uid: 2001}]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: $4}
spec: {$5, resources: {cpus: 1, memoryMiB: 500}}
YAML
}

declare -A result
for env in "${envs[@]}"; do
  H environments build "$env" >/dev/null
  manifest rel "$env" 91 cpu "replicas: 2, maxReplicas: 2" >"$work/rel.yaml"
  fresh=() existing=()
  for _ in $(seq "$runs"); do
    fresh+=("$(H up -f "$work/rel.yaml" --detach | sed -n 's/.*is Ready in \([0-9.]*\)s.*/\1/p')")
    H --cluster rel down >/dev/null
    existing+=("$(H --cluster rel up --detach | sed -n 's/.*is Ready in \([0-9.]*\)s.*/\1/p')")
    H --cluster rel down --purge >/dev/null
  done
  result[$env,fresh]=$(printf '%s\n' "${fresh[@]}" | median)
  result[$env,existing]=$(printf '%s\n' "${existing[@]}" | median)

  manifest cold "$env" 92 elastic "minReplicas: 0, maxReplicas: 2, idleTimeout: 1s" >"$work/cold.yaml"
  H up -f "$work/cold.yaml" --detach >/dev/null
  "$build/bench_cold_start" "$work" cold elastic "$trials" >"$work/cold-$env.out"
  result[$env,cold_p50]=$(awk '/sbatch -> RUNNING/ {print $4}' "$work/cold-$env.out")
  result[$env,cold_p95]=$(awk '/sbatch -> RUNNING/ {print $5}' "$work/cold-$env.out")
  H --cluster cold down --purge >/dev/null
  result[$env,release]=$(H environments list | awk -v e="$env" '$1 == e {print $3}')
done

first=${envs[0]}
printf '\nSlurm releases side by side (%d bring-ups, %d cold-start trials each)\n' "$runs" "$trials"
printf '%-22s' metric
for env in "${envs[@]}"; do printf ' %14s' "$env"; done
for env in "${envs[@]:1}"; do printf ' %18s' "$env/$first"; done
echo
for m in fresh existing cold_p50 cold_p95; do
  case $m in fresh) label="up fresh (s)" ;; existing) label="up existing (s)" ;; cold_p50) label="cold start p50 (ms)" ;;
    cold_p95) label="cold start p95 (ms)" ;; esac
  printf '%-22s' "$label"
  for env in "${envs[@]}"; do printf ' %14s' "${result[$env,$m]}"; done
  for env in "${envs[@]:1}"; do printf ' %18s' "$(echo "scale=2; ${result[$env,$m]} / ${result[$first,$m]}" | bc)"; done
  echo
done
printf '%-22s' "Slurm"
for env in "${envs[@]}"; do printf ' %14s' "${result[$env,release]}"; done
echo
