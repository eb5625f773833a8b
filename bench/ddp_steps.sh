#!/usr/bin/env bash
# Data-parallel training steps per second (examples/ddp: PyTorch DDP over gloo, CPU) on two
# workers, one rank each, against one rank on one worker, in one run. Every rank takes the same
# batch a step, so two workers do twice the work a step: ratio 1.0 is perfect weak scaling.
#
#   bash bench/ddp_steps.sh [BUILD_DIR]     STEPS=2000
set -euo pipefail
build=$(readlink -f "${1:-build}")
source_dir=$(readlink -f "$(dirname "$0")/..")
steps=${STEPS:-2000}
[[ $steps =~ ^[0-9]+$ ]] || { echo "ddp: STEPS must be a whole number (got '$steps')" >&2; exit 2; }
work=$(mktemp -d /tmp/hpcplane-ddp-XXXXXX)
chmod 755 "$work"
H() { "$build/hpcplane" --state-dir "$work" "$@"; }
trap 'H --cluster ddp down --purge >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

cat >"$work/ddp.yaml" <<YAML
apiVersion: hpcplane.io/v1alpha1
kind: SlurmCluster
metadata: {name: ddp}
spec:
  network: {subnet: 10.239.94.0/24}
  users: [{name: alice, uid: 2001}]
  datasets: [{name: shared, mountPath: /shared}]
---
apiVersion: hpcplane.io/v1alpha1
kind: NodeSet
metadata: {name: train}
spec:
  replicas: 2
  maxReplicas: 2
  environment: pytorch-26.05
  resources: {cpus: 1, memoryMiB: 1000}
  partition: {default: true}
YAML
H environments build -f "$source_dir/examples/pytorch-environment.yaml" >/dev/null
H up -f "$work/ddp.yaml" --detach >/dev/null
out="$work/clusters/ddp/runtime/volumes/dataset-shared"
cp "$source_dir/examples/ddp/train.py" "$source_dir/examples/ddp/train.sbatch" "$out/"
run() {  # name, sbatch placement...
  local name=$1
  shift
  H exec ddp-login --user alice -- sh -c "cd /shared && STEPS=$steps sbatch --wait -o $name.out $* train.sbatch" \
    >/dev/null || true  # a failed job is told by its output below
  sed -nE 's/^rank 0 of [0-9]+ .* ([0-9.]+) steps\/s$/\1/p' "$out/$name.out" 2>/dev/null > "$work/$name.rate" || true
  [ -s "$work/$name.rate" ] || {
    echo "ddp: no rate in the $name job's output:" >&2
    cat "$out/$name.out" >&2 || true
    exit 1
  }
}
run two_workers -N2 --ntasks-per-node=1
run one_worker -N1 -n1
a=$(cat "$work/two_workers.rate")
b=$(cat "$work/one_worker.rate")
printf '\nDDP training steps per second (PyTorch over gloo, CPU, %d steps, batch 64 a rank)\n' "$steps"
printf '%-14s %14s %14s %8s\n' "" "two workers" "one worker" ratio
printf '%-14s %14s %14s %8s\n' "steps/s" "$a" "$b" "$(echo "scale=2; $a / $b" | bc)"
echo "(ratio two workers / one worker; each rank one CPU)"
